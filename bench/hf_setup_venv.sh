#!/usr/bin/env bash
# Creates (once) the virtual environment of the peers users install, from
# PyPI: PyPI's PyTorch and Hugging Face transformers (bench/hf_reference.py,
# and the PyTorch side of bench/run_bert.sh) and Optuna 5 with SciPy, which its
# GPSampler needs (bench/run_core.sh, bench/run_search.sh). Debian's
# python3-torch 1.13 and python3-optuna 3.1 are older than what users run, and
# Debian packages no transformers 5.
# Debian's own /usr/bin/python3 cannot install into its system site (PEP 668),
# so this makes a venv with the first interpreter that has the venv module and
# a version PyTorch ships wheels for (3.10-3.13). PyPI's torch wheel for Linux
# x86-64 also pulls the CUDA libraries (about 3 GB); its CPU path (MKL +
# oneDNN) is what the benchmarks use.
#
# Usage: bench/hf_setup_venv.sh        prints the venv's python on stdout
# Env:   HF_VENV  where the venv goes (default ~/.cache/tune-bench/hf-venv;
#                 outside the repository, so nothing to ignore)
#        HF_SPEC  what pip installs (default "torch==2.15.0 transformers
#                 optuna==5.0.0 scipy"; bench/RESULTS*.md name the versions that ran)
#        PYTHON   the interpreter to build the venv from
# A venv that already imports torch, transformers, optuna and scipy is reused as it
# is; one that lacks a package gets it installed.
set -euo pipefail
venv=${HF_VENV:-$HOME/.cache/tune-bench/hf-venv}
spec=${HF_SPEC:-torch==2.15.0 transformers optuna==5.0.0 scipy}

if [ -x "$venv/bin/python" ]; then
    if ! "$venv/bin/python" -c "import torch, transformers, optuna, scipy" 2>/dev/null; then
        echo "hf_setup_venv: completing $venv with $spec" >&2
        # shellcheck disable=SC2086 # spec is a list of requirements
        "$venv/bin/python" -m pip install --quiet $spec >&2
    fi
    echo "$venv/bin/python"
    exit 0
fi

supported() { # PY: has venv and is 3.10..3.13
    "$1" -c 'import sys, venv; sys.exit(not ((3, 10) <= sys.version_info[:2] <= (3, 13)))' \
        2>/dev/null
}
py=${PYTHON:-}
if [ -z "$py" ]; then
    for c in python3 python3.13 python3.12 python3.11 python3.10 /usr/bin/python3; do
        if command -v "$c" >/dev/null && supported "$c"; then
            py=$c
            break
        fi
    done
fi
if [ -z "$py" ] || ! supported "$py"; then
    echo "hf_setup_venv: no Python 3.10-3.13 with the venv module found (Debian: apt-get" \
        "install python3-venv; or set PYTHON=)" >&2
    exit 1
fi

echo "hf_setup_venv: creating $venv with $($py --version 2>&1) and installing $spec" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
# shellcheck disable=SC2086 # spec is a list of requirements
"$venv/bin/python" -m pip install --quiet $spec >&2
"$venv/bin/python" -c "import torch, transformers, optuna, scipy; print('hf_setup_venv: torch',
      torch.__version__, 'transformers', transformers.__version__, 'optuna', optuna.__version__,
      'scipy', scipy.__version__)" >&2
echo "$venv/bin/python"
