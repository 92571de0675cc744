"""How the C-backed Cpu hands arrays to C: typecodes, addresses and strides, and C's results back.

The pure device's storage (storage.py) is kept: float32, float64, int8, int32 and int64 values in an
``array.array`` (typecodes ``f d b i q``), which C reads in place; bool, float16 and bfloat16 in
lists (a bool result of C also keeps its bytes: ``Bools``). A list of another dtype this device
meets (made by another backend) is converted here.

This module imports on MicroPython too; there the kernels are absent and the tables stay empty.
"""
import sys
from array import array

from ... import dtypes
from . import ckernels as _ck
from .array import CpuArray, numel, strides_for
from .pool import fresh as _fresh

_lib, _ffi = _ck.native()
_settings = _ck._state  # "threads" is read on every large call
LITTLE = sys.byteorder == "little"
MAXDIM = 16  # the largest rank the C kernels take

f32, f64, i8, i32, i64, bool_ = (dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32,
                                 dtypes.int64, dtypes.bool_)


def _int32_code():
    for code in ("i", "l"):
        if array(code).itemsize == 4:
            return code
    return None




# dtype -> array typecode for the dtypes stored in arrays (bool travels to C as typecode "B" bytes),
# and dtype -> the kernels' dtype code
CODES = {}
DT = {}

if _lib is not None:  # CPython with the kernels built (MicroPython's array has no itemsize)
    CODES = {f32: "f", f64: "d", i8: "b", i64: "q"}
    if _int32_code():
        CODES[i32] = _int32_code()
    DT = {f32: _lib.EMB_F32, f64: _lib.EMB_F64, i8: _lib.EMB_I8, i32: _lib.EMB_I32, i64: _lib.EMB_I64,
          bool_: _lib.EMB_U8}


def code(dtype):
    """The array typecode C works on for ``dtype`` ("B" for bool), or None."""
    if dtype is bool_:
        return "B"
    return CODES.get(dtype)


class Bools(list):
    """A bool result's values as the device stores bools (a list), with the bytes C wrote them in:
    ``native`` hands those to the next kernel instead of converting the list again, so a captured
    step's bool masks stay C kernel calls (accel/capture/lower_c.py). The list is never written."""
    __slots__ = ("raw",)


def held(a):
    """The buffer ``a`` holds, as C sees it: ``a.data``, or the bytes a bool result keeps (``Bools``)."""
    d = a.data
    return d.raw if type(d) is Bools else d


def native(a):
    """``a.data`` as an array C can read: shared when it already is one (or a ``Bools``' bytes; write
    to neither), else converted."""
    d = a.data
    if type(d) is array:
        return d
    if a.dtype is bool_:
        if type(d) is Bools:
            return d.raw
        return array("B", bytes(d))
    return array(CODES[a.dtype], d)


def operand(a):
    """(buffer, address of a's first element, strides) for a strided read of ``a``."""
    buf = native(a)
    if a.strides is None:
        return buf, buf.buffer_info()[0], strides_for(a.shape)
    return buf, buf.buffer_info()[0] + a.offset * buf.itemsize, a.strides


def q(values):
    """(array('q'), address): the caller keeps the array while C reads the address."""
    arr = array("q", values)
    return arr, arr.buffer_info()[0]


def scalar(code, value):
    """A one-element array holding a Python number for C to read (a captured step keeps it)."""
    return array(code, (value,))


def pointer_table(addresses):
    """An array of addresses for C to read (a kernel over many arrays): a captured step rewrites its
    entries on each replay, so build every such table here."""
    return array("Q", addresses)


def contig(a):
    """``a``'s values row-major, as an array (``a.data`` itself when already contiguous)."""
    if a.strides is None:
        return native(a)
    buf, addr, strides = operand(a)
    shape = a.shape
    n = numel(shape)
    out = _fresh(buf.typecode, n)
    if n:
        sh, sh_addr = q(shape)
        st, st_addr = q(strides)
        dst, dst_addr = q(strides_for(shape))
        _lib.emb_copy_nd(buf.itemsize, len(shape), sh_addr, addr, st_addr, out.buffer_info()[0], dst_addr)
    return out


def result(out, shape, dtype):
    """A CpuArray for C's output buffer (bytes become a list of bools, as bool arrays are stored, which
    keeps the bytes: ``Bools``)."""
    if dtype is bool_:
        values = Bools(map(bool, out))
        values.raw = out
        return CpuArray(values, shape, bool_)
    return CpuArray(out, shape, dtype)


def stored(a):
    """A pure kernel's result in this device's storage (pure results already are, a list from elsewhere is not)."""
    code = CODES.get(a.dtype)
    if code is not None and type(a.data) is list:
        return CpuArray(array(code, a.data), a.shape, a.dtype, a.strides, a.offset)
    return a


def threads():
    return _settings.get("threads", 1)


def small(shape):
    return len(shape) <= MAXDIM

