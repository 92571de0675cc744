"""Tiled matmul kernels for float32 / float16 / bfloat16 and their variants (F5, F6).

Each workgroup computes a BM x BN tile of C; each thread a TM x TN block of it, held in vec4
registers (fully unrolled: no arrays in function memory). A and B tiles of depth BK go through
workgroup memory, double-buffered: the next tile's global loads (vec4) are issued before the
current tile's FMAs, so one barrier per step suffices. Float16 operands load as vec4<f16> and
compute in f32; results round once to the output dtype.

``cooperative-matrix`` variants (tensor cores, where the adapter has the feature) tile the same
way but multiply 16x16 (f16 inputs) or 8x8 (f32) fragments per subgroup. They compile only where
the adapter accepts them; the autotuner checks every variant's result against the direct kernel
before timing it, so a variant that compiles but computes wrongly is never chosen.

Convolution (float32, float16) runs as an implicit GEMM through the SIMT variants: C[o, (n, y, x)] =
W[o, (c, ky, kx)] @ patches, with the patch matrix read from the input in place.
"""
import os

from ember import dtypes

from . import autotune, codegen
from .arrays import numel


class Variant:
    """One tiled kernel shape: workgroup tile BM x BN x BK, thread tile TM x TN, or a coop kernel."""

    def __init__(self, bm, bn, bk, tm, tn, coop=None):
        self.bm, self.bn, self.bk, self.tm, self.tn = bm, bn, bk, tm, tn
        self.coop = coop  # None, or the fragment size (16: f16 inputs, 8: f32)
        self.tx = bn // tn if tn else 0
        self.ty = bm // tm if tm else 0
        self.threads = self.tx * self.ty if coop is None else 128
        self.name = ("coop%d_" % coop if coop else "") + "%dx%dx%d_%dx%d" % (bm, bn, bk, tm, tn)

    def smem(self):
        if self.coop:  # A and B tiles in the fragment type, one C fragment per subgroup in f32
            return (self.bm + self.bn) * self.bk * (2 if self.coop == 16 else 4) + 4 * self.coop ** 2 * 4
        return 2 * (self.bm + self.bn) * self.bk * 4

    def __repr__(self):
        return "Variant(%s)" % self.name


# the last two (48 KiB of workgroup memory, 128 accumulators a thread) were the H100's fastest
# plain products at the MLP block's sizes and 4096^3 (bench/wgsl_peak.py: 31.8-37.0 TFLOP/s against
# 30.7-34.5), but slower than 128x128 tiles with a fused GELU epilogue in their store step: fused
# products are tuned with their epilogue in (fusion/compile_wgsl.py)
SIMT = [Variant(*v) for v in ((128, 128, 8, 8, 8), (128, 128, 16, 8, 8), (128, 64, 8, 8, 8),
                              (64, 128, 8, 8, 8), (64, 128, 16, 8, 8), (128, 64, 16, 8, 8),
                              (64, 64, 8, 8, 8), (128, 128, 8, 8, 16), (64, 64, 8, 4, 4),
                              (64, 64, 16, 4, 8), (128, 128, 8, 8, 4), (32, 32, 8, 4, 4),
                              (256, 128, 16, 16, 8), (128, 256, 16, 8, 16))]
COOP = [Variant(64, 64, 16, 0, 0, coop=16), Variant(128, 128, 16, 0, 0, coop=16),
        Variant(128, 128, 32, 0, 0, coop=16), Variant(64, 64, 8, 0, 0, coop=8),
        Variant(128, 128, 16, 0, 0, coop=8)]
_BY_NAME = {v.name: v for v in SIMT + COOP}
DEFAULT = {"small": "32x32x8_4x4", "medium": "64x64x8_4x4", "large": "128x128x8_8x8"}
_FLOATS = (dtypes.float32, dtypes.float16, dtypes.bfloat16)
MAXB = 4  # batch dims a tiled kernel addresses
# multiply-adds from which a transposed or sliced operand is copied so the product takes the tiles
# (the matmul primitive and Fusion's fused products both decide by it, so they give the same bits)
COPY_FOR_TILES = 1 << 18


# -- when the tiled kernels apply ----------------------------------------------------------------

def eligible(dev, a, b):
    """float32/16/bf16, each matrix stored by rows or transposed (``layout_of``), K and N multiples
    of 4, 16-byte aligned."""
    if a.dtype not in _FLOATS or len(a.shape) - 2 > MAXB:
        return False
    m, k = a.shape[-2:]
    n = b.shape[-1]
    if k % 4 or n % 4 or m * n * k < 1 << 15:
        return False
    return transposes(dev, a, b) is not None


def layout_of(strides, base, rows, cols):
    """How the tiled kernels read a ``rows`` x ``cols`` operand (batch dims first in ``strides``)
    at element ``base``: "rows" (vec4s along each row), "cols" (stored transposed, a weight's
    ``W.T``: vec4s down each column, read in place), or None (the operand is copied first or the
    direct kernel runs)."""
    if base % 4 or any(s % 4 for s in strides[:-2]):
        return None
    sr, sc = strides[-2], strides[-1]
    if (sc == 1 or cols == 1) and (sr % 4 == 0 or rows == 1) and cols % 4 == 0:
        return "rows"
    if (sr == 1 or rows == 1) and (sc % 4 == 0 or cols == 1) and rows % 4 == 0:
        return "cols"
    return None


