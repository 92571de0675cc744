"""The gradients of a convolution as implicit GEMMs through the tiled matmul kernels: Wgpu's
replacements for the composites ``conv_input_grad`` (a transposed conv of the spread, padded
gradient) and ``conv_weight_grad`` (a conv with the batch as channels, after transposing copies).

Per group z, with cg input and og output channels a group and a kernel of KH x KW:

- input gradient:  dX[c, (n, iy, ix)] = sum over (o, ky, kx) of W[o, c, ky, kx] * G[n, o, oy, ox],
  (oy, ox) the output whose window puts kernel offset (ky, kx) on (iy, ix): M = cg, N = the
  batch's input positions, K = og * KH * KW;
- weight gradient: dW[o, (c, ky, kx)] = sum over (n, oy, ox) of G[n, o, oy, ox] * X[n, c, iy, ix],
  (iy, ix) = (oy * sh + ky * dh - pt, ox * sw + kx * dw - pl): M = og, N = cg * KH * KW, K = the
  batch's output positions (long and narrow: the split-K rule cuts it into slices).

Both read their operands in place by their strides (no padded, spread or transposed copy), zero
outside, accumulate in f32 as the forward kernel does and round once to the dtype. A training
step's backward pass takes one or two dispatches a gradient instead of the composites' pads,
concatenations and copies. float32, float16 and bfloat16 (the forward's tiled dtypes); others run
the composites.
"""
import ember
from ember.composite import COMPOSITES, register_fused

from . import autotune
from . import matmul_kernels as mk
from .arrays import numel
from .device import Wgpu
from .linalg import _spatial, _strides4

# words: 0 M, 1 N, 2 K, 3 CH (input channels), 4 H, 5 W, 6 OH, 7 OW, 8 KH, 9 KW, 10 sh, 11 sw,
# 12 dh, 13 dw, 14 pt, 15 pl, 16 cg, 17 og, 18-21 x's strides, 22 x's base, 23-26 g's strides,
# 27 g's base, 28 w's base, 29-31 split-K (matmul_kernels), 32 the output's base
# (the helpers gk, ga and gb read the rest of the geometry from the words themselves)
_GEOMETRY = ("  let CH = pw(3u); let H = pw(4u); let W = pw(5u); let KH = pw(8u); let KW = pw(9u);\n"
             "  let cg = pw(16u); let og = pw(17u); let cbase = pw(32u);\n")


class _Flavor:
    """Shared by both gradients: the bindings (operands S0 and S1, the output, the partials) and the
    head every kernel of the tiled family starts with."""

    def __init__(self, st):
        self.st = st
        self.cv = "f32({})" if st == "f16" else "{}"

    def bindings(self):
        return ["@group(0) @binding(1) var<storage, read_write> S0: array<%s>;" % self.st,
                "@group(0) @binding(2) var<storage, read_write> S1: array<%s>;" % self.st,
                "@group(0) @binding(3) var<storage, read_write> C: array<%s>;" % self.st,
                "@group(0) @binding(4) var<storage, read_write> Pt: array<f32>;"]

    def head(self, bm, bn, z="wid.z / ks"):
        return ("  let M = pw(0u); let N = pw(1u); let K = pw(2u);\n" + mk._SPLIT.replace("ZEXPR", z) +
                _GEOMETRY + self.bases() + "  let m0 = wid.y * %du; let n0 = wid.x * %du;\n" % (bm, bn))

    def load_b(self, reg, kk, col):
        # the row of K is decomposed once for its four columns (gk), each column then in gb
        return "{ let kp = gk(%s, kend); %s = vec4<f32>(%s); }" % (
            kk, reg, ", ".join("gb(kp, %s + %du, qbase_)" % (col, c) for c in range(4)))


