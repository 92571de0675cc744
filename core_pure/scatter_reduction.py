"""``scatter_reduce``: src values combined into a copy of the input at an index, by sum, prod,
mean, amax or amin (PyTorch's ``include_self`` too). ``sum`` and ``mean`` are scatter adds; the
others have no scatter kernel and go through a dense one-row-per-value form (``_scatter_dense``).
Loaded on first use (``ember.scatter_reduce``, ``Tensor.scatter_reduce``)."""
from . import dtypes
from .errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError
from .indexing import _Slicer, _index_tensor
from .shapes import dim as _dim
from .tensor import Tensor


_SCATTER_REDUCTIONS = ("sum", "prod", "mean", "amax", "amin")


def _check_scatter_args(x, d, index, src, op):
    """``index`` and ``src`` have x's rank and fit inside ``src`` (and ``x`` off dim ``d``)."""
    if len(index.shape) != len(x.shape) or len(src.shape) != len(x.shape):
        raise ShapeError("%s: expected index and src with %d dims, found %s and %s"
                         % (op, len(x.shape), index.shape, src.shape))
    for k in range(len(x.shape)):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > x.shape[k]):
            raise ShapeError("%s: index shape %s exceeds src %s or input %s in dim %d"
                             % (op, index.shape, src.shape, x.shape, k))


def scatter_reduce(x, dim, index, src, reduce, include_self=True):
    """A copy of ``x`` where each ``src`` value at ``index`` along ``dim`` is combined into its
    target by ``reduce`` (``sum``, ``prod``, ``mean``, ``amax``, ``amin``), with the target's own
    value among them when ``include_self``; targets no index names keep ``x``'s value."""
    from .creation import ones, zeros
    from .elementwise import same_device, where
    from .errors import checking
    op = "scatter_reduce"
    if reduce not in _SCATTER_REDUCTIONS:
        raise ArgumentError("%s: reduce must be one of %s, found %r" % (op, ", ".join(_SCATTER_REDUCTIONS), reduce))
    index = _index_tensor(index, op)
    if type(src) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor src, found %s" % (op, type(src).__name__))
    same_device(x, index, op)
    same_device(x, src, op)
    if x.dtype is dtypes.bool_:
        raise DTypeError("%s: expected a float or integer tensor, found bool" % op)
    if not x.shape:
        flat = scatter_reduce(x.reshape(1), 0, index.reshape(-1), src.reshape(-1), reduce, include_self)
        return flat.reshape(())
    d = _dim(dim, len(x.shape), op)
    _check_scatter_args(x, d, index, src, op)
    src = src.to(x.dtype)
    if index.numel() == 0:
        return x.clone()
    for k, s in enumerate(index.shape):
        if src.shape[k] != s:
            src = src.narrow(k, 0, s)
    n = x.shape[d]
    with checking():  # a check only: the values read decide whether to raise
        lo, hi = index.min().item(), index.max().item()
    if lo < 0 or hi >= n:
        raise IndexOutOfRange("%s: index values must be in [0, %d) for dim %d, found %d..%d" % (op, n, d, lo, hi))
    if reduce == "sum" and include_self:
        return x.scatter_add(d, index, src)
    if reduce in ("sum", "mean"):
        counts = zeros(x.shape, dtype=dtypes.int64, device=x.device).scatter_add(
            d, index, ones(index.shape, dtype=dtypes.int64, device=x.device))
        base = x if include_self else where(counts > 0, 0, x).to(x.dtype)
        total = base.scatter_add(d, index, src)
        if reduce == "sum":
            return total
        divisor = (counts + 1 if include_self else counts).clamp(min=1)
        if x.dtype.kind == "f":
            return total / divisor.to(x.dtype)
        return (total // divisor).to(x.dtype)
    return _scatter_dense(x, d, index, src, reduce, include_self, n)


def _scatter_dense(x, d, index, src, reduce, include_self, n):
    """prod/amax/amin without a scatter kernel for them: each src value scattered into its own
    row of n targets along a new last dim (the others hold the reduction's neutral value, so
    memory and time grow with numel(index) * n), reduced over ``d``, and merged into ``x``."""
    from .creation import full, ones, zeros
    from .elementwise import where
    nd = len(x.shape)
    if reduce == "prod":
        fill = 1
    elif x.dtype.kind == "f":
        fill = float("-inf") if reduce == "amax" else float("inf")
    else:  # the smallest (largest) src value is neutral for amax (amin)
        fill = src.min().item() if reduce == "amax" else src.max().item()
    rows = full(index.shape + (n,), fill, dtype=x.dtype, device=x.device)
    rows = rows.scatter(nd, index.unsqueeze(-1), src.unsqueeze(-1))
    if reduce == "prod":
        part = rows.prod(d)
    else:
        part = rows.max(d).values if reduce == "amax" else rows.min(d).values
    part = part.permute(tuple(range(d)) + (nd - 1,) + tuple(range(d, nd - 1)))
    kind = x.dtype if x.dtype.kind == "f" else dtypes.int64
    touched = zeros(x.shape, dtype=kind, device=x.device).scatter_add(
        d, index, ones(index.shape, dtype=kind, device=x.device)) > 0
    region = tuple(n if k == d else s for k, s in enumerate(index.shape))
    whole = region == x.shape
    own = x
    for k, s in enumerate(region):
        if s != x.shape[k]:
            own, touched = own.narrow(k, 0, s), touched.narrow(k, 0, s)
    if include_self:
        part = own * part if reduce == "prod" else own.maximum(part) if reduce == "amax" else own.minimum(part)
    merged = where(touched, part, own).to(x.dtype)
    if whole:
        return merged
    out = x.clone()
    out[tuple(_Slicer()[0:s] for s in region)] = merged
    return out
