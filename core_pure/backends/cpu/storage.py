"""What holds each dtype's values on the Cpu backend, and how kernels fill their outputs.

float32, float64, int8, uint8, int32 and int64 live in an ``array.array`` (4, 8, 1, 1, 4 and 8 bytes a value;
a list costs a pointer plus, on MicroPython, a boxed float: ~19 bytes a float32 on a board). bool,
float16 and bfloat16 stay lists of Python values: ``tolist()`` must give bools, and the 16-bit floats
would need a bit conversion on every read ('H' storage), for dtypes boards rarely use.

Kernels never grow their output: they preallocate it (``empty``) and fill it ``CHUNK`` values at a
time, so the temporaries a kernel makes stay small and the heap of a board does not fragment.
"""
import sys
from array import array

from ... import dtypes


def _itemsize(code):
    return len(bytes(array(code, [0])))  # MicroPython's array has no itemsize


def _int32_code():
    for code in ("i", "l"):  # "i" is 16-bit on some boards
        if _itemsize(code) == 4:
            return code
    return None


def _has(code):
    try:
        array(code, [0])
    except (ValueError, TypeError):  # a MicroPython build without long ints has no "q"
        return False
    return True


CODES = {dtypes.float32: "f", dtypes.float64: "d", dtypes.int8: "b", dtypes.uint8: "B"}
if _int32_code() is not None:
    CODES[dtypes.int32] = _int32_code()
if _has("q") and _itemsize("q") == 8:
    CODES[dtypes.int64] = "q"
ITEMSIZE = {}
for _code in CODES.values():
    ITEMSIZE[_code] = _itemsize(_code)
RAW = sys.byteorder == "little"  # arrays hold safetensors' byte layout as they are

# MicroPython's arrays have no repetition (array * n) and no stepped slices; CPython's have both
_REPEATS = True
try:
    array("b", [0]) * 2
except TypeError:
    _REPEATS = False
STEP_SLICES = True
try:
    array("b", [0, 0])[::2]
except NotImplementedError:
    STEP_SLICES = False

# values a kernel makes between two writes into its output: bounded temporaries on a board, few
# Python-level steps on CPython
CHUNK = 256 if sys.implementation.name == "micropython" else 4096

_ZERO = {dtypes.bool_: False, dtypes.float16: 0.0, dtypes.bfloat16: 0.0}


def empty(dtype, n):
    """Storage for ``n`` values of ``dtype``, for a kernel to overwrite (its contents are unspecified)."""
    code = CODES.get(dtype)
    if code is None:
        return [_ZERO.get(dtype, 0)] * n
    if _REPEATS:
        return array(code, [0]) * n
    # MicroPython: an array of known length filled from range() needs no temporary, where
    # bytes(n * size) would double the peak for a moment (int8 slots wrap, and are overwritten)
    return array(code, range(n))


def pack(values, dtype):
    """A kernel's results (the dtype's kind: floats for a float dtype, ints for an int dtype) as
    ``dtype`` stores them: rounded (``array('f')`` rounds to float32 on store, as
    ``dtypes.round_values`` does), wrapped, or as they are."""
    code = CODES.get(dtype)
    if code is None:
        if dtype.kind == "f":
            return dtypes.round_values(values, dtype)
        if dtype.kind == "i":
            return dtypes.wrap_int(values, dtype)
        return values
    if dtype.kind == "i":
        values = dtypes.wrap_int(values, dtype)  # CPython's array raises on overflow, MicroPython's wraps
    return array(code, values)


def convert(values, dtype):
    """Any Python numbers as ``dtype`` stores them (the rules of ``dtypes.round_values``)."""
    code = CODES.get(dtype)
    if code is None or dtype.kind != "f":
        values = dtypes.round_values(values, dtype)
        return values if code is None else array(code, values)
    return array(code, values)


def put(out, dtype, start, values):
    """Write the kernel results ``values`` (see ``pack``) into ``out`` from ``start`` on."""
    out[start:start + len(values)] = pack(values, dtype)


def put_converted(out, dtype, start, values):
    """Write any Python numbers into ``out`` from ``start`` on (see ``convert``)."""
    out[start:start + len(values)] = convert(values, dtype)


def copy_into(out, start, seq, dtype):
    """Write stored values ``seq`` into ``out`` from ``start`` on (a list meets an array as one)."""
    if type(seq) is not type(out):
        seq = pack(list(seq), dtype) if type(out) is array else list(seq)
    out[start:start + len(seq)] = seq


def build(dtype, n, part):
    """Storage of ``n`` values of ``dtype``; ``part(i, j)`` returns the results for ``[i, j)`` as a
    list, asked for ``CHUNK`` values at a time."""
    if n <= CHUNK:
        return pack(part(0, n), dtype)
    out = empty(dtype, n)
    for i in range(0, n, CHUNK):
        j = i + CHUNK if i + CHUNK < n else n
        out[i:j] = pack(part(i, j), dtype)
    return out


def repeat(value, n, dtype):
    """Storage of ``n`` copies of the stored value ``value``."""
    code = CODES.get(dtype)
    if code is None:
        return [value] * n
    if _REPEATS:
        return array(code, [value]) * n
    out = empty(dtype, n)
    if n:
        out[0] = value
        done = memoryview(out)  # (a view: the copies below make no temporaries)
        k = 1
        while k < n:  # doubling copies: log2(n) slice writes at C speed
            m = k if k < n - k else n - k
            out[k:k + m] = done[0:m]
            k += m
    return out


def strided(seq, start, n, step):
    """``n`` values of ``seq`` from ``start`` on, ``step`` apart (a list, or a slice of ``seq``)."""
    if step == 1:
        return seq[start:start + n]
    if step == 0:
        return [seq[start]] * n
    if STEP_SLICES or type(seq) is list:
        end = start + step * n
        return seq[start:end if end >= 0 else None:step]
    return [seq[start + k * step] for k in range(n)]


def from_raw(buf, dtype):
    """Storage for the little-endian bytes ``buf`` when the host's layout is the file's, else None."""
    code = CODES.get(dtype)
    if code is None or not RAW or ITEMSIZE[code] != dtype.itemsize:
        return None
    if hasattr(array, "frombytes"):
        out = array(code)
        out.frombytes(buf)
        return out
    if type(buf) is not bytes and type(buf) is not bytearray:
        buf = bytes(buf)
    return array(code, buf)  # MicroPython initialises an array from raw bytes


def raw(seq, dtype):
    """The little-endian bytes of stored values, when an array holds them in that layout, else None."""
    code = CODES.get(dtype)
    if code is None or not RAW or ITEMSIZE[code] != dtype.itemsize or type(seq) is not array:
        return None
    return bytes(seq)
