"""``ember.Cpu()`` with C kernels: the pure Cpu device with its hot primitives run by ``ember._ckernels``.

It is the same device (``Cpu(kernels="c") == Cpu(kernels="python")``), so its arrays meet the pure
device's in one op, and it gives the same values (docs/architecture.md §1 and §8):

- **Storage.** The pure device's (storage.py): float32, float64, int8, int32 and int64 values in an
  ``array.array`` (typecodes ``f d b i q``), which C reads in place; bool, float16 and bfloat16 in
  lists. A list of another dtype this device meets (made by another backend) is converted at its
  boundary.
- **Fallback.** Where a primitive or dtype has no C kernel (float16, bfloat16, scan, sort, ...) the
  pure kernel runs; its result is already stored as this device stores it.
- **Composites.** softmax, log_softmax, layer_norm, gelu, linear and relu have fused float32 paths,
  registered for this class only (``ember.Cpu(kernels="python")`` keeps the composites); overrides a
  user registers on ``ember.Cpu`` still win over them.

This module imports on MicroPython too (the test runner imports every module); there the kernels are
absent and nothing here runs.
"""
import sys
from array import array

from ... import dtypes
from ...errors import IndexOutOfRange
from ...shapes import conv_out_size
from . import ckernels as _ck
from . import conv as _conv
from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from .array import CpuArray, numel, strides_for
from .device import Cpu

_lib, _ffi = _ck.native()
_settings = _ck._state  # "threads" is read on every large call
_LITTLE = sys.byteorder == "little"

f32, f64, i8, i32, i64, bool_ = (dtypes.float32, dtypes.float64, dtypes.int8, dtypes.int32,
                                 dtypes.int64, dtypes.bool_)


def _int32_code():
    for code in ("i", "l"):
        if array(code).itemsize == 4:
            return code
    return None


# dtype -> array typecode for the dtypes stored in arrays (bool travels to C as typecode "B" bytes)
_CODES = {}
_ZEROS = {}
_MAXDIM = 16

if _lib is not None:  # CPython with the kernels built (MicroPython's array has no itemsize)
    _CODES = {f32: "f", f64: "d", i8: "b", i64: "q"}
    if _int32_code():
        _CODES[i32] = _int32_code()
    for _c in ("f", "d", "b", "i", "l", "q", "B"):
        _ZEROS[_c] = array(_c, [0])
    _DT = {f32: _lib.EMB_F32, f64: _lib.EMB_F64, i8: _lib.EMB_I8, i32: _lib.EMB_I32, i64: _lib.EMB_I64,
           bool_: _lib.EMB_U8}
    _UNARY = {}
    for _name in ("neg", "abs", "sign", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos",
                  "atan", "sinh", "cosh", "tanh", "erf", "sigmoid", "expm1", "log1p", "floor", "ceil",
                  "round", "trunc", "reciprocal", "bitwise_not", "isnan", "isinf", "logical_not"):
        _UNARY[_name] = getattr(_lib, "EMB_U_" + _name.upper())
    _BINARY = {}
    for _name in ("add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv", "mod", "atan2",
                  "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor", "lshift", "rshift"):
        _BINARY[_name] = getattr(_lib, "EMB_B_" + _name.upper())
    _REDUCE = {}
    for _name in ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all"):
        _REDUCE[_name] = getattr(_lib, "EMB_R_" + _name.upper())
    _binary1 = _lib.emb_binary1
    _matmul = _lib.emb_matmul
    _F32 = _lib.EMB_F32
_COMPARE = ("eq", "ne", "lt", "le", "gt", "ge")
_TO_BOOL_UNARY = ("isnan", "isinf", "logical_not")
_RING_OPS = ("add", "sub", "mul", "and", "or", "xor")


# -- buffers ------------------------------------------------------------------------------------

def _code(dtype):
    """The array typecode C works on for ``dtype`` ("B" for bool), or None."""
    if dtype is bool_:
        return "B"
    return _CODES.get(dtype)


def _native(a):
    """``a.data`` as an array C can read: shared when it already is one, else converted."""
    d = a.data
    if type(d) is array:
        return d
    if a.dtype is bool_:
        return array("B", bytes(d))
    return array(_CODES[a.dtype], d)


