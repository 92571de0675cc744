"""Backward rules, one per differentiable primitive, written with ember's own tensor ops.

Each ``*_rule`` receives the op's inputs and output as tensors on the inner device and returns
``backward(grad) -> (grad for each input)``. Because the frontend broadcasts with ``expand`` and
casts with ``cast`` before an op, each rule sees same-shaped, same-dtype operands: reducing a
gradient over broadcast dims is ``expand``'s rule, and nothing else needs to know about it.
"""
import functools
import math

import ember
import ember.nn.functional as F
from ember.composite import composite

_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)


def _zeros(t):
    return ember.zeros(t.shape, dtype=t.dtype, device=t.device)


# -- elementwise ------------------------------------------------------------------------------------

def _unary_grad(op, x, y, g):
    if op == "neg":
        return -g
    if op == "abs":
        return g * x.sign()
    if op == "exp":
        return g * y
    if op == "log":
        return g / x
    if op == "sqrt":
        return g * 0.5 / y
    if op == "rsqrt":
        return g * -0.5 * y * y * y
    if op == "sin":
        return g * x.cos()
    if op == "cos":
        return -g * x.sin()
    if op == "tan":
        return g * (y * y + 1)
    if op == "asin":
        return g * (1 - x * x).rsqrt()
    if op == "acos":
        return -g * (1 - x * x).rsqrt()
    if op == "atan":
        return g / (x * x + 1)
    if op == "sinh":
        return g * x.cosh()
    if op == "cosh":
        return g * x.sinh()
    if op == "tanh":
        return g * (1 - y * y)
    if op == "erf":
        return g * (-(x * x)).exp() * _TWO_OVER_SQRT_PI
    if op == "sigmoid":
        return g * y * (1 - y)
    if op == "expm1":
        return g * (y + 1)
    if op == "log1p":
        return g / (x + 1)
    if op == "reciprocal":
        return -g * y * y
    if op in ("sign", "floor", "ceil", "round", "trunc"):
        return _zeros(g)
    return None  # bool results carry no gradient


def unary_rule(op, x, y):
    return lambda g: (_unary_grad(op, x, y, g),)


def _ties(mask_win, mask_tie, g):
    return g * (mask_win.to(g.dtype) + mask_tie.to(g.dtype) * 0.5)


def binary_rule(op, a, b, y):
    """``a`` or ``b`` may be a Python scalar: it gets no gradient."""
    ta, tb = isinstance(a, ember.Tensor), isinstance(b, ember.Tensor)

    def backward(g):
        ga = gb = None
        if op == "add":
            ga, gb = g, g
        elif op == "sub":
            ga, gb = g, -g
        elif op == "mul":
            ga, gb = g * b, g * a
        elif op == "div":
            ga = g / b
            gb = -g * y / b if tb else None
        elif op == "pow":
            if ta:
                slope = g * b * a ** (b - 1)
                ga = ember.where(b == 0, 0.0, slope) if tb else (_zeros(g) if b == 0 else slope)
            if tb:
                if ta:
                    gb = ember.where((a == 0) & (b >= 0), 0.0, g * y * a.log())
                else:
                    log_a = math.log(a) if a > 0 else (float("-inf") if a == 0 else float("nan"))
                    gb = g * y * log_a
                    if a == 0:
                        gb = ember.where(b >= 0, 0.0, gb)
        elif op in ("maximum", "minimum"):
            if not (ta and tb):  # against a Python scalar this is clamp: the tensor keeps the ties
                keep = (a >= b) if op == "maximum" else (a <= b)
                return (ember.where(keep, g, 0.0), None) if ta else (None, ember.where(keep, 0.0, g))
            win = (a > b) if op == "maximum" else (a < b)
            ga = _ties(win, a == b, g) if ta else None
            lose = (b > a) if op == "maximum" else (b < a)
            gb = _ties(lose, a == b, g) if tb else None
        elif op == "atan2":
            r = a * a + b * b
            ga, gb = g * b / r, -g * a / r
        elif op == "mod":
            ga = g
            gb = -g * (a / b).floor() if tb else None
        elif op == "floordiv":
            ga = _zeros(g)
            gb = _zeros(g) if tb else None
        return (ga if ta else None, gb if tb else None)
    return backward


def where_rule(cond, a, b):
    return lambda g: (None, ember.where(cond, g, 0.0), ember.where(cond, 0.0, g))


def cast_rule(x):
    if x.dtype.kind != "f":
        return lambda g: (None,)
    return lambda g: (g.to(x.dtype),)


# -- movement ---------------------------------------------------------------------------------------

def reshape_rule(x):
    return lambda g: (g.reshape(x.shape),)


def permute_rule(dims):
    inverse = [0] * len(dims)
    for i, d in enumerate(dims):
        inverse[d] = i
    return lambda g: (g.permute(inverse),)


def expand_rule(x_shape, shape):
    grown = tuple(d for d, (n, m) in enumerate(zip(x_shape, shape)) if n != m)

    def backward(g):
        return (g.sum(grown, keepdim=True) if grown else g,)
    return backward


