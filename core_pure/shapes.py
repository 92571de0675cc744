"""Shape arithmetic shared by the frontend ops: broadcasting, dims, sizes."""
from .errors import ArgumentTypeError, IndexOutOfRange, ShapeError


def numel(shape):
    """The number of elements of a tensor of ``shape`` (1 for ``()``)."""
    n = 1
    for s in shape:
        n *= s
    return n


def row_major_strides(shape):
    """Element strides of a contiguous row-major layout of ``shape``."""
    strides = []
    step = 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    strides.reverse()
    return tuple(strides)


def conv_out_size(size, kernel, stride, pad, dilation):
    """Output length of a convolution or pooling window along one dim; ``pad`` is (before, after)."""
    return (size + pad[0] + pad[1] - dilation * (kernel - 1) - 1) // stride + 1


def broadcast_shapes(a, b, op):
    """The shape ``a`` and ``b`` broadcast to, or a ShapeError naming both."""
    if a == b:
        return a
    na, nb = len(a), len(b)
    n = max(na, nb)
    a1 = (1,) * (n - na) + tuple(a)
    b1 = (1,) * (n - nb) + tuple(b)
    out = []
    for x, y in zip(a1, b1):
        if x == y or y == 1:
            out.append(x)
        elif x == 1:
            out.append(y)
        else:
            raise ShapeError("%s: shapes %s and %s cannot broadcast: expected equal dims or a 1, found %d and %d"
                             % (op, tuple(a), tuple(b), x, y))
    return tuple(out)


def dim(d, ndim, op):
    """``d`` as a dim in ``range(ndim)``, accepting negative dims as Python does."""
    if type(d) is not int:
        raise ArgumentTypeError("%s: expected an int dim, found %s" % (op, type(d).__name__))
    lo = -ndim if ndim else -1
    hi = ndim - 1 if ndim else 0
    if d < lo or d > hi:
        raise IndexOutOfRange("%s: dim %d is out of range for a tensor with %d dims (expected %d..%d)"
                              % (op, d, ndim, lo, hi))
    return d % ndim if ndim else 0


def dims(ds, ndim, op):
    """A sorted tuple of distinct dims from an int, a tuple/list of ints, or None (all dims)."""
    if ds is None:
        return tuple(range(ndim))
    if type(ds) is int:
        return (dim(ds, ndim, op),)
    if type(ds) not in (tuple, list):
        raise ArgumentTypeError("%s: expected an int, a tuple of ints or None as dim, found %s" % (op, type(ds).__name__))
    out = sorted(set(dim(d, ndim, op) for d in ds))
    if len(out) != len(ds):
        from .errors import ArgumentError
        raise ArgumentError("%s: expected distinct dims, found %s" % (op, tuple(ds)))
    return tuple(out)


def size_args(size, op):
    """``zeros(2, 3)`` and ``zeros((2, 3))`` both mean shape (2, 3)."""
    if len(size) == 1 and type(size[0]) in (tuple, list):
        size = size[0]
    for s in size:
        if type(s) is not int:
            raise ArgumentTypeError("%s: expected int sizes, found %s" % (op, type(s).__name__))
        if s < 0:
            raise ShapeError("%s: expected sizes >= 0, found %s" % (op, tuple(size)))
    return tuple(size)
