"""``ember.Cpu()``: the pure-Python device, wiring the contract's primitives to this folder's kernels."""
import struct

from ... import dtypes
from ...backend import Backend
from . import conv as _conv
from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from . import storage
from .array import CpuArray, numel, values

_C_CLASS = []  # [class or None], decided on the first ember.Cpu()


def _c_device_class(kernels):
    """The C-backed Cpu class for ``kernels`` None (when available and allowed) or "c" (required)."""
    if kernels is not None and kernels != "c":
        from ...errors import ArgumentError
        raise ArgumentError("Cpu: kernels must be 'c' or 'python', found %r" % (kernels,))
    if not _C_CLASS:
        from . import ckernels
        try:
            _C_CLASS.append(ckernels.device_class())
        except ImportError:
            _C_CLASS.append(None)
    impl = _C_CLASS[0]
    if kernels == "c":
        if impl is None:
            from . import ckernels
            raise ImportError("Cpu(kernels='c'): the C kernels are unavailable: %s" % ckernels.reason())
        return impl
    if impl is not None:
        from . import ckernels
        if ckernels.disabled():
            return None
    return impl


class Cpu(Backend):
    """The CPU device: runs everywhere ember runs, and defines ember's semantics.

    ``ember.Cpu()`` runs its hot primitives in C when ``ember._ckernels`` (built from ``ext_c/``)
    loads, unless ``EMBER_NO_C=1`` is set; ``Cpu(kernels="python")`` is always the pure-Python
    device, ``Cpu(kernels="c")`` requires the C kernels. Both kinds are the same device: they compare
    equal and their tensors meet in one op.

    >>> ember.zeros(2, 3, device=ember.Cpu())
    """

    name = "Cpu"
    kernels = "python"  # "c" on the C-backed subclass

    def __new__(cls, kernels=None):
        if cls is Cpu and kernels != "python":
            impl = _c_device_class(kernels)
            if impl is not None:
                return object.__new__(impl)
        return object.__new__(cls)

    def __init__(self, kernels=None):
        pass

    # data in and out
    def from_list(self, flat, shape, dtype):
        """The primitive ``from_list``: row-major Python numbers as an array of ``shape``, rounded to ``dtype``."""
        return CpuArray(storage.convert(flat, dtype), tuple(shape), dtype)

    def full(self, shape, value, dtype):
        """The primitive ``full``: an array of ``shape`` holding ``value`` in ``dtype``."""
        return CpuArray(storage.repeat(storage.convert([value], dtype)[0], numel(shape), dtype), tuple(shape),
                        dtype)

    def to_list(self, a):
        """The primitive ``to_list``: the values as a flat row-major list of Python numbers."""
        return list(values(a))

    def from_bytes(self, buf, shape, dtype):
        """The primitive ``from_bytes``: little-endian values (safetensors' layout) as an array."""
        data = storage.from_raw(buf, dtype)
        if data is not None:
            return CpuArray(data, tuple(shape), dtype)
        n = numel(shape)
        code = dtype.code or "H"
        flat = list(struct.unpack("<%d%s" % (n, code if code != "e" else "H"), buf))
        if dtype is dtypes.float16:
            flat = [dtypes.f16_bits_to_float(h) for h in flat]
        elif dtype is dtypes.bfloat16:
            flat = [dtypes.bf16_bits_to_float(h) for h in flat]
        elif dtype is dtypes.bool_:
            flat = [bool(v) for v in flat]
        return CpuArray(storage.pack(flat, dtype), tuple(shape), dtype)

    def to_bytes(self, a):
        """The primitive ``to_bytes``: the values little-endian, row-major (the inverse of ``from_bytes``)."""
        flat = values(a)
        dtype = a.dtype
        data = storage.raw(flat, dtype)
        if data is not None:
            return data
        if dtype is dtypes.float16:
            return struct.pack("<%dH" % len(flat), *[dtypes.f32_to_f16_bits(v) for v in flat])
        if dtype is dtypes.bfloat16:
            return struct.pack("<%dH" % len(flat), *[dtypes.f32_to_bf16_bits(v) for v in flat])
        return struct.pack("<%d%s" % (len(flat), dtype.code), *flat)

    # movement: views where the layout allows (see array.py)
    reshape = staticmethod(_mv.reshape)
    permute = staticmethod(_mv.permute)
    expand = staticmethod(_mv.expand)
    slice = staticmethod(_mv.slice_)
    slice_assign = staticmethod(_mv.slice_assign)
    cat = staticmethod(_mv.cat)

    # elementwise
    unary = staticmethod(_ew.unary)
    binary = staticmethod(_ew.binary)
    where = staticmethod(_ew.where)
    cast = staticmethod(_ew.cast)

    # reductions, linear algebra, nn, indexing
    reduce = staticmethod(_reduce.reduce)
    scan = staticmethod(_reduce.scan)
    sort = staticmethod(_reduce.sort)
    matmul = staticmethod(_linalg.matmul)
    conv = staticmethod(_conv.conv)
    pool = staticmethod(_conv.pool)
    gather = staticmethod(_mv.gather)
    scatter = staticmethod(_mv.scatter)
