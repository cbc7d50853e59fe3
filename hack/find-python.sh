#!/usr/bin/env bash
# Print the path of a Python X.Y interpreter: pythonX.Y on PATH, else the newest
# pyenv build of X.Y. Fails with a message naming what was looked for.
#   hack/find-python.sh 3.12
set -euo pipefail
want="${1:?usage: find-python.sh X.Y}"
found="$(command -v "python$want" || true)"
# A pyenv shim is on PATH for every installed version but runs only the active ones.
if [ -n "$found" ] && ! "$found" -c '' >/dev/null 2>&1; then
  found=""
fi
if [ -z "$found" ]; then
  found="$(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$want".*/bin/python"$want" 2>/dev/null | sort -V | tail -n1 || true)"
fi
[ -n "$found" ] || { echo "find-python: no python$want on PATH or in pyenv (${PYENV_ROOT:-$HOME/.pyenv}/versions)" >&2; exit 1; }
echo "$found"
