"""How the NumPy device stores each ember dtype, and the helpers every kernel shares.

A NumPy-device array is a plain ``numpy.ndarray`` of the dtype's numpy type, with one exception:
numpy has no bfloat16, so a bfloat16 array is a ``BF16`` (an ndarray subclass, no extra state)
holding float32 values that are each exactly a bfloat16 value. Kernels strip the subclass
(``plain``), compute in float32 (or float64), round the result to bfloat16 (``to_bf16``) and
view it as ``BF16`` again, so the marker never leaks into a result of another dtype.
"""
import math

import numpy as np

from ember import dtypes

ndarray = np.ndarray


class BF16(np.ndarray):
    """float32 storage whose values are all bfloat16 values (rounded to nearest even)."""


# ember dtype -> numpy dtype of the storage
NP = {
    dtypes.bool_: np.dtype(np.bool_),
    dtypes.int8: np.dtype(np.int8),
    dtypes.uint8: np.dtype(np.uint8),
    dtypes.int32: np.dtype(np.int32),
    dtypes.int64: np.dtype(np.int64),
    dtypes.float16: np.dtype(np.float16),
    dtypes.bfloat16: np.dtype(np.float32),
    dtypes.float32: np.dtype(np.float32),
    dtypes.float64: np.dtype(np.float64),
}
# numpy dtype -> ember dtype (bfloat16 is recognised by the BF16 type, not the dtype)
EMBER = {}
for _e, _n in NP.items():
    if _e is not dtypes.bfloat16:
        EMBER[_n] = _e
# little-endian layouts of to_bytes/from_bytes (safetensors'), bfloat16 handled apart
LE = {
    dtypes.bool_: np.dtype("u1"),
    dtypes.int8: np.dtype("i1"),
    dtypes.uint8: np.dtype("u1"),
    dtypes.int32: np.dtype("<i4"),
    dtypes.int64: np.dtype("<i8"),
    dtypes.float16: np.dtype("<f2"),
    dtypes.float32: np.dtype("<f4"),
    dtypes.float64: np.dtype("<f8"),
}

F16 = NP[dtypes.float16]
F32 = NP[dtypes.float32]
F64 = NP[dtypes.float64]
I64 = NP[dtypes.int64]
BOOL = NP[dtypes.bool_]


def ember_dtype(a):
    """The ember dtype a NumPy-device array holds."""
    if type(a) is BF16:
        return dtypes.bfloat16
    return EMBER[a.dtype]


def plain(a):
    """``a`` as a plain ndarray (a view without the BF16 marker; numpy scalars become 0-d arrays)."""
    t = type(a)
    if t is ndarray:
        return a
    if t is BF16:
        return a.view(ndarray)
    return np.asarray(a)


def as_array(a):
    """ufuncs give numpy scalars for 0-d inputs; every primitive returns arrays."""
    if type(a) is ndarray:
        return a
    return np.asarray(a)


# -- floating-point exceptions -------------------------------------------------------------------
# ember follows IEEE (x / 0 is inf, log(0) is -inf) and integer x // 0 == 0 without warnings.
# np.errstate costs about 1 us per use; numpy 2 keeps the state in a context variable, and setting
# that variable to a prepared "ignore everything" state costs about 0.1 us. Both forms are
# thread- and asyncio-safe, and the caller's own error state is restored after every kernel.
try:
    from numpy._core.umath import _extobj_contextvar as _ERRSTATE, _make_extobj

    QUIET = _make_extobj(all="ignore")
    set_state = _ERRSTATE.set  # token = set_state(QUIET) ... reset_state(token)
    reset_state = _ERRSTATE.reset
except ImportError:  # pragma: no cover - another numpy layout: the public, slower form
    QUIET = None

    def set_state(_):
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def reset_state(state):
        state.__exit__(None, None, None)


# -- rounding to a dtype -------------------------------------------------------------------------

def to_bf16(a32):
    """Plain float32 ``a32`` rounded to bfloat16 (nearest even, nan stays nan), as a new BF16."""
    a32 = np.asarray(a32, dtype=F32)
    b = a32.view(np.uint32)
    # no uint32 overflow: only nan bit patterns are above 0xFF800000 - 0x8000
    r = (b + ((b >> 16) & 1) + 0x7FFF) & 0xFFFF0000
    nan = a32 != a32
    if nan.any():
        r = np.where(nan, (b & 0xFFFF0000) | 0x00400000, r)
    return np.asarray(r, dtype=np.uint32).view(F32).view(BF16)


def bf16_bits(a):
    """The 16-bit patterns of a BF16 array (as safetensors stores bfloat16), row-major uint16."""
    a32 = np.ascontiguousarray(plain(a), dtype=F32)
    b = a32.view(np.uint32)
    r = (b + ((b >> 16) & 1) + 0x7FFF) >> 16
    nan = a32 != a32
    if nan.any():
        r = np.where(nan, (b >> 16) | 0x40, r)
    return r.astype("<u2")


