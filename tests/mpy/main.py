# Test driver for ember's suites under MicroPython, run by tests/mpy/run.mjs
# (the wasm port 1.27) or tests/mpy/run_unix.py (the unix port 1.29).
#
# No inspect, no typing, no os.environ, dicts are unordered. The runner has
# put core_pure/ where it imports as ember (wasm: /lib/ember; unix: a staging
# folder on MICROPYPATH) and tests/ beside this file's folder (this file is
# <tests>/mpy/main.py), with <tests> and ember's parent folder on sys.path.
#
# What it does, in order:
#   1. imports every module of ember (one test per module);
#   2. runs the test_* functions of <tests>/core/test_*.py and
#      <tests>/conformance/test_*.py, with the arguments their module's
#      PARAMETERS declares (see tests/conftest.py for the convention).
#
# Options:  -k SUBSTR      run only tests whose id contains SUBSTR (repeatable: any)
#           --require A,B  fail at once unless backends A and B are available
#           -v             print every test, not only failures
#           -x             stop after the first failure
# Exit status: 0 all passed, 1 a test failed or a required backend is missing,
#              4 bad usage, 5 no test selected.

import asyncio
import gc
import os
import sys
import time

PACKAGE = "ember"
SUITES = ("core", "conformance")
KNOWN_PARAMETERS = ("device", "case")


def usage(code):
    print("usage: main.py [-k SUBSTR]... [--require NAME[,NAME...]] [-v] [-x]")
    sys.exit(code)


def parse_args(argv):
    opts = {"k": [], "require": [], "verbose": False, "exitfirst": False}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in ("-k", "--require"):
            if i + 1 >= len(argv):
                print("main.py: %s needs a value" % arg)
                usage(4)
            value = argv[i + 1]
            i += 2
            if arg == "-k":
                opts["k"].append(value)
            else:
                for name in value.split(","):
                    name = name.strip()
                    if name:
                        opts["require"].append(name)
        elif arg.startswith("-k") and len(arg) > 2:
            opts["k"].append(arg[2:])
            i += 1
        elif arg in ("-v", "--verbose"):
            opts["verbose"] = True
            i += 1
        elif arg in ("-x", "--exitfirst"):
            opts["exitfirst"] = True
            i += 1
        elif arg in ("-h", "--help"):
            usage(0)
        else:
            print("main.py: unknown argument %r" % arg)
            usage(4)
    return opts


def parent(path):
    return path.rsplit("/", 1)[0] if "/" in path else "."


def tests_root():
    """The tests/ folder: two levels above this file."""
    return parent(parent(__file__))


def library_root():
    """The folder ember imports from: the first sys.path entry holding it, as import finds it."""
    for entry in sys.path:
        folder = (entry or ".") + "/" + PACKAGE
        if is_dir(folder):
            return folder
    return None


def port():
    """One word for the port running this: wasm, unix, or a board's sys.platform (rp2, esp32, ...)."""
    return {"webassembly": "wasm", "linux": "unix", "darwin": "unix"}.get(sys.platform, sys.platform)


def describe_interpreter():
    # the ports differ where it matters for a board: heap growth, word size, bundled modules
    version = ".".join(str(v) for v in sys.implementation.version[:3])
    return "MicroPython %s (%s port, %d-bit)" % (version, port(), 64 if sys.maxsize > 2**31 else 32)


def describe_heap():
    size = (gc.mem_free() + gc.mem_alloc()) // 1024
    if sys.platform == "webassembly":
        return "heap %d KB now, grows on demand" % size
    return "fixed heap of %d KB" % size


def is_dir(path):
    try:
        return (os.stat(path)[0] & 0x4000) != 0
    except OSError:
        return False


def exists(path):
    try:
        os.stat(path)
        return True
    except OSError:
        return False


class StopRun(Exception):
    pass


