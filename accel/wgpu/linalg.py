"""matmul, convolution and pooling (Wgpu device methods).

matmul picks a kernel by shape and dtype: the tiled float32/float16 kernels of matmul_kernels.py
(register-blocked, vec4 loads, autotuned variants) for operands of useful size whose rows are
contiguous (others are copied first when the product is large), else a direct kernel that reads
any strides (one thread per output, f64 accumulation for floats).
Convolution with float32 runs as an implicit GEMM through the same tiled kernels (the input
patches are read in place, never materialized); other cases use a direct kernel.
"""
from . import codegen, ops
from . import matmul_kernels as mk
from .arrays import numel


def _acc(self, dtype):
    if dtype.kind == "f":
        return "f64" if self.rt.has_f64 else "f32"
    return "i64" if self.rt.has_i64 else "i32"


def matmul(self, a, b):
    """The primitive ``matmul``: the tiled autotuned kernels for float32/float16 of useful size, else a direct
    kernel."""
    dtype = a.dtype
    batch = a.shape[:-2]
    m, k = a.shape[-2], a.shape[-1]
    n = b.shape[-1]
    if k == 0 or m * n == 0:
        return self.full(batch + (m, n), 0, dtype)
    out = self._alloc(batch + (m, n), dtype)
    if mk.eligible(self, a, b):
        return mk.matmul(self, a, b, out)
    if m * n * k >= mk.COPY_FOR_TILES and k % 4 == 0 and n % 4 == 0:
        # a transposed or sliced operand (x.T @ g in a backward pass): one copy, then the tiles
        ca, cb = self._contiguous(a), self._contiguous(b)
        if mk.eligible(self, ca, cb):
            return mk.matmul(self, ca, cb, out)
    return direct_matmul(self, a, b, out)


def direct_matmul(self, a, b, out):
    dtype = a.dtype
    ct = _acc(self, dtype)
    st = self.storage[dtype].wgsl
    sa, _ = a.layout()
    sb, _ = b.layout()
    nb = len(a.shape) - 2
    k = a.shape[-1]
    specs = [self._spec(a, sa[:nb] + (sa[nb], 0)), self._spec(b, sb[:nb] + (0, sb[nb + 1])), self._spec(out)]
    load = ops.load(st, ct)
    store, libs = ops.store(ct, dtype, st)
    body = ("  var acc = %s(0);\n  let ak = pi(49u);\n  let bk = pi(50u);\n"
            "  for (var t = 0u; t < pw(48u); t = t + 1u) {\n"
            "    acc = acc + %s * %s;\n  }\n  b2[u32(o2)] = %s;\n"
            % (ct, load.format("b0[u32(o0 + i32(t) * ak)]"), load.format("b1[u32(o1 + i32(t) * bk)]"),
               store.format("acc")))
    self._launch(("matmul", dtype.name, ct), lambda: codegen.strided_source([st, st, st], 3, body, libs, st == "f16"),
                 specs, out.shape, (k, sa[nb + 1], sb[nb]))
    return out


def _spatial(shape, kernel, stride, padding, dilation):
    """Everything as 2-D: (H, W, KH, KW, sh, sw, pt, pl, dh, dw); 1-D runs with H = 1."""
    if len(shape) == 3:
        return (1, shape[2], 1, kernel[0], 1, stride[0], 0, padding[0][0], 1, dilation[0])
    return (shape[2], shape[3], kernel[0], kernel[1], stride[0], stride[1], padding[0][0], padding[1][0],
            dilation[0], dilation[1])


def _out_size(size, k, s, pad, d):
    return (size + pad[0] + pad[1] - d * (k - 1) - 1) // s + 1


def _strides4(a):
    st, _ = a.layout()
    if len(a.shape) == 3:
        return (st[0], st[1], 0, st[2])
    return tuple(st)


