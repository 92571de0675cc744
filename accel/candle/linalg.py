"""Linear algebra of the Candle device: matmul in candle's gemm, conv and pool composed in candle.
"""
import candle

from .elementwise import extreme
from .exchange import F32, F64, FLOATS, HALVES, STORE, CandleArray, empty, numel, scalar
from .host import host
from .movement import take

_host = {name: host(name) for name in ("matmul", "conv", "pool")}


def matmul(a, b):
    """The primitive ``matmul``: candle's gemm on floats (halves in f32), the host's on ints."""
    dtype = a.dtype
    if dtype not in FLOATS or empty(a, b):
        return _host["matmul"](a, b)
    ta, tb = a.t.contiguous(), b.t.contiguous()
    shape = ta.shape[:-1] + tb.shape[-1:]
    if len(shape) > 3:  # one batch dim: candle misreads the strides of size-1 batch dims
        ta = ta.reshape((numel(ta.shape[:-2]),) + ta.shape[-2:])
        tb = tb.reshape((numel(tb.shape[:-2]),) + tb.shape[-2:])
    if dtype in HALVES:  # accumulate in f32, round once
        r = ta.to_dtype(candle.f32).matmul(tb.to_dtype(candle.f32)).to_dtype(ta.dtype)
    else:
        r = ta.matmul(tb)
    return CandleArray(r.reshape(shape), dtype)


def _pad(t, dim, before, after, dtype, value=0.0):
    parts = []
    for n in (before, after):
        shape = list(t.shape)
        shape[dim] = n
        parts.append(scalar(value, dtype, tuple(shape)).contiguous() if n else None)
    if parts[0] is None and parts[1] is None:
        return t
    return candle.cat([p for p in (parts[0], t, parts[1]) if p is not None], dim)


def conv(x, w, stride, padding, dilation, groups):
    """The primitive ``conv`` on floats, composed in candle (the binding has no convolution):
    zero padding by ``cat``, one strided view per kernel tap (im2col), one batched matmul; halves
    compute in f32 and round once. Integer dtypes take the host road."""
    dtype = x.dtype
    if dtype not in FLOATS or empty(x, w):
        return _host["conv"](x, w, stride, padding, dilation, groups)
    one_d = len(stride) == 1
    t, k = x.t, w.t
    if one_d:  # a 1-D conv is a 2-D one of height 1
        t, k = t.unsqueeze(2), k.unsqueeze(2)
        stride, padding, dilation = (1,) + tuple(stride), ((0, 0),) + tuple(padding), (1,) + tuple(dilation)
    work = F32 if dtype in HALVES else dtype
    if work is not dtype:
        t, k = t.to_dtype(candle.f32), k.to_dtype(candle.f32)
    for dim in (2, 3):
        t = _pad(t, dim, padding[dim - 2][0], padding[dim - 2][1], work)
    n, c, h, wd = t.shape
    o, cg, kh, kw = k.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    if oh <= 0 or ow <= 0:
        return _host["conv"](x, w, stride if not one_d else stride[1:], padding if not one_d else padding[1:],
                             dilation if not one_d else dilation[1:], groups)
    taps = []
    for i in range(kh):
        rows = take(t, 2, i * dilation[0], stride[0], oh)
        for j in range(kw):
            taps.append(take(rows, 3, j * dilation[1], stride[1], ow))
    cols = candle.stack(taps, 2)  # (n, c, kh*kw, oh, ow): channel-major, as w's (cg, kh, kw)
    kk, og = cg * kh * kw, o // groups
    cols = cols.reshape((n * groups, kk, oh * ow))
    filters = k.contiguous().reshape((1, groups, og, kk)).broadcast_as((n, groups, og, kk))
    out = filters.contiguous().reshape((n * groups, og, kk)).matmul(cols)
    out = out.reshape((n, o, oh, ow) if not one_d else (n, o, ow))
    if work is not dtype:
        out = out.to_dtype(STORE[dtype][0])
    return CandleArray(out, dtype)


def pool(op, x, kernel, stride, padding, dilation):
    """The primitive ``pool``, composed in candle: one strided view per window tap folded with
    ``maximum`` (pads -inf, NaN wins) on floats, or summed in f64 and divided (pads count as 0)
    on f32/f64. Integers and half-precision averages take the host road."""
    dtype = x.dtype
    if empty(x) or dtype not in FLOATS or (op == "avg" and dtype in HALVES):
        return _host["pool"](op, x, kernel, stride, padding, dilation)
    one_d = len(kernel) == 1
    t = x.t.unsqueeze(2) if one_d else x.t
    if one_d:
        kernel, stride, dilation = (1,) + tuple(kernel), (1,) + tuple(stride), (1,) + tuple(dilation)
        padding = ((0, 0),) + tuple(padding)
    work = dtype if op == "max" else F64
    if work is not dtype:
        t = t.to_dtype(candle.f64)
    for dim in (2, 3):
        t = _pad(t, dim, padding[dim - 2][0], padding[dim - 2][1], work, float("-inf") if op == "max" else 0.0)
    n, c, h, wd = t.shape
    oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = None
    for i in range(kernel[0]):
        rows = take(t, 2, i * dilation[0], stride[0], oh)
        for j in range(kernel[1]):
            win = take(rows, 3, j * dilation[1], stride[1], ow)
            out = win if out is None else (extreme("maximum", out, win, True) if op == "max" else out + win)
    if op == "avg":
        out = (out / scalar(float(kernel[0] * kernel[1]), F64, out.shape)).to_dtype(STORE[dtype][0])
    return CandleArray(out.reshape((n, c, ow)) if one_d else out, dtype)