def slice_rule(x, ranges):
    def backward(g):
        dev = g.device
        base = dev.full(x.shape, 0, g.dtype)
        return (ember.Tensor(dev.slice_assign(base, ranges, g._data), x.shape, g.dtype, dev),)
    return backward


def slice_assign_rule(x, ranges, value):
    def backward(g):
        dev = g.device
        hole = dev.slice_assign(g._data, ranges, dev.full(value.shape, 0, g.dtype))
        part = dev.slice(g._data, ranges)
        return (ember.Tensor(hole, x.shape, g.dtype, dev), ember.Tensor(part, value.shape, g.dtype, dev))
    return backward


def cat_rule(sizes, dim):
    def backward(g):
        out, start = [], 0
        for s in sizes:
            out.append(g.narrow(dim, start, s))
            start += s
        return tuple(out)
    return backward


# -- reductions and scans ---------------------------------------------------------------------------

def _exclusive_cumprod(x, dim):
    n = x.shape[dim]
    ones = ember.ones(x.shape[:dim] + (1,) + x.shape[dim + 1:], dtype=x.dtype, device=x.device)
    if n <= 1:
        return ones.expand(x.shape) if n else x
    return ember.cat([ones, x.cumprod(dim).narrow(dim, 0, n - 1)], dim)


def reduce_rule(op, x, y, dim):
    def backward(g):
        if op == "sum":
            return (g.expand(x.shape),)
        if op == "prod":
            # the product of the others, exact even where x has zeros
            left = _exclusive_cumprod(x, dim)
            right = _exclusive_cumprod(x.flip(dim), dim).flip(dim)
            return (g.expand(x.shape) * left * right,)
        if op in ("max", "min"):
            hit = (x == y.expand(x.shape)).to(g.dtype)
            return (g.expand(x.shape) * hit / hit.sum(dim, keepdim=True),)
        return (None,)
    return backward


def scan_rule(op, x, y, dim, indices):
    def backward(g):
        if op == "cumsum":
            return (g.flip(dim).cumsum(dim).flip(dim),)
        if op == "cumprod":
            return (_cumprod_grad(x, g, dim),)
        if op in ("cummax", "cummin"):
            return (_zeros(x).scatter_add(dim, indices, g),)
        return (None,)
    return backward


def _cumprod_grad(x, g, dim):
    # grad_i = (prod_{k<i} x_k) * S_i with S_i = g_i + x_{i+1} * S_{i+1}: exact with zeros
    n = x.shape[dim]
    if n == 0:
        return g
    parts = [None] * n
    s = g.narrow(dim, n - 1, 1)
    parts[n - 1] = s
    for i in range(n - 2, -1, -1):
        s = g.narrow(dim, i, 1) + x.narrow(dim, i + 1, 1) * s
        parts[i] = s
    return _exclusive_cumprod(x, dim) * ember.cat(parts, dim)


def sort_rule(x, indices, dim):
    return lambda g: (_zeros(x).scatter(dim, indices, g),)


# -- linear algebra, indexing ------------------------------------------------------------------------

def matmul_rule(a, b, need_a=True, need_b=True):
    return lambda g: (g @ b.transpose(-2, -1) if need_a else None, a.transpose(-2, -1) @ g if need_b else None)


def gather_rule(x, dim, index):
    return lambda g: (_zeros(x).scatter_add(dim, index, g), None)


def scatter_rule(x, dim, index, src, mode):
    def backward(g):
        gx = g if mode == "add" else g.scatter(dim, index, 0.0)
        picked = g.gather(dim, index)
        if picked.shape != src.shape:
            full = _zeros(src)
            full[tuple(slice(0, n) for n in index.shape)] = picked
            picked = full
        return (gx, None, picked)
    return backward


# -- convolution and pooling ---------------------------------------------------------------------------

def _as_2d(t):
    return t.unsqueeze(2) if len(t.shape) == 3 else t


def _crop(grad_padded, pads, size):
    """Columns/rows [lo, lo + size) of a padded-space gradient that may be shorter than the padding."""
    (pt, _), (pl, _) = pads
    h, w = size
    fh, fw = grad_padded.shape[2:]
    return F.pad(grad_padded, (-pl, pl + w - fw, -pt, pt + h - fh))


def _as_2d_args(one_d, stride, padding, dilation):
    if one_d:
        return (1,) + tuple(stride), ((0, 0),) + tuple(padding), (1,) + tuple(dilation)
    return stride, padding, dilation


@composite
def conv_input_grad(g, weight, input_shape, stride, padding, dilation, groups):
    """The gradient for the input of ``conv(x, weight, stride, padding, dilation, groups)`` (the
    primitive's arguments: ``padding`` a (before, after) pair per dim) given the output's ``g``: a
    transposed conv, cropped to ``input_shape``. A backend replaces it with a direct kernel through
    the override hook (the C Cpu does: ``ember.nn.fused_c``)."""
    one_d = len(input_shape) == 3
    stride, padding, dilation = _as_2d_args(one_d, stride, padding, dilation)
    gx = F.conv_transpose2d(_as_2d(g), _as_2d(weight), stride=stride, dilation=dilation, groups=groups)
    gx = _crop(gx, padding, (1, input_shape[2]) if one_d else input_shape[2:])
    return gx.squeeze(2) if one_d else gx


