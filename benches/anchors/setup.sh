#!/usr/bin/env bash
# Creates benches/anchors/.venv (Python 3.10) with the OpenFHE Python wheel.
# The openfhe 1.6.1.0.22.4 wheel on PyPI ships only a CPython 3.10 extension module,
# so the venv must be built with a 3.10 interpreter.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"

py=""
if command -v pyenv >/dev/null 2>&1; then
    root="$(pyenv root)"
    # newest installed 3.10.x under pyenv, if any
    for cand in $(ls -d "$root"/versions/3.10.* 2>/dev/null | sort -V -r); do
        if [ -x "$cand/bin/python3.10" ]; then py="$cand/bin/python3.10"; break; fi
    done
fi
if [ -z "$py" ] && command -v python3.10 >/dev/null 2>&1; then
    py="$(command -v python3.10)"
fi
if [ -z "$py" ]; then
    echo "setup.sh: no Python 3.10 interpreter found (pyenv or python3.10 on PATH)" >&2
    exit 1
fi
echo "setup.sh: using $py ($("$py" --version 2>&1))"

if [ ! -x "$venv/bin/python" ]; then
    "$py" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --upgrade pip
"$venv/bin/python" -m pip install "openfhe==1.6.1.0.22.4"
"$venv/bin/python" -c "import openfhe; print('openfhe import OK')"
