"""The WGSL compiler of fused kernels for ``Wgpu`` (the contract in ir.py).

Every node is computed exactly as the unfused primitive computes it (ops.py's recipes: the same
compute type, WGSL expression and rounding to the dtype's storage), and its value is kept as the
primitive would store it. The primitives' kernels read every operand from memory, so the shader
compiler cannot fold across ops; here each node's value and each constant pass through an xor with
a parameter word that is always 0, which the compiler cannot see through: no ``x - x -> 0``
(isfinite's ``(x - x) == 0``), no ``x + 0 -> x``, no fma contraction of ``a * b + c``, no
reassociation of constants, and none of a driver's own folding mistakes across ops (lavapipe gets
``i64(x) < 0`` wrong for a negative i32 ``x`` when it sees the conversion). So a fused chain gives
the unfused chain's values bit for bit (except where wgsl_fast.py's float32 paths are used:
``x / const`` exactly, ``erf`` within tolerance, from ``x * (1 / c)`` when its argument is ``x / c``).

Three kernel shapes:

- flat, every input contiguous over the space (or a stride-0 scalar): each thread loads
  ``VEC`` vec4s of each input first, then computes and stores them (the last partial vec4 is
  stored component by component); without 16-byte alignment, one element per thread;
- flat, general: the space coalesced over every operand, each input addressed by its strides;
  when it coalesces to (rows, cols) (a bias over rows, a transpose), a 2-d grid finds each
  thread's element without a division;
- rows along ``dim``: one workgroup per row; each Reduce phase folds its node over the row
  (threads stride the row, then a tree in workgroup memory), the Map phase writes the row. Rows
  of up to 2048 elements are read once: each thread keeps its elements in registers for every
  phase (a softmax reads its input once, not three times).

A ``MatmulKernel`` runs through the tiled matmul templates of ``matmul_kernels.py`` with an
epilogue at their store step (the autotuner's variant for the shape, timed with the epilogue in),
or through a direct kernel (one thread per output, any strides and dtype) where the tiles do not
apply.

Sizes, strides and offsets travel in the dispatch's parameter words, so another batch size reuses
the pipeline: a pipeline is cached by the kernel's key and its specialisation.
"""
import math
import os
import re
import struct
import zlib

from ember import dtypes

from ember.accel.wgpu import autotune, ops, wgsl_lib
from ember.accel.wgpu import matmul_kernels as mk
from ember.accel.wgpu.arrays import WArray, coalesce, contiguous_strides, numel

from . import wgsl_fast
from .ir import Reduce

WG = 256  # threads per workgroup
# vec4s per thread in the contiguous flat kernel, all loaded before the first store
# (bench/gpu.py --only fusion reports the figure of 1, 2 and 4 on the real GPU)
VEC = int(os.environ.get("EMBER_FUSION_VEC", "4"))  # 4 was the fastest on the H200 (3.57 vs 3.45 TB/s at 2)
# vec4s per thread of a large kernel with transcendental work: more independent loads in flight
# hide its arithmetic (the GELU over 64M floats on the H200: 3.79 TB/s at 8, 3.58 at 4, 2026-12-02)
VEC_HEAVY = int(os.environ.get("EMBER_FUSION_VEC_HEAVY", "8"))
HEAVY_MIN = 1 << 20  # elements; below, fewer threads would each do more and the GPU sits idler
_TRANSCENDENTAL = ("exp", "expm1", "log", "log1p", "erf", "tanh", "sin", "cos", "tan", "asin", "acos", "atan",
                   "sinh", "cosh")
WORDS = 64  # parameter words per dispatch
_MASK = 0xFFFFFFFF
_REDUCE_IDENTITY = {"sum": "0", "prod": "1"}


def _dtype(name):
    return getattr(dtypes, "bool_" if name == "bool" else name)


def _f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


def _f64_bits(v):
    return struct.unpack("<Q", struct.pack("<d", v))[0]


def _f32_value(v):
    """``v`` rounded to float32, with float32's overflow to infinity."""
    try:
        return struct.unpack("<f", struct.pack("<f", v))[0]
    except OverflowError:
        return float("inf") if v > 0 else float("-inf")


def literal(value, wgsl):
    """A WGSL expression of type ``wgsl`` holding ``value`` exactly (nan, inf and -0.0 included)."""
    if wgsl == "f32":
        return "bitcast<f32>(0x%08xu)" % _f32_bits(_f32_value(float(value)))
    if wgsl == "f64":
        return "bitcast<f64>(0x%016xlu)" % _f64_bits(float(value))
    if wgsl == "f16":
        return "f16(%s)" % literal(value, "f32")
    if wgsl == "u32":
        return "%du" % (int(value) & _MASK)
    if wgsl == "i32":
        return "bitcast<i32>(0x%08xu)" % (int(value) & _MASK)
    if wgsl == "i64":
        return "bitcast<i64>(0x%016xlu)" % (int(value) & 0xFFFFFFFFFFFFFFFF)
    raise ValueError("literal: no WGSL type %r" % (wgsl,))