@composite
def conv_weight_grad(x, g, weight_shape, stride, padding, dilation, groups):
    """The gradient for the weight (of ``weight_shape``) of ``conv(x, weight, ...)`` given the
    output's ``g``: per group a conv of the padded input with ``g``, the batch as channels.
    Replaceable as ``conv_input_grad`` is."""
    one_d = len(x.shape) == 3
    stride, padding, dilation = _as_2d_args(one_d, stride, padding, dilation)
    x2, g2 = _as_2d(x), _as_2d(g)
    (pt, pb), (pl, pr) = padding
    xp = F.pad(x2, (pl, pr, pt, pb))
    cg, og = x2.shape[1] // groups, weight_shape[0] // groups
    kh, kw = (1,) + tuple(weight_shape[2:]) if one_d else weight_shape[2:]
    parts = []
    for k in range(groups):
        xs = xp.narrow(1, k * cg, cg).transpose(0, 1)
        gs = g2.narrow(1, k * og, og).transpose(0, 1)
        gw = F.conv2d(xs, gs, stride=dilation, dilation=stride)
        parts.append(gw.narrow(2, 0, kh).narrow(3, 0, kw).transpose(0, 1))
    gw = ember.cat(parts, 0) if groups > 1 else parts[0]
    return gw.squeeze(2) if one_d else gw


def conv_rule(x, w, stride, padding, dilation, groups, need_x=True, need_w=True):
    def backward(g):
        # the first layer's input needs no gradient: skip its transposed conv
        gx = conv_input_grad(g, w, x.shape, stride, padding, dilation, groups) if need_x else None
        gw = conv_weight_grad(x, g, w.shape, stride, padding, dilation, groups) if need_w else None
        return (gx, gw)
    return backward


@functools.lru_cache(maxsize=64)
def _windows(hp, wp, oh, ow, kernel, stride, dilation, device):
    """Flat positions (in a padded plane) of every window element, window by window, as an int64
    tensor (cached: a training loop asks for the same windows every step; tensors never change)."""
    kh, kw = kernel
    sh, sw = stride
    dh, dw = dilation
    flat = [(oy * sh + ky * dh) * wp + ox * sw + kx * dw
            for oy in range(oh) for ox in range(ow) for ky in range(kh) for kx in range(kw)]
    return ember.tensor(flat, dtype=ember.int64, device=device)


@composite
def pool_input_grad(g, x, op, kernel, stride, padding, dilation):
    """The gradient for the input of ``pool(op, x, kernel, stride, padding, dilation)`` (the
    primitive's arguments) given the output's ``g``: max sends each window's gradient to its first
    max (argmax's pick: the first nan, else the first of equal values; a pad that wins drops it),
    avg an equal share to every element. Gathers the windows, then scatter-adds; replaceable as
    ``conv_input_grad`` is."""
    one_d = len(x.shape) == 3
    if one_d:
        kernel, stride = (1,) + tuple(kernel), (1,) + tuple(stride)
        dilation, padding = (1,) + tuple(dilation), ((0, 0),) + tuple(padding)
    x2, g2 = _as_2d(x), _as_2d(g)
    n, c, h, w = x2.shape
    oh, ow = g2.shape[2:]
    (pt, pb), (pl, pr) = padding
    hp, wp = h + pt + pb, w + pl + pr
    k = kernel[0] * kernel[1]
    idx = _windows(hp, wp, oh, ow, tuple(kernel), tuple(stride), tuple(dilation), x.device)
    idx = idx.reshape(1, 1, oh * ow, k).expand(n, c, oh * ow, k)
    if op == "max":
        xp = F.pad(x2, (pl, pr, pt, pb), value=float("-inf")).reshape(n, c, hp * wp)
        vals = xp.gather(2, idx.reshape(n, c, oh * ow * k)).reshape(n, c, oh * ow, k)
        pos = idx.gather(3, vals.argmax(3, keepdim=True)).reshape(n, c, oh * ow)
        src = g2.reshape(n, c, oh * ow)
    else:
        pos = idx.reshape(n, c, oh * ow * k)
        src = (g2 / k).reshape(n, c, oh * ow, 1).expand(n, c, oh * ow, k).reshape(n, c, oh * ow * k)
    base = ember.zeros(n, c, hp * wp, dtype=g.dtype, device=g.device)
    gp = base.scatter_add(2, pos, src).reshape(n, c, hp, wp)
    gx = _crop(gp, padding, (h, w))
    return gx.squeeze(2) if one_d else gx


def pool_rule(op, x, y, kernel, stride, padding, dilation):
    return lambda g: (pool_input_grad(g, x, op, kernel, stride, padding, dilation),)
