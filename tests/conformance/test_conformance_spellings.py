"""PyTorch's spellings and semantics (issue 22): axis=/dtype=/stable= on reductions, scans and sort,
div(rounding_mode=), scatter(value=, reduce='multiply'), flattened roll, 0-d squeeze and scans,
ints beside tensor indices, pad circular and cropping, interpolate on 3 spatial dims and
nearest-exact, ceil_mode/count_include_pad/divisor_override/return_indices pools and integer max
pools, attention with grouped kv heads, view(dtype). References in float64 (int64), pools and
resizing written out as PyTorch's CPU kernels compute them."""
import ember
import ember.nn.functional as nnf

import conformance_kit as kit
from conformance_kit import F, I, B, V, case, EXACT, SAME

PARAMETERS = ("device", "case")

NAN = kit.NAN


# -- numpy references -----------------------------------------------------------------------------

def np_torch_index(np, x, items):
    """``x[items]`` by PyTorch's rule: ints (and slices, None) apply first as basic indices, then
    the tensor indices, by numpy's rule, on what is left."""
    basic = tuple(i if type(i) is int or i is None or type(i) is slice else slice(None) for i in items)
    rest = tuple(slice(None) if i is None or type(i) is slice else i for i in items if type(i) is not int)
    return x[basic][rest]


