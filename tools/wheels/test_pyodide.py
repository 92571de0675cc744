"""The pure wheel in Pyodide under Node: ``python tools/wheels/test_pyodide.py`` installs npm's
pyodide (pinned, into build/pyodide, beside nothing else), unpacks dist/'s py3-none-any wheel and
pytest's pure wheels into its site-packages and runs tests/core there on the cpu backend.
"""
import glob
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BASE = os.path.join(ROOT, "build", "pyodide")
PYODIDE_NPM = "pyodide@314.0.8"
PYODIDE_DIR = os.path.join(BASE, "node_modules", "pyodide")
# tests that fail for a reason outside the wheel, each left out by name with that reason, printed
KNOWN = {
    "tests/core/test_record.py::test_hostile_file_changed_after_open":
        "assumes open() buffers less than its 40 KB file; Python 3.14's io.DEFAULT_BUFFER_SIZE is 128 KiB,"
        " so the reader holds the whole file before it is truncated (CPython 3.14 too, not Pyodide only)",
}


def _run(command, **kwargs):
    print("+ " + " ".join(command), flush=True)
    return subprocess.run(command, check=True, **kwargs)


def _pyodide():
    stamp = os.path.join(BASE, ".installed-" + PYODIDE_NPM)
    if not os.path.exists(stamp):
        os.makedirs(BASE, exist_ok=True)
        # as the Makefile installs MicroPython: no package.json or lock file; its own prefix keeps
        # the repository's node_modules (MicroPython) as it is
        _run(["npm", "install", "--prefix", BASE, "--no-save", "--no-package-lock", "--no-audit", "--no-fund",
              PYODIDE_NPM])
        open(stamp, "w").close()
    with open(os.path.join(PYODIDE_DIR, "pyodide-lock.json")) as f:
        return json.load(f)["info"]["python"]


def _pytest_wheels(python_version):
    folder = os.path.join(BASE, "wheelhouse-" + python_version)
    version = ".".join(python_version.split(".")[:2])
    _run([sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "-d", folder,
          "--python-version", version, "--implementation", "py", "--platform", "any", "--abi", "none",
          "pytest>=8"])
    return sorted(glob.glob(os.path.join(folder, "*.whl")))


def main():
    wheels = glob.glob(os.path.join(ROOT, "dist", "ember-*-py3-none-any.whl"))
    if len(wheels) != 1:
        sys.exit("test_pyodide: expected one pure wheel in dist/, found %s (make wheels builds it)" % wheels)
    python_version = _pyodide()
    env = dict(os.environ, EMBER_REQUIRE_BACKENDS="cpu")
    deselect = []
    for test, why in KNOWN.items():
        print("test_pyodide: leaving out %s: %s" % (test, why))
        deselect += ["--deselect", test]
    run = subprocess.run(["node", os.path.join(ROOT, "tools", "wheels", "pyodide_run.mjs"), PYODIDE_DIR, ROOT]
                         + wheels + _pytest_wheels(python_version)
                         + ["--", "-q", "-p", "no:cacheprovider"] + deselect + ["tests/core"], env=env)
    if run.returncode != 0:
        sys.exit("test_pyodide: tests/core failed in Pyodide (above)")
    print("test_pyodide: %s passes tests/core in Pyodide %s" % (os.path.basename(wheels[0]), python_version))


if __name__ == "__main__":
    main()
