"""The import audit: a file of core_pure/ imports only the standard modules a board may assume.

docs/architecture.md ("Modules a board may assume") says which modules those are and where each fact
comes from. Everything else is optional: imported inside ``try: ... except ImportError``, with a
fallback. ember's own modules are free, except ``ember.accel`` (CPython only), which a core file
imports only inside a function (the numpy/DLPack interop methods). The audit parses the sources with
CPython's ``ast``; under MicroPython the same file checks that the modules it allows import on the
port running it.
"""
import os
import sys

from harness.check import assert_true

try:
    import ast
except ImportError:  # MicroPython has no ast: the audit itself runs on CPython
    ast = None

# in every port from MicroPython's CORE_FEATURES level up (py/mpconfig.h)
GUARANTEED = ("array", "collections", "gc", "io", "math", "micropython", "struct", "sys")
# in the unix port and in every board port checked (esp32, rp2, stm32, samd21), not in minimal builds
ON_BOARDS = ("binascii", "heapq", "json", "os", "random", "re", "time")
BOARD_MODULES = GUARANTEED + ON_BOARDS
# ember's compiled C kernels and cffi's runtime: CPython builds only, loaded behind a guard
COMPILED = ("ember._ckernels", "_cffi_backend")
PACKAGE = "ember"
CPYTHON_ONLY = "ember.accel"


def core_root():
    here = __file__.replace("\\", "/").rsplit("/", 1)[0]  # .../tests/core
    return here.rsplit("/", 2)[0] + "/core_pure"


def core_files(root, package=PACKAGE):
    """[(path, dotted package of the file)] for every .py below root."""
    found = []
    for entry in sorted(os.listdir(root)):
        path = root + "/" + entry
        if entry.startswith(".") or entry == "__pycache__":
            continue
        if entry.endswith(".py"):
            found.append((path, package))
        elif (os.stat(path)[0] & 0x4000) != 0:
            found.extend(core_files(path, package + "." + entry))
    return found


def _catches_import_error(handler):
    names = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(isinstance(n, ast.Name) and n.id == "ImportError" for n in names)


def _is_ember(module):
    return module == PACKAGE or module.startswith(PACKAGE + ".")


def _modules(node, package):
    """The modules an Import/ImportFrom node may load, relative imports resolved against package."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        parts = package.split(".")
        base = ".".join(parts[:len(parts) - node.level + 1] + ([node.module] if node.module else []))
    else:
        base = node.module
    if not _is_ember(base):
        return [base]  # `from collections import namedtuple` names an attribute, not a module
    return [base] + [base + "." + alias.name for alias in node.names]  # `from .. import accel` loads one


def _problem(module, in_function):
    if _is_ember(module):
        if module == CPYTHON_ONLY or module.startswith(CPYTHON_ONLY + "."):
            if not in_function:
                return "%s is CPython only: import it inside the function that needs it" % module
        return None
    if module in BOARD_MODULES or module in COMPILED:
        return None
    return ("%s is not a module a board may assume (docs/architecture.md, \"Modules a board may "
            "assume\"): import it inside try/except ImportError with a fallback" % module)


def audit(source, filename, package=PACKAGE):
    """["file:line: why"] for every import in source that a board may not be able to do."""
    found = []

    def visit(node, in_function, guarded):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and not guarded:
            problems = [p for p in (_problem(m, in_function) for m in _modules(node, package)) if p]
            if problems:  # one line per statement: the first module it names that a board may lack
                found.append("%s:%d: %s" % (filename, node.lineno, problems[0]))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            in_function, guarded = True, False  # the body runs when called, outside any guard around the def
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers if h.type):
            for child in node.body:
                visit(child, in_function, True)
            rest = node.handlers + node.orelse + node.finalbody
        else:
            rest = ast.iter_child_nodes(node)
        for child in rest:
            visit(child, in_function, guarded)

    visit(ast.parse(source, filename), False, False)
    return found


def test_core_imports_only_modules_a_board_may_assume():
    if ast is None:
        print("import audit: needs CPython's ast (test_board_modules_import_here checks this port)")
        return
    root = core_root()
    found = []
    for path, package in core_files(root):
        with open(path) as f:
            found += audit(f.read(), "core_pure" + path[len(root):], package)
    assert_true(not found, "\n".join(found))


def test_the_audit_finds_a_planted_import():
    if ast is None:
        return
    source = "\n".join([
        "import typing",                                        # 1: not on boards
        "import os.path",                                       # 2: os is, os.path is not
        "from functools import reduce",                         # 3: the wasm build has it, boards do not
        "try:",
        "    import operator",                                  # 5: guarded: fine
        "except (ImportError, AttributeError):",
        "    operator = None",
        "try:",
        "    import enum",                                      # 9: the wrong guard
        "except ValueError:",
        "    pass",
        "from ember.accel import Autodiff",                     # 12: CPython only, at import time
        "from ..accel.numpy import interop",                    # 13: the same, relative
        "from .. import dtypes, accel",                         # 14: ember's own, but accel is CPython only
        "import json, struct",                                  # 15: fine
        "try:",
        "    def later():",
        "        import dataclasses",                           # 18: runs outside the guard
        "except ImportError:",
        "    pass",
        "def to_numpy(x):",
        "    from ember.accel.numpy.interop import to_numpy",   # 22: inside a function: fine
        "    from .. import _ckernels",                         # 23: ember._ckernels: fine
        "    import _cffi_backend",                             # 24: fine
        "    return to_numpy(x)",
    ])
    found = audit(source, "core_pure/nn/planted.py", "ember.nn")
    lines = [int(f.split(":")[1]) for f in found]
    assert_true(lines == [1, 2, 3, 9, 12, 13, 14, 18], "\n".join(found))
    assert_true(found[0].startswith("core_pure/nn/planted.py:1: typing is not a module a board may assume"),
                found[0])
    assert_true("ember.accel.numpy is CPython only" in found[5], found[5])


def test_board_modules_import_here():
    # on CPython `micropython` is MicroPython's own module; the rest are CPython's namesakes
    mine = [m for m in BOARD_MODULES if m != "micropython" or sys.implementation.name == "micropython"]
    missing = []
    for name in mine:
        try:
            __import__(name)
        except ImportError:
            missing.append(name)
    assert_true(not missing, "modules a board may assume that %s lacks: %s" % (sys.platform, missing))
