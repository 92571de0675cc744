"""Comparisons (== != < <= > >=, to bool), ember.where, and the logical/bitwise ops & | ^ ~."""
import ember

import conformance_kit as kit
import conformance_rules as rules
from conformance_kit import F, I, B, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF

COMPARE = {
    "eq": (lambda a, b: a == b, lambda np, a, b: np.equal(a, b)),
    "ne": (lambda a, b: a != b, lambda np, a, b: np.not_equal(a, b)),
    "lt": (lambda a, b: a < b, lambda np, a, b: np.less(a, b)),
    "le": (lambda a, b: a <= b, lambda np, a, b: np.less_equal(a, b)),
    "gt": (lambda a, b: a > b, lambda np, a, b: np.greater(a, b)),
    "ge": (lambda a, b: a >= b, lambda np, a, b: np.greater_equal(a, b)),
}
ORDER = ("eq", "ne", "lt", "le", "gt", "ge")



def small(shape, dtype):
    """Values from a small set, so that ties (a == b) happen often."""
    return B(shape) if dtype == "b" else I(shape, dtype, -2, 3)


def compare(name, op, a, b, expand=None):
    fn, ref = COMPARE[op]
    return case(name, fn, ref, [a, b], "b", None, expand)


def compare_scalar(name, op, spec, s, tensor_first):
    fn, ref = COMPARE[op]
    if tensor_first:
        return case(name, lambda t: fn(t, s), lambda np, t: ref(np, t, s), [spec], "b")
    return case(name, lambda t: fn(s, t), lambda np, t: ref(np, s, t), [spec], "b")


SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.0, -2.5]


def compare_cases():
    specs = []
    xs = [x for x in SPECIAL for _ in SPECIAL]
    ys = [y for _ in SPECIAL for y in SPECIAL]
    for op in ORDER:
        for dt in ("f32", "f64", "f16", "bf16", "i8", "i32", "i64", "b"):
            specs.append(compare("%s.%s.2x3" % (op, dt), op, small((2, 3), dt), small((2, 3), dt)))
        specs.append(compare("%s.f32.specials" % op, op, V(xs), V(ys)))
        for da, db in (("i32", "f32"), ("i64", "f16"), ("b", "i32"), ("f16", "bf16")):
            specs.append(compare("%s.%s+%s.2x3" % (op, da, db), op, small((2, 3), da), small((2, 3), db)))
        for sa, sb in (((3, 1), (1, 4)), ((), (2, 3)), ((0, 3), (3,))):
            label = "%s+%s" % (kit.shape_name(sa), kit.shape_name(sb))
            specs.append(compare("%s.f32.%s" % (op, label), op, small(sa, "f32"), small(sb, "f32"), "auto"))
        specs.append(compare_scalar("%s.i32.tensor_int" % op, op, small((5,), "i32"), 1, True))
        specs.append(compare_scalar("%s.i32.tensor_float" % op, op, small((5,), "i32"), 0.5, True))
        specs.append(compare_scalar("%s.f32.tensor_nan" % op, op, small((5,), "f32"), NAN, True))
        if op in ("eq", "ne") or not kit.MICROPYTHON:
            # MicroPython never tries the reflected comparison: there `1 < t` is a TypeError from
            # int.__lt__ that no Tensor method can answer (== and != do fall back to Tensor.__eq__)
            specs.append(compare_scalar("%s.i32.int_tensor" % op, op, small((5,), "i32"), 1, False))
            specs.append(compare_scalar("%s.f32.float_tensor" % op, op, small((5,), "f32"), 0.5, False))
    big = [2 ** 62, 2 ** 62 + 1, -2 ** 63, 2 ** 63 - 1]
    for op in ("eq", "lt"):
        specs.append(compare("%s.i64.big" % op, op, V(big, "i64"), V([2 ** 62 + 1, 2 ** 62 + 1, -2 ** 63, -1], "i64")))
    return specs


class Nth:
    """Stands for the n-th tensor input among where's arguments (anything else is a Python scalar)."""

    def __init__(self, n):
        self.n = n


def _pick(arg, values):
    return values[arg.n] if type(arg) is Nth else arg


def where_case(name, a, b, specs, out, expand=None):
    """``where(cond, a, b)`` with the first input as the condition."""
    def fn(*ts):
        return ember.where(ts[0], _pick(a, ts), _pick(b, ts))

    def ref(np, *arrays):
        return np.where(arrays[0], _pick(a, arrays), _pick(b, arrays))

    return case(name, fn, ref, specs, out, None, expand)


