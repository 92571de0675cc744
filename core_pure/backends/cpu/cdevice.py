"""``ember.Cpu()`` with C kernels: the pure Cpu device with its hot primitives run by ``ember._ckernels``.

It is the same device (``Cpu(kernels="c") == Cpu(kernels="python")``), so its arrays meet the pure
device's in one op, and it gives the same values (docs/architecture.md §1 and §8). This file holds the
primitives only: how arrays reach C is cstorage.py, the output buffers pool.py. Where a primitive or
dtype has no C kernel (float16, bfloat16, scan, sort, ...) the pure kernel runs; its result is
already stored as this device stores it. The fused composites (softmax, gelu, linear...) are
frontend code: ``ember.nn.fused_c`` registers them for this class.

This module imports on MicroPython too (the test runner imports every module); there the kernels are
absent and nothing here runs.
"""
from array import array

from ... import dtypes, ops
from ...errors import IndexOutOfRange
from ...shapes import conv_out_size
from . import ckernels as _ck
from . import conv as _conv
from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from .array import CpuArray, numel, strides_for
from .cstorage import CODES as _CODES, DT as _DT, LITTLE as _LITTLE
from .cstorage import code as _code, contig as _contig, held as _held, operand as _operand, q as _q
from .cstorage import result as _result
from .cstorage import scalar as _scalar, small as _small, stored as _stored, threads as _threads
from .device import Cpu
from .pool import fresh as _fresh
from .pool import release_buffers  # noqa: F401  (ember.backends.cpu.cdevice.release_buffers)

_lib, _ffi = _ck.native()

f32, f64, i8, i32, i64, bool_ = (dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32,
                                 dtypes.int64, dtypes.bool_)

if _lib is not None:  # the kernels' op codes, named after the op table's names
    _UNARY = {name: getattr(_lib, "EMB_U_" + name.upper()) for name in ops.UNARY_OPS}
    _BINARY = {name: getattr(_lib, "EMB_B_" + name.upper()) for name in ops.BINARY_OPS}
    _REDUCE = {name: getattr(_lib, "EMB_R_" + name.upper()) for name in ops.REDUCE_OPS}
    _binary1 = _lib.emb_binary1
    _matmul = _lib.emb_matmul
_COMPARE = ops.COMPARISONS
_TO_BOOL_UNARY = ops.TO_BOOL_UNARY
_RING_OPS = ops.RING_OPS


