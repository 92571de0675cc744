"""``ember.accel.Wgpu()``: the contract's primitives as WGSL compute kernels (docs/gpu.md).

Every op only records work (see runtime.py); ``to_list``/``to_bytes`` wait for the GPU. Movement
ops return strided views (arrays.py); every kernel reads any view through the strides in its
parameter block, so nothing is copied to make an input contiguous except for a matmul or conv
operand in a layout their tiled kernels do not read.
"""
import struct
import sys
from array import array

from ember import dtypes
from ember.backend import Backend
from ember.ops import RING_OPS, ROUNDING
from ember.errors import DTypeError

from . import codegen, ops
from . import index as _index
from . import linalg as _linalg
from . import random as _random
from . import reduce as _reduce
from .arrays import WArray, coalesce, contiguous_strides, numel, storage_table, view
from .memory import BufferPool
from .movement import expand_layout, permute_layout, reshape_strides, slice_layout
from .runtime import runtime_for

_MASK = 0xFFFFFFFF
_F32_PACK = struct.Struct("<f").pack
_F32_BITS = struct.Struct("<I").unpack
_I32 = (-(1 << 31), (1 << 31) - 1)
_I64 = (-(1 << 63), (1 << 63) - 1)
_RING = RING_OPS  # exact modulo 2^64: wide scalars may wrap first
VEC4_MIN = 1 << 16  # elementwise ops on this many contiguous elements read and write vec4s
VEC4_PER_THREAD = 1


