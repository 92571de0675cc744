#!/usr/bin/env bash
# The README's quick start as a new user meets it, to catch a missing set-up step: a fresh clone of
# this repository's HEAD, no virtual environment on PATH, then `make demo` and a slice of `make test`
# there; then ember installed from that clone into a new venv (a real install, not editable) and run
# from outside any checkout: `ember info` must find the C kernels, and an example must run.
#
#   tools/quickstart_check.sh        (make test runs it as test-quickstart; about 8 minutes)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

say() { echo "==> quickstart: $*"; }

# nothing of the caller's environment leaks in: no venv's bin/ on PATH, no Python variables
PATH="$(printf '%s' "$PATH" | tr ':' '\n' | grep -v -e '/\.venv/' -e '^$' | paste -sd: -)"
export PATH
unset VIRTUAL_ENV PYTHONPATH PYTHONHOME EMBER_REQUIRE_BACKENDS MAKEFLAGS MFLAGS MAKELEVEL

say "git clone (HEAD of $ROOT)"
git clone -q "$ROOT" "$work/ember"
cd "$work/ember"
say "make demo"
make demo
say "make test, a slice (tests/core/test_creation.py and the CLI; the MicroPython ports on test_creation)"
make test-py PYTEST_ARGS='tests/core/test_creation.py tests/accel/test_cli.py'
make test-mpy MPY_ARGS='-k test_creation'

say "pip install the clone into a fresh venv, run from outside it"
python3 -m venv "$work/user"
"$work/user/bin/python" -m pip install -q "$work/ember"
mkdir "$work/elsewhere" && cd "$work/elsewhere"
"$work/user/bin/ember" info
"$work/user/bin/python" -W error::RuntimeWarning -c '
import ember
k = ember.Cpu().kernels
assert k == "c", "the installed ember runs %s kernels, not C" % k
print("installed ember: Cpu kernels", k)'
"$work/user/bin/python" "$work/ember/examples/mlp.py"
say "passed"