def _operand(a):
    """(buffer, address of a's first element, strides) for a strided read of ``a``."""
    buf = _native(a)
    if a.strides is None:
        return buf, buf.buffer_info()[0], strides_for(a.shape)
    return buf, buf.buffer_info()[0] + a.offset * buf.itemsize, a.strides


def _q(values):
    """(array('q'), address): the caller keeps the array while C reads the address."""
    arr = array("q", values)
    return arr, arr.buffer_info()[0]


def _contig(a):
    """``a``'s values row-major, as an array (``a.data`` itself when already contiguous)."""
    if a.strides is None:
        return _native(a)
    buf, addr, strides = _operand(a)
    shape = a.shape
    n = numel(shape)
    out = _fresh(buf.typecode, n)
    if n:
        sh, sh_addr = _q(shape)
        st, st_addr = _q(strides)
        dst, dst_addr = _q(strides_for(shape))
        _lib.emb_copy_nd(buf.itemsize, len(shape), sh_addr, addr, st_addr, out.buffer_info()[0], dst_addr)
    return out


def _result(out, shape, dtype):
    """A CpuArray for C's output buffer (bytes become a list of bools, as bool arrays are stored)."""
    if dtype is bool_:
        return CpuArray(list(map(bool, out)), shape, bool_)
    return CpuArray(out, shape, dtype)


def _stored(a):
    """A pure kernel's result in this device's storage (pure results already are, a list from elsewhere is not)."""
    code = _CODES.get(a.dtype)
    if code is not None and type(a.data) is list:
        return CpuArray(array(code, a.data), a.shape, a.dtype, a.strides, a.offset)
    return a


def _threads():
    return _settings.get("threads", 1)


# Output buffers. Making an array of n elements writes all of them (array * n), a pass as costly as
# a cheap kernel. For large outputs this device keeps a few arrays per size and hands one out again
# once nothing but the pool refers to it (its reference count says so), as PyTorch's allocator reuses
# freed blocks. Every caller overwrites the whole buffer. Off where reference counts cannot be
# trusted for this (no sys.getrefcount, a free-threaded build, or the self-check below failing) and
# with EMBER_C_POOL=0.
_POOL_MIN = 1 << 15  # elements
_POOL_PER_SIZE = 8
_POOL_BYTES = 64 << 20
_pool = {}
_pool_state = {"bytes": 0, "base": None}


def _take(free, base):
    for arr in free:
        if sys.getrefcount(arr) == base:
            return arr
    return None


def _pool_calibrate():
    if not hasattr(sys, "getrefcount") or _ck._env("EMBER_C_POOL") == "0":
        return None
    gil = getattr(sys, "_is_gil_enabled", None)
    if gil is not None and not gil():
        return None
    free = [array("B", b"\0")]
    for base in range(1, 8):
        if _take(free, base) is not None:
            extra = free[0]
            held = _take(free, base)
            del extra
            if held is None and _take(free, base) is free[0]:
                return base
            return None
    return None


def _fresh(code, n):
    """An array of n elements whose contents the caller overwrites completely."""
    if n < _POOL_MIN or _pool_state["base"] is None:
        return _ZEROS[code] * n
    key = (code, n)
    free = _pool.get(key)
    if free is not None:
        arr = _take(free, _pool_state["base"])
        if arr is not None:
            return arr
    arr = _ZEROS[code] * n
    size = n * arr.itemsize
    if _pool_state["bytes"] + size <= _POOL_BYTES and (free is None or len(free) < _POOL_PER_SIZE):
        if free is None:
            free = _pool[key] = []
        free.append(arr)
        _pool_state["bytes"] += size
    return arr


def release_buffers():
    """Drop the output arrays this device keeps for reuse (they are freed once unused)."""
    _pool.clear()
    _pool_state["bytes"] = 0


def _small(shape):
    return len(shape) <= _MAXDIM


