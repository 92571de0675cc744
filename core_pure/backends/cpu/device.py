"""``ember.Cpu()``: the pure-Python device, wiring the contract's primitives to this folder's kernels."""
import struct

from ... import dtypes
from ...backend import Backend
from . import conv as _conv
from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from .array import CpuArray, numel, values


class Cpu(Backend):
    """The pure-Python CPU device: runs everywhere ember runs, and defines ember's semantics.

    >>> ember.zeros(2, 3, device=ember.Cpu())
    """

    name = "Cpu"

    # data in and out
    def from_list(self, flat, shape, dtype):
        return CpuArray(dtypes.round_values(flat, dtype), tuple(shape), dtype)

    def full(self, shape, value, dtype):
        return CpuArray(dtypes.round_values([value], dtype) * numel(shape), tuple(shape), dtype)

    def to_list(self, a):
        return list(values(a))

    def from_bytes(self, buf, shape, dtype):
        n = numel(shape)
        code = dtype.code or "H"
        flat = list(struct.unpack("<%d%s" % (n, code if code != "e" else "H"), buf))
        if dtype is dtypes.float16:
            flat = [dtypes.f16_bits_to_float(h) for h in flat]
        elif dtype is dtypes.bfloat16:
            flat = [dtypes.bf16_bits_to_float(h) for h in flat]
        elif dtype is dtypes.bool_:
            flat = [bool(v) for v in flat]
        return CpuArray(flat, tuple(shape), dtype)

    def to_bytes(self, a):
        flat = values(a)
        dtype = a.dtype
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