class Session:
    def __init__(self, opts):
        self.opts = opts
        self.passed = 0
        self.failed = []  # test ids, in run order
        self.slowest = []  # (ms, id), longest few
        self.peak = 0
        self.peak_id = None
        self.start = time.ticks_ms()

    def selected(self, test_id):
        if not self.opts["k"]:
            return True
        for sub in self.opts["k"]:
            if sub in test_id:
                return True
        return False

    def fail(self, test_id, exc):
        # A failure that is not a test call (import error, bad PARAMETERS):
        # reported whatever -k selects, as pytest reports collection errors.
        self.failed.append(test_id)
        print("FAILED %s" % test_id)
        if isinstance(exc, BaseException):
            sys.print_exception(exc)
        else:
            print("  " + str(exc))
        if self.opts["exitfirst"]:
            raise StopRun()

    def run(self, test_id, fn, args):
        if not self.selected(test_id):
            return
        t0 = time.ticks_ms()
        error = None
        try:
            fn(*args)
        except BaseException as exc:  # noqa: B036 - a test must never end the run
            error = exc
        ms = time.ticks_diff(time.ticks_ms(), t0)
        self.slowest.append((ms, test_id))
        self.slowest.sort(key=lambda item: -item[0])
        del self.slowest[5:]
        if error is None:
            self.passed += 1
            if self.opts["verbose"]:
                print("PASSED %s (%d ms)" % (test_id, ms))
        else:
            self.fail(test_id, error)
        error = None

    def probe_memory(self, where):
        # once per file: a collection and gc.mem_alloc() cost tens of ms on a big wasm heap
        gc.collect()
        used = gc.mem_alloc()
        if used > self.peak:
            self.peak = used
            self.peak_id = where


def library_modules(root, dotted):
    """Dotted names of every .py module below root, packages first, sorted."""
    names = []
    entries = sorted(os.listdir(root))
    if "__init__.py" in entries:
        names.append(dotted)
    for entry in entries:
        path = root + "/" + entry
        if entry.startswith(".") or entry == "__pycache__":
            continue
        if is_dir(path):
            names.extend(library_modules(path, dotted + "." + entry))
        elif entry.endswith(".py") and entry != "__init__.py":
            names.append(dotted + "." + entry[:-3])
    return names


def check_imports(session):
    root = library_root()
    if root is None:
        session.fail("import " + PACKAGE, "no %s/ on sys.path: the runner did not stage core_pure" % PACKAGE)
        return
    before_pass, before_fail = session.passed, len(session.failed)
    for name in library_modules(root, PACKAGE):
        session.run("import " + name, __import__, (name,))
    passed = session.passed - before_pass
    failed = len(session.failed) - before_fail
    if passed or failed:
        print("import every module of %s: %d passed, %d failed" % (root, passed, failed))


def load_backends(session):
    try:
        from harness import backends
    except BaseException as exc:
        session.fail("tests/harness/backends.py::<import>", exc)
        return None, []
    try:
        available = [(str(n), d) for n, d in backends.available()]
        unavailable = [(str(n), str(r)) for n, r in backends.unavailable()]
    except BaseException as exc:
        session.fail("tests/harness/backends.py::available", exc)
        return None, []
    return available, unavailable


def declared_parameters(module):
    params = getattr(module, "PARAMETERS", ())
    if not isinstance(params, (tuple, list)):
        return None, "PARAMETERS must be a tuple of names, got %r" % (params,)
    params = tuple(params)
    for p in params:
        if p not in KNOWN_PARAMETERS:
            return None, "PARAMETERS has unknown name %r; known: %s" % (p, ", ".join(KNOWN_PARAMETERS))
    if "case" in params:
        cases = getattr(module, "CASES", None)
        if cases is None or not len(cases):
            return None, "PARAMETERS declares 'case' but CASES is missing or empty"
    return params, None


def combinations(params, module, available):
    """[(id_suffix, args)] for every argument combination PARAMETERS asks for."""
    combos = [([], [])]
    for param in params:
        if param == "device":
            values = available
        else:
            values = [(str(c.name), c) for c in module.CASES]
        combos = [(ids + [vid], args + [v]) for ids, args in combos for vid, v in values]
    result = []
    for ids, args in combos:
        result.append(("[%s]" % "-".join(ids) if ids else "", tuple(args)))
    return result