class _InputGrad(_Flavor):
    """S0 = the weights (contiguous), S1 = the output's gradient G, C = dX (N, C, H, W) contiguous.
    K runs over (o, ky, kx); a column is an input position (n, iy, ix)."""

    def bases(self):
        return ("  let pbase_ = i32(pw(28u) + z * og * cg * KH * KW);\n"
                "  let qbase_ = pi(27u) + i32(z * og) * pi(24u);\n")

    def load_a(self, reg, row, kk):
        return "%s = vec4<f32>(%s);" % (reg, ", ".join("ga(%s + %du, %s, kend, pbase_)" % (kk, c, row)
                                                       for c in range(4)))

    def helpers(self):
        return ("fn ga(k: u32, row: u32, kend: u32, base: i32) -> f32 {\n"
                "  if (k >= kend || row >= pw(0u)) { return 0.0; }\n"
                "  let kk = pw(8u) * pw(9u);\n"
                "  return %s;\n}\n"
                # (o, the offsets ky and kx put between an input and an output row/column, 1: in K)
                "fn gk(k: u32, kend: u32) -> vec4<i32> {\n"
                "  if (k >= kend) { return vec4<i32>(0); }\n"
                "  let KW = pw(9u); let kk = pw(8u) * KW; let r = k %% kk;\n"
                "  return vec4<i32>(i32(k / kk), pi(14u) - i32(r / KW) * pi(12u), pi(15u) - i32(r %% KW) * pi(13u), 1);\n}\n"
                "fn gb(kp: vec4<i32>, col: u32, base: i32) -> f32 {\n"
                "  if (kp.w == 0 || col >= pw(1u)) { return 0.0; }\n"
                "  let W = pw(5u); let hw = pw(4u) * W; let sp = col %% hw;\n"
                "  var oy = i32(sp / W) + kp.y; var ox = i32(sp %% W) + kp.z;\n"
                "  if (oy < 0 || ox < 0) { return 0.0; }\n"
                "  let sh = pi(10u); let sw = pi(11u);\n"
                "  if (sh != 1) { if (oy %% sh != 0) { return 0.0; } oy = oy / sh; }\n"
                "  if (sw != 1) { if (ox %% sw != 0) { return 0.0; } ox = ox / sw; }\n"
                "  if (oy >= i32(pw(6u)) || ox >= i32(pw(7u))) { return 0.0; }\n"
                "  return %s;\n}\n"
                % (self.cv.format("S0[u32(base) + ((k / kk) * pw(16u) + row) * kk + k % kk]"),
                   self.cv.format("S1[u32(base + i32(col / hw) * pi(23u) + kp.x * pi(24u) + oy * pi(25u) + ox * pi(26u))]")))

    def store_c(self, row, col, value):
        return ("{ let cc = %s; let hw = H * W; "
                "C[cbase + ((cc / hw) * CH + z * cg + %s) * hw + cc %% hw] = %s; }" % (col, row, value))


class _WeightGrad(_Flavor):
    """S0 = the output's gradient G, S1 = the input X, C = dW (O, cg, KH, KW) contiguous. K runs
    over the output positions (n, oy, ox); a column is (c, ky, kx)."""

    def bases(self):
        return ("  let pbase_ = pi(27u) + i32(z * og) * pi(24u);\n"
                "  let qbase_ = pi(22u) + i32(z * cg) * pi(19u);\n")

    def load_a(self, reg, row, kk):
        return "%s = vec4<f32>(%s);" % (reg, ", ".join("ga(gk(%s + %du, kend), %s, pbase_)" % (kk, c, row)
                                                       for c in range(4)))

    def helpers(self):
        return (  # (n, oy, ox, 1: in K)
                "fn gk(k: u32, kend: u32) -> vec4<i32> {\n"
                "  if (k >= kend) { return vec4<i32>(0); }\n"
                "  let OW = pw(7u); let ohw = pw(6u) * OW; let sp = k %% ohw;\n"
                "  return vec4<i32>(i32(k / ohw), i32(sp / OW), i32(sp %% OW), 1);\n}\n"
                "fn ga(kp: vec4<i32>, row: u32, base: i32) -> f32 {\n"
                "  if (kp.w == 0 || row >= pw(0u)) { return 0.0; }\n"
                "  return %s;\n}\n"
                "fn gb(kp: vec4<i32>, col: u32, base: i32) -> f32 {\n"
                "  if (kp.w == 0 || col >= pw(1u)) { return 0.0; }\n"
                "  let KW = pw(9u); let kk = pw(8u) * KW; let r = col %% kk;\n"
                "  let iy = kp.y * pi(10u) + i32(r / KW) * pi(12u) - pi(14u);\n"
                "  let ix = kp.z * pi(11u) + i32(r %% KW) * pi(13u) - pi(15u);\n"
                "  if (iy < 0 || iy >= i32(pw(4u)) || ix < 0 || ix >= i32(pw(5u))) { return 0.0; }\n"
                "  return %s;\n}\n"
                % (self.cv.format("S0[u32(base + kp.x * pi(23u) + i32(row) * pi(24u) + kp.y * pi(25u) + kp.z * pi(26u))]"),
                   self.cv.format("S1[u32(base + kp.x * pi(18u) + i32(col / kk) * pi(19u) + iy * pi(20u) + ix * pi(21u))]")))

    def store_c(self, row, col, value):
        return "C[cbase + (z * og + %s) * N + %s] = %s;" % (row, col, value)


