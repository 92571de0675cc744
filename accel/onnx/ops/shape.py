"""ONNX ops that move, select or describe values: reshape, slice, gather, concat, pad, ..."""
import ember
import ember.nn.functional as F

from . import op
from .util import axis, int64, ints, onnx_dtype, sized


@op("Constant", attrs="value value_float value_floats value_int value_ints")
def constant(n):
    for key in ("value", "value_float", "value_floats", "value_int", "value_ints"):
        if key in n.attrs:
            v = n.attrs[key]
            if key == "value":
                return v
            dtype = ember.float32 if "float" in key else ember.int64
            return ember.tensor(v, dtype=dtype, device=n.device)
    n.fail("expected one of value, value_float(s), value_int(s), found none")


def _shape_values(n, x):
    shape = list(x.shape)
    start, end = n.attr("start", 0), n.attr("end", None)
    r = len(shape)
    start = max(0, min(r, start + r if start < 0 else start))
    end = r if end is None else max(0, min(r, end + r if end < 0 else end))
    return shape[start:end]


@op("Shape", attrs="start end")
def shape(n, x):
    return int64(_shape_values(n, x), n.device)


@op("Size")
def size(n, x):
    return ember.tensor(x.numel(), dtype=ember.int64, device=n.device)


def _reshape_target(n, x, target):
    out = []
    for i, d in enumerate(target):
        if d == 0 and not n.attr("allowzero", 0):
            d = x.shape[i]
        out.append(d)
    return out


@op("Reshape", since=5, attrs="allowzero", static=(1,))
def reshape(n, x, target):
    return x.reshape(*_reshape_target(n, x, ints(target)))


@op("Flatten", attrs="axis")
def flatten(n, x):
    a = n.attr("axis", 1)
    a = a + x.dim() if a < 0 else a
    lead = 1
    for d in x.shape[:a]:
        lead *= d
    return x.reshape(lead, -1 if lead else 0) if x.numel() else x.reshape(lead, _prod(x.shape[a:]))


def _prod(ds):
    out = 1
    for d in ds:
        out *= d
    return out


@op("Transpose", attrs="perm")
def transpose(n, x):
    perm = n.attr("perm", list(range(x.dim()))[::-1])
    return x.permute(*perm)


def _squeeze(x, axes, n):
    if axes is None:
        axes = [i for i, d in enumerate(x.shape) if d == 1]
    axes = set(axis(a, x.dim(), n) for a in axes)
    return x.reshape(*[d for i, d in enumerate(x.shape) if i not in axes])


def _unsqueeze(x, axes, n):
    r = x.dim() + len(axes)
    axes = sorted(axis(a, r, n) for a in axes)
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    return x.reshape(*shape)


op("Squeeze", attrs="axes")(lambda n, x: _squeeze(x, n.attr("axes"), n))
op("Squeeze", since=13, static=(1,))(lambda n, x, axes=None: _squeeze(x, ints(axes), n))
op("Unsqueeze", attrs="axes")(lambda n, x: _unsqueeze(x, n.attr("axes"), n))
op("Unsqueeze", since=13, static=(1,))(lambda n, x, axes: _unsqueeze(x, ints(axes), n))


@op("Concat", attrs="axis")
def concat(n, *xs):
    a = axis(n.attr("axis"), xs[0].dim(), n)
    xs = [x for x in xs if x.numel() or x.dim() > 1 and x.shape[a] != 0]
    return ember.cat(list(xs), dim=a) if len(xs) > 1 else xs[0]


