"""Float32 fast paths of the WGSL compiler, where the unfused primitive computes in f64.

The primitives compute ``/`` and the transcendental functions of float32 tensors in f64 and round
once (ops.py), which makes a fused float32 chain as fast as the GPU's f64 units allow. Two ops
come up in nearly every fused activation and have float32 forms that keep their guarantee:

- ``x / c`` with ``c`` a constant that is a float32 value (the frontend rounds a scalar to the
  tensor's precision): ``q0 = x * rc`` in float32 (within 2 ulp), the residual ``x - q0 * c``
  exactly in f64 (``q0 * c`` has at most 48 significant bits and lies within a few ulp of ``x``),
  then ``float32(q0 + r * (1 / c))`` in f64. That value is within a few f64 ulp of ``x / c``, and
  ``x / c`` is never that close to a float32 midpoint (an exact tie needs a 25-bit odd significand
  times ``c``'s odd significand to fit in 24 bits, which cannot happen; any other distance is at
  least ~2^-49 of the quotient), so the rounding is the correctly rounded quotient the f64 route
  gives: f64 multiplies and adds instead of an f64 division. An fma contraction of either f64 step
  keeps that argument (it is more accurate). ``divisor`` also checks it by running the steps in
  numpy over every significand of ``x`` in [1, 2), which covers every exponent in the window;
  zero, inf and nan take ``q0``; other inputs (subnormal, extreme) take the unfused f64 route. (An
  earlier float32 form with two fma steps was wrong on the H200 although an fma probe passed.)
  For a power of two ``q0`` alone is the quotient.
- ``erf``: a float32 evaluation (odd polynomial below 1, ``1 - exp2(P(|x|))`` up to 3.92, then 1)
  within 1.3 ulp over the float32 range (checked against double-precision erf on a dense grid),
  inside the conformance tolerance for transcendental functions (rtol 1e-6, atol 1e-7).
"""
import math
import struct

_WINDOW = 100  # |x| and |x / c| within 2^-100 .. 2^100: no subnormal step, no overflow

_ERF_Q = (0.12837916612625122, -0.3761262595653534, 0.11283600330352783, -0.02685444988310337,
          0.005189545452594757, -0.0008020922541618347, 7.889371045166627e-05)
# log2(erfc(t)) on [1, 3.92]: the GPU's own exp2 (a few ulp) then costs at most 0.3 ulp of erf,
# as erfc <= 0.16 there
_ERF_LOG2_ERFC = (0.0004435105947777629, -1.6305149793624878, -0.9116346836090088, -0.15872715413570404,
                  0.03807592764496803, -0.006854222156107426, 0.0008588324999436736, -6.624519301112741e-05,
                  2.3544321265944745e-06)


def _f(x):
    return "bitcast<f32>(0x%08xu)" % struct.unpack("<I", struct.pack("<f", x))[0]


def _horner(coefs, var):
    expr = _f(coefs[-1])
    for c in reversed(coefs[:-1]):
        expr = "fma(%s, %s, %s)" % (expr, var, _f(c))
    return expr


ERF32 = """
fn erf32(x: f32) -> f32 {
  let a = abs(x);
  let small = fma(x, %s, x);
  let big = 1.0 - exp2(%s);
  let far = bitcast<f32>(bitcast<u32>(select(big, 1.0, a >= 3.92)) | (bitcast<u32>(x) & 0x80000000u));
  return select(far, small, a < 1.0);
}
""" % (_horner(_ERF_Q, "x * x"), _horner(_ERF_LOG2_ERFC, "a"))

_DIVISORS = {}


def divisor(c):
    """(rc, ch, cl, lo, hi) for the float32 quotient by ``c`` (a Python float), or None where
    the float32 steps are not correctly rounded for every significand (or numpy is missing)."""
    if c in _DIVISORS:
        return _DIVISORS[c]
    _DIVISORS[c] = out = _divisor(c)
    return out


def _f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def _divisor(c):
    if not (isinstance(c, float) and math.isfinite(c) and c != 0.0):
        return None
    ec = math.frexp(abs(c))[1] - 1
    if abs(ec) > 20:
        return None
    try:
        import numpy as np
    except ImportError:
        return None
    ch = _f32(c)
    if ch != c:
        return None  # not a float32 value: the f64 route
    rc = _f32(1.0 / c)
    rcd = 1.0 / c
    f32, f64 = np.float32, np.float64
    x = (1.0 + np.arange(1 << 23, dtype=f64) * 2.0 ** -23).astype(f32)
    xd = x.astype(f64)
    q0d = (x * f32(rc)).astype(f32).astype(f64)
    r = xd - q0d * c  # exact
    q = (q0d + r * rcd).astype(f32)
    want = _quotient(np, xd, c)
    if want is None or not np.array_equal(q.view(np.uint32), want.view(np.uint32)):
        return None
    cl = 0.0
    # window in biased exponents of x: x and x / c normal with a margin
    lo = max(127 - _WINDOW, 127 - _WINDOW + ec)
    hi = min(127 + _WINDOW, 127 + _WINDOW + ec)
    return rc, ch, cl, lo, hi


def _d(v):
    """An exact WGSL f64 literal."""
    return "bitcast<f64>(0x%016xlu)" % struct.unpack("<Q", struct.pack("<d", v))[0]


def _quotient(np, xd, c):
    """float32(x / c) correctly rounded for every x, or None when a case cannot be settled."""
    d = xd / c
    t = d.astype(np.float32)
    bits = d.view(np.uint64)
    doubtful = (bits & np.uint64((1 << 29) - 1)) == np.uint64(1 << 28)  # d on a float32 midpoint
    if doubtful.any():
        from fractions import Fraction
        idx = np.nonzero(doubtful)[0]
        if len(idx) > 64:
            return None
        for i in idx:
            exact = Fraction(float(xd[i])) / Fraction(c)
            lo = np.float32(float(d[i]))
            cands = [np.nextafter(lo, np.float32(-np.inf)), lo, np.nextafter(lo, np.float32(np.inf))]
            best = min(cands, key=lambda v: (abs(Fraction(float(v)) - exact), int(np.array(v).view(np.uint32)) & 1))
            t[i] = best
    return t


def power_of_two(c):
    """Whether ``c`` is +-2^k: then ``x * (1 / c)`` is the quotient (no fma step)."""
    return isinstance(c, float) and c != 0.0 and math.isfinite(c) and abs(math.frexp(c)[0]) == 0.5


def divc_source(name, c, d, unfused):
    """WGSL ``fn name(x: f32) -> f32``: x / c as described above; ``unfused`` is the f64 route's
    expression on ``x``."""
    rc, ch, cl, lo, hi = d
    if power_of_two(c):  # q0 is the quotient
        return """
fn %s(x: f32) -> f32 {
  let q0 = x * %s;
  let e = (bitcast<u32>(x) >> 23u) & 0xffu;
  if ((e >= %du && e <= %du) || e == 255u || (bitcast<u32>(x) << 1u) == 0u) { return q0; }
  return %s;
}
""" % (name, _f(rc), lo, hi, unfused)
    return """
fn %s(x: f32) -> f32 {
  let q0 = x * %s;
  let e = (bitcast<u32>(x) >> 23u) & 0xffu;
  if (e >= %du && e <= %du) {
    let r = f64(x) - f64(q0) * %s;
    return f32(f64(q0) + r * %s);
  }
  if (e == 255u || (bitcast<u32>(x) << 1u) == 0u) { return q0; }
  return %s;
}
""" % (name, _f(rc), lo, hi, _d(c), _d(1.0 / c), unfused)
