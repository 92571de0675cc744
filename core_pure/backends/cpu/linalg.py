"""Batched matmul of the Cpu backend: each output element is one C-speed dot product."""
import math

from ... import dtypes
from . import scalar as S
from .array import CpuArray, numel, values

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
    """(*batch, m, k) @ (*batch, k, n) -> (*batch, m, n); the batch dims are already equal."""
    av, bv = values(a), values(b)
    batch = a.shape[:-2]
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    dot = _dot
    out = []
    for t in range(numel(batch)):
        ab, bb = t * m * k, t * k * n
        cols = [bv[bb + j:bb + k * n:n] for j in range(n)]
        for i in range(m):
            row = av[ab + i * k:ab + (i + 1) * k]
            out += [dot(row, c) for c in cols]
    dtype = a.dtype
    if dtype.kind == "f":
        out = dtypes.round_values(out, dtype)
    else:
        out = dtypes.wrap_int(out, dtype)
    return CpuArray(out, batch + (m, n), dtype)
