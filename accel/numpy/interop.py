"""Exchange between ember tensors and numpy arrays, PyTorch tensors and anything speaking DLPack.

What is shared and what is copied (docs/interop.md has the table):

- ``Tensor.numpy()`` / ``np.asarray(t)``: on the NumPy device a **read-only view** of the tensor's
  memory (no copy; ember tensors are values, so the view cannot be written). On any other device a
  new, writable array (a copy). ``np.array(t)`` and ``np.asarray(t, copy=True)`` always copy.
- ``from_numpy(a)``: onto the NumPy device (the default) the tensor **shares** ``a``'s memory, as
  ``torch.from_numpy`` does: later writes to ``a`` show in the tensor. Onto another device, a copy.
- ``from_dlpack(x)``: numpy arrays, PyTorch CPU tensors and other DLPack exporters; shared onto
  the NumPy device where numpy can hold the dtype, copied otherwise (PyTorch bfloat16, other devices).
- ``t.__dlpack__()`` (``torch.from_dlpack(t)``, ``np.from_dlpack(t)``): the NumPy device exports
  its memory, marked read-only for consumers that read DLPack 1.0 flags; other devices export a copy.

bfloat16: numpy has no such dtype. ``t.numpy()`` gives float32 (the same values, exactly); DLPack
export of a bfloat16 tensor raises ``BufferError`` (convert with ``t.float()``).
"""
import sys

import numpy as np

from ember import dtypes
from ember import interop as _interop
from ember.errors import ArgumentError, ArgumentTypeError, DTypeError
from ember.tensor import Tensor

from .arrays import EMBER, LE, bits_to_bf16, ndarray
from .device import NumPy

_KDL_CPU = 1
_SUPPORTED = "bool, int8, uint8, int32, int64, float16, float32 or float64"


def _on_numpy(t):
    return isinstance(t.device, NumPy)


def _host_copy(t):
    """A new, writable numpy array with ``t``'s values (any device; a sync point)."""
    buf = t.device.to_bytes(t._data)
    dtype = t.dtype
    if dtype is dtypes.bfloat16:
        out = np.array(bits_to_bf16(np.frombuffer(buf, "<u2")).view(ndarray))
    elif dtype is dtypes.bool_:
        out = np.frombuffer(buf, np.uint8) != 0
    else:
        out = np.frombuffer(buf, LE[dtype]).astype(LE[dtype].newbyteorder("="))
    return out.reshape(t.shape)


def _readonly_view(a):
    v = a.view(ndarray)
    v.flags.writeable = False
    return v


def to_numpy(t):
    """``t``'s values as a numpy array: a read-only view on the NumPy device, else a new array.

    bfloat16 tensors give float32 arrays holding the same values.
    """
    if type(t) is not Tensor:
        raise ArgumentTypeError("numpy: expected an ember.Tensor, found %s" % type(t).__name__)
    if _on_numpy(t):
        return _readonly_view(t._data)
    return _host_copy(t)


def array_protocol(t, dtype=None, copy=None):
    """``Tensor.__array__`` with numpy 2's ``copy`` rule: None shares when it can, True always copies,
    False never copies (``ValueError`` where a copy is needed)."""
    shared = _on_numpy(t)
    if copy is False and not shared:
        raise ValueError("__array__: a tensor on %r has no numpy memory to share; a copy is needed "
                         "(use np.asarray(t) or t.numpy())" % (t.device,))
    a = to_numpy(t)
    if dtype is not None and np.dtype(dtype) != a.dtype:
        if copy is False:
            raise ValueError("__array__: a %s tensor cannot be viewed as %s without a copy"
                             % (t.dtype.name, np.dtype(dtype)))
        return a.astype(dtype)
    if copy and shared:
        return a.copy()
    return a


def dlpack(t, stream=None, **kwargs):
    """``Tensor.__dlpack__``: the NumPy device's memory (read-only to DLPack 1.0 consumers), or a copy."""
    if t.dtype is dtypes.bfloat16:
        raise BufferError("__dlpack__: numpy cannot export bfloat16; convert first (t.float())")
    if _on_numpy(t):
        a = t._data.view(ndarray)
        if any(s < 0 for s in a.strides):
            a = np.ascontiguousarray(a)  # negative strides: some consumers (torch) cannot take them
        view = _readonly_view(a)
        try:
            return view.__dlpack__(stream=stream, **kwargs)
        except BufferError:
            # a consumer of DLPack < 1.0 cannot be told "read-only": it gets a copy instead
            if kwargs.get("copy") is False:
                raise
            return np.array(a).__dlpack__(stream=stream, **kwargs)
    return _host_copy(t).__dlpack__(stream=stream, **kwargs)


def dlpack_device(t):
    """``Tensor.__dlpack_device__``: ember exports host memory, ``(kDLCPU, 0)``."""
    return (_KDL_CPU, 0)


