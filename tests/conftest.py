"""pytest glue for ember's test convention (CPython side).

Test files do not import pytest. A test is a module-level function named
``test_*``; what it takes is declared once per module:

    PARAMETERS = ("device",)          # test_x(device)
    PARAMETERS = ("device", "case")   # test_x(device, case)
    CASES = [...]                      # needed when "case" is declared

``device`` runs over every backend that ``harness.backends.available()``
returns (a list of ``(name, device_object)``; the name is the test id);
``case`` runs over the module's ``CASES`` (``case.name`` is the test id).
A function whose signature differs from its module's PARAMETERS is reported
as a failing test. Files in the CPython-only folders (tests/accel, tests/tools)
may use pytest's own parametrization instead, unless they declare PARAMETERS.

Backends are never skipped silently: ``EMBER_REQUIRE_BACKENDS=cpu,...`` makes
the session fail at start when a listed backend is not available, and the
terminal summary always lists the backends that ran and those that were
unavailable (with the reason from ``harness.backends.unavailable()``).

tests/mpy/main.py implements the same convention for MicroPython.
"""

import inspect
import os
import sys

import pytest

TESTS_DIR = os.path.dirname(os.path.abspath(__file__))
if TESTS_DIR not in sys.path:
    # makes `import harness` work from any test file below tests/
    sys.path.insert(0, TESTS_DIR)

KNOWN_PARAMETERS = ("device", "case")
REQUIRE_ENV = "EMBER_REQUIRE_BACKENDS"

_state = {"available": None, "unavailable": None, "ran": {}, "by_nodeid": {}}


def _backends():
    """(available, unavailable) from harness.backends, computed once."""
    if _state["available"] is None:
        from harness import backends

        _state["available"] = [(str(n), d) for n, d in backends.available()]
        _state["unavailable"] = [(str(n), str(r)) for n, r in backends.unavailable()]
    return _state["available"], _state["unavailable"]


def _required():
    raw = os.environ.get(REQUIRE_ENV, "")
    return [name.strip() for name in raw.split(",") if name.strip()]


def _declared(module):
    """The module's PARAMETERS as a tuple, or an error message."""
    params = getattr(module, "PARAMETERS", ())
    if not isinstance(params, (tuple, list)):
        return None, (
            "PARAMETERS must be a tuple of names, got %r "
            "(a one-element tuple needs a trailing comma: (\"device\",))" % (params,)
        )
    params = tuple(params)
    unknown = [p for p in params if p not in KNOWN_PARAMETERS]
    if unknown:
        return None, "PARAMETERS has unknown name(s) %s; known: %s" % (
            ", ".join(map(repr, unknown)),
            ", ".join(KNOWN_PARAMETERS),
        )
    if len(set(params)) != len(params):
        return None, "PARAMETERS repeats a name: %r" % (params,)
    return params, None


def _contract_error(module, function):
    """A message when function's real signature disagrees with PARAMETERS."""
    declared, error = _declared(module)
    if error:
        return error
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError) as exc:  # pragma: no cover - exotic callables
        return "cannot read the signature: %s" % exc
    actual = tuple(signature.parameters)
    kinds_ok = all(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in signature.parameters.values()
    )
    if actual != declared or not kinds_ok:
        return (
            "signature %s%s does not match the module's PARAMETERS = %r; a test "
            "function must take exactly the declared parameters, in order, "
            "without defaults" % (function.__name__, signature, declared)
        )
    if "case" in declared:
        cases = getattr(module, "CASES", None)
        if cases is None:
            return "PARAMETERS declares 'case' but the module defines no CASES"
        if not len(cases):
            return "PARAMETERS declares 'case' but CASES is empty"
    return None


class ContractViolation(Exception):
    pass


