"""The generated C's fast float32 approximations (cprelude.fk_expf, fk_erff) against libm, compiled
with the fused kernels' own flags, over float32 inputs spread across their whole range: a strided
sample here (about 2M inputs each), every float32 under ``EMBER_STRESS=full`` (``make stress``).

The measure is the conformance suite's: ``|got - want| / (atol + rtol |want|)`` with float32's
(rtol 1e-6, atol 1e-7), where ``want`` is libm's double result rounded to float32 (the pure Cpu's
value); a worst case above 1 is outside the tolerance.
"""
import os
import struct

import pytest

CHECK = r"""
/* the worst |got - want| / tol over the float32 bit patterns lo, lo + step, ... <= hi, and where */
double fk_worst(int which, uint32_t lo, uint32_t hi, uint32_t step, float *at)
{
    double worst = 0;
    uint64_t u;
    for (u = lo; u <= hi; u += step) {
        union { uint32_t u; float f; } b;
        float got, want;
        double err;
        b.u = (uint32_t)u;
        if (which == 0 && !(b.f >= -104.0f && b.f <= 88.0f))
            continue;  /* exp's fast domain: above 88 the kernels recompute exactly */
        got = which == 0 ? fk_expf(b.f) : fk_erff(b.f);
        want = which == 0 ? (float)exp((double)b.f) : (float)erf((double)b.f);
        if (want != want || got != got) {
            if ((want != want) != (got != got))
                { *at = b.f; return INFINITY; }
            continue;
        }
        err = fabs((double)got - (double)want) / (1e-7 + 1e-6 * fabs((double)want));
        if (err > worst) {
            worst = err;
            *at = b.f;
        }
    }
    return worst;
}
"""
CDEF = "double fk_worst(int which, uint32_t lo, uint32_t hi, uint32_t step, float *at);"
FULL = os.environ.get("EMBER_STRESS") == "full"


@pytest.fixture(scope="module")
def checker():
    from ember.accel.fusion import cache
    from ember.accel.fusion.compile_c import flags
    from ember.accel.fusion.cprelude import PRELUDE
    try:
        return cache.load(PRELUDE + CHECK, flags(), CDEF)
    except cache.BuildError as e:
        pytest.fail("the fused kernels' C compiler is needed here: %s" % (e,))


def _worst(checker, which, step):
    at = checker.ffi.new("float *")
    worst = checker.lib.fk_worst(which, 0, 0xFFFFFFFF, step, at)
    return worst, at[0]


@pytest.mark.parametrize("which,name", [(0, "exp"), (1, "erf")])
def test_fast_approximation_within_tolerance(checker, which, name):
    step = 1 if FULL else 2039  # a prime stride: every exponent, varied significands
    worst, at = _worst(checker, which, step)
    assert worst <= 1.0, "fk_%sf at %r: %.3f of the float32 tolerance" % (name, at, worst)
    assert worst > 0.0  # the approximation differs from libm somewhere: the check saw real inputs


def test_erf_special_values(checker):
    """nan stays nan (so the kernels need no guard for erf), +-inf give +-1, zeros give zero."""
    lib = checker.lib
    at = checker.ffi.new("float *")
    for bits in (0x7FC00000, 0xFFC00000, 0x7F800000, 0xFF800000, 0x00000000, 0x80000000):
        x = struct.unpack("<f", struct.pack("<I", bits))[0]
        assert lib.fk_worst(1, bits, bits, 1, at) == 0.0, x