def bits_to_bf16(u16):
    """bfloat16 bit patterns (uint16) as a BF16 array of their exact float32 values."""
    return (np.asarray(u16).astype(np.uint32) << 16).view(F32).view(BF16)


def round_float(a, dtype):
    """A float64 or float32 result ``a`` rounded into the float dtype ``dtype`` as the Cpu backend
    rounds it: to float32 first, then to float16 or bfloat16 (round to nearest even each time);
    too large values become inf, without a warning."""
    if dtype is dtypes.float64:
        return as_array(a) if a.dtype == F64 else np.asarray(a, dtype=F64)
    token = set_state(QUIET)
    try:
        a32 = a.astype(F32, copy=False) if type(a) is ndarray else np.asarray(a, dtype=F32)
        if dtype is dtypes.float32:
            return a32
        if dtype is dtypes.float16:
            return a32.astype(F16)
        return to_bf16(a32)
    finally:
        reset_state(token)


def from_float(a, dtype):
    """Cast a plain float array to any ember dtype: ints truncate (nan and inf give 0) and wrap."""
    if dtype.kind == "f":
        return round_float(a, dtype)
    if dtype.kind == "b":
        return a != 0
    target = NP[dtype]
    a = np.asarray(a, dtype=F64)
    shape = a.shape
    token = set_state(QUIET)
    try:
        t = np.trunc(a.reshape(-1))  # 1-D: a 0-d input would give a numpy scalar
        t[~np.isfinite(t)] = 0.0
        big = np.abs(t) >= 9223372036854775808.0
        if big.any():
            # beyond int64: the value modulo 2**64 (fmod of integral floats is exact)
            w = np.fmod(t[big], 18446744073709551616.0)
            w = np.where(w >= 9223372036854775808.0, w - 18446744073709551616.0, w)
            w = np.where(w < -9223372036854775808.0, w + 18446744073709551616.0, w)
            t[big] = w
        out = t.astype(I64).reshape(shape)
    finally:
        reset_state(token)
    return out if target == I64 else out.astype(target)


# -- Python lists in -----------------------------------------------------------------------------

def _wrap_python_ints(flat, dtype):
    return np.array(dtypes.round_values(flat, dtype), dtype=NP[dtype])


def from_values(flat, dtype):
    """A 1-D array of ``dtype`` from Python numbers (or a numpy array), rounded as the Cpu backend
    rounds them: floats through float32, ints truncated and wrapped, bool as truth values."""
    kind = dtype.kind
    if kind == "f":
        if dtype is dtypes.float64:
            return np.array(flat, dtype=F64)
        token = set_state(QUIET)
        try:
            try:
                a32 = np.array(flat, dtype=F32)
            except OverflowError:  # an int beyond float64: the Cpu backend's own rounding raises too
                return round_float(np.array(dtypes.round_values(flat, dtypes.float64), dtype=F64), dtype)
            if dtype is dtypes.float32:
                return a32
            if dtype is dtypes.float16:
                return a32.astype(F16)
            return to_bf16(a32)
        finally:
            reset_state(token)
    if kind == "b":
        return np.array(flat, dtype=BOOL)
    a = np.asarray(flat)
    k = a.dtype.kind
    if k == "i" or k == "b":
        return a.astype(NP[dtype], copy=False)
    if k == "u":  # numpy's choice for ints in [2**63, 2**64): the same bits wrap into int64
        return a.astype(I64).astype(NP[dtype], copy=False)
    if k == "f":
        if type(flat) is not ndarray and a.size and np.abs(a[np.isfinite(a)]).max(initial=0.0) >= 2.0 ** 53:
            return _wrap_python_ints(list(flat), dtype)  # big Python ints mixed with floats: exact
        return from_float(a, dtype)
    return _wrap_python_ints(list(flat), dtype)


def full(shape, value, dtype):
    """The primitive ``full``: ``np.full`` of ``value`` rounded to ``dtype`` (-0.0 keeps its sign)."""
    v = dtypes.round_values([value], dtype)[0]
    if dtype is dtypes.bfloat16:
        return np.full(shape, v, dtype=F32).view(BF16)
    if not v and (type(v) is not float or math.copysign(1.0, v) > 0):  # -0.0 keeps its sign
        return np.zeros(shape, dtype=NP[dtype])
    return np.full(shape, v, dtype=NP[dtype])


def like(out, x):
    """``out`` carrying ``x``'s BF16 marker when ``x`` has it (numpy drops it in some functions)."""
    if type(x) is BF16 and type(out) is not BF16:
        return out.view(BF16)
    return out
