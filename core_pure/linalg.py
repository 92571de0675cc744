"""Matrix products: 1-D, 2-D and batched with broadcasting, PyTorch's rules."""
from . import dtypes
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
