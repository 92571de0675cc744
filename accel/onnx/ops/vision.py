"""Spatial ops built from gathers and scatters: unpooling, crops, col2im, sampling grids, NMS."""
import math

import ember
import ember.nn.functional as F

from . import op
from .util import axis, int64, ints


@op("MaxUnpool", since=9, attrs="kernel_shape pads strides", static=(2,))
def max_unpool(n, x, idx, shape=None):
    kernel = n.attr("kernel_shape")
    k = len(kernel)
    strides = n.attr("strides", [1] * k)
    pads = n.attr("pads", [0] * (2 * k))
    out = list(x.shape[:2]) + [(x.shape[2 + i] - 1) * strides[i] - pads[i] - pads[i + k] + kernel[i]
                               for i in range(k)]
    total = 1
    for d in out:
        total *= d
    flat = ember.zeros(total, dtype=x.dtype, device=x.device)
    y = flat.scatter(0, idx.reshape(-1).to(ember.int64), x.reshape(-1)).reshape(*out)
    if shape is not None:  # a larger output_shape: the unpooled values stay at the front of each dim
        target = ints(shape)
        flat_pads = []
        for i in range(len(out) - 1, -1, -1):
            flat_pads.extend([0, target[i] - out[i]])
        y = F.pad(y, flat_pads)
    return y


