"""The top-level names ``ember`` loads on first use: ``no_grad``, ``from_numpy``, ``as_tensor``.
The first two live in ``ember.accel`` (CPython); a board gets a ``no_grad`` that
records nothing because nothing records there, and a clear error for numpy."""
from .errors import ArgumentError, ArgumentTypeError


def _accel_no_grad():
    try:
        from ember.accel.autodiff import no_grad as found
    except ImportError:
        return None
    return found


class _NoGrad:
    """``with ember.no_grad():`` or ``@ember.no_grad()`` where no device records gradients (a board
    without ``ember.accel``): it changes nothing."""

    def __init__(self, fn=None):
        self._fn = fn

    def __call__(self, *args, **kwargs):
        if self._fn is not None:  # @no_grad without parentheses: this object is the function
            return self._fn(*args, **kwargs)
        if len(args) != 1 or kwargs or not callable(args[0]):
            raise ArgumentTypeError("no_grad: decorates one function")
        return args[0]

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


no_grad = _accel_no_grad() or _NoGrad


def from_numpy(a, device=None):
    """A tensor sharing ``a``'s memory where it can (``ember.accel.from_numpy``; CPython with numpy)."""
    try:
        from ember.accel.numpy import from_numpy as f
    except ImportError as e:
        raise ArgumentError("from_numpy: needs numpy and ember.accel (CPython): %s" % (e,))
    return f(a, device)


def as_tensor(data, dtype=None, device=None):
    """``data`` as a tensor, copying only when needed (``torch.as_tensor``): a tensor itself when
    it already has this dtype and device, a numpy array shared through ``from_numpy`` where it
    can be, anything else through ``ember.tensor``.

    >>> ember.as_tensor([1, 2, 3], dtype=ember.float32)
    """
    from .tensor import Tensor
    if type(data) is Tensor:
        out = data
    elif hasattr(data, "__array_interface__") and hasattr(data, "dtype"):
        out = from_numpy(data, device)
    else:
        from .creation import tensor
        return tensor(data, dtype=dtype, device=device)
    if device is not None or dtype is not None:
        out = out.to(device=device, dtype=dtype)
    return out
