#!/usr/bin/env bash
# The system packages `make demo` and `make test` need beyond python3, node and npm, installed
# with apt-get when run as root, else a stop with the exact command to run.
#
#   tools/system_packages.sh            check, install what is missing (root) or say how (not root)
#   EMBER_SYSTEM_PACKAGES=0             skip the check (you provide the packages some other way)
#   PYTHON=python3.12 tools/...         the interpreter whose venv and headers are checked
#
# What each package is for:
#   python3-venv         `python3 -m venv` (Debian ships venv/ensurepip apart from python3)
#   python3-dev, gcc     compiling ember's C kernels (cffi needs Python.h and a C compiler)
#   mesa-vulkan-drivers, libvulkan1
#                        Vulkan on the CPU (Mesa's lavapipe) for the Wgpu backend's tests; without
#                        it wgpu offers only OpenGL, which ember's kernels do not support
#   openmpi-bin, libopenmpi-dev
#                        mpirun and the libmpi that mpi4py loads (ember.accel.distributed)
#   chromium             the web demo's browser test (make test-web), headless with SwiftShader's WebGPU
set -euo pipefail

[ "${EMBER_SYSTEM_PACKAGES:-1}" = 0 ] && exit 0
PYTHON="${PYTHON:-python3}"

missing=()
if ! "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1; then missing+=(python3-venv); fi
if ! "$PYTHON" -c 'import os, sysconfig, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' >/dev/null 2>&1; then
  missing+=(python3-dev)
fi
if ! command -v cc >/dev/null 2>&1 && ! command -v gcc >/dev/null 2>&1; then missing+=(gcc); fi
if command -v dpkg-query >/dev/null 2>&1; then
  for pkg in mesa-vulkan-drivers libvulkan1 openmpi-bin libopenmpi-dev chromium; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
fi

((${#missing[@]})) || exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ember: missing system packages: ${missing[*]} (Debian names); install their equivalents," \
       "or set EMBER_SYSTEM_PACKAGES=0 to go on without them" >&2
  exit 1
fi
if [ "$(id -u)" != 0 ]; then
  echo "ember: missing system packages: ${missing[*]}. Run:" >&2
  echo "  sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  echo "then run make again (or set EMBER_SYSTEM_PACKAGES=0 to go on without them)." >&2
  exit 1
fi
echo "ember: installing system packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
