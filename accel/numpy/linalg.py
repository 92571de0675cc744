"""Batched matmul, convolution and pooling of the NumPy device.

float32 and float64 use numpy's BLAS (float32 accumulation for float32, where the Cpu backend
accumulates in double: results agree to float32 rounding, not always to the last bit). float16 and
bfloat16 compute in float32 and round once. Integer matmul wraps like every integer op.
Convolution is im2col: a strided view gathers every patch, one matmul per group applies the filters.
"""
import numpy as np
from numpy.lib.stride_tricks import as_strided

from .arrays import BF16, F16, F32, F64, QUIET, ember_dtype, like, ndarray, plain, reset_state, round_float, set_state


def _compute(p, x):
    """(array to compute with, ember dtype to round to or None)."""
    if type(x) is BF16 or p.dtype == F16:
        return p.astype(F32), ember_dtype(x)
    return p, None


def matmul(a, b):
    """The primitive ``matmul``: ``np.matmul`` (BLAS for float32/float64; float16/bfloat16 through float32)."""
    if type(a) is ndarray and type(b) is ndarray and a.dtype != F16:
        token = set_state(QUIET)
        try:
            return np.matmul(a, b)
        finally:
            reset_state(token)
    pa, rnd = _compute(plain(a), a)
    pb, _ = _compute(plain(b), b)
    token = set_state(QUIET)
    try:
        out = np.matmul(pa, pb)
    finally:
        reset_state(token)
    return round_float(out, rnd) if rnd is not None else out


def _as_2d(x, kernel, stride, padding, dilation):
    if x.ndim == 3:
        return (x[:, :, None, :], (1,) + tuple(kernel), (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                (1,) + tuple(dilation))
    return x, tuple(kernel), tuple(stride), tuple(padding), tuple(dilation)


def _pad(x, padding, fill):
    (pt, pb), (pl, pr) = padding
    if not (pt or pb or pl or pr):
        return x
    n, c, h, w = x.shape
    out = np.full((n, c, h + pt + pb, w + pl + pr), fill, dtype=x.dtype)
    out[:, :, pt:pt + h, pl:pl + w] = x
    return out


def _out_size(size, k, s, d):
    return (size - d * (k - 1) - 1) // s + 1


def conv(x, w, stride, padding, dilation, groups):
    """x (N, C, [H,] W) with w (O, C/groups, [kh,] kw), no bias; padding per dim (before, after)."""
    one_d = x.ndim == 3
    px, rnd = _compute(plain(x), x)
    pw, _ = _compute(plain(w), w)
    px, kernel, stride, padding, dilation = _as_2d(px, w.shape[2:], stride, padding, dilation)
    if one_d:
        pw = pw[:, :, None, :]
    xp = _pad(px, padding, 0.0)
    n, c, h, wd = xp.shape
    o, cg = pw.shape[0], pw.shape[1]
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    oh, ow = _out_size(h, kh, sh, dh), _out_size(wd, kw, sw, dw)
    og = o // groups
    s0, s1, s2, s3 = xp.strides
    # patches[g, ci, i, j, n, y, x] = xp[n, g*cg + ci, y*sh + i*dh, x*sw + j*dw]
    patches = as_strided(xp, (groups, cg, kh, kw, n, oh, ow),
                         (cg * s1, s1, dh * s2, dw * s3, s0, sh * s2, sw * s3), writeable=False)
    cols = patches.reshape(groups, cg * kh * kw, n * oh * ow)
    filters = pw.reshape(groups, og, cg * kh * kw)
    token = set_state(QUIET)
    try:
        out = np.matmul(filters, cols)  # (groups, og, n*oh*ow)
    finally:
        reset_state(token)
    out = out.reshape(o, n, oh, ow).transpose(1, 0, 2, 3)
    out = np.ascontiguousarray(out)
    if one_d:
        out = out.reshape(n, o, ow)
    return round_float(out, rnd) if rnd is not None else out


def pool(op, x, kernel, stride, padding, dilation):
    """``max`` (pads are -inf; nan propagates) or ``avg`` (pads count as 0; sums in float64)."""
    one_d = x.ndim == 3
    p = plain(x)
    dtype = ember_dtype(x)
    p, kernel, stride, padding, dilation = _as_2d(p, kernel, stride, padding, dilation)
    is_max = op == "max"
    xp = _pad(p if is_max else p.astype(F64), padding, -np.inf if is_max else 0.0)
    n, c, h, wd = xp.shape
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    oh, ow = _out_size(h, kh, sh, dh), _out_size(wd, kw, sw, dw)
    token = set_state(QUIET)
    try:
        out = None
        for i in range(kh):
            for j in range(kw):
                y0, x0 = i * dh, j * dw
                win = xp[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw]
                if out is None:
                    out = np.array(win)
                elif is_max:
                    np.maximum(out, win, out=out)
                else:
                    np.add(out, win, out=out)
        if not is_max:
            out /= float(kh * kw)
    finally:
        reset_state(token)
    if one_d:
        out = out.reshape(n, c, ow)
    if is_max:
        return like(out, x)
    return round_float(out, dtype)

