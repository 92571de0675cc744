"""Ember tensors as the host buffers MPI reads and writes.

On the Cpu device a contiguous float32/float64/int8/uint8/int32/int64 tensor holds an
``array.array``; on the NumPy device a numpy array. Both export the buffer protocol, so MPI reads
them in place and writes a result straight into the new tensor's storage: no copy. Anything else
(a strided view, bool/float16/bfloat16 lists, Wgpu, a decorator such as Autodiff) passes through a
numpy copy of its values.
"""
import sys
from array import array

import numpy as np

from ember import dtypes
from ember.backend import Decorator
from ember.backends.cpu import Cpu
from ember.backends.cpu.array import CpuArray
from ember.backends.cpu.storage import CODES
from ember.tensor import Tensor

from ember.accel.numpy.device import NumPy
from ember.accel.numpy.interop import from_numpy


_HOST = {dtypes.float32: np.float32, dtypes.float64: np.float64, dtypes.float16: np.float16,
         dtypes.bfloat16: np.float32, dtypes.int8: np.int8, dtypes.uint8: np.uint8, dtypes.int32: np.int32,
         dtypes.int64: np.int64, dtypes.bool_: np.uint8}


def host_dtype(dtype):
    """The numpy dtype ``host`` gives for an ember dtype (bfloat16: float32; bool: uint8)."""
    return np.dtype(_HOST[dtype])


def _cpu_array(t):
    """``t``'s ``array.array`` when MPI can use it as it is, else None."""
    a = t._data
    if isinstance(t.device, Cpu) and type(a) is CpuArray and a.strides is None and type(a.data) is array:
        return a.data
    return None


def host(t):
    """A numpy array over ``t``'s values: ``t``'s own memory on Cpu/NumPy (contiguous), else a copy."""
    data = _cpu_array(t)
    if data is not None:
        return np.frombuffer(data, np.dtype(data.typecode)).reshape(t.shape)
    if isinstance(t.device, NumPy) and t._data.flags.c_contiguous:
        return t._data
    if isinstance(t.device, Decorator):
        t = t.detach() if t.requires_grad else t
    a = np.ascontiguousarray(t.numpy())
    return a.view(np.uint8) if a.dtype == np.bool_ else a


_SPARE = {}  # (device kind, dtype, count) -> storages handed out before, reused once nothing holds them
_SPARE_MIN = 1 << 14  # values; smaller buffers cost less to make than to look up
_SPARE_PER_SIZE = 8


def storage(device, dtype, n):
    """``(storage, view)``: room for ``n`` values of ``dtype`` on the Cpu (an ``array.array``) or
    another device (a numpy array), and a writable flat numpy view of it. A big storage handed
    out before is reused once no tensor holds it any more (a fresh 10 MB buffer costs its page
    faults again at every call)."""
    code = CODES.get(dtype)
    cpu = isinstance(device, Cpu) and code is not None
    key = (cpu, dtype, n)
    spares = _SPARE.get(key) if n >= _SPARE_MIN else None
    data = None
    if spares is not None:
        for held in spares:
            if sys.getrefcount(held) == 3:  # the list, ``held`` and the call's argument: no tensor
                data = held
                break
    if data is None:
        data = array(code, [0]) * n if cpu else np.empty(n, host_dtype(dtype))
        if n >= _SPARE_MIN:
            spares = _SPARE.setdefault(key, [])
            if len(spares) >= _SPARE_PER_SIZE:
                spares.pop(0)
            spares.append(data)
    return data, (np.frombuffer(data, np.dtype(code)) if cpu else data)


def empty_like(t, shape=None):
    """``(storage, recv)``: new storage for a result of ``t``'s dtype and ``shape`` (default
    ``t.shape``) and a writable numpy view of it for MPI to fill."""
    shape = tuple(t.shape) if shape is None else shape
    n = 1
    for s in shape:
        n *= s
    data, flat = storage(t.device, t.dtype, n)
    return data, flat.reshape(shape)


def finish(storage, recv, t):
    """The tensor over what ``empty_like`` gave, on ``t``'s device and of ``t``'s dtype."""
    shape = tuple(recv.shape)
    if type(storage) is array:
        return Tensor(CpuArray(storage, shape, t.dtype), shape, t.dtype, t.device)
    if isinstance(t.device, NumPy) and recv.dtype == host_dtype(t.dtype) and t.dtype is not dtypes.bfloat16:
        return Tensor(recv, shape, t.dtype, t.device)
    if t.dtype is dtypes.bool_:
        recv = recv != 0
    out = from_numpy(recv, t.device)
    return out if out.dtype is t.dtype else out.to(t.dtype)
