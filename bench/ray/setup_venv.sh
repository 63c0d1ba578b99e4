#!/usr/bin/env bash
# Creates (once) the virtual environment that bench/ray/ray_sweep.py runs in:
# Ray Tune from PyPI. Debian packages Ray for no release, and Debian's own
# /usr/bin/python3 cannot install into its system site (PEP 668), so this
# makes a venv with the first interpreter that has the venv module and a
# version Ray ships wheels for (3.9-3.12; the pyenv python3 on PATH is 3.11).
#
# Usage: bench/ray/setup_venv.sh        prints the venv's python on stdout
#        bench/ray/setup_venv.sh --hf   the same venv, with PyTorch and Hugging
#                  Face transformers too (bench/ray/hf_sweep.py: Ray Tune
#                  driving transformers' Trainer); PyPI's torch wheel pulls the
#                  CUDA libraries (about 3 GB), and needs Python 3.10-3.12 here
# Env:   RAY_VENV  where the venv goes (default ~/.cache/tune-bench/ray-venv;
#                  outside the repository, so nothing to ignore)
#        RAY_SPEC  what pip installs (default "ray[tune]==2.60.0"; the figures
#                  in bench/RESULTS.md name the version that ran)
#        RAY_HF_SPEC  what --hf adds (default "torch==2.15.0
#                  transformers[torch]==5.25.*": the extra pulls accelerate,
#                  which transformers' Trainer needs)
#        PYTHON    the interpreter to build the venv from
# A venv that already imports ray.tune (and, with --hf, torch, transformers
# and accelerate) is reused as it is; one that lacks what --hf adds gets it
# installed.
set -euo pipefail
set -f # the specs are split on spaces but never globbed ("transformers[torch]==5.25.*")
venv=${RAY_VENV:-$HOME/.cache/tune-bench/ray-venv}
spec=${RAY_SPEC:-ray[tune]==2.60.0}
hf=0
hf_spec=${RAY_HF_SPEC:-torch==2.15.0 transformers[torch]==5.25.*}
case "${1:-}" in
--hf) hf=1 ;;
"") ;;
*)
    echo "usage: bench/ray/setup_venv.sh [--hf]" >&2
    exit 2
    ;;
esac

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import ray.tune" 2>/dev/null; then
    if [ $hf = 1 ] && ! "$venv/bin/python" -c "import torch, transformers, accelerate" \
        2>/dev/null; then
        echo "setup_venv: completing $venv with $hf_spec" >&2
        # shellcheck disable=SC2086 # hf_spec is a list of requirements
        "$venv/bin/python" -m pip install --quiet "$spec" $hf_spec >&2
    fi
    echo "$venv/bin/python"
    exit 0
fi

lowest=9 # Ray ships wheels for 3.9-3.12, PyTorch 2.15 from 3.10
[ $hf = 1 ] && lowest=10
supported() { # PY: has venv and is 3.<lowest>..3.12
    "$1" -c "import sys, venv; sys.exit(not ((3, $lowest) <= sys.version_info[:2] <= (3, 12)))" \
        2>/dev/null
}
py=${PYTHON:-}
if [ -z "$py" ]; then
    for c in python3 python3.12 python3.11 python3.10 python3.9 /usr/bin/python3; do
        if command -v "$c" >/dev/null && supported "$c"; then
            py=$c
            break
        fi
    done
fi
if [ -z "$py" ] || ! supported "$py"; then
    echo "setup_venv: no Python 3.$lowest-3.12 with the venv module found (Debian: apt-get install" \
        "python3-venv; or set PYTHON=)" >&2
    exit 1
fi

what=$spec
[ $hf = 1 ] && what="$spec $hf_spec"
echo "setup_venv: creating $venv with $($py --version 2>&1) and installing $what" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
if [ $hf = 1 ]; then
    # shellcheck disable=SC2086 # hf_spec is a list of requirements
    "$venv/bin/python" -m pip install --quiet "$spec" $hf_spec >&2
else
    "$venv/bin/python" -m pip install --quiet "$spec" >&2
fi
"$venv/bin/python" -c "import ray, ray.tune; print('setup_venv: ray', ray.__version__)" >&2
echo "$venv/bin/python"
