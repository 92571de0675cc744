"""CpuArray: a flat sequence (an ``array.array`` or a list, see storage.py) seen through a shape,
strides and an offset.

Movement ops return views that share the sequence; every other op reads ``values(a)``, the
row-major contents, which is the sequence itself when the array is contiguous.
"""
from ...shapes import numel, row_major_strides as strides_for
from .storage import STEP_SLICES, copy_into, empty, pack, repeat, strided


class CpuArray:
    __slots__ = ("data", "shape", "dtype", "strides", "offset")

    def __init__(self, data, shape, dtype, strides=None, offset=0):
        self.data = data
        self.shape = shape
        self.dtype = dtype
        self.strides = strides  # None: contiguous from offset 0 over the whole sequence
        self.offset = offset

    def layout(self):
        """(strides, offset), computing the contiguous strides when they were left implicit."""
        if self.strides is None:
            return strides_for(self.shape), 0
        return self.strides, self.offset


def view(a, shape, strides, offset):
    """A view of ``a``'s sequence; stays implicit-contiguous when the layout allows it."""
    if offset == 0 and len(a.data) == numel(shape) and strides == strides_for(shape):
        return CpuArray(a.data, shape, a.dtype)
    return CpuArray(a.data, shape, a.dtype, strides, offset)


def flat_indices(shape, strides, offset):
    """The sequence index of every element, in row-major order."""
    idx = [offset]
    for n, s in zip(shape, strides):
        steps = [s * k for k in range(n)]
        idx = [i + t for i in idx for t in steps]
    return idx


def values(a):
    """The row-major contents of ``a`` as its dtype's storage (``a.data`` itself when contiguous:
    never mutate it)."""
    if a.strides is None:
        return a.data
    shape, strides, data, dtype = a.shape, a.strides, a.data, a.dtype
    if not shape:
        return data[a.offset:a.offset + 1]
    n, s = shape[-1], strides[-1]
    total = numel(shape)
    if s == 1 and strides == strides_for(shape):
        return data[a.offset:a.offset + total]
    if total == 0:
        return empty(dtype, 0)
    if not any(strides):  # one value broadcast (a parameter built under init.skip())
        return repeat(data[a.offset], total, dtype)
    out = empty(dtype, total)
    bases = flat_indices(shape[:-1], strides[:-1], a.offset)
    if s != 0 and type(data) is type(out) and (STEP_SLICES or type(data) is list):
        at = 0
        for b in bases:  # the common case, a stepped slice per row at C speed
            end = b + s * n
            out[at:at + n] = data[b:end if end >= 0 else None:s]
            at += n
        return out
    if s == 0 and STEP_SLICES:
        column = pack([data[b] for b in bases], dtype)
        for k in range(n):  # a broadcast last dim: n stepped writes of all rows' values
            out[k::n] = column
        return out
    at = 0
    for b in bases:
        if s == 0:
            copy_into(out, at, repeat(data[b], n, dtype), dtype)
        else:
            copy_into(out, at, strided(data, b, n, s), dtype)
        at += n
    return out