@op("CenterCropPad", since=18, attrs="axes", static=(1,))
def center_crop_pad(n, x, shape):
    target = ints(shape)
    axes = n.attr("axes", list(range(x.dim())))
    for a, t in zip(axes, target):
        a = axis(a, x.dim(), n)
        d = x.shape[a]
        if d > t:
            x = x.narrow(a, (d - t) // 2, t)
        elif d < t:
            before = (t - d) // 2
            pads = [0, 0] * (x.dim() - 1 - a) + [before, t - d - before]
            x = F.pad(x, pads)
    return x


@op("Col2Im", since=18, attrs="dilations pads strides", static=(1, 2))
def col2im(n, cols, image_shape, block_shape):
    image, block = ints(image_shape), ints(block_shape)
    k = len(image)
    dil = n.attr("dilations", [1] * k)
    pads = n.attr("pads", [0] * (2 * k))
    strides = n.attr("strides", [1] * k)
    padded = [image[i] + pads[i] + pads[i + k] for i in range(k)]
    counts = [(padded[i] - (block[i] - 1) * dil[i] - 1) // strides[i] + 1 for i in range(k)]
    offsets, positions = [[]], [[]]
    for i in range(k):
        offsets = [o + [j] for o in offsets for j in range(block[i])]
        positions = [p + [j] for p in positions for j in range(counts[i])]
    dest = []
    for o in offsets:
        for p in positions:
            flat = 0
            for i in range(k):
                flat = flat * padded[i] + p[i] * strides[i] + o[i] * dil[i]
            dest.append(flat)
    N = cols.shape[0]
    B = len(offsets)
    C = cols.shape[1] // B
    size = 1
    for d in padded:
        size *= d
    values = cols.reshape(N, C, B * len(positions))
    index = int64(dest, cols.device).reshape(1, 1, -1).expand(N, C, len(dest))
    out = ember.zeros((N, C, size), dtype=cols.dtype, device=cols.device).scatter_add(2, index, values)
    out = out.reshape(*([N, C] + padded))
    for i in range(k):
        out = out.narrow(2 + i, pads[i], image[i])
    return out


def _base_coords(size, align):
    if size == 1:
        return [0.0]
    if align:
        return [-1 + 2 * i / (size - 1) for i in range(size)]
    return [(-1 + (2 * i + 1) / size) for i in range(size)]


@op("AffineGrid", since=20, attrs="align_corners", static=(1,))
def affine_grid(n, theta, size):
    dims = ints(size)
    align = bool(n.attr("align_corners", 0))
    N = dims[0]
    spatial = dims[2:]
    axes = [_base_coords(d, align) for d in spatial]
    pts = [[]]
    for values in axes:
        pts = [p + [v] for p in pts for v in values]
    # ONNX orders the coordinates x (last dim) first
    rows = [list(reversed(p)) + [1.0] for p in pts]
    base = ember.tensor(rows, dtype=theta.dtype, device=theta.device)
    grid = ember.matmul(base.unsqueeze(0).expand(N, len(rows), len(spatial) + 1), theta.permute(0, 2, 1))
    return grid.reshape(*([N] + spatial + [len(spatial)]))


def _grid_check(n):
    if n.attr("mode", "linear") not in ("linear", "bilinear", "nearest", "cubic", "bicubic"):
        return "grid sample mode %r not supported" % n.attr("mode")
    if n.attr("padding_mode", "zeros") not in ("zeros", "border", "reflection"):
        return "padding_mode %r not supported" % n.attr("padding_mode")
    return None


def _unnormalize(g, size, align):
    return (g + 1) * ((size - 1) / 2) if align else ((g + 1) * size - 1) / 2


def _reflect(c, lo, hi):
    span = hi - lo
    if span <= 0:
        return c * 0 + lo
    d = (c - lo).abs()
    flips = (d / span).floor()
    extra = d - flips * span
    even = (flips.remainder(2) == 0)
    return ember.where(even, extra + lo, hi - extra)


@op("GridSample", since=16, attrs="align_corners mode padding_mode", check=_grid_check)
def grid_sample(n, x, grid):
    align = bool(n.attr("align_corners", 0))
    mode = n.attr("mode", "linear")
    pad = n.attr("padding_mode", "zeros")
    k = x.dim() - 2
    N, C = x.shape[:2]
    sizes = list(x.shape[2:])
    out_spatial = list(grid.shape[1:-1])
    coords = []
    for i in range(k):  # grid's last dim is (x, y[, z]): reversed spatial order
        c = _unnormalize(grid[..., k - 1 - i], sizes[i], align)
        if pad == "border":
            c = c.clamp(0, sizes[i] - 1)
        elif pad == "reflection":
            c = _reflect(c, 0.0, sizes[i] - 1.0) if align else \
                _reflect(c, -0.5, sizes[i] - 0.5).clamp(0, sizes[i] - 1)
        coords.append(c)
    flat = x.reshape(N, C, -1)
    P = 1
    for d in out_spatial:
        P *= d

    def sample(idx_list):
        inside = None
        lin = None
        for i, ci in enumerate(idx_list):
            ok = (ci >= 0).logical_and(ci <= sizes[i] - 1)
            inside = ok if inside is None else inside.logical_and(ok)
            cc = ci.clamp(0, sizes[i] - 1).to(ember.int64)
            lin = cc if lin is None else lin * sizes[i] + cc
        vals = flat.gather(2, lin.reshape(N, 1, P).expand(N, C, P))
        return vals * inside.reshape(N, 1, P).to(x.dtype)

    if mode == "nearest":
        out = sample([c.round() for c in coords])
    elif mode in ("cubic", "bicubic"):
        out = _cubic_sample(flat, coords, sizes, pad, align, N, C, P, x.dtype)
    else:
        floors = [c.floor() for c in coords]
        out = None
        for corner in range(1 << k):
            idx, w = [], None
            for i in range(k):
                up = (corner >> i) & 1
                ci = floors[i] + up
                wi = (coords[i] - floors[i]) if up else (1 - (coords[i] - floors[i]))
                idx.append(ci)
                w = wi if w is None else w * wi
            term = sample(idx) * w.reshape(N, 1, P)
            out = term if out is None else out + term
    return out.reshape(*([N, C] + out_spatial))


def _keys(t, A=-0.75):
    """Keys' cubic weights of the four taps floor-1 .. floor+2 at fraction ``t``."""
    return [((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A,
            ((A + 2) * t - (A + 3)) * t * t + 1,
            ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1,
            ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A]


def _cubic_sample(flat, coords, sizes, pad, align, N, C, P, dtype):
    """Bicubic (any rank) sampling with ONNX's per-tap padding: zeros, the border pixel, or a reflection."""
    k = len(coords)
    taps = []
    for i, c in enumerate(coords):
        lo, hi = (0.0, sizes[i] - 1.0) if align else (-0.5, sizes[i] - 0.5)
        f = c.floor()
        w = _keys(c - f)
        per = []
        for j in range(4):
            t = f + (j - 1)
            inside = (t >= 0).logical_and(t <= sizes[i] - 1)
            if pad == "border":
                t = t.clamp(0, sizes[i] - 1)
            elif pad == "reflection":
                t = _reflect(t, lo, hi).trunc().clamp(0, sizes[i] - 1)
            per.append((t, w[j], inside if pad == "zeros" else None))
        taps.append(per)
    out = None
    for combo in range(4 ** k):
        lin, weight, ok = None, None, None
        for i in range(k):
            t, w, inside = taps[i][(combo // 4 ** i) % 4]
            cc = t.clamp(0, sizes[i] - 1).to(ember.int64)
            lin = cc if lin is None else lin * sizes[i] + cc
            weight = w if weight is None else weight * w
            if inside is not None:
                ok = inside if ok is None else ok.logical_and(inside)
        vals = flat.gather(2, lin.reshape(N, 1, P).expand(N, C, P))
        term = vals * weight.reshape(N, 1, P)
        if ok is not None:
            term = term * ok.reshape(N, 1, P).to(dtype)
        out = term if out is None else out + term
    return out


@op("NonMaxSuppression", since=10, attrs="center_point_box", static=(2, 3, 4))
def non_max_suppression(n, boxes, scores, max_out=None, iou=None, score_min=None):
    limit = int(max_out.reshape(-1)[0].item()) if max_out is not None and max_out.numel() else 0
    iou_t = float(iou.reshape(-1)[0].item()) if iou is not None and iou.numel() else 0.0
    s_min = float(score_min.reshape(-1)[0].item()) if score_min is not None and score_min.numel() else None
    B = boxes.tolist()
    S = scores.tolist()
    center = n.attr("center_point_box", 0)
    picked = []
    for b in range(len(B)):
        corners = [_corners(box, center) for box in B[b]]
        for c in range(len(S[b])):
            order = sorted(range(len(S[b][c])), key=lambda i: (-S[b][c][i], i))
            kept = []
            for i in order:
                if s_min is not None and not S[b][c][i] > s_min:
                    continue
                if len(kept) >= limit:
                    break
                if all(_iou(corners[i], corners[j]) <= iou_t for j in kept):
                    kept.append(i)
            picked.extend([b, c, i] for i in kept)
    if not picked:
        return ember.zeros((0, 3), dtype=ember.int64, device=boxes.device)
    return ember.tensor(picked, dtype=ember.int64, device=boxes.device)


def _corners(box, center):
    if center:
        x, y, w, h = box
        return (y - h / 2, x - w / 2, y + h / 2, x + w / 2)
    y1, x1, y2, x2 = box
    return (min(y1, y2), min(x1, x2), max(y1, y2), max(x1, x2))


def _iou(a, b):
    h = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    w = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = h * w
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def _roi_check(n):
    if n.attr("mode", "avg") not in ("avg", "max"):
        return "RoiAlign mode %r not supported" % n.attr("mode")
    return None


def _roi_samples(roi, scale, half_pixel, H, W, ph, pw, ratio):
    """Per bin and sample: the four corner positions and bilinear weights (ONNX's reference)."""
    off = 0.5 if half_pixel else 0.0
    x0, y0, x1, y1 = [v * scale - off for v in roi]
    rw, rh = x1 - x0, y1 - y0
    if not half_pixel:
        rw, rh = max(rw, 1.0), max(rh, 1.0)
    bh, bw = rh / ph, rw / pw
    gh = int(ratio) if ratio > 0 else int(math.ceil(rh / ph))
    gw = int(ratio) if ratio > 0 else int(math.ceil(rw / pw))
    pos, wts = [[], [], [], []], [[], [], [], []]
    for a in range(ph):
        for b in range(pw):
            for iy in range(gh):
                y = y0 + a * bh + (iy + 0.5) * bh / gh
                for ix in range(gw):
                    x = x0 + b * bw + (ix + 0.5) * bw / gw
                    corners = _bilinear(y, x, H, W)
                    for k in range(4):
                        pos[k].append(corners[k][0])
                        wts[k].append(corners[k][1])
    return pos, wts, max(gh * gw, 1)


def _bilinear(y, x, H, W):
    if y < -1.0 or y > H or x < -1.0 or x > W:
        return [(0, 0.0)] * 4
    y, x = max(y, 0.0), max(x, 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yh = yl = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xh = xl = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    hy, hx = 1 - ly, 1 - lx
    return [(yl * W + xl, hy * hx), (yl * W + xh, hy * lx), (yh * W + xl, ly * hx), (yh * W + xh, ly * lx)]


@op("RoiAlign", since=10, attrs="coordinate_transformation_mode mode output_height output_width sampling_ratio "
    "spatial_scale", check=_roi_check)
def roi_align(n, x, rois, batch):
    N, C, H, W = x.shape
    ph, pw = n.attr("output_height", 1), n.attr("output_width", 1)
    half = n.attr("coordinate_transformation_mode", "half_pixel" if n.opset >= 16 else "output_half_pixel") == \
        "half_pixel"
    planes = x.reshape(N, C, H * W)
    outs = []
    for r, b in zip(rois.tolist(), ints(batch)):
        pos, wts, count = _roi_samples(r, n.attr("spatial_scale", 1.0), half, H, W, ph, pw,
                                       n.attr("sampling_ratio", 0))
        plane = planes[b]
        S = len(pos[0]) // (ph * pw)
        terms = [plane.index_select(1, int64(pos[k], x.device)) *
                 ember.tensor(wts[k], dtype=x.dtype, device=x.device) for k in range(4)]
        if n.attr("mode", "avg") == "avg":
            v = (terms[0] + terms[1] + terms[2] + terms[3]).reshape(C, ph * pw, S).sum(dim=2) / count
        else:
            m = terms[0].maximum(terms[1]).maximum(terms[2]).maximum(terms[3])
            v = m.reshape(C, ph * pw, S).max(dim=2)[0]
        outs.append(v.reshape(C, ph, pw))
    return ember.stack(outs)