class Expressions:
    """WGSL for a kernel's nodes: ``function(name, targets, params)`` writes a WGSL function that
    computes the ``targets`` nodes from its parameters (loads ``l<k>``, row values ``r<j>``,
    ``acc``), each value in its dtype's storage type, as the primitives would store it."""

    def __init__(self, dev, kernel, zero_word=2, fast=True):
        self.dev = dev
        self.fast = fast and dev.rt.has_f64  # float32 fast paths (wgsl_fast.py) replace f64 routes
        # division by a float32 constant through f64 multiplies, not an f64 division (wgsl_fast)
        self.fast_div = self.fast
        self.extra = {}  # helper name -> WGSL (fast paths)
        self.zero = zero_word  # a parameter word that is always 0 (the rounding barrier's)
        self.kernel = kernel
        self.nodes = kernel.nodes
        self.rt = dev.rt
        self.libs = set()

    def st(self, dtype_name):
        return self.dev.storage[_dtype(dtype_name)].wgsl

    def opaque(self, expr, wgsl):
        """``expr`` through an xor with the always-0 parameter word: a value the shader compiler
        cannot see into, so it folds nothing across it (no ``x - x -> 0``, no ``x + 0 -> x``, no
        fma contraction of a product and a sum): each node rounds as its primitive does."""
        z = "pw(%du)" % self.zero
        if wgsl in ("f32", "i32"):
            return "bitcast<%s>(bitcast<u32>(%s) ^ %s)" % (wgsl, expr, z)
        if wgsl == "u32":
            return "(%s ^ %s)" % (expr, z)
        if wgsl in ("f64", "i64") and self.rt.has_i64:
            return "bitcast<%s>(bitcast<u64>(%s) ^ u64(%s))" % (wgsl, expr, z)
        return expr

    def operand(self, j, ct, again=False):
        """Node ``j`` read as compute type ``ct`` (a constant in ``ct``'s own precision, as the
        primitives take a Python scalar). ``again``: the node is the op's other operand too; the
        primitive reads it twice from memory, so here it is a second, opaque value."""
        n = self.nodes[j]
        if n[0] == "const":
            return self.opaque(literal(n[2], ct), ct)
        v = "v%d" % j
        if again:
            v = self.opaque(v, self.st(n[1]))
        return ops.load(self.st(n[1]), ct).format(v)

    def stored(self, j):
        """Node ``j`` in its storage type."""
        n = self.nodes[j]
        if n[0] == "const":
            return self.opaque(literal(dtypes.round_values([n[2]], _dtype(n[1]))[0], self.st(n[1])), self.st(n[1]))
        return "v%d" % j

    def value(self, i):
        """The WGSL expression of node ``i`` in its storage type."""
        n = self.nodes[i]
        kind, dt = n[0], n[1]
        rt = self.rt
        if kind == "load":
            return "l%d" % n[2]
        if kind == "row":
            return "r%d" % n[2]
        if kind == "acc":
            return "acc"
        if kind == "where":
            return self.opaque("select(%s, %s, %s != 0u)" % (self.stored(n[4]), self.stored(n[3]), self.stored(n[2])),
                               self.st(dt))
        if kind == "cast":
            return self.opaque(self._cast(n), self.st(dt))
        if kind == "unary":
            src = _dtype(self.nodes[n[3]][1])
            if src.kind != "f" and n[2] in ("floor", "ceil", "round", "trunc"):
                return self.stored(n[3])
            if self.fast and n[2] == "erf" and dt == "float32":
                self.extra["erf32"] = wgsl_fast.ERF32
                return self.opaque("erf32(%s)" % (self._scaled_erf_arg(n[3]) or self.stored(n[3])), "f32")
            rec = ops.unary_recipe(n[2], src, rt.has_f64, rt.has_i64)
            expr = rec.fn(self.operand(n[3], rec.ct))
        elif kind == "binary":
            x, y = n[3], n[4]
            src = _dtype(self.nodes[y if self.nodes[x][0] == "const" else x][1])
            rec = ops.binary_recipe(n[2], src, rt.has_f64, rt.has_i64)
            if (self.fast and n[2] == "div" and dt == "float32" and self.nodes[y][0] == "const"
                    and self.nodes[x][0] != "const"
                    and (self.fast_div or wgsl_fast.power_of_two(float(self.nodes[y][2])))):
                fast = self._divide(rec, x, float(self.nodes[y][2]))
                if fast is not None:
                    return fast
            expr = rec.fn(self.operand(x, rec.ct), self.operand(y, rec.ct, again=x == y))
        else:
            raise ValueError("fusion: unknown node %r" % (n,))
        if rec.out.name != dt:
            raise ValueError("fusion: node %r: the primitive gives %s" % (n, rec.out.name))
        self.libs.update(rec.libs)
        store, libs = ops.store(rec.ct, rec.out, self.st(dt), rec.is_bool_expr)
        self.libs.update(libs)
        return self.opaque(store.format(expr), self.st(dt))

    def _scaled_erf_arg(self, j):
        """``erf(x / c)`` for a float32 constant ``c``: ``x * (1 / c)`` in float32, no division (the
        GELU's). The product is within 1.2e-7 of ``x / c`` relative, and erf changes relatively by
        at most its argument's relative change (x erf'(x) <= erf(x)), so erf32 stays inside the
        tolerance; the exact quotient is still computed where another node reads it."""
        n = self.nodes[j]
        if n[0] != "binary" or n[2] != "div" or n[1] != "float32":
            return None
        x, c = self.nodes[n[3]], self.nodes[n[4]]
        if c[0] != "const" or x[0] == "const":
            return None
        c = float(c[2])
        if not (math.isfinite(c) and c != 0.0):
            return None
        inv = _f32_value(1.0 / c)
        if not (2.0 ** -126 <= abs(inv) < float("inf")):
            return None
        return "(%s * %s)" % (self.stored(n[3]), literal(inv, "f32"))

    def _divide(self, rec, x, c):
        """``v_x / c`` through wgsl_fast's float32 steps, or None where they do not hold for c."""
        d = wgsl_fast.divisor(c)
        if d is None:
            return None
        name = "divc_%016x" % struct.unpack("<Q", struct.pack("<d", c))[0]
        if name not in self.extra:
            store, libs = ops.store(rec.ct, dtypes.float32, "f32")
            self.libs.update(rec.libs)
            self.libs.update(libs)
            unfused = store.format(rec.fn(ops.load("f32", rec.ct).format("x"), literal(c, rec.ct)))
            self.extra[name] = wgsl_fast.divc_source(name, c, d, unfused)
        return self.opaque("%s(%s)" % (name, self.stored(x)), "f32")

    def prelude(self):
        """The library functions the generated nodes call (after every ``function``)."""
        return wgsl_lib.lib(self.libs) + "".join(self.extra[k] for k in sorted(self.extra))

    def _cast(self, n):
        src, dst = _dtype(self.nodes[n[2]][1]), _dtype(n[1])
        x = self.stored(n[2])
        if src is dst:
            return x
        st_src, st_dst = self.st(src.name), self.st(dst.name)
        t_in, ct, expr, t_out, store, libs = ops.cast_expr(src, dst, st_src, st_dst, self.rt.has_f64,
                                                           self.rt.has_i64)
        self.libs.update(libs)
        if t_in != st_src:
            x = "bitcast<%s>(%s)" % (t_in, x)
        expr = re.sub(r"\bx0\b", "(%s)" % ops.load(t_in, ct).format(x), expr)
        out = store.format(expr)
        if t_out != st_dst:
            out = "bitcast<%s>(%s)" % (st_dst, out)
        return out

    def needed(self, targets):
        """The nodes ``targets`` depend on, in order."""
        need = set()
        stack = list(targets)
        while stack:
            j = stack.pop()
            if j in need:
                continue
            need.add(j)
            stack.extend(_operands(self.nodes[j]))
        return sorted(need)

    def loads(self, targets):
        """The input numbers the ``targets`` read."""
        return sorted({self.nodes[j][2] for j in self.needed(targets) if self.nodes[j][0] == "load"})

    def function(self, name, targets, params):
        """``fn name(params) -> T`` (one target) or a struct ``name_out`` of ``o0, o1...``."""
        body = []
        for j in self.needed(targets):
            if self.nodes[j][0] != "const":
                body.append("  let v%d = %s;\n" % (j, self.value(j)))
        outs = [self.stored(t) for t in targets]
        types = [self.st(self.nodes[t][1]) for t in targets]
        head = "fn %s(%s)" % (name, ", ".join("%s: %s" % p for p in params))
        if len(targets) == 1:
            return "%s -> %s {\n%s  return %s;\n}\n" % (head, types[0], "".join(body), outs[0])
        struct_src = "struct %s_out { %s }\n" % (name, ", ".join("o%d: %s" % (k, t) for k, t in enumerate(types)))
        return "%s%s -> %s_out {\n%s  return %s_out(%s);\n}\n" % (
            struct_src, head, name, "".join(body), name, ", ".join(outs))


_FUSED_FMA = {}


def fused_fma(dev):
    """Whether WGSL ``fma`` rounds once on this adapter (one probe dispatch and read per adapter:
    ``fma(a, a, -b)`` with a = 1 + 2^-12, b = 1 + 2^-11 is 2^-24 fused, 0 when rounded twice)."""
    rt = dev.rt
    if rt.label in _FUSED_FMA:
        return _FUSED_FMA[rt.label]
    src = (_header(dev, ["f32"], 0) + "@compute @workgroup_size(1)\nfn main() {\n"
           "  b0[0] = fma(bitcast<f32>(pw(0u)), bitcast<f32>(pw(0u)), -bitcast<f32>(pw(1u)));\n}\n")
    try:
        entry = rt.pipeline(("fusion", "fma probe"), lambda: src, 1)
        out = dev._alloc((1,), dtypes.float32)
        rt.dispatch(entry, [out.block.buffer], [_f32_bits(1 + 2.0 ** -12), _f32_bits(1 + 2.0 ** -11)], 1)
        ok = dev.to_list(out)[0] == 2.0 ** -24
    except Exception:  # no answer: the f64 route is always right
        ok = False
    _FUSED_FMA[rt.label] = ok
    return ok


