"""to(dtype) between every pair of dtypes, with the values where casts differ: nan, inf, -0.0,
fractions, out-of-range numbers, float16/bfloat16 rounding. ember's rules (docs/architecture.md):
float -> int truncates toward zero, nan and inf give 0, the result wraps; float -> bool is != 0."""
import ember

import conformance_kit as kit
import conformance_rules as rules
from conformance_kit import EXACT, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF

SOURCE = {
    "f32": [NAN, INF, -INF, 0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 1e10, -3e9, 65520.0, 70000.0, 3.4e38,
            1e-40, 0.1, 300.0, -129.0, 255.9, 1.00390625, 2 ** 24 + 2.0],
    "f64": [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.7, 1e300, -1e300, 1e-320, 0.1, 1 + 2 ** -30, 3.0e9,
            -2 ** 63 - 4096.0, 65519.0, 1e-8],
    "f16": [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 65504.0, -65504.0, 6e-08, 0.099976, 1000.5, -129.0],
    "bf16": [NAN, INF, -INF, 0.0, -0.0, 1.5, -2.5, 3.0e38, 1e-39, 0.1, 70000.0, -129.0, 1.0078125],
    "i8": [0, 1, -1, 127, -128, 100, -100],
    "i32": [0, 1, -1, 127, 128, -129, 2 ** 31 - 1, -2 ** 31, 65504, 70000, 16777217, 255],
    "i64": [0, 1, -1, 128, -129, 2 ** 31, -2 ** 31 - 1, 2 ** 53 + 1, 2 ** 63 - 1, -2 ** 63, 65536 + 32,
            16777217, 2 ** 40 + 1],
    "b": [True, False, True],
}
ORDER = ("f32", "f64", "f16", "bf16", "i8", "i32", "i64", "b")


def _np_cast(np, x, target):
    """ember's cast of numpy values (float64/int64/bool) to ``target``, before rounding/wrapping."""
    if x.dtype == bool or target == "b":
        return x != 0 if target == "b" else x.astype(np.int64 if rules.is_int(target) else np.float64)
    if rules.is_int(target):
        if x.dtype.kind == "f":
            ok = np.isfinite(x)
            ints = [rules.wrap64(int(v)) if f else 0 for v, f in zip(x.tolist(), ok.tolist())]
            return np.array(ints, dtype=np.int64).reshape(x.shape)
        return x
    return x.astype(np.float64)


def cast(name, src, target, via):
    spec = V(SOURCE[src], src)
    target_dtype = getattr(ember, rules.LONG[target])
    if via == "dtype":
        fn = lambda t: t.to(target_dtype)  # noqa: E731
    elif via == "name":
        fn = lambda t: t.to(rules.LONG[target])  # noqa: E731
    else:
        fn = lambda t: getattr(t, via)()  # noqa: E731
    return case(name, fn, lambda np, x: _np_cast(np, x, target), [spec], target,
                EXACT if rules.is_float(target) else None)


def cases():
    specs = []
    for src in ORDER:
        for target in ORDER:
            specs.append(cast("to.%s.%s" % (src, target), src, target, "dtype"))
    for via, target in (("float", "f32"), ("double", "f64"), ("half", "f16"), ("int", "i32"),
                        ("long", "i64"), ("bool", "b")):
        specs.append(cast("%s.f32" % via, "f32", target, via))
    specs.append(cast("to_name.i32.f16", "i32", "f16", "name"))
    specs.append(case("to.f32.i32.2x3", lambda t: t.to(ember.int32), lambda np, x: np.trunc(x),
                      [kit.F((2, 3), "f32", -50.0, 50.0)], "i32"))
    specs.append(case("to.i64.f16.2x3", lambda t: t.to(ember.float16), lambda np, x: x,
                      [kit.I((2, 3), "i64", -3000, 3000)], "f16", EXACT))
    specs.append(case("to.f32.bf16.2x3", lambda t: t.to(ember.bfloat16), lambda np, x: x,
                      [kit.F((2, 3))], "bf16", EXACT))
    specs.append(case("to.f32.f16.0d", lambda t: t.to(ember.float16), lambda np, x: x,
                      [kit.F(())], "f16", EXACT))
    return specs


SPECS = cases()
CASES = kit.variants(SPECS)


def test_cast(device, case):
    kit.run(device, case)
