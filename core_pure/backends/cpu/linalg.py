"""Batched matmul of the Cpu backend: each output element is one C-speed dot product."""
import math

from . import scalar as S
from .array import CpuArray, flat_indices, numel
from . import storage
from .storage import empty, pack, put, strided

if hasattr(math, "sumprod"):  # CPython 3.12+: one call, compensated accumulation
    _dot = math.sumprod
elif S.INLINE is None:
    _mul = S.mul

    def _dot(a, b):
        return sum(map(_mul, a, b))
else:  # MicroPython: a plain loop beats map with a lambda about 3x
    def _dot(a, b):
        s = 0
        for x, y in zip(a, b):
            s += x * y
        return s


def _listed(seq):
    return seq if type(seq) is list else list(seq)


def matmul(a, b):
    """(*batch, m, k) @ (*batch, k, n) -> (*batch, m, n); the batch dims are already equal.

    Rows of ``a`` and columns of ``b`` are read through their strides (``x @ w.T`` copies nothing
    first), each once, as lists: an array would box a value again in every dot product reading it.
    Result rows collect in a block of about ``CHUNK`` values, written into the output when full.
    """
    batch = a.shape[:-2]
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    dtype = a.dtype
    dot = _dot
    (ast, aoff), (bst, boff) = a.layout(), b.layout()
    sm, sk = ast[-2], ast[-1]
    tk, tn = bst[-2], bst[-1]
    ad, bd = a.data, b.data
    rows = numel(batch) * m
    per = storage.CHUNK // n if n else rows
    per = per if per > 1 else 1
    whole = rows <= per
    out = None if whole else empty(dtype, rows * n)
    block = [0] * ((rows if whole else per) * n)
    done, filled = 0, 0  # rows written into out, rows waiting in block
    for ab, bb in zip(flat_indices(batch, ast[:-2], aoff), flat_indices(batch, bst[:-2], boff)):
        if tn == 1 and tk == n:  # a contiguous b: one list, its columns as stepped list slices
            flat = list(bd[bb:bb + k * n])
            cols = [flat[j::n] for j in range(n)]
        else:
            cols = [_listed(strided(bd, bb + j * tn, k, tk)) for j in range(n)]
        for i in range(m):
            at = ab + i * sm
            row = list(ad[at:at + k]) if sk == 1 else _listed(strided(ad, at, k, sk))
            block[filled * n:(filled + 1) * n] = [dot(row, c) for c in cols]
            filled += 1
            if filled == per and not whole:
                put(out, dtype, done * n, block)
                done, filled = done + per, 0
    if whole:
        return CpuArray(pack(block, dtype), batch + (m, n), dtype)
    if filled:
        put(out, dtype, done * n, block[:filled * n])
    return CpuArray(out, batch + (m, n), dtype)
