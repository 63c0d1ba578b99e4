#!/usr/bin/env bash
# Creates (once) the virtual environment that bench/ray/ray_sweep.py runs in:
# Ray Tune from PyPI. Debian packages Ray for no release, and Debian's own
# /usr/bin/python3 cannot install into its system site (PEP 668), so this
# makes a venv with the first interpreter that has the venv module and a
# version Ray ships wheels for (3.9-3.12; the pyenv python3 on PATH is 3.11).
#
# Usage: bench/ray/setup_venv.sh        prints the venv's python on stdout
# Env:   RAY_VENV  where the venv goes (default ~/.cache/tune-bench/ray-venv;
#                  outside the repository, so nothing to ignore)
#        RAY_SPEC  what pip installs (default "ray[tune]==2.60.0"; the figures
#                  in bench/RESULTS.md name the version that ran)
#        PYTHON    the interpreter to build the venv from
# A venv that already imports ray.tune is reused as it is (pip is not run).
set -euo pipefail
venv=${RAY_VENV:-$HOME/.cache/tune-bench/ray-venv}
spec=${RAY_SPEC:-ray[tune]==2.60.0}

if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import ray.tune" 2>/dev/null; then
    echo "$venv/bin/python"
    exit 0
fi

supported() { # PY: has venv and is 3.9..3.12
    "$1" -c 'import sys, venv; sys.exit(not ((3, 9) <= sys.version_info[:2] <= (3, 12)))' \
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
    echo "setup_venv: no Python 3.9-3.12 with the venv module found (Debian: apt-get install" \
        "python3-venv; or set PYTHON=)" >&2
    exit 1
fi

echo "setup_venv: creating $venv with $($py --version 2>&1) and installing $spec" >&2
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
"$py" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip >&2
"$venv/bin/python" -m pip install --quiet "$spec" >&2
"$venv/bin/python" -c "import ray, ray.tune; print('setup_venv: ray', ray.__version__)" >&2
echo "$venv/bin/python"
