"""``CCompiler``: fused kernels for the C-backed ``ember.Cpu()``, generated as C and built by cffi.

For each kernel (equal kernels share one) and layout variant (which inputs are unit-stride or broadcast along the
innermost loop: cgen.py) it generates C (cexpr.py, cgen.py), builds it once per machine into the
disk cache (cache.py) and calls it with the inputs' ``array.array`` buffers in place, the GIL
released. Large kernels split over ``ember.backends.cpu.ckernels.num_threads()`` threads.

Float32 chains compute op by op in float32 with ``-ffp-contract=off`` and no ``-ffast-math``, so
``+ - * /``, sqrt, compares, casts and integer ops give the pure Cpu's bits; exp and erf use fast
approximations within the conformance tolerance. A matmul runs ember's GEMM
(``ember._ckernels``), then its epilogue as a fused map over the result.

Where no C compiler works (cffi or gcc missing, a failed build), each kernel falls back to the
``Interpreter`` after one warning: a user's program never fails for want of a compiler.

>>> outs = CCompiler().run(kernel, (1024,), [(x, (1,), 0)])
"""
import warnings
from array import array

from ember.backends.cpu import ckernels
from ember.backends.cpu.array import CpuArray, numel
from ember.shapes import row_major_strides

from . import cache, cexpr, cgen, check, ir
from .cprelude import PRELUDE
from .interpret import Interpreter

CDEF = "int fk_run(uintptr_t args, int nthreads, uintptr_t parallel);"
_BASE_FLAGS = ("-O3", "-g0", "-std=gnu99", "-fno-math-errno", "-fno-trapping-math", "-ffp-contract=off",
               "-fno-wrapv", "-pthread", "-Wno-unused-function", "-Wno-unused-variable",
               "-Wno-unused-but-set-variable", "-Wno-unused-local-typedefs")
_ISA_FLAGS = {"avx512": ("-mavx512f", "-mavx512vl", "-mavx512bw", "-mavx512dq", "-mavx2", "-mfma",
                         "-mprefer-vector-width=512"),
              "avx2": ("-mavx2", "-mfma")}
_CODES = {"float32": "f", "float64": "d", "int8": "b", "int32": "i", "int64": "q", "bool": "B"}
_ITEM = {"f": 4, "d": 8, "b": 1, "i": 4, "q": 8, "B": 1}
_WORK_PER_THREAD = 1 << 17  # node evaluations: below this, threads cost more than they give
_PLANS = 512  # layouts a compiler remembers (then it starts afresh)
_warned = []
_pool = None  # the address of emb_parallel (0: none), found on first use
_cd = None  # ember.backends.cpu.cdevice, imported on first use
_dtypes = {}  # dtype name -> ember dtype


def flags():
    """The compiler flags: the base set and the instruction set ember._ckernels picked."""
    return _BASE_FLAGS + _ISA_FLAGS.get(ckernels.isa() or "baseline", ())


def _cdevice():
    global _cd
    if _cd is None:
        from ember.backends.cpu import cdevice
        _cd = cdevice
    return _cd


def _parallel():
    """The address of ember._ckernels' ``emb_parallel`` (its worker pool), or 0 without one."""
    global _pool
    if _pool is None:
        try:
            _pool = int(_cdevice()._lib.emb_parallel_addr())
        except (ImportError, AttributeError):
            _pool = 0
    return _pool


def _buffer(a):
    """``a``'s storage as an array C can read (bool lists become bytes; shared when already one)."""
    d = a.data
    code = _CODES[a.dtype.name]
    if type(d) is array and d.typecode in (code, "l" if code == "i" else code):
        return d
    if code == "B":
        return array("B", bytes(d))
    return array(code, d)


def _result(buf, shape, dtype):
    if dtype == "bool":
        return CpuArray(list(map(bool, buf)), shape, dtype_of(dtype))
    return CpuArray(buf, shape, dtype_of(dtype))


def _out_specs(kernel, space):
    """Per output of ``kernel`` over ``space``: its array typecode, element count, shape and dtype."""
    specs = []
    for i, per_row in kernel.outputs:
        shape = space[:kernel.dim] + (1,) + space[kernel.dim + 1:] if per_row else space
        name = kernel.nodes[i][1]
        specs.append((_CODES[name], numel(shape), shape, name))
    return specs


