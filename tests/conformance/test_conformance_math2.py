"""More math: log1p expm1 rsqrt tan sinh cosh asin acos atan atan2, rounding (floor ceil round
trunc), sign, reciprocal, clamp, isfinite, logical_and/or/not/xor, bitwise and/or/xor/not, << >>."""
import ember

import conformance_kit as kit
from conformance_kit import EXACT, SAME, F, I, B, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF
SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1e-30, -1.5, 0.5, 2.5, -2.5, 100.0, -0.75]


def _f(np, x):
    return np.asarray(x, dtype=np.float64)


def _rsqrt(np, x):
    x = _f(np, x)
    return 1.0 / np.sqrt(x)


FLOAT_REFS = {
    "log1p": (lambda np, x: np.log1p(_f(np, x)), (-0.9, 4.0)),
    "expm1": (lambda np, x: np.expm1(_f(np, x)), (-5.0, 5.0)),
    "rsqrt": (_rsqrt, (0.05, 9.0)),
    "tan": (lambda np, x: np.tan(_f(np, x)), (-1.4, 1.4)),
    "sinh": (lambda np, x: np.sinh(_f(np, x)), (-4.0, 4.0)),
    "cosh": (lambda np, x: np.cosh(_f(np, x)), (-4.0, 4.0)),
    "asin": (lambda np, x: np.arcsin(_f(np, x)), (-1.0, 1.0)),
    "acos": (lambda np, x: np.arccos(_f(np, x)), (-1.0, 1.0)),
    "atan": (lambda np, x: np.arctan(_f(np, x)), (-6.0, 6.0)),
    "reciprocal": (lambda np, x: 1.0 / _f(np, x), (-4.0, 4.0)),
}
ROUND_REFS = {
    "floor": lambda np, x: np.floor(x),
    "ceil": lambda np, x: np.ceil(x),
    "round": lambda np, x: np.round(x),  # half to even, as torch.round
    "trunc": lambda np, x: np.trunc(x),
}


def unary(name, op, ref, spec, out, tol=None):
    return case(name, lambda x: getattr(x, op)(), ref, [spec], out, tol)


def float_unary_cases():
    specs = []
    for op in sorted(FLOAT_REFS):
        ref, (lo, hi) = FLOAT_REFS[op]
        for dt in ("f32", "f64", "f16", "bf16"):
            tol = EXACT if op == "reciprocal" and dt in ("f32", "f64") else None
            specs.append(unary("%s.%s.2x3" % (op, dt), op, ref, F((2, 3), dt, lo, hi), dt, tol))
        specs.append(unary("%s.f32.0d" % op, op, ref, F((), "f32", lo, hi), "f32"))
        specs.append(unary("%s.f32.specials" % op, op, ref, V(SPECIAL), "f32"))
        ilo = 1 if op == "rsqrt" else (0 if op == "log1p" else -1 if op in ("asin", "acos") else -3)
        ihi = 2 if op in ("asin", "acos") else 4
        specs.append(unary("%s.i32.2x3" % op, op, ref, I((2, 3), "i32", ilo, ihi), "f32"))
    return specs


