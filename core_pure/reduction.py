"""Reductions over a dim, a tuple of dims or everything, with ``keepdim``."""
from collections import namedtuple

from . import dtypes
from .errors import ShapeError
from .shapes import dims as _dims, numel
from .tensor import Tensor

ValuesIndices = namedtuple("ValuesIndices", ("values", "indices"))


def _reduce(op, x, dims, keepdim, out_dtype):
    """Apply the backend's one-dim ``reduce`` over each of ``dims`` (sorted), then drop them."""
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
    for d in reversed(dims):
        data = dev.reduce(op, data, d)
        shape = shape[:d] + (1,) + shape[d + 1:]
    if shape != out_shape:
        data = dev.reshape(data, out_shape)
    return Tensor(data, out_shape, out_dtype, dev)


def _accumulating(x):
    # integer and bool sums count in int64, as torch and numpy do
    if x.dtype.kind != "f" and x.dtype is not dtypes.int64:
        return x.to(dtypes.int64)
    return x


def sum(x, dim=None, keepdim=False):
    x = _accumulating(x)
    return _reduce("sum", x, _dims(dim, len(x.shape), "sum"), keepdim, x.dtype)


def prod(x, dim=None, keepdim=False):
    x = _accumulating(x)
    return _reduce("prod", x, _dims(dim, len(x.shape), "prod"), keepdim, x.dtype)


def mean(x, dim=None, keepdim=False):
    """The mean; integer tensors average in the default float dtype."""
    if x.dtype.kind != "f":
        x = x.to(dtypes.default_float)
    ds = _dims(dim, len(x.shape), "mean")
    count = numel([x.shape[d] for d in ds]) if x.shape else 1
    return _reduce("sum", x, ds, keepdim, x.dtype) / count


def logical(op, x, dim=None, keepdim=False):
    x = x.to(dtypes.bool_)
    return _reduce(op, x, _dims(dim, len(x.shape), op), keepdim, dtypes.bool_)


def _nonempty(op, x, dims):
    for d in dims:
        if x.shape and x.shape[d] == 0:
            raise ShapeError("%s: cannot reduce over dim %d of size 0 in shape %s" % (op, d, x.shape))


def extreme(op, x, dim=None, keepdim=False):
    """``max``/``min``: over everything a 0-d tensor; over ``dim`` a (values, indices) pair."""
    if dim is None:
        ds = _dims(None, len(x.shape), op)
        _nonempty(op, x, ds)
        return _reduce(op, x, ds, False, x.dtype)
    ds = _dims(dim, len(x.shape), op)
    _nonempty(op, x, ds)
    values = _reduce(op, x, ds, keepdim, x.dtype)
    indices = _reduce("arg" + op, x, ds, keepdim, dtypes.int64)
    return ValuesIndices(values, indices)


def arg(op, x, dim=None, keepdim=False):
    """``argmax``/``argmin``: the first index of the extreme; over everything, a flat index."""
    if dim is None:
        flat = x.reshape(-1) if x.shape else x
        _nonempty(op, flat, (0,))
        out = _reduce(op, flat, (0,), False, dtypes.int64)
        if keepdim:
            out = out.reshape((1,) * len(x.shape))
        return out
    ds = _dims(dim, len(x.shape), op)
    _nonempty(op, x, ds)
    return _reduce(op, x, ds, keepdim, dtypes.int64)
