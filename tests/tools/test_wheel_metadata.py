"""What ember's wheels declare (CPython only; tools/wheels/build_wheel.py checks real builds alike).

A build with the C kernels requires cffi, their runtime; a pure one (EMBER_PURE=1, or kernels that fail
to compile) requires nothing and is tagged py3-none-any; every wheel carries LICENSE (Apache-2.0) and
the README as its long description. The metadata comes from setuptools' PEP 517 hooks run on a copy of
the project, the kernel build itself is left to make wheels (minutes); the failing build here stops
at its first C file.
"""
import email
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools", "wheels"))
import build_wheel as wheels  # noqa: E402

PROJECT = ["setup.py", "pyproject.toml", "README.md", "LICENSE", "core_pure", "accel", "boards", "ext_c"]
# a compiler that passes setup.py's probe and fails on the kernels' sources
FAILING_CC = """#!/bin/sh
case "$*" in *probe.c*) exec %s "$@";; esac
echo "failing on purpose: $*" >&2
exit 1
"""


def _build_tools():
    """The reason the hooks cannot run in this interpreter, or None."""
    try:
        import cffi  # noqa: F401
        import setuptools
    except ImportError as e:
        return "needs setuptools and cffi (ember[dev]): %s" % e
    if int(setuptools.__version__.split(".")[0]) < 77:
        return "needs setuptools>=77 (pyproject.toml's build-system), found %s" % setuptools.__version__
    return None


def _project(folder):
    folder.mkdir()
    for name in PROJECT:
        source, dest = os.path.join(ROOT, name), str(folder / name)
        if os.path.isdir(source):
            shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "_ckernels*"))
        else:
            shutil.copy2(source, dest)
    return str(folder)


def _hook(project, hook, out, **env):
    """Run setuptools.build_meta's hook in project; returns (the file it made, setup.py's stderr)."""
    problem = _build_tools()
    if problem:
        pytest.skip(problem)
    code = "import sys\nfrom setuptools import build_meta\nprint(build_meta.%s(sys.argv[1]))" % hook
    run = subprocess.run([sys.executable, "-c", code, out], cwd=project, capture_output=True, text=True,
                         env=dict(os.environ, **env))
    assert run.returncode == 0, run.stdout + run.stderr
    return os.path.join(out, run.stdout.strip().splitlines()[-1]), run.stderr


def _metadata(folder):
    with open(os.path.join(folder, "METADATA"), "rb") as f:
        return email.message_from_bytes(f.read())


def test_a_kernel_build_requires_cffi_and_carries_the_license(tmp_path):
    project = _project(tmp_path / "project")
    info, stderr = _hook(project, "prepare_metadata_for_build_wheel", str(tmp_path))
    if "no working C compiler" in stderr:
        pytest.skip("this machine builds pure wheels only: " + stderr.strip())
    meta = _metadata(info)
    assert wheels.metadata_problems(meta, compiled=True) == []
    assert [r for r in meta.get_all("Requires-Dist") if "extra ==" not in r] == ["cffi>=1.15"]


def test_a_pure_build_requires_nothing(tmp_path):
    project = _project(tmp_path / "project")
    info, stderr = _hook(project, "prepare_metadata_for_build_wheel", str(tmp_path), EMBER_PURE="1")
    assert "EMBER_PURE=1" in stderr
    assert wheels.metadata_problems(_metadata(info), compiled=False) == []


def test_kernels_that_fail_to_compile_leave_a_pure_wheel(tmp_path):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        pytest.skip("no C compiler (cc, gcc) to pass setup.py's probe with")
    script = tmp_path / "failing-cc"
    script.write_text(FAILING_CC % cc)
    script.chmod(0o755)
    project = _project(tmp_path / "project")
    out = tmp_path / "out"
    out.mkdir()
    wheel, stderr = _hook(project, "build_wheel", str(out), CC=str(script))
    assert "failing on purpose" in stderr and "ember stays pure Python" in stderr, stderr
    assert os.path.basename(wheel) == "ember-0.1.0-py3-none-any.whl"
    assert wheels.wheel_problems(wheel, compiled=False) == []
