"""WGSL helper functions the kernels share, each emitted only into the shaders that call it.

The float functions work in ``f64`` (wgpu's ``shader-f64`` extension): the GPU's own ``exp``,
``sin``... are single precision with loose error bounds (Vulkan allows 2^-11 absolute for ``sin``),
while ember's reference (the Cpu backend) computes each op in double precision and rounds once.
Evaluating in f64 and rounding the result to the tensor's dtype reproduces that: float32 results
are the correctly rounded value or one ulp off, float64 results are within a few ulp.

Special values follow Python's ``math`` module (and C99 Annex F) the way the Cpu backend's safe
kernels do: ``exp(1000)`` is inf, ``log(-1)`` is nan, ``atan2(±0, -0)`` is ±pi. NaN and infinity
tests read the bits: a driver may fold ``x != x`` away.

``lib(names)`` returns the source of the named functions and of everything they call.
"""
import math
from fractions import Fraction

_FUNCS = {}


def _f(x):
    """An f64 literal that parses back to exactly ``x``."""
    return repr(float(x)) + "lf"


def _define(name, deps, src):
    _FUNCS[name] = (tuple(deps), src)


def _inv_factorials(n):
    return [_f(Fraction(1, math.factorial(k))) for k in range(n + 1)]


def _horner(var, coefs):
    """``c0 + var*(c1 + var*(c2 + ...))`` as nested WGSL."""
    expr = coefs[-1]
    for c in reversed(coefs[:-1]):
        expr = "%s + %s * (%s)" % (c, var, expr)
    return expr


# -- bits ---------------------------------------------------------------------------------------
_define("bits64", [], """
fn inf64() -> f64 { return bitcast<f64>(0x7ff0000000000000lu); }
fn nan64() -> f64 { return bitcast<f64>(0x7ff8000000000000lu); }
fn isnan64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) > 0x7ff0000000000000lu; }
fn isinf64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ffffffffffffffflu) == 0x7ff0000000000000lu; }
fn isfin64(x: f64) -> bool { return (bitcast<u64>(x) & 0x7ff0000000000000lu) != 0x7ff0000000000000lu; }
fn neg64(x: f64) -> bool { return (bitcast<u64>(x) >> 63u) != 0lu; }
fn copysign64(m: f64, s: f64) -> f64 {
  return bitcast<f64>((bitcast<u64>(m) & 0x7ffffffffffffffflu) | (bitcast<u64>(s) & 0x8000000000000000lu));
}
fn ldexp64(x: f64, k: i32) -> f64 { let h = k / 2; return ldexp(ldexp(x, h), k - h); }
fn exponent64(x: f64) -> i32 {
  let b = bitcast<u64>(x);
  let e = i32((b >> 52u) & 0x7fflu);
  if (e == 0) { return i32((bitcast<u64>(x * 18014398509481984.0lf) >> 52u) & 0x7fflu) - 1077; }
  return e - 1023;
}
""")

_define("bits32", [], """
fn isnan32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn isinf32(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
// through a var: a constant NaN or infinity is a WGSL error in browsers (Tint), though naga takes it
fn nan32() -> f32 { var b = 0x7fc00000u; return bitcast<f32>(b); }
fn inf32() -> f32 { var b = 0x7f800000u; return bitcast<f32>(b); }
fn ninf32() -> f32 { var b = 0xff800000u; return bitcast<f32>(b); }
""")

# rounding a float32 value to bfloat16 / float16 (kept in f32 storage), nearest even, as dtypes.py does
_define("rnd_bf16", ["bits32"], """
fn rnd_bf16(x: f32) -> f32 {
  let b = bitcast<u32>(x);
  if (isnan32(x)) { return bitcast<f32>((b & 0xffff0000u) | 0x00400000u); }
  return bitcast<f32>((b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u);
}
""")

