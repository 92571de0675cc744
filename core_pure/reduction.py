"""Reductions over a dim, a tuple of dims or everything, with ``keepdim``."""
from . import dtypes
from .composite import composite
from .errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from .shapes import dim as _dim, dims as _dims, numel
from .tensor import Tensor



class ValuesIndices:
    """``(values, indices)`` of max/min/sort along a dim, unpacked like a tuple.

    ``indices`` may be given as a function: then it runs on first read, so ``x.max(-1)[0]`` or
    ``x.max(-1).values`` costs one reduction, not two (and a fused reduction stays fusable).
    """

    __slots__ = ("values", "_indices")

    def __init__(self, values, indices):
        self.values = values
        self._indices = indices

    @property
    def indices(self):
        if not isinstance(self._indices, Tensor):
            self._indices = self._indices()
        return self._indices

    def __len__(self):
        return 2

    def __getitem__(self, i):
        if i in (0, -2):
            return self.values
        if i in (1, -1):
            return self.indices
        return (self.values, self.indices)[i]  # slices, and the IndexError

    def __iter__(self):
        yield self.values
        yield self.indices

    def __eq__(self, other):
        return tuple(self) == tuple(other)

    def __repr__(self):
        return "ValuesIndices(values=%r, indices=%r)" % (self.values, self.indices)


@composite
def reduce_dims(x, op, dims):
    """``op`` (sum, prod, max, min, any, all) over each of ``dims`` (sorted, normalized), which stay
    with size 1: the backend's one-dim ``reduce`` once per dim. This is the hook a backend offers a
    reduction over several dims in one pass through (``register_fused`` or ``override``: the C Cpu's
    reads the input once, as a bias gradient's sum over N, H, W wants); a replacement may return a
    sum rounded once instead of once per dim, within the conformance tolerance of sums, and must
    give max/min exactly."""
    dev = x.device
    data = x._data
    shape = x.shape
    for d in reversed(dims):
        data = dev.reduce(op, data, d)
        shape = shape[:d] + (1,) + shape[d + 1:]
    return Tensor(data, shape, x.dtype, dev)


def _reduce(op, x, dims, keepdim, out_dtype):
    """Reduce over ``dims`` (sorted): one dim by the backend's ``reduce``, several through the
    ``reduce_dims`` composite; then drop them unless ``keepdim``."""
    dev = x.device
    data = x._data
    shape = x.shape
    if not shape:  # a 0-d tensor reduces to itself
        data = dev.reshape(data, (1,))
        shape = (1,)
        dims = (0,)
        keepdim = False
        out_shape = ()
    else:
        out_shape = tuple(1 if i in dims else s for i, s in enumerate(shape)) if keepdim else \
            tuple(s for i, s in enumerate(shape) if i not in dims)
    if len(dims) > 1 and out_dtype is x.dtype:
        part = reduce_dims(x, op, tuple(dims))
        data, shape = part._data, part.shape
    else:
        for d in reversed(dims):
            data = dev.reduce(op, data, d)
            shape = shape[:d] + (1,) + shape[d + 1:]
    if shape != out_shape:
        data = dev.reshape(data, out_shape)
    return Tensor(data, out_shape, out_dtype, dev)


def alias(dim, axis, op, default=None):
    """``dim``, or numpy's spelling ``axis``, which PyTorch accepts for it too."""
    if axis is None:
        return dim
    if dim is not default:
        raise ArgumentError("%s: expected dim or axis, found both (dim=%r, axis=%r)" % (op, dim, axis))
    return axis


def _accumulating(x, dtype, op):
    """``x`` in the dtype ``op`` accumulates in: ``dtype`` when given (the input is cast first, as
    in PyTorch), else int64 for integer and bool tensors (as torch and numpy do)."""
    if dtype is not None:
        dtype = dtypes.get(dtype, op)
        if dtype is dtypes.bool_:
            raise DTypeError("%s: expected a numeric dtype=, found bool" % op)
        return x.to(dtype)
    if x.dtype.kind != "f" and x.dtype is not dtypes.int64:
        return x.to(dtypes.int64)
    return x


# elements of a narrower int tensor cast to int64 at once by a sum or prod (8 MiB of int64)
ACCUMULATE_CHUNK = 1 << 20