def rounding_cases():
    specs = []
    halves = V([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997, -0.0, NAN, INF, -INF, 1e20])
    for op in sorted(ROUND_REFS):
        ref = ROUND_REFS[op]
        for dt in ("f32", "f64", "f16", "bf16"):
            specs.append(unary("%s.%s.2x3" % (op, dt), op, ref, F((2, 3), dt, -4.0, 4.0), dt,
                               SAME if dt in ("f32", "f64") else None))
        # IEEE (and torch): ceil(-0.3), trunc(-0.3), round(-0.3) are -0.0
        specs.append(unary("%s.f32.signed_zero" % op, op, ref, V([-0.3, -0.7, 0.3, -0.0, 0.0, -0.5]), "f32", EXACT))
        specs.append(unary("%s.f32.halves" % op, op, ref, halves, "f32", SAME))
        specs.append(unary("%s.f32.3x2x2" % op, op, ref, F((3, 2, 2), "f32", -10.0, 10.0), "f32", SAME))
        for dt in ("i32", "i64", "i8"):
            specs.append(unary("%s.%s.2x3" % (op, dt), op, lambda np, x: x, I((2, 3), dt), dt))
    sign = lambda np, x: np.sign(x)  # noqa: E731
    for dt in ("f32", "f64", "f16", "bf16"):
        specs.append(unary("sign.%s.2x3" % dt, "sign", sign, F((2, 3), dt), dt, SAME))
    specs.append(unary("sign.f32.specials", "sign", sign, V([NAN, INF, -INF, 0.0, -0.0, 1e-30, -3.0]), "f32", SAME))
    for dt in ("i32", "i64", "i8"):
        specs.append(unary("sign.%s.2x3" % dt, "sign", sign, I((2, 3), dt), dt))
    return specs


def atan2_cases():
    ref = lambda np, y, x: np.arctan2(_f(np, y), _f(np, x))  # noqa: E731
    fn = lambda y, x: y.atan2(x)  # noqa: E731
    specs = []
    for dt in ("f32", "f64", "f16"):
        specs.append(case("atan2.%s.2x3" % dt, fn, ref, [F((2, 3), dt), F((2, 3), dt)], dt))
    specs.append(case("atan2.f32.bcast.2x3.3", fn, ref, [F((2, 3)), F((3,))], "f32", None, "auto"))
    specs.append(case("atan2.f32.specials", fn, ref,
                      [V([0.0, -0.0, 0.0, -0.0, 1.0, -1.0, INF, -INF, NAN, 1.0]),
                       V([0.0, 0.0, -0.0, -0.0, 0.0, -0.0, INF, 1.0, 1.0, -INF])], "f32", SAME))
    specs.append(case("atan2.i32.2x3", fn, ref, [I((2, 3), "i32", -3, 4), I((2, 3), "i32", -3, 4)], "f32"))
    return specs


def clamp_cases():
    specs = []
    specs.append(case("clamp.f32.2x3.both", lambda x: x.clamp(-1.0, 1.5),
                      lambda np, x: np.clip(x, -1.0, 1.5), [F((2, 3))], "f32", EXACT))
    specs.append(case("clamp.f32.2x3.min", lambda x: x.clamp(min=0.25),
                      lambda np, x: np.maximum(x, 0.25), [F((2, 3))], "f32", EXACT))
    specs.append(case("clamp.f32.2x3.max", lambda x: x.clamp(max=-0.5),
                      lambda np, x: np.minimum(x, -0.5), [F((2, 3))], "f32", EXACT))
    specs.append(case("clamp.f32.2x3.tensors", lambda x, lo, hi: x.clamp(lo, hi),
                      lambda np, x, lo, hi: np.minimum(np.maximum(x, lo), hi),
                      [F((2, 3)), F((3,), "f32", -3.0, 0.0), F((2, 1), "f32", 0.0, 3.0)], "f32", EXACT))
    specs.append(case("clamp.f32.fn", lambda x: ember.clamp(x, -2.0, 2.0),
                      lambda np, x: np.clip(x, -2.0, 2.0), [F((2, 3))], "f32", EXACT))
    specs.append(case("clip.f64.2x3", lambda x: x.clip(-1, 1),
                      lambda np, x: np.clip(x, -1.0, 1.0), [F((2, 3), "f64")], "f64", EXACT))
    specs.append(case("clamp.i32.2x3", lambda x: x.clamp(-3, 4), lambda np, x: np.clip(x, -3, 4),
                      [I((2, 3), "i32")], "i32"))
    specs.append(case("clamp.i32.2x3.float_bound", lambda x: x.clamp(-2.5, 2.5),
                      lambda np, x: np.clip(x, -2.5, 2.5), [I((2, 3), "i32")], "f32", EXACT))
    specs.append(case("clamp.f16.2x3", lambda x: x.clamp(-1.0, 1.0), lambda np, x: np.clip(x, -1.0, 1.0),
                      [F((2, 3), "f16")], "f16"))
    specs.append(case("clamp.f32.specials", lambda x: x.clamp(-1.0, 1.0),
                      lambda np, x: np.clip(x, -1.0, 1.0), [V([NAN, INF, -INF, 0.5, -3.0])], "f32", SAME))
    return specs