def _split(n, x, sizes):
    a = axis(n.attr("axis", 0), x.dim(), n)
    if not sizes:
        k = n.attr("num_outputs", len(n.outputs))
        d = x.shape[a]
        each = -(-d // k)
        sizes = [min(each, d - i * each) for i in range(k)]
    out, start = [], 0
    for s in sizes:
        out.append(x.narrow(a, start, s))
        start += s
    return tuple(out)


op("Split", since=2, attrs="axis split")(lambda n, x: _split(n, x, n.attr("split")))
op("Split", since=13, attrs="axis num_outputs", static=(1,))(lambda n, x, split=None: _split(n, x, ints(split)))


def _slice(x, starts, ends, axes, steps, n):
    if axes is None:
        axes = list(range(len(starts)))
    if steps is None:
        steps = [1] * len(starts)
    for s, e, a, st in zip(starts, ends, axes, steps):
        a = axis(a, x.dim(), n)
        if st == 0:
            n.fail("expected nonzero slice steps, found 0")
        d = x.shape[a]
        lo, hi, step = slice(max(min(s, 2**62), -2**62), max(min(e, 2**62), -2**62), st).indices(d)
        idx = range(lo, hi, step)
        if step == 1:
            x = x.narrow(a, lo, max(0, hi - lo))
        else:
            x = x.index_select(a, int64(list(idx), x.device)) if len(idx) else x.narrow(a, 0, 0)
    return x


op("Slice", attrs="starts ends axes")(lambda n, x: _slice(x, n.attr("starts"), n.attr("ends"), n.attr("axes"), None, n))
op("Slice", since=10, static=(1, 2, 3, 4))(
    lambda n, x, starts, ends, axes=None, steps=None: _slice(x, ints(starts), ints(ends), ints(axes), ints(steps), n))


def _positive(idx, d):
    return ember.where(idx < 0, idx + d, idx)


@op("Gather", attrs="axis")
def gather(n, x, idx):
    a = axis(n.attr("axis", 0), x.dim(), n)
    from ..graph import host
    if idx.dim() == 0 and idx.dtype.kind == "i" and idx.device == host():
        # one index read on the host (a shape-arithmetic constant such as h[:, 0]): a view
        i = ints(idx)[0]  # remembered after the first read: a step capture sees no host read
        d = x.shape[a]
        if not -d <= i < d:
            n.fail("expected an index in [%d, %d), found %d" % (-d, d, i))
        return x.narrow(a, i + d if i < 0 else i, 1).squeeze(a)
    flat = _positive(idx.to(ember.int64), x.shape[a]).reshape(-1)
    out = x.index_select(a, flat)
    return out.reshape(*(list(x.shape[:a]) + list(idx.shape) + list(x.shape[a + 1:])))


@op("GatherElements", attrs="axis")
def gather_elements(n, x, idx):
    a = axis(n.attr("axis", 0), x.dim(), n)
    return x.gather(a, _positive(idx.to(ember.int64), x.shape[a]))


@op("GatherND", attrs="batch_dims")
def gather_nd(n, x, idx):
    b = n.attr("batch_dims", 0)
    k = idx.shape[-1]
    batch = list(x.shape[:b])
    nb = _prod(batch)
    xs = x.reshape(nb, *x.shape[b:])
    ids = _positive(idx.to(ember.int64), 0).reshape(nb, -1, k)
    rest = list(x.shape[b + k:])
    lin = ember.zeros(ids.shape[:2], dtype=ember.int64, device=x.device)
    for j in range(k):
        d = x.shape[b + j]
        lin = lin * d + _positive(ids[:, :, j], d)
    flat = xs.reshape(nb, _prod(x.shape[b:b + k]), _prod(rest))
    out = flat.gather(1, lin.unsqueeze(-1).expand(nb, lin.shape[1], _prod(rest)))
    return out.reshape(*(batch + list(idx.shape[b:-1]) + rest))


@op("Expand", since=8, static=(1,))
def expand(n, x, shape):
    target = ints(shape)
    r = max(len(target), x.dim())
    xs = [1] * (r - x.dim()) + list(x.shape)
    ts = [1] * (r - len(target)) + target
    out = sized([a if b == 1 else b for a, b in zip(xs, ts)], n)
    return x.reshape(*xs).expand(*out)


@op("Tile", since=6, static=(1,))
def tile(n, x, reps):
    r = ints(reps)
    sized([a * b for a, b in zip(x.shape, r)], n)
    return x.repeat(*r)


@op("ConstantOfShape", since=9, attrs="value", static=(0,))
def constant_of_shape(n, shape):
    v = n.attr("value")
    dims = sized(ints(shape), n)
    if v is None:
        return ember.zeros(dims, dtype=ember.float32, device=n.device)
    return ember.full(dims, v.reshape(-1)[0].item(), dtype=v.dtype, device=n.device)


@op("Range", since=11, static=(0, 1, 2))
def range_(n, start, limit, delta):
    s, l, d = start.item(), limit.item(), delta.item()
    if d == 0:
        n.fail("expected a nonzero delta, found 0")
    count = max(0, -(-(l - s) // d)) if start.dtype.kind == "i" else max(0, int(-(-(l - s) // d)))
    sized([int(count)], n)
    vals = [s + i * d for i in range(int(count))]
    return ember.tensor(vals, dtype=start.dtype, device=n.device) if vals else \
        ember.zeros(0, dtype=start.dtype, device=n.device)


def _pad(n, x, pads, value, axes=None):
    r = x.dim()
    if axes is None:
        axes = list(range(r))
    axes = [axis(a, r, n) for a in axes]
    k = len(axes)
    before, after = [0] * r, [0] * r
    for j, a in enumerate(axes):
        before[a], after[a] = pads[j], pads[j + k]
    mode = n.attr("mode", "constant")
    mode = {"constant": "constant", "reflect": "reflect", "edge": "replicate", "wrap": "circular"}.get(mode)
    if mode is None:
        n.fail("expected mode constant, reflect, edge or wrap, found %r" % n.attr("mode"))
    flat = []
    for a in range(r - 1, -1, -1):
        flat.extend([before[a], after[a]])
    while len(flat) > 2 and flat[-1] == 0 and flat[-2] == 0:
        flat = flat[:-2]
    if mode != "constant":
        if any(v < 0 for v in flat):
            n.fail("expected non-negative pads for mode %r, found %s" % (n.attr("mode"), pads))
        return _pad_nonconstant(x, before, after, mode)
    return F.pad(x, flat, mode="constant", value=value)


def _pad_nonconstant(x, before, after, mode):
    for a in range(x.dim()):
        b, e = before[a], after[a]
        if not b and not e:
            continue
        d = x.shape[a]
        idx = []
        for i in range(-b, d + e):
            if mode == "replicate":
                j = min(max(i, 0), d - 1)
            elif mode == "circular":
                j = i % d
            else:
                j = i
                period = 2 * (d - 1) if d > 1 else 1
                j = j % period if period else 0
                j = period - j if j >= d else j
            idx.append(j)
        x = x.index_select(a, int64(idx, x.device))
    return x


def _pad_check(n):
    mode = n.attr("mode", "constant")
    if mode not in ("constant", "reflect", "edge", "wrap"):
        return "pad mode %r not supported (expected constant, reflect, edge or wrap)" % mode
    return None


op("Pad", since=2, attrs="mode pads value", check=_pad_check)(lambda n, x: _pad(n, x, n.attr("pads"), n.attr("value", 0.0)))


@op("Pad", since=11, attrs="mode", static=(1, 2, 3), check=_pad_check)
def pad(n, x, pads, value=None, axes=None):
    v = 0 if value is None else value.reshape(-1)[0].item()
    return _pad(n, x, ints(pads), v, ints(axes))


@op("DepthToSpace", attrs="blocksize mode")
def depth_to_space(n, x):
    b = n.attr("blocksize")
    N, C, H, W = x.shape
    if n.attr("mode", "DCR") == "DCR":
        y = x.reshape(N, b, b, C // (b * b), H, W).permute(0, 3, 4, 1, 5, 2)
    else:
        y = x.reshape(N, C // (b * b), b, b, H, W).permute(0, 1, 4, 2, 5, 3)
    return y.reshape(N, C // (b * b), H * b, W * b)


@op("SpaceToDepth", attrs="blocksize mode")
def space_to_depth(n, x):
    b = n.attr("blocksize")
    N, C, H, W = x.shape
    y = x.reshape(N, C, H // b, b, W // b, b)
    y = y.permute(0, 1, 3, 5, 2, 4) if n.attr("mode", "DCR") == "CRD" else y.permute(0, 3, 5, 1, 2, 4)
    return y.reshape(N, C * b * b, H // b, W // b)


@op("Trilu", attrs="upper", static=(1,))
def trilu(n, x, k=None):
    k = 0 if k is None else k.item()
    return x.triu(k) if n.attr("upper", 1) else x.tril(k)


@op("EyeLike", attrs="dtype k")
def eye_like(n, x):
    dtype = onnx_dtype(n.attr("dtype"), n) if "dtype" in n.attrs else x.dtype
    rows, cols = x.shape
    k = n.attr("k", 0)
    vals = [[1 if j - i == k else 0 for j in range(cols)] for i in range(rows)]
    return ember.tensor(vals, dtype=dtype, device=x.device)


@op("Compress", attrs="axis")
def compress(n, x, cond):
    keep = [i for i, c in enumerate(cond.reshape(-1).tolist()) if c]
    a = n.attr("axis")
    if a is None:
        x, a = x.reshape(-1), 0
    a = axis(a, x.dim(), n)
    keep = [i for i in keep if i < x.shape[a]]
    return x.index_select(a, int64(keep, x.device)) if keep else x.narrow(a, 0, 0)


@op("NonZero")
def nonzero(n, x):
    if x.dim() == 0:
        x = x.reshape(1)
    return ember.nonzero(x).T.to(ember.int64)


@op("OneHot", attrs="axis", static=(1, 2))
def one_hot(n, idx, depth, values):
    d = int(depth.reshape(-1)[0].item())
    i = idx.to(ember.int64)
    i = ember.where(i < 0, i + d, i)
    hot = F.one_hot(i.clamp(0, d - 1), d).logical_and((i >= 0).logical_and(i < d).unsqueeze(-1))
    off, on = values[0], values[1]
    out = ember.where(hot, on, off)
    a = n.attr("axis", -1)
    r = out.dim()
    a = axis(a, r, n)
    if a != r - 1:
        perm = list(range(r - 1))
        perm.insert(a, r - 1)
        out = out.permute(*perm)
    return out


def _scatter_check(n):
    r = n.attr("reduction", "none")
    if r not in ("none", "add", "mul", "max", "min"):
        return "reduction %r not supported" % r
    return None


_REDUCE = {"add": "sum", "mul": "prod", "max": "amax", "min": "amin"}


@op("ScatterElements", since=11, attrs="axis reduction", check=_scatter_check)
def scatter_elements(n, x, idx, upd):
    a = axis(n.attr("axis", 0), x.dim(), n)
    idx = _positive(idx.to(ember.int64), x.shape[a])
    r = n.attr("reduction", "none")
    if r == "none":
        return x.scatter(a, idx, upd)
    return ember.scatter_reduce(x, a, idx, upd, _REDUCE[r], include_self=True)


op("Scatter", since=9, attrs="axis")(lambda n, x, idx, upd: scatter_elements(n, x, idx, upd))


@op("ScatterND", since=11, attrs="reduction", check=_scatter_check)
def scatter_nd(n, x, idx, upd):
    k = idx.shape[-1]
    rest = list(x.shape[k:])
    m = _prod(rest)
    ids = idx.to(ember.int64).reshape(-1, k)
    lin = ember.zeros(ids.shape[0], dtype=ember.int64, device=x.device)
    for j in range(k):
        lin = lin * x.shape[j] + _positive(ids[:, j], x.shape[j])
    flat = x.reshape(_prod(x.shape[:k]), m)
    u = upd.reshape(ids.shape[0], m)
    full_idx = lin.unsqueeze(-1).expand(ids.shape[0], m)
    r = n.attr("reduction", "none")
    if r == "none":
        out = flat.scatter(0, full_idx, u)
    else:
        out = ember.scatter_reduce(flat, 0, full_idx, u, _REDUCE[r], include_self=True)
    return out.reshape(*x.shape)


@op("ReverseSequence", attrs="batch_axis time_axis")
def reverse_sequence(n, x, lens):
    b, t = n.attr("batch_axis", 1), n.attr("time_axis", 0)
    T = x.shape[t]
    L = ints(lens)
    rows = []
    for i in range(x.shape[b]):
        xi = x.narrow(b, i, 1)
        order = list(range(L[i] - 1, -1, -1)) + list(range(L[i], T))
        rows.append(xi.index_select(t, int64(order, x.device)))
    return ember.cat(rows, dim=b)


@op("TensorScatter", since=24, attrs="axis mode")
def tensor_scatter(n, past, update, write=None):
    a = axis(n.attr("axis", -2), past.dim(), n)
    L, T = past.shape[a], update.shape[a]
    starts = ints(write) if write is not None else [0] * past.shape[0]
    rows = []
    for b in range(past.shape[0]):
        pos = [starts[b] + t for t in range(T)]
        if n.attr("mode", "linear") == "circular":
            pos = [p % L for p in pos]
        order = list(range(L))
        src = [None] * L
        for t, p in enumerate(pos):
            src[p] = t
        keep = past[b:b + 1]
        upd = update[b:b + 1]
        idx = [L + src[i] if src[i] is not None else i for i in order]
        rows.append(ember.cat([keep, upd], dim=a).index_select(a, int64(idx, past.device)))
    return ember.cat(rows, dim=0)
