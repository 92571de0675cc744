"""Resize and Upsample, following ONNX's reference: per resized axis, a small (out x in) matrix of
interpolation weights (nearest, linear or cubic, optionally antialiased) computed on the host from
the shapes alone, applied with one matmul in float64."""
import math

import ember

from . import op
from .util import floats, ints, sized

MODES = ("nearest", "linear", "cubic")
COORDS = ("half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
          "tf_crop_and_resize")
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")


def _check(n):
    for key, ok in (("mode", MODES), ("coordinate_transformation_mode", COORDS), ("nearest_mode", NEAREST),
                    ("keep_aspect_ratio_policy", ("stretch", "not_larger", "not_smaller"))):
        v = n.attr(key)
        if v is not None and v not in ok:
            return "resize %s %r not supported" % (key if key != "mode" else "mode", v)
    return None


def _nearest(ratio, mode):
    if ratio == int(ratio):
        return [0.0, 1.0]
    if mode == "round_prefer_floor":
        return [float(ratio <= 0.5), float(ratio > 0.5)]
    if mode == "round_prefer_ceil":
        return [float(ratio < 0.5), float(ratio >= 0.5)]
    return [1.0, 0.0] if mode == "floor" else [0.0, 1.0]


def _cubic(ratio, A):
    r = ratio
    return [((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A,
            ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1,
            ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A]


def _cubic_antialias(ratio, scale, A):
    scale = min(scale, 1.0)

    def k(x):
        x = abs(x)
        if x <= 1:
            return (A + 2) * x ** 3 - (A + 3) * x * x + 1
        if x < 2:
            return A * x ** 3 - 5 * A * x * x + 8 * A * x - 4 * A
        return 0.0
    start = int(math.floor(-2 / scale) + 1)
    c = [k(scale * (i - ratio)) for i in range(start, 2 - start)]
    s = sum(c)
    return [v / s for v in c]


def _linear_antialias(ratio, scale):
    scale = min(scale, 1.0)
    start = int(math.floor(-1 / scale) + 1)
    c = [min(max(1 - abs((i - ratio) * scale), 0.0), 1.0) for i in range(start, start + 2 - 2 * start)]
    s = sum(c)
    return [v / s for v in c]


def _x_orig(coord, y, scale, size_in, size_out_f, size_out, roi):
    if coord == "align_corners":
        return 0.0 if size_out_f == 1 else y * (size_in - 1) / (size_out_f - 1)
    if coord == "asymmetric":
        return y / scale
    if coord == "tf_crop_and_resize":
        x = (roi[1] - roi[0]) * (size_in - 1) / 2 if size_out_f == 1 else \
            y * (roi[1] - roi[0]) * (size_in - 1) / (size_out_f - 1)
        return x + roi[0] * (size_in - 1)
    if coord == "pytorch_half_pixel":
        return -0.5 if size_out_f == 1 else (y + 0.5) / scale - 0.5
    if coord == "half_pixel_symmetric":
        adjustment = size_out / size_out_f
        return size_in / 2 * (1 - adjustment) + (y + 0.5) / scale - 0.5
    return (y + 0.5) / scale - 0.5


def weights(n, size_in, size_out, scale, roi):
    """The (size_out x size_in) interpolation matrix of one axis and its rows to extrapolate."""
    mode = n.attr("mode", "nearest")
    coord = n.attr("coordinate_transformation_mode", n.default_coord)
    antialias = n.attr("antialias", 0)
    A = n.attr("cubic_coeff_a", -0.75)
    rows, outside = [], []
    for y in range(size_out):
        x = _x_orig(coord, float(y), scale, size_in, scale * size_in, size_out, roi)
        outside.append(coord == "tf_crop_and_resize" and (x < 0 or x > size_in - 1))
        ratio = 1.0 if x == math.floor(x) else x - math.floor(x)
        if mode == "nearest":
            c = _nearest(ratio, n.attr("nearest_mode", n.default_nearest))
        elif mode == "cubic":
            c = _cubic_antialias(ratio, scale, A) if antialias else _cubic(ratio, A)
        else:
            c = _linear_antialias(ratio, scale) if antialias else [1 - ratio, ratio]
        k = len(c)
        pad = -(-k // 2)
        xp = x + pad
        p = math.floor(xp)
        frac = xp - p
        if k % 2 == 0:
            off = -(k // 2) if frac == 0 else -(k // 2) + 1
        else:
            off = -((k - 1) // 2) + (0 if frac <= 0.5 else 1)
        idx = [p + off + j - pad for j in range(k)]
        if n.attr("exclude_outside", 0):
            c = [0.0 if (i < 0 or i >= size_in) else v for i, v in zip(idx, c)]
            s = sum(c) or 1.0
            c = [v / s for v in c]
        row = [0.0] * size_in
        for i, v in zip(idx, c):
            row[min(max(i, 0), size_in - 1)] += v
        rows.append(row)
    return rows, outside


def resize(n, x, roi, scales, sizes):
    r = x.dim()
    axes = n.attr("axes")
    axes = list(range(r)) if axes is None else [a + r if a < 0 else a for a in axes]
    full_roi = None
    if roi:
        full_roi = [0.0] * r + [1.0] * r
        k = len(axes)
        for j, a in enumerate(axes):
            full_roi[a], full_roi[r + a] = roi[j], roi[k + j]
    shape = list(x.shape)
    if sizes:
        out = list(shape)
        for j, a in enumerate(axes):
            out[a] = sizes[j]
        factors = [out[i] / shape[i] if shape[i] else 1.0 for i in range(r)]
        policy = n.attr("keep_aspect_ratio_policy", "stretch")
        if policy != "stretch":
            pick = min if policy == "not_larger" else max
            s = pick(factors[a] for a in axes)
            factors = [s if i in axes else 1.0 for i in range(r)]
            out = [int(s * shape[i] + 0.5) if i in axes else shape[i] for i in range(r)]
    else:
        factors = [1.0] * r
        for j, a in enumerate(axes):
            factors[a] = scales[j]
        out = [int(factors[i] * shape[i]) for i in range(r)]
    sized(out, n)
    y = x.to(ember.float64)
    for a in axes:
        ar = None if full_roi is None else (full_roi[a], full_roi[a + r])
        if math.isclose(factors[a], 1.0) and out[a] == y.shape[a] and \
                (ar is None or (math.isclose(ar[0], 0.0) and math.isclose(ar[1], 1.0))):
            continue
        rows, outside = weights(n, y.shape[a], out[a], factors[a], ar)
        m = ember.tensor(rows, dtype=ember.float64, device=x.device)
        moved = y.swap_dims(a, r - 1) if a != r - 1 else y
        moved = ember.matmul(moved, m.T)
        if any(outside):
            mask = ember.tensor(outside, dtype=ember.bool, device=x.device)
            moved = ember.where(mask, ember.full((), float(n.attr("extrapolation_value", 0.0)), dtype=ember.float64,
                                                 device=x.device), moved)
        y = moved.swap_dims(a, r - 1) if a != r - 1 else moved
    if x.dtype.kind == "i":
        lo, hi = (0, 255) if x.dtype.name == "uint8" else (-(1 << (x.dtype.bits - 1)), (1 << (x.dtype.bits - 1)) - 1)
        y = y.round().clamp(lo, hi)
    return y.to(x.dtype)


_ATTRS = ("antialias axes coordinate_transformation_mode cubic_coeff_a exclude_outside extrapolation_value "
          "keep_aspect_ratio_policy mode nearest_mode")


def _defaults(n, coord, nearest):
    n.default_coord, n.default_nearest = coord, nearest
    return n


@op("Resize", since=11, attrs=_ATTRS, static=(1, 2, 3), check=_check)
def resize_11(n, x, roi=None, scales=None, sizes=None):
    s = floats(scales) if scales is not None and scales.numel() else None
    z = ints(sizes) if sizes is not None and sizes.numel() else None
    rr = floats(roi) if roi is not None and roi.numel() else None
    return resize(_defaults(n, "half_pixel", "round_prefer_floor"), x, rr, s, z)


@op("Resize", since=10, attrs="mode", static=(1,), check=_check)
def resize_10(n, x, scales):
    return resize(_defaults(n, "asymmetric", "round_prefer_floor"), x, None, floats(scales), None)


@op("Upsample", since=9, attrs="mode", static=(1,), check=_check)
def upsample(n, x, scales):
    return resize(_defaults(n, "asymmetric", "floor"), x, None, floats(scales), None)


op("Upsample", since=7, attrs="mode scales", check=_check)(
    lambda n, x: resize(_defaults(n, "asymmetric", "floor"), x, None, n.attr("scales"), None))