class ContractErrorItem(pytest.Item):
    """Stands in for a test function that breaks the convention; always fails."""

    def __init__(self, *, message, **kwargs):
        super().__init__(**kwargs)
        self.message = message

    def runtest(self):
        raise ContractViolation(self.message)

    def repr_failure(self, excinfo):
        if excinfo.errisinstance(ContractViolation):
            return "test convention violated: %s" % self.message
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, None, self.name


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector, name, obj):
    if not isinstance(collector, pytest.Module):
        return None
    if not inspect.isfunction(obj) or not collector.funcnamefilter(name):
        return None
    if not _follows_convention(collector.obj):
        return None  # a CPython-only test file using pytest's own parametrization
    message = _contract_error(collector.obj, obj)
    if message is None:
        return None  # let pytest build the normal Function item(s)
    return [ContractErrorItem.from_parent(collector, name=name, message=message)]


SHARED_FOLDERS = ("core", "conformance")  # the folders MicroPython runs too


def _follows_convention(module):
    """Shared test files always follow it; CPython-only ones do when they declare PARAMETERS."""
    folder = os.path.basename(os.path.dirname(os.path.abspath(module.__file__)))
    return folder in SHARED_FOLDERS or hasattr(module, "PARAMETERS")


def pytest_generate_tests(metafunc):
    if not _follows_convention(metafunc.module):
        return
    declared, error = _declared(metafunc.module)
    if error or not declared:
        return
    for param in declared:
        if param == "device":
            available, unavailable = _backends()
            if not available:
                raise RuntimeError(
                    "no ember backend is available, so tests taking 'device' cannot run; "
                    "unavailable: %s" % (_format_unavailable(unavailable) or "none reported")
                )
            metafunc.parametrize(
                "device", [d for _, d in available], ids=[n for n, _ in available]
            )
        elif param == "case":
            cases = list(metafunc.module.CASES)
            metafunc.parametrize("case", cases, ids=[str(c.name) for c in cases])


def _format_unavailable(unavailable):
    return "; ".join("%s (%s)" % (n, r) for n, r in unavailable)


def pytest_sessionstart(session):
    required = _required()
    if not required:
        return
    try:
        available, unavailable = _backends()
    except Exception as exc:  # harness missing or broken: that is a failure too
        pytest.exit(
            "%s=%s but harness.backends could not be loaded: %s: %s"
            % (REQUIRE_ENV, ",".join(required), type(exc).__name__, exc),
            returncode=pytest.ExitCode.USAGE_ERROR,
        )
    names = [n for n, _ in available]
    missing = [r for r in required if r not in names]
    if missing:
        reasons = dict(unavailable)
        detail = "; ".join(
            "%s: %s" % (m, reasons.get(m, "not known to harness.backends")) for m in missing
        )
        pytest.exit(
            "required backend(s) unavailable (%s=%s): %s"
            % (REQUIRE_ENV, ",".join(required), detail),
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


def pytest_collection_modifyitems(session, config, items):
    # remember which backend each device-parametrized test runs on
    available = _state["available"] or []
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None or "device" not in callspec.params:
            continue
        index = getattr(callspec, "indices", {}).get("device")
        if index is not None and index < len(available):
            name = available[index][0]
        else:
            device = callspec.params["device"]
            name = next((n for n, d in available if d is device), "?")
        _state["by_nodeid"][item.nodeid] = name


def pytest_runtest_logreport(report):
    name = _state["by_nodeid"].get(report.nodeid)
    if name is None:
        return
    counts = _state["ran"].setdefault(name, {"passed": 0, "failed": 0, "skipped": 0})
    if report.when == "call":
        counts[report.outcome] = counts.get(report.outcome, 0) + 1
    elif report.outcome != "passed":  # setup/teardown errors and skips
        counts[report.outcome] = counts.get(report.outcome, 0) + 1


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    write = terminalreporter.write_line
    terminalreporter.section("ember backends")
    try:
        available, unavailable = _backends()
    except Exception as exc:
        write("could not load harness.backends: %s: %s" % (type(exc).__name__, exc))
        return
    for name, _ in available:
        counts = _state["ran"].get(name)
        if counts:
            summary = ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items()) if v)
            write("ran:         %s (%s)" % (name, summary or "no outcome"))
        else:
            write("available:   %s (no device test selected)" % name)
    for name, reason in unavailable:
        write("unavailable: %s (%s)" % (name, reason))
    required = _required()
    write("required (%s): %s" % (REQUIRE_ENV, ", ".join(required) or "none"))