def _dispatch(self, key, build, buffers, words, n):
    rt = self.rt
    entry = rt._pipelines.get(key)
    if entry is None:
        entry = rt.pipeline(key, build, len(buffers))
    rt.dispatch(entry, buffers, [w & 0xFFFFFFFF for w in words], (n + codegen.WG - 1) // codegen.WG)


# parameters of the direct conv and pool kernels
_GEOMETRY = ("  let OW = pw(7u); let OH = pw(6u); let O = pw(5u);\n"
             "  let ox = i % OW; let r1 = i / OW; let oy = r1 % OH; let r2 = r1 / OH;\n"
             "  let o = r2 % O; let nb = r2 / O;\n"
             "  let H = pi(3u); let W = pi(4u); let KH = pw(8u); let KW = pw(9u);\n"
             "  let sh = pi(12u); let sw = pi(13u); let dh = pi(14u); let dw = pi(15u);\n"
             "  let pt = pi(16u); let pl = pi(17u);\n")


def conv(self, x, w, stride, padding, dilation, groups):
    """The primitive ``conv``: an implicit GEMM through the tiled matmul kernels for float32, else a direct kernel."""
    shape = x.shape
    dtype = x.dtype
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = _spatial(shape, w.shape[2:], stride, padding, dilation)
    pads = ((0, 0),) + tuple(padding) if len(shape) == 3 else tuple(padding)
    OH = _out_size(H, KH, sh, pads[0], dh)
    OW = _out_size(W, KW, sw, pads[1], dw)
    N, C, O = shape[0], shape[1], w.shape[0]
    out_shape = (N, O, OW) if len(shape) == 3 else (N, O, OH, OW)
    out = self._alloc(out_shape, dtype)
    total = numel(out_shape)
    if total == 0:
        return out
    geometry = (H, W, KH, KW, sh, sw, pt, pl, dh, dw)
    if mk.conv_eligible(self, x, w):
        return mk.conv(self, x, w, out, geometry, groups)
    return direct_conv(self, x, w, out, geometry, groups)


def direct_conv(self, x, w, out, geometry, groups):
    """One thread per output element, accumulating in f64 (floats) or i64 (integers)."""
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = geometry
    dtype = x.dtype
    N, C, O = x.shape[0], x.shape[1], w.shape[0]
    OH, OW = (out.shape[2], out.shape[3]) if len(out.shape) == 4 else (1, out.shape[2])
    total = numel(out.shape)
    cg, og = C // groups, O // groups
    ct = _acc(self, dtype)
    st = self.storage[dtype].wgsl
    load = ops.load(st, ct)
    store, libs = ops.store(ct, dtype, st)
    xs, ws = _strides4(x), _strides4(w)
    words = [total, N, C, H, W, O, OH, OW, KH, KW, cg, og, sh, sw, dh, dw, pt, pl]
    words += list(xs) + [self._base(x)] + list(ws) + [self._base(w), self._base(out)]
    body = (_GEOMETRY +
            "  let cg = pw(10u); let g = o / pw(11u);\n"
            "  var acc = %s(0);\n"
            "  for (var c = 0u; c < cg; c = c + 1u) {\n"
            "    let xb = pi(22u) + i32(nb) * pi(18u) + i32(g * cg + c) * pi(19u);\n"
            "    let wb = pi(27u) + i32(o) * pi(23u) + i32(c) * pi(24u);\n"
            "    for (var ky = 0u; ky < KH; ky = ky + 1u) {\n"
            "      let iy = i32(oy) * sh + i32(ky) * dh - pt;\n"
            "      if (iy < 0 || iy >= H) { continue; }\n"
            "      for (var kx = 0u; kx < KW; kx = kx + 1u) {\n"
            "        let ix = i32(ox) * sw + i32(kx) * dw - pl;\n"
            "        if (ix < 0 || ix >= W) { continue; }\n"
            "        acc = acc + %s * %s;\n"
            "      }\n    }\n  }\n"
            "  b2[u32(pi(28u)) + i] = %s;\n"
            % (ct, load.format("b0[u32(xb + iy * pi(20u) + ix * pi(21u))]"),
               load.format("b1[u32(wb + i32(ky) * pi(25u) + i32(kx) * pi(26u))]"), store.format("acc")))
    build = lambda: codegen.strided_source([st, st, st], 0, body, libs, st == "f16")  # noqa: E731
    _dispatch(self, ("conv", dtype.name, ct), build, [x.block.buffer, w.block.buffer, out.block.buffer],
              words, total)
    return out


def pool(self, op, x, kernel, stride, padding, dilation):
    """The primitive ``pool``: one thread per output window ('max': pads are -inf; 'avg': pads count as 0)."""
    shape = x.shape
    dtype = x.dtype
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = _spatial(shape, kernel, stride, padding, dilation)
    pads = ((0, 0),) + tuple(padding) if len(shape) == 3 else tuple(padding)
    OH = _out_size(H, KH, sh, pads[0], dh)
    OW = _out_size(W, KW, sw, pads[1], dw)
    N, C = shape[0], shape[1]
    out_shape = shape[:2] + ((OW,) if len(shape) == 3 else (OH, OW))
    out = self._alloc(out_shape, dtype)
    total = numel(out_shape)
    if total == 0:
        return out
    st = self.storage[dtype].wgsl
    xs = _strides4(x)
    words = [total, N, C, H, W, C, OH, OW, KH, KW, 0, 0, sh, sw, dh, dw, pt, pl]
    words += list(xs) + [self._base(x), 0, 0, 0, 0, 0, self._base(out)]
    if op == "max":
        ct = "f64" if st == "f64" else "f32"
        nan = "isnan64" if ct == "f64" else "isnan32"
        init = "-inf64()" if ct == "f64" else "ninf32()"
        # a NaN is kept as a flag, not in acc: with acc = NaN and an early exit the H200 gave a
        # window's largest other value (its Vulkan compiler need not keep `v > NaN` false)
        fold = "if (%s(v)) { isn = true; } else if (v > acc) { acc = v; }" % nan
        libs = ["bits64" if ct == "f64" else "bits32"]
        final = "select(acc, %s, isn)" % ("nan64()" if ct == "f64" else "nan32()")
    else:
        ct = "f64" if self.rt.has_f64 else "f32"
        init = "%s(0)" % ct
        fold = "acc = acc + v;"
        libs = []
        final = "acc / %s(KH * KW)" % ct
    load = ops.load(st, ct)
    store, slibs = ops.store(ct, dtype, st)
    body = (_GEOMETRY +
            "  let xb = pi(22u) + i32(nb) * pi(18u) + i32(o) * pi(19u);\n"
            "  var acc = %s;\n  var isn = false;\n"
            "  for (var ky = 0u; ky < KH; ky = ky + 1u) {\n"
            "    let iy = i32(oy) * sh + i32(ky) * dh - pt;\n"
            "    if (iy < 0 || iy >= H) { continue; }\n"
            "    for (var kx = 0u; kx < KW; kx = kx + 1u) {\n"
            "      let ix = i32(ox) * sw + i32(kx) * dw - pl;\n"
            "      if (ix < 0 || ix >= W) { continue; }\n"
            "      let v = %s;\n      %s\n"
            "    }\n  }\n"
            "  b1[u32(pi(28u)) + i] = %s;\n"
            % (init, load.format("b0[u32(xb + iy * pi(20u) + ix * pi(21u))]"), fold, store.format(final)))
    build = lambda: codegen.strided_source([st, st], 0, body, libs + list(slibs), st == "f16")  # noqa: E731
    _dispatch(self, ("pool", op, dtype.name), build, [x.block.buffer, out.block.buffer], words, total)
    return out