def where_cases():
    specs = []
    for dt in ("f32", "f64", "f16", "bf16", "i8", "i32", "i64", "b"):
        a = B((2, 3)) if dt == "b" else I((2, 3), dt, -9, 10) if rules.is_int(dt) else F((2, 3), dt)
        b = B((2, 3)) if dt == "b" else I((2, 3), dt, -9, 10) if rules.is_int(dt) else F((2, 3), dt)
        specs.append(where_case("where.%s.2x3" % dt, Nth(1), Nth(2), [B((2, 3)), a, b], dt))
    specs.append(where_case("where.f32.3x1+1x4+0d", Nth(1), Nth(2), [B((3, 1)), F((1, 4)), F(())], "f32", "auto"))
    specs.append(where_case("where.f32.1x3+2x1+1", Nth(1), Nth(2), [B((1, 3)), F((2, 1)), F((1,))], "f32", "auto"))
    specs.append(where_case("where.f32.0d", Nth(1), Nth(2), [B(()), F(()), F(())], "f32"))
    specs.append(where_case("where.f32.0x3", Nth(1), Nth(2), [B((0, 3)), F((0, 3)), F((1, 3))], "f32", "auto"))
    specs.append(where_case("where.f32.specials", Nth(1), Nth(2),
                            [V([True, False, True, False], "b"), V([NAN, NAN, INF, -0.0]),
                             V([1.0, -INF, NAN, 0.0])], "f32"))
    specs.append(where_case("where.f32.tensor_float", Nth(1), 0.5, [B((2, 3)), F((2, 3))], "f32"))
    specs.append(where_case("where.f32.float_tensor", -1.5, Nth(1), [B((2, 3)), F((2, 3))], "f32"))
    specs.append(where_case("where.i64.int_int", 1, 2, [B((2, 3))], "i64"))
    specs.append(where_case("where.f32.float_int", 1.5, 2, [B((2, 3))], "f32"))
    specs.append(where_case("where.b.bool_bool", True, False, [B((2, 3))], "b"))
    specs.append(where_case("where.f32.i32_float", Nth(1), 2.5, [B((2, 3)), I((2, 3), "i32")], "f32"))
    specs.append(where_case("where.f16.f16_int", Nth(1), 1, [B((2, 3)), F((2, 3), "f16")], "f16"))
    specs.append(where_case("where.i8.i8_int", Nth(1), 100, [B((2, 3)), I((2, 3), "i8")], "i8"))  # 1000: refused (test_conformance_bounds)
    specs.append(where_case("where.i64.i32+i64", Nth(1), Nth(2),
                            [B((2, 3)), I((2, 3), "i32"), I((2, 3), "i64")], "i64"))
    specs.append(where_case("where.f32.f16+bf16", Nth(1), Nth(2),
                            [B((2, 3)), F((2, 3), "f16"), F((2, 3), "bf16")], "f32"))
    specs.append(where_case("where.f32.b+f32", Nth(1), Nth(2), [B((2, 3)), B((2, 3)), F((2, 3))], "f32"))
    return specs


LOGICAL = {
    "and": (lambda a, b: a & b, "and"),
    "or": (lambda a, b: a | b, "or"),
    "xor": (lambda a, b: a ^ b, "xor"),
}


def logical(name, op, a, b, out):
    fn = LOGICAL[op][0]
    return case(name, fn, lambda np, x, y: rules.np_binary(np, op, x, y, out), [a, b], out)


def logical_cases():
    specs = []
    for op in ("and", "or", "xor"):
        specs.append(logical("%s.b.2x3" % op, op, B((2, 3)), B((2, 3)), "b"))
        specs.append(logical("%s.i32.2x3" % op, op, I((2, 3), "i32", -50, 50), I((2, 3), "i32", -50, 50), "i32"))
        specs.append(logical("%s.i64.2x3" % op, op, I((2, 3), "i64", -2 ** 30, 2 ** 30),
                             I((2, 3), "i64", -99, 99), "i64"))
        specs.append(logical("%s.b+i32.2x3" % op, op, B((2, 3)), I((2, 3), "i32", -9, 9), "i32"))
        specs.append(logical("%s.b.3x1+1x4" % op, op, B((3, 1)), B((1, 4)), "b"))
        fn = LOGICAL[op][0]
        specs.append(case("%s.b.tensor_bool" % op, lambda t: fn(t, True),
                          lambda np, t: rules.np_binary(np, op, t, True, "b"), [B((5,))], "b"))
        specs.append(case("%s.i32.int_tensor" % op, lambda t: fn(6, t),
                          lambda np, t: rules.np_binary(np, op, 6, t, "i32"), [I((5,), "i32", -9, 9)], "i32"))
    specs.append(case("invert.b.2x3", lambda t: ~t, lambda np, t: ~t, [B((2, 3))], "b"))
    specs.append(case("invert.b.0d", lambda t: ~t, lambda np, t: ~t, [B(())], "b"))
    return specs


SPECS = compare_cases() + where_cases() + logical_cases()
CASES = kit.variants(SPECS)


def test_compare(device, case):
    kit.run(device, case)
