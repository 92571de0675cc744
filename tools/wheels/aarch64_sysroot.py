"""An aarch64 CPython to test the aarch64 wheel with: Debian's arm64 packages, unpacked (dpkg -x) into
build/aarch64/sysroot, run by ``qemu-aarch64-static -L build/aarch64/sysroot``.

``python tools/wheels/aarch64_sysroot.py`` adds the arm64 architecture to apt (root), downloads the
packages below with ``apt-get download`` and prints the interpreter's path. Nothing is installed on
the host but qemu-user-static; the sysroot is rebuilt only when PACKAGES changes.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "build", "aarch64")
SYSROOT = os.path.join(BASE, "sysroot")
PYTHON = "/usr/bin/python3.11"  # inside the sysroot
# the interpreter, its standard library and the shared libraries its modules load (cffi's wheel
# brings its own libffi; hashlib and ssl want libssl3, pip's wheel cache zlib)
PACKAGES = ["libc6", "libgcc-s1", "zlib1g", "libexpat1", "libffi8", "libssl3", "libbz2-1.0", "liblzma5",
            "libuuid1", "libcrypt1", "libsqlite3-0", "libncursesw6", "libtinfo6", "libreadline8",
            "libpython3.11-minimal", "libpython3.11-stdlib", "python3.11-minimal"]


def qemu_python():
    """The command that runs the sysroot's aarch64 python3.11 (a list), after making the sysroot."""
    debian.require(["qemu-user-static"], "running the aarch64 wheel's tests")
    stamp = os.path.join(SYSROOT, ".packages")
    wanted = " ".join(PACKAGES)
    if not (os.path.exists(stamp) and open(stamp).read() == wanted):
        _make(stamp, wanted)
    return ["qemu-aarch64-static", "-L", SYSROOT, SYSROOT + PYTHON]


def _make(stamp, wanted):
    debian.require_architecture("arm64", "downloading Debian's arm64 python3.11")
    debs = os.path.join(BASE, "debs")
    os.makedirs(debs, exist_ok=True)
    for old in os.listdir(debs):
        os.remove(os.path.join(debs, old))
    command = ["apt-get", "download"] + [p + ":arm64" for p in PACKAGES]
    print("+ (cd %s && %s)" % (os.path.relpath(debs, ROOT), " ".join(command)), flush=True)
    subprocess.run(command, cwd=debs, check=True)
    subprocess.run(["rm", "-rf", SYSROOT], check=True)
    for deb in sorted(os.listdir(debs)):
        subprocess.run(["dpkg", "-x", os.path.join(debs, deb), SYSROOT], check=True)
    with open(stamp, "w") as f:
        f.write(wanted)


if __name__ == "__main__":
    command = qemu_python()
    subprocess.run(command + ["-c", "import platform, sys; print(sys.version.split()[0], platform.machine())"],
                   check=True)
    print(" ".join(command))