def test_functions(module):
    found = []
    for name in sorted(dir(module)):
        if not name.startswith("test_"):
            continue
        obj = getattr(module, name)
        if callable(obj) and not isinstance(obj, type):
            found.append((name, obj))
    return found


def run_file(session, suite, filename, available, seen):
    modname = filename[:-3]
    file_id = "tests/%s/%s" % (suite, filename)
    if modname in seen:
        session.fail(file_id + "::<import>",
                     "test module name %r is also used by %s; basenames must be unique "
                     "across test folders" % (modname, seen[modname]))
        return
    seen[modname] = file_id
    try:
        module = __import__(modname)
    except BaseException as exc:
        session.fail(file_id + "::<import>", exc)
        return
    functions = test_functions(module)
    params, problem = declared_parameters(module)
    if problem is None and "device" in params and available is None:
        problem = "PARAMETERS declares 'device' but harness.backends failed (see above)"
    if problem is None and "device" in params and not available:
        problem = "PARAMETERS declares 'device' but no backend is available"
    for name, fn in functions:
        base_id = file_id + "::" + name
        if problem is not None:
            if session.selected(base_id):
                session.fail(base_id, problem)
            continue
        for suffix, args in combinations(params, module, available):
            session.run(base_id + suffix, fn, args)


async def run_suites(session, available):
    seen = {}
    for suite in SUITES:
        folder = tests_root() + "/" + suite
        if not is_dir(folder):
            continue
        files = sorted(f for f in os.listdir(folder) if f.startswith("test_") and f.endswith(".py"))
        sys.path.insert(0, folder)
        try:
            for filename in files:
                before_pass, before_fail = session.passed, len(session.failed)
                run_file(session, suite, filename, available, seen)
                # the wasm port frees memory only once control has been back in JavaScript
                await asyncio.sleep(0)
                session.probe_memory("tests/%s/%s" % (suite, filename))
                passed = session.passed - before_pass
                failed = len(session.failed) - before_fail
                if passed or failed:
                    print("tests/%s/%s: %d passed, %d failed" % (suite, filename, passed, failed))
        finally:
            sys.path.remove(folder)


async def amain():
    opts = parse_args(sys.argv[1:])
    session = Session(opts)
    print("ember tests on %s, %s" % (describe_interpreter(), describe_heap()))

    available, unavailable = load_backends(session)
    if opts["require"]:
        names = [n for n, _ in available or ()]
        reasons = dict(unavailable)
        missing = [r for r in opts["require"] if r not in names]
        if missing:
            for m in missing:
                print("required backend unavailable: %s (%s)" % (m, reasons.get(m, "not known to harness.backends")))
            print("MicroPython run aborted: required backend(s) %s unavailable" % ", ".join(missing))
            sys.exit(1)

    try:
        check_imports(session)
        await run_suites(session, available)
    except StopRun:
        print("stopping after the first failure (-x)")

    seconds = time.ticks_diff(time.ticks_ms(), session.start) / 1000
    print("")
    if session.failed:
        print("== %d failed ==" % len(session.failed))
        for test_id in session.failed:
            print("FAILED " + test_id)
    slow = [(ms, i) for ms, i in session.slowest if ms >= 100]
    if slow:
        print("slowest: " + ", ".join("%s %d ms" % (i, ms) for ms, i in slow))
    if available is not None:
        print("backends ran: " + (", ".join(n for n, _ in available) or "none"))
        print("backends unavailable: " + (", ".join("%s (%s)" % (n, r) for n, r in unavailable) or "none"))
    print("peak live heap after a test file: %d bytes (%s)" % (session.peak, session.peak_id))
    print("%s, %.1f s" % (describe_interpreter(), seconds))
    if session.passed == 0 and not session.failed:
        print("no test selected")
    print("%s: %d passed, %d failed" % (port(), session.passed, len(session.failed)))
    if session.failed:
        sys.exit(1)
    if session.passed == 0:
        sys.exit(5)


# The runners await ``amain`` after executing this file (on the wasm port an await is what lets the GC
# free memory; run_unix.py does the same with asyncio.run so both ports run one driver the same way)