def _accumulate(op, x, dim, keepdim, dtype):
    ds = _dims(dim, len(x.shape), op)
    if dtype is not None or x.dtype.kind == "f" or x.dtype is dtypes.int64 or x.numel() <= ACCUMULATE_CHUNK:
        x = _accumulating(x, dtype, op)
        return _reduce(op, x, ds, keepdim, x.dtype)
    out = _chunked(op, x, ds, ACCUMULATE_CHUNK)
    if not keepdim:
        out = out.reshape(tuple(s for i, s in enumerate(out.shape) if i not in ds))
    return out


def _chunked(op, x, dims, chunk):
    """``op`` over ``dims`` (kept, size 1) of an int or bool ``x``, casting at most ``chunk``
    elements to int64 at a time: pieces along the first dim longer than 1, combined as they come."""
    if x.numel() <= chunk:
        x = _accumulating(x, None, op)
        return _reduce(op, x, dims, True, x.dtype)
    from .movement import cat, narrow
    d = 0
    while x.shape[d] == 1:
        d += 1
    k = max(chunk // numel(x.shape[d + 1:]), 1)
    total, parts = None, []
    for start in range(0, x.shape[d], k):
        part = _chunked(op, narrow(x, d, start, min(k, x.shape[d] - start)), dims, chunk)
        if d not in dims:
            parts.append(part)
        elif total is None:
            total = part
        else:
            total = total + part if op == "sum" else total * part
    return total if d in dims else cat(parts, d)


def sum(x, dim=None, keepdim=False, dtype=None, axis=None):
    """The sum; bool and integer tensors add in int64 (a narrower one a chunk at a time, so a sum
    never holds an int64 copy of the whole tensor), or in ``dtype`` when given."""
    if dtype is not None and dtypes.get(dtype, "sum") is dtypes.bool_:
        return logical("any", x, dim, keepdim, axis)  # a sum in bool is "any", as in PyTorch
    return _accumulate("sum", x, alias(dim, axis, "sum"), keepdim, dtype)


def prod(x, dim=None, keepdim=False, dtype=None, axis=None):
    """The product; integer tensors multiply in int64 as ``sum`` adds, or in ``dtype`` when given."""
    if dtype is not None and dtypes.get(dtype, "prod") is dtypes.bool_:
        return logical("all", x, dim, keepdim, axis)  # a product in bool is "all", as in PyTorch
    return _accumulate("prod", x, alias(dim, axis, "prod"), keepdim, dtype)


def mean(x, dim=None, keepdim=False, dtype=None, axis=None):
    """The mean; integer tensors average in the default float dtype (or ``dtype``, a float)."""
    if dtype is not None:
        dtype = dtypes.get(dtype, "mean")
        if dtype.kind != "f":
            raise DTypeError("mean: expected a float dtype=, found %s" % dtype.name)
        x = x.to(dtype)
    elif x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    ds = _dims(alias(dim, axis, "mean"), len(x.shape), "mean")
    count = numel([x.shape[d] for d in ds]) if x.shape else 1
    return _reduce("sum", x, ds, keepdim, x.dtype) / count


def logical(op, x, dim=None, keepdim=False, axis=None):
    x = x.to(dtypes.bool_)
    return _reduce(op, x, _dims(alias(dim, axis, op), len(x.shape), op), keepdim, dtypes.bool_)


def _nonempty(op, x, dims):
    for d in dims:
        if x.shape and x.shape[d] == 0:
            raise ShapeError("%s: cannot reduce over dim %d of size 0 in shape %s" % (op, d, x.shape))


def extreme(op, x, dim=None, keepdim=False, axis=None):
    """``max``/``min``: over everything a 0-d tensor; over ``dim`` a (values, indices) pair."""
    dim = alias(dim, axis, op)
    if dim is None:
        ds = _dims(None, len(x.shape), op)
        _nonempty(op, x, ds)
        return _reduce(op, x, ds, False, x.dtype)
    ds = (_dim(dim, max(len(x.shape), 1), op),) if x.shape else (0,)
    _nonempty(op, x, ds)
    values = _reduce(op, x, ds, keepdim, x.dtype)
    return ValuesIndices(values, lambda: _reduce("arg" + op, x, ds, keepdim, dtypes.int64))


def arg(op, x, dim=None, keepdim=False, axis=None):
    """``argmax``/``argmin``: the first index of the extreme; over everything, a flat index."""
    dim = alias(dim, axis, op)
    if dim is None:
        flat = x.reshape(-1) if x.shape else x
        _nonempty(op, flat, (0,))
        out = _reduce(op, flat, (0,), False, dtypes.int64)
        if keepdim:
            out = out.reshape((1,) * len(x.shape))
        return out
    ds = (_dim(dim, max(len(x.shape), 1), op),) if x.shape else (0,)
    _nonempty(op, x, ds)
    return _reduce(op, x, ds, keepdim, dtypes.int64)


def var(x, dim=None, unbiased=True, keepdim=False, correction=None, axis=None):
    """Variance over ``dim``; ``correction`` (default 1 when ``unbiased``) is subtracted from the count."""
    if x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    ds = _dims(alias(dim, axis, "var"), len(x.shape), "var")
    if correction is None:
        correction = 1 if unbiased else 0
    count = numel([x.shape[d] for d in ds]) if x.shape else 1
    centered = x - mean(x, ds, keepdim=True) if x.shape else x - x
    total = _reduce("sum", centered * centered, ds, keepdim, x.dtype)
    return total / max(count - correction, 0)


def std(x, dim=None, unbiased=True, keepdim=False, correction=None, axis=None):
    return var(x, alias(dim, axis, "std"), unbiased, keepdim, correction).sqrt()


def logsumexp(x, dim=None, keepdim=False, axis=None):
    """log(sum(exp(x))) over ``dim``, shifted by the max so it neither overflows nor underflows."""
    from .elementwise import where
    if x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    ds = _dims(alias(dim, axis, "logsumexp"), len(x.shape), "logsumexp")
    if not x.shape:
        return x.clone()
    m = x
    for d in reversed(ds):
        m = extreme("max", m, d, True).values if m.shape[d] else m
    m = where(m.isinf(), 0.0, m)  # all -inf (or an inf) rows: no shift, the sum says it
    out = _reduce("sum", (x - m).exp(), ds, True, x.dtype).log() + m
    return out if keepdim else out.reshape(tuple(s for i, s in enumerate(out.shape) if i not in ds))


def _scan(op, x, dim, out_dtype):
    if dim is None:
        raise ArgumentTypeError("%s: expected a dim (an int), found none" % op)
    d = _dim(dim, len(x.shape), op)  # a 0-d tensor takes dim 0 or -1, as in PyTorch
    if not x.shape:
        return Tensor(x.device.reshape(x.device.scan(op, x.device.reshape(x._data, (1,)), 0), ()),
                      (), out_dtype, x.device)
    return Tensor(x.device.scan(op, x._data, d), x.shape, out_dtype, x.device)


def cumsum(x, dim=None, dtype=None, axis=None):
    """Running sums along ``dim`` (``Tensor.cumsum``; ``axis`` spells it too); bool and integers
    accumulate in int64 unless ``dtype`` names another."""
    x = _accumulating(x, dtype, "cumsum")
    return _scan("cumsum", x, alias(dim, axis, "cumsum"), x.dtype)


def cumprod(x, dim=None, dtype=None, axis=None):
    """Running products along ``dim`` (``Tensor.cumprod``; ``axis`` spells it too); bool and
    integers accumulate in int64 unless ``dtype`` names another."""
    x = _accumulating(x, dtype, "cumprod")
    return _scan("cumprod", x, alias(dim, axis, "cumprod"), x.dtype)


def cumextreme(op, x, dim=None, axis=None):
    """``cummax``/``cummin``: running (values, indices) along ``dim``."""
    dim = alias(dim, axis, op)
    return ValuesIndices(_scan(op, x, dim, x.dtype), _scan("cumarg" + op[3:], x, dim, dtypes.int64))


def sort(x, dim=-1, descending=False, stable=False, axis=None):
    """(values, indices) sorted along ``dim``; always stable (``stable`` is accepted for PyTorch's
    spelling); nan last (first when descending)."""
    dim = alias(dim, axis, "sort", -1)
    if not x.shape:
        _dim(dim, 0, "sort")
        from .creation import zeros
        return ValuesIndices(x.clone(), zeros((), dtype=dtypes.int64, device=x.device))
    d = _dim(dim, len(x.shape), "sort")
    v, i = x.device.sort(x._data, d, bool(descending))
    return ValuesIndices(Tensor(v, x.shape, x.dtype, x.device), Tensor(i, x.shape, dtypes.int64, x.device))


def argsort(x, dim=-1, descending=False, stable=False, axis=None):
    """The indices that sort ``x`` along ``dim`` (or ``axis``; always stable; nan last, first when descending)."""
    return sort(x, alias(dim, axis, "argsort", -1), descending).indices


def topk(x, k, dim=-1, largest=True, sorted=True):
    """The ``k`` largest (or smallest) entries along ``dim`` and their indices, in order."""
    from .shapes import dim as _dim
    d = _dim(dim, max(len(x.shape), 1), "topk")
    n = x.shape[d] if x.shape else 1
    if type(k) is not int or k < 0 or k > n:
        raise ShapeError("topk: k must be in [0, %d] for dim %d, found %r" % (n, d, k))
    values, indices = sort(x, d, descending=largest)
    if not x.shape:
        return ValuesIndices(values, indices)
    return ValuesIndices(values.narrow(d, 0, k), indices.narrow(d, 0, k))


def unique(x, sorted=True, return_inverse=False, return_counts=False):
    """The distinct values of ``x`` (flattened), ascending; optional inverse indices and counts.

    Reads the values on the host (a sync point): the output's size depends on the data.
    """
    from .creation import tensor
    flat = x.device.to_list(x._data)
    seen = {}
    nan_count = 0
    for v in flat:
        if v != v:
            nan_count += 1
        else:
            seen[v] = seen.get(v, 0) + 1
    keys = list(seen)
    keys.sort()
    values = keys + [float("nan")] * nan_count  # each nan is distinct, as in torch
    out = [Tensor(x.device.from_list(values, (len(values),), x.dtype), (len(values),), x.dtype, x.device)]
    if return_inverse:
        pos = {}
        for i, k in enumerate(keys):
            pos[k] = i
        inv, nan_at = [], len(keys)
        for v in flat:
            if v != v:
                inv.append(nan_at)
                nan_at += 1
            else:
                inv.append(pos[v])
        out.append(tensor(inv, dtype=dtypes.int64, device=x.device).reshape(x.shape))
    if return_counts:
        counts = [seen[k] for k in keys] + [1] * nan_count
        out.append(tensor(counts, dtype=dtypes.int64, device=x.device))
    return out[0] if len(out) == 1 else tuple(out)


def var_mean(x, dim=None, unbiased=True, keepdim=False, correction=None):
    """``(var, mean)`` over ``dim`` in one call, as ``torch.var_mean``."""
    if x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    return var(x, dim, unbiased, keepdim, correction), mean(x, dim, keepdim)


def std_mean(x, dim=None, unbiased=True, keepdim=False, correction=None):
    """``(std, mean)`` over ``dim`` in one call, as ``torch.std_mean``."""
    v, m = var_mean(x, dim, unbiased, keepdim, correction)
    return v.sqrt(), m


# the largest finite value of each float dtype: clamping a shift to it keeps inf - inf out
_FLOAT_MAX = {"float16": 65504.0, "bfloat16": 3.3895313892515355e38, "float32": 3.4028234663852886e38,
              "float64": 1.7976931348623157e308}


def _logaddexp(a, b):
    """log(exp(a) + exp(b)) without overflow; -inf with -inf stays -inf, nan stays nan. No bool
    masks (they are the slow tensors on the Cpu): the shift is the larger value clamped finite."""
    top = _FLOAT_MAX[a.dtype.name]
    hi, lo = a.maximum(b), a.minimum(b)
    return hi + (lo - hi.clamp(-top, top)).exp().log1p()


def logcumsumexp(x, dim):
    """log(cumsum(exp(x))) along ``dim``, computed stably: a log-space scan of log2(n) steps, each
    adding the running value ``2^k`` places back (no global shift, so small early terms survive)."""
    from .creation import full
    from .movement import cat
    from .shapes import dim as _dim
    if x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    if not x.shape:
        return x.clone()
    d = _dim(dim, len(x.shape), "logcumsumexp")
    n = x.shape[d]
    out = x
    step = 1
    while step < n:
        pad = full(x.shape[:d] + (step,) + x.shape[d + 1:], float("-inf"), dtype=x.dtype, device=x.device)
        out = _logaddexp(out, cat([pad, out.narrow(d, 0, n - step)], d))
        step *= 2
    return out
