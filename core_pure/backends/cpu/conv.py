"""Convolution and pooling of the Cpu backend, over 1 or 2 spatial dims (1-D runs as 2-D with H = 1).

Both gather, for each output position, the input patch as one tuple and reduce it: a dot product
with each filter for conv, max or mean for pooling. Patches are gathered a band of output rows at
a time and each result is written into the preallocated output.
"""
from ...shapes import conv_out_size
from .array import CpuArray, values
from .linalg import _dot
from . import storage
from .storage import empty, put, put_converted


def _as_2d(x_shape, kernel, stride, padding, dilation):
    if len(x_shape) == 3:
        return ((1,) + tuple(kernel), (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                (1,) + tuple(dilation))
    return tuple(kernel), tuple(stride), tuple(padding), tuple(dilation)


def _padded_planes(v, first, count, h, w, pad, fill):
    """Planes ``first`` to ``first + count`` of ``v`` (n*c planes of h x w), each a list of padded rows."""
    (pt, pb), (pl, pr) = pad
    wp = w + pl + pr
    blank = [fill] * wp
    left, right = [fill] * pl, [fill] * pr
    out = []
    for p in range(first, first + count):
        base = p * h * w
        rows = [blank] * pt
        rows += [left + list(v[base + r * w:base + (r + 1) * w]) + right for r in range(h)]
        rows += [blank] * pb
        out.append(rows)
    return out


def _bands(oh, ow, patch):
    """Output rows ``[y0, y1)`` to gather patches for at once: at least one row, about CHUNK values."""
    rows = storage.CHUNK // (ow * patch) if ow * patch else oh
    rows = rows if rows > 1 else 1
    return [(y0, y0 + rows if y0 + rows < oh else oh) for y0 in range(0, oh, rows)]


def _patches(planes, kernel, stride, dilation, ow, y0, y1):
    """For each output position of rows ``[y0, y1)``, its patch over ``planes`` (padded planes) as a
    tuple, row-major: per output row, each patch element's values along the row as one stepped
    slice, turned into patches by ``zip`` (at C speed, and nothing grows)."""
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    span = sw * (ow - 1) + 1
    cols = [None] * (len(planes) * kh * kw)
    out = [()] * ((y1 - y0) * ow)
    if not cols:
        return out
    for oy in range(y0, y1):
        k = 0
        for rows in planes:
            for ky in range(kh):
                row = rows[oy * sh + ky * dh]
                for x in range(0, kw * dw, dw):
                    cols[k] = row[x:x + span:sw]
                    k += 1
        at = (oy - y0) * ow
        out[at:at + ow] = list(zip(*cols))
    return out


def conv(x, w, stride, padding, dilation, groups):
    """The primitive ``conv``: ``x`` (N, C, *spatial) with ``w`` (O, C/groups, *kernel), no bias; ``padding`` a
    (before, after) pair per dim."""
    shape = x.shape
    kernel, stride, padding, dilation = _as_2d(shape, w.shape[2:], stride, padding, dilation)
    n, c = shape[0], shape[1]
    h, wd = (1, shape[2]) if len(shape) == 3 else shape[2:]
    o = w.shape[0]
    oh = conv_out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kernel[1], stride[1], padding[1], dilation[1])
    xv, wv = values(x), values(w)
    cg, og = c // groups, o // groups
    fsize = cg * kernel[0] * kernel[1]
    filters = [list(wv[f * fsize:(f + 1) * fsize]) for f in range(o)]
    dtype = x.dtype
    dot = _dot
    # int tensors meet the 0.0 padding: their sums are converted back as a cast does
    write = put if dtype.kind == "f" else put_converted
    out = empty(dtype, n * o * oh * ow)
    bands = _bands(oh, ow, fsize)
    for b in range(n):
        for g in range(groups):
            planes = _padded_planes(xv, b * c + g * cg, cg, h, wd, padding, 0.0)
            last = (g + 1) * og
            for y0, y1 in bands:
                patches = _patches(planes, kernel, stride, dilation, ow, y0, y1)
                # whole images: several filters' outputs are adjacent, written in one go
                step = storage.CHUNK // len(patches) if len(bands) == 1 and patches else 1
                step = step if step > 1 else 1
                for f in range(g * og, last, step):
                    write(out, dtype, ((b * o + f) * oh + y0) * ow,
                          [dot(weights, p) for weights in filters[f:f + step if f + step < last else last]
                           for p in patches])
    out_shape = (n, o, ow) if len(shape) == 3 else (n, o, oh, ow)
    return CpuArray(out, out_shape, dtype)


def pool(op, x, kernel, stride, padding, dilation):
    """The primitive ``pool``: ``op`` 'max' (pads are -inf) or 'avg' (pads count as 0) over windows of ``x`` (N, C,
    *spatial)."""
    shape = x.shape
    kernel, stride, padding, dilation = _as_2d(shape, kernel, stride, padding, dilation)
    n, c = shape[0], shape[1]
    h, wd = (1, shape[2]) if len(shape) == 3 else shape[2:]
    oh = conv_out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kernel[1], stride[1], padding[1], dilation[1])
    fill = float("-inf") if op == "max" else 0.0
    xv = values(x)
    dtype = x.dtype
    write = put if dtype.kind == "f" else put_converted  # an int mean is a float
    out = empty(dtype, n * c * oh * ow)
    size = float(kernel[0] * kernel[1])
    ksize = kernel[0] * kernel[1]
    bands = _bands(oh, ow, ksize)
    per = oh * ow
    # whole planes: several planes' outputs are adjacent, written in one go
    step = storage.CHUNK // (per * ksize) if len(bands) == 1 and per * ksize else 1
    step = step if step > 1 else 1
    total = n * c
    for p0 in range(0, total, step):
        count = step if p0 + step < total else total - p0
        planes = _padded_planes(xv, p0, count, h, wd, padding, fill)
        for y0, y1 in bands:
            res = [None] * (count * (y1 - y0) * ow)
            at = 0
            for plane in planes:
                patches = _patches([plane], kernel, stride, dilation, ow, y0, y1)
                if op == "max":
                    res[at:at + len(patches)] = list(map(_nanmax, patches))
                else:
                    res[at:at + len(patches)] = [sum(q) / size for q in patches]
                at += len(patches)
            write(out, dtype, (p0 * oh + y0) * ow, res)
    out_shape = shape[:2] + ((ow,) if len(shape) == 3 else (oh, ow))
    return CpuArray(out, out_shape, dtype)


def _nanmax(p):
    m = max(p)
    s = sum(p)
    if s != s:
        for v in p:
            if v != v:
                return v
    return m
