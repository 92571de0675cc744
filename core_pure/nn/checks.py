"""Input checks shared by the layers: each raises an ember error naming the layer, what it
expected and what it found (``Linear: expected input of shape (..., 784) (in_features), found (2, 3)``)."""
from ..errors import ArgumentError, ArgumentTypeError, ShapeError
from ..tensor import Tensor


def tensor(x, op, what="input"):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a Tensor %s, found %s" % (op, what, type(x).__name__))
    return x


def features(x, op, size, what):
    """``x`` is a tensor whose last dim is ``size`` (``what`` names the setting, e.g. in_features)."""
    tensor(x, op)
    if not x.shape or x.shape[-1] != size:
        raise ShapeError("%s: expected input of shape (..., %d) (%s), found %s" % (op, size, what, x.shape))
    return x


def ndim(x, op, allowed, layout):
    """``x`` is a tensor with one of the ``allowed`` numbers of dims (``layout`` shows them)."""
    tensor(x, op)
    if len(x.shape) not in allowed:
        raise ShapeError("%s: expected input of shape %s, found %s" % (op, layout, x.shape))
    return x


def size_at(x, op, dim, size, what):
    if x.shape[dim] != size:
        raise ShapeError("%s: expected %s = %d at dim %d, found shape %s" % (op, what, size, dim, x.shape))
    return x


def count(v, op, what, minimum=0):
    """A layer's size setting ``v`` (``what`` names it) is an int >= ``minimum``, checked when the layer
    is built, not at its first call."""
    if type(v) is not int or v < minimum:
        raise ArgumentError("%s: expected %s to be an int >= %d, found %r" % (op, what, minimum, v))
    return v


def counts(v, n, op, what, minimum):
    """An int or ``n`` ints, each >= ``minimum`` (kernel_size, stride, ...), as a tuple."""
    t = (v,) * n if type(v) is int else tuple(v) if type(v) in (tuple, list) else None
    if t is None or len(t) != n or [i for i in t if type(i) is not int or i < minimum]:
        raise ArgumentError("%s: expected %s to be an int or %d ints, each >= %d, found %r"
                            % (op, what, n, minimum, v))
    return t
