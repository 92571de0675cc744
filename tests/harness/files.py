"""Scratch files for tests, on CPython (a fresh temporary folder) and MicroPython (its in-memory file
system, which has no tempfile)."""
import os


def tmp_path(name):
    """A path for a file called ``name`` in a folder the test may write to."""
    try:
        import tempfile
        folder = tempfile.mkdtemp()
    except ImportError:
        folder = "/tmp_ember"
        try:
            os.mkdir(folder)
        except OSError:
            pass
    return folder + "/" + name
