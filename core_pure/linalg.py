"""Matrix products: 1-D, 2-D and batched with broadcasting, PyTorch's rules."""
from . import dtypes
from .composite import CAST_POLICY
from .elementwise import broadcast_to, same_device
from .errors import ArgumentTypeError, DTypeError, ShapeError
from .shapes import broadcast_shapes
from .tensor import Tensor


def matmul(a, b):
    """``a @ b``. 1-D operands are treated as a row (left) or column (right) and that dim is dropped."""
    if type(a) is not Tensor or type(b) is not Tensor:
        raise ArgumentTypeError("matmul: expected two tensors, found %s and %s"
                                % (type(a).__name__, type(b).__name__))
    dev = same_device(a, b, "matmul")
    if CAST_POLICY:  # ember.accel.autocast: matmul runs in its low-precision dtype
        (a, b), _ = CAST_POLICY[0]("matmul", (a, b), None)
    if not a.shape or not b.shape:
        raise ShapeError("matmul: expected tensors with at least 1 dim, found shapes %s and %s"
                         % (a.shape, b.shape))
    dtype = dtypes.promote(a.dtype, b.dtype)
    if dtype is dtypes.bool_:
        raise DTypeError("matmul: expected float or integer tensors, found bool")
    if a.dtype is not dtype:
        a = a.to(dtype)
    if b.dtype is not dtype:
        b = b.to(dtype)
    a2 = a.reshape(1, a.shape[0]) if len(a.shape) == 1 else a
    b2 = b.reshape(b.shape[0], 1) if len(b.shape) == 1 else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        raise ShapeError("matmul: expected a.shape[-1] == b.shape[-2], found %s @ %s" % (a.shape, b.shape))
    batch = broadcast_shapes(a2.shape[:-2], b2.shape[:-2], "matmul")
    pa = broadcast_to(a2, batch + (m, k))
    pb = broadcast_to(b2, batch + (k, n))
    out = Tensor(dev.matmul(pa, pb), batch + (m, n), dtype, dev)
    if len(a.shape) == 1 and len(b.shape) == 1:
        return out.reshape(())
    if len(a.shape) == 1:
        return out.reshape(batch + (n,))
    if len(b.shape) == 1:
        return out.reshape(batch + (m,))
    return out


def diagonal(x, offset=0, dim1=0, dim2=1):
    """The diagonal of ``x`` over ``dim1`` and ``dim2`` (above it for ``offset > 0``), as a new last
    dim; both dims are removed: ``diagonal(ones(2, 3, 4), 0, 1, 2).shape == (2, 3)``."""
    from .shapes import dim as _dim
    if type(x) is not Tensor:
        raise ArgumentTypeError("diagonal: expected a tensor, found %s" % type(x).__name__)
    if type(offset) is not int:
        raise ArgumentTypeError("diagonal: expected an int offset, found %s" % type(offset).__name__)
    nd = len(x.shape)
    if nd < 2:
        raise ShapeError("diagonal: expected at least 2 dims, found shape %s" % (x.shape,))
    d1, d2 = _dim(dim1, nd, "diagonal"), _dim(dim2, nd, "diagonal")
    if d1 == d2:
        raise ShapeError("diagonal: dim1 and dim2 must differ, found %d and %d" % (dim1, dim2))
    rest = [d for d in range(nd) if d != d1 and d != d2]
    m, n = x.shape[d1], x.shape[d2]
    length = max(0, min(m, n - offset) if offset >= 0 else min(m + offset, n))
    lead = tuple(x.shape[d] for d in rest)
    # the (m, n) plane flattened: entry (i, i + offset) sits at a stride of n + 1
    flat = x.permute(tuple(rest) + (d1, d2)).reshape(lead + (m * n,))
    start = offset if offset >= 0 else -offset * n
    if length == 0:
        start = 0
    ranges = tuple((0, s, 1) for s in lead) + ((start, start + (length - 1) * (n + 1) + 1 if length else 0, n + 1),)
    return Tensor(x.device.slice(flat._data, ranges), lead + (length,), x.dtype, x.device)


_diagonal = diagonal  # diag's argument is called diagonal, as in PyTorch


def diag(x, diagonal=0):
    """A 1-D ``x`` as the ``diagonal``-th diagonal of a square matrix (zeros elsewhere); a 2-D
    ``x``'s ``diagonal``-th diagonal as a 1-D tensor, as ``torch.diag`` does."""
    from .creation import zeros
    from .movement import cat
    if type(x) is not Tensor:
        raise ArgumentTypeError("diag: expected a tensor, found %s" % type(x).__name__)
    if type(diagonal) is not int:
        raise ArgumentTypeError("diag: expected an int diagonal, found %s" % type(diagonal).__name__)
    if len(x.shape) == 2:
        return _diagonal(x, diagonal, 0, 1)
    if len(x.shape) != 1:
        raise ShapeError("diag: expected a 1-D or 2-D tensor, found shape %s" % (x.shape,))
    n = x.shape[0]
    k = abs(diagonal)
    size = n + k
    # rows [v_i, 0 * size] read back size-wide put v_i at (i, i); then pad to (size, size)
    rows = cat([x.reshape(n, 1), zeros(n, size, dtype=x.dtype, device=x.device)], 1)
    square = rows.reshape(n * (size + 1)).narrow(0, 0, n * size).reshape(n, size) if n else \
        zeros(0, size, dtype=x.dtype, device=x.device)
    if k == 0:
        return square
    pad = zeros(k, size, dtype=x.dtype, device=x.device)
    if diagonal > 0:  # (i, i + k): move the diagonal right by k columns, add k rows below
        square = cat([zeros(n, k, dtype=x.dtype, device=x.device), square.narrow(1, 0, n)], 1)
        return cat([square, pad], 0)
    return cat([pad, square], 0)  # (i + k, i): k rows above
