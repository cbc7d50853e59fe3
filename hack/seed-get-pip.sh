#!/usr/bin/env bash
# ansible-test bootstraps pip in its virtual environments with a get-pip script
# downloaded from a host outside the package registries. Pre-seed its cache with
# a stand-in that uses the interpreter's own ensurepip, then installs the exact
# pip version (and any other packages) ansible-test asks for from PyPI.
set -euo pipefail
python="${1:-python3}"
src=$("$python" -c 'import ansible_test, os; print(os.path.dirname(ansible_test.__file__))')
version=$(sed -n "s/^ *pip='\([0-9.]*\)',\$/\1/p" "$src/_internal/python_requirements.py" | head -n1)
[ -n "$version" ] || { echo "seed-get-pip: cannot find ansible-test's pip version" >&2; exit 1; }
cache="$HOME/.ansible/test/cache"
mkdir -p "$cache"
cat >"$cache/get_pip_${version//./_}.py" <<'PY'
"""Stand-in for get-pip.py: ensurepip, then pip from PyPI (options as get-pip takes them)."""
import subprocess
import sys

args = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade", "--default-pip"])
subprocess.check_call([sys.executable, "-m", "pip", "install"] + args)
PY