_define("rnd_f16", ["bits32"], """
fn rnd_f16(x: f32) -> f32 {
  if (isnan32(x) || isinf32(x)) { return x; }
  let a = abs(x);
  if (a >= 65520.0) { return select(inf32(), ninf32(), x < 0.0); }
  // the f16 spacing at a: 2^(e-10) for normal halves, 2^-24 below 2^-14
  let e = max(i32((bitcast<u32>(a) >> 23u) & 0xffu) - 127, -14);
  let q = ldexp(1.0, e - 10);
  var r = a / q;  // exact: a power of two
  let f = floor(r);
  let d = r - f;
  var n = f;
  if (d > 0.5 || (d == 0.5 && (f - 2.0 * floor(f * 0.5)) == 1.0)) { n = f + 1.0; }
  let y = n * q;
  return select(y, -y, x < 0.0);
}
""")

# -- exponentials and logarithms -------------------------------------------------------------------
_EXP_C = _inv_factorials(13)
_define("m_exp", ["bits64"], """
fn m_exp(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (x > 709.782712893384lf) { return inf64(); }
  if (x < -745.1332191019412lf) { return 0.0lf; }
  let k = round(x * 1.4426950408889634lf);
  let r = (x - k * 0.6931471803691238lf) - k * 1.9082149292705877e-10lf;
  let p = %s;
  return ldexp64(p, i32(k));
}
""" % _horner("r", _EXP_C))

_EXPM1_C = _inv_factorials(18)[1:]
_define("m_expm1", ["m_exp"], """
fn m_expm1(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (x > 709.782712893384lf) { return inf64(); }
  if (x < -40.0lf) { return -1.0lf; }
  if (abs(x) < 0.5lf) { return x * (%s); }
  return m_exp(x) - 1.0lf;
}
""" % _horner("x", _EXPM1_C))

_LOG_C = [_f(Fraction(1, 2 * k + 1)) for k in range(1, 13)]
_define("m_log", ["bits64"], """
fn log_kernel(s: f64) -> f64 {
  // log((1 + s) / (1 - s)) = 2 atanh(s), |s| <= 0.1716
  let z = s * s;
  return 2.0lf * s + 2.0lf * s * (z * (%s));
}
fn m_log(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (x < 0.0lf) { return nan64(); }
  if (x == 0.0lf) { return -inf64(); }
  if (isinf64(x)) { return x; }
  var e = exponent64(x);
  var m = ldexp64(x, -e);
  if (m > 1.4142135623730951lf) { m = m * 0.5lf; e = e + 1; }
  let f = m - 1.0lf;
  let ef = f64(e);
  return ef * 0.6931471803691238lf + (log_kernel(f / (2.0lf + f)) + ef * 1.9082149292705877e-10lf);
}
""" % _horner("z", _LOG_C))

# near 0, log1p is the atanh series of x / (2 + x) itself: no step relies on 1 + x - 1 being x,
# which a shader compiler may simplify away
_define("m_log1p", ["m_log"], """
fn m_log1p(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (x == -1.0lf) { return -inf64(); }
  if (x < -1.0lf) { return nan64(); }
  if (isinf64(x)) { return x; }
  if (x == 0.0lf) { return x; }
  if (x > -0.2928932188134524lf && x < 0.41421356237309515lf) { return log_kernel(x / (2.0lf + x)); }
  return m_log(1.0lf + x);
}
""")

