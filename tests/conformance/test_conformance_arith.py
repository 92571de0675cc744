"""Binary arithmetic: + - * / ** // %, maximum, minimum; dtypes, promotion, scalars, broadcasting."""
import conformance_kit as kit
import conformance_rules as rules
from conformance_kit import EXACT, SAME, F, I, B, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF

APPLY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": lambda a, b: a / b,
    "pow": lambda a, b: a ** b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "maximum": lambda a, b: a.maximum(b),
    "minimum": lambda a, b: a.minimum(b),
}
OPS = ("add", "sub", "mul", "div", "pow", "floordiv", "mod", "maximum", "minimum")
DTYPES = ("f32", "f64", "f16", "bf16", "i8", "i32", "i64", "b")
# ops whose float32/float64 result is one correctly rounded operation: compared exactly
# (IEEE leaves the sign of maximum(0.0, -0.0) open, so those two compare zeros of any sign)
EXACT_OPS = ("add", "sub", "mul", "div", "floordiv", "mod")


def tol_for(op, out):
    if out in ("f32", "f64"):
        if op in EXACT_OPS:
            return EXACT
        if op in ("maximum", "minimum"):
            return SAME
    return None


def operands(op, dtype, shape_a, shape_b):
    """Inputs that exercise ``op`` in ``dtype``: zeros among integer divisors, negative exponents..."""
    if dtype == "b":
        return B(shape_a), B(shape_b)
    if rules.is_int(dtype):
        if op in ("floordiv", "mod"):
            return I(shape_a, dtype, -20, 21), I(shape_b, dtype, -5, 6)
        if op == "pow":
            return I(shape_a, dtype, -4, 5), I(shape_b, dtype, -2, 7)
        if dtype == "i8":
            return I(shape_a, dtype, -100, 100), I(shape_b, dtype, -100, 100)
        return I(shape_a, dtype, -20, 21), I(shape_b, dtype, -20, 21)
    if op == "pow":
        return F(shape_a, dtype, 0.25, 3.0), F(shape_b, dtype, -2.0, 2.0)
    return F(shape_a, dtype, -4.0, 4.0), F(shape_b, dtype, -4.0, 4.0)


def binary(name, op, a, b, out, expand=None):
    return case(name, APPLY[op], lambda np, x, y: rules.np_binary(np, op, x, y, out), [a, b], out,
                tol_for(op, out), expand)


def scalar_case(name, op, spec, s, tensor_first):
    dtype = rules.SHORT[spec.dtype]
    out = rules.result(op, rules.with_scalar(dtype, s))
    apply = APPLY[op]
    if tensor_first:
        fn = lambda t: apply(t, s)  # noqa: E731
        ref = lambda np, t: rules.np_binary(np, op, t, s, out)  # noqa: E731
    else:
        fn = lambda t: apply(s, t)  # noqa: E731
        ref = lambda np, t: rules.np_binary(np, op, s, t, out)  # noqa: E731
    return case(name, fn, ref, [spec], out, tol_for(op, out))


def same_dtype_cases():
    specs = []
    for op in OPS:
        for dt in DTYPES:
            a, b = operands(op, dt, (2, 3), (2, 3))
            specs.append(binary("%s.%s.2x3" % (op, dt), op, a, b, rules.result(op, dt)))
    return specs


BROADCASTS = [((3, 1), (1, 4)), ((), (2, 3)), ((2, 3), ()), ((2, 1, 3), (4, 1)), ((2, 3), (3,)),
              ((0, 3), (1, 3)), ((0, 3), (3,)), ((2, 0), (2, 1)), ((1,), (0,)), ((4,), (3, 1)),
              ((1, 1, 1), (2, 1, 2)), ((), ())]


