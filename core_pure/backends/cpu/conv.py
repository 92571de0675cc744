"""Convolution and pooling of the Cpu backend, over 1 or 2 spatial dims (1-D runs as 2-D with H = 1).

Both gather, for each output position, the input patch as one list (row slices with the dilation
as step) and reduce it: a dot product with each filter for conv, max or mean for pooling.
"""
from ... import dtypes
from ...shapes import conv_out_size
from .array import CpuArray, values
from .linalg import _dot


def _as_2d(x_shape, kernel, stride, padding, dilation):
    if len(x_shape) == 3:
        return ((1,) + tuple(kernel), (1,) + tuple(stride), ((0, 0),) + tuple(padding),
                (1,) + tuple(dilation))
    return tuple(kernel), tuple(stride), tuple(padding), tuple(dilation)


def _padded_planes(v, planes, h, w, pad, fill):
    """Each (n, c) plane as a list of padded rows."""
    (pt, pb), (pl, pr) = pad
    wp = w + pl + pr
    blank = [fill] * wp
    left, right = [fill] * pl, [fill] * pr
    out = []
    for p in range(planes):
        base = p * h * w
        rows = [blank] * pt
        rows += [left + list(v[base + r * w:base + (r + 1) * w]) + right for r in range(h)]
        rows += [blank] * pb
        out.append(rows)
    return out


def _patches(planes, kernel, stride, dilation, oh, ow):
    """For each output position, the patch over ``planes`` (a list of padded planes), row-major."""
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    span = (kw - 1) * dw + 1
    out = []
    for oy in range(oh):
        rows_at = [oy * sh + ky * dh for ky in range(kh)]
        for ox in range(ow):
            x0 = ox * sw
            patch = []
            for rows in planes:
                for r in rows_at:
                    patch += rows[r][x0:x0 + span:dw]
            out.append(patch)
    return out


def conv(x, w, stride, padding, dilation, groups):
    shape = x.shape
    kernel, stride, padding, dilation = _as_2d(shape, w.shape[2:], stride, padding, dilation)
    n, c = shape[0], shape[1]
    h, wd = (1, shape[2]) if len(shape) == 3 else shape[2:]
    o = w.shape[0]
    oh = conv_out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kernel[1], stride[1], padding[1], dilation[1])
    planes = _padded_planes(values(x), n * c, h, wd, padding, 0.0)
    wv = values(w)
    cg, og = c // groups, o // groups
    fsize = cg * kernel[0] * kernel[1]
    filters = [wv[f * fsize:(f + 1) * fsize] for f in range(o)]
    dot = _dot
    out = []
    for b in range(n):
        for g in range(groups):
            first = b * c + g * cg
            patches = _patches(planes[first:first + cg], kernel, stride, dilation, oh, ow)
            for f in filters[g * og:(g + 1) * og]:
                out += [dot(f, p) for p in patches]
    out_shape = (n, o, ow) if len(shape) == 3 else (n, o, oh, ow)
    return CpuArray(dtypes.round_values(out, x.dtype), out_shape, x.dtype)


def pool(op, x, kernel, stride, padding, dilation):
    shape = x.shape
    kernel, stride, padding, dilation = _as_2d(shape, kernel, stride, padding, dilation)
    n, c = shape[0], shape[1]
    h, wd = (1, shape[2]) if len(shape) == 3 else shape[2:]
    oh = conv_out_size(h, kernel[0], stride[0], padding[0], dilation[0])
    ow = conv_out_size(wd, kernel[1], stride[1], padding[1], dilation[1])
    fill = float("-inf") if op == "max" else 0.0
    planes = _padded_planes(values(x), n * c, h, wd, padding, fill)
    out = []
    if op == "max":
        for plane in planes:
            out += [_nanmax(p) for p in _patches([plane], kernel, stride, dilation, oh, ow)]
    else:
        size = float(kernel[0] * kernel[1])
        for plane in planes:
            out += [sum(p) / size for p in _patches([plane], kernel, stride, dilation, oh, ow)]
    out_shape = shape[:2] + ((ow,) if len(shape) == 3 else (oh, ow))
    return CpuArray(dtypes.round_values(out, x.dtype), out_shape, x.dtype)


def _nanmax(p):
    m = max(p)
    s = sum(p)
    if s != s:
        for v in p:
            if v != v:
                return v
    return m
