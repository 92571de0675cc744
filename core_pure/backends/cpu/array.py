"""CpuArray: a flat Python list seen through a shape, strides and an offset.

Movement ops return views that share the list; every other op reads ``values(a)``, the
row-major contents, which is the list itself when the array is contiguous.
"""
from ...shapes import numel, row_major_strides as strides_for


class CpuArray:
    __slots__ = ("data", "shape", "dtype", "strides", "offset")

    def __init__(self, data, shape, dtype, strides=None, offset=0):
        self.data = data
        self.shape = shape
        self.dtype = dtype
        self.strides = strides  # None: contiguous from offset 0 over the whole list
        self.offset = offset

    def layout(self):
        """(strides, offset), computing the contiguous strides when they were left implicit."""
        if self.strides is None:
            return strides_for(self.shape), 0
        return self.strides, self.offset


def view(a, shape, strides, offset):
    """A view of ``a``'s list; stays implicit-contiguous when the layout allows it."""
    if offset == 0 and len(a.data) == numel(shape) and strides == strides_for(shape):
        return CpuArray(a.data, shape, a.dtype)
    return CpuArray(a.data, shape, a.dtype, strides, offset)


def flat_indices(shape, strides, offset):
    """The list index of every element, in row-major order."""
    idx = [offset]
    for n, s in zip(shape, strides):
        steps = [s * k for k in range(n)]
        idx = [i + t for i in idx for t in steps]
    return idx


def values(a):
    """The row-major contents of ``a`` as a list (``a.data`` itself when contiguous: never mutate it)."""
    if a.strides is None:
        return a.data
    shape, strides, data = a.shape, a.strides, a.data
    if not shape:
        return [data[a.offset]]
    n, s = shape[-1], strides[-1]
    if s == 1 and strides == strides_for(shape):
        return data[a.offset:a.offset + numel(shape)]
    bases = flat_indices(shape[:-1], strides[:-1], a.offset)
    out = []
    if n == 0 or not bases:
        return out
    if s == 0:
        for b in bases:
            out += [data[b]] * n
    elif s > 0:
        for b in bases:
            out += data[b:b + s * n:s]
    else:
        for b in bases:
            end = b + s * n
            out += data[b:end if end >= 0 else None:s]
    return out