def predicate_cases():
    specs = []
    fin = lambda np, x: np.isfinite(x)  # noqa: E731
    specs.append(case("isfinite.f32.specials", lambda x: x.isfinite(), fin, [V(SPECIAL)], "b"))
    specs.append(case("isfinite.f16.specials", lambda x: x.isfinite(), fin, [V(SPECIAL, "f16")], "b"))
    specs.append(case("isfinite.f32.2x3", lambda x: ember.isfinite(x), fin, [F((2, 3))], "b"))
    specs.append(case("isfinite.i32.2x3", lambda x: x.isfinite(), fin, [I((2, 3), "i32")], "b"))
    return specs


LOGICAL = {
    "and": lambda np, a, b: np.logical_and(a != 0, b != 0),
    "or": lambda np, a, b: np.logical_or(a != 0, b != 0),
    "xor": lambda np, a, b: np.logical_xor(a != 0, b != 0),
}


def logical_cases():
    specs = []
    for op in ("and", "or", "xor"):
        fn = lambda a, b, o=op: getattr(a, "logical_" + o)(b)  # noqa: E731
        ref = LOGICAL[op]
        specs.append(case("logical_%s.b.2x3" % op, fn, ref, [B((2, 3)), B((2, 3))], "b"))
        specs.append(case("logical_%s.i32.f32.2x3" % op, fn, ref,
                          [I((2, 3), "i32", -1, 2), V([0.0, NAN, -0.0, 1.5, 0.0, 2.0], "f32", (2, 3))], "b"))
        specs.append(case("logical_%s.b.bcast.2x3.3" % op, fn, ref, [B((2, 3)), B((3,))], "b", None, "auto"))
    specs.append(case("logical_not.b.2x3", lambda a: a.logical_not(), lambda np, a: np.logical_not(a),
                      [B((2, 3))], "b"))
    specs.append(case("logical_not.f32.specials", lambda a: a.logical_not(), lambda np, a: a == 0,
                      [V([0.0, -0.0, NAN, 1.0, -INF])], "b"))
    specs.append(case("logical_not.i64.2x3", lambda a: a.logical_not(), lambda np, a: a == 0,
                      [I((2, 3), "i64", -1, 2)], "b"))
    return specs


BITWISE = {
    "and": (lambda a, b: a & b, lambda a, b: a.bitwise_and(b), lambda np, a, b: np.bitwise_and(a, b)),
    "or": (lambda a, b: a | b, lambda a, b: a.bitwise_or(b), lambda np, a, b: np.bitwise_or(a, b)),
    "xor": (lambda a, b: a ^ b, lambda a, b: a.bitwise_xor(b), lambda np, a, b: np.bitwise_xor(a, b)),
}