class CpuC(Cpu):
    """The Cpu device with C kernels (see the module doc). ``ember.Cpu()`` returns one when
    ``ember._ckernels`` loads; it equals every other Cpu device."""

    kernels = "c"

    @classmethod
    def override(cls, name, fn, *args, **kwargs):
        # the fused C paths are this class's defaults, not overrides: report only a user's
        from ...backend import Backend
        from ...composite import OVERRIDES
        table = OVERRIDES.get(cls)
        previous = dict.get(table, name) if table is not None else None
        Backend.override.__func__(cls, name, fn, *args, **kwargs)
        return previous

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
        if out is a.data:
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
                    and op not in _COMPARE:
                n = len(d)
                out = _ZEROS[d.typecode] * n if n < _POOL_MIN else _fresh(d.typecode, n)
                if _binary1(_BINARY[op], _DT[a.dtype], n, d.buffer_info()[0], 1, e.buffer_info()[0], 1,
                            out.buffer_info()[0]) == 0:
                    return CpuArray(out, a.shape, a.dtype)
        elif type(a) is CpuArray and type(b) is float:
            # a float tensor and a Python float (relu, x * 0.5, ...)
            d = a.data
            if a.strides is None and type(d) is array and d.typecode in "fd" and op not in _COMPARE:
                n = len(d)
                out = _ZEROS[d.typecode] * n if n < _POOL_MIN else _fresh(d.typecode, n)
                e = array(d.typecode, (b,))
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
                buf = array(code, [x])
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
        if out is x.data:
            out = out[:]
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


def _contig_view(a):
    return a if a.strides is None else CpuArray(_contig(a), a.shape, a.dtype)


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


# -- fused composites ------------------------------------------------------------------------------
# Each takes the composite's arguments and handles the common float32 case in one C call; anything
# else (another dtype or device, an unusual argument, an error to report) goes to the composite.

_TENSOR = []  # [ember.Tensor], imported on first use (tensor.py imports this package)


def _tensor_class():
    if not _TENSOR:
        from ...tensor import Tensor
        _TENSOR.append(Tensor)
    return _TENSOR[0]


def _composite(name):
    from ...composite import COMPOSITES
    return COMPOSITES[name]


def _f32(t, Tensor):
    return type(t) is Tensor and t.dtype is f32 and type(t.device) is CpuC


def _new(out, shape, device, Tensor):
    return Tensor(CpuArray(out, shape, f32), shape, f32, device)


def _gelu(x, approximate="none"):
    Tensor = _tensor_class()
    if _f32(x, Tensor) and (approximate == "none" or approximate == "tanh"):
        xs = _contig(x._data)
        n = len(xs)
        out = _fresh("f", n)
        _lib.emb_gelu_f32(_lib.EMB_GELU_TANH if approximate == "tanh" else _lib.EMB_GELU_ERF, n,
                          xs.buffer_info()[0], out.buffer_info()[0], _threads())
        return _new(out, x.shape, x.device, Tensor)
    return _composite("gelu")(x, approximate)


def _softmax_fast(log, x, dim):
    Tensor = _tensor_class()
    if not _f32(x, Tensor) or type(dim) is not int or not x.shape:
        return None
    nd = len(x.shape)
    if dim != -1 and dim != nd - 1:
        return None
    n = x.shape[-1]
    xs = _contig(x._data)
    if not n or not len(xs):
        return None
    out = _fresh("f", len(xs))
    _lib.emb_softmax_f32(len(xs) // n, n, xs.buffer_info()[0], out.buffer_info()[0], 1 if log else 0,
                         _threads())
    return _new(out, x.shape, x.device, Tensor)


def _softmax(x, dim=-1):
    out = _softmax_fast(False, x, dim)
    return out if out is not None else _composite("softmax")(x, dim)


def _log_softmax(x, dim=-1):
    out = _softmax_fast(True, x, dim)
    return out if out is not None else _composite("log_softmax")(x, dim)


