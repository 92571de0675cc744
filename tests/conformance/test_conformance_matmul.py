"""matmul / @: 1-D, 2-D, batched with broadcasting, k = 0, integer and mixed dtypes."""
import ember

import conformance_kit as kit
from conformance_kit import F, I, B, V, case

PARAMETERS = ("device", "case")


def _np_matmul(np, a, b):
    if a.dtype.kind in "bi" and b.dtype.kind in "bi":
        return np.matmul(a.astype(object), b.astype(object))  # Python ints: wraps like ember after rounding
    return np.matmul(a.astype(np.float64), b.astype(np.float64))


def mm(name, a, b, out, expand=None, via="op"):
    if via == "op":
        fn = lambda x, y: x @ y  # noqa: E731
    elif via == "method":
        fn = lambda x, y: x.matmul(y)  # noqa: E731
    else:
        fn = lambda x, y: ember.matmul(x, y)  # noqa: E731
    tol = "composite" if out != "i32" and out != "i64" else None
    return case(name, fn, _np_matmul, [a, b], out, tol, expand)


SHAPES = [
    ((3,), (3,)),  # 1-D @ 1-D -> 0-d
    ((2, 3), (3, 4)),
    ((3,), (3, 4)),  # 1-D on the left: a row, dropped from the result
    ((2, 3), (3,)),  # 1-D on the right: a column
    ((2, 2, 3), (2, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),  # batch dims broadcast: (2, 1) with (3,)
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((1, 2, 3), (2, 3, 2)),
    ((2, 0), (0, 3)),  # k = 0: zeros
    ((0, 3), (3, 2)),  # m = 0
    ((2, 3), (3, 0)),  # n = 0
    ((0,), (0,)),
    ((1, 1), (1, 1)),
]


def expand_targets(sa, sb):
    """Expanded variant: grow the size-1 batch dims to the broadcast batch shape."""
    if len(sa) < 3 and len(sb) < 3:
        return None
    ba, bb = sa[:-2] if len(sa) >= 2 else (), sb[:-2] if len(sb) >= 2 else ()
    batch = kit.broadcast(ba, bb)
    ta = batch + sa[-2:] if len(sa) >= 2 else None
    tb = batch + sb[-2:] if len(sb) >= 2 else None
    return [ta, tb]


def cases():
    specs = []
    for sa, sb in SHAPES:
        label = "%s@%s" % (kit.shape_name(sa), kit.shape_name(sb))
        specs.append(mm("matmul.f32." + label, F(sa), F(sb), "f32", expand_targets(sa, sb)))
    for dt in ("f64", "f16", "bf16"):
        specs.append(mm("matmul.%s.2x3@3x4" % dt, F((2, 3), dt), F((3, 4), dt), dt))
    for dt in ("i32", "i64", "i8"):
        specs.append(mm("matmul.%s.2x3@3x4" % dt, I((2, 3), dt, -9, 10), I((3, 4), dt, -9, 10), dt))
    specs.append(mm("matmul.i32.wrap", V([2 ** 30, 2 ** 30, 3, 4], "i32", (2, 2)),
                    V([2, 2, 5, 6], "i32", (2, 2)), "i32"))
    specs.append(mm("matmul.i8.wrap", V([100, 100, -100, 27], "i8", (2, 2)),
                    V([2, 1, 1, 3], "i8", (2, 2)), "i8"))
    for da, db, out in (("i32", "f32", "f32"), ("f32", "f64", "f64"), ("f16", "bf16", "f32"),
                        ("i64", "i32", "i64"), ("b", "f32", "f32")):
        a = B((2, 3)) if da == "b" else I((2, 3), da, 0, 2) if da in ("i32", "i64") else F((2, 3), da)
        b = I((3, 2), db, -5, 6) if db in ("i32", "i64") else F((3, 2), db)
        specs.append(mm("matmul.%s@%s.2x3@3x2" % (da, db), a, b, out))
    specs.append(mm("matmul.f32.method", F((2, 3)), F((3, 2)), "f32", via="method"))
    specs.append(mm("matmul.f32.function", F((2, 2, 3)), F((3, 2)), "f32", via="function"))
    specs.append(mm("matmul.f32.specials", V([kit.NAN, 1.0, kit.INF, 0.0], "f32", (2, 2)),
                    V([1.0, 2.0, 0.0, 3.0], "f32", (2, 2)), "f32"))
    return specs


SPECS = cases()
CASES = kit.variants(SPECS)


def test_matmul(device, case):
    kit.run(device, case)
