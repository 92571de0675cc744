"""Movement and indexing primitives of the Torch device.

``reshape``, ``permute``, ``expand`` and positive-step ``slice`` are torch views (device.py binds
torch's own methods). torch has no negative-step view, so a negative step flips that dim (a copy).
``slice_assign`` and ``scatter`` always return a new tensor: the input may be shared by other
ember tensors (value semantics).
"""
import torch

from . import checks
from .arrays import F64, round_float


def slice_(x, ranges):
    """The primitive ``slice``: a view of the region ``ranges``, a flipped copy for negative steps."""
    index = []
    for d, (start, stop, step) in enumerate(ranges):
        if step < 0:
            n = x.shape[d]
            count = len(range(start, stop, step))
            x = x.flip(d)
            start = n - 1 - start
            step = -step
            stop = start + count * step
        index.append(slice(start, stop, step))
    return x[tuple(index)]


def slice_assign(x, ranges, value):
    """The primitive ``slice_assign``: a new tensor, ``x`` with the region ``ranges`` replaced by ``value``."""
    out = x.clone()
    index = []
    flips = []
    for d, (start, stop, step) in enumerate(ranges):
        if step < 0:
            count = len(range(start, stop, step))
            last = start + (count - 1) * step
            index.append(slice(last, start + 1, -step))
            flips.append(d)
        else:
            index.append(slice(start, stop, step))
    out[tuple(index)] = value.flip(flips) if flips else value
    return out


def cat(arrays, dim):
    """The primitive ``cat``: ``torch.cat`` along ``dim``."""
    return torch.cat(arrays, dim)


def gather(x, dim, index):
    """``out[i][j] = x[i][index[i][j]]`` (for dim 1): ``index`` may be smaller than ``x`` in every dim.

    On the CPU torch checks the indices itself (a RuntimeError, raised again as ember's
    IndexOutOfRange); on a GPU a bad index is a device-side assert that ends the CUDA context, so
    the indices are checked first (a sync)."""
    if x.device.type != "cpu":
        return torch.gather(x, dim, checks.check_index(index, x.shape[dim], dim, "gather"))
    try:
        return torch.gather(x, dim, index)
    except RuntimeError:
        checks.check_index(index, x.shape[dim], dim, "gather")
        raise


def _targets(x, dim, index):
    """The flat position in ``x`` that each element of ``index`` writes."""
    nd = index.dim()
    pos = torch.zeros(index.shape, dtype=torch.int64, device=index.device)
    stride = 1
    for d in range(nd - 1, -1, -1):
        m = index.shape[d]
        if d == dim:
            coord = index
        else:
            coord = torch.arange(m, device=index.device).reshape([m if k == d else 1 for k in range(nd)])
        pos = pos + coord * stride
        stride *= x.shape[d]
    return pos.reshape(-1)


def scatter(x, dim, index, src, mode):
    """A copy of ``x`` with ``src``'s leading block written (``set``) or added (``add``) at ``index``
    along ``dim``; repeated positions: the last write wins (torch leaves that order undefined, so
    the winner is chosen explicitly), additions accumulate (floats in float64, rounded once)."""
    index = checks.check_index(index, x.shape[dim], dim, "scatter")
    if mode == "add" and x.dtype is not torch.bool:
        if x.is_floating_point():  # the Cpu adds in double and rounds once
            return round_float(torch.scatter_add(x.to(F64), dim, index, src.to(F64)), x.dtype)
        return torch.scatter_add(x, dim, index, src)  # integers wrap
    if src.shape != index.shape:
        src = src[tuple([slice(0, m) for m in index.shape])]
    pos = _targets(x, dim, index)
    vals = src.reshape(-1)
    if mode == "set":
        order = torch.arange(pos.numel(), device=pos.device)
        winner = torch.full((x.numel(),), -1, dtype=torch.int64, device=pos.device)
        winner.scatter_reduce_(0, pos, order, "amax")
        # each written position takes the value of its last write: a gather and a where, no boolean
        # mask (a mask is a sync, which a CUDA graph cannot hold)
        if vals.numel() == 0:
            return x.clone()
        taken = vals[winner.clamp(min=0)]
        return torch.where(winner >= 0, taken, x.reshape(-1)).reshape(x.shape)
    hit = torch.zeros(x.numel(), dtype=torch.int64, device=x.device)  # bool add: or
    hit.index_add_(0, pos, vals.to(torch.int64))
    return (x.reshape(-1) | (hit != 0)).reshape(x.shape)