def bitwise_cases():
    specs = []
    for op in ("and", "or", "xor"):
        infix, method, ref = BITWISE[op]
        for dt, lo, hi in (("i8", -128, 128), ("i32", -1000, 1000), ("i64", -(2 ** 40), 2 ** 40)):
            specs.append(case("bitwise_%s.%s.2x3" % (op, dt), infix, ref, [I((2, 3), dt, lo, hi), I((2, 3), dt, lo, hi)], dt))
        specs.append(case("bitwise_%s.i32.method" % op, method, ref,
                          [I((2, 3), "i32", -50, 50), I((2, 3), "i32", -50, 50)], "i32"))
        specs.append(case("bitwise_%s.b.2x3" % op, infix, ref, [B((2, 3)), B((2, 3))], "b"))
        specs.append(case("bitwise_%s.i8.i64.2x3" % op, infix, ref, [I((2, 3), "i8", -9, 9), I((2, 3), "i64", -99, 99)], "i64"))
        specs.append(case("bitwise_%s.i32.bcast.3" % op, infix, ref, [I((2, 3), "i32", -50, 50), I((3,), "i32", -50, 50)],
                          "i32", None, "auto"))
        specs.append(case("bitwise_%s.i32.scalar" % op, lambda a, f=infix: f(a, 6), lambda np, a, r=ref: r(np, a, 6),
                          [I((2, 3), "i32", -50, 50)], "i32"))
        specs.append(case("bitwise_%s.i32.rscalar" % op, lambda a, f=infix: f(6, a), lambda np, a, r=ref: r(np, 6, a),
                          [I((2, 3), "i32", -50, 50)], "i32"))
    for dt, lo, hi in (("i8", -128, 128), ("i32", -1000, 1000), ("i64", -(2 ** 40), 2 ** 40)):
        specs.append(case("bitwise_not.%s.2x3" % dt, lambda a: ~a, lambda np, a: np.invert(a), [I((2, 3), dt, lo, hi)], dt))
    specs.append(case("bitwise_not.i32.method", lambda a: a.bitwise_not(), lambda np, a: np.invert(a),
                      [I((2, 3), "i32")], "i32"))
    specs.append(case("bitwise_not.b.2x3", lambda a: ~a, lambda np, a: np.logical_not(a), [B((2, 3))], "b"))
    return specs


def _np_shift(np, a, b, left, dtype):
    bits = {"i8": 8, "i32": 32, "i64": 64}[dtype]
    a = np.asarray(a, dtype=np.int64)
    b = np.broadcast_to(np.asarray(b, dtype=np.int64), np.broadcast(a, b).shape)
    a = np.broadcast_to(a, b.shape)
    out = []
    for x, s in zip(a.reshape(-1).tolist(), b.reshape(-1).tolist()):
        v = (x << s) if left else (x >> s)
        v &= (1 << bits) - 1
        out.append(v - (1 << bits) if v >= 1 << (bits - 1) else v)
    return np.array(out, dtype=np.int64).reshape(b.shape)


def shift_cases():
    specs = []
    for left, sym in ((True, "lshift"), (False, "rshift")):
        fn = (lambda a, b: a << b) if left else (lambda a, b: a >> b)
        for dt, hi in (("i8", 8), ("i32", 32), ("i64", 64)):
            ref = lambda np, a, b, l=left, d=dt: _np_shift(np, a, b, l, d)  # noqa: E731
            specs.append(case("%s.%s.2x3" % (sym, dt), fn, ref, [I((2, 3), dt, -100, 100), I((2, 3), dt, 0, hi)], dt))
        ref = lambda np, a, l=left: _np_shift(np, a, 3, l, "i32")  # noqa: E731
        specs.append(case("%s.i32.scalar" % sym, lambda a, f=fn: f(a, 3), ref, [I((2, 3), "i32", -100, 100)], "i32"))
        ref = lambda np, a, l=left: _np_shift(np, 100, a, l, "i32")  # noqa: E731
        specs.append(case("%s.i32.rscalar" % sym, lambda a, f=fn: f(100, a), ref, [I((2, 3), "i32", 0, 8)], "i32"))
        ref = lambda np, a, b, l=left: _np_shift(np, a, b, l, "i32")  # noqa: E731
        specs.append(case("%s.i32.bcast.3" % sym, fn, ref, [I((2, 3), "i32", -100, 100), I((3,), "i32", 0, 5)],
                          "i32", None, "auto"))
    return specs


SPECS = (float_unary_cases() + rounding_cases() + atan2_cases() + clamp_cases() + predicate_cases()
         + logical_cases() + bitwise_cases() + shift_cases())
CASES = kit.variants(SPECS)


def test_math2(device, case):
    kit.run(device, case)