_FLAVORS = {"conv_dx": _InputGrad, "conv_dw": _WeightGrad}
# the split-K rule of the gradients (matmul_kernels.split_k): their index arithmetic makes each
# workgroup's K loop long and latency-bound, so K is cut until some SPLIT_AIM workgroups run, in
# at most SPLIT_MOST slices; many slices of few outputs are added by a workgroup per output.
# H200, LeNet-5 at batch 64: the input gradient's 392 tiles of K = 400 took 101 us in one slice,
# 49 us in six; the first conv's weight gradient (K = 50176) 44 us in 784 slices, 208 in 64
SPLIT_FEW, SPLIT_AIM, SPLIT_MOST = 1024, 2048, 1024


def _strides(dev, a):
    return list(_strides4(a)) + [dev._base(a)]


def _words(dev, x_shape, g, geometry, groups, m, n, k, x=None, w=None, out=None):
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = geometry
    OH, OW = (g.shape[2], g.shape[3]) if len(g.shape) == 4 else (1, g.shape[2])
    C, O = x_shape[1], g.shape[1]
    words = [m, n, k, C, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, C // groups, O // groups]
    words += _strides(dev, x) if x is not None else [0] * 5
    words += _strides(dev, g)
    words += [dev._base(w) if w is not None else 0, 0, 0, 0, dev._base(out)]
    return words


def _run(dev, op, v, p, q, out, words, groups, m, n, k):
    dtype = out.dtype
    st = dev.storage[dtype].wgsl
    flavor = _FLAVORS[op](st)
    grid = ((n + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm, groups)
    mk._run_split(dev, (op, v.name, dtype.name, st), v, lambda: mk._simt_source(v, dtype, st, flavor), flavor,
                  dtype, st, [p.block.buffer, q.block.buffer, out.block.buffer], words, grid, m, n, k,
                  rule=(SPLIT_FEW, SPLIT_AIM, SPLIT_MOST), wide=True)


def _default_variant(m, n, k):
    """The small tile where M (channels a group) is narrow: a 64-row tile would mostly idle."""
    return "32x32x8_4x4" if m <= 32 else mk._default_variant(m, n, k)


def _tuned(dev, op, dtype, dims, run, variant):
    """Run ``run`` with ``variant`` (a name) or the autotuner's choice for ``dims``."""
    if variant is None:
        simt = [v.name for v in mk.SIMT if v.smem() <= dev.rt.max_workgroup_storage]
        variant = autotune.choose(dev, op, dtype, dims, run, simt, _default_variant(*dims),
                                  lambda name: _check(dev, op, name, dtype))
    run(mk._BY_NAME[variant])


def input_grad(dev, g, w, x_shape, stride, padding, dilation, groups, variant=None):
    """dX of ``conv(x, w, stride, padding, dilation, groups)`` (x of ``x_shape``) from the output's
    ``g``; ``variant`` names the tiled kernel (default: the autotuner's)."""
    if numel(x_shape) == 0 or numel(g.shape) == 0:
        return dev.full(x_shape, 0, g.dtype)
    out = dev._alloc(x_shape, g.dtype)
    w = dev._contiguous(w)
    geometry = _spatial(x_shape, w.shape[2:], stride, padding, dilation)
    m, n, k = x_shape[1] // groups, x_shape[0] * geometry[0] * geometry[1], w.shape[0] // groups * geometry[2] * geometry[3]
    words = _words(dev, x_shape, g, geometry, groups, m, n, k, w=w, out=out)
    _tuned(dev, "conv_dx", g.dtype, (m, n, k),
           lambda v: _run(dev, "conv_dx", v, w, g, out, words, groups, m, n, k), variant)
    return out


def weight_grad(dev, x, g, w_shape, stride, padding, dilation, groups, variant=None):
    """dW (of ``w_shape``) of ``conv(x, w, stride, padding, dilation, groups)`` from the output's ``g``."""
    geometry = _spatial(x.shape, w_shape[2:], stride, padding, dilation)
    m, n, k = w_shape[0] // groups, w_shape[1] * geometry[2] * geometry[3], numel(g.shape) // max(1, g.shape[1])
    if numel(w_shape) == 0 or k == 0:
        return dev.full(w_shape, 0, g.dtype)
    out = dev._alloc(w_shape, g.dtype)
    words = _words(dev, x.shape, g, geometry, groups, m, n, k, x=x, out=out)
    _tuned(dev, "conv_dw", g.dtype, (m, n, k),
           lambda v: _run(dev, "conv_dw", v, g, x, out, words, groups, m, n, k), variant)
    return out


def _check(dev, op, name, dtype):
    """Whether variant ``name`` computes ``op`` right (against the composite) on a small case with
    strides, dilation, groups and uneven padding."""
    import random
    rnd = random.Random(13)

    def rand(shape):
        return ember.tensor([rnd.uniform(-1, 1) for _ in range(numel(shape))], dtype=dtype, device=dev).reshape(shape)
    xs, ws, gs = (2, 4, 9, 10), (6, 2, 3, 3), (2, 6, 5, 7)
    args = ((2, 1), ((1, 2), (1, 0)), (1, 2), 2)  # stride, padding, dilation, groups
    x, w, g = rand(xs), rand(ws), rand(gs)
    if op == "conv_dx":
        ref = COMPOSITES["conv_input_grad"](g, w, xs, *args)
        got = input_grad(dev, g._data, w._data, xs, *args, variant=name)
    else:
        ref = COMPOSITES["conv_weight_grad"](x, g, ws, *args)
        got = weight_grad(dev, x._data, g._data, ws, *args, variant=name)
    tol = 1e-4 if dtype is ember.float32 else 2e-2
    return all(abs(a - b) <= tol * (1 + abs(a)) for a, b in zip(dev.to_list(ref._data), dev.to_list(got)))


def _tiled(*ts):
    dt = ts[0].dtype
    for t in ts:
        if type(t) is not ember.Tensor or not isinstance(t.device, Wgpu) or t.device != ts[0].device or t.dtype is not dt:
            return False
    return dt in mk._FLOATS


def _conv_input_grad(g, weight, input_shape, stride, padding, dilation, groups):
    if _tiled(g, weight):
        data = input_grad(g.device, g._data, weight._data, tuple(input_shape), stride, padding, dilation, groups)
        return ember.Tensor(data, tuple(input_shape), g.dtype, g.device)
    return COMPOSITES["conv_input_grad"](g, weight, input_shape, stride, padding, dilation, groups)


def _conv_weight_grad(x, g, weight_shape, stride, padding, dilation, groups):
    if _tiled(x, g):
        data = weight_grad(g.device, x._data, g._data, tuple(weight_shape), stride, padding, dilation, groups)
        return ember.Tensor(data, tuple(weight_shape), g.dtype, g.device)
    return COMPOSITES["conv_weight_grad"](x, g, weight_shape, stride, padding, dilation, groups)


register_fused(Wgpu, {"conv_input_grad": _conv_input_grad, "conv_weight_grad": _conv_weight_grad})