def np_scatter_multiply(np, x, dim, index, src):
    out = np.array(x, dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        out[tuple(target)] *= src[pos]
    return out


def np_scatter_set(np, x, dim, index, value):
    out = np.array(x, dtype=np.float64)
    for pos in np.ndindex(*index.shape):
        target = list(pos)
        target[dim] = index[pos]
        out[tuple(target)] = value
    return out


def _out_len(size, k, s, p, d, ceil):
    span = size + 2 * p - d * (k - 1) - 1
    if not ceil:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _t(v, n):
    return (v,) * n if type(v) is int else tuple(v)


def np_max_pool(np, x, kernel, stride=None, padding=0, dilation=1, ceil=False):
    """(values, indices): the first max of the in-bounds taps, or the first nan (ember's argmax rule;
    PyTorch's CPU kernel takes the last nan of a window with several)."""
    n = x.ndim - 2
    k = _t(kernel, n)
    s = k if stride is None else _t(stride, n)
    p, d = _t(padding, n), _t(dilation, n)
    sizes = x.shape[2:]
    spatial = [_out_len(sizes[i], k[i], s[i], p[i], d[i], ceil) for i in range(n)]
    vals = np.zeros(x.shape[:2] + tuple(spatial), dtype=np.float64 if x.dtype.kind == "f" else np.int64)
    idx = np.zeros(vals.shape, dtype=np.int64)
    for b in range(x.shape[0]):
        for c in range(x.shape[1]):
            for pos in np.ndindex(*spatial):
                taps = [[]]
                for i in range(n):
                    coords = [pos[i] * s[i] - p[i] + t * d[i] for t in range(k[i])]
                    taps = [a + [cc] for a in taps for cc in coords if 0 <= cc < sizes[i]]
                best, at = None, None
                for tap in taps:
                    v = x[(b, c) + tuple(tap)]
                    flat = 0
                    for i in range(n):
                        flat = flat * sizes[i] + tap[i]
                    if best is None or (best == best and (v > best or v != v)):
                        best, at = v, flat
                vals[(b, c) + pos] = best
                idx[(b, c) + pos] = at
    return vals, idx


def np_avg_pool(np, x, kernel, stride=None, padding=0, ceil=False, count_include_pad=True, divisor=None):
    n = x.ndim - 2
    k = _t(kernel, n)
    s = k if stride is None else _t(stride, n)
    p = _t(padding, n)
    sizes = x.shape[2:]
    spatial = [_out_len(sizes[i], k[i], s[i], p[i], 1, ceil) for i in range(n)]
    out = np.zeros(x.shape[:2] + tuple(spatial))
    for pos in np.ndindex(*spatial):
        window, whole, inside = [], 1, 1
        for i in range(n):
            start = pos[i] * s[i] - p[i]
            end = min(start + k[i], sizes[i] + p[i])
            whole *= end - start
            lo, hi = max(start, 0), min(end, sizes[i])
            inside *= hi - lo
            window.append(slice(lo, hi))
        total = np.sum(x[(slice(None), slice(None)) + tuple(window)].astype(np.float64), axis=tuple(range(2, n + 2)))
        div = divisor if divisor is not None else (whole if count_include_pad else inside)
        out[(slice(None), slice(None)) + pos] = total / div
    return out


def np_resize(np, x, sizes, mode, align_corners=False, scale=None):
    """interpolate's nearest / nearest-exact / linear rules, one spatial dim after another."""
    x = x.astype(np.float64)
    for i, dst in enumerate(sizes):
        axis = 2 + i
        src = x.shape[axis]
        ratio = src / dst if scale is None else 1.0 / scale
        if mode in ("nearest", "nearest-exact"):
            half = 0.5 if mode == "nearest-exact" else 0.0
            idx = [min(int((j + half) * ratio), src - 1) for j in range(dst)]
            x = np.take(x, idx, axis=axis)
            continue
        if align_corners:
            pos = [j * (src - 1) / (dst - 1) if dst > 1 else 0.0 for j in range(dst)]
        else:
            pos = [max((j + 0.5) * ratio - 0.5, 0.0) for j in range(dst)]
        lo = [min(int(q), src - 1) for q in pos]
        hi = [min(a + 1, src - 1) for a in lo]
        shape = [1] * x.ndim
        shape[axis] = dst
        w = np.array([q - a for q, a in zip(pos, lo)]).reshape(shape)
        a, b = np.take(x, lo, axis=axis), np.take(x, hi, axis=axis)
        x = a + (b - a) * w
    return x


def np_attention(np, q, k, v, groups):
    k = np.repeat(k, groups, axis=-3)
    v = np.repeat(v, groups, axis=-3)
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return (scores / scores.sum(axis=-1, keepdims=True)) @ v


def np_view(np, x, src, dst):
    return np.ascontiguousarray(x.astype(src)).view(dst)


# -- cases ----------------------------------------------------------------------------------------

def reduction_cases():
    x3, x = F((2, 3, 4)), F((3, 4))
    return [
        case("sum.f32.2x3x4.axis1", lambda x: x.sum(axis=1), lambda np, x: np.sum(x, axis=1), [x3], "f32"),
        case("sum.f32.2x3x4.dim_list_keepdim", lambda x: x.sum(dim=[0, 2], keepdim=True),
             lambda np, x: np.sum(x, axis=(0, 2), keepdims=True), [x3], "f32"),
        case("sum.i8.3x4.dtype_i32", lambda x: x.sum(1, dtype=ember.int32), lambda np, x: np.sum(x, axis=1),
             [I((3, 4), "i8", -100, 100)], "i32"),
        case("sum.f32.3x4.dtype_f64", lambda x: x.sum(dtype=ember.float64), lambda np, x: np.sum(x), [x], "f64"),
        case("sum.f32.3x4.dtype_bool", lambda x: x.sum(axis=1, dtype=ember.bool),
             lambda np, x: np.any(x != 0, axis=1), [I((3, 4), "f32", 0, 2)], "b"),
        case("prod.i64.3x4.dtype_bool", lambda x: x.prod(0, dtype=ember.bool),
             lambda np, x: np.all(x != 0, axis=0), [I((3, 4), "i64", 0, 2)], "b"),
        case("mean.i32.3x4.axis0_dtype_f64", lambda x: x.mean(axis=0, dtype=ember.float64),
             lambda np, x: np.mean(x, axis=0), [I((3, 4), "i32")], "f64"),
        case("prod.f32.3x4.axis0_dtype_f64", lambda x: x.prod(axis=0, dtype=ember.float64),
             lambda np, x: np.prod(x, axis=0), [x], "f64"),
        case("max.f32.3x4.axis1", lambda x: tuple(x.max(axis=1)),
             lambda np, x: (np.max(x, axis=1), np.argmax(x, axis=1)), [x], ("f32", "i64")),
        case("min.f32.3x4.axis0", lambda x: x.min(axis=0).values, lambda np, x: np.min(x, axis=0), [x], "f32"),
        case("argmax.f32.3x4.axis0", lambda x: x.argmax(axis=0), lambda np, x: np.argmax(x, axis=0), [x], "i64"),
        case("argmin.f32.3x4.axis1_keepdim", lambda x: x.argmin(axis=1, keepdim=True),
             lambda np, x: np.argmin(x, axis=1)[:, None], [x], "i64"),
        case("var.f32.3x4.axis1", lambda x: x.var(axis=1), lambda np, x: np.var(x, axis=1, ddof=1), [x], "f32",
             "composite"),
        case("std.f32.2x3x4.axis_tuple", lambda x: x.std(axis=(0, 2)), lambda np, x: np.std(x, axis=(0, 2), ddof=1),
             [x3], "f32", "composite"),
        case("any.b.3x4.axis1", lambda x: x.any(axis=1), lambda np, x: np.any(x, axis=1), [B((3, 4))], "b"),
        case("all.b.2x3x4.dim_tuple", lambda x: x.all(dim=(0, 2)), lambda np, x: np.all(x, axis=(0, 2)),
             [B((2, 3, 4))], "b"),
        case("logsumexp.f32.3x4.axis1", lambda x: x.logsumexp(axis=1),
             lambda np, x: np.log(np.sum(np.exp(x), axis=1)), [x], "f32", "composite"),
        case("cumsum.i8.3x4.axis1_dtype_i32", lambda x: x.cumsum(axis=1, dtype=ember.int32),
             lambda np, x: np.cumsum(x, axis=1), [I((3, 4), "i8", -100, 100)], "i32"),
        case("cumprod.f32.3x4.dtype_f64", lambda x: x.cumprod(0, dtype=ember.float64),
             lambda np, x: np.cumprod(x, axis=0), [x], "f64"),
        case("cummax.f32.3x4.axis1", lambda x: x.cummax(axis=1).values,
             lambda np, x: np.maximum.accumulate(x, axis=1), [x], "f32", EXACT),
        case("sort.f32.3x4.axis0_stable", lambda x: tuple(x.sort(axis=0, stable=True)),
             lambda np, x: (np.sort(x, axis=0), np.argsort(x, axis=0, kind="stable")), [x], ("f32", "i64"), EXACT),
        case("argsort.i64.3x6.stable", lambda x: x.argsort(dim=1, stable=True),
             lambda np, x: np.argsort(x, axis=1, kind="stable"), [I((3, 6), "i64", 0, 3)], "i64"),
        case("argsort.i64.3x6.stable_descending", lambda x: x.argsort(axis=1, descending=True, stable=True),
             lambda np, x: np.argsort(-x, axis=1, kind="stable"), [I((3, 6), "i64", 0, 3)], "i64"),
        case("cumsum.f32.0d.dim0", lambda x: x.cumsum(0), lambda np, x: x, [F(())], "f32", EXACT),
        case("cummin.f32.0d.dim_neg1", lambda x: x.cummin(-1).values, lambda np, x: x, [F(())], "f32", EXACT),
        case("squeeze.f32.0d.dim0", lambda x: x.squeeze(0), lambda np, x: x, [F(())], "f32", EXACT),
        case("squeeze.f32.0d.dim_neg1", lambda x: x.squeeze(-1), lambda np, x: x, [F(())], "f32", EXACT),
        case("roll.f32.2x3.flat", lambda x: x.roll(2), lambda np, x: np.roll(x, 2), [F((2, 3))], "f32", EXACT),
        case("roll.f32.2x3.flat_tuple", lambda x: x.roll((-4,)), lambda np, x: np.roll(x, -4), [F((2, 3))], "f32",
             EXACT),
    ]


_A = V([7, -7, 7, -7, 0, 9, -1, 1, 5, -5, 6, -6], "i64", (3, 4))
_B = V([2, 2, -2, -2, 3, 4, 3, -3, 5, 5, -4, 4], "i64", (3, 4))


def div_cases():
    return [
        case("div.i64.3x4.trunc", lambda a, b: a.div(b, rounding_mode="trunc"),
             lambda np, a, b: np.trunc(a / b), [_A, _B], "i64"),
        case("div.i64.3x4.floor", lambda a, b: a.div(b, rounding_mode="floor"),
             lambda np, a, b: np.floor_divide(a, b), [_A, _B], "i64"),
        case("div.i32.3x4.trunc_scalar", lambda a: a.div(-3, rounding_mode="trunc"),
             lambda np, a: np.trunc(a / -3.0), [I((3, 4), "i32")], "i32"),
        case("div.i32.3x4.trunc_broadcast", lambda a, b: a.div(b, rounding_mode="trunc"),
             lambda np, a, b: np.trunc(a / b), [I((3, 4), "i32"), V([3, -2, 5, -7], "i32")], "i32", expand="auto"),
        case("div.f32.3x4.trunc", lambda a, b: a.div(b, rounding_mode="trunc"),
             lambda np, a, b: np.trunc(a / b), [F((3, 4), "f32", -9.0, 9.0), F((3, 4), "f32", 0.5, 2.0)], "f32", SAME),
        case("div.f32.3x4.floor", lambda a, b: a.div(b, rounding_mode="floor"),
             lambda np, a, b: np.floor_divide(a, b), [F((3, 4), "f32", -9.0, 9.0), F((3, 4), "f32", -2.0, -0.5)],
             "f32", SAME),
        case("div.f32.3x4.none", lambda a, b: a.div(b, rounding_mode=None), lambda np, a, b: a / b,
             [F((3, 4)), F((3, 4), "f32", 0.5, 2.0)], "f32", EXACT),
    ]


_IDX_3x4 = V([0, 1, 2, 0, 2, 2, 0, 1], "i64", (2, 4))


def scatter_cases():
    return [
        case("scatter.f32.3x4.d0.multiply", lambda x, i, s: x.scatter(0, i, s, reduce="multiply"),
             lambda np, x, i, s: np_scatter_multiply(np, x, 0, i, s), [F((3, 4)), _IDX_3x4, F((2, 4))], "f32",
             "composite"),
        case("scatter.f32.3x4.d1.multiply_larger_src", lambda x, i, s: x.scatter(1, i, s, reduce="multiply"),
             lambda np, x, i, s: np_scatter_multiply(np, x, 1, i, s),
             [F((3, 4)), V([3, 3, 0, 1, 1, 1], "i64", (2, 3)), F((3, 5))], "f32", "composite"),
        case("scatter.f32.3x4.d1.value", lambda x, i: x.scatter(1, i, value=-1.5),
             lambda np, x, i: np_scatter_set(np, x, 1, i, -1.5), [F((3, 4)), V([3, 0, 1, 1], "i64", (2, 2))], "f32",
             EXACT),
        case("scatter.i64.3x4.d0.value_multiply", lambda x, i: x.scatter(0, i, value=3, reduce="multiply"),
             lambda np, x, i: np_scatter_multiply(np, x, 0, i, np.full(i.shape, 3)), [I((3, 4)), _IDX_3x4], "i64"),
    ]


class _Slices:
    def __getitem__(self, index):
        return index


_SL = _Slices()  # MicroPython cannot call slice() itself
_S = _SL[:]


def index_cases():
    x = F((2, 3, 6, 4, 3))
    d2 = V([1, 3], "i64")
    e2 = V([2, 0], "i64")
    specs = [
        ("int_slices_tensor", lambda x, d: x[1, :, 1:5:2, d, 0:2], (1, _S, _SL[1:5:2], "d", _SL[0:2]), [x, d2]),
        ("int_between_slices", lambda x, d: x[:, 1, :, d], (_S, 1, _S, "d"), [x, d2]),
        ("int_between_tensors", lambda x, d, e: x[d, 1, e], ("d", 1, "e"), [x, V([0, 1], "i64"), e2]),
        ("tensor_slice_int_tensor", lambda x, d, e: x[1, d, :, 2, e], (1, "d", _S, 2, "e"),
         [x, V([0, 2], "i64"), V([1, 2], "i64")]),
        ("none_int_tensor", lambda x, d: x[None, 0, :, d], (None, 0, _S, "d"), [x, V([5, 0, 2], "i64")]),
        ("negative_int_tensor_2d", lambda x, d: x[-1, :, :, d], (-1, _S, _S, "d"), [x, V([3, 0, 1, 1], "i64", (2, 2))]),
    ]
    out = []
    for label, fn, items, inputs in specs:
        def ref(np, x, *tensors, items=items):
            named = {"d": tensors[0], "e": tensors[1] if len(tensors) > 1 else None}
            return np_torch_index(np, x, tuple(named[i] if type(i) is str else i for i in items))
        out.append(case("index.f32.torch_rule." + label, fn, ref, inputs, "f32", EXACT))

    def set_fn(x, d, v):
        y = x.clone()
        y[:, 1, :, d] = v
        return y

    def set_ref(np, x, d, v):
        y = np.array(x)
        y[:, 1][:, :, d] = v
        return y

    out.append(case("setitem.f32.torch_rule.int_between_slices", set_fn, set_ref,
                    [F((2, 3, 4, 5)), V([4, 1], "i64"), F((2, 4, 2))], "f32", EXACT))
    return out


def pad_cases():
    x4 = F((1, 2, 3, 4))
    return [
        case("F.pad.f32.circular_2d", lambda x: nnf.pad(x, (2, 1, 1, 0), mode="circular"),
             lambda np, x: np.pad(x, [(0, 0), (0, 0), (1, 0), (2, 1)], mode="wrap"), [x4], "f32", EXACT),
        case("F.pad.f32.circular_full_wrap", lambda x: nnf.pad(x, (4, 4), mode="circular"),
             lambda np, x: np.pad(x, [(0, 0), (0, 0), (0, 0), (4, 4)], mode="wrap"), [x4], "f32", EXACT),
        case("F.pad.f32.circular_crop", lambda x: nnf.pad(x, (-1, 2), mode="circular"),
             lambda np, x: np.pad(x[..., 1:], [(0, 0), (0, 0), (0, 2)], mode="wrap"), [F((2, 3, 5))], "f32", EXACT),
        case("F.pad.f32.reflect_crop", lambda x: nnf.pad(x, (2, -1), mode="reflect"),
             lambda np, x: np.pad(x[..., :-1], [(0, 0), (2, 0)], mode="reflect"), [F((2, 6))], "f32", EXACT),
        case("F.pad.f32.replicate_crop_2d", lambda x: nnf.pad(x, (-2, 1, 1, -1), mode="replicate"),
             lambda np, x: np.pad(x[:, :, :-1, 2:], [(0, 0), (0, 0), (1, 0), (0, 1)], mode="edge"), [x4], "f32",
             EXACT),
        case("F.pad.f32.constant_crop_both", lambda x: nnf.pad(x, (-1, -1, 1, 1), value=2.5),
             lambda np, x: np.pad(x[..., 1:-1], [(0, 0), (0, 0), (1, 1), (0, 0)], constant_values=2.5), [x4], "f32",
             EXACT),
    ]


def interpolate_cases():
    x5 = F((1, 2, 2, 3, 4))
    return [
        case("F.interpolate.f32.trilinear", lambda x: nnf.interpolate(x, size=(3, 4, 5), mode="trilinear"),
             lambda np, x: np_resize(np, x, (3, 4, 5), "linear"), [x5], "f32", "composite"),
        case("F.interpolate.f32.trilinear_align_scale2",
             lambda x: nnf.interpolate(x, scale_factor=2, mode="trilinear", align_corners=True),
             lambda np, x: np_resize(np, x, (4, 6, 8), "linear", True), [x5], "f32", "composite"),
        case("F.interpolate.f32.nearest_3d", lambda x: nnf.interpolate(x, size=(3, 2, 7), mode="nearest"),
             lambda np, x: np_resize(np, x, (3, 2, 7), "nearest"), [x5], "f32", EXACT),
        case("F.interpolate.f32.nearest_exact_3d", lambda x: nnf.interpolate(x, size=(5, 3, 3), mode="nearest-exact"),
             lambda np, x: np_resize(np, x, (5, 3, 3), "nearest-exact"), [x5], "f32", EXACT),
        case("F.interpolate.f32.nearest_exact_up", lambda x: nnf.interpolate(x, size=(5, 7), mode="nearest-exact"),
             lambda np, x: np_resize(np, x, (5, 7), "nearest-exact"), [F((1, 2, 2, 3))], "f32", EXACT),
        case("F.interpolate.f32.nearest_exact_half",
             lambda x: nnf.interpolate(x, scale_factor=0.5, mode="nearest-exact"),
             lambda np, x: np_resize(np, x, (3, 2), "nearest-exact", scale=0.5), [F((1, 1, 6, 4))], "f32", EXACT),
        case("F.interpolate.f32.nearest_exact_1d", lambda x: nnf.interpolate(x, size=7, mode="nearest-exact"),
             lambda np, x: np_resize(np, x, (7,), "nearest-exact"), [F((2, 1, 3))], "f32", EXACT),
    ]


def pool_cases():
    nans = V([1.0, NAN, 3.0, NAN, -1.0, 2.0, 5.0, 0.5, NAN], "f32", (1, 1, 3, 3))
    return [
        case("F.max_pool2d.f32.ceil", lambda x: nnf.max_pool2d(x, 3, 2, 1, ceil_mode=True),
             lambda np, x: np_max_pool(np, x, 3, 2, 1, 1, True)[0], [F((1, 2, 7, 6))], "f32", EXACT),
        case("F.max_pool2d.f32.ceil_indices", lambda x: nnf.max_pool2d(x, 2, ceil_mode=True, return_indices=True),
             lambda np, x: np_max_pool(np, x, 2, None, 0, 1, True), [F((2, 2, 5, 5))], ("f32", "i64"), EXACT),
        case("F.max_pool2d.f32.indices_pad_dilation",
             lambda x: nnf.max_pool2d(x, 3, 1, 1, 2, return_indices=True),
             lambda np, x: np_max_pool(np, x, 3, 1, 1, 2), [F((1, 2, 6, 6))], ("f32", "i64"), EXACT),
        case("F.max_pool2d.f32.indices_ties", lambda x: nnf.max_pool2d(x, (2, 3), (1, 2), return_indices=True)[1],
             lambda np, x: np_max_pool(np, x, (2, 3), (1, 2))[1], [I((1, 1, 4, 7), "f32", 0, 3)], "i64"),
        case("F.max_pool2d.f32.indices_nan", lambda x: nnf.max_pool2d(x, 2, 1, return_indices=True)[1],
             lambda np, x: np_max_pool(np, x, 2, 1)[1], [nans], "i64"),
        case("F.max_pool2d.i64.k2", lambda x: nnf.max_pool2d(x, 2), lambda np, x: np_max_pool(np, x, 2)[0],
             [I((2, 2, 4, 5), "i64", -50, 50)], "i64"),
        case("F.max_pool2d.i32.ceil_pad", lambda x: nnf.max_pool2d(x, 3, 2, 1, ceil_mode=True),
             lambda np, x: np_max_pool(np, x, 3, 2, 1, 1, True)[0], [I((1, 2, 6, 5), "i32", -9, 0)], "i32"),
        case("F.max_pool2d.i8.indices", lambda x: nnf.max_pool2d(x, 2, return_indices=True),
             lambda np, x: np_max_pool(np, x, 2), [I((1, 1, 4, 4), "i8", -128, 127)], ("i8", "i64")),
        case("F.max_pool1d.f32.ceil_indices", lambda x: nnf.max_pool1d(x, 3, 2, 1, ceil_mode=True, return_indices=True),
             lambda np, x: np_max_pool(np, x, 3, 2, 1, 1, True), [F((2, 3, 8))], ("f32", "i64"), EXACT),
        case("F.avg_pool2d.f32.ceil", lambda x: nnf.avg_pool2d(x, 3, 2, 1, ceil_mode=True),
             lambda np, x: np_avg_pool(np, x, 3, 2, 1, True), [F((1, 2, 7, 6))], "f32", "composite"),
        case("F.avg_pool2d.f32.ceil_exclude_pad",
             lambda x: nnf.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
             lambda np, x: np_avg_pool(np, x, 3, 2, 1, True, False), [F((1, 2, 6, 5))], "f32", "composite"),
        case("F.avg_pool2d.f32.exclude_pad", lambda x: nnf.avg_pool2d(x, 2, 1, 1, count_include_pad=False),
             lambda np, x: np_avg_pool(np, x, 2, 1, 1, False, False), [F((2, 1, 3, 4))], "f32", "composite"),
        case("F.avg_pool2d.f32.divisor_override", lambda x: nnf.avg_pool2d(x, 2, padding=1, divisor_override=3),
             lambda np, x: np_avg_pool(np, x, 2, 2, 1, False, True, 3), [F((1, 2, 4, 5))], "f32", "composite"),
        case("F.avg_pool2d.f64.ceil_rect", lambda x: nnf.avg_pool2d(x, (2, 3), (2, 2), ceil_mode=True),
             lambda np, x: np_avg_pool(np, x, (2, 3), (2, 2), 0, True), [F((1, 1, 5, 6), "f64")], "f64", "composite"),
        case("F.avg_pool1d.f32.ceil_exclude_pad",
             lambda x: nnf.avg_pool1d(x, 4, 3, 2, ceil_mode=True, count_include_pad=False),
             lambda np, x: np_avg_pool(np, x, 4, 3, 2, True, False), [F((2, 3, 9))], "f32", "composite"),
    ]


def misc_cases():
    return [
        case("F.scaled_dot_product_attention.f32.gqa",
             lambda q, k, v: nnf.scaled_dot_product_attention(q, k, v, enable_gqa=True),
             lambda np, q, k, v: np_attention(np, q, k, v, 3), [F((2, 6, 4, 8)), F((2, 2, 5, 8)), F((2, 2, 5, 3))],
             "f32", "composite"),
        case("F.scaled_dot_product_attention.f32.gqa_same_heads",
             lambda q, k, v: nnf.scaled_dot_product_attention(q, k, v, enable_gqa=True),
             lambda np, q, k, v: np_attention(np, q, k, v, 1), [F((2, 4, 8)), F((2, 5, 8)), F((2, 5, 3))],
             "f32", "composite"),
        case("view.f32.2x3.as_i32", lambda x: x.view(ember.int32),
             lambda np, x: np_view(np, x, np.float32, np.int32), [F((2, 3))], "i32"),
        case("view.f32.2x3.as_i8", lambda x: x.view(ember.int8),
             lambda np, x: np_view(np, x, np.float32, np.int8), [F((2, 3))], "i8"),
        case("view.f64.2x2.as_i32", lambda x: x.view(ember.int32),
             lambda np, x: np_view(np, x, np.float64, np.int32), [F((2, 2), "f64")], "i32"),
        case("view.i8.2x4.as_f32", lambda x: x.view(ember.float32),
             lambda np, x: np_view(np, x, np.int8, np.float32),
             [V([0, 0, -128, 63, 0, 0, 0, -64], "i8", (2, 4))], "f32", EXACT),
        case("view.i64.3.as_f64", lambda x: x.view(ember.float64),
             lambda np, x: np_view(np, x, np.int64, np.float64),
             [V([4607182418800017408, -4611686018427387904, 0], "i64")], "f64", EXACT),
    ]


SPECS = (reduction_cases() + div_cases() + scatter_cases() + index_cases() + pad_cases() + interpolate_cases()
         + pool_cases() + misc_cases())
CASES = kit.variants(SPECS)


def test_spellings(device, case):
    kit.run(device, case)