def dtype_of(name):
    d = _dtypes.get(name)
    if d is None:
        from ember import dtypes
        d = _dtypes[name] = dtypes.get(name)
    return d


def _collapse(sizes, strides_list):
    """Drop size-1 dims and merge neighbours that every layout (strides_list) allows."""
    dims = []
    for d, n in enumerate(sizes):
        if n == 1:
            continue
        if dims and all(st[dims[-1][0][-1]] == st[d] * n for st in strides_list):
            dims[-1] = (dims[-1][0] + [d], dims[-1][1] * n)
        else:
            dims.append(([d], n))
    shape = [n for _, n in dims]
    out = [[st[ds[-1]] for ds, _ in dims] for st in strides_list]
    return shape, out




def _size(a):
    return len(a.data)


def _dtype_name(a):
    return getattr(a.dtype, "name", None)


def _class(s):
    return "c" if s == 1 else "s" if s == 0 else "g"


class _Plan:
    """One call's layout: the variant key and the int64 argument block cgen's ``fk_args`` reads."""

    def __init__(self, kernel, space, strides):
        ni, no = max(1, len(kernel.inputs)), max(1, len(kernel.outputs))
        self.ni, self.no = ni, no
        if kernel.kind == "row" and kernel.dim is not None:
            d = kernel.dim
            other = list(space[:d]) + list(space[d + 1:])
            out_rm = list(row_major_strides(space))
            lists = [list(st[:d]) + list(st[d + 1:]) for st in strides] + [out_rm[:d] + out_rm[d + 1:]]
            shape, outer = _collapse(other, lists)
            inner = [st[d] for st in strides]
            out_inner = out_rm[d]
            n, total = space[d], numel(other)
            self.variant = ("rows", tuple(_class(s) for s in inner), out_inner == 1)
        else:
            lists = [list(st) for st in strides] + [list(row_major_strides(space))]
            shape, outer = _collapse(list(space), lists)
            if not shape:
                shape, outer = [1], [[0] for _ in lists]
            n = shape[-1]
            inner = [st[-1] for st in outer[:-1]]
            shape, outer = shape[:-1], [st[:-1] for st in outer]
            total, out_inner = numel(space), 1
            outer[-1] = [0] * len(shape)  # flat outputs are addressed by line * n
            self.variant = ("flat", tuple(_class(s) for s in inner), True)
        self.fits = len(shape) <= cgen.MAXD
        self.nd, self.total, self.n = len(shape), total, n
        self.work = total * (n if self.variant[0] == "rows" else 1) * max(1, len(kernel.nodes))
        self.outs = _out_specs(kernel, space)
        self.shape, self.outer, self.inner, self.out_inner = shape, outer, inner, out_inner
        self._block = None  # the argument block with every address 0, built on first use

    def _template(self):
        m, ni, no = cgen.MAXD, self.ni, self.no
        pad = lambda xs, k: list(xs) + [0] * (k - len(xs))
        block = [self.nd, self.total, self.n] + pad(self.shape, m) + [0] * ni + pad(self.inner, ni)
        for k in range(ni):
            block += pad(self.outer[k] if k < len(self.outer) - 1 else [], m)
        self._out_at = len(block)
        block += [0] * no + [self.out_inner] + pad(self.outer[-1], m) + [0]
        self._in_at = 3 + m
        return array("q", block)

    def args(self, in_addrs, out_addrs, acc_addr):
        if self._block is None:
            self._block = self._template()
        block = array("q", self._block)  # a copy per call: calls may overlap (the GIL is released)
        at = self._in_at
        for k, v in enumerate(in_addrs):
            block[at + k] = v
        at = self._out_at
        for k, v in enumerate(out_addrs):
            block[at + k] = v
        block[-1] = acc_addr
        return block


