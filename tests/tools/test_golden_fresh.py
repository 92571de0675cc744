"""The committed golden file equals what make_golden.py computes now, and decodes to numpy's values."""
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = os.path.join(os.path.dirname(HERE), "golden")
if GOLDEN not in sys.path:
    sys.path.insert(0, GOLDEN)

import make_golden  # noqa: E402


def _entries(text):
    return json.loads(text)["cases"]


def _within_an_ulp(a, b):
    """The same data, floats allowed one float64 ulp apart: the reference's float64 functions come
    from the host's libm, whose variants (chosen by CPU features) differ in the last bit (the file
    made on an AVX-512 host, checked on an AVX2 one: 11 cases, each an ulp)."""
    if type(a) is float and type(b) is float:
        return a == b or (a != a and b != b) or abs(a - b) <= math.ulp(max(abs(a), abs(b)))
    if type(a) is list and type(b) is list:
        return len(a) == len(b) and all(_within_an_ulp(x, y) for x, y in zip(a, b))
    if type(a) is dict and type(b) is dict:
        return a.keys() == b.keys() and all(_within_an_ulp(a[k], b[k]) for k in a)
    return a == b and type(a) is type(b)


def test_golden_file_is_fresh():
    fresh = make_golden.render()
    with open(make_golden.OUTPUT) as f:
        committed = f.read()
    if fresh == committed:
        return
    new, old = _entries(fresh), _entries(committed)
    missing = sorted(set(new) - set(old))
    extra = sorted(set(old) - set(new))
    changed = sorted(n for n in set(new) & set(old) if not _within_an_ulp(new[n], old[n]))
    if not (missing or extra or changed):
        return
    raise AssertionError(
        "tests/golden/conformance.json is stale; run `python tests/golden/make_golden.py`.\n"
        "cases missing from the file (%d): %s\ncases no longer defined (%d): %s\n"
        "cases whose data changed (%d): %s"
        % (len(missing), missing[:20], len(extra), extra[:20], len(changed), changed[:20]))


def test_golden_values_decode_to_numpy_values():
    import numpy as np

    import conformance_kit as kit

    cases = make_golden.collect()
    golden = kit.golden_cases()
    for name in sorted(cases):
        case = cases[name]
        if name not in golden:
            continue  # reported by the freshness test
        pairs = kit.reference_inputs(case)
        want = kit.numpy_expected(np, case, pairs)
        got = kit.golden_expected(case, pairs)
        for (ws, wv), (gs, gv) in zip(want, got):
            assert ws == gs, "%s: golden shape %s, numpy %s" % (name, gs, ws)
            for i, (a, b) in enumerate(zip(gv, wv)):
                same = _within_an_ulp(a, b) if type(a) is float else (a == b and type(a) is type(b))
                assert same, "%s: golden value %d decodes to %r, numpy gives %r" % (name, i, a, b)
