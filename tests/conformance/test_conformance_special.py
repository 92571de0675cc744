"""Composed elementwise math (ember/special.py): asinh acosh atanh log2 log10 exp2 logaddexp
logaddexp2 copysign fmod lerp isclose, the shifts by name, and their bad inputs. numpy references
in float64."""
import ember

import conformance_kit as kit
from conformance_kit import EXACT, SAME, F, I, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF
C = "composite"
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1e-30, -1.5, 0.5, 2.5, -0.999, 1e20, -1e20, 1.0, -1.0]


def _f(np, x):
    return np.asarray(x, dtype=np.float64)


UNARY = {
    "asinh": (lambda np, x: np.arcsinh(_f(np, x)), (-6.0, 6.0)),
    "acosh": (lambda np, x: np.arccosh(_f(np, x)), (1.0, 8.0)),
    "atanh": (lambda np, x: np.arctanh(_f(np, x)), (-0.99, 0.99)),
    "log2": (lambda np, x: np.log2(_f(np, x)), (0.01, 50.0)),
    "log10": (lambda np, x: np.log10(_f(np, x)), (0.01, 50.0)),
    "exp2": (lambda np, x: np.exp2(_f(np, x)), (-10.0, 10.0)),
}


def unary_cases():
    specs = []
    for op in sorted(UNARY):
        ref, (lo, hi) = UNARY[op]
        fn = (lambda name: lambda x: getattr(x, name)())(op)
        for dt in FLOAT_DTYPES:
            specs.append(case("%s.%s.2x3" % (op, dt), fn, ref, [F((2, 3), dt, lo, hi)], dt, C))
        specs.append(case("%s.f32.specials" % op, fn, ref, [V(SPECIAL)], "f32", C))
        specs.append(case("%s.f32.0d" % op, fn, ref, [F((), "f32", lo, hi)], "f32", C))
        specs.append(case("%s.i64.2x3" % op, fn, ref, [I((2, 3), "i64", max(int(lo), 1) if op in ("log2", "log10", "acosh") else 0, 4)],
                          "f32", C))
    # the functional form gives the same values
    specs.append(case("ember.asinh.f32.2x3", lambda x: ember.asinh(x), UNARY["asinh"][0], [F((2, 3))], "f32", C))
    # exact powers of two: exp2 is the pow primitive
    specs.append(case("exp2.f32.integers", lambda x: x.exp2(), UNARY["exp2"][0],
                      [V([-3.0, -1.0, 0.0, 1.0, 10.0, 127.0, 128.0, -149.0])], "f32", EXACT))
    return specs


def np_lerp(np, a, b, w):
    a, b, w = _f(np, a), _f(np, b), _f(np, w)
    return np.where(np.abs(w) < 0.5, a + w * (b - a), b - (b - a) * (1 - w))


def binary_cases():
    specs = []
    pairs = [
        ("logaddexp", lambda a, b: a.logaddexp(b), lambda np, a, b: np.logaddexp(_f(np, a), _f(np, b))),
        ("logaddexp2", lambda a, b: a.logaddexp2(b), lambda np, a, b: np.logaddexp2(_f(np, a), _f(np, b))),
        ("copysign", lambda a, b: a.copysign(b), lambda np, a, b: np.copysign(_f(np, a), _f(np, b))),
    ]
    for name, fn, ref in pairs:
        for dt in FLOAT_DTYPES:
            specs.append(case("%s.%s.2x3" % (name, dt), fn, ref, [F((2, 3), dt), F((2, 3), dt)], dt, C))
        specs.append(case("%s.f32.bcast.2x3.3" % name, fn, ref, [F((2, 3)), F((3,))], "f32", C, "auto"))
        specs.append(case("%s.i32.2x3" % name, fn, ref, [I((2, 3), "i32", -3, 4), I((2, 3), "i32", -3, 4)], "f32", C))
    big = [NAN, INF, -INF, 0.0, -0.0, 100.0, -100.0, 88.0, 1.0, INF, -INF]
    other = [1.0, INF, -INF, -0.0, 0.0, 100.0, 90.0, -88.0, 1.0, -INF, INF]
    for name, fn, ref in pairs:
        specs.append(case("%s.f32.specials" % name, fn, ref, [V(big), V(other)], "f32", SAME if name == "copysign" else C))
    specs.append(case("copysign.f32.scalar_neg_zero", lambda a: a.copysign(-0.0), lambda np, a: np.copysign(_f(np, a), -0.0),
                      [F((2, 3))], "f32", EXACT))
    specs.append(case("ember.logaddexp.f64.2x3", lambda a, b: ember.logaddexp(a, b), pairs[0][2],
                      [F((2, 3), "f64"), F((2, 3), "f64")], "f64", C))

    fmod = lambda a, b: a.fmod(b)  # noqa: E731
    fmod_ref = lambda np, a, b: np.fmod(_f(np, a), _f(np, b))  # noqa: E731
    for dt in FLOAT_DTYPES:
        specs.append(case("fmod.%s.2x3" % dt, fmod, fmod_ref, [F((2, 3), dt, -9.0, 9.0), F((2, 3), dt, 0.5, 3.0)], dt, C))
    specs.append(case("fmod.f32.signs", fmod, fmod_ref,
                      [V([-7.0, 7.0, -7.0, 7.0, -0.0, 0.0, -4.0, 5.5, INF, 3.0, NAN, 1.0]),
                       V([2.0, 2.0, -2.0, -2.0, 3.0, -3.0, 2.0, -1.5, 2.0, INF, 1.0, 0.0])], "f32", EXACT))
    specs.append(case("fmod.f32.scalar", lambda a: a.fmod(1.5), lambda np, a: np.fmod(_f(np, a), 1.5), [F((3, 4), "f32", -9.0, 9.0)],
                      "f32", EXACT))
    specs.append(case("fmod.f32.bcast", fmod, fmod_ref, [F((2, 3), "f32", -9.0, 9.0), F((3,), "f32", 0.5, 3.0)], "f32", EXACT, "auto"))
    for dt in ("i8", "i32", "i64"):
        specs.append(case("fmod.%s.2x3" % dt, fmod, lambda np, a, b: np.fmod(a, b),
                          [I((2, 3), dt, -20, 20), V([3, -3, 4, -5, 7, 2], dt, (2, 3))], dt))
    specs.append(case("fmod.i64.scalar", lambda a: a.fmod(-3), lambda np, a: np.fmod(a, -3), [I((2, 4), "i64", -20, 20)], "i64"))

    for dt in FLOAT_DTYPES:
        specs.append(case("lerp.%s.scalar" % dt, lambda a, b: a.lerp(b, 0.3), lambda np, a, b: np_lerp(np, a, b, 0.3),
                          [F((2, 3), dt), F((2, 3), dt)], dt, C))
    specs.append(case("lerp.f32.scalar_high", lambda a, b: a.lerp(b, 0.75), lambda np, a, b: np_lerp(np, a, b, 0.75),
                      [F((2, 3)), F((2, 3))], "f32", C))
    specs.append(case("lerp.f32.ends", lambda a, b: ember.stack([a.lerp(b, 0.0), a.lerp(b, 1.0)]),
                      lambda np, a, b: np.stack([a, b]), [F((2, 3)), F((2, 3))], "f32", EXACT))
    specs.append(case("lerp.f32.tensor_weight.bcast", lambda a, b, w: a.lerp(b, w), np_lerp,
                      [F((2, 3)), F((3,)), F((2, 1), "f32", -0.5, 1.5)], "f32", C, "auto"))
    specs.append(case("ember.lerp.f64", lambda a, b, w: ember.lerp(a, b, w), np_lerp,
                      [F((4,), "f64"), F((4,), "f64"), F((4,), "f64", 0.0, 1.0)], "f64", C))
    return specs


