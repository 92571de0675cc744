"""Reductions: sum mean prod max min argmax argmin any all, over None / an int / a tuple of dims."""
import conformance_kit as kit
from conformance_kit import F, I, B, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF
SUM_TOL = (1e-5, 1e-5)  # partial sums are rounded to float32 between dims


def _axis(x, dim):
    if x.ndim == 0:
        return None  # ember reduces a 0-d tensor over dim 0 or -1 to itself
    return tuple(dim) if type(dim) is list else dim


def _np_values(np, op, x, dim, keepdim):
    if op in ("sum", "prod") and x.dtype.kind in "bi":
        x = x.astype(np.int64)  # ints and bools accumulate in int64
    if op == "mean":
        x = x.astype(np.float64)
    return getattr(np, op)(x, axis=_axis(x, dim), keepdims=keepdim)


def out_dtype(op, dt):
    if op in ("argmax", "argmin"):
        return "i64"
    if op in ("any", "all"):
        return "b"
    if op in ("sum", "prod") and dt in ("b", "i8", "i32", "i64"):
        return "i64"
    if op == "mean" and dt in ("b", "i8", "i32", "i64"):
        return "f32"
    return dt


def tol_for(op, out):
    if out == "f32" and op in ("sum", "mean"):
        return SUM_TOL
    if op in ("sum", "mean", "prod"):
        return "composite"
    return None


def dim_name(dim, keepdim):
    if dim is None:
        text = "all"
    elif type(dim) is list:
        text = "d" + "_".join(str(d) for d in dim)
    else:
        text = "d%d" % dim
    return text + (".keep" if keepdim else "")


def call(op, x, dim, keepdim):
    method = getattr(x, op)
    if dim is None and not keepdim:
        return method()
    if dim is None:
        return method(keepdim=True)
    arg = tuple(dim) if type(dim) is list else dim
    return method(arg, keepdim=keepdim) if keepdim else method(arg)


def reduction(op, spec, dim, keepdim, label=None):
    dt = [k for k, v in kit.DTYPES.items() if v == spec.dtype][0]
    out = out_dtype(op, dt)
    name = "%s.%s.%s.%s" % (op, dt, label or kit.shape_name(spec.shape), dim_name(dim, keepdim))
    with_indices = op in ("max", "min") and dim is not None
    if with_indices:
        def fn(x):
            r = call(op, x, dim, keepdim)
            return r.values, r.indices

        def ref(np, x):
            return (_np_values(np, op, x, dim, keepdim), _np_values(np, "arg" + op, x, dim, keepdim))

        return case(name, fn, ref, [spec], (out, "i64"), tol_for(op, out))
    return case(name, lambda x: call(op, x, dim, keepdim),
                lambda np, x: _np_values(np, op, x, dim, keepdim), [spec], out, tol_for(op, out))


OPS = ("sum", "mean", "prod", "max", "min", "argmax", "argmin", "any", "all")
INDEXED = ("max", "min", "argmax", "argmin")


def dims_for(op):
    """(dim, keepdim) pairs for a (2, 3, 4) input; max/min/arg* take one int dim."""
    if op in INDEXED:
        return [(None, False), (0, False), (-1, False), (1, True), (None, True) if op[:3] == "arg" else (-2, True)]
    return [(None, False), (0, False), (-1, False), ([0, 2], False), (1, True), ([-1, -3], True), (None, True)]


def value_spec(op, shape, dt):
    if dt == "b":
        return B(shape)
    if dt in ("i8", "i32", "i64"):
        return I(shape, dt, -3, 4) if op in ("prod", "any", "all") else I(shape, dt, -9, 10)
    if op == "prod":
        return F(shape, dt, 0.5, 1.5)
    if op in ("any", "all"):
        return I(shape, dt, 0, 3)  # zeros are common
    return F(shape, dt)


def cases():
    specs = []
    for op in OPS:
        for dim, keepdim in dims_for(op):
            specs.append(reduction(op, value_spec(op, (2, 3, 4), "f32"), dim, keepdim))
        for dt in ("f64", "f16", "bf16", "i8", "i32", "i64", "b"):
            if op in ("max", "min") and dt == "b":
                continue
            specs.append(reduction(op, value_spec(op, (2, 3), dt), -1, False))
            specs.append(reduction(op, value_spec(op, (2, 3), dt), None, False))
        specs.append(reduction(op, value_spec(op, (), "f32"), None, False))
        specs.append(reduction(op, value_spec(op, (), "f32"), 0, False))
        specs.append(reduction(op, value_spec(op, (), "f32"), -1, True))
        specs.append(reduction(op, value_spec(op, (1,), "f32"), 0, False))
        specs.append(reduction(op, value_spec(op, (0, 3), "f32"), 1, False))
        specs.append(reduction(op, value_spec(op, (3, 1, 2), "f32"), 1, True))
        if op not in INDEXED:
            specs.append(reduction(op, value_spec(op, (0, 3), "f32"), 0, False))
            specs.append(reduction(op, value_spec(op, (0, 3), "f32"), None, False))
            specs.append(reduction(op, value_spec(op, (2, 0), "i32"), [0, 1], True))
    # nan propagates through max/min/argmax/argmin (the first nan's index); ties give the first index
    nans = V([1.0, NAN, 3.0, NAN, -INF, 2.0, 2.0, 0.0, INF, INF, -1.0, -INF], "f32", (3, 4))
    ties = V([1, 3, 3, 2, 3, -1, -1, 0, 5, 5, 5, 5], "i32", (3, 4))
    for op in INDEXED:
        specs.append(reduction(op, nans, 1, False, "nan3x4"))
        specs.append(reduction(op, nans, 0, False, "nan3x4"))
        specs.append(reduction(op, ties, 1, False, "ties3x4"))
        specs.append(reduction(op, ties, 0, True, "ties3x4"))
    specs.append(reduction("argmax", nans, None, False, "nan3x4"))
    specs.append(reduction("max", nans, None, False, "nan3x4"))
    specs.append(reduction("argmin", ties, None, False, "ties3x4"))
    for op in ("sum", "mean", "any", "all"):
        specs.append(reduction(op, nans, 1, False, "nan3x4"))
    specs.append(reduction("sum", V([2 ** 62, 2 ** 62, 2 ** 62, -5], "i64"), None, False, "wrap"))
    specs.append(reduction("prod", V([2 ** 20, 2 ** 20, 2 ** 20], "i32"), None, False, "wide"))
    specs.append(reduction("prod", V([2 ** 32, 2 ** 32, 3], "i64"), None, False, "wrap"))
    specs.append(reduction("sum", V([100, 100, 100, -128], "i8"), None, False, "wide"))
    specs.append(reduction("sum", V([60000.0, 60000.0, -1.0], "f16"), None, False, "overflow"))
    return specs


SPECS = cases()
CASES = kit.variants(SPECS)


def test_reduce(device, case):
    kit.run(device, case)