def _layer_norm_fast(x, normalized_shape, weight, bias, eps):
    Tensor = _tensor_class()
    if not _f32(x, Tensor) or type(eps) not in (int, float):
        return None
    ns = (normalized_shape,) if type(normalized_shape) is int else normalized_shape
    if type(ns) not in (tuple, list) or not ns or len(ns) > len(x.shape):
        return None
    ns = tuple(ns)
    if x.shape[len(x.shape) - len(ns):] != ns:
        return None
    for p in (weight, bias):
        if p is not None and (not _f32(p, Tensor) or p.shape != ns):
            return None
    n = numel(ns)
    xs = _contig(x._data)
    if not n or not len(xs):
        return None
    ws = _contig(weight._data) if weight is not None else None
    bs = _contig(bias._data) if bias is not None else None
    out = _fresh("f", len(xs))
    _lib.emb_layer_norm_f32(len(xs) // n, n, xs.buffer_info()[0], ws.buffer_info()[0] if ws is not None else 0,
                            bs.buffer_info()[0] if bs is not None else 0, float(eps), out.buffer_info()[0],
                            _threads())
    return _new(out, x.shape, x.device, Tensor)


def _layer_norm(x, normalized_shape, weight=None, bias=None, eps=1e-5):
    out = _layer_norm_fast(x, normalized_shape, weight, bias, eps)
    return out if out is not None else _composite("layer_norm")(x, normalized_shape, weight, bias, eps)


def _linear(x, weight, bias=None):
    Tensor = _tensor_class()
    if type(x) is Tensor and type(weight) is Tensor and x.dtype is f32 and weight.dtype is f32 \
            and type(x.device) is CpuC and len(weight.shape) == 2 and x.shape:
        outf, inf = weight.shape
        wd = weight._data
        if x.shape[-1] == inf and (bias is None or _f32(bias, Tensor) and bias.shape == (outf,)) \
                and type(weight.device) is CpuC and type(wd.data) is array:
            xs = _contig(x._data)
            rows = len(xs) // inf if inf else numel(x.shape[:-1])
            out = _fresh("f", (rows * outf))
            if rows and outf:
                if wd.strides is None:
                    waddr, ws0, ws1 = wd.data.buffer_info()[0], inf, 1
                else:
                    waddr = wd.data.buffer_info()[0] + 4 * wd.offset
                    ws0, ws1 = wd.strides
                accumulate = 0
                if bias is not None:
                    bs = _contig(bias._data)
                    _lib.emb_bias_rows_f32(rows, outf, bs.buffer_info()[0], out.buffer_info()[0])
                    accumulate = 1
                _matmul(_F32, 0, 0, 0, 0, rows, outf, inf, xs.buffer_info()[0], inf, 1, waddr, ws1, ws0,
                        out.buffer_info()[0], accumulate, _threads())
            shape = x.shape[:-1] + (outf,)
            return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)
    return _composite("linear")(x, weight, bias)


def _relu(x):
    Tensor = _tensor_class()
    if type(x) is Tensor and type(x.device) is CpuC and x.dtype.kind == "f":
        return Tensor(x.device.binary("maximum", x._data, 0.0), x.shape, x.dtype, x.device)
    return _composite("relu")(x)


def _pair(v):
    if type(v) is int:
        return (v, v)
    if type(v) is tuple and len(v) == 2 and type(v[0]) is int and type(v[1]) is int:
        return v
    return None


def _conv2d_fast(x, weight, bias, stride, padding, dilation, groups):
    Tensor = _tensor_class()
    if not (_f32(x, Tensor) and _f32(weight, Tensor) and len(x.shape) == 4 and len(weight.shape) == 4
            and type(groups) is int and groups >= 1):
        return None
    n, c, h, w = x.shape
    o, cg, kh, kw = weight.shape
    st, pad, dil = _pair(stride), _pair(padding), _pair(dilation)
    if st is None or pad is None or dil is None or min(st + dil) < 1 or min(pad) < 0:
        return None
    if c % groups or o % groups or cg * groups != c:
        return None
    if bias is not None and (not _f32(bias, Tensor) or bias.shape != (o,)):
        return None
    oh = conv_out_size(h, kh, st[0], (pad[0], pad[0]), dil[0])
    ow = conv_out_size(w, kw, st[1], (pad[1], pad[1]), dil[1])
    if oh < 1 or ow < 1 or n == 0 or o == 0:
        return None
    xs, ws = _contig(x._data), _contig(weight._data)
    bs = _contig(bias._data) if bias is not None else None
    out = _fresh("f", (n * o * oh * ow))
    prm, prm_addr = _q((n, c, h, w, o, kh, kw, st[0], st[1], pad[0], pad[0], pad[1], pad[1], dil[0], dil[1],
                        groups, oh, ow))
    if _lib.emb_conv2d(_F32, prm_addr, xs.buffer_info()[0], ws.buffer_info()[0],
                       bs.buffer_info()[0] if bs is not None else 0, out.buffer_info()[0], _threads()) < 0:
        raise MemoryError("conv2d: the C kernels could not allocate their workspace")
    shape = (n, o, oh, ow)
    return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)