def isclose_cases():
    specs = []
    a = [1.0, 1.0, 1.0, NAN, NAN, INF, INF, -INF, 0.0, 1e-9, 100.0, 1e38]
    b = [1.0, 1.00001, 1.0001, NAN, 1.0, INF, -INF, -INF, 1e-8, 0.0, 100.001, INF]
    ref = lambda np, x, y: np.isclose(x, y)  # noqa: E731
    specs.append(case("isclose.f32.specials", lambda x, y: x.isclose(y), ref, [V(a), V(b)], "b"))
    specs.append(case("isclose.f32.equal_nan", lambda x, y: x.isclose(y, equal_nan=True),
                      lambda np, x, y: np.isclose(x, y, equal_nan=True), [V(a), V(b)], "b"))
    specs.append(case("isclose.f64.tols", lambda x, y: x.isclose(y, rtol=0.1, atol=0.5),
                      lambda np, x, y: np.isclose(x, y, rtol=0.1, atol=0.5), [F((3, 4), "f64"), F((3, 4), "f64")], "b"))
    specs.append(case("isclose.f32.bcast", lambda x, y: x.isclose(y, atol=1.0), lambda np, x, y: np.isclose(x, y, atol=1.0),
                      [F((2, 3)), F((3,))], "b", None, "auto"))
    specs.append(case("isclose.i64.exact", lambda x, y: x.isclose(y, rtol=0, atol=0), lambda np, x, y: x == y,
                      [I((2, 3), "i64", 0, 3), I((2, 3), "i64", 0, 3)], "b"))
    specs.append(case("isclose.i32.atol1", lambda x, y: ember.isclose(x, y, rtol=0.0, atol=1.0),
                      lambda np, x, y: np.abs(x - y) <= 1, [I((2, 3), "i32", 0, 4), I((2, 3), "i32", 0, 4)], "b"))
    specs.append(case("isclose.f32.scalar", lambda x: x.isclose(1.0, atol=0.5), lambda np, x: np.isclose(x, 1.0, atol=0.5),
                      [F((2, 3))], "b"))
    return specs


def shift_cases():
    specs = []
    for dt in ("i8", "i32", "i64"):
        specs.append(case("bitwise_left_shift.%s" % dt, lambda a, b: a.bitwise_left_shift(b), lambda np, a, b: np.left_shift(a, b),
                          [I((2, 3), dt, -5, 6), I((2, 3), dt, 0, 3)], dt))
        specs.append(case("bitwise_right_shift.%s" % dt, lambda a, b: ember.bitwise_right_shift(a, b),
                          lambda np, a, b: np.right_shift(a, b), [I((2, 3), dt, -20, 20), I((2, 3), dt, 0, 4)], dt))
    specs.append(case("bitwise_left_shift.i64.scalar", lambda a: a.bitwise_left_shift(3), lambda np, a: np.left_shift(a, 3),
                      [I((4,), "i64")], "i64"))
    return specs


SPECS = unary_cases() + binary_cases() + isclose_cases() + shift_cases()
CASES = kit.variants(SPECS)


def test_special(device, case):
    kit.run(device, case)
