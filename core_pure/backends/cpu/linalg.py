"""Batched matmul of the Cpu backend: each output element is one C-speed dot product."""
import math

from . import scalar as S
from .array import CpuArray, flat_indices, numel
from .storage import empty, put, strided

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


def matmul(a, b):
    """(*batch, m, k) @ (*batch, k, n) -> (*batch, m, n); the batch dims are already equal.

    Rows of ``a`` and columns of ``b`` are read through their strides (``x @ w.T`` copies nothing
    first), each once, as lists: an array would box a value again in every dot product reading it.
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
    out = empty(dtype, numel(batch) * m * n)
    at = 0
    for ab, bb in zip(flat_indices(batch, ast[:-2], aoff), flat_indices(batch, bst[:-2], boff)):
        cols = [list(strided(bd, bb + j * tn, k, tk)) for j in range(n)]
        for i in range(m):
            row = list(strided(ad, ab + i * sm, k, sk))
            put(out, dtype, at, [dot(row, c) for c in cols])
            at += n
    return CpuArray(out, batch + (m, n), dtype)
