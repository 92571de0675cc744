"""`import ember` warns once when the C kernels ship but cannot load (here: cffi's runtime blocked),
and stays silent when they load, when there are none, or when EMBER_NO_C=1 asks for pure Python."""
import os
import subprocess
import sys

import pytest

from ember.backends.cpu import ckernels

BLOCK_CFFI = "import sys; sys.modules['_cffi_backend'] = None\n"


def _run(code, **env):
    full = {k: v for k, v in os.environ.items() if k != "EMBER_NO_C"}
    full.update(env)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout, proc.stderr


needs_kernels = pytest.mark.skipif(ckernels._built_file() is None, reason="this ember has no compiled C kernels")


@needs_kernels
def test_present_but_unloadable_kernels_warn_once_with_the_fix():
    out, err = _run(BLOCK_CFFI + "import ember, ember.nn, ember\nprint(ember.Cpu().kernels)")
    assert out.strip() == "python"
    assert err.count("RuntimeWarning") == 1
    assert "present but do not load" in err and "pip install cffi" in err and "_cffi_backend" in err


@needs_kernels
def test_ember_no_c_silences_the_warning():
    _, err = _run(BLOCK_CFFI + "import ember", EMBER_NO_C="1")
    assert "RuntimeWarning" not in err


def test_loading_kernels_or_none_at_all_is_silent():
    out, err = _run("import warnings; warnings.simplefilter('error'); import ember; print(ember.Cpu().kernels)")
    assert out.strip() == ("c" if ckernels.available() else "python")
    assert err == ""