class CpuC(Cpu):
    """The Cpu device with C kernels (see the module doc). ``ember.Cpu()`` returns one when
    ``ember._ckernels`` loads; it equals every other Cpu device."""

    kernels = "c"

    # data in and out
    def from_list(self, flat, shape, dtype):
        code = _CODES.get(dtype)
        if code is None:
            return Cpu.from_list(self, flat, shape, dtype)
        if dtype.kind == "f":
            try:
                return CpuArray(array(code, flat), tuple(shape), dtype)
            except (TypeError, OverflowError):
                pass
        return CpuArray(array(code, dtypes.round_values(flat, dtype)), tuple(shape), dtype)

    def full(self, shape, value, dtype):
        code = _CODES.get(dtype)
        if code is None:
            return Cpu.full(self, shape, value, dtype)
        return CpuArray(array(code, dtypes.round_values([value], dtype)) * numel(shape), tuple(shape), dtype)

    def to_list(self, a):
        if a.dtype in _CODES:
            return _contig(a).tolist()
        return Cpu.to_list(self, a)

    def from_bytes(self, buf, shape, dtype):
        code = _CODES.get(dtype)
        if code is None:
            return Cpu.from_bytes(self, buf, shape, dtype)
        out = array(code)
        out.frombytes(bytes(buf))
        if not _LITTLE:
            out.byteswap()
        return CpuArray(out, tuple(shape), dtype)

    def to_bytes(self, a):
        if a.dtype not in _CODES:
            return Cpu.to_bytes(self, a)
        buf = _contig(a)
        if not _LITTLE:
            buf = buf[:]
            buf.byteswap()
        return buf.tobytes()

    # movement
    def reshape(self, a, shape):
        if a.strides is None or a.dtype not in _CODES or not _small(a.shape):
            return _mv.reshape(a, shape)
        return CpuArray(_contig(a), shape, a.dtype)

    def slice_assign(self, a, ranges, value):
        code = _code(a.dtype)
        if code is None or not _small(a.shape):
            return _stored(_mv.slice_assign(a, ranges, value))
        out = _contig(a)
        if out is _held(a):  # C writes into out
            out = out[:]
        strides = strides_for(a.shape)
        offset = 0
        sizes, steps = [], []
        for (start, stop, step), s in zip(ranges, strides):
            sizes.append(len(range(start, stop, step)))
            steps.append(s * step)
            offset += start * s
        if numel(sizes):
            vbuf, vaddr, vst = _operand(value)
            sh, sh_addr = _q(sizes)
            st, st_addr = _q(vst)
            dst, dst_addr = _q(steps)
            _lib.emb_copy_nd(out.itemsize, len(sizes), sh_addr, vaddr, st_addr,
                             out.buffer_info()[0] + offset * out.itemsize, dst_addr)
        return _result(out, a.shape, a.dtype)

    def cat(self, arrays, dim):
        first = arrays[0]
        code = _code(first.dtype)
        if code is None or not _small(first.shape):
            return _stored(_mv.cat(arrays, dim))
        size = 0
        for x in arrays:
            size += x.shape[dim]
        shape = first.shape[:dim] + (size,) + first.shape[dim + 1:]
        out = _fresh(code, numel(shape))
        ost, ost_addr = _q(strides_for(shape))
        base = out.buffer_info()[0]
        at = 0
        for x in arrays:
            if numel(x.shape):
                xbuf, xaddr, xst = _operand(x)
                sh, sh_addr = _q(x.shape)
                st, st_addr = _q(xst)
                _lib.emb_copy_nd(out.itemsize, len(shape), sh_addr, xaddr, st_addr,
                                 base + at * ost[dim] * out.itemsize, ost_addr)
            at += x.shape[dim]
        return _result(out, shape, first.dtype)

    # elementwise
    def unary(self, op, a):
        code = _code(a.dtype)
        opc = _UNARY.get(op)
        if code is None or opc is None:
            return _stored(_ew.unary(op, a))
        x = _contig(a)
        n = len(x)
        to_bool = op in _TO_BOOL_UNARY
        out = _fresh("B" if to_bool else code, n)
        if _lib.emb_unary(opc, _DT[a.dtype], n, x.buffer_info()[0], out.buffer_info()[0], _threads()) < 0:
            return _stored(_ew.unary(op, a))
        return _result(out, a.shape, bool_ if to_bool else a.dtype)

    def binary(self, op, a, b):
        # the common case first, with as little Python as possible: two contiguous arrays
        if type(a) is CpuArray and type(b) is CpuArray:
            d = a.data
            e = b.data
            if a.strides is None and b.strides is None and type(d) is array and type(e) is array \
                    and op not in _COMPARE and a.dtype in _DT:
                n = len(d)
                out = _fresh(d.typecode, n)
                if _binary1(_BINARY[op], _DT[a.dtype], n, d.buffer_info()[0], 1, e.buffer_info()[0], 1,
                            out.buffer_info()[0]) == 0:
                    return CpuArray(out, a.shape, a.dtype)
        elif type(a) is CpuArray and type(b) is float:
            # a float tensor and a Python float (relu, x * 0.5, ...)
            d = a.data
            if a.strides is None and type(d) is array and d.typecode in "fd" and op not in _COMPARE:
                n = len(d)
                out = _fresh(d.typecode, n)
                e = _scalar(d.typecode, b)
                if _binary1(_BINARY[op], _DT[a.dtype], n, d.buffer_info()[0], 1, e.buffer_info()[0], 0,
                            out.buffer_info()[0]) == 0:
                    return CpuArray(out, a.shape, a.dtype)
        return self._binary(op, a, b)

    def _binary(self, op, a, b):
        t = a if type(a) is CpuArray else b
        dtype = t.dtype
        code = _code(dtype)
        opc = _BINARY.get(op)
        if code is None or opc is None or not _small(t.shape) or \
                (dtype is bool_ and op not in _COMPARE and op not in ("and", "or", "xor", "maximum", "minimum")):
            return _stored(_ew.binary(op, a, b))
        shape = t.shape
        n = numel(shape)
        compare = op in _COMPARE
        out = _fresh("B" if compare else code, n)
        keep = []
        ops = []
        for x in (a, b):
            if type(x) is CpuArray:
                buf, addr, st = _operand(x)
            else:
                if dtype.kind == "i" and not dtype.lo <= x <= dtype.hi:
                    if op not in _RING_OPS:
                        return _stored(_ew.binary(op, a, b))
                    x = dtypes.wrap_int([x], dtype)[0]  # these ops commute with the wrap
                buf = _scalar(code, x)
                addr, st = buf.buffer_info()[0], (0,) * len(shape)
            arr, st_addr = _q(st)
            keep.append((buf, arr))
            ops.append((addr, st_addr))
        sh, sh_addr = _q(shape)
        if _lib.emb_binary(opc, _DT[dtype], len(shape), sh_addr, ops[0][0], ops[0][1], ops[1][0], ops[1][1],
                           out.buffer_info()[0]) < 0:
            return _stored(_ew.binary(op, a, b))
        return _result(out, shape, bool_ if compare else dtype)

    def where(self, cond, a, b):
        code = _code(a.dtype)
        if code is None or not _small(a.shape):
            return _stored(_ew.where(cond, a, b))
        shape = a.shape
        out = _fresh(code, numel(shape))
        cbuf, caddr, cst = _operand(cond)
        abuf, aaddr, ast = _operand(a)
        bbuf, baddr, bst = _operand(b)
        sh, sh_addr = _q(shape)
        cs, cs_addr = _q(cst)
        as_, as_addr = _q(ast)
        bs, bs_addr = _q(bst)
        _lib.emb_where(out.itemsize, len(shape), sh_addr, caddr, cs_addr, aaddr, as_addr, baddr, bs_addr,
                       out.buffer_info()[0])
        return _result(out, shape, a.dtype)

    def cast(self, a, dtype):
        if a.dtype is dtype:
            return a
        src_code, dst_code = _code(a.dtype), _code(dtype)
        if src_code is None or dst_code is None:
            return _stored(_ew.cast(a, dtype))
        x = _contig(a)
        n = len(x)
        out = _fresh(dst_code, n)
        if _lib.emb_cast(_DT[a.dtype], _DT[dtype], n, x.buffer_info()[0], out.buffer_info()[0]) < 0:
            return _stored(_ew.cast(a, dtype))
        return _result(out, a.shape, dtype)

    # reductions
    def reduce(self, op, a, dim):
        code = _code(a.dtype)
        opc = _REDUCE.get(op)
        shape = a.shape
        n = shape[dim]
        if code is None or opc is None or (n == 0 and op not in ("sum", "prod", "any", "all")):
            return _stored(_reduce.reduce(op, a, dim))
        x = _contig(a)
        outer = numel(shape[:dim])
        inner = numel(shape[dim + 1:])
        out_shape = shape[:dim] + (1,) + shape[dim + 1:]
        if op in ("argmax", "argmin"):
            out_dtype = i64
        elif op in ("any", "all"):
            out_dtype = bool_
        elif a.dtype is bool_ and op in ("sum", "prod"):
            out_dtype = i64
        else:
            out_dtype = a.dtype
        out = _fresh(_code(out_dtype), (outer * inner))
        if _lib.emb_reduce(opc, _DT[a.dtype], outer, n, inner, x.buffer_info()[0], out.buffer_info()[0]) < 0:
            return _stored(_reduce.reduce(op, a, dim))
        return _result(out, out_shape, out_dtype)

    def scan(self, op, a, dim):
        return _stored(_reduce.scan(op, a, dim))

    def sort(self, a, dim, descending):
        vals, idx = _reduce.sort(a, dim, descending)
        return _stored(vals), _stored(idx)

    # linear algebra and nn
    def matmul(self, a, b):
        dtype = a.dtype
        if dtype not in _CODES or not _small(a.shape):
            return _stored(_linalg.matmul(a, b))
        batch = a.shape[:-2]
        m, k = a.shape[-2], a.shape[-1]
        n = b.shape[-1]
        abuf, aaddr, ast = _operand(a)
        bbuf, baddr, bst = _operand(b)
        nb = len(batch)
        bs, bs_addr = _q(batch)
        sa, sa_addr = _q(ast[:nb])
        sb, sb_addr = _q(bst[:nb])
        out = _fresh(_CODES[dtype], (numel(batch) * m * n))
        if _lib.emb_matmul(_DT[dtype], nb, bs_addr, sa_addr, sb_addr, m, n, k, aaddr, ast[nb], ast[nb + 1],
                           baddr, bst[nb], bst[nb + 1], out.buffer_info()[0], 0, _threads()) < 0:
            raise MemoryError("matmul: the C kernels could not allocate their workspace")
        return CpuArray(out, batch + (m, n), dtype)

    def conv(self, x, w, stride, padding, dilation, groups):
        dtype = x.dtype
        if dtype is not f32 and dtype is not f64:
            return _stored(_conv.conv(x, w, stride, padding, dilation, groups))
        params, out_shape = _conv_params(x.shape, w.shape[2:], stride, padding, dilation, groups, w.shape[0])
        xs, ws = _contig(x), _contig(w)
        out = _fresh(_CODES[dtype], numel(out_shape))
        if numel(out_shape):
            p, p_addr = _q(params)
            if _lib.emb_conv2d(_DT[dtype], p_addr, xs.buffer_info()[0], ws.buffer_info()[0], 0,
                               out.buffer_info()[0], _threads()) < 0:
                raise MemoryError("conv: the C kernels could not allocate their workspace")
        return CpuArray(out, out_shape, dtype)

    def pool(self, op, x, kernel, stride, padding, dilation):
        dtype = x.dtype
        if dtype is not f32 and dtype is not f64:
            return _stored(_conv.pool(op, x, kernel, stride, padding, dilation))
        params, out_shape = _conv_params(x.shape, kernel, stride, padding, dilation, 1, 0)
        xs = _contig(x)
        out = _fresh(_CODES[dtype], numel(out_shape))
        if numel(out_shape):
            p, p_addr = _q(params)
            _lib.emb_pool2d(_lib.EMB_P_MAX if op == "max" else _lib.EMB_P_AVG, _DT[dtype], p_addr,
                            xs.buffer_info()[0], out.buffer_info()[0], _threads())
        return CpuArray(out, out_shape, dtype)

    # indexing
    def gather(self, x, dim, index):
        code = _code(x.dtype)
        if code is None or not x.shape or not _small(x.shape):
            return _stored(_mv.gather(x, dim, index))
        idx = _contig(index)
        out = _fresh(code, len(idx))
        xbuf, xaddr, xst = _operand(x)
        ish, ish_addr = _q(index.shape)
        st, st_addr = _q(xst)
        bad = _lib.emb_gather(xbuf.itemsize, len(index.shape), ish_addr, idx.buffer_info()[0], xaddr, st_addr,
                              dim, x.shape[dim], out.buffer_info()[0])
        if bad >= 0:
            raise IndexOutOfRange("gather: index %d is out of range for dim %d of size %d"
                                  % (idx[bad], dim, x.shape[dim]))
        return _result(out, index.shape, x.dtype)

    def scatter(self, x, dim, index, src, mode):
        code = _code(x.dtype)
        if code is None or not x.shape or not _small(x.shape):
            return _stored(_mv.scatter(x, dim, index, src, mode))
        add = mode == "add"
        dtype = x.dtype
        if add and dtype is f32:
            # Python adds float32 values in double and rounds once: so does this, in a float64 copy
            wide = self.scatter(self.cast(x, f64), dim, index, self.cast(_contig_view(src), f64), mode)
            return self.cast(wide, f32)
        out = _contig(x)
        if out is _held(x):  # C writes into out: a copy, by C
            data = out
            out = _fresh(code, len(data))
            if len(data):
                one, one_addr = _q((len(data),))
                unit, unit_addr = _q((1,))
                _lib.emb_copy_nd(data.itemsize, 1, one_addr, data.buffer_info()[0], unit_addr,
                                 out.buffer_info()[0], unit_addr)
        idx = _contig(index)
        sbuf, saddr, sst = _operand(src)
        ish, ish_addr = _q(index.shape)
        ss, ss_addr = _q(sst)
        os_, os_addr = _q(strides_for(x.shape))
        bad = _lib.emb_scatter(_DT[dtype], 1 if add else 0, len(index.shape), ish_addr, idx.buffer_info()[0],
                               saddr, ss_addr, out.buffer_info()[0], os_addr, dim, x.shape[dim])
        if bad >= 0:
            raise IndexOutOfRange("scatter: index %d is out of range for dim %d of size %d"
                                  % (idx[bad], dim, x.shape[dim]))
        return _result(out, x.shape, dtype)

    # random draws (k_random.c): the pure Generator's stream, value for value
    def random(self, kind, shape, dtype, generator, params):
        n = numel(shape)
        code = _code(dtype)
        wide = code is None and dtype.kind == "f"  # float16, bfloat16: drawn in float64, rounded as the pure Cpu rounds
        if code is None and not wide:
            return Cpu.random(self, kind, shape, dtype, generator, params)
        out = _fresh("d" if wide else code, n)
        if not draw(kind, n, _DT[f64 if wide else dtype], generator, params, out.buffer_info()[0]):
            return Cpu.random(self, kind, shape, dtype, generator, params)
        if wide:
            return self.from_list(out.tolist(), shape, dtype)
        return _result(out, tuple(shape), dtype)

    # conv and pool gradients, reductions over several dims: not primitives; ember.nn.fused_c
    # serves the composites conv_input_grad, conv_weight_grad, pool_input_grad and reduce_dims with
    # them. Each returns None where no kernel serves (another dtype), and the composite body runs.
    def conv_input_grad(self, g, w, x_shape, stride, padding, dilation, groups):
        """The gradient of ``conv(x, w, ...)`` for ``x`` (an array of ``x_shape``) from the output's ``g``."""
        if w.dtype is not g.dtype:
            return None
        params = _conv_params(x_shape, w.shape[2:], stride, padding, dilation, groups, w.shape[0])
        return _conv_grad(_lib.emb_conv2d_grad_input, params, g, w, x_shape)

    def conv_weight_grad(self, x, g, w_shape, stride, padding, dilation, groups):
        """The gradient of ``conv(x, w, ...)`` for ``w`` (an array of ``w_shape``) from the output's ``g``."""
        if x.dtype is not g.dtype:
            return None
        params = _conv_params(x.shape, w_shape[2:], stride, padding, dilation, groups, w_shape[0])
        return _conv_grad(_lib.emb_conv2d_grad_weight, params, x, g, w_shape)

    def pool_input_grad(self, op, x, g, kernel, stride, padding, dilation):
        """The gradient of ``pool(op, x, ...)`` for ``x`` from the output's ``g``: for max, each
        window's gradient goes to its first max (or first nan), as the composite's argmax picks."""
        dtype = x.dtype
        if (dtype is not f32 and dtype is not f64) or g.dtype is not dtype:
            return None
        params, out_shape = _conv_params(x.shape, kernel, stride, padding, dilation, 1, 0)
        n = numel(x.shape)
        out = _fresh(_CODES[dtype], n)
        if n:
            xs, gs = _contig(x), _contig(g)
            p, p_addr = _q(params)
            if _lib.emb_pool2d_grad(_lib.EMB_P_MAX if op == "max" else _lib.EMB_P_AVG, _DT[dtype], p_addr,
                                    xs.buffer_info()[0], gs.buffer_info()[0], out.buffer_info()[0],
                                    _threads()) < 0:
                raise MemoryError("pool: the C kernels could not allocate their workspace")
        return CpuArray(out, x.shape, dtype)

    def reduce_dims(self, op, a, dims):
        """``reduce(op, a, d)`` for every d of ``dims`` in one pass (those dims kept with size 1),
        or None: sum, max and min of float32 and float64. Sums round once."""
        dtype = a.dtype
        if (dtype is not f32 and dtype is not f64) or op not in ("sum", "max", "min") or len(a.shape) > 16:
            return None
        shape = a.shape
        out_shape = tuple(1 if d in dims else s for d, s in enumerate(shape))
        if op != "sum" and not numel(shape):
            return None
        xs = _contig(a)
        out = _fresh(_CODES[dtype], numel(out_shape))
        sh, sh_addr = _q(shape)
        red, red_addr = _q([1 if d in dims else 0 for d in range(len(shape))])
        rc = _lib.emb_reduce_dims(_REDUCE[op], _DT[dtype], len(shape), sh_addr, red_addr, xs.buffer_info()[0],
                                  out.buffer_info()[0])
        if rc == -2:
            raise MemoryError("%s: the C kernels could not allocate their workspace" % op)
        if rc < 0:
            return None
        return CpuArray(out, out_shape, dtype)

