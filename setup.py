"""What pyproject.toml cannot say: the optional C kernels, the cffi module ``ember._ckernels``.

The metadata lives in pyproject.toml. This file adds ``cffi_modules`` (setuptools does not accept it
in pyproject.toml) when a C compiler works; without one (or with ``EMBER_PURE=1``), and when the
kernels fail to compile, the build still succeeds and the package is pure Python: ``ember.Cpu()``
then runs its Python kernels.

The dependencies are decided here too (``dynamic = ["dependencies"]`` in pyproject.toml): a wheel
that holds the kernels needs cffi's runtime to load them and declares it; a pure wheel (a
``py3-none-any`` one) declares nothing.
"""
import os
import shutil
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_ext import build_ext

CFFI_MODULE = "ext_c/build_ckernels.py:ffibuilder"
# what ember._ckernels needs at run time (cffi's backend); the only dependency ember ever declares
CFFI_RUNTIME = "cffi>=1.15"


def _say(message):
    sys.stderr.write("ember setup: %s\n" % message)


def _compiler_problem():
    """None when cffi is importable and the configured C compiler (CC, ...) compiles a file."""
    if os.environ.get("EMBER_PURE") == "1":
        return "EMBER_PURE=1"
    try:
        import cffi  # noqa: F401
    except ImportError:
        return "cffi is not installed"
    try:
        from setuptools._distutils.ccompiler import new_compiler
        from setuptools._distutils.sysconfig import customize_compiler
    except ImportError:  # older setuptools: the stdlib's distutils
        from distutils.ccompiler import new_compiler
        from distutils.sysconfig import customize_compiler
    folder = tempfile.mkdtemp(prefix="ember-cc-")
    try:
        source = os.path.join(folder, "probe.c")
        with open(source, "w") as f:
            f.write("int ember_probe(int x) { return x + 1; }\n")
        compiler = new_compiler()
        customize_compiler(compiler)
        compiler.compile([source], output_dir=folder)
        return None
    except Exception as e:  # any failure means: build the pure package
        return "%s: %s" % (type(e).__name__, e)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _fall_back_to_pure(distribution):
    """After a failed kernel build: the wheel declares no cffi and is tagged py3-none-any."""
    distribution.install_requires = distribution.metadata.install_requires = []
    distribution.ext_modules = []
    # egg_info may have written PKG-INFO (Requires-Dist: cffi) already: install_egg_info reruns it
    distribution.have_run["egg_info"] = False
    wheel = distribution.command_obj.get("bdist_wheel")
    if wheel is not None:  # its tag and Root-Is-Purelib are read after the build
        wheel.root_is_pure = True
        wheel.py_limited_api = False


class OptionalBuildExt(build_ext):
    """build_ext that leaves a pure-Python package behind when the C kernels fail to build."""

    def run(self):
        try:
            build_ext.run(self)
        except Exception as e:
            _say("the C kernels were not built (%s: %s); ember stays pure Python" % (type(e).__name__, e))
            _fall_back_to_pure(self.distribution)

    def build_extension(self, ext):
        try:
            build_ext.build_extension(self, ext)
        except Exception as e:
            _say("%s was not built (%s: %s); ember stays pure Python" % (ext.name, type(e).__name__, e))
            _fall_back_to_pure(self.distribution)


options = {"cmdclass": {"build_ext": OptionalBuildExt}, "install_requires": []}
problem = _compiler_problem()
if problem is None:
    options["cffi_modules"] = [CFFI_MODULE]
    options["install_requires"] = [CFFI_RUNTIME]
    # one wheel for every CPython >= 3.10: cffi builds the module against the limited API
    options["options"] = {"bdist_wheel": {"py_limited_api": "cp310"}}
else:
    _say("no working C compiler (%s): building the pure-Python package" % problem)

setup(**options)
