"""Scratch files for tests, on CPython (a fresh temporary folder) and MicroPython, which has no
tempfile: a folder relative to the runner's cwd (the wasm port's in-memory file system, or the
temporary folder run_unix.py runs in and discards)."""
import os


def tmp_path(name):
    """A path for a file called ``name`` in a folder the test may write to."""
    try:
        import tempfile
        folder = tempfile.mkdtemp()
    except ImportError:
        folder = "tmp_ember"
        try:
            os.mkdir(folder)
        except OSError:
            pass
    return folder + "/" + name