def broadcast_cases():
    specs = []
    for sa, sb in BROADCASTS:
        label = "%s+%s" % (kit.shape_name(sa), kit.shape_name(sb))
        specs.append(binary("add.f32." + label, "add", F(sa), F(sb), "f32", expand="auto"))
    for op in ("sub", "mul", "div", "pow", "floordiv", "mod", "maximum", "minimum"):
        for sa, sb in (((3, 1), (1, 4)), ((), (2, 3)), ((2, 1, 3), (4, 1))):
            label = "%s+%s" % (kit.shape_name(sa), kit.shape_name(sb))
            a, b = operands(op, "f32", sa, sb)
            specs.append(binary("%s.f32.%s" % (op, label), op, a, b, "f32", expand="auto"))
    for op, dt in (("add", "i32"), ("floordiv", "i64"), ("mod", "i32"), ("maximum", "b"), ("add", "b"),
                   ("pow", "i64"), ("div", "i64")):
        a, b = operands(op, dt, (3, 1), (1, 4))
        specs.append(binary("%s.%s.3x1+1x4" % (op, dt), op, a, b, rules.result(op, dt), expand="auto"))
    return specs


# (int scalar, float scalar) per op; -3 and -1.5 make the signs of // and % matter
SCALARS = {"add": (3, 2.5), "sub": (3, 2.5), "mul": (3, -1.5), "div": (3, 2.5), "pow": (2, 0.5),
           "floordiv": (-3, -1.5), "mod": (-3, -1.5), "maximum": (1, 0.5), "minimum": (1, 0.5)}


def scalar_cases():
    specs = []
    for dt in DTYPES:
        for op in OPS:
            for s in SCALARS[op]:
                kind = "int" if type(s) is int else "float"
                if rules.is_int(dt) or dt == "b":
                    spec = I((5,), dt, -6, 7) if dt != "b" else B((5,))
                else:
                    spec = F((5,), dt, -4.0, 4.0)
                specs.append(scalar_case("%s.%s.tensor_%s" % (op, dt, kind), op, spec, s, True))
                if op in ("maximum", "minimum"):
                    continue
                rs = 1.5 if (op == "pow" and kind == "float") else s
                specs.append(scalar_case("%s.%s.%s_tensor" % (op, dt, kind), op, spec, rs, False))
    for dt, op in (("f32", "add"), ("i32", "mul"), ("b", "add"), ("b", "div"), ("b", "maximum"),
                   ("i8", "sub"), ("f16", "mul"), ("b", "floordiv")):
        spec = B((5,)) if dt == "b" else I((5,), dt, -6, 7) if rules.is_int(dt) else F((5,), dt)
        specs.append(scalar_case("%s.%s.tensor_bool" % (op, dt), op, spec, True, True))
        if op not in ("maximum", "minimum"):
            specs.append(scalar_case("%s.%s.bool_tensor" % (op, dt), op, spec, True, False))
    # a scalar never widens within its kind: int8 + 127 wraps in int8 (int8 + 1000 raises: the
    # scalar must fit, test_conformance_bounds), float16 * 1000.5 stays float16
    specs.append(scalar_case("add.i8.tensor_big_int", "add", I((5,), "i8", -6, 7), 127, True))
    specs.append(scalar_case("mul.f16.tensor_big_float", "mul", F((5,), "f16"), 1000.5, True))
    specs.append(scalar_case("add.i32.tensor_big_int", "add", I((5,), "i32", -6, 7), 2 ** 31 - 3, True))
    return specs


PROMOTIONS = [("f16", "bf16"), ("bf16", "f16"), ("i32", "i64"), ("i8", "i32"), ("i32", "f16"),
              ("i64", "f32"), ("b", "i8"), ("b", "f16"), ("f32", "f64"), ("bf16", "f64"),
              ("i64", "bf16"), ("i8", "b"), ("b", "i32"), ("i32", "bf16"), ("f16", "f32")]


def promotion_cases():
    specs = []
    for da, db in PROMOTIONS:
        for op in ("add", "div", "maximum"):
            a, _ = operands(op, da, (2, 3), (2, 3))
            _, b = operands(op, db, (2, 3), (2, 3))
            out = rules.result(op, rules.promote(da, db))
            specs.append(binary("%s.%s+%s.2x3" % (op, da, db), op, a, b, out))
    for da, db in (("i32", "i64"), ("f16", "bf16"), ("b", "i8")):
        for op in ("sub", "mul", "floordiv", "mod", "pow"):
            a, _ = operands(op, da, (2, 3), (2, 3))
            _, b = operands(op, db, (2, 3), (2, 3))
            out = rules.result(op, rules.promote(da, db))
            specs.append(binary("%s.%s+%s.2x3" % (op, da, db), op, a, b, out))
    return specs


SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1.0, -1.0, -2.5, 3.0]


def special_cases():
    """Every pair of special float values, and integer corners (wrap, zero divisors, signs)."""
    xs = [x for x in SPECIAL for _ in SPECIAL]
    ys = [y for _ in SPECIAL for y in SPECIAL]
    specs = []
    for op in OPS:
        for dt in ("f32", "f64"):
            specs.append(binary("%s.%s.specials" % (op, dt), op, V(xs, dt), V(ys, dt), dt))
    for op in ("add", "mul", "div"):
        specs.append(binary("%s.f16.specials" % op, op, V(xs, "f16"), V(ys, "f16"), "f16"))
    f16 = V([65504.0, -65504.0, 60000.0, 0.0001, 6e-08], "f16")
    specs.append(binary("add.f16.overflow", "add", f16, f16, "f16"))
    specs.append(binary("mul.bf16.overflow", "mul", V([65504.0, -65504.0, 3.0e38, 1e-30, 6e-08], "bf16"),
                        V([2.0, 2.0, 10.0, 1e-30, 1e-40], "bf16"), "bf16"))
    specs.append(binary("mul.f32.overflow", "mul", V([3e38, -3e38, 1e-30, 1e-45]), V([10.0, 10.0, 1e-30, 0.5]), "f32"))
    i64 = [2 ** 62, -2 ** 63, 2 ** 63 - 1, 5, -2 ** 63, 3037000500]
    j64 = [2 ** 62, -1, 1, -7, -1, 3037000500]
    for op in ("add", "sub", "mul", "floordiv", "mod"):
        specs.append(binary("%s.i64.wrap" % op, op, V(i64, "i64"), V(j64, "i64"), "i64"))
    i32 = [2 ** 31 - 1, -2 ** 31, 65536, -3, -2 ** 31]
    j32 = [1, -1, 65536, 7, -1]
    for op in ("add", "sub", "mul", "floordiv"):
        specs.append(binary("%s.i32.wrap" % op, op, V(i32, "i32"), V(j32, "i32"), "i32"))
    i8 = [127, -128, 100, -100, -128]
    j8 = [1, -1, 100, -100, -1]
    for op in ("add", "sub", "mul", "floordiv"):
        specs.append(binary("%s.i8.wrap" % op, op, V(i8, "i8"), V(j8, "i8"), "i8"))
    signs_a = [-7, 7, -7, 7, 0, 5, -5, 0, 6]
    signs_b = [2, -2, -2, 2, 3, 0, 0, 0, -3]
    for op in ("floordiv", "mod"):
        for dt in ("i32", "i64"):
            specs.append(binary("%s.%s.signs" % (op, dt), op, V(signs_a, dt), V(signs_b, dt), dt))
        specs.append(binary("%s.f32.signs" % op, op, V([float(v) for v in signs_a]),
                            V([float(v) for v in signs_b]), "f32"))
    base = [2, -2, 1, -1, -1, 0, 3, 7, -3, 0, 5, 0]
    expo = [-1, -3, -5, -5, -4, 3, 20, 12, 21, -1, 0, 0]
    for dt in ("i32", "i64", "i8"):
        specs.append(binary("pow.%s.corners" % dt, "pow", V(base, dt), V(expo, dt), dt))
    specs.append(binary("pow.f32.corners", "pow",
                        V([-2.0, -2.0, -0.0, 0.0, -8.0, 2.0, 10.0, 0.5]),
                        V([3.0, -2.0, -1.0, -2.0, 1.0 / 3.0, 200.0, -50.0, -200.0]), "f32"))
    return specs


SPECS = same_dtype_cases() + broadcast_cases() + scalar_cases() + promotion_cases() + special_cases()
CASES = kit.variants(SPECS)


def test_arith(device, case):
    kit.run(device, case)
