"""PyTorch's top-level helpers whose work lives in ``ember.accel`` (CPython): ``ember.no_grad``,
``ember.from_numpy`` and ``ember.as_tensor``. Each imports its layer on first use, so ``import
ember`` stays light; on a board ``no_grad`` changes nothing (nothing records gradients there) and
numpy is missing, which ``from_numpy`` says."""
from .errors import ArgumentError, ArgumentTypeError

_found = []


def _accel_no_grad():
    if not _found:
        try:
            from ember.accel.autodiff import no_grad as found
        except ImportError:
            found = None
        _found.append(found)
    return _found[0]


class no_grad:
    """``with ember.no_grad():`` — ops inside record no gradient; ``@ember.no_grad()`` (or
    ``@ember.no_grad``) makes every call of a function do so. On CPython this is
    ``ember.accel.no_grad`` (per thread); where no device records gradients it changes nothing.

    >>> with ember.no_grad():
    ...     pred = model(x).argmax(1)
    """

    def __new__(cls, fn=None):
        impl = _accel_no_grad()
        if impl is not None:
            return impl() if fn is None else impl(fn)
        if fn is not None:  # @no_grad without parentheses, and nothing records: the function itself
            return fn
        return object.__new__(cls)

    def __call__(self, fn):
        if not callable(fn):
            raise ArgumentTypeError("no_grad: decorates a function, found %s" % type(fn).__name__)
        return fn

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


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
