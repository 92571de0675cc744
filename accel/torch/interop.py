"""Exchange between ember tensors and torch tensors, without copies where both sides can share.

- ``from_torch(t)``: onto the Torch device of ``t``'s own torch device (the default) the ember
  tensor **shares** ``t``'s memory (any strides, any torch device): later writes to ``t`` show in
  the tensor, as with ``torch.from_numpy``; pass ``t.clone()`` to avoid that. ``t``'s autograd graph
  is not followed (``t.detach()``). Onto another ember device the values are copied.
- ``to_torch(x)``: on a Torch device, the tensor's own torch tensor (no copy: treat it as read-only,
  since ember tensors are values and other tensors may share it); elsewhere a new CPU tensor.
- ``torch.from_dlpack(x)``, ``np.asarray(x)``, ``x.numpy()`` on a Torch tensor: DLPack export of
  its memory (CUDA memory stays on the GPU), and a read-only numpy view of Torch("cpu") memory.
"""
import torch

from ember import dtypes
from ember import interop as _interop
from ember.backend import Backend
from ember.errors import ArgumentTypeError, DTypeError
from ember.tensor import Tensor

from .arrays import EMBER, SUPPORTED, from_bytes
from .device import Torch

try:  # numpy's hooks go first, so that the wrappers below see them (numpy is optional)
    from ember.accel.numpy import interop as _np_interop  # noqa: F401
except ImportError:
    _np_interop = None


def from_torch(t, device=None):
    """An ember tensor holding torch tensor ``t``'s values: shared on the Torch device of ``t``'s
    torch device (``device=None``, or that same Torch device), copied onto any other ember device.

    >>> x = ember.accel.from_torch(torch.arange(6.0).reshape(2, 3))
    >>> x.device
    Torch('cpu')
    """
    if not isinstance(t, torch.Tensor):
        raise ArgumentTypeError("from_torch: expected a torch.Tensor, found %s" % type(t).__name__)
    dtype = EMBER.get(t.dtype)
    if dtype is None:
        raise DTypeError("from_torch: expected a torch tensor of %s, found %s%s" % (SUPPORTED, t.dtype, _hint(t.dtype)))
    if device is not None and not isinstance(device, Backend):
        raise ArgumentTypeError("from_torch: expected a device such as ember.accel.Torch(\"cuda\"), found %r" % (device,))
    if t.is_conj() or t.is_neg():
        t = t.resolve_conj().resolve_neg()
    data = t.detach()
    shape = tuple(data.shape)
    own = Torch(data.device) if device is None else device
    if isinstance(own, Torch) and own.device == data.device:
        return Tensor(data, shape, dtype, own)
    buf = Torch(data.device).to_bytes(data)
    return Tensor(own.from_bytes(buf, shape, dtype), shape, dtype, own)


def _hint(dt):
    if dt.is_complex:
        return " (ember has no complex dtype; use t.real and t.imag)"
    if dt.is_floating_point:
        return " (convert first, e.g. t.float())"
    return " (convert first, e.g. t.to(torch.int32))"


def to_torch(x):
    """``x``'s values as a torch tensor: its own memory on a Torch device (no copy), else a new CPU tensor."""
    if type(x) is not Tensor:
        raise ArgumentTypeError("to_torch: expected an ember.Tensor, found %s" % type(x).__name__)
    if isinstance(x.device, Torch):
        return x._data
    buf = x.device.to_bytes(x._data)
    return from_bytes(buf, x.shape, x.dtype, torch.device("cpu"))


# -- the core's interop hooks for Torch tensors; every other device keeps numpy's ----------------

def _numpy(t):
    a = t._data.detach()
    if a.dtype is torch.bfloat16:
        a = a.float()  # numpy has no bfloat16: the same values in float32, a copy
    a = a.cpu().numpy()
    if t.device.device.type == "cpu" and t.dtype is not dtypes.bfloat16:
        a = a.view()
        a.flags.writeable = False  # a view of the tensor's memory: ember tensors are values
    return a


def _array(t, dtype=None, copy=None):
    a = _numpy(t)
    shared = t.device.device.type == "cpu" and t.dtype is not dtypes.bfloat16
    if copy is False and not shared:
        raise ValueError("__array__: a %s tensor on %r has no numpy memory to share; a copy is needed"
                         % (t.dtype.name, t.device))
    if dtype is not None and a.dtype != _np_dtype(dtype):
        if copy is False:
            raise ValueError("__array__: a %s tensor cannot be viewed as %s without a copy" % (t.dtype.name, dtype))
        return a.astype(dtype)
    return a.copy() if copy else a


def _np_dtype(dtype):
    import numpy  # only reached from numpy's own calls: numpy is there
    return numpy.dtype(dtype)


def _dlpack(t, stream=None, **kwargs):
    return t._data.detach().__dlpack__(stream=stream, **kwargs)


def _dlpack_device(t):
    return t._data.__dlpack_device__()


def _on_torch(mine, name):
    previous = _interop._hooks.get(name)

    def hook(t, *args, **kwargs):
        if isinstance(t.device, Torch):
            return mine(t, *args, **kwargs)
        if previous is None:
            raise ImportError("%s: numpy is needed for a tensor on %r (pip install ember[numpy])" % (name, t.device))
        return previous(t, *args, **kwargs)
    return hook


_interop.register(numpy=_on_torch(_numpy, "numpy"), array=_on_torch(_array, "array"),
                  dlpack=_on_torch(_dlpack, "dlpack"), dlpack_device=_on_torch(_dlpack_device, "dlpack_device"))