def transposes(dev, a, b):
    """(A stored transposed, B stored transposed) as the tiled kernels read ``a`` and ``b``, or
    None where one of them cannot be read in place."""
    la = layout_of(a.layout()[0], dev._base(a), *a.shape[-2:])
    lb = layout_of(b.layout()[0], dev._base(b), *b.shape[-2:])
    if la is None or lb is None:
        return None
    return la == "cols", lb == "cols"


def leading(strides, rows, cols, transposed):
    """The stride between an operand's vec4 runs: its row stride, or its column stride when it is
    stored transposed (any multiple of 4 where there is only one run)."""
    if transposed:
        return strides[-1] if cols > 1 else rows
    return strides[-2] if rows > 1 else cols


def layout_name(name, ta, tb):
    """A variant's name in a pipeline key, with the operands' layout where one is transposed."""
    return name if not (ta or tb) else "%s_%s%s" % (name, "t" if ta else "n", "t" if tb else "n")


def _default_variant(m, n, k):
    work = m * n
    if work >= 1 << 20:
        return DEFAULT["large"]
    if work >= 1 << 14:
        return DEFAULT["medium"]
    return DEFAULT["small"]


def candidates(dev, dtype):
    """The variants that may run on this adapter for ``dtype``."""
    limit = dev.rt.max_workgroup_storage
    out = [v for v in SIMT if v.smem() <= limit]
    if "cooperative-matrix" in dev.rt.features and dtype in (dtypes.float16, dtypes.float32):
        allowed = os.environ.get("EMBER_WGPU_COOP")  # "0": none; else a comma-separated list
        out += [v for v in COOP if (v.coop == 16) == (dtype is dtypes.float16) and v.smem() <= limit
                and (allowed is None or v.name in allowed.split(","))]
    return out


# -- running -------------------------------------------------------------------------------------

def matmul(dev, a, b, out):
    m, k = a.shape[-2:]
    n = b.shape[-1]
    dtype = a.dtype
    name = autotune.choose(dev, "matmul", dtype, (m, n, k), lambda v: _run(dev, v, a, b, out),
                           [v.name for v in candidates(dev, dtype)], _default_variant(m, n, k),
                           lambda v: _check(dev, v, dtype))
    _run(dev, _BY_NAME[name], a, b, out)
    return out


