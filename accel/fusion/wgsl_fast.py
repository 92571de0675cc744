"""Float32 fast paths of the WGSL compiler, where the unfused primitive computes in f64.

The primitives compute ``/`` and the transcendental functions of float32 tensors in f64 and round
once (ops.py), which makes a fused float32 chain as fast as the GPU's f64 units allow. Two ops
come up in nearly every fused activation and have float32 forms that keep their guarantee:

- ``x / c`` with ``c`` a constant: ``q0 = x * rc``, two fma steps for the residual against ``c``
  split in two float32 parts, one fma correction. The result is the correctly rounded quotient
  (what the f64 route gives) wherever ``x`` and the quotient are normal with margin; ``divisor``
  checks that by running the float32 steps (emulated exactly in float64) over every significand
  of ``x`` in [1, 2), which covers every exponent in the window. Zero, inf and nan take ``q0``;
  other inputs (subnormal, extreme) take the unfused f64 route, so results are the unfused ones.
  The steps need an ``fma`` that rounds once (``compile_wgsl.fused_fma`` probes the adapter);
  for a power of two ``q0`` alone is the quotient and no fma is needed.
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
    cl = _f32(c - ch)
    rc = _f32(1.0 / c)
    f32, f64 = np.float32, np.float64
    x = (1.0 + np.arange(1 << 23, dtype=f64) * 2.0 ** -23).astype(f32)
    xd = x.astype(f64)
    q0 = (x * f32(rc)).astype(f32)
    q0d = q0.astype(f64)
    r1 = (xd - q0d * ch).astype(f32)  # exact residual, rounded once: fma(-q0, ch, x)
    r2 = (r1.astype(f64) - q0d * cl).astype(f32)  # fma(-q0, cl, r1)
    p = r2.astype(f64) * rc  # exact
    q = _round_sum(np, q0d, p)
    want = _quotient(np, xd, c)
    if want is None or not np.array_equal(q.view(np.uint32), want.view(np.uint32)):
        return None
    # window in biased exponents of x: x and x / c normal with a margin
    lo = max(127 - _WINDOW, 127 - _WINDOW + ec)
    hi = min(127 + _WINDOW, 127 + _WINDOW + ec)
    return rc, ch, cl, lo, hi


def _round_sum(np, a, b):
    """float32(a + b), correctly rounded, for float64 arrays a, b (TwoSum settles f64 ties)."""
    s = a + b
    bb = s - a
    err = (a - (s - bb)) + (b - bb)
    t = s.astype(np.float32)
    # s exactly halfway between two float32 values: the error term decides
    up = np.nextafter(t, np.float32(np.inf))
    down = np.nextafter(t, np.float32(-np.inf))
    mid_up = (t.astype(np.float64) + up.astype(np.float64)) / 2
    mid_down = (t.astype(np.float64) + down.astype(np.float64)) / 2
    t = np.where((s == mid_up) & (err > 0), up, t)
    t = np.where((s == mid_down) & (err < 0), down, t)
    return t


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
  if (e >= %du && e <= %du) { return fma(fma(-q0, %s, fma(-q0, %s, x)), %s, q0); }
  if (e == 255u || (bitcast<u32>(x) << 1u) == 0u) { return q0; }
  return %s;
}
""" % (name, _f(rc), lo, hi, _f(cl), _f(ch), _f(rc), unfused)
