"""WArray: a Wgpu tensor's storage, and how each ember dtype is laid out in GPU memory.

A WArray is a view (shape, strides, offset in elements) of a ``Block`` of device memory, like the
Cpu backend's CpuArray over a Python list: movement ops return views sharing the block; kernels
read any view through the strides passed in their parameters. ``strides=None`` marks the common
case: contiguous, row-major, starting at element ``offset`` of the block.

Storage per dtype (WGSL has no 8-bit types and no bool in buffers):

=========  =======================  =====================================================
dtype      stored as                note
=========  =======================  =====================================================
bool       u32 (0 or 1)             4 bytes per element
int8       i32, values in [-128,    every result is wrapped to 8 bits
           127]
uint8      i32, values in [0, 255]  every result is wrapped to 8 bits (``& 255``)
int32      i32
int64      i64                      wgpu's ``shader-int64``; without it, i32 plus a range
                                    check on upload (out-of-range values raise)
float16    f16                      ``shader-f16``; without it, f32 rounded to half values
bfloat16   f32 rounded to bfloat16  rounded to nearest even after every op
float32    f32
float64    f64                      ``shader-f64``; without it, the dtype is unsupported
=========  =======================  =====================================================
"""
from ember import dtypes
from ember.shapes import numel, row_major_strides as contiguous_strides  # noqa: F401 (used by the other modules)


class Storage:
    """How one dtype sits in memory: the WGSL element type, bytes per element, struct code."""

    __slots__ = ("wgsl", "itemsize", "code")

    def __init__(self, wgsl, itemsize, code):
        self.wgsl = wgsl
        self.itemsize = itemsize
        self.code = code


def storage_table(has_f16, has_i64):
    return {
        dtypes.bool_: Storage("u32", 4, "I"),
        dtypes.int8: Storage("i32", 4, "i"),
        dtypes.uint8: Storage("i32", 4, "i"),
        dtypes.int32: Storage("i32", 4, "i"),
        dtypes.int64: Storage("i64", 8, "q") if has_i64 else Storage("i32", 4, "i"),
        dtypes.float16: Storage("f16", 2, "e") if has_f16 else Storage("f32", 4, "f"),
        dtypes.bfloat16: Storage("f32", 4, "f"),
        dtypes.float32: Storage("f32", 4, "f"),
        dtypes.float64: Storage("f64", 8, "d"),
    }


class WArray:
    """A view of a device block: ``shape``, ``strides`` (elements; None: contiguous) and ``offset``
    (elements from the start of the block)."""

    __slots__ = ("block", "shape", "dtype", "strides", "offset", "__weakref__")

    def __init__(self, block, shape, dtype, strides=None, offset=0):
        self.block = block
        self.shape = shape
        self.dtype = dtype
        self.strides = strides
        self.offset = offset

    def layout(self):
        if self.strides is None:
            return contiguous_strides(self.shape), self.offset
        return self.strides, self.offset

    def __repr__(self):
        return "WArray(%s, %s%s)" % (self.dtype.name, self.shape,
                                     "" if self.strides is None else ", strides=%s, offset=%d" % (self.strides, self.offset))


def is_row_major(shape, strides):
    """Whether ``strides`` step through ``shape`` contiguously (size-1 dims may have any stride)."""
    step = 1
    for n, s in zip(reversed(shape), reversed(strides)):
        if n == 0:
            return True
        if n != 1 and s != step:
            return False
        step *= n
    return True


def view(a, shape, strides, offset):
    """A view of ``a``'s block; stays implicit-contiguous when the layout is plain row-major."""
    if is_row_major(shape, strides):
        return WArray(a.block, shape, a.dtype, None, offset)
    return WArray(a.block, shape, a.dtype, strides, offset)


def coalesce(shape, layouts):
    """Merge neighbouring dims that every layout steps through as one (and drop size-1 dims).

    ``layouts``: per operand (strides, offset) over ``shape``. Returns (shape, [strides]) with as
    few dims as possible; a contiguous case comes out 1-D.
    """
    dims = [d for d in range(len(shape)) if shape[d] != 1]
    if not dims:
        return (1,), [(0,) for _ in layouts]
    out_shape = [shape[dims[0]]]
    out_strides = [[st[dims[0]]] for st, _ in layouts]
    for d in dims[1:]:
        n = shape[d]
        merge = True
        for k, (st, _) in enumerate(layouts):
            if out_strides[k][-1] != st[d] * n:
                merge = False
                break
        if merge:
            out_shape[-1] *= n
            for k, (st, _) in enumerate(layouts):
                out_strides[k][-1] = st[d]
        else:
            out_shape.append(n)
            for k, (st, _) in enumerate(layouts):
                out_strides[k].append(st[d])
    return tuple(out_shape), [tuple(s) for s in out_strides]