def _device(device, op):
    if device is None:
        return NumPy()
    from ember.backend import Backend
    if not isinstance(device, Backend):
        raise ArgumentTypeError("%s: expected a device such as ember.accel.NumPy(), found %r" % (op, device))
    return device


def _wrap(a, dtype, device):
    """A tensor over numpy array ``a`` of ember ``dtype``: shared on the NumPy device, else copied."""
    shape = tuple(int(s) for s in a.shape)
    if isinstance(device, NumPy):
        return Tensor(a, shape, dtype, device)
    if dtype is dtypes.bfloat16:
        flat = a.view(ndarray).ravel().tolist()
        return Tensor(device.from_list(flat, shape, dtype), shape, dtype, device)
    if dtype is dtypes.bool_:
        buf = a.astype(np.uint8).tobytes()
    else:
        buf = np.asarray(a, dtype=LE[dtype]).tobytes()
    return Tensor(device.from_bytes(buf, shape, dtype), shape, dtype, device)


def from_numpy(a, device=None):
    """A tensor holding numpy array ``a``'s values.

    On the NumPy device (``device=None``) the tensor shares ``a``'s memory: no copy, and later
    writes to ``a`` show in the tensor (as with ``torch.from_numpy``); pass ``a.copy()`` to avoid
    that. On any other device the values are copied. Any strides are fine. Non-native byte order
    is converted (a copy). Dtypes: bool, int8, uint8, int32, int64, float16, float32, float64; anything
    else is a ``DTypeError`` (convert first, e.g. ``a.astype(np.int32)``).
    """
    if isinstance(a, np.generic):
        a = np.asarray(a)
    if not isinstance(a, ndarray):
        raise ArgumentTypeError("from_numpy: expected a numpy.ndarray, found %s" % type(a).__name__)
    dev = _device(device, "from_numpy")
    if type(a) is not ndarray:
        a = np.asarray(a)  # subclasses (np.matrix, ...): their data as a plain array
        if type(a) is not ndarray:
            a = a.view(ndarray)
    dtype = EMBER.get(a.dtype)
    if dtype is None:
        native = a.dtype.newbyteorder("=") if a.dtype.byteorder not in ("=", "|") else None
        if native is not None and native in EMBER:
            a = a.astype(native)
            dtype = EMBER[native]
        else:
            raise DTypeError("from_numpy: expected a numpy array of %s, found %s%s"
                             % (_SUPPORTED, a.dtype, _hint(a.dtype)))
    return _wrap(a, dtype, dev)


def _hint(dt):
    kind = dt.kind
    if kind == "u" or (kind == "i" and dt.itemsize == 2):
        return " (convert first, e.g. a.astype(np.int32))"
    if kind == "c":
        return " (ember has no complex dtype; use a.real and a.imag)"
    if kind == "f":
        return " (convert first, e.g. a.astype(np.float64))"
    return ""


def _torch_bf16(x):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor) and x.dtype == torch.bfloat16


def from_dlpack(x, device=None):
    """A tensor from any DLPack exporter on the CPU: numpy arrays, PyTorch tensors, ember tensors.

    On the NumPy device (``device=None``) the memory is shared where numpy can hold the dtype
    (writes through the source show in the tensor); PyTorch bfloat16 is copied (numpy has no
    bfloat16). On other devices the values are copied.
    """
    if type(x) is Tensor:
        return x.to(_device(device, "from_dlpack"))
    if isinstance(x, ndarray):
        return from_numpy(x, device)
    if not hasattr(x, "__dlpack__"):
        raise ArgumentTypeError("from_dlpack: expected an object with __dlpack__ (a numpy array, a PyTorch "
                                "tensor, ...), found %s" % type(x).__name__)
    dev = _device(device, "from_dlpack")
    if _torch_bf16(x):
        torch = sys.modules["torch"]
        bits = _import(x.detach().view(torch.int16)).view(np.uint16)
        return _wrap(bits_to_bf16(bits).reshape(bits.shape), dtypes.bfloat16, dev)
    return from_numpy(_import(x), dev)


def _import(x):
    try:
        return np.from_dlpack(x)
    except (BufferError, RuntimeError, TypeError, ValueError) as e:
        where = ""
        if hasattr(x, "__dlpack_device__"):
            try:
                kind, index = x.__dlpack_device__()
                if int(kind) != _KDL_CPU:
                    where = " (the data lives on DLPack device %s:%s; move it to the CPU first, e.g. x.cpu())" \
                        % (int(kind), int(index))
            except Exception:  # noqa: BLE001 - only for the message
                pass
        raise ArgumentError("from_dlpack: could not import %s: %s%s" % (type(x).__name__, e, where)) from e



# Tensor.numpy(), np.asarray(t) and DLPack export reach these through the core's hook (ember.interop).
_interop.register(numpy=to_numpy, array=array_protocol, dlpack=dlpack, dlpack_device=dlpack_device)