def _run(dev, v, a, b, out):
    batch = a.shape[:-2]
    m, k = a.shape[-2:]
    n = b.shape[-1]
    ta, tb = transposes(dev, a, b)
    if v.coop and (ta or tb):  # the cooperative-matrix kernels read rows only
        v = _BY_NAME[_default_variant(m, n, k)]
    sa, _ = a.layout()
    sb, _ = b.layout()
    nb = len(batch)
    bshape = (1,) * (MAXB - nb) + tuple(batch)
    bsa = (0,) * (MAXB - nb) + tuple(sa[:nb])
    bsb = (0,) * (MAXB - nb) + tuple(sb[:nb])
    words = [m, n, k, leading(sa, m, k, ta), leading(sb, k, n, tb), dev._base(a), dev._base(b),
             dev._base(out)] + list(bshape) + list(bsa) + list(bsb)
    groups = ((n + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm, numel(batch))
    st = dev.storage[a.dtype].wgsl
    key = ("mm", layout_name(v.name, ta, tb), a.dtype.name, st)
    buffers = [a.block.buffer, b.block.buffer, out.block.buffer]
    if v.coop:
        _dispatch(dev, key, lambda: _source(v, a.dtype, st), buffers, words, groups)
        return
    flavor = _MatmulFlavor(st, ta, tb)
    _run_split(dev, key, v, lambda: _simt_source(v, a.dtype, st, flavor), flavor, a.dtype, st, buffers,
               words, groups, m, n, k)


def _dispatch(dev, key, build, buffers, words, groups):
    rt = dev.rt
    entry = rt._pipelines.get(key)
    if entry is None:
        entry = rt.pipeline(key, build, len(buffers))
    rt.dispatch(entry, buffers, [w & 0xFFFFFFFF for w in words], groups)


def _check(dev, name, dtype):
    """Whether variant ``name`` computes a 96 x 136 x 72 batched product right (vs the direct kernel)."""
    import random

    from .linalg import direct_matmul
    rnd = random.Random(7)
    shape_a, shape_b = (2, 96, 72), (2, 72, 136)
    av = [rnd.uniform(-1, 1) for _ in range(numel(shape_a))]
    bv = [rnd.uniform(-1, 1) for _ in range(numel(shape_b))]
    a = dev.from_list(av, shape_a, dtype)
    b = dev.from_list(bv, shape_b, dtype)
    ref = direct_matmul(dev, a, b, dev._alloc((2, 96, 136), dtype))
    got = dev._alloc((2, 96, 136), dtype)
    _run(dev, _BY_NAME[name], a, b, got)
    r, g = dev.to_list(ref), dev.to_list(got)
    tol = 1e-4 if dtype is dtypes.float32 else 2e-2
    return all(abs(x - y) <= tol * (1 + abs(x)) for x, y in zip(r, g))


# -- WGSL ------------------------------------------------------------------------------------------

# split-K (words 30, 31): workgroup z = batch * ks + slice; slice s sums k in [kbeg, kend) into
# a partial product, and a second kernel adds the ks partials (finalize_source)
_SPLIT = """
  let ks = pw(30u); let pbase = pw(29u);
  let z = ZEXPR;
  let kbeg = (wid.z % ks) * pw(31u); let kend = min(K, kbeg + pw(31u));
"""
_HEAD = """
  let M = pw(0u); let N = pw(1u); let K = pw(2u);
  let lda = pw(3u); let ldb = pw(4u);""" + _SPLIT + """
  let z3 = z % pw(11u); let z2 = (z / pw(11u)) % pw(10u); let z1 = (z / (pw(11u) * pw(10u))) % pw(9u);
  let z0 = z / (pw(11u) * pw(10u) * pw(9u));
  let abase = pw(5u) + z0 * pw(12u) + z1 * pw(13u) + z2 * pw(14u) + z3 * pw(15u);
  let bbase = pw(6u) + z0 * pw(16u) + z1 * pw(17u) + z2 * pw(18u) + z3 * pw(19u);
  let cbase = pw(7u) + z * M * N;
  let m0 = wid.y * BMu; let n0 = wid.x * BNu;
"""


def _source(v, dtype, st):
    if v.coop:
        return _coop_source(v, dtype, st)
    return _simt_source(v, dtype, st)


def _vec_types(st):
    """(storage vec4 type, conversion template to vec4<f32>)."""
    if st == "f16":
        return "vec4<f16>", "vec4<f32>({})"
    return "vec4<f32>", "{}"


def _store_c(dtype, st):
    if dtype is dtypes.bfloat16:
        return "rnd_bf16({})", ["rnd_bf16"]
    if st == "f16":
        return "f16({})", []
    if dtype is dtypes.float16:
        return "rnd_f16({})", ["rnd_f16"]
    return "{}", []


class _MatmulFlavor:
    """Operands of a plain batched matmul: vec4 rows of A (M x K) and B (K x N), or of their
    transposes where ``ta``/``tb`` (then the leading strides lda/ldb step along K); C contiguous."""

    def __init__(self, st, ta=False, tb=False):
        self.vec, self.conv = _vec_types(st)
        self.st = st
        self.ta, self.tb = ta, tb

    def bindings(self):
        return ["@group(0) @binding(1) var<storage, read_write> A: array<%s>;" % self.vec,
                "@group(0) @binding(2) var<storage, read_write> B: array<%s>;" % self.vec,
                "@group(0) @binding(3) var<storage, read_write> C: array<%s>;" % self.st,
                "@group(0) @binding(4) var<storage, read_write> Pt: array<f32>;"]

    def head(self, bm, bn, z="wid.z / ks"):
        return _HEAD.replace("BMu", "%du" % bm).replace("BNu", "%du" % bn).replace("ZEXPR", z)

    def _load(self, reg, arr, base, ld, i, i_end, j, j_end):
        """``reg`` = the vec4 of ``arr`` at (i, j) (j the vec4's own dim), zero past the ends."""
        return "%s = vec4<f32>(0.0); if (%s < %s && %s < %s) { %s = %s; }" % (
            reg, i, i_end, j, j_end, reg, self.conv.format("%s[(%s + %s * %s + %s) / 4u]" % (arr, base, i, ld, j)))

    def load_a(self, reg, row, kk):
        return self._load(reg, "A", "abase", "lda", row, "M", kk, "kend")

    def load_b(self, reg, kk, col):
        return self._load(reg, "B", "bbase", "ldb", kk, "kend", col, "N")

    def load_a_cols(self, reg, kk, row):
        return self._load(reg, "A", "abase", "lda", kk, "kend", row, "M")

    def load_b_cols(self, reg, col, kk):
        return self._load(reg, "B", "bbase", "ldb", col, "N", kk, "kend")

    def store_c(self, row, col, value):
        return "C[cbase + %s * N + %s] = %s;" % (row, col, value)


class _ConvFlavor:
    """Implicit GEMM of a convolution, per group z: A = the group's filters (og x cg*KH*KW, read
    from the contiguous weights), B = input patches (cg*KH*KW x N*OH*OW, read from x in place,
    zero in the padding), C = the output (N, O, OH, OW)."""

    def __init__(self, st):
        self.st = st
        self.cv = "f32({})" if st == "f16" else "{}"

    def bindings(self):
        return ["@group(0) @binding(1) var<storage, read_write> X: array<%s>;" % self.st,
                "@group(0) @binding(2) var<storage, read_write> Wt: array<%s>;" % self.st,
                "@group(0) @binding(3) var<storage, read_write> C: array<%s>;" % self.st,
                "@group(0) @binding(4) var<storage, read_write> Pt: array<f32>;"]

    def head(self, bm, bn, z="wid.z / ks"):
        return ("  let M = pw(0u); let N = pw(1u); let K = pw(2u);\n" + _SPLIT.replace("ZEXPR", z) +
                "  let H = i32(pw(4u)); let W = i32(pw(5u)); let OH = pw(6u); let OW = pw(7u);\n"
                "  let KH = pw(8u); let KW = pw(9u); let sh = i32(pw(10u)); let sw = i32(pw(11u));\n"
                "  let dh = i32(pw(12u)); let dw = i32(pw(13u)); let pt = i32(pw(14u)); let pl = i32(pw(15u));\n"
                "  let cg = pw(16u); let og = pw(17u); let O = pw(25u);\n"
                "  let xs0 = pi(18u); let xs1 = pi(19u); let xs2 = pi(20u); let xs3 = pi(21u);\n"
                "  let xbase = pi(22u) + i32(z * cg) * xs1;\n"
                "  let wbase = pw(23u) + z * og * K;\n"
                "  let cbase = pw(24u);\n"
                "  let m0 = wid.y * %du; let n0 = wid.x * %du;\n" % (bm, bn))

    def _x(self, kk, col):
        return ("conv_x(%s, %s, kend, N, xbase, H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl, xs0, xs1, xs2, xs3)"
                % (kk, col))

    def helpers(self):
        return ("fn conv_x(k: u32, col: u32, K: u32, N: u32, xbase: i32, H: i32, W: i32, OH: u32, OW: u32,\n"
                "          KH: u32, KW: u32, sh: i32, sw: i32, dh: i32, dw: i32, pt: i32, pl: i32,\n"
                "          xs0: i32, xs1: i32, xs2: i32, xs3: i32) -> f32 {\n"
                "  if (k >= K || col >= N) { return 0.0; }\n"
                "  let c = k / (KH * KW); let ky = (k / KW) %% KH; let kx = k %% KW;\n"
                "  let nb = col / (OH * OW); let oy = (col / OW) %% OH; let ox = col %% OW;\n"
                "  let iy = i32(oy) * sh + i32(ky) * dh - pt; let ix = i32(ox) * sw + i32(kx) * dw - pl;\n"
                "  if (iy < 0 || iy >= H || ix < 0 || ix >= W) { return 0.0; }\n"
                "  return %s;\n}\n" % self.cv.format("X[u32(xbase + i32(nb) * xs0 + i32(c) * xs1 + iy * xs2 + ix * xs3)]"))

    def load_a(self, reg, row, kk):
        parts = ["select(0.0, %s, %s < M && (%s + %du) < kend)"
                 % (self.cv.format("Wt[wbase + %s * K + %s + %du]" % (row, kk, c)), row, kk, c) for c in range(4)]
        return "%s = vec4<f32>(%s);" % (reg, ", ".join(parts))

    def load_b(self, reg, kk, col):
        parts = [self._x(kk, "(%s + %du)" % (col, c)) for c in range(4)]
        return "%s = vec4<f32>(%s);" % (reg, ", ".join(parts))

    def store_c(self, row, col, value):
        return ("{ let cc = %s; let nb = cc / (OH * OW); let sp = cc %% (OH * OW); "
                "C[cbase + (nb * O + z * og + %s) * OH * OW + sp] = %s; }" % (col, row, value))


def finalize_source(dtype, st, flavor, wide=False):
    """Adds the ks partial products of a split-K run and stores C through the flavor: a thread per
    output adding the slices in order, or (``wide``) a workgroup per output, its 256 threads
    taking every 256th slice, then a tree."""
    store, libs = _store_c(dtype, st)
    from . import wgsl_lib
    L = ["enable f16;" if st == "f16" else "", codegen.prelude([], False).replace("enable f16;\n", "")]
    L += flavor.bindings()
    L.append(wgsl_lib.lib(libs))
    if hasattr(flavor, "helpers"):
        L.append(flavor.helpers())
    if wide:
        L.append("var<workgroup> part: array<f32, 256>;")
    L.append("@compute @workgroup_size(256)")
    L.append("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {")
    L.append(flavor.head(0, 0, "wid.z"))
    if wide:
        L.append("  let idx = wid.x; let row = idx / N; let col = idx % N;")
        L.append("  var acc = 0.0;")
        L.append("  for (var s = lid; s < ks; s = s + 256u) { acc = acc + Pt[pbase + ((z * ks + s) * M + row) * N + col]; }")
        L.append("  part[lid] = acc;\n  workgroupBarrier();")
        L.append("  for (var h = 128u; h > 0u; h = h >> 1u) {\n    if (lid < h) { part[lid] = part[lid] + part[lid + h]; }\n"
                 "    workgroupBarrier();\n  }")
        L.append("  if (lid == 0u) { let acc = part[0]; " + flavor.store_c("row", "col", store.format("acc")) + " }")
    else:
        L.append("  let idx = wid.x * 256u + lid; if (idx >= M * N) { return; }")
        L.append("  let row = idx / N; let col = idx % N;")
        L.append("  var acc = 0.0;")
        L.append("  for (var s = 0u; s < ks; s = s + 1u) { acc = acc + Pt[pbase + ((z * ks + s) * M + row) * N + col]; }")
        L.append("  " + flavor.store_c("row", "col", store.format("acc")))
    L.append("}")
    return "\n".join(L) + "\n"


# a split-K run whose caller asks for it adds its slices by a workgroup per output where there are
# at most WIDE_OUTPUTS outputs and WIDE_SLICES slices or more (a long serial loop per thread else)
WIDE_OUTPUTS, WIDE_SLICES = 8192, 32


# split-K: a product whose output tiles cannot fill the GPU (fewer than SPLIT_TILES workgroups) and
# whose K is at least SPLIT_MIN_K is cut along K into slices of at least SPLIT_CHUNK, aiming at
# SPLIT_WORKGROUPS workgroups (bench/gpu.py sweeps the pairs in SPLIT_RULES on the real GPU)
SPLIT_TILES = 128
SPLIT_WORKGROUPS = 256
SPLIT_MIN_K, SPLIT_CHUNK = 256, 64  # the H200's best for the batch-64 training steps (bench/results)


def split_k(v, m, n, k, batch, rule=None):
    """(slices, k per slice): split K when the output tiles alone cannot fill the GPU. ``rule``:
    (fewest tiles that are not split, workgroups aimed at, most slices), default
    (SPLIT_TILES, SPLIT_WORKGROUPS, SPLIT_WORKGROUPS)."""
    few, aim, most = rule or (SPLIT_TILES, SPLIT_WORKGROUPS, SPLIT_WORKGROUPS)
    tiles = ((m + v.bm - 1) // v.bm) * ((n + v.bn - 1) // v.bn) * batch
    if tiles >= few or k < SPLIT_MIN_K:
        return 1, k
    ks = min((aim + tiles - 1) // tiles, k // SPLIT_CHUNK, most)
    if ks < 2:
        return 1, k
    chunk = (k + ks - 1) // ks
    chunk = (chunk + v.bk - 1) // v.bk * v.bk
    return (k + chunk - 1) // chunk, chunk


def _run_split(dev, key, v, build, flavor, dtype, st, buffers, words, grid, m, n, k, extra=(), rule=None,
               wide=False):
    """Dispatch the tiled kernel, split along K (and finalized) when that fills the GPU better.
    ``extra``: buffers bound after the partial products (a fused epilogue's inputs and outputs);
    ``rule``: split_k's; ``wide``: finalize many slices of few outputs by a workgroup per output."""
    extra = list(extra)
    ks, chunk = split_k(v, m, n, k, grid[2], rule)
    words = list(words) + [0] * (32 - len(words))
    words[30], words[31] = ks, chunk
    if ks == 1:
        _dispatch(dev, key, build, buffers + [buffers[2]] + extra, words, grid)
        return
    part = dev.mem.alloc(grid[2] * ks * m * n * 4)
    pbuf = part.buffer
    words[29] = part.offset // 4
    _dispatch(dev, key, build, buffers + [pbuf] + extra, words, (grid[0], grid[1], grid[2] * ks))
    if wide and m * n <= WIDE_OUTPUTS and ks >= WIDE_SLICES:
        _dispatch(dev, ("finalize",) + key[2:] + (type(flavor).__name__, "wide"),
                  lambda: finalize_source(dtype, st, flavor, True), buffers + [pbuf] + extra, words,
                  (m * n, 1, grid[2]))
    else:
        _dispatch(dev, ("finalize",) + key[2:] + (type(flavor).__name__,),
                  lambda: finalize_source(dtype, st, flavor), buffers + [pbuf] + extra, words,
                  ((m * n + 255) // 256, 1, grid[2]))
    del part


def _simt_source(v, dtype, st, flavor=None):
    BM, BN, BK, TM, TN, TX, TY, T = v.bm, v.bn, v.bk, v.tm, v.tn, v.tx, v.ty, v.threads
    flavor = flavor or _MatmulFlavor(st)
    store, libs = _store_c(dtype, st)
    la = BM * BK // 4  # vec4 loads per A tile
    lb = BK * BN // 4
    ra, rb = (la + T - 1) // T, (lb + T - 1) // T
    L = []
    L.append("enable f16;" if st == "f16" else "")
    L.append(codegen.prelude([], False).replace("enable f16;\n", ""))
    L += flavor.bindings()
    L.append("var<workgroup> As: array<vec4<f32>, %d>;" % (2 * BK * BM // 4))
    L.append("var<workgroup> Bs: array<vec4<f32>, %d>;" % (2 * BK * BN // 4))
    from . import wgsl_lib
    L.append(wgsl_lib.lib(libs))
    if hasattr(flavor, "helpers"):
        L.append(flavor.helpers())
    L.append("@compute @workgroup_size(%d)" % T)
    L.append("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {")
    L.append(flavor.head(BM, BN))
    L.append("  let tx = lid %% %du; let ty = lid / %du;" % (TX, TX))
    # global -> registers: thread lid loads vec4 number lid + r*T of each tile
    for r in range(ra):
        L.append("  var ra%d: vec4<f32>;" % r)
    for r in range(rb):
        L.append("  var rb%d: vec4<f32>;" % r)
    L.append("  let nt = (kend - kbeg + %du) / %du;" % (BK - 1, BK))

    # the tiles live depth-major in workgroup memory (As[k][BM/4], Bs[k][BN/4]): an operand whose
    # vec4s run along K (A by rows, a transposed B) is scattered into it, one whose vec4s run
    # along M or N (B by rows, a transposed A) is stored as it came (scattering 4x4 blocks
    # transposed in registers instead, four vec4 stores for sixteen scalar ones, was slower in 34
    # of 35 cells of bench/wgsl_peak.py on an H100: bench/results/gpu-2026-12-06-h100-s6run2-wgsl_peak.txt)
    ta, tb = getattr(flavor, "ta", False), getattr(flavor, "tb", False)

    def load_regs(kt):
        out = []
        for r in range(ra):
            if ta:
                out.append("  { let q = lid + %du; if (q < %du) { let kk = kbeg + %s * %du + q / %du; let row = m0 + (q %% %du) * 4u;"
                           % (r * T, la, kt, BK, BM // 4, BM // 4))
                out.append("    %s } }" % flavor.load_a_cols("ra%d" % r, "kk", "row"))
            else:
                out.append("  { let q = lid + %du; if (q < %du) { let row = m0 + q / %du; let kk = kbeg + %s * %du + (q %% %du) * 4u;"
                           % (r * T, la, BK // 4, kt, BK, BK // 4))
                out.append("    %s } }" % flavor.load_a("ra%d" % r, "row", "kk"))
        for r in range(rb):
            if tb:
                out.append("  { let q = lid + %du; if (q < %du) { let col = n0 + q / %du; let kk = kbeg + %s * %du + (q %% %du) * 4u;"
                           % (r * T, lb, BK // 4, kt, BK, BK // 4))
                out.append("    %s } }" % flavor.load_b_cols("rb%d" % r, "col", "kk"))
            else:
                out.append("  { let q = lid + %du; if (q < %du) { let kk = kbeg + %s * %du + q / %du; let col = n0 + (q %% %du) * 4u;"
                           % (r * T, lb, kt, BK, BN // 4, BN // 4))
                out.append("    %s } }" % flavor.load_b("rb%d" % r, "kk", "col"))
        return out

    def scatter(tile, buf, reg, count, width, r):
        """Store vec4 ``reg`` (4 consecutive k of one row or column) into a depth-major tile."""
        out = ["  { let q = lid + %du; if (q < %du) { let j = q / %du; let kq = (q %% %du) * 4u;"
               % (r * T, count, BK // 4, BK // 4)]
        for c in range(4):
            out.append("    %s[%s + ((kq + %du) * %du + j) / 4u][j %% 4u] = %s[%d];" % (tile, buf, c, width, reg, c))
        out.append("  } }")
        return out

    def store_regs(bufa, bufb):
        out = []
        for r in range(ra):
            if ta:
                out.append("  { let q = lid + %du; if (q < %du) { As[%s + q] = ra%d; } }" % (r * T, la, bufa, r))
            else:
                out += scatter("As", bufa, "ra%d" % r, la, BM, r)
        for r in range(rb):
            if tb:
                out += scatter("Bs", bufb, "rb%d" % r, lb, BN, r)
            else:
                out.append("  { let q = lid + %du; if (q < %du) { Bs[%s + q] = rb%d; } }" % (r * T, lb, bufb, r))
        return out

    # accumulators: row group g (TM/4 of them), row i in it, column group h (TN/4)
    G, H = TM // 4, TN // 4
    for g in range(G):
        for i in range(4):
            for h in range(H):
                L.append("  var c%d_%d_%d = vec4<f32>(0.0);" % (g, i, h))
    L += load_regs("0u")
    L += store_regs("0u", "0u")
    L.append("  workgroupBarrier();")
    L.append("  for (var t = 0u; t < nt; t = t + 1u) {")
    L.append("    let cur = (t %% 2u) * %du; let curb = (t %% 2u) * %du;" % (BK * BM // 4, BK * BN // 4))
    L.append("    let nxt = %du - cur; let nxtb = %du - curb;" % (BK * BM // 4, BK * BN // 4))
    L.append("    let more = t + 1u < nt;")
    L.append("    if (more) {")
    L += ["  " + x for x in load_regs("(t + 1u)")]
    L.append("    }")
    # the depth loop, unrolled: BK steps of (TM/4 + TN/4) vec4 reads and TM*TN/4 vec4 FMAs
    L.append("    let ab = cur + ty; let bb = curb + tx;")
    for kk in range(BK):
        L.append("    {")
        for g in range(G):
            L.append("      let a%d = As[ab + %du];" % (g, kk * (BM // 4) + g * TY))
        for h in range(H):
            L.append("      let b%d = Bs[bb + %du];" % (h, kk * (BN // 4) + h * TX))
        for g in range(G):
            for i in range(4):
                for h in range(H):
                    L.append("      c%d_%d_%d = fma(vec4<f32>(a%d[%d]), b%d, c%d_%d_%d);" % (g, i, h, g, i, h, g, i, h))
        L.append("    }")
    L.append("    if (more) {")
    L += ["  " + x for x in store_regs("nxt", "nxtb")]
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("  }")
    # write C
    for g in range(G):
        for i in range(4):
            L.append("  { let row = m0 + %du + ty * 4u + %du; if (row < M) {" % (g * TY * 4, i))
            for h in range(H):
                L.append("    { let col = n0 + %du + tx * 4u;" % (h * TX * 4))
                for c in range(4):
                    val = "c%d_%d_%d[%d]" % (g, i, h, c)
                    L.append("      if (col + %du < N) { if (ks == 1u) { %s } else { Pt[pbase + (wid.z * M + row) * N + col + %du] = %s; } }" % (
                        c, flavor.store_c("row", "col + %du" % c, store.format(val)), c, val))
                L.append("    }")
            L.append("  } }")
    L.append("}")
    return "\n".join(L) + "\n"


def _coop_source(v, dtype, st):
    """Subgroup matrix multiply: 4 subgroups of 32 per workgroup (NVIDIA's subgroup size; the
    autotuner's check rejects the kernel where that does not hold), each a (BM/2) x (BN/2) quarter
    of the tile in F x F fragments (F = 16: f16 inputs, 8: f32), accumulating in f32. Each finished
    fragment goes through a small per-subgroup staging area to be rounded and stored."""
    F = v.coop
    BM, BN, BK = v.bm, v.bn, v.bk
    el = "f16" if F == 16 else "f32"
    QM, QN = BM // 2, BN // 2
    fm, fn = QM // F, QN // F
    vec, conv = _vec_types(st)
    store, libs = _store_c(dtype, st)
    T = 128
    la, lb = BM * BK // 4, BK * BN // 4
    L = ["enable f16;" if (st == "f16" or el == "f16") else "", "enable wgpu_cooperative_matrix;",
         codegen.prelude([], False).replace("enable f16;\n", ""),
         "@group(0) @binding(1) var<storage, read_write> A: array<%s>;" % vec,
         "@group(0) @binding(2) var<storage, read_write> B: array<%s>;" % vec,
         "@group(0) @binding(3) var<storage, read_write> C: array<%s>;" % st,
         "var<workgroup> As: array<%s, %d>;" % (el, BM * BK),
         "var<workgroup> Bs: array<%s, %d>;" % (el, BK * BN),
         "var<workgroup> Cs: array<f32, %d>;" % (4 * F * F)]
    from . import wgsl_lib
    L.append(wgsl_lib.lib(libs))
    L.append("@compute @workgroup_size(%d)" % T)
    L.append("fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) lid: u32) {")
    L.append(_HEAD.replace("BMu", "%du" % BM).replace("BNu", "%du" % BN))
    L.append("  let sg = lid / 32u; let lane = lid %% 32u;")
    L.append("  let qm = (sg / 2u) * %du; let qn = (sg %% 2u) * %du;" % (QM, QN))
    for i in range(fm):
        for j in range(fn):
            L.append("  var acc%d_%d = coop_mat%dx%d<f32, C>();" % (i, j, F, F))
    L.append("  for (var k0 = 0u; k0 < K; k0 = k0 + %du) {" % BK)
    L.append("    for (var q = lid; q < %du; q = q + %du) {" % (la, T))
    L.append("      let row = m0 + q / %du; let kk = k0 + (q %% %du) * 4u;" % (BK // 4, BK // 4))
    L.append("      var val = vec4<f32>(0.0); if (row < M && kk < K) { val = %s; }" % conv.format("A[(abase + row * lda + kk) / 4u]"))
    L.append("      let o = (q / %du) * %du + (q %% %du) * 4u;" % (BK // 4, BK, BK // 4))
    for c in range(4):
        L.append("      As[o + %du] = %s(val[%d]);" % (c, el, c))
    L.append("    }")
    L.append("    for (var q = lid; q < %du; q = q + %du) {" % (lb, T))
    L.append("      let kk = k0 + q / %du; let col = n0 + (q %% %du) * 4u;" % (BN // 4, BN // 4))
    L.append("      var val = vec4<f32>(0.0); if (kk < K && col < N) { val = %s; }" % conv.format("B[(bbase + kk * ldb + col) / 4u]"))
    for c in range(4):
        L.append("      Bs[q * 4u + %du] = %s(val[%d]);" % (c, el, c))
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("    for (var kf = 0u; kf < %du; kf = kf + %du) {" % (BK, F))
    for i in range(fm):
        L.append("      let fa%d = coopLoad<coop_mat%dx%d<%s, A>>(&As[(qm + %du) * %du + kf], %du);" % (i, F, F, el, i * F, BK, BK))
    for j in range(fn):
        L.append("      let fb%d = coopLoad<coop_mat%dx%d<%s, B>>(&Bs[kf * %du + qn + %du], %du);" % (j, F, F, el, BN, j * F, BN))
    for i in range(fm):
        for j in range(fn):
            L.append("      acc%d_%d = coopMultiplyAdd(fa%d, fb%d, acc%d_%d);" % (i, j, i, j, i, j))
    L.append("    }")
    L.append("    workgroupBarrier();")
    L.append("  }")
    for i in range(fm):
        for j in range(fn):
            L.append("  coopStore(acc%d_%d, &Cs[sg * %du], %du);" % (i, j, F * F, F))
            L.append("  workgroupBarrier();")
            L.append("  for (var e = lane; e < %du; e = e + 32u) {" % (F * F))
            L.append("    let row = m0 + qm + %du + e / %du; let col = n0 + qn + %du + e %% %du;" % (i * F, F, j * F, F))
            L.append("    if (row < M && col < N) { C[cbase + row * N + col] = %s; }" % store.format("Cs[sg * %du + e]" % (F * F)))
            L.append("  }")
            L.append("  workgroupBarrier();")
    L.append("}")
    return "\n".join(L) + "\n"


# -- convolution as an implicit GEMM ------------------------------------------------------------------

def conv_eligible(dev, x, w):
    """float32/16/bf16 convolutions with enough work for tiles (small ones run the direct kernel)."""
    if x.dtype not in _FLOATS:
        return False
    o, cg = w.shape[0], w.shape[1]
    k = cg * numel(w.shape[2:])
    return o * k * x.shape[0] >= 1 << 12


def conv(dev, x, w, out, geometry, groups):
    w = dev._contiguous(w)
    m, ncols, k = _conv_dims(x, w, out, geometry, groups)
    dtype = x.dtype
    simt = [v.name for v in SIMT if v.smem() <= dev.rt.max_workgroup_storage]
    name = autotune.choose(dev, "conv", dtype, (m, ncols, k),
                           lambda v: _run_conv(dev, v, x, w, out, geometry, groups), simt,
                           _default_variant(m, ncols, k), lambda name: _check_conv(dev, name, dtype))
    _run_conv(dev, _BY_NAME[name], x, w, out, geometry, groups)
    return out


def _conv_dims(x, w, out, geometry, groups):
    """(M, N, K) of the implicit GEMM: filters per group, output positions, patch length."""
    KH, KW = geometry[2], geometry[3]
    OH, OW = (out.shape[2], out.shape[3]) if len(out.shape) == 4 else (1, out.shape[2])
    return w.shape[0] // groups, x.shape[0] * OH * OW, (x.shape[1] // groups) * KH * KW


def _run_conv(dev, v, x, w, out, geometry, groups):
    H, W, KH, KW, sh, sw, pt, pl, dh, dw = geometry
    m, ncols, k = _conv_dims(x, w, out, geometry, groups)
    OH, OW = (out.shape[2], out.shape[3]) if len(out.shape) == 4 else (1, out.shape[2])
    xs, _ = x.layout()
    xs = (xs[0], xs[1], 0, xs[2]) if len(x.shape) == 3 else tuple(xs)
    words = [m, ncols, k, x.shape[1], H, W, OH, OW, KH, KW, sh, sw, dh, dw, pt, pl,
             x.shape[1] // groups, m] + list(xs) + [dev._base(x), dev._base(w), dev._base(out), w.shape[0]]
    dtype = x.dtype
    st = dev.storage[dtype].wgsl
    grid = ((ncols + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm, groups)
    _run_split(dev, ("conv", v.name, dtype.name, st), v, lambda: _simt_source(v, dtype, st, _ConvFlavor(st)),
               _ConvFlavor(st), dtype, st, [x.block.buffer, w.block.buffer, out.block.buffer], words, grid,
               m, ncols, k)


def _check_conv(dev, name, dtype):
    """Whether variant ``name`` convolves right (against the direct kernel) on a small case."""
    import random

    from .linalg import direct_conv
    rnd = random.Random(11)
    x = dev.from_list([rnd.uniform(-1, 1) for _ in range(2 * 4 * 9 * 10)], (2, 4, 9, 10), dtype)
    w = dev.from_list([rnd.uniform(-1, 1) for _ in range(6 * 2 * 3 * 3)], (6, 2, 3, 3), dtype)
    geometry = (9, 10, 3, 3, 2, 1, 1, 1, 1, 2)  # H W KH KW sh sw pt pl dh dw
    ref = direct_conv(dev, x, w, dev._alloc((2, 6, 5, 8), dtype), geometry, 2)
    got = dev._alloc((2, 6, 5, 8), dtype)
    _run_conv(dev, _BY_NAME[name], x, w, got, geometry, 2)
    r, g = dev.to_list(ref), dev.to_list(got)
    tol = 1e-4 if dtype is dtypes.float32 else 2e-2
    return all(abs(a - b) <= tol * (1 + abs(a)) for a, b in zip(r, g))
