"""Runs ember under MicroPython's unix port (the `micropython` binary of the dev extra), on CPython.

    python tests/mpy/run_unix.py [runner options] [main.py args]
        stages core_pure/ as <stage>/lib/ember and tests/ as <stage>/tests, then runs
        tests/mpy/main.py (the same driver run.mjs runs on the wasm port) with the given args,
        e.g. `-k conv -v`. MICROPYPATH is .frozen:<stage>/tests:<stage>/lib; cwd is <stage>.
    python tests/mpy/run_unix.py [runner options] --script FILE.py [args]
        stages core_pure/ as <stage>/lib/ember and FILE's folder as <stage>/app, then runs
        <stage>/app/FILE.py with args. MICROPYPATH is .frozen:<stage>/app:<stage>/lib; cwd is it.

Runner options (before --script, or anywhere in the first form):
    --heapsize SIZE      the fixed heap, e.g. 64m (default), 512k. Unlike the wasm port's this heap
                         never grows: an allocation that does not fit raises MemoryError, as on a board.
    --micropython PATH   the interpreter (default: `micropython` beside this Python, else on PATH).
    --keep               leave the staging folder in place and print where it is.
    --                   everything after it goes to main.py untouched.

The stage is a fresh temporary folder of copies (not links), as run.mjs copies into its in-memory file
system: files the tests write land there and vanish with it, and CPython's leftovers (__pycache__,
the compiled C kernels) stay out. Exit status: the script's sys.exit() value (main.py: 0 all passed,
1 a failure, 4 bad usage, 5 nothing selected); 1 for an uncaught Python exception or an interpreter
that crashed; 2 when the runner cannot start MicroPython or its arguments are wrong.
"""
import os
import shutil
import subprocess
import sys
import tempfile

# the bootstrap and what a stage leaves out are the package's, which runs scripts the same way
from ember.accel.deploy.micropython import BOOTSTRAP, SKIP

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# The smallest fixed heap the core suite passes in is 56 MB: its LeNet test (batch-4 inference, every
# value a 16-byte boxed float on this 64-bit port) fails in the pure conv kernel at 48 MB against a
# 4.8 MB live peak, as fragmentation does on a board. 64 MB leaves headroom; tests/mpy/README.md has
# the measurements.
DEFAULT_HEAP = "64m"
SCALES = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


class UsageError(Exception):
    pass


def parse_size(text):
    """Bytes in SIZE ("32m", "512k", "65536"); MicroPython takes -X heapsize= in bytes."""
    digits = text.strip().lower().rstrip("b")
    suffix = digits[-1:] if digits[-1:] in ("k", "m", "g") else ""
    number = digits[: len(digits) - len(suffix)]
    if not number.isdigit() or int(number) == 0:
        raise UsageError("bad size %r (use e.g. 64m, 512k)" % text)
    return int(number) * SCALES[suffix]


def parse_args(argv):
    opts = {"heapsize": parse_size(DEFAULT_HEAP), "micropython": None, "keep": False, "script": None,
            "args": []}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("--heapsize", "--micropython", "--script"):
            if i + 1 >= len(argv):
                raise UsageError("%s needs a value" % arg)
            value = argv[i + 1]
            i += 2
            if arg == "--heapsize":
                opts["heapsize"] = parse_size(value)
            elif arg == "--micropython":
                opts["micropython"] = value
            else:
                opts["script"] = value
                opts["args"].extend(argv[i:])
                break
        elif arg == "--keep":
            opts["keep"] = True
            i += 1
        elif arg == "--":
            opts["args"].extend(argv[i + 1:])
            break
        else:
            opts["args"].append(arg)
            i += 1
    return opts


def find_micropython(given):
    if given is not None:
        found = shutil.which(given)
        if found is None:
            raise UsageError("no MicroPython interpreter at %s" % given)
        return found
    # the venv's bin/ first: `python tests/mpy/run_unix.py` works without activating the venv
    search = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    found = shutil.which("micropython", path=search)
    if found is None:
        raise UsageError("no `micropython` beside %s or on PATH (run `make venv` first)" % sys.executable)
    return found


def stage(opts, folder):
    """Copies what the run needs into folder; returns (search path, file to run, cwd)."""
    ignore = shutil.ignore_patterns(*SKIP)
    core = os.path.join(ROOT, "core_pure")
    if not os.path.isdir(core):
        raise UsageError("%s not found" % core)
    shutil.copytree(core, os.path.join(folder, "lib", "ember"), ignore=ignore)
    if opts["script"] is None:
        shutil.copytree(os.path.join(ROOT, "tests"), os.path.join(folder, "tests"), ignore=ignore)
        paths = [os.path.join(folder, "tests"), os.path.join(folder, "lib")]
        return paths, os.path.join(folder, "tests", "mpy", "main.py"), folder
    script = os.path.abspath(opts["script"])
    if not os.path.isfile(script):
        raise UsageError("no such script: %s" % opts["script"])
    app = os.path.join(folder, "app")
    shutil.copytree(os.path.dirname(script), app, ignore=ignore)
    return [app, os.path.join(folder, "lib")], os.path.join(app, os.path.basename(script)), app


def run(opts):
    micropython = find_micropython(opts["micropython"])
    folder = tempfile.mkdtemp(prefix="ember-mpy-unix-")
    try:
        paths, main, cwd = stage(opts, folder)
        boot = os.path.join(folder, "boot.py")
        with open(boot, "w") as f:
            f.write(BOOTSTRAP)
        # .frozen first: the port's own frozen modules (asyncio among them) must stay importable
        env = dict(os.environ, MICROPYPATH=os.pathsep.join([".frozen"] + paths))
        command = [micropython, "-X", "heapsize=%d" % opts["heapsize"], boot, main] + opts["args"]
        sys.stdout.flush()
        status = subprocess.call(command, cwd=cwd, env=env)
    finally:
        if opts["keep"]:
            print("run_unix.py: staging folder kept: %s" % folder, file=sys.stderr)
        else:
            shutil.rmtree(folder, ignore_errors=True)
    if status < 0:
        print("run_unix.py: %s died of signal %d" % (micropython, -status), file=sys.stderr)
        return 1
    return status


def main(argv):
    try:
        opts = parse_args(argv)
        return run(opts)
    except (UsageError, OSError) as e:
        print("run_unix.py: %s" % e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
