"""The C-backed Cpu's output buffers: a pool that hands out an array again once nothing else holds it.

Making an array of n elements writes all of them (array * n), a pass as costly as a cheap kernel.
For large outputs the pool keeps a few arrays per size and hands one out again once nothing but the
pool refers to it (its reference count says so), as PyTorch's allocator reuses freed blocks. Every
caller overwrites the whole buffer. Off where reference counts cannot be trusted for this (no
sys.getrefcount, a free-threaded build, or the self-check below failing) and with EMBER_C_POOL=0.

This module imports on MicroPython too (the test runner imports every module); there the kernels
are absent and nothing here runs.
"""
import sys
from array import array

from . import ckernels as _ck

ZEROS = {}  # typecode -> array of one zero, repeated to make a buffer
if _ck.native()[0] is not None:  # CPython with the kernels built
    for _c in ("f", "d", "b", "i", "l", "q", "B"):
        ZEROS[_c] = array(_c, [0])

POOL_MIN = 1 << 15  # elements
_POOL_PER_SIZE = 8
_POOL_BYTES = 64 << 20
_pool = {}
_pool_state = {"bytes": 0, "base": None}


def _take(free, base):
    for arr in free:
        if sys.getrefcount(arr) == base:
            return arr
    return None


def _pool_calibrate():
    if not hasattr(sys, "getrefcount") or _ck._env("EMBER_C_POOL") == "0":
        return None
    gil = getattr(sys, "_is_gil_enabled", None)
    if gil is not None and not gil():
        return None
    free = [array("B", b"\0")]
    for base in range(1, 8):
        if _take(free, base) is not None:
            extra = free[0]
            held = _take(free, base)
            del extra
            if held is None and _take(free, base) is free[0]:
                return base
            return None
    return None


def fresh(code, n):
    """An array of n elements whose contents the caller overwrites completely."""
    if n < POOL_MIN or _pool_state["base"] is None:
        return ZEROS[code] * n
    key = (code, n)
    free = _pool.get(key)
    if free is not None:
        arr = _take(free, _pool_state["base"])
        if arr is not None:
            return arr
    arr = ZEROS[code] * n
    size = n * arr.itemsize
    if _pool_state["bytes"] + size <= _POOL_BYTES and (free is None or len(free) < _POOL_PER_SIZE):
        if free is None:
            free = _pool[key] = []
        free.append(arr)
        _pool_state["bytes"] += size
    return arr


def reuse(free, code, n, keep=4):
    """An array of n elements from ``free``, a caller's own list, that nothing but the list holds
    any more, or a new one (kept in the list while it holds fewer than ``keep``). A captured step's
    results use it: each replay's results take their buffers along, and a buffer comes back once the
    tensors over it are gone."""
    base = _pool_state["base"]
    if base is not None:
        arr = _take(free, base)
        if arr is not None:
            return arr
    arr = ZEROS[code] * n
    if base is not None and len(free) < keep:
        free.append(arr)
    return arr


def release_buffers():
    """Drop the output arrays this device keeps for reuse (they are freed once unused)."""
    _pool.clear()
    _pool_state["bytes"] = 0



if ZEROS:
    _pool_state["base"] = _pool_calibrate()