# -- trigonometry ------------------------------------------------------------------------------------
def _two_over_pi_words(n):
    """The first ``n`` 32-bit words of the binary expansion of 2/pi (pi from Machin's formula)."""
    bits = 32 * n + 64

    def arctan_inv(x):
        one = 1 << bits
        total, term, k, sign = 0, one // x, 1, 1
        while term:
            total += sign * (term // k)
            term //= x * x
            k += 2
            sign = -sign
        return total
    pi = 16 * arctan_inv(5) - 4 * arctan_inv(239)  # pi * 2^bits
    v = (2 << (32 * n + bits)) // pi
    return [(v >> (32 * (n - 1 - i))) & 0xFFFFFFFF for i in range(n)]


# Reduction of x to r in [-pi/4, pi/4] and a quadrant, Payne-Hanek for every |x| > pi/4: the
# mantissa times the bits of 2/pi that matter (7 words from the table) in 32-bit limbs.
_SIN_C = [_f(Fraction((-1) ** k, math.factorial(2 * k + 1))) for k in range(10)]
_COS_C = [_f(Fraction((-1) ** k, math.factorial(2 * k))) for k in range(11)]
_TWO_OVER_PI = _two_over_pi_words(40)
_define("m_trig", ["bits64"], """
var<private> TWO_OVER_PI: array<u32, 40> = array<u32, 40>(%s);
fn sin_kernel(r: f64) -> f64 { let z = r * r; return r * (%s); }
fn cos_kernel(r: f64) -> f64 { let z = r * r; return %s; }
fn tpi_word(i: i32) -> u64 { if (i < 0) { return 0lu; } return u64(TWO_OVER_PI[i]); }
// r and the quadrant (mod 4) of |x| > pi/4: x = m 2^(E-52); y = x * 2/pi mod 4 from m times a
// window W of 7 words of 2/pi, y = P 2^-F with F in [191, 222]: the words before the window add
// multiples of 4, the ones after less than 2^-138
fn bits_at(p: ptr<function, array<u64, 10>>, s: i32) -> u64 {
  let k = s / 32;
  let sh = u32(s %% 32);
  if (sh == 0u) { return (*p)[k] | ((*p)[k + 1] << 32u); }
  return ((*p)[k] >> sh) | ((*p)[k + 1] << (32u - sh)) | ((*p)[k + 2] << (64u - sh));
}
fn trig_reduce_big(ax: f64) -> vec2<f64> {
  let b = bitcast<u64>(ax);
  let E = i32((b >> 52u) & 0x7fflu) - 1023;
  let m = (b & 0x000ffffffffffffflu) | 0x0010000000000000lu;
  let i0 = (E - 52 + 191 + 31) / 32 - 7;
  let F = 32 * (i0 + 7) - (E - 52);
  var w: array<u64, 7>;
  for (var j = 0; j < 7; j = j + 1) { w[j] = tpi_word(i0 + 6 - j); }
  let ml = m & 0xfffffffflu;
  let mh = m >> 32u;
  var p: array<u64, 10>;
  for (var j = 0; j < 7; j = j + 1) {
    let lo = ml * w[j];
    let hi = mh * w[j];
    p[j] = p[j] + (lo & 0xfffffffflu);
    p[j + 1] = p[j + 1] + (lo >> 32u) + (hi & 0xfffffffflu);
    p[j + 2] = p[j + 2] + (hi >> 32u);
  }
  for (var j = 0; j < 9; j = j + 1) { p[j + 1] = p[j + 1] + (p[j] >> 32u); p[j] = p[j] & 0xfffffffflu; }
  let top = bits_at(&p, F - 62);  // the quadrant (two bits), then 62 fraction bits
  let next = bits_at(&p, F - 126);  // the 64 fraction bits after those
  var q = f64(top >> 62u);
  var hi = top & 0x3ffffffffffffffflu;
  var lo = next;
  var sign = 1.0lf;
  if (hi >= 0x2000000000000000lu) {
    // a fraction >= 1/2: take 1 - fraction in integers (exact) and step to the next quadrant
    hi = 0x3ffffffffffffffflu - hi + select(0lu, 1lu, lo == 0lu);
    lo = ~lo + 1lu;
    sign = -1.0lf;
    q = q + 1.0lf;
  }
  let f = sign * (f64(hi) * 2.168404344971009e-19lf + f64(lo) * 1.1754943508222875e-38lf);
  return vec2<f64>(f * 1.5707963267948966lf + f * 6.123233995736766e-17lf, q);
}
// (r, quadrant k mod 4) with x = k*pi/2 + r
fn trig_reduce(x: f64) -> vec2<f64> {
  let ax = abs(x);
  // below pi/4 x is r; above, the integer reduction for every x. Float steps (x - k*pi/2 in three
  // exact products, Cody-Waite) were rewritten by NVIDIA's driver: the H200 reduced 123456.789
  // 5e-12 off (run 19, bench/gpu_f64.py), also behind an xor with arrayLength(&b0) >> 30 (run 20);
  // integer steps leave a compiler nothing to reassociate
  if (ax <= 0.7853981633974483lf) { return vec2<f64>(x, 0.0lf); }
  let rq = trig_reduce_big(ax);
  if (x < 0.0lf) { return vec2<f64>(-rq.x, 4.0lf - rq.y); }
  return rq;
}
fn m_sin(x: f64) -> f64 {
  if (!isfin64(x)) { return nan64(); }
  if (abs(x) < 1e-8lf) { return x; }
  let rq = trig_reduce(x);
  let q = i32(rq.y) & 3;
  if (q == 0) { return sin_kernel(rq.x); }
  if (q == 1) { return cos_kernel(rq.x); }
  if (q == 2) { return -sin_kernel(rq.x); }
  return -cos_kernel(rq.x);
}
fn m_cos(x: f64) -> f64 {
  if (!isfin64(x)) { return nan64(); }
  let rq = trig_reduce(x);
  let q = i32(rq.y) & 3;
  if (q == 0) { return cos_kernel(rq.x); }
  if (q == 1) { return -sin_kernel(rq.x); }
  if (q == 2) { return -cos_kernel(rq.x); }
  return sin_kernel(rq.x);
}
fn m_tan(x: f64) -> f64 {
  if (!isfin64(x)) { return nan64(); }
  if (abs(x) < 1e-8lf) { return x; }
  let rq = trig_reduce(x);
  let s = sin_kernel(rq.x);
  let c = cos_kernel(rq.x);
  if ((i32(rq.y) & 1) == 1) { return -c / s; }
  return s / c;
}
""" % (", ".join("%du" % w for w in _TWO_OVER_PI), _horner("z", _SIN_C), _horner("z", _COS_C)))

_ATAN_C = [_f(Fraction((-1) ** k, 2 * k + 1)) for k in range(17)]
_define("m_atan", ["bits64"], """
fn atan_kernel(t: f64) -> f64 { let z = t * t; return t * (%s); }
fn atan_pos(a: f64) -> f64 {
  // a >= 0 (inf included)
  if (a > 1e17lf) { return 1.5707963267948966lf; }
  var t = a;
  let inverted = t > 1.0lf;
  if (inverted) { t = 1.0lf / t; }
  var base = 0.0lf;
  if (t > 0.2679491924311227lf) {
    t = (t * 1.7320508075688772lf - 1.0lf) / (1.7320508075688772lf + t);
    base = 0.5235987755982988lf;
  }
  var r = base + atan_kernel(t);
  if (inverted) { r = (1.5707963267948966lf - r) + 6.123233995736766e-17lf; }
  return r;
}
fn m_atan(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (abs(x) < 1e-9lf) { return x; }
  return copysign64(atan_pos(abs(x)), x);
}
fn m_atan2(y: f64, x: f64) -> f64 {
  if (isnan64(x) || isnan64(y)) { return nan64(); }
  let pi = 3.141592653589793lf;
  if (y == 0.0lf) {
    if (neg64(x)) { return copysign64(pi, y); }
    return y;
  }
  if (x == 0.0lf) { return copysign64(0.5lf * pi, y); }
  if (isinf64(y)) {
    if (isinf64(x)) { return copysign64(select(0.25lf * pi, 0.75lf * pi, x < 0.0lf), y); }
    return copysign64(0.5lf * pi, y);
  }
  if (isinf64(x)) { return copysign64(select(0.0lf, pi, x < 0.0lf), y); }
  var a = atan_pos(abs(y) / abs(x));
  if (x < 0.0lf) { a = (pi - a) + 1.2246467991473532e-16lf; }
  return copysign64(a, y);
}
""" % _horner("z", _ATAN_C))

_define("m_asin", ["m_atan"], """
fn asin_small(s: f64) -> f64 {
  // 0 <= s <= 0.5
  return atan_pos(s / sqrt((1.0lf - s) * (1.0lf + s)));
}
fn m_asin(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  let a = abs(x);
  if (a > 1.0lf) { return nan64(); }
  if (a < 1e-9lf) { return x; }
  if (a <= 0.5lf) { return copysign64(asin_small(a), x); }
  let r = (1.5707963267948966lf - 2.0lf * asin_small(sqrt((1.0lf - a) * 0.5lf))) + 6.123233995736766e-17lf;
  return copysign64(r, x);
}
fn m_acos(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  let a = abs(x);
  if (a > 1.0lf) { return nan64(); }
  if (a <= 0.5lf) { return (1.5707963267948966lf - copysign64(asin_small(a), x)) + 6.123233995736766e-17lf; }
  if (x > 0.0lf) { return 2.0lf * asin_small(sqrt((1.0lf - x) * 0.5lf)); }
  return (3.141592653589793lf - 2.0lf * asin_small(sqrt((1.0lf + x) * 0.5lf))) + 1.2246467991473532e-16lf;
}
""")

# -- hyperbolic ----------------------------------------------------------------------------------------
_SINH_C = [_f(Fraction(1, math.factorial(2 * k + 1))) for k in range(11)]
_define("m_hyper", ["m_expm1"], """
fn m_sinh(x: f64) -> f64 {
  if (isnan64(x) || isinf64(x)) { return x; }
  let a = abs(x);
  var r: f64;
  if (a < 1.0lf) { let z = a * a; r = a * (%s); }
  else if (a < 22.0lf) { let e = m_exp(a); r = 0.5lf * (e - 1.0lf / e); }
  else { let h = m_exp(0.5lf * a); r = (0.5lf * h) * h; }
  return copysign64(r, x);
}
fn m_cosh(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  let a = abs(x);
  if (a < 22.0lf) { let e = m_exp(a); return 0.5lf * (e + 1.0lf / e); }
  let h = m_exp(0.5lf * a);
  return (0.5lf * h) * h;
}
fn m_tanh(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  let a = abs(x);
  if (a < 1e-9lf) { return x; }
  if (a > 22.0lf) { return copysign64(1.0lf, x); }
  let t = m_expm1(2.0lf * a);
  return copysign64(t / (t + 2.0lf), x);
}
""" % _horner("z", _SINH_C))

# erf: for |x| < 2.5 the positive series 2/sqrt(pi) e^{-x^2} x sum_n (2x^2)^n / (1*3*...*(2n+1)) as
# one polynomial in x^2 (no divisions: f64 division is slow on GPUs); above, erfc's continued
# fraction. Both agree with math.erf to a few 1e-16.
def _erf_coefs(n):
    out = []
    for k in range(n):
        den = 1
        for j in range(1, 2 * k + 2, 2):
            den *= j
        out.append(_f(Fraction(2 ** k, den)))
    return out


_define("m_erf", ["m_exp"], """
fn m_erf(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  let a = abs(x);
  if (a >= 6.0lf) { return copysign64(1.0lf, x); }
  if (a < 1e-300lf) { return x; }
  if (a < 2.5lf) {
    let z = a * a;
    let s = a * (%s);
    return copysign64(1.1283791670955126lf * m_exp(-z) * s, x);
  }
  var f = a;
  for (var n = 50; n > 0; n = n - 1) { f = a + (0.5lf * f64(n)) / f; }
  let c = m_exp(-a * a) * 0.5641895835477563lf / f;
  return copysign64(1.0lf - c, x);
}
""" % _horner("z", _erf_coefs(44)))

_define("m_sigmoid", ["m_exp"], """
fn m_sigmoid(x: f64) -> f64 {
  if (isnan64(x)) { return x; }
  if (x >= 0.0lf) { return 1.0lf / (1.0lf + m_exp(-x)); }
  let e = m_exp(x);
  return e / (1.0lf + e);
}
""")

# -- powers, roots, division ---------------------------------------------------------------------------
_define("m_sqrt", ["bits64"], """
fn m_sqrt(x: f64) -> f64 {
  if (x < 0.0lf) { return nan64(); }
  return sqrt(x);
}
fn m_rsqrt(x: f64) -> f64 {
  if (isnan64(x) || x < 0.0lf) { return nan64(); }
  if (x == 0.0lf) { return copysign64(inf64(), x); }
  return 1.0lf / sqrt(x);
}
""")

_define("m_pow", ["m_exp", "m_log"], """
fn is_int64f(b: f64) -> bool { return isfin64(b) && floor(b) == b; }
fn is_odd64f(b: f64) -> bool { return is_int64f(b) && abs(b) < 9007199254740992.0lf && (b - 2.0lf * floor(b * 0.5lf)) == 1.0lf; }
fn m_pow(a: f64, b: f64) -> f64 {
  if (b == 0.0lf || a == 1.0lf) { return 1.0lf; }
  if (isnan64(a) || isnan64(b)) { return nan64(); }
  if (isinf64(b)) {
    let m = abs(a);
    if (m == 1.0lf) { return 1.0lf; }
    if ((m < 1.0lf) == (b > 0.0lf)) { return 0.0lf; }
    return inf64();
  }
  let odd = is_odd64f(b);
  if (a == 0.0lf || isinf64(a)) {
    // |a| is 0 or inf: the result is 0 or inf, negative only for a negative base and an odd exponent
    let big = (a == 0.0lf) == (b < 0.0lf);
    let r = select(0.0lf, inf64(), big);
    if (odd && neg64(a)) { return -r; }
    return r;
  }
  var m = a;
  var sign = 1.0lf;
  if (a < 0.0lf) {
    if (!is_int64f(b)) { return nan64(); }
    m = -a;
    if (odd) { sign = -1.0lf; }
  }
  if (is_int64f(b) && abs(b) <= 64.0lf) {
    var e = u32(abs(b));
    var base = m;
    var r = 1.0lf;
    loop {
      if ((e & 1u) == 1u) { r = r * base; }
      e = e >> 1u;
      if (e == 0u) { break; }
      base = base * base;
    }
    if (b < 0.0lf) {
      if (isinf64(r)) { return sign * 0.0lf; }
      if (r == 0.0lf) { return sign * inf64(); }
      r = 1.0lf / r;
    }
    return sign * r;
  }
  return sign * m_exp(b * m_log(m));
}
""")

# float // and % exactly as CPython computes them (floatobject.c), from an exact fmod
_define("m_fmod", ["bits64"], """
fn m_fmod(a: f64, b: f64) -> f64 {
  if (isnan64(a) || isnan64(b) || isinf64(a) || b == 0.0lf) { return nan64(); }
  if (isinf64(b)) { return a; }
  var r = abs(a);
  let d = abs(b);
  for (var guard = 0; guard < 2200 && r >= d; guard = guard + 1) {
    var t = ldexp64(d, exponent64(r) - exponent64(d));
    if (t > r) { t = t * 0.5lf; }
    r = r - t;
  }
  return copysign64(r, a);
}
fn py_divmod(a: f64, b: f64) -> vec2<f64> {
  var m = m_fmod(a, b);
  var div = (a - m) / b;
  if (!(m == 0.0lf)) {
    if ((b < 0.0lf) != (m < 0.0lf)) { m = m + b; div = div - 1.0lf; }
  } else {
    m = copysign64(0.0lf, b);
  }
  var fd: f64;
  if (!(div == 0.0lf)) {
    fd = floor(div);
    if (div - fd > 0.5lf) { fd = fd + 1.0lf; }
  } else {
    fd = copysign64(0.0lf, a / b);
  }
  return vec2<f64>(fd, m);
}
fn m_floordiv(a: f64, b: f64) -> f64 {
  if (b == 0.0lf) { return a / b; }
  if (isnan64(a) || isnan64(b)) { return nan64(); }
  return py_divmod(a, b).x;
}
fn m_mod(a: f64, b: f64) -> f64 {
  if (b == 0.0lf || isnan64(a) || isnan64(b) || isinf64(a)) { return nan64(); }
  return py_divmod(a, b).y;
}
""")

# float -> integer: truncate toward zero, nan and inf give 0, beyond 64 bits wrap modulo 2^64
_define("f2i64", ["bits64"], """
fn f2i64(x: f64) -> i64 {
  if (!isfin64(x)) { return 0li; }
  var t = trunc(x);
  if (abs(t) >= 9223372036854775808.0lf) {
    t = t - trunc(t / 18446744073709551616.0lf) * 18446744073709551616.0lf;
    if (t >= 9223372036854775808.0lf) { t = t - 18446744073709551616.0lf; }
    if (t < -9223372036854775808.0lf) { t = t + 18446744073709551616.0lf; }
  }
  return i64(t);
}
""")

# -- integers -------------------------------------------------------------------------------------------
# TY is replaced by i32 or i64; BITS by 32 or 64. Python's // and % (floor, sign of the divisor),
# x // 0 == x % 0 == 0, shifts by >= the width give 0 (or -1), powers wrap.
_INT_TEMPLATES = {
    # on magnitudes in unsigned arithmetic: NVIDIA's Vulkan driver was seen (2026-11-29) to get
    # signed / and % wrong for negative operands, and unsigned division is defined everywhere
    "ifloordiv": ([], """
fn ifloordiv_TY(a: TY, b: TY) -> TY {
  if (b == TY(0)) { return TY(0); }
  let ua = select(UT(a), UT(0) - UT(a), a < TY(0));
  let ub = select(UT(b), UT(0) - UT(b), b < TY(0));
  let q = TY(ua / ub);
  if ((a < TY(0)) == (b < TY(0))) { return q; }
  return -q - select(TY(0), TY(1), ua % ub != UT(0));
}
"""),
    "imod": ([], """
fn imod_TY(a: TY, b: TY) -> TY {
  if (b == TY(0)) { return TY(0); }
  let ua = select(UT(a), UT(0) - UT(a), a < TY(0));
  let ub = select(UT(b), UT(0) - UT(b), b < TY(0));
  let r = ua % ub;
  if (r == UT(0)) { return TY(0); }
  let m = TY(select(ub - r, r, (a < TY(0)) == (b < TY(0))));
  return select(m, -m, b < TY(0));
}
"""),
    "ipow": ([], """
fn ipow_TY(a: TY, b: TY) -> TY {
  if (b < TY(0)) {
    if (a == TY(1)) { return TY(1); }
    if (a == TY(-1)) { return select(TY(1), TY(-1), (b & TY(1)) == TY(1)); }
    return TY(0);
  }
  var r = TY(1);
  var base = a;
  var e = b;
  loop {
    if (e == TY(0)) { break; }
    if ((e & TY(1)) == TY(1)) { r = r * base; }
    e = e >> 1u;
    base = base * base;
  }
  return r;
}
"""),
    "ishl": ([], """
fn ishl_TY(a: TY, b: TY, width: TY) -> TY {
  if (b < TY(0) || b >= width) { return TY(0); }
  return a << u32(b);
}
"""),
    "ishr": ([], """
fn ishr_TY(a: TY, b: TY, width: TY) -> TY {
  if (b < TY(0) || b >= width) { return select(TY(0), TY(-1), a < TY(0)); }
  return a >> u32(b);
}
"""),
    "isign": ([], """
fn isign_TY(a: TY) -> TY { return select(select(TY(0), TY(-1), a < TY(0)), TY(1), a > TY(0)); }
"""),
}
for _name, (_deps, _src) in _INT_TEMPLATES.items():
    for _ty in ("i32", "i64"):
        _define("%s_%s" % (_name, _ty), _deps, _src.replace("TY", _ty).replace("UT", "u" + _ty[1:]))

_define("wrap8", [], """
fn wrap8(x: i32) -> i32 { return (x << 24u) >> 24u; }
""")
_define("wrapu8", [], """
fn wrapu8(x: i32) -> i32 { return x & 255; }
""")


# -- small float helpers, for f32 and f64 (FT) ------------------------------------------------------
_FLOAT_TEMPLATES = {
    # sign: nan stays nan, zeros give +0 (the Cpu backend's float((x > 0) - (x < 0)))
    "fsign": ("""
fn fsign_FT(x: FT) -> FT {
  if (isnanFB(x)) { return x; }
  return select(select(FT(0), FT(-1), x < FT(0)), FT(1), x > FT(0));
}
"""),
    # maximum/minimum: nan propagates (the first nan), ties keep the first operand
    "fmax": ("""
fn fmax_FT(a: FT, b: FT) -> FT {
  if (isnanFB(a)) { return a; }
  if (isnanFB(b)) { return b; }
  return select(b, a, a >= b);
}
fn fmin_FT(a: FT, b: FT) -> FT {
  if (isnanFB(a)) { return a; }
  if (isnanFB(b)) { return b; }
  return select(b, a, a <= b);
}
"""),
    # floor/ceil/round/trunc: a zero result takes the input's sign (ceil(-0.3) is -0.0, as IEEE
    # says), set from the bits so a driver that ignores signed zeros cannot lose it
    "zsign": ("""
fn zsign_FT(r: FT, x: FT) -> FT { return select(r, bitcast<FT>(bitcast<UT>(x) & SIGNBIT), r == FT(0)); }
"""),
    # round half to even from floor and the exact fraction x - floor(x): WGSL's round() gave
    # [0, 1, 2, 3] for [0.5, 1.5, 2.5, 3.5] on lavapipe on an AVX2 host (Mesa 22.3.6)
    "rint": ("""
fn rint_FT(x: FT) -> FT {
  let f = floor(x);
  let r = x - f;
  let odd = f - FT(2) * floor(f * FT(0.5)) == FT(1);
  return select(f, f + FT(1), r > FT(0.5) || (r == FT(0.5) && odd));
}
"""),
}
for _name, _src in _FLOAT_TEMPLATES.items():
    _define("%s_f32" % _name, ["bits32"], _src.replace("FT", "f32").replace("FB", "32").replace("UT", "u32")
            .replace("SIGNBIT", "0x80000000u"))
    _define("%s_f64" % _name, ["bits64"], _src.replace("FT", "f64").replace("FB", "64").replace("UT", "u64")
            .replace("SIGNBIT", "0x8000000000000000lu"))


# f64 -> f32 with subnormal results kept: a driver that flushes float32 subnormals (NVIDIA's does)
# would turn f32(1e-40) into 0; the bits of a subnormal result are computed here instead
_define("subnormal_units", ["rint_f64"], """
// a * 2^149 (exact: a power-of-two scale) rounded half to even, in units of the smallest float32
// subnormal (rint, not WGSL's round(): see rint)
fn subnormal_units(a: f64) -> u32 { return u32(rint_f64(a * 7.1362384635297994e+44lf)); }
""")

_define("to_f32", ["subnormal_units"], """
fn to_f32(x: f64) -> f32 {
  let a = abs(x);
  if (a >= 1.1754943508222875e-38lf || a == 0.0lf || isnan64(x)) { return f32(x); }
  let n = subnormal_units(a);
  return bitcast<f32>(n | select(0u, 0x80000000u, neg64(x)));
}
""")

_define("f32bits", ["subnormal_units"], """
fn f32bits_to_f64(b: u32) -> f64 {
  if (((b >> 23u) & 0xffu) == 0u) {  // zero or subnormal: m * 2^-149, exactly
    let m = f64(b & 0x7fffffu) * 1.401298464324817e-45lf;
    return select(m, -m, (b >> 31u) == 1u);
  }
  return f64(bitcast<f32>(b));
}
fn to_f32_bits(x: f64) -> u32 {
  let a = abs(x);
  if (a >= 1.1754943508222875e-38lf || isnan64(x)) { return bitcast<u32>(f32(x)); }
  let n = subnormal_units(a);
  return n | select(0u, 0x80000000u, neg64(x));
}
fn rnd_bf16_bits(b: u32) -> u32 {
  if ((b & 0x7fffffffu) > 0x7f800000u) { return (b & 0xffff0000u) | 0x00400000u; }
  return (b + 0x7fffu + ((b >> 16u) & 1u)) & 0xffff0000u;
}
""")


def lib(names):
    """WGSL source for ``names`` and their dependencies, each once, callees first."""
    out = []
    seen = set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        deps, src = _FUNCS[name]
        for d in deps:
            visit(d)
        out.append(src)

    for n in sorted(names):
        visit(n)
    return "".join(out)