class CCompiler:
    """The fusion compiler of the C-backed Cpu (``ir.py`` states the contract)."""

    name = "c"

    def __init__(self):
        # tables keyed by the kernel (equal kernels are one key; ir.py hashes a kernel's key once)
        self._modules = {}  # (kernel, variant) -> cffi lib
        self._interpreted = set()  # kernels whose build failed
        self._interpreter = Interpreter()
        self._verdicts = {}  # kernel -> None (compilable) or why not: kernels are checked once
        self._plans = {}  # (kernel, kind, space, strides) -> (_Plan, lib or None until built)

    def layout(self, array_):
        return array_.layout() if type(array_) is CpuArray else None

    def layout_key(self, array_):
        """What fixes ``layout(array_)`` for an array of a known shape, made without computing
        strides (the scheduler's graph key): an implicit-contiguous array is (None, 0)."""
        return (array_.strides, array_.offset) if type(array_) is CpuArray else None

    def supports(self, kernel):
        return self._verdict(kernel) is None

    def _verdict(self, kernel):
        """None when ``kernel`` compiles, else why not (computed once per kernel key)."""
        if getattr(kernel, "key", None) is None:
            return "not a kernel"
        verdict = self._verdicts.get(kernel, False)
        if verdict is not False:
            return verdict
        errors = check.kernel_errors(kernel)
        if errors:
            verdict = "; ".join(errors) if isinstance(errors, (list, tuple)) else str(errors)
        elif kernel.rank > cgen.MAXD:
            verdict = "rank above %d" % cgen.MAXD
        else:
            verdict = cexpr.supported(kernel.nodes)
        self._verdicts[kernel] = verdict
        return verdict

    def source(self, kernel):
        check.kernel(kernel)
        classes = tuple("c" for _ in kernel.inputs)
        kind = "rows" if kernel.kind == "row" and kernel.dim is not None else "flat"
        return cgen.source(kernel, (kind, classes, True), PRELUDE)

    def run(self, kernel, space, inputs):
        if getattr(kernel, "key", None) is None or kernel not in self._verdicts:
            check.kernel(kernel)  # raises saying what is malformed
        check.run_args(kernel, space, inputs, _size, _dtype_name)
        space = tuple(space)
        if self._verdict(kernel) is not None or kernel in self._interpreted:
            return self._interpreter.run(kernel, space, inputs)
        if kernel.kind == "matmul":
            return self._matmul(kernel, space, inputs)
        outs = self._rows(kernel, space, inputs, None)
        return outs if outs is not None else self._interpreter.run(kernel, space, inputs)

    def prepare(self, kernel, space, inputs):
        """``run`` for graphs that repeat: a ``_Call`` that runs ``kernel`` over ``space`` again on
        arrays of the same strides and offsets as ``inputs`` (built and checked by a ``run`` that
        came first), skipping that run's checks and lookups. None where ``run`` takes another way
        (the interpreter, an empty space, an epilogue-free product)."""
        space = tuple(space)
        if getattr(kernel, "key", None) is None or self._verdicts.get(kernel, False) is not None or \
                kernel in self._interpreted:
            return None
        gemm = None
        rows_space, strides = space, [tuple(st) for _, st, _ in inputs]
        if kernel.kind == "matmul":
            batch, (m, n, k) = space[:-3], space[-3:]
            if k == 0 or numel(batch) * m * n == 0 or \
                    ([i for i, _ in kernel.outputs] == [0] * len(kernel.outputs) and kernel.nodes[0][0] == "acc"):
                return None
            rows_space = batch + (m, n)
            strides = [st if j not in (kernel.a, kernel.b) else (0,) * kernel.rank for j, st in enumerate(strides)]
            gemm = _Gemm(kernel, batch, m, n, k, inputs)
        known = self._plans.get((kernel, "matmul" if gemm else "row", rows_space, tuple(strides)))
        if known is None or known[1] is None:
            return None
        plan, lib = known
        if not plan.fits or plan.total == 0 or plan.n == 0:
            return None
        return _Call(lib, plan, [off for _, _, off in inputs], gemm, kernel)

    def _lib(self, kernel, variant):
        key = (kernel, variant)
        lib = self._modules.get(key)
        if lib is None:
            src = cgen.source(kernel, variant, PRELUDE)
            try:
                lib = cache.load(src, flags(), CDEF).lib
            except cache.BuildError as e:
                _warn_once(e)
                self._interpreted.add(kernel)
                return None
            self._modules[key] = lib
        return lib

    def _rows(self, kernel, space, inputs, acc):
        """Run a RowKernel (or a matmul's epilogue over ``acc``) over ``space``."""
        kind = "matmul" if acc is not None else "row"
        strides = [tuple(st) for _, st, _ in inputs] if kind == "row" else \
            [tuple(st) if k not in (kernel.a, kernel.b) else (0,) * kernel.rank
             for k, (_, st, _) in enumerate(inputs)]
        key = (kernel, kind, space, tuple(strides))
        known = self._plans.get(key)
        if known is None:
            if len(self._plans) >= _PLANS:
                self._plans.clear()
            known = self._plans[key] = [_Plan(kernel, space, strides), None]
        plan, lib = known
        if not plan.fits or (plan.variant[0] == "rows" and plan.n == 0):
            return None  # the caller runs the interpreter
        fresh = _cdevice()._fresh
        outs = [fresh(code, count) for code, count, _, _ in plan.outs]
        if plan.total == 0 or (plan.n == 0 and kernel.dim is None):
            return _finish(plan, outs)
        if lib is None:
            lib = known[1] = self._lib(kernel, plan.variant)
            if lib is None:
                return None
        keep, addrs = [], []
        for k, (a, st, off) in enumerate(inputs):
            if acc is not None and k in (kernel.a, kernel.b):
                addrs.append(0)
                continue
            buf = _buffer(a)
            keep.append(buf)
            addrs.append(buf.buffer_info()[0] + off * buf.itemsize)
        acc_addr = acc.buffer_info()[0] if acc is not None else 0
        args = plan.args(addrs, [b.buffer_info()[0] for b in outs], acc_addr)
        threads = max(1, min(ckernels.num_threads(), plan.work // _WORK_PER_THREAD))
        if lib.fk_run(args.buffer_info()[0], threads, _parallel() if threads > 1 else 0) < 0:
            raise MemoryError("fusion: no memory for a row kernel's scratch (%d values a row)" % plan.n)
        return _finish(plan, outs)

    def _matmul(self, kernel, space, inputs):
        batch, (m, n, k) = space[:-3], space[-3:]
        out_space = batch + (m, n)
        acc = self._gemm(kernel, batch, m, n, k, inputs)
        if [i for i, _ in kernel.outputs] == [0] * len(kernel.outputs) and kernel.nodes[0][0] == "acc":
            return [_result(acc, out_space, kernel.acc_dtype) for _ in kernel.outputs]
        outs = self._rows(kernel, out_space, inputs, acc)
        if outs is None:
            return self._interpreter.run(kernel, space, inputs)
        return outs

    def _gemm(self, kernel, batch, m, n, k, inputs):
        """``a @ b`` by ember._ckernels' GEMM into a fresh buffer (zeros when K is 0)."""
        total = numel(batch) * m * n
        code = _CODES[kernel.acc_dtype]
        if k == 0 or total == 0:
            return array(code, [0]) * total
        return _Gemm(kernel, batch, m, n, k, inputs)([a for a, _, _ in inputs])


class _Gemm:
    """A fused product's GEMM call for one layout: ``a @ b`` into a fresh buffer."""

    __slots__ = ("dtype", "code", "total", "a", "b", "shape_args", "keep")

    def __init__(self, kernel, batch, m, n, k, inputs):
        cd = _cdevice()
        (_, ast, aoff), (_, bst, boff) = inputs[kernel.a], inputs[kernel.b]
        nb = len(batch)
        bs, sa, sb = array("q", batch or (1,)), array("q", ast[:nb] or (0,)), array("q", bst[:nb] or (0,))
        self.keep = (bs, sa, sb)
        self.dtype, self.code, self.total = cd._DT[dtype_of(kernel.acc_dtype)], _CODES[kernel.acc_dtype], numel(batch) * m * n
        self.a, self.b = (kernel.a, aoff), (kernel.b, boff)
        self.shape_args = (nb, bs.buffer_info()[0], sa.buffer_info()[0], sb.buffer_info()[0], m, n, k,
                           ast[nb], ast[nb + 1], bst[nb], bst[nb + 1])

    def __call__(self, arrays):
        (ka, aoff), (kb, boff) = self.a, self.b
        abuf, bbuf = _buffer(arrays[ka]), _buffer(arrays[kb])
        nb, bs, sa, sb, m, n, k, a0, a1, b0, b1 = self.shape_args
        out = _cdevice()._fresh(self.code, self.total)
        size = abuf.itemsize
        rc = _cdevice()._lib.emb_matmul(self.dtype, nb, bs, sa, sb, m, n, k, abuf.buffer_info()[0] + aoff * size,
                                        a0, a1, bbuf.buffer_info()[0] + boff * size, b0, b1, out.buffer_info()[0], 0,
                                        ckernels.num_threads())
        if rc < 0:
            raise MemoryError("fusion matmul: the C kernels could not allocate their workspace")
        return out


class _Call:
    """``CCompiler.prepare``'s result: ``call(arrays)`` runs a built kernel on arrays laid out as
    the run that built it (the arrays in the kernel's input order); returns the outputs. What a
    run looks up per call (typecodes, byte offsets, the thread count of a small kernel, output
    dtypes) is looked up here once: a repeated small graph costs its Python, not its loop."""

    __slots__ = ("run", "block", "gemm", "ins", "outs", "bools", "work", "plan")

    def __init__(self, lib, plan, offsets, gemm, kernel):
        self.run, self.plan, self.gemm = lib.fk_run, plan, gemm
        self.block = plan.args([0] * len(offsets), [0] * len(plan.outs), 0)
        skip = (kernel.a, kernel.b) if gemm is not None else ()
        # (input position, block slot, typecode its storage must have, offset in bytes)
        self.ins = [(k, plan._in_at + k, _CODES[kernel.inputs[k]], off * _ITEM[_CODES[kernel.inputs[k]]])
                    for k, off in enumerate(offsets) if k not in skip]
        # (block slot, typecode, count, shape, dtype); bool outputs' bytes become a list after the run
        self.outs = [(plan._out_at + k, code, count, shape, None if name == "bool" else dtype_of(name))
                     for k, (code, count, shape, name) in enumerate(plan.outs)]
        self.bools = [(k, shape) for k, (_, _, shape, name) in enumerate(plan.outs) if name == "bool"]
        self.work = plan.work // _WORK_PER_THREAD  # threads it may use; 0 or 1: this one only

    def __call__(self, arrays):
        block = array("q", self.block)  # a copy per call: calls may overlap (the GIL is released)
        keep = []
        for k, at, code, off in self.ins:
            buf = arrays[k].data
            if type(buf) is not array or buf.typecode != code:
                buf = _buffer(arrays[k])
                keep.append(buf)
            block[at] = buf.buffer_info()[0] + off
        fresh = _cdevice()._fresh
        results = []
        for at, code, count, shape, dtype in self.outs:
            buf = fresh(code, count)
            block[at] = buf.buffer_info()[0]
            results.append(CpuArray(buf, shape, dtype) if dtype is not None else buf)  # filled below
        if self.gemm is not None:
            acc = self.gemm(arrays)
            block[-1] = acc.buffer_info()[0]
        threads = 1 if self.work <= 1 else max(1, min(ckernels.num_threads(), self.work))
        if self.run(block.buffer_info()[0], threads, _parallel() if threads > 1 else 0) < 0:
            raise MemoryError("fusion: no memory for a row kernel's scratch (%d values a row)" % self.plan.n)
        for k, shape in self.bools:
            results[k] = _result(results[k], shape, "bool")
        return results


def _finish(plan, outs):
    return [_result(buf, shape, name) for buf, (_, _, shape, name) in zip(outs, plan.outs)]


def _warn_once(error):
    if not _warned:
        _warned.append(error)
        warnings.warn("ember fusion: cannot build C kernels (%s); fused kernels run in the pure-Python "
                      "interpreter instead" % (error,), RuntimeWarning, stacklevel=4)