def _plain_words(nin):
    """The parameter words of an elementwise kernel over ``nin`` contiguous inputs, 1-d, every
    stride 1; ``_map`` fills in the size, the scalar and the offsets (codegen's layout)."""
    words = [0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
    for _ in range(nin):
        words += (0, 1, 0, 0, 0, 0, 0, 0, 0)
    return array("I", words + [0, 1])  # the output's slot: its offset and stride


_PLAIN_WORDS = [_plain_words(nin) for nin in range(4)]


def _refs_of_temporary():
    """sys.getrefcount of an argument that only the callee holds (calibrated: it varies by version)."""
    def probe(x):
        return sys.getrefcount(x)
    return probe(object())


_TEMP_REFS = _refs_of_temporary()


class Wgpu(Backend):
    """A GPU device through wgpu (Vulkan, Metal, D3D12): ember's ops as WGSL compute kernels.

    >>> dev = ember.accel.Wgpu()                      # the high-performance adapter
    >>> x = ember.randn(1024, 1024, device=dev)
    >>> (x @ x).sum().item()                          # queued on the GPU; item() waits

    ``adapter``: a substring of the adapter's name (default: ``EMBER_WGPU_ADAPTER``, else the
    high-performance adapter). ``memory``: ``"buckets"`` (size-bucketed buffers) or ``"pages"``
    (sub-allocation from large pages). ``memory_cap``: the most bytes of GPU buffers this device's
    pool may hold; beyond it an op raises ``OutOfMemoryError``. ``random``: ``"stream"`` draws
    random tensors as every Cpu does (the same values for a seed, drawn on the host and uploaded);
    ``"philox"`` draws them on the GPU, other values for the same seed (random.py). All instances
    on one adapter share its GPU queue, and their tensors meet in ops whatever their memory settings.
    """

    name = "Wgpu"
    _pools = {}

    def __init__(self, adapter=None, memory="buckets", memory_cap=None, page_size=64 << 20, random="stream"):
        if memory not in ("buckets", "pages"):
            raise ValueError("Wgpu: expected memory='buckets' or 'pages', found %r" % (memory,))
        if random not in ("stream", "philox"):
            raise ValueError("Wgpu: expected random='stream' or 'philox', found %r" % (random,))
        self.random_mode = random
        rt = self.rt = runtime_for(adapter)
        pool_key = (rt.label, memory, memory_cap, page_size)
        mem = Wgpu._pools.get(pool_key)
        if mem is None:
            mem = Wgpu._pools[pool_key] = BufferPool(rt, memory, memory_cap, page_size)
        self.mem = mem
        self.storage = storage_table(rt.has_f16, rt.has_i64)
        self._recipes = {}
        self._plans = {}  # (op, dtype, mode) -> what binary needs (_binary_plan)
        self._unary_plans = {}  # (op, dtype) -> what unary needs (_unary_plan)
        self.adapter = rt.label

    def key(self):
        """``("Wgpu", adapter label)``: tensors on the same GPU meet in one op."""
        return ("Wgpu", self.rt.label)

    def __repr__(self):
        return "Wgpu()"

    # -- device facts and control ------------------------------------------------------------------
    def memory_stats(self):
        """The pool's bytes in use, reserved and their peaks (see memory.BufferPool.stats)."""
        return self.mem.stats()

    def queue_stats(self):
        """How work reached the GPU: dispatches, submits, dispatches per recent submit, pipelines."""
        rt = self.rt
        return {"dispatches": rt.dispatches, "submits": rt.submits, "batches": list(rt.batches),
                "pending": rt.batch, "pipelines": rt.pipeline_count}

    def synchronize(self):
        """Wait until the GPU has run everything queued so far."""
        self.rt.sync()

    def capacity(self):
        """Bytes a new tensor may take: one buffer at most the adapter's largest, and within the
        pool's cap (``memory_cap``) less what live tensors use."""
        room = self.rt.max_buffer
        if self.mem.cap is not None:
            room = min(room, max(self.mem.cap - self.mem.in_use, 0))
        return room

    def capacity_source(self):
        mem = self.mem
        if mem.cap is not None and mem.cap - mem.in_use < self.rt.max_buffer:
            return ("Wgpu() (its pool's cap of %d bytes less %d in use by live tensors; raise the cap with "
                    "Wgpu(memory_cap=...))" % (mem.cap, mem.in_use))
        return "Wgpu() (the adapter's largest buffer)"

    def empty_cache(self):
        """Give the pool's unused buffers back to the device; returns the bytes freed."""
        return self.mem.trim()

    # -- arrays -----------------------------------------------------------------------------------
    def _alloc(self, shape, dtype, itemsize=None):
        """A new contiguous array; ``itemsize`` (bytes per element of ``dtype``'s storage) where
        the caller has it at hand."""
        if itemsize is None:
            itemsize = self.storage[dtype].itemsize
        n = 1
        for d in shape:
            n *= d
        return WArray(self.mem.alloc(n * itemsize), tuple(shape), dtype)

    def _base(self, a):
        """``a``'s first element as an index into its buffer (in elements of its storage type)."""
        return a.block.offset // self.storage[a.dtype].itemsize + a.offset

    def _donor(self, a, dtype, shape, refs):
        """``a``'s block for an output of ``dtype`` and ``shape`` when nothing else can see ``a``:
        ``refs`` is sys.getrefcount(a) taken in the primitive, which holds ``a`` once."""
        if (refs <= _TEMP_REFS and a.strides is None and a.offset == 0 and a.shape == shape
                and self.storage[a.dtype].wgsl == self.storage[dtype].wgsl
                and sys.getrefcount(a.block) == 2):  # the block: a.block and this call's argument
            self.mem.in_place += 1
            return WArray(a.block, shape, dtype)
        return None

    def _check_dtype(self, dtype, op):
        if dtype is dtypes.float64 and not self.rt.has_f64:
            raise DTypeError("%s: float64 needs the shader-f64 feature, which adapter %s lacks"
                             % (op, self.rt.label))

    # -- running elementwise kernels --------------------------------------------------------------
    def _map(self, key, spec, inputs, scalar, out):
        """Run the elementwise kernel ``key`` writing ``out`` (a view) from the arrays ``inputs`` and
        an optional scalar (two words); ``spec()`` gives its arguments for codegen.map_source."""
        # the common case, kept short: every operand contiguous, one dim, the words from a template
        words = _PLAIN_WORDS[len(inputs)][:]
        buffers = []
        storage = self.storage
        offsets = 0  # the operands' element offsets or'ed together: vec4 needs them 4-aligned
        k = 12  # codegen.slot(0); the output's slot follows the inputs'
        for a in (*inputs, out):
            if a.strides is not None:
                return self._map_strided(key, spec, inputs, scalar, out)
            block = a.block
            base = a.offset
            if block.offset:
                base += block.offset // storage[a.dtype].itemsize
            if base:
                words[k] = base
                offsets |= base
            k += 9
            buffers.append(block.buffer)
        n = 1
        for d in out.shape:
            n *= d
        if n == 0:
            return out
        words[0] = words[4] = n
        if scalar is not None:
            words[2], words[3] = scalar
        rt = self.rt
        if n >= VEC4_MIN and (n | offsets) & 3 == 0:
            return self._map_vec4(key, spec, buffers, words, n, out)
        entry = rt._pipelines.get(key)
        if entry is None:
            entry = rt.pipeline(key, lambda: codegen.map_source(*spec()), len(buffers))
        rt.dispatch(entry, buffers, words, (n + 255) >> 8)
        return out

    def _map_vec4(self, key, spec, buffers, words, n, out):
        """``_map``'s plain kernel on vec4s (every operand 4-aligned, ``n`` a multiple of 4)."""
        rt = self.rt
        vec = VEC4_PER_THREAD
        vkey = key + ("vec4", vec)
        entry = rt._pipelines.get(vkey)
        if entry is None:
            entry = rt.pipeline(vkey, lambda: codegen.map_source(*spec(), vec=vec), len(buffers))
        words[0] = n >> 2
        for k in range(len(buffers)):
            words[codegen.slot(k)] >>= 2
        rt.dispatch(entry, buffers, words, ((n >> 2) + 255 * vec) // (256 * vec))
        return out

    def _map_strided(self, key, spec, inputs, scalar, out):
        """``_map`` where an operand is a strided view: the strides go in the parameters."""
        self._launch(key, lambda: codegen.map_source(*spec()),
                     [self._spec(a) for a in inputs] + [self._spec(out)], out.shape, scalar=scalar)
        return out

    def _spec(self, a, strides=None):
        """(buffer, strides, element offset) of the view ``a``, or of ``a`` read with ``strides``."""
        return a.block.buffer, (a.layout()[0] if strides is None else strides), self._base(a)

    def _launch(self, key, build, specs, shape, extra=(), scalar=None, groups=None, buffers=None):
        """Record kernel ``key`` with one thread per element of ``shape``: ``specs`` gives each
        parameter slot (buffer, strides over ``shape``, element offset); ``extra`` fills words 48+;
        ``buffers`` (default: the specs' buffers) are bound in order."""
        rt = self.rt
        if buffers is None:
            buffers = [sp[0] for sp in specs]
        entry = rt._pipelines.get(key)
        if entry is None:
            entry = rt.pipeline(key, build, len(buffers))
        n = numel(shape)
        if n == 0:
            return
        words = [0] * (48 + len(extra))
        words[0] = n
        if len(shape) == 1:
            words[1] = 1
            words[4] = n
            for k, (_, st, off) in enumerate(specs):
                s = codegen.slot(k)
                words[s] = off & _MASK
                words[s + 1] = st[0] & _MASK
        else:
            cshape, cstrides = coalesce(shape, [(sp[1], 0) for sp in specs])
            nd = len(cshape)
            if nd > codegen.MAXD:
                raise NotImplementedError("wgpu: views with more than %d non-mergeable dims" % codegen.MAXD)
            words[1] = nd
            words[4:4 + nd] = cshape
            for k, sp in enumerate(specs):
                s = codegen.slot(k)
                words[s] = sp[2] & _MASK
                for d, st in enumerate(cstrides[k]):
                    words[s + 1 + d] = st & _MASK
        if scalar is not None:
            words[2], words[3] = scalar
        for k, v in enumerate(extra):
            words[48 + k] = v & _MASK
        if groups is None:
            groups = (n + codegen.WG - 1) // codegen.WG
        rt.dispatch(entry, buffers, words, groups)

    def _source(self, arrays, scalar_ct, loads, out_st, store, expr, libs):
        """The arguments of codegen.map_source for an elementwise kernel."""
        f16 = "f16" in arrays or out_st == "f16" or scalar_ct == "f16"
        return (arrays, scalar_ct, loads, out_st, store, expr, libs, f16)

    def _copy_into(self, src, dst):
        """dst (a view) = src (same shape and dtype)."""
        st = self.storage[src.dtype].wgsl
        self._map(("copy", st), lambda: self._source([st], None, ["{}"], st, "{}", "x0", ()), [src], None, dst)
        return dst

    def _contiguous(self, a):
        if a.strides is None:
            return a
        return self._copy_into(a, self._alloc(a.shape, a.dtype))

    # -- data in and out ----------------------------------------------------------------------------
    def from_list(self, flat, shape, dtype):
        """The primitive ``from_list``: the values rounded to ``dtype``, packed and uploaded to a GPU buffer."""
        self._check_dtype(dtype, "from_list")
        values = dtypes.round_values(flat, dtype)
        return self._upload(self._pack(values, dtype), tuple(shape), dtype)

    def _pack(self, values, dtype):
        st = self.storage[dtype]
        if dtype is dtypes.bool_:
            return array("I", [1 if v else 0 for v in values]).tobytes()
        if st.wgsl == "i32" and dtype is dtypes.int64:
            bad = [v for v in values if v < _I32[0] or v > _I32[1]]
            if bad:
                raise DTypeError("from_list: int64 value %d does not fit the int32 storage of adapter %s "
                                 "(no shader-int64)" % (bad[0], self.rt.label))
        if st.code == "e":
            return struct.pack("<%de" % len(values), *values)
        return array(st.code, values).tobytes()

    def _upload(self, data, shape, dtype):
        out = self._alloc(shape, dtype)
        self.rt.write(out.block.buffer, out.block.offset, _pad4(data))
        return out

    def from_bytes(self, buf, shape, dtype):
        """The primitive ``from_bytes``: little-endian bytes uploaded in the device's storage type for ``dtype``."""
        self._check_dtype(dtype, "from_bytes")
        n = numel(shape)
        st = self.storage[dtype]
        if dtype is dtypes.bool_:
            data = array("I", [1 if b else 0 for b in bytes(buf)]).tobytes()
        elif dtype is dtypes.int8:
            data = array("i", array("b", bytes(buf))).tobytes()
        elif dtype is dtypes.uint8:
            data = array("i", array("B", bytes(buf))).tobytes()
        elif dtype is dtypes.bfloat16:
            data = array("I", [h << 16 for h in _u16(buf)]).tobytes()
        elif dtype is dtypes.float16 and st.wgsl == "f32":
            data = array("f", [dtypes.f16_bits_to_float(h) for h in _u16(buf)]).tobytes()
        elif dtype is dtypes.int64 and st.wgsl == "i32":
            return self.from_list(list(struct.unpack("<%dq" % n, bytes(buf))), shape, dtype)
        else:
            data = bytes(buf)
        return self._upload(data, tuple(shape), dtype)

    def _read(self, a):
        """``a``'s values in storage layout, row-major (bytes; waits for the GPU)."""
        a = self._contiguous(a)
        st = self.storage[a.dtype]
        n = numel(a.shape)
        return self.rt.read(a.block.buffer, a.block.offset + a.offset * st.itemsize, n * st.itemsize)

    def to_list(self, a):
        """The primitive ``to_list``: waits for the queue, reads the buffer back; raises any recorded index fault."""
        data = self._read(a)
        st = self.storage[a.dtype]
        if st.code == "e":
            return list(struct.unpack("<%de" % (len(data) // 2), data))
        out = array(st.code)
        out.frombytes(data)
        out = out.tolist()
        if a.dtype is dtypes.bool_:
            return [v != 0 for v in out]
        return out

    def to_bytes(self, a):
        """The primitive ``to_bytes``: waits for the queue and reads the values back, little-endian."""
        data = self._read(a)
        dtype = a.dtype
        st = self.storage[dtype]
        if dtype is dtypes.bool_:
            return bytes(array("B", [1 if v else 0 for v in _typed("I", data)]))
        if dtype is dtypes.int8:
            return array("b", _typed("i", data)).tobytes()
        if dtype is dtypes.uint8:
            return array("B", _typed("i", data)).tobytes()
        if dtype is dtypes.bfloat16:
            return array("H", [v >> 16 for v in _typed("I", data)]).tobytes()
        if dtype is dtypes.float16:
            if st.wgsl == "f32":
                return array("H", [dtypes.f32_to_f16_bits(v) for v in _typed("f", data)]).tobytes()
            # every nan comes out as 0x7E00, as the Cpu backend writes it (it keeps no payload)
            h = _typed("H", data)
            return array("H", [0x7E00 if (v & 0x7C00) == 0x7C00 and v & 0x3FF else v for v in h]).tobytes()
        if dtype is dtypes.int64 and st.wgsl == "i32":
            return array("q", _typed("i", data)).tobytes()
        return data

    def full(self, shape, value, dtype):
        """The primitive ``full``: a buffer of ``shape`` filled with ``value`` by a kernel (nothing uploaded)."""
        self._check_dtype(dtype, "full")
        v = dtypes.round_values([value], dtype)[0]
        st = self.storage[dtype].wgsl
        ct = "f32" if st == "f16" else st
        store = "f16({})" if st == "f16" else "{}"
        out = self._alloc(shape, dtype)
        return self._map(("fill", st), lambda: self._source([], ct, ["{}"], st, store, "x0", ()), [],
                         _scalar_words(v, ct), out)

    # -- movement -------------------------------------------------------------------------------------
    def reshape(self, a, shape):
        """The primitive ``reshape``: a view when the strides allow it, else a copy kernel."""
        shape = tuple(shape)
        if a.strides is None:
            return WArray(a.block, shape, a.dtype, None, a.offset)
        strides = reshape_strides(a.shape, a.strides, shape)
        if strides is None:
            c = self._contiguous(a)
            return WArray(c.block, shape, a.dtype, None, c.offset)
        return view(a, shape, strides, a.offset)

    def permute(self, a, dims):
        """The primitive ``permute``: a strided view (no kernel)."""
        strides, offset = a.layout()
        shape, strides = permute_layout(a.shape, strides, dims)
        return view(a, shape, strides, offset)

    def expand(self, a, shape):
        """The primitive ``expand``: a stride-0 view (no kernel)."""
        strides, offset = a.layout()
        shape, strides = expand_layout(a.shape, strides, shape)
        return view(a, shape, strides, offset)

    def slice(self, a, ranges):
        """The primitive ``slice``: a strided view with an offset (no kernel)."""
        strides, offset = a.layout()
        shape, strides, offset = slice_layout(strides, offset, ranges)
        return view(a, shape, strides, offset)

    def slice_assign(self, a, ranges, value):
        """The primitive ``slice_assign``: a copy of ``a`` (or its buffer, when nothing else holds it) with the
        region written."""
        refs = sys.getrefcount(a)  # before any call: an argument being built counts as a reference
        out = self._donor(a, a.dtype, a.shape, refs)
        if out is None:
            out = self._copy_into(a, self._alloc(a.shape, a.dtype))
        shape, strides, offset = slice_layout(contiguous_strides(a.shape), 0, ranges)
        self._copy_into(value, WArray(out.block, shape, a.dtype, strides, offset))
        return out

    def cat(self, arrays, dim):
        """The primitive ``cat``: one copy kernel per input into a new buffer."""
        first = arrays[0]
        size = sum(x.shape[dim] for x in arrays)
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        out = self._alloc(shape, first.dtype)
        strides = contiguous_strides(shape)
        start = 0
        for x in arrays:
            region = WArray(out.block, x.shape, x.dtype, strides, start * strides[dim])
            self._copy_into(x, region)
            start += x.shape[dim]
        return out

    # -- elementwise ------------------------------------------------------------------------------------
    def _recipe(self, kind, op, dtype):
        key = (kind, op, dtype)
        rec = self._recipes.get(key)
        if rec is None:
            make = ops.unary_recipe if kind == "u" else ops.binary_recipe
            rec = self._recipes[key] = make(op, dtype, self.rt.has_f64, self.rt.has_i64)
        return rec

    def unary(self, op, x):
        """The primitive ``unary``: one generated WGSL kernel; it may write into ``x``'s buffer when nothing else
        holds it."""
        dtype = x.dtype
        if dtype.kind != "f" and op in ROUNDING:
            return x
        refs = sys.getrefcount(x)
        plan = self._unary_plans.get((op, dtype))
        if plan is None:
            plan = self._unary_plan(op, dtype)
        key, rec, build, itemsize = plan
        out = self._donor(x, rec.out, x.shape, refs) if refs <= _TEMP_REFS else None
        if out is None:
            out = self._alloc(x.shape, rec.out, itemsize)
        return self._map(key, build, (x,), None, out)

    def _unary_plan(self, op, dtype):
        """(kernel key, recipe, codegen spec, output itemsize) of unary ``op`` on ``dtype``."""
        rec = self._recipe("u", op, dtype)
        st = self.storage[dtype].wgsl
        ost = self.storage[rec.out].wgsl

        def build():
            store, libs = ops.store(rec.ct, rec.out, ost, rec.is_bool_expr)
            return self._source([st], None, [ops.load(st, rec.ct)], ost, store, rec.fn("x0"),
                                rec.libs + tuple(libs))
        plan = self._unary_plans[(op, dtype)] = (("u", op, dtype.name), rec, build, self.storage[rec.out].itemsize)
        return plan

    def binary(self, op, a, b):
        """The primitive ``binary``: one generated WGSL kernel reading any strides (a Python scalar as a parameter)."""
        refs_a, refs_b = sys.getrefcount(a), sys.getrefcount(b)
        ta, tb = type(a) is WArray, type(b) is WArray
        if (ta and tb and refs_a > _TEMP_REFS and refs_b > _TEMP_REFS and a.strides is None and b.strides is None
                and not (a.offset or b.offset or a.block.offset or b.block.offset) and a.shape == b.shape):
            # the commonest op, kept short (a model's x + y): two contiguous arrays no one lends
            # their block, a kernel already built, fewer elements than vec4 takes; else _map below
            plan = self._plans.get((op, a.dtype, 0))
            if plan is not None:
                key, rec, _, itemsize = plan
                shape = a.shape
                n = shape[0] if len(shape) == 1 else numel(shape)
                entry = self.rt._pipelines.get(key)
                if entry is not None and 0 < n < VEC4_MIN:
                    block = self.mem.alloc(n * itemsize)
                    if not block.offset:
                        words = _PLAIN_WORDS[2][:]
                        words[0] = words[4] = n
                        self.rt.dispatch(entry, (a.block.buffer, b.block.buffer, block.buffer), words, (n + 255) >> 8)
                        return WArray(block, shape, rec.out)
                    return self._map(key, plan[2], (a, b), None, WArray(block, shape, rec.out))
        x = a if ta else b
        mode = 0 if ta and tb else (1 if ta else 2)
        plan = self._plans.get((op, x.dtype, mode))
        if plan is None:
            plan = self._binary_plan(op, x.dtype, mode)
        key, rec, spec, itemsize = plan
        scalar = None
        if mode:
            s = b if ta else a
            ct = rec.ct
            if ct == "f32":
                scalar = (_F32_BITS(_F32_PACK(s))[0], 0)
            elif type(s) is int and (ct == "i32" or ct == "i64"):
                lo, hi = _I32 if ct == "i32" else _I64
                if not lo <= s <= hi:
                    return self._binary_wide(op, a, b, s, ta)
                scalar = (s & _MASK, (s >> 32) & _MASK)
            else:
                scalar = _scalar_words(s, ct)
        out = None
        if ta and refs_a <= _TEMP_REFS:
            out = self._donor(a, rec.out, a.shape, refs_a)
        if out is None and tb and refs_b <= _TEMP_REFS and b is not a:
            out = self._donor(b, rec.out, b.shape, refs_b)
        if out is None:
            out = self._alloc(x.shape, rec.out, itemsize)
        return self._map(key, spec, (a, b) if mode == 0 else (x,), scalar, out)

    def _binary_plan(self, op, dtype, mode, rec=None):
        """(kernel key, recipe, codegen spec, output itemsize) of ``op`` on ``dtype``; mode 0: two
        arrays, 1: array and scalar, 2: scalar and array."""
        rec = rec or self._recipe("b", op, dtype)
        st = self.storage[dtype].wgsl
        ost = self.storage[rec.out].wgsl
        n = 2 if mode == 0 else 1
        # operand names in op order: arrays load as x0, x1; a scalar as the last x
        names = ("x0", "x1") if mode < 2 else ("x1", "x0")
        sct = None if mode == 0 else rec.ct

        def spec():
            store, libs = ops.store(rec.ct, rec.out, ost, rec.is_bool_expr)
            loads = [ops.load(st, rec.ct)] * n + ([] if sct is None else ["{}"])
            return self._source([st] * n, sct, loads, ost, store, rec.fn(*names), rec.libs + tuple(libs))
        plan = (("b", op, dtype.name, rec.ct, mode), rec, spec, self.storage[rec.out].itemsize)
        self._plans[(op, dtype, mode)] = plan
        return plan

    def _binary_wide(self, op, a, b, s, ta):
        """An integer op with a Python int beyond the compute type: in i64 when it fits, wrapped
        when the op is exact modulo 2^64, else on the host."""
        x = a if ta else b
        dtype = x.dtype
        if self.rt.has_i64 and _I64[0] <= s <= _I64[1]:
            wide = ops.binary_recipe(op, dtypes.int64, True, True)
            rec = ops.Recipe(wide.ct, wide.fn, wide.libs, dtypes.bool_ if wide.out is dtypes.bool_ else dtype,
                             wide.is_bool_expr)
            key, rec, spec, _ = self._binary_plan(op, dtype, 1 if ta else 2, rec)
            del self._plans[(op, dtype, 1 if ta else 2)]  # the wide recipe serves this call only
            key = key + ("wide",)
            out = self._alloc(x.shape, rec.out)
            return self._map(key, spec, (x,), (s & _MASK, (s >> 32) & _MASK), out)
        if op in _RING:  # exact modulo the compute width: wrap the scalar into it
            lo, hi = _I64 if self._recipe("b", op, dtype).ct == "i64" else _I32
            s = ((s - lo) % (hi - lo + 1)) + lo
            return self.binary(op, a if ta else s, s if ta else b)
        return self._binary_on_host(op, a, b)

    def _binary_on_host(self, op, a, b):
        """An integer op with a Python int beyond 64 bits: the Cpu backend's kernel (a sync point)."""
        from ember.backends.cpu import elementwise as cpu_ew
        from ember.backends.cpu.array import CpuArray, values

        def lift(v):
            if type(v) is WArray:
                return CpuArray(self.to_list(v), v.shape, v.dtype)
            return v
        out = cpu_ew.binary(op, lift(a), lift(b))
        return self.from_list(values(out), out.shape, out.dtype)

    def where(self, cond, a, b):
        """The primitive ``where``: one generated ``select`` kernel."""
        st = self.storage[a.dtype].wgsl
        out = self._alloc(a.shape, a.dtype)
        return self._map(("where", st), lambda: self._source(["u32", st, st], None, ["{}"] * 3, st, "{}",
                                                               "select(x2, x1, x0 != 0u)", ()),
                         [cond, a, b], None, out)

    def cast(self, x, dtype):
        """The primitive ``cast``: one conversion kernel with ember's rules (truncation; nan and inf to 0)."""
        if x.dtype is dtype:
            return x
        self._check_dtype(dtype, "cast")
        src = self.storage[x.dtype].wgsl
        dst = self.storage[dtype].wgsl
        out = self._alloc(x.shape, dtype)
        rt = self.rt

        def build():
            t_in, ct, expr, t_out, store, libs = ops.cast_expr(x.dtype, dtype, src, dst, rt.has_f64, rt.has_i64)
            return self._source([t_in], None, [ops.load(t_in, ct)], t_out, store, expr, libs)
        return self._map(("cast", x.dtype.name, dtype.name), build, [x], None, out)

    # -- reductions, linear algebra, nn, indexing ---------------------------------------------------------
    reduce = _reduce.reduce
    reduce_dims = _reduce.reduce_dims
    scan = _reduce.scan
    sort = _reduce.sort
    matmul = _linalg.matmul
    conv = _linalg.conv
    pool = _linalg.pool
    gather = _index.gather
    scatter = _index.scatter

    # random draws: the Cpu's stream uploaded, or Philox on the GPU (random.py)
    random = _random.random


def _scalar_words(v, ct):
    """A Python scalar as the two parameter words of compute type ``ct``."""
    if ct == "f32" or ct == "f16":
        return struct.unpack("<I", struct.pack("<f", v))[0], 0
    if ct == "f64":
        lo, hi = struct.unpack("<II", struct.pack("<d", v))
        return lo, hi
    v = int(v)
    return v & _MASK, (v >> 32) & _MASK


def _pad4(data):
    r = len(data) % 4
    return data + b"\0" * (4 - r) if r else data


def _u16(buf):
    out = array("H")
    out.frombytes(bytes(buf))
    if sys.byteorder == "big":
        out.byteswap()
    return out


def _typed(code, data):
    out = array(code)
    out.frombytes(data)
    return out
