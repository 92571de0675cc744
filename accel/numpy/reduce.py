"""Reductions, scans and sorting of the NumPy device along one dim (the reduced dim stays, size 1).

Float sums and products accumulate in float64 and round once, as the Cpu backend does; integer and
bool ones accumulate in int64 (wrapping). ``max``/``min``/``argmax``/``argmin`` propagate nan (the
index of the first nan); ties give the first index.
"""
import numpy as np

from .arrays import BOOL, F32, F64, I64, QUIET, ember_dtype, like, ndarray, plain, reset_state, round_float, set_state

_FOLD = {"sum": np.add.reduce, "prod": np.multiply.reduce, "max": np.maximum.reduce, "min": np.minimum.reduce}


def reduce(op, x, dim):
    """The primitive ``reduce``: ``op`` over ``dim`` (kept, size 1); float sums accumulate in float64 and round once."""
    p = x if type(x) is ndarray else plain(x)
    dt = p.dtype
    token = set_state(QUIET)
    try:
        if op == "sum" or op == "prod":
            fold = _FOLD[op]
            if dt.kind == "f":
                out = fold(p, dim, F64, None, True)
                if dt == F32 and p is x:
                    return out.astype(F32)
                return round_float(out, ember_dtype(x))
            out = fold(p, dim, I64, None, True)
            return out if dt.kind == "b" or dt == I64 else out.astype(dt)
        if op == "max" or op == "min":
            out = _FOLD[op](p, dim, None, None, True)
            return out if p is x else like(out, x)
        if op == "argmax":
            return np.argmax(p, axis=dim, keepdims=True).astype(I64, copy=False)
        if op == "argmin":
            return np.argmin(p, axis=dim, keepdims=True).astype(I64, copy=False)
        if op == "any":
            return np.logical_or.reduce(p, dim, BOOL, None, True)
        if op == "all":
            return np.logical_and.reduce(p, dim, BOOL, None, True)
    finally:
        reset_state(token)
    raise ValueError("reduce: unknown op %r" % (op,))


def _positions(n, dim, ndim):
    return np.arange(n).reshape([n if d == dim else 1 for d in range(ndim)])


def scan(op, x, dim):
    """Inclusive scans: cumsum, cumprod, cummax/cummin and the index where each running extreme was
    reached (ties move it to the later index; a nan, once seen, stays with its first index)."""
    p = plain(x)
    kind = p.dtype.kind
    token = set_state(QUIET)
    try:
        if op == "cumsum" or op == "cumprod":
            f = np.cumsum if op == "cumsum" else np.cumprod
            if kind == "f":
                return round_float(f(p, axis=dim, dtype=F64), ember_dtype(x))
            return f(p, axis=dim, dtype=I64).astype(p.dtype, copy=False)
        fold = np.maximum if op in ("cummax", "cumargmax") else np.minimum
        run = fold.accumulate(p, axis=dim)
        if op == "cummax" or op == "cummin":
            return like(run, x)
        hit = p == run
        if kind == "f":
            nan = p != p
            hit |= nan & (np.cumsum(nan, axis=dim) == 1)
        at = np.where(hit, _positions(p.shape[dim], dim, p.ndim), 0)
        return np.maximum.accumulate(at, axis=dim).astype(I64, copy=False)
    finally:
        reset_state(token)


def sort(x, dim, descending):
    """(values, int64 indices) along ``dim``; stable; nan last ascending and first descending."""
    p = plain(x)
    if descending:
        # a stable ascending sort of the reversed data, reversed again: values descend, equal
        # values (and nans, which come first) keep their original order
        n = p.shape[dim]
        order = np.argsort(np.flip(p, axis=dim), axis=dim, kind="stable")
        idx = (n - 1) - np.flip(order, axis=dim)
    else:
        idx = np.argsort(p, axis=dim, kind="stable")
    idx = idx.astype(I64, copy=False)
    return like(np.take_along_axis(p, idx, axis=dim), x), idx

