"""Write tests/golden/conformance.json: the conformance suite's expected values, for MicroPython.

    python tests/golden/make_golden.py           # rewrite the file
    python tests/golden/make_golden.py --check   # exit 1 if the committed file is stale

Runs on CPython with numpy. It imports every tests/conformance/test_*.py module, takes each case's
layout-independent part once, draws its inputs as the tests do and computes the expected values with
the case's numpy function. The output is deterministic (sorted names, one case per line, floats in
the shortest text that reads back to the same value of the case's dtype), so a regenerated file only
differs where a case or ember's input generator changed; tests/tools/test_golden_fresh.py checks it.
"""
import importlib
import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.dirname(HERE)
CONFORMANCE = os.path.join(TESTS, "conformance")
ROOT = os.path.dirname(TESTS)
OUTPUT = os.path.join(HERE, "conformance.json")


def _ensure_ember():
    """Import ember; from a plain checkout (no install), load core_pure/ under that name."""
    try:
        import ember  # noqa: F401
        return
    except ImportError:
        pass
    core = os.path.join(ROOT, "core_pure")
    spec = importlib.util.spec_from_file_location("ember", os.path.join(core, "__init__.py"),
                                                  submodule_search_locations=[core])
    module = importlib.util.module_from_spec(spec)
    sys.modules["ember"] = module
    spec.loader.exec_module(module)


def collect():
    """{base name: case}: one case per layout-independent spec, from every conformance module."""
    _ensure_ember()
    for path in (CONFORMANCE, TESTS):
        if path not in sys.path:
            sys.path.insert(0, path)
    found = {}
    for filename in sorted(os.listdir(CONFORMANCE)):
        if not (filename.startswith("test_") and filename.endswith(".py")):
            continue
        module = importlib.import_module(filename[:-3])
        for case in getattr(module, "CASES", ()):
            if getattr(case, "ref", None) is None:
                continue  # not a value case (error cases have no numpy reference)
            other = found.get(case.base)
            if other is not None and other.fn is not case.fn:
                raise ValueError("conformance case %r is defined in two places" % case.base)
            found[case.base] = case
    return found


def _number(np, v, dtype):
    if type(v) is bool:
        return "true" if v else "false"
    if type(v) is int:
        return str(v)
    if v != v:
        return '"nan"'
    if v in (float("inf"), float("-inf")):
        return '"inf"' if v > 0 else '"-inf"'
    if dtype == "float64":
        return repr(v)
    return str(np.float32(v))  # float16 and bfloat16 values are float32 values too


def _list(items):
    return "[" + ", ".join(items) + "]"


def entry_text(np, case):
    import conformance_kit as kit

    pairs = kit.reference_inputs(case)
    inputs = _list(_list([repr(s), str(n)]) for s, n in (kit.checksum(flat) for _, flat in pairs))
    outputs = []
    for dtype, (shape, values) in zip(case.out, kit.numpy_expected(np, case, pairs)):
        outputs.append('{"dtype": "%s", "shape": %s, "values": %s}'
                       % (dtype, _list(str(s) for s in shape), _list(_number(np, v, dtype) for v in values)))
    return '{"inputs": %s, "outputs": %s}' % (inputs, _list(outputs))


def render():
    """The golden file's full text."""
    import json

    import numpy as np

    cases = collect()
    lines = []
    for name in sorted(cases):
        lines.append("  %s: %s" % (json.dumps(name), entry_text(np, cases[name])))
    import conformance_kit as kit

    return '{"format": %d,\n "cases": {\n%s\n }\n}\n' % (kit.GOLDEN_FORMAT, ",\n".join(lines))


def main(argv):
    text = render()
    if "--check" in argv:
        try:
            with open(OUTPUT) as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print("%s is stale: run python tests/golden/make_golden.py" % OUTPUT)
            return 1
        print("%s is up to date" % OUTPUT)
        return 0
    tmp = OUTPUT + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, OUTPUT)
    print("wrote %s (%d bytes)" % (OUTPUT, len(text)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
