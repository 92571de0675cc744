"""Reductions, scans and sorting of the Torch device along one dim (the reduced dim stays, size 1).

Float sums and products accumulate in float64 and round once, as the Cpu backend does; integer and
bool ones accumulate in int64 (wrapping). ``max``/``min``/``argmax``/``argmin`` propagate nan (the
index of the first nan); ties give the first index.
"""
import torch

from .arrays import BOOL, F64, I64, round_float


def reduce(op, x, dim):
    """The primitive ``reduce``: ``op`` over ``dim`` (kept, size 1)."""
    if op == "sum" or op == "prod":
        f = torch.sum if op == "sum" else torch.prod
        if x.is_floating_point():
            return round_float(f(x, dim, keepdim=True, dtype=F64), x.dtype)
        out = f(x, dim, keepdim=True, dtype=I64)
        return out if x.dtype is BOOL or x.dtype is I64 else out.to(x.dtype)
    if op == "max":
        return torch.amax(x, dim, keepdim=True)
    if op == "min":
        return torch.amin(x, dim, keepdim=True)
    if op == "argmax" or op == "argmin":
        return _arg(op, x, dim)
    if op == "any":
        return torch.any(x, dim, keepdim=True)
    if op == "all":
        return torch.all(x, dim, keepdim=True)
    raise ValueError("reduce: unknown op %r" % (op,))


def _arg(op, x, dim):
    """torch's argmax/argmin: the first index of the extreme, the first nan's where there is one."""
    if x.dtype is BOOL:
        x = x.to(torch.uint8)
    f = torch.argmax if op == "argmax" else torch.argmin
    return f(x, dim, keepdim=True)


def scan(op, x, dim):
    """Inclusive scans: cumsum, cumprod, cummax/cummin and the index where each running extreme was
    reached (ties move it to the later index; a nan, once seen, stays with its first index)."""
    if op == "cumsum" or op == "cumprod":
        f = torch.cumsum if op == "cumsum" else torch.cumprod
        if x.is_floating_point():
            return round_float(f(x, dim, dtype=F64), x.dtype)
        return f(x, dim, dtype=I64).to(x.dtype)
    src = x.to(torch.uint8) if x.dtype is BOOL else x
    fold = torch.cummax if op in ("cummax", "cumargmax") else torch.cummin
    run = fold(src, dim)[0]
    if op == "cummax" or op == "cummin":
        return run if src is x else run.to(BOOL)
    hit = src == run
    if x.is_floating_point():
        nan = torch.isnan(x)
        hit = hit | (nan & (torch.cumsum(nan.to(I64), dim) == 1))
    n = x.shape[dim]
    pos = torch.arange(n, device=x.device).reshape([n if d == dim else 1 for d in range(x.dim())])
    at = torch.where(hit, pos, 0)
    return torch.cummax(at, dim)[0]


def sort(x, dim, descending):
    """(values, int64 indices) along ``dim``; stable; nan last ascending and first descending."""
    src = x.to(torch.uint8) if x.dtype is BOOL else x
    values, idx = torch.sort(src, dim=dim, descending=descending, stable=True)
    return (values if src is x else values.to(BOOL)), idx