_INT64_LO, _INT64_END = -(1 << 63), 1 << 63


def with_state(generator, call):
    """``call(state, spare)`` on C copies of ``generator``'s state (the addresses of its 4 uint32
    words and of {held, value} of its Box-Muller spare), written back when it returns 0: the one
    place where the stream crosses between the Python Generator and C."""
    st = generator.get_state()
    state = array("I", st[:4])
    spare = array("d", (1.0, st[4]) if len(st) > 4 else (0.0, 0.0))
    rc = call(state.buffer_info()[0], spare.buffer_info()[0])
    if rc == 0:
        generator.set_state(state.tolist() + ([spare[1]] if spare[0] else []))
    return rc


def draw(kind, n, dt, generator, params, out):
    """Draw ``n`` values of ``kind`` (``Backend.random``'s) into the buffer at address ``out`` of the
    kernels' dtype code ``dt``, advancing ``generator`` as ``generator.draw`` would. False (nothing
    drawn) where C has no kernel: another output type, a randint span beyond int64."""
    if kind == "uniform":
        lo, hi = params
        return with_state(generator, lambda s, sp: _lib.emb_random_uniform(dt, n, s, lo, hi, out)) == 0
    if kind == "normal":
        mean, std = params
        return with_state(generator, lambda s, sp: _lib.emb_random_normal(dt, n, s, sp, mean, std, out)) == 0
    if kind == "bernoulli":
        p = params[0]
        return with_state(generator, lambda s, sp: _lib.emb_random_bernoulli(dt, n, s, p, out)) == 0
    if kind == "randint":
        lo, hi = params
        if lo < _INT64_LO or hi > _INT64_END or hi - lo >= 1 << 64:
            return False
        return with_state(generator, lambda s, sp: _lib.emb_random_randint(dt, n, s, lo, hi - lo, out)) == 0
    return False