def _operands(n):
    kind = n[0]
    if kind == "unary":
        return (n[3],)
    if kind == "binary":
        return (n[3], n[4])
    if kind == "where":
        return (n[2], n[3], n[4])
    if kind == "cast":
        return (n[2],)
    return ()


def _header(dev, types, readonly):
    """The parameter block and the storage bindings (``readonly`` of them first, read-only)."""
    f16 = any("f16" in t for t in types)
    lines = ["enable f16;"] if f16 else []
    lines.append("struct Params { w: array<vec4<u32>, 16> }")
    lines.append("@group(0) @binding(0) var<uniform> P: Params;")
    lines.append("fn pw(i: u32) -> u32 { return P.w[i >> 2u][i & 3u]; }")
    lines.append("fn pi(i: u32) -> i32 { return bitcast<i32>(pw(i)); }")
    for k, t in enumerate(types):
        access = "read" if k < readonly else "read_write"
        lines.append("@group(0) @binding(%d) var<storage, %s> b%d: array<%s>;" % (k + 1, access, k, t))
    return "\n".join(lines) + "\n"


_ENTRY = ("@compute @workgroup_size(%d)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, "
          "@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n"
          "  let gid = wid.y * nwg.x + wid.x;\n")


class WgslCompiler:
    """Runs ``ir`` kernels on a ``Wgpu`` device: ``WgslCompiler(Wgpu())``.

    >>> c = WgslCompiler(dev)
    >>> c.supports(kernel)
    True
    >>> [out] = c.run(kernel, (1024,), [(x, (1,), 0)])   # x a WArray; out a fresh WArray
    """

    def __init__(self, device, fast=True):
        self.dev = device
        self.rt = device.rt
        # float32 ``x / const`` (through f64 multiplies) and ``erf`` in float32 (wgsl_fast.py)
        self.fast = bool(fast) and self.rt.has_f64
        self._sources = {}  # (kernel key, specialisation) -> WGSL

    # -- the contract -----------------------------------------------------------------------------
    def layout(self, array):
        """(element strides, element offset) of ``array`` in its block."""
        return array.layout()

    def supports(self, kernel):
        try:
            self._check(kernel)
        except (ValueError, NotImplementedError, KeyError, AttributeError, TypeError):
            return False
        return True

    def source(self, kernel):
        """The WGSL this compiler last built for ``kernel`` (its general, strided form if none)."""
        for key in reversed(list(self._sources)):
            if kernel.key in (key[1], key[2][0] if type(key[2]) is tuple and key[2] else None):
                return self._sources[key]
        if kernel.kind == "matmul":
            return self._direct_matmul_source(kernel)
        if kernel.dim is None:
            return self._flat_source(kernel)
        return self._rows_source(kernel)

    def run(self, kernel, space, inputs):
        space = tuple(space)
        if kernel.kind == "matmul":
            return self._run_matmul(kernel, space, inputs)
        outs = []
        for node, per_row in kernel.outputs:
            shape = space
            if per_row:
                shape = space[:kernel.dim] + (1,) + space[kernel.dim + 1:]
            outs.append(self.dev._alloc(shape, _dtype(kernel.nodes[node][1])))
        if all(numel(o.shape) == 0 for o in outs):
            return outs
        if kernel.dim is None:
            self._run_flat(kernel, space, inputs, outs)
        else:
            self._run_rows(kernel, space, inputs, outs)
        return outs

    # -- checks -----------------------------------------------------------------------------------
    def _check(self, kernel):
        names = list(kernel.inputs) + [n[1] for n in kernel.nodes]
        for name in names:
            dt = _dtype(name)
            if dt is dtypes.float64 and not self.rt.has_f64:
                raise ValueError("float64 needs shader-f64")
            if dt not in (dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32, dtypes.int64, dtypes.bool_):
                raise ValueError("dtype %s" % name)
        nbind = len(kernel.inputs) + len(kernel.outputs) + (1 if kernel.kind == "matmul" else 0)
        if nbind > self.rt.device.limits["max-storage-buffers-per-shader-stage"]:
            raise ValueError("too many buffers")
        for k, n in enumerate(kernel.nodes):
            if n[0] == "load" and kernel.inputs[n[2]] != n[1]:
                raise ValueError("load of input %d as %s" % (n[2], n[1]))
        if kernel.kind == "matmul":
            if kernel.rank - 2 > mk.MAXB or len(kernel.inputs) - 2 > 4 or len(kernel.outputs) > 4:
                raise ValueError("matmul epilogue too large")
            if 4 + kernel.rank + (kernel.rank + 2) * len(kernel.inputs) + len(kernel.outputs) > WORDS:
                raise ValueError("parameters do not fit")
            self._direct_matmul_source(kernel)
            return
        if kernel.dim is None:
            if _strided_words(kernel) > WORDS:
                raise ValueError("parameters do not fit")
            self._flat_source(kernel)
        else:
            if _row_words(kernel) > WORDS:
                raise ValueError("parameters do not fit")
            for p in kernel.phases:
                if type(p) is Reduce and p.op not in _REDUCE_OPS:
                    raise ValueError("reduce %s" % p.op)
            self._rows_source(kernel)

    def _pipeline(self, kernel, spec, build, buffers, nin):
        """The pipeline of ``build(readonly)``: inputs bind read-only unless an input's buffer is
        also written (a pool page shared with an output): WebGPU forbids both uses in one pass."""
        readonly = nin if not set(buffers[:nin]) & set(buffers[nin:]) else 0
        key = ("fusion", kernel.key, spec, readonly, self.fast, WG)  # WG: a benchmark may vary it
        entry = self.rt._pipelines.get(key)
        if entry is None:
            entry = self.rt.pipeline(key, lambda: self._remember(key, build(readonly)), len(buffers), readonly)
        return entry

    def _remember(self, key, src):
        self._sources[key] = src
        return src

    def _base(self, array, offset):
        return array.block.offset // self.dev.storage[array.dtype].itemsize + offset

    # -- flat kernels -----------------------------------------------------------------------------
    def _flat_source(self, kernel, readonly=0):
        """The flat kernel over any strides: the space coalesced to ``nd`` dims; words 4.. its
        sizes, then per input its offset and strides, then each output's offset."""
        ex = Expressions(self.dev, kernel, fast=self.fast)
        nin = len(kernel.inputs)
        targets = [o for o, _ in kernel.outputs]
        used = ex.loads(targets)
        fn = ex.function("f", targets, [("l%d" % k, ex.st(kernel.inputs[k])) for k in used])
        types = [ex.st(t) for t in kernel.inputs] + [ex.st(kernel.nodes[o][1]) for o in targets]
        R = kernel.rank
        base = 4 + R
        s = ["  let i = gid * %du + lid;\n  if (i >= pw(0u)) { return; }\n  let nd = pw(1u);\n" % WG]
        for k in used:
            s.append("  var o%d = pi(%du);\n" % (k, base + (R + 1) * k))
        s.append("  var rem = i;\n  for (var d = nd; d > 0u; d = d - 1u) {\n"
                 "    let n = pw(3u + d);\n    let c = i32(rem % n);\n    rem = rem / n;\n")
        for k in used:
            s.append("    o%d = o%d + c * pi(%du + d);\n" % (k, k, base + (R + 1) * k))
        s.append("  }\n")
        args = ", ".join("b%d[u32(o%d)]" % (k, k) for k in used)
        s.append(_store_outputs(targets, "f(%s)" % args, lambda m: "b%d[pw(%du) + i]" % (nin + m, base + (R + 1) * nin + m)))
        return "".join([_header(self.dev, types, readonly), ex.prelude(), fn, _ENTRY % WG] + s + ["}\n"])

    def _contig_source(self, kernel, scalar, vec, readonly=0):
        """Inputs contiguous over the space, or broadcast scalars (``scalar[k]``); ``vec``: vec4s
        per thread (0: one element per thread)."""
        ex = Expressions(self.dev, kernel, fast=self.fast)
        nin = len(kernel.inputs)
        targets = [o for o, _ in kernel.outputs]
        used = ex.loads(targets)
        fn = ex.function("f", targets, [("l%d" % k, ex.st(kernel.inputs[k])) for k in used])
        out_types = [ex.st(kernel.nodes[o][1]) for o in targets]
        in_types = [ex.st(t) for t in kernel.inputs]
        if not vec:
            types = in_types + out_types
            s = ["  let i = gid * %du + lid;\n  if (i >= pw(0u)) { return; }\n" % WG]
            args = ", ".join(("b%d[pw(%du)]" if scalar[k] else "b%d[pw(%du) + i]") % (k, 4 + k) for k in used)
            s.append(_store_outputs(targets, "f(%s)" % args, lambda m: "b%d[pw(%du) + i]" % (nin + m, 4 + nin + m)))
            return "".join([_header(self.dev, types, readonly), ex.prelude(), fn, _ENTRY % WG] + s + ["}\n"])
        types = [t if scalar[k] else "vec4<%s>" % t for k, t in enumerate(in_types)] + ["vec4<%s>" % t for t in out_types]
        # words: 0 = elements, 3 = vec4s; offsets of inputs at 4 + k (in elements for scalars, in
        # vec4s otherwise), of outputs after them (vec4s)
        s = ["  let g = gid * %du + lid;\n  let nv = pw(3u);\n" % (WG * vec)]
        for k in used:
            if scalar[k]:
                s.append("  let s%d = b%d[pw(%du)];\n" % (k, k, 4 + k))
        for r in range(vec):
            s.append("  let q%d = g + %du;\n" % (r, r * WG))
            for k in used:
                if not scalar[k]:
                    s.append("  var x%d_%d: vec4<%s>;\n  if (q%d < nv) { x%d_%d = b%d[pw(%du) + q%d]; }\n"
                             % (r, k, in_types[k], r, r, k, k, 4 + k, r))
        for r in range(vec):
            s.append("  if (q%d < nv) {\n" % r)
            for m, t in enumerate(out_types):
                s.append("    var y%d: vec4<%s>;\n" % (m, t))
            for c in range(4):
                args = ", ".join("s%d" % k if scalar[k] else "x%d_%d[%d]" % (r, k, c) for k in used)
                if len(targets) == 1:
                    s.append("    y0[%d] = f(%s);\n" % (c, args))
                else:
                    s.append("    { let y = f(%s);%s }\n" % (args, "".join(" y%d[%d] = y.o%d;" % (m, c, m) for m in range(len(targets)))))
            s.append("    let last = q%d * 4u + 4u > pw(0u);\n" % r)
            for m in range(len(targets)):
                ref = "b%d[pw(%du) + q%d]" % (nin + m, 4 + nin + m, r)
                s.append("    if (!last) { %s = y%d; } else {\n"
                         "      for (var c = 0u; q%d * 4u + c < pw(0u); c = c + 1u) { %s[c] = y%d[c]; }\n    }\n"
                         % (ref, m, r, ref, m))
            s.append("  }\n")
        return "".join([_header(self.dev, types, readonly), ex.prelude(), fn, _ENTRY % WG] + s + ["}\n"])

    def _vec(self, kernel, n):
        """vec4s per thread of the contiguous flat kernel: ``VEC_HEAVY`` for a large one with
        transcendental work, else ``VEC``."""
        if n >= HEAVY_MIN and any(nd[0] == "unary" and nd[2] in _TRANSCENDENTAL for nd in kernel.nodes):
            return VEC_HEAVY
        return VEC

    def _run_flat(self, kernel, space, inputs, outs):
        n = numel(space)
        nin = len(inputs)
        rs = contiguous_strides(space)
        scalar = []
        contig = True
        for arr, strides, off in inputs:
            zero = all(st == 0 or sz == 1 for st, sz in zip(strides, space))
            full = all(st == r or sz == 1 for st, r, sz in zip(strides, rs, space))
            scalar.append(zero and not (full and n == 1))
            contig = contig and (zero or full)
        buffers = [a.block.buffer for a, _, _ in inputs] + [o.block.buffer for o in outs]
        if contig and 4 + nin + len(outs) <= WORDS:
            bases = [self._base(a, off) for a, _, off in inputs]
            obases = [self._base(o, 0) for o in outs]
            aligned = all(b % 4 == 0 for k, b in enumerate(bases) if not scalar[k]) and all(b % 4 == 0 for b in obases)
            vec = self._vec(kernel, n) if aligned and n >= 4 else 0
            sc = tuple(scalar)
            entry = self._pipeline(kernel, ("contig", sc, vec), lambda ro: self._contig_source(kernel, sc, vec, ro),
                                   buffers, nin)
            words = [0] * 4 + [0] * (nin + len(outs))
            words[0] = n
            nv = (n + 3) // 4
            words[3] = nv
            for k, b in enumerate(bases):
                words[4 + k] = b if (scalar[k] or not vec) else b // 4
            for m, b in enumerate(obases):
                words[4 + nin + m] = b if not vec else b // 4
            groups = (nv + WG * vec - 1) // (WG * vec) if vec else (n + WG - 1) // WG
            self.rt.dispatch(entry, buffers, [w & _MASK for w in words], groups)
            return
        cshape, cstrides = coalesce(space, [(st, 0) for _, st, _ in inputs] + [(rs, 0)])
        if len(cshape) <= 2 and self._run_grid(kernel, cshape, cstrides, inputs, outs, buffers):
            return
        R = kernel.rank
        base = 4 + R
        words = [0] * (base + (R + 1) * nin + len(outs))
        words[0] = n
        words[1] = len(cshape)
        words[4:4 + len(cshape)] = cshape
        for k, (a, _, off) in enumerate(inputs):
            w = base + (R + 1) * k
            words[w] = self._base(a, off)
            for d, st in enumerate(cstrides[k]):
                words[w + 1 + d] = st
        for m, o in enumerate(outs):
            words[base + (R + 1) * nin + m] = self._base(o, 0)
        entry = self._pipeline(kernel, ("strided",), lambda ro: self._flat_source(kernel, ro), buffers, nin)
        self.rt.dispatch(entry, buffers, [w & _MASK for w in words], (n + WG - 1) // WG)

    def _grid_source(self, kernel, readonly=0):
        """A flat kernel over a space that coalesces to (rows, cols): the grid's x covers columns
        and its y, z the rows, so no thread divides to find its element (a bias over rows, a
        transposed input). Words: 0 rows, 1 cols, 2 zero; per input at 4 + 3k its offset, row
        stride and column stride; then each output's offset."""
        ex = Expressions(self.dev, kernel, fast=self.fast)
        nin = len(kernel.inputs)
        targets = [o for o, _ in kernel.outputs]
        used = ex.loads(targets)
        fn = ex.function("f", targets, [("l%d" % k, ex.st(kernel.inputs[k])) for k in used])
        types = [ex.st(t) for t in kernel.inputs] + [ex.st(kernel.nodes[o][1]) for o in targets]
        s = ["  let row = wid.z * nwg.y + wid.y;\n  let col = wid.x * %du + lid;\n"
             "  if (row >= pw(0u) || col >= pw(1u)) { return; }\n  let i = row * pw(1u) + col;\n" % WG]
        args = ", ".join("b%d[u32(pi(%du) + i32(row) * pi(%du) + i32(col) * pi(%du))]" % (k, 4 + 3 * k, 5 + 3 * k, 6 + 3 * k)
                         for k in used)
        s.append(_store_outputs(targets, "f(%s)" % args, lambda m: "b%d[pw(%du) + i]" % (nin + m, 4 + 3 * nin + m)))
        entry = _ENTRY.replace("  let gid = wid.y * nwg.x + wid.x;\n", "")
        return "".join([_header(self.dev, types, readonly), ex.prelude(), fn, entry % WG] + s + ["}\n"])

    def _run_grid(self, kernel, cshape, cstrides, inputs, outs, buffers):
        """The (rows, cols) kernel, where its words and grid fit; False otherwise."""
        nin = len(inputs)
        rows, cols = (1,) + tuple(cshape) if len(cshape) == 1 else cshape
        limit = self.rt.max_groups
        gx = (cols + WG - 1) // WG
        gy = min(rows, limit)
        gz = (rows + gy - 1) // gy
        if 4 + 3 * nin + len(outs) > WORDS or gx > limit or gz > limit:
            return False
        words = [0] * (4 + 3 * nin + len(outs))
        words[0], words[1] = rows, cols
        for k, (a, _, off) in enumerate(inputs):
            st = cstrides[k] if len(cshape) == 2 else (0,) + tuple(cstrides[k])
            words[4 + 3 * k] = self._base(a, off)
            words[5 + 3 * k], words[6 + 3 * k] = st
        for m, o in enumerate(outs):
            words[4 + 3 * nin + m] = self._base(o, 0)
        entry = self._pipeline(kernel, ("grid",), lambda ro: self._grid_source(kernel, ro), buffers, nin)
        self.rt.dispatch(entry, buffers, [w & _MASK for w in words], (gx, gy, gz))
        return True

    # -- row kernels ------------------------------------------------------------------------------
    def _rows_source(self, kernel, readonly=0, wg=WG, cache=0):
        """One workgroup of ``wg`` threads per row. ``cache``: 0, each phase reads the row from
        memory; else rows have at most ``wg * cache`` elements and each thread loads its
        ``cache`` elements once, into registers, for every phase. Words: 0 rows, 1 dims of the
        row space, 2 zero, 3 row length, 4.. the row space's sizes, then per input (offset, step
        along the row, strides), per map output the same, per per-row output its offset."""
        ex = Expressions(self.dev, kernel, fast=self.fast)
        nin = len(kernel.inputs)
        R = kernel.rank
        S = R + 1  # words per strided operand: offset, step along the row, R - 1 strides
        base = 3 + R
        map_outs = [o for o, per_row in kernel.outputs if not per_row]
        row_outs = [o for o, per_row in kernel.outputs if per_row]
        reduces = [p for p in kernel.phases if type(p) is Reduce]
        rparams = [("r%d" % j, ex.st(p.dtype)) for j, p in enumerate(reduces)]
        red_used = [ex.loads([p.node]) for p in reduces]
        map_used = ex.loads(map_outs) if map_outs else []
        row_used = ex.loads(row_outs) if row_outs else []
        src_fns = []
        for j, p in enumerate(reduces):
            params = [("l%d" % k, ex.st(kernel.inputs[k])) for k in red_used[j]] + rparams[:j]
            src_fns.append(ex.function("red%d" % j, [p.node], params))
        if map_outs:
            params = [("l%d" % k, ex.st(kernel.inputs[k])) for k in map_used] + rparams
            src_fns.append(ex.function("fmap", map_outs, params))
        if row_outs:
            params = [("l%d" % k, ex.st(kernel.inputs[k])) for k in row_used] + rparams
            src_fns.append(ex.function("frow", row_outs, params))
        out_types = [ex.st(kernel.nodes[o][1]) for o, _ in kernel.outputs]
        types = [ex.st(t) for t in kernel.inputs] + out_types
        s = ["  let row = gid;\n  if (row >= pw(0u)) { return; }\n  let nd = pw(1u);\n  let L = pw(3u);\n"]
        strided = list(range(nin)) + [nin + m for m, (o, pr) in enumerate(kernel.outputs) if not pr]
        slot = {}
        w = base
        for k in strided:
            slot[k] = w
            w += S
        rslot = {}
        for m, (o, pr) in enumerate(kernel.outputs):
            if pr:
                rslot[nin + m] = w
                w += 1
        for k in strided:
            s.append("  var o%d = pi(%du);\n  let t%d = pi(%du);\n" % (k, slot[k], k, slot[k] + 1))
        s.append("  var rem = row;\n  for (var d = nd; d > 0u; d = d - 1u) {\n"
                 "    let n = pw(3u + d);\n    let c = i32(rem % n);\n    rem = rem / n;\n")
        for k in strided:
            s.append("    o%d = o%d + c * pi(%du + d);\n" % (k, k, slot[k] + 1))
        s.append("  }\n")

        def at(k, t):
            return "b%d[u32(o%d + i32(%s) * t%d)]" % (k, k, t, k)

        def each(body):
            """``body(t, load)`` for every element t of the row this thread takes; ``load(k)``
            reads input k at t (from the registers when the row is cached)."""
            if not cache:
                return "  for (var t = lid; t < L; t = t + %du) {\n%s  }\n" % (wg, body("t", lambda k: at(k, "t")))
            out = []
            for c in range(cache):
                t = "(lid + %du)" % (c * wg)
                out.append("  if (%s < L) {\n%s  }\n" % (t, body(t, lambda k, c=c: "x%d_%d" % (k, c))))
            return "".join(out)
        if cache:
            for k in sorted(set(sum(red_used, []) + map_used)):
                st = ex.st(kernel.inputs[k])
                for c in range(cache):
                    t = "(lid + %du)" % (c * wg)
                    s.append("  var x%d_%d: %s;\n  if (%s < L) { x%d_%d = %s; }\n" % (k, c, st, t, k, c, at(k, t)))
        shared = []
        for j, p in enumerate(reduces):
            ct = _acc_ct(self.dev, _dtype(ex.nodes[p.node][1]), p.op)
            shared.append("var<workgroup> part%d: array<%s, %d>;\n" % (j, ct, wg))
            load = ops.load(ex.st(ex.nodes[p.node][1]), ct)
            s.append("  var a%d = %s;\n" % (j, _identity(p.op, ct)))
            ranked = p.op in ("max", "min") and ct in ("f32", "f64")
            if ranked:
                # where each thread's value sits in the row: equal values of other bits (0 and -0,
                # nans) are decided by it in the tree, as the unfused reduction decides them (the
                # first in the row wins); a thread's own elements come in the row's order
                shared.append("var<workgroup> part%d_at: array<u32, %d>;\n" % (j, wg))
                s.append("  var a%d_at = L;\n" % j)
            s.append(each(lambda t, ld, j=j, p=p, ct=ct, load=load, ranked=ranked: "    let v = %s;\n    %s\n" % (
                load.format("red%d(%s)" % (j, ", ".join([ld(k) for k in red_used[j]] + ["r%d" % q for q in range(j)]))),
                _fold_first("a%d" % j, "v", p.op, ct, "u32(%s)" % t) if ranked else _fold("a%d" % j, "v", p.op, ct))))
            if ranked:
                s.append("  part%d[lid] = a%d;\n  part%d_at[lid] = a%d_at;\n  workgroupBarrier();\n" % (j, j, j, j))
                s.append("  for (var h = %du; h > 0u; h = h >> 1u) {\n    if (lid < h) {\n"
                         "      let x = part%d[lid];\n      let x_at = part%d_at[lid];\n"
                         "      let v = part%d[lid + h];\n      let v_at = part%d_at[lid + h];\n"
                         "      if (%s) {\n        part%d[lid] = v;\n        part%d_at[lid] = v_at;\n      }\n"
                         "    }\n    workgroupBarrier();\n  }\n"
                         % (wg // 2, j, j, j, j, _takes("x", "x_at", "v", "v_at", p.op, ct), j, j))
            else:
                s.append("  part%d[lid] = a%d;\n  workgroupBarrier();\n" % (j, j))
                s.append("  for (var h = %du; h > 0u; h = h >> 1u) {\n    if (lid < h) {\n"
                         "      var x = part%d[lid];\n      let v = part%d[lid + h];\n      %s\n      part%d[lid] = x;\n"
                         "    }\n    workgroupBarrier();\n  }\n" % (wg // 2, j, j, _fold("x", "v", p.op, ct), j))
            store, libs = ops.store(ct, _dtype(p.dtype), ex.st(p.dtype))
            ex.libs.update(libs)
            ex.libs.update(_fold_libs(ct, p.op))
            s.append("  let r%d = %s;\n" % (j, store.format("part%d[0]" % j)))
        if map_outs:
            idx = {o: m for m, (o, pr) in enumerate(kernel.outputs) if not pr}
            rows = ["r%d" % j for j in range(len(reduces))]
            s.append(each(lambda t, ld: _store_outputs(
                map_outs, "fmap(%s)" % ", ".join([ld(k) for k in map_used] + rows),
                lambda m: at(nin + idx[map_outs[m]], t), "    ")))
        if row_outs:
            idx = [nin + m for m, (o, pr) in enumerate(kernel.outputs) if pr]
            args = ", ".join([at(k, "0u") for k in row_used] + ["r%d" % j for j in range(len(reduces))])
            s.append("  if (lid == 0u) {\n")
            s.append(_store_outputs(row_outs, "frow(%s)" % args, lambda m: "b%d[pw(%du) + row]" % (idx[m], rslot[idx[m]]), "    "))
            s.append("  }\n")
        return "".join([_header(self.dev, types, readonly), ex.prelude()] + shared + src_fns
                       + [_ENTRY % wg] + s + ["}\n"])

    def _run_rows(self, kernel, space, inputs, outs):
        dim = kernel.dim
        nin = len(inputs)
        R = kernel.rank
        length = space[dim]
        other = space[:dim] + space[dim + 1:]
        nrows = numel(other)
        rs = contiguous_strides(space)
        strided = [(a, st, off) for a, st, off in inputs]
        for (o, pr), arr in zip(kernel.outputs, outs):
            if not pr:
                strided.append((arr, rs, 0))
        layouts = [(tuple(st[:dim]) + tuple(st[dim + 1:]), 0) for _, st, _ in strided]
        if other:
            cshape, cstrides = coalesce(other, layouts)
        else:  # one row: no dims to walk
            cshape, cstrides = (), [() for _ in layouts]
        words = [0] * WORDS
        words[0] = nrows
        words[1] = len(cshape)
        words[3] = length
        words[4:4 + len(cshape)] = cshape
        w = 3 + R
        for (a, st, off), cst in zip(strided, cstrides):
            words[w] = self._base(a, off)
            words[w + 1] = st[dim]
            for d, v in enumerate(cst):
                words[w + 2 + d] = v
            w += R + 1
        for (o, pr), arr in zip(kernel.outputs, outs):
            if pr:
                words[w] = self._base(arr, 0)
                w += 1
        buffers = [a.block.buffer for a, _, _ in inputs] + [o.block.buffer for o in outs]
        wg, cache = _row_shape(length)
        entry = self._pipeline(kernel, ("rows", wg, cache), lambda ro: self._rows_source(kernel, ro, wg, cache),
                               buffers, nin)
        self.rt.dispatch(entry, buffers, [v & _MASK for v in words[:w]], nrows)

    # -- matmul -----------------------------------------------------------------------------------
    def _run_matmul(self, kernel, space, inputs):
        dev = self.dev
        if len(space) == kernel.rank + 1:
            space, K = space[:-1], space[-1]
        else:
            raise ValueError("MatmulKernel.run: expected the space (..., M, N, K), found %r" % (space,))
        outs = [dev._alloc(space, _dtype(kernel.nodes[o][1])) for o, _ in kernel.outputs]
        if numel(space) == 0:
            return outs
        if not self._run_tiled(kernel, space, K, inputs, outs):
            self._run_direct_matmul(kernel, space, K, inputs, outs)
        return outs

    def _tiled_inputs(self, kernel, space, K, inputs):
        """(``inputs`` as the tiled kernels can read them, A transposed, B transposed), or None where
        they cannot run the product. Operands are read by rows or transposed in place
        (``mk.layout_of``); another layout of a large enough product is copied first, as the
        matmul primitive does (``wgpu/linalg.py``), so a fused product takes the same kernel and bits."""
        a, sa, oa = inputs[kernel.a]
        b, sb, ob = inputs[kernel.b]
        dt = _dtype(kernel.acc_dtype)
        if dt is not dtypes.float32 or a.dtype is not dt or b.dtype is not dt:
            return None
        m, n = space[-2:]
        if K % 4 or n % 4 or m * n * K < 1 << 15 or len(space) - 2 > mk.MAXB:
            return None
        if any(_dtype(kernel.nodes[o][1]) is not dtypes.float32 for o, _ in kernel.outputs):
            return None

        def layouts():
            (a, sa, oa), (b, sb, ob) = inputs[kernel.a], inputs[kernel.b]
            return mk.layout_of(sa, self._base(a, oa), m, K), mk.layout_of(sb, self._base(b, ob), K, n)
        la, lb = layouts()
        if la is None or lb is None:
            if m * n * K < mk.COPY_FOR_TILES:
                return None
            batch = space[:-2]
            inputs = list(inputs)
            for j, dims, lay in ((kernel.a, (m, K), la), (kernel.b, (K, n), lb)):
                if lay is None:
                    arr, st, off = inputs[j]
                    shape = batch + dims
                    copy = self.dev._contiguous(WArray(arr.block, shape, dt, tuple(st), off))
                    inputs[j] = (copy, contiguous_strides(shape), 0)
            la, lb = layouts()
            if la is None or lb is None:
                return None
        return inputs, la == "cols", lb == "cols"

    def _run_tiled(self, kernel, space, K, inputs, outs):
        tiled = self._tiled_inputs(kernel, space, K, inputs)
        if tiled is None:
            return False
        inputs, ta, tb = tiled
        dev = self.dev
        m, n = space[-2:]
        batch = space[:-2]
        a, sa, oa = inputs[kernel.a]
        b, sb, ob = inputs[kernel.b]
        dtype = dtypes.float32

        epi = _Epilogue(self, kernel, inputs, ta, tb)
        nb = len(batch)
        bshape = (1,) * (mk.MAXB - nb) + tuple(batch)
        bsa = (0,) * (mk.MAXB - nb) + tuple(sa[:nb])
        bsb = (0,) * (mk.MAXB - nb) + tuple(sb[:nb])
        words = [m, n, K, mk.leading(sa, m, K, ta), mk.leading(sb, K, n, tb), self._base(a, oa), self._base(b, ob),
                 self._base(outs[0], 0)] + list(bshape) + list(bsa) + list(bsb)
        words += [0] * (WORDS - len(words))
        epi.fill(words, nb, [self._base(o, 0) for o in outs])
        extra = epi.buffers(outs)

        def launch(v):  # also the tuning's run: the outputs are this call's own, written again after
            if v.coop:  # the cooperative-matrix kernels have no epilogue hook: the SIMT default
                v = mk._BY_NAME[mk._default_variant(m, n, K)]
            groups = ((n + v.bn - 1) // v.bn, (m + v.bm - 1) // v.bm, numel(batch))
            key = ("fusion-mm", mk.layout_name(v.name, ta, tb), (kernel.key, self.fast), "f32")  # [2:] names the split-K finalize kernel
            build = lambda: self._remember(key, mk._simt_source(v, dtype, "f32", epi))  # noqa: E731
            mk._run_split(dev, key, v, build, epi, dtype, "f32",
                          [a.block.buffer, b.block.buffer, outs[0].block.buffer], words, groups, m, n, K, extra)
        # tuned with its epilogue in: a tile that leaves too few registers for the epilogue's work
        # loses here even where it wins the plain product
        op = "matmul+%08x" % (zlib.crc32(repr((kernel.key, self.fast, ta, tb)).encode()) & 0xFFFFFFFF)
        name = autotune.choose(dev, op, dtype, (m, n, K), launch, [v.name for v in mk.candidates(dev, dtype)],
                               mk._default_variant(m, n, K), lambda v: mk._check(dev, v, dtype))
        launch(mk._BY_NAME[name])
        return True

    def _direct_matmul_source(self, kernel, readonly=0):
        """One thread per output element: ``acc`` sums over K as the direct matmul primitive does
        (float in f64, integers in i64, rounded once), then the epilogue."""
        ex = Expressions(self.dev, kernel, fast=self.fast)
        nin = len(kernel.inputs)
        targets = [o for o, _ in kernel.outputs]
        acc_dt = _dtype(kernel.acc_dtype)
        acc_st = ex.st(kernel.acc_dtype)
        ct = ("f64" if self.rt.has_f64 else "f32") if acc_dt.kind == "f" else ("i64" if self.rt.has_i64 else "i32")
        epi_in = [k for k in ex.loads(targets)]
        fn = ex.function("f", targets, [("l%d" % k, ex.st(kernel.inputs[k])) for k in epi_in] + [("acc", acc_st)])
        types = [ex.st(t) for t in kernel.inputs] + [ex.st(kernel.nodes[o][1]) for o in targets]
        R = kernel.rank
        base = 4 + R
        S = R + 2  # offset, R strides over the output space, the stride along K
        s = ["  let i = gid * %du + lid;\n  if (i >= pw(0u)) { return; }\n  let nd = pw(1u);\n" % WG]
        for k in range(nin):
            s.append("  var o%d = pi(%du);\n" % (k, base + S * k))
        s.append("  var rem = i;\n  for (var d = nd; d > 0u; d = d - 1u) {\n"
                 "    let n = pw(3u + d);\n    let c = i32(rem % n);\n    rem = rem / n;\n")
        for k in range(nin):
            s.append("    o%d = o%d + c * pi(%du + d);\n" % (k, k, base + S * k))
        s.append("  }\n")
        a, b = kernel.a, kernel.b
        a_st, b_st = ex.st(kernel.inputs[a]), ex.st(kernel.inputs[b])
        s.append("  let ka = pi(%du); let kb = pi(%du);\n" % (base + S * a + 1 + R, base + S * b + 1 + R))
        s.append("  var sum = %s(0);\n  for (var t = 0u; t < pw(3u); t = t + 1u) {\n"
                 "    sum = sum + %s * %s;\n  }\n" % (ct, ops.load(a_st, ct).format("b%d[u32(o%d + i32(t) * ka)]" % (a, a)),
                                                    ops.load(b_st, ct).format("b%d[u32(o%d + i32(t) * kb)]" % (b, b))))
        store, libs = ops.store(ct, acc_dt, acc_st)
        ex.libs.update(libs)
        s.append("  let acc = %s;\n" % store.format("sum"))
        args = ", ".join(["b%d[u32(o%d)]" % (k, k) for k in epi_in] + ["acc"])
        s.append(_store_outputs(targets, "f(%s)" % args, lambda m: "b%d[pw(%du) + i]" % (nin + m, base + S * nin + m)))
        return "".join([_header(self.dev, types, readonly), ex.prelude(), fn, _ENTRY % WG] + s + ["}\n"])

    def _run_direct_matmul(self, kernel, space, K, inputs, outs):
        """Words as the strided flat kernel, with a's strides over (..., M, N, K) = (.., sm, 0,
        sk), b's (..., 0, sn, sk), the epilogue inputs' (..., sm, sn, 0); word 3: K."""
        R = kernel.rank
        nin = len(inputs)
        base = 4 + R
        S = R + 2
        n = numel(space)
        words = [0] * (base + S * nin + len(outs))
        words[0] = n
        words[1] = R
        words[3] = K
        words[4:4 + R] = space
        for k, (arr, st, off) in enumerate(inputs):
            w = base + S * k
            words[w] = self._base(arr, off)
            if k == kernel.a:
                st = tuple(st[:-1]) + (0, st[-1])
            elif k == kernel.b:
                st = tuple(st[:-2]) + (0, st[-1], st[-2])
            else:
                st = tuple(st) + (0,)
            for d in range(R + 1):
                words[w + 1 + d] = st[d]
        for m, o in enumerate(outs):
            words[base + S * nin + m] = self._base(o, 0)
        buffers = [a.block.buffer for a, _, _ in inputs] + [o.block.buffer for o in outs]
        if len(words) > WORDS:
            raise ValueError("fusion: a direct matmul with %d inputs does not fit the parameters" % nin)
        entry = self._pipeline(kernel, ("direct",), lambda ro: self._direct_matmul_source(kernel, ro), buffers, nin)
        self.rt.dispatch(entry, buffers, [w & _MASK for w in words], (n + WG - 1) // WG)


_REDUCE_OPS = ("sum", "prod", "max", "min")
ROW_CACHE = (1, 2, 4, 8)  # elements per thread a row kernel may hold in registers


def _row_shape(length):
    """(threads per workgroup, elements each holds in registers; 0: none) for rows of ``length``:
    64 threads for short rows (softmax over 128 keys), 256 otherwise; rows longer than 256 * 8
    are read from memory by every phase."""
    wg = 64 if length <= 64 * 4 else WG
    for c in ROW_CACHE:
        if length <= wg * c:
            return wg, c
    return WG, 0


def _strided_words(kernel):
    R = kernel.rank
    return 4 + R + (R + 1) * len(kernel.inputs) + len(kernel.outputs)


def _row_words(kernel):
    R = kernel.rank
    nmap = sum(1 for _, pr in kernel.outputs if not pr)
    return 3 + R + (R + 1) * (len(kernel.inputs) + nmap) + (len(kernel.outputs) - nmap)


def _store_outputs(targets, call, ref, indent="  "):
    if len(targets) == 1:
        return "%s%s = %s;\n" % (indent, ref(0), call)
    s = ["%s{\n%s  let y = %s;\n" % (indent, indent, call)]
    for m in range(len(targets)):
        s.append("%s  %s = y.o%d;\n" % (indent, ref(m), m))
    s.append("%s}\n" % indent)
    return "".join(s)


def _acc_ct(dev, dtype, op):
    """The type a row fold accumulates in: the reduce primitive's (floats sum in f64, ints in i64)."""
    st = dev.storage[dtype].wgsl
    if op in ("sum", "prod"):
        if dtype.kind == "f":
            return "f64" if dev.rt.has_f64 else "f32"
        return "i64" if dev.rt.has_i64 else "i32"
    if dtype.kind == "f":
        return "f64" if st == "f64" else "f32"
    return "u32" if dtype.kind == "b" else st


def _identity(op, ct):
    if op in _REDUCE_IDENTITY:
        return "%s(%s)" % (ct, _REDUCE_IDENTITY[op])
    big = op == "min"
    if ct == "f32":
        return "bitcast<f32>(%s)" % ("0x7f800000u" if big else "0xff800000u")
    if ct == "f64":
        return "bitcast<f64>(%s)" % ("0x7ff0000000000000lu" if big else "0xfff0000000000000lu")
    if ct == "u32":
        return "1u" if big else "0u"
    if ct == "i32":
        return "bitcast<i32>(%s)" % ("0x7fffffffu" if big else "0x80000000u")
    return "bitcast<i64>(%s)" % ("0x7ffffffffffffffflu" if big else "0x8000000000000000lu")


def _fold(acc, v, op, ct):
    """WGSL folding ``v`` into ``acc``; max/min keep a nan once one is seen."""
    if op == "sum":
        return "%s = %s + %s;" % (acc, acc, v)
    if op == "prod":
        return "%s = %s * %s;" % (acc, acc, v)
    cmp = ">" if op == "max" else "<"
    if ct in ("f32", "f64"):
        nan = "isnan%s" % ("64" if ct == "f64" else "32")
        return "if (%s(%s) || (!%s(%s) && %s %s %s)) { %s = %s; }" % (nan, v, nan, acc, v, cmp, acc, acc, v)
    return "if (%s %s %s) { %s = %s; }" % (v, cmp, acc, acc, v)


def _fold_first(acc, v, op, ct, t):
    """``_fold`` for a float max/min that also keeps where ``acc`` came from (``acc_at``): the
    first nan, else the first best value, of a thread's elements in the row's order."""
    nan = "isnan%s" % ("64" if ct == "f64" else "32")
    return "if (!%s(%s) && (%s(%s) || %s %s %s)) { %s = %s; %s_at = %s; }" % (
        nan, acc, nan, v, v, ">" if op == "max" else "<", acc, acc, v, acc, t)


def _takes(x, x_at, v, v_at, op, ct):
    """Whether the tree's partial (``v``, ``v_at``) replaces (``x``, ``x_at``): a nan over a number,
    a better value, and between two nans or two equal values the one first in the row (0 and -0
    are equal; which one the row holds first is the unfused result's sign)."""
    nan = "isnan%s" % ("64" if ct == "f64" else "32")
    return ("(%s(%s) && (!%s(%s) || %s < %s)) || (!%s(%s) && !%s(%s) && (%s %s %s || (%s == %s && %s < %s)))"
            % (nan, v, nan, x, v_at, x_at, nan, x, nan, v, v, ">" if op == "max" else "<", x, v, x, v_at, x_at))


def _fold_libs(ct, op):
    if op in ("max", "min") and ct in ("f32", "f64"):
        return ["bits64" if ct == "f64" else "bits32"]
    return []


class _Epilogue(mk._MatmulFlavor):
    """The tiled matmul's store step with the epilogue: C (output 0) and further outputs, each
    contiguous over (..., M, N); epilogue inputs read by their strides. Words 32 + 7j: input j's
    offset, 4 batch strides, row and column strides; 60 + m: output m's offset (m >= 1)."""

    def __init__(self, compiler, kernel, inputs, ta=False, tb=False):
        super().__init__("f32", ta, tb)
        self.compiler = compiler
        self.kernel = kernel
        self.inputs = inputs
        self.ex = Expressions(compiler.dev, kernel, zero_word=28, fast=compiler.fast)
        targets = [o for o, _ in kernel.outputs]
        self.epi_in = self.ex.loads(targets)
        params = [("l%d" % k, self.ex.st(kernel.inputs[k])) for k in self.epi_in] + [("acc", "f32")]
        self.fn = self.ex.function("epilogue", targets, params)
        self.targets = targets

    def bindings(self):
        lines = super().bindings()
        for j, k in enumerate(self.epi_in):
            lines.append("@group(0) @binding(%d) var<storage, read_write> E%d: array<%s>;"
                         % (5 + j, j, self.ex.st(self.kernel.inputs[k])))
        for m in range(1, len(self.targets)):
            lines.append("@group(0) @binding(%d) var<storage, read_write> O%d: array<%s>;"
                         % (5 + len(self.epi_in) + m - 1, m, self.ex.st(self.kernel.nodes[self.targets[m]][1])))
        return lines

    def helpers(self):
        return self.ex.prelude() + self.fn

    def fill(self, words, nb, out_bases):
        for j, k in enumerate(self.epi_in):
            arr, st, off = self.inputs[k]
            w = 32 + 7 * j
            words[w] = self.compiler._base(arr, off)
            bst = (0,) * (mk.MAXB - nb) + tuple(st[:nb])
            words[w + 1:w + 5] = bst
            words[w + 5], words[w + 6] = st[-2], st[-1]
        for m in range(1, len(out_bases)):
            words[60 + m - 1] = out_bases[m]

    def buffers(self, outs):
        return [self.inputs[k][0].block.buffer for k in self.epi_in] + [o.block.buffer for o in outs[1:]]

    def store_c(self, row, col, value):
        args = []
        for j in range(len(self.epi_in)):
            w = 32 + 7 * j
            args.append("E%d[u32(pi(%du) + i32(z0) * pi(%du) + i32(z1) * pi(%du) + i32(z2) * pi(%du) + i32(z3) * pi(%du)"
                        " + i32(%s) * pi(%du) + i32(%s) * pi(%du))]" % (j, w, w + 1, w + 2, w + 3, w + 4, row, w + 5, col, w + 6))
        call = "epilogue(%s)" % ", ".join(args + [value])
        idx = "z * M * N + %s * N + %s" % (row, col)
        if len(self.targets) == 1:
            return "C[pw(7u) + %s] = %s;" % (idx, call)
        s = ["{ let y = %s; C[pw(7u) + %s] = y.o0;" % (call, idx)]
        for m in range(1, len(self.targets)):
            s.append(" O%d[pw(%du) + %s] = y.o%d;" % (m, 60 + m - 1, idx, m))
        s.append(" }")
        return "".join(s)
