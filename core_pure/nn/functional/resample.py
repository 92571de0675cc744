"""Padding (constant, reflect, replicate, circular) and interpolation."""
from ... import dtypes
from ...composite import composite
from ...errors import ArgumentError, ShapeError
from .args import _floating


def _pad_indices(n, before, after, mode):
    if mode == "reflect":
        if before >= n or after >= n:
            raise ArgumentError("pad: reflect padding (%d, %d) must be smaller than the dim size %d"
                                % (before, after, n))
        idx = list(range(before, 0, -1)) + list(range(n)) + list(range(n - 2, n - 2 - after, -1))
    elif mode == "circular":
        if before > n or after > n:
            raise ArgumentError("pad: circular padding (%d, %d) must be at most the dim size %d (it wraps once)"
                                % (before, after, n))
        idx = [(j - before) % n for j in range(before + n + after)]
    else:
        idx = [0] * before + list(range(n)) + [n - 1] * after
    return idx


@composite
def pad(x, pad, mode="constant", value=0.0):
    """Pad the last dims: ``pad`` is (left, right[, top, bottom[, ...]]), the last dim first, as in
    PyTorch. Modes: constant, reflect, replicate, circular; negative amounts crop first."""
    from ...creation import full, tensor
    from ...movement import cat
    if type(pad) not in (tuple, list) or len(pad) % 2 or len(pad) // 2 > len(x.shape):
        raise ArgumentError("pad: expected an even number of pads, at most 2 per dim of shape %s, found %r"
                            % (x.shape, pad))
    if mode not in ("constant", "reflect", "replicate", "circular"):
        raise ArgumentError("pad: mode must be constant, reflect, replicate or circular, found %r" % (mode,))
    for i in range(len(pad) // 2):
        d = len(x.shape) - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if x.shape[d] + min(before, 0) + min(after, 0) < 0:
            raise ArgumentError("pad: cropping %s from dim %d of size %d leaves fewer than 0 elements"
                                % ((before, after), d, x.shape[d]))
        if before < 0:
            x = x.narrow(d, -before, x.shape[d] + before)
            before = 0
        if after < 0:
            x = x.narrow(d, 0, x.shape[d] + after)
            after = 0
        if mode == "constant":
            parts = []
            if before:
                parts.append(full(x.shape[:d] + (before,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            parts.append(x)
            if after:
                parts.append(full(x.shape[:d] + (after,) + x.shape[d + 1:], value, dtype=x.dtype, device=x.device))
            x = cat(parts, d) if len(parts) > 1 else x
        elif before or after:
            if x.shape[d] == 0:
                raise ArgumentError("pad: %s padding needs a non-empty dim, found shape %s" % (mode, x.shape))
            idx = _pad_indices(x.shape[d], before, after, mode)
            x = x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))
    return x


def _out_size(in_size, size, scale, op):
    if size is not None:
        return size
    if scale is None:
        raise ArgumentError("%s: expected size or scale_factor" % op)
    return int(in_size * scale)


@composite
def interpolate(x, size=None, scale_factor=None, mode="nearest", align_corners=None):
    """Resize the spatial dims of (N, C, L), (N, C, H, W) or (N, C, D, H, W): mode nearest,
    nearest-exact or (bi/tri)linear."""
    from ...creation import tensor
    n = len(x.shape) - 2
    if n not in (1, 2, 3):
        raise ShapeError("interpolate: expected (N, C, L), (N, C, H, W) or (N, C, D, H, W), found shape %s"
                         % (x.shape,))
    if mode not in ("nearest", "nearest-exact", "linear", "bilinear", "trilinear"):
        raise ArgumentError("interpolate: mode must be nearest, nearest-exact, linear, bilinear or trilinear, "
                            "found %r" % (mode,))
    sizes = size if type(size) in (tuple, list) else (size,) * n
    scales = scale_factor if type(scale_factor) in (tuple, list) else (scale_factor,) * n
    x = _floating(x, "interpolate")
    for i in range(n):
        d = 2 + i
        src = x.shape[d]
        dst = _out_size(src, sizes[i], scales[i], "interpolate")
        if dst <= 0:
            raise ShapeError("interpolate: output size must be > 0, found %d" % dst)
        ratio = (src / dst) if scales[i] is None or size is not None else 1.0 / scales[i]
        if mode == "nearest" or mode == "nearest-exact":
            half = 0.5 if mode == "nearest-exact" else 0.0  # nearest-exact samples pixel centres
            idx = [min(int((j + half) * ratio), src - 1) for j in range(dst)]
            x = x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))
            continue
        if align_corners:
            pos = [j * (src - 1) / (dst - 1) if dst > 1 else 0.0 for j in range(dst)]
        else:
            pos = [max((j + 0.5) * ratio - 0.5, 0.0) for j in range(dst)]
        lo = [min(int(p), src - 1) for p in pos]
        hi = [min(l + 1, src - 1) for l in lo]
        w = [p - l for p, l in zip(pos, lo)]
        shape = (1,) * d + (dst,) + (1,) * (len(x.shape) - d - 1)
        wt = tensor(w, dtype=x.dtype, device=x.device).reshape(shape)
        a = x.index_select(d, tensor(lo, dtype=dtypes.int64, device=x.device))
        b = x.index_select(d, tensor(hi, dtype=dtypes.int64, device=x.device))
        x = a + (b - a) * wt
    return x
