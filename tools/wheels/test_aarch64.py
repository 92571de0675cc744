"""Install dist/'s aarch64 wheel into Debian's arm64 python3.11 (under qemu-user) and run the
conformance subset on the cpu and cpu-c backends: ``python tools/wheels/test_aarch64.py``.

pip itself runs on the aarch64 interpreter and resolves the wheel's dependencies from a local
wheelhouse (cffi's aarch64 wheel, pytest), so a wheel that forgot to require cffi fails here: its
``ember.Cpu()`` would not find the kernels, and EMBER_REQUIRE_BACKENDS makes cpu-c mandatory.
"""
import glob
import os
import shutil
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import aarch64_sysroot  # noqa: E402

ROOT = aarch64_sysroot.ROOT
BASE = aarch64_sysroot.BASE
# one file per kind of kernel (elementwise, matmul, reductions, nn): a few minutes under emulation
SUBSET = ["tests/conformance/test_conformance_arith.py", "tests/conformance/test_conformance_matmul.py",
          "tests/conformance/test_conformance_reduce.py", "tests/conformance/test_conformance_nn.py"]
BACKENDS = "cpu,cpu-c"


def _run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def _wheelhouse(folder):
    """cffi's aarch64 wheel and pytest's pure ones, for pip on the aarch64 side (it has no index)."""
    os.makedirs(folder, exist_ok=True)
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", folder,
          "--platform", "manylinux2014_aarch64", "--platform", "manylinux_2_17_aarch64",
          "--python-version", "3.11", "--implementation", "cp", "--abi", "cp311", "--abi", "abi3", "--abi", "none",
          "cffi>=1.15", "pytest>=8", "pip"])
    return glob.glob(os.path.join(folder, "pip-*.whl"))[0]


def main():
    wheels = glob.glob(os.path.join(ROOT, "dist", "ember-*-cp310-abi3-manylinux*_aarch64.whl"))
    if len(wheels) != 1:
        sys.exit("test_aarch64: expected one aarch64 wheel in dist/, found %s (make wheels builds it)" % wheels)
    python = aarch64_sysroot.qemu_python()
    pip = _wheelhouse(os.path.join(BASE, "wheelhouse"))
    site = os.path.join(BASE, "site")
    shutil.rmtree(site, ignore_errors=True)
    # pip runs from its wheel; --target keeps Debian's EXTERNALLY-MANAGED interpreter untouched
    _run(python + [pip + "/pip", "install", "--no-index", "--find-links", os.path.join(BASE, "wheelhouse"),
                   "--target", site, "--no-compile", wheels[0], "pytest"])
    env = dict(os.environ, PYTHONPATH=site, EMBER_REQUIRE_BACKENDS=BACKENDS, PYTHONDONTWRITEBYTECODE="1")
    _run(python + ["-c", "import ember, platform; d = ember.Cpu(); print('ember', ember.__file__, platform.machine(),"
                         " 'kernels:', d.kernels); assert d.kernels == 'c', d.kernels"], env=env, cwd=ROOT)
    # -k: the two backends only (autodiff-cpu and fusion-cpu wrap them and add nothing aarch64-specific)
    run = subprocess.run(python + ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "[cpu- or [cpu-c-"]
                         + SUBSET, env=env, cwd=ROOT)
    if run.returncode != 0:
        sys.exit("test_aarch64: the conformance subset failed on aarch64 (above)")
    print("test_aarch64: %s passes the conformance subset on aarch64 (qemu-user)" % os.path.basename(wheels[0]))


if __name__ == "__main__":
    main()