def _contig_view(a):
    return a if a.strides is None else CpuArray(_contig(a), a.shape, a.dtype)


def _conv_grad(kernel, params, a, b, shape):
    """A conv gradient of ``shape`` from ``kernel(dtype, params, a, b, out, threads)`` (float32 and
    float64; None for others); zeros where the conv's output is empty."""
    dtype = a.dtype
    if dtype is not f32 and dtype is not f64:
        return None
    block, out_shape = params
    n = numel(shape)
    out = _fresh(_CODES[dtype], n)
    if n and numel(out_shape):
        p, p_addr = _q(block)
        sa, sb = _contig(a), _contig(b)  # held while C reads them
        if kernel(_DT[dtype], p_addr, sa.buffer_info()[0], sb.buffer_info()[0], out.buffer_info()[0], _threads()) < 0:
            raise MemoryError("conv: the C kernels could not allocate their workspace")
    elif n:
        out = array(out.typecode, bytes(out.itemsize * n))
    return CpuArray(out, tuple(shape), dtype)


def _conv_params(shape, kernel, stride, padding, dilation, groups, out_channels):
    """The int64 parameter block of conv2d/pool2d (1-D runs as 2-D with H = 1), and the output shape."""
    if len(shape) == 3:
        n, c, h, w = shape[0], shape[1], 1, shape[2]
        kernel = (1,) + tuple(kernel)
        stride = (1,) + tuple(stride)
        padding = ((0, 0),) + tuple(padding)
        dilation = (1,) + tuple(dilation)
    else:
        n, c, h, w = shape
    kh, kw = kernel
    (pt, pb), (pl, pr) = padding
    oh = conv_out_size(h, kh, stride[0], (pt, pb), dilation[0])
    ow = conv_out_size(w, kw, stride[1], (pl, pr), dilation[1])
    params = (n, c, h, w, out_channels, kh, kw, stride[0], stride[1], pt, pb, pl, pr, dilation[0], dilation[1],
              groups, oh, ow)
    channels = out_channels if out_channels else c
    if len(shape) == 3:
        return params, (n, channels, ow)
    return params, (n, channels, oh, ow)