def _conv2d(x, weight, bias=None, stride=1, padding=0, dilation=1, groups=1):
    out = _conv2d_fast(x, weight, bias, stride, padding, dilation, groups)
    return out if out is not None else _composite("conv2d")(x, weight, bias, stride, padding, dilation, groups)


def _pool2d_fast(op, x, kernel_size, stride, padding, dilation):
    Tensor = _tensor_class()
    if not _f32(x, Tensor) or len(x.shape) != 4:
        return None
    k, pad, dil = _pair(kernel_size), _pair(padding), _pair(dilation)
    st = k if stride is None else _pair(stride)
    if k is None or st is None or pad is None or dil is None or min(k + st + dil) < 1:
        return None
    if pad[0] < 0 or pad[1] < 0 or pad[0] > k[0] // 2 or pad[1] > k[1] // 2:
        return None
    n, c, h, w = x.shape
    oh = conv_out_size(h, k[0], st[0], (pad[0], pad[0]), dil[0])
    ow = conv_out_size(w, k[1], st[1], (pad[1], pad[1]), dil[1])
    if oh < 1 or ow < 1:
        return None
    xs = _contig(x._data)
    out = _fresh("f", (n * c * oh * ow))
    if len(out):
        prm, prm_addr = _q((n, c, h, w, 0, k[0], k[1], st[0], st[1], pad[0], pad[0], pad[1], pad[1], dil[0],
                            dil[1], 1, oh, ow))
        _lib.emb_pool2d(op, _F32, prm_addr, xs.buffer_info()[0], out.buffer_info()[0], _threads())
    shape = (n, c, oh, ow)
    return Tensor(CpuArray(out, shape, f32), shape, f32, x.device)


def _max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1):
    out = _pool2d_fast(_lib.EMB_P_MAX, x, kernel_size, stride, padding, dilation)
    return out if out is not None else _composite("max_pool2d")(x, kernel_size, stride, padding, dilation)


def _avg_pool2d(x, kernel_size, stride=None, padding=0):
    out = _pool2d_fast(_lib.EMB_P_AVG, x, kernel_size, stride, padding, 1)
    return out if out is not None else _composite("avg_pool2d")(x, kernel_size, stride, padding)


FAST_COMPOSITES = {
    "gelu": _gelu, "softmax": _softmax, "log_softmax": _log_softmax, "layer_norm": _layer_norm,
    "linear": _linear, "relu": _relu, "conv2d": _conv2d, "max_pool2d": _max_pool2d, "avg_pool2d": _avg_pool2d,
}


class _Layered(dict):
    """CpuC's table in OVERRIDES (or OVERRIDE_BACKWARDS): its own entries first, then those users
    register on ``ember.Cpu`` (so ``ember.Cpu.override`` reaches every Cpu device), then the fused C
    paths. It never looks empty, so Backend.override does not drop it."""

    def __init__(self, registry, fast):
        dict.__init__(self)
        self.registry = registry
        self.fast = fast

    def get(self, name, default=None):
        if dict.__len__(self):
            fn = dict.get(self, name)
            if fn is not None:
                return fn
        user = self.registry.get(Cpu)
        if user is not None:
            fn = user.get(name)
            if fn is not None:
                return fn
        return self.fast.get(name, default)

    def __len__(self):
        return 1


def _register():
    from ... import composite
    composite.OVERRIDES[CpuC] = _Layered(composite.OVERRIDES, FAST_COMPOSITES)
    backwards = getattr(composite, "OVERRIDE_BACKWARDS", None)
    if backwards is not None:
        backwards[CpuC] = _Layered(backwards, {})


if _lib is not None:
    _pool_state["base"] = _pool_calibrate()
    _register()
