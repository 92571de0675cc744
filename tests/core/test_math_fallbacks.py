"""The formulas the Cpu backend uses for tanh, sinh, cosh, erf and expm1 on a port built without
math's special functions (a BASIC_FEATURES board): within what single-precision floats hold."""
import math

from ember.backends.cpu import scalar as S
from harness.check import assert_true

POINTS = [-30.0, -8.0, -2.5, -1.0, -0.3, -1e-3, -1e-6, 0.0, 1e-7, 1e-5, 2e-4, 0.5, 1.0, 3.0, 7.5, 25.0]


def test_fallbacks_match_math():
    for name, fn in S.FALLBACKS.items():
        ref = getattr(math, name, None)
        if ref is None:  # this port lacks it: the fallback is all there is; check it runs
            assert_true(fn(0.5) == fn(0.5))
            continue
        for x in POINTS:
            want, got = ref(x), fn(x)
            tol = 2e-7 * max(1.0, abs(want)) if name == "erf" else 1e-6 * max(abs(want), 1e-30)
            assert_true(abs(got - want) <= tol, "%s(%r): %r, math gives %r" % (name, x, got, want))


def test_fallbacks_keep_nan_and_saturate():
    nan = float("nan")
    assert_true(S.FALLBACKS["tanh"](nan) != S.FALLBACKS["tanh"](nan) and S.FALLBACKS["erf"](nan) != S.FALLBACKS["erf"](nan))
    assert_true(S.FALLBACKS["tanh"](1000.0) == 1.0 and S.FALLBACKS["tanh"](-1000.0) == -1.0)
    assert_true(S.FALLBACKS["erf"](10.0) == 1.0 and S.FALLBACKS["erf"](-10.0) == -1.0)


def test_special_prefers_math():
    for name in S.FALLBACKS:
        assert_true(S.special(name) is (getattr(math, name, None) or S.FALLBACKS[name]))
