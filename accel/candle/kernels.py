"""The primitives the binding runs itself, each falling back to the host road (host.py) for the
dtypes and cases where candle's result would differ from ember's.

Every function takes and returns ``CandleArray``s. The rules for leaving candle: an empty array
(candle refuses zero-size broadcasts, narrows and reductions); integer ops that must wrap to int8 or
int32 (stored in i64); anything candle lacks or computes otherwise (see docs/candle.md).
"""
import candle
from ember import dtypes
from ember.accel.numpy.arrays import from_values

from .exchange import STORE, CandleArray, upload
from .host import host

FLOATS = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)
HALVES = (dtypes.float16, dtypes.bfloat16)
BOOL = dtypes.bool_
I64 = dtypes.int64
F32 = dtypes.float32
F64 = dtypes.float64

_host = {name: host(name) for name in ("reshape", "expand", "slice", "cat", "unary", "binary", "where",
                                       "cast", "reduce", "matmul", "gather", "conv", "pool")}


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def empty(*xs):
    """Whether any of the arrays has no element (candle refuses most ops on those)."""
    for x in xs:
        if type(x) is CandleArray and 0 in x.t.shape:
            return True
    return False


_scalars = {}


def scalar(value, dtype, shape):
    """``value`` (already of ``dtype``) as a candle tensor of ``shape`` (a stride-0 view of one
    uploaded element; the element is kept, so a repeated scalar uploads once)."""
    key = (dtype.name, type(value), value, str(value))  # str: 0.0 and -0.0 apart
    t = _scalars.get(key)
    if t is None:
        if len(_scalars) > 1024:
            _scalars.clear()
        t = upload(from_values([value], dtype).reshape(()), dtype).t
        _scalars[key] = t
    return t.broadcast_as(tuple(shape)) if shape else t


# ---- movement -------------------------------------------------------------------------------

def reshape(x, shape):
    """The primitive ``reshape``: candle's (a strided view is copied)."""
    if empty(x) or numel(shape) == 0:
        return _host["reshape"](x, shape)
    return CandleArray(x.t.reshape(tuple(shape)), x.dtype)


def permute(x, dims):
    """The primitive ``permute``: a chain of ``transpose`` views."""
    # the binding has transpose only: a permutation is at most rank - 1 swaps
    t, order = x.t, list(range(len(dims)))
    for i, d in enumerate(dims):
        j = order.index(d)
        if j != i:
            t = t.transpose(i, j)
            order[i], order[j] = order[j], order[i]
    return CandleArray(t, x.dtype)


def expand(x, shape):
    """The primitive ``expand``: candle's ``broadcast_as`` (a stride-0 view)."""
    if empty(x) or numel(shape) == 0:
        return _host["expand"](x, shape)
    return CandleArray(x.t.broadcast_as(tuple(shape)), x.dtype)


def slice_(x, ranges):
    """The primitive ``slice``: ``narrow`` per step-1 range, ``index_select`` of the positions otherwise."""
    out = [len(range(*r)) for r in ranges]
    if empty(x) or 0 in out:
        return _host["slice"](x, ranges)
    t = x.t
    for dim, (start, stop, step) in enumerate(ranges):
        if step == 1:
            if start != 0 or stop != t.shape[dim]:
                t = t.narrow(dim, start, stop - start)
        else:  # a stepped or reversed range: index_select with the positions
            idx = from_values(list(range(start, stop, step)), I64)
            t = t.contiguous().index_select(upload(idx, I64).t, dim)
    return CandleArray(t, x.dtype)


def cat(xs, dim):
    """The primitive ``cat``: ``candle.cat`` of the non-empty parts."""
    full = [x for x in xs if not empty(x)]
    if not full:
        return _host["cat"](xs, dim)
    if len(full) == 1:
        return full[0]
    return CandleArray(candle.cat([x.t for x in full], dim), xs[0].dtype)


# ---- elementwise ----------------------------------------------------------------------------

def _tanh(t):
    return candle.functional.tanh(t)


_UNARY_FLOAT = {
    "abs": candle.Tensor.abs, "exp": candle.Tensor.exp, "log": candle.Tensor.log,
    "sqrt": candle.Tensor.sqrt, "sin": candle.Tensor.sin, "cos": candle.Tensor.cos,
    "tanh": _tanh, "reciprocal": candle.Tensor.recip,
}


def _sigmoid(t):
    return ((t * -1.0).exp() + 1.0).recip()


def _rsqrt(t):
    return t.sqrt().recip()


# what the NumPy device computes in float64 and rounds once, here the same way
_UNARY_F64 = {"sigmoid": _sigmoid, "rsqrt": _rsqrt}


def unary(op, x):
    """The primitive ``unary``: candle's function where it gives ember's values, else the host's."""
    dtype = x.dtype
    if empty(x):
        return _host["unary"](op, x)
    t = x.t
    if dtype in FLOATS:
        f = _UNARY_FLOAT.get(op)
        if f is not None:
            return CandleArray(f(t), dtype)
        if op in _UNARY_F64 and dtype in (F32, F64):  # one double-precision function, rounded once
            return CandleArray(_UNARY_F64[op](t.to_dtype(candle.f64)).to_dtype(t.dtype), dtype)
        if op == "neg":  # a multiply by -1, so that 0 gives -0
            return CandleArray(t * scalar(-1.0, dtype, t.shape), dtype)
        if op == "isnan":
            return CandleArray(t != t, BOOL)
    if dtype is BOOL and op == "logical_not":
        return CandleArray(t == scalar(False, BOOL, t.shape), BOOL)
    return _host["unary"](op, x)


_COMPARE = {"eq": candle.Tensor.__eq__, "ne": candle.Tensor.__ne__, "lt": candle.Tensor.__lt__,
            "le": candle.Tensor.__le__, "gt": candle.Tensor.__gt__, "ge": candle.Tensor.__ge__}
_ARITH = {"add": candle.Tensor.__add__, "sub": candle.Tensor.__sub__, "mul": candle.Tensor.__mul__,
          "div": candle.Tensor.__truediv__}
# the arithmetic candle does as ember does, by storage dtype (i64 and u8 wrap as two's complement)
_ARITH_DTYPES = {"add": FLOATS + (I64, dtypes.uint8), "sub": FLOATS + (I64, dtypes.uint8),
                 "mul": FLOATS + (I64, dtypes.uint8), "div": FLOATS}


def binary(op, a, b):
    """The primitive ``binary``: arrays of one shape and dtype, or one side a Python scalar of it."""
    arr = a if type(a) is CandleArray else b
    dtype = arr.dtype
    if empty(arr):
        return _host["binary"](op, a, b)
    shape = arr.t.shape
    ta = a.t if type(a) is CandleArray else scalar(a, dtype, shape)
    tb = b.t if type(b) is CandleArray else scalar(b, dtype, shape)
    f = _COMPARE.get(op)
    if f is not None:
        return CandleArray(f(ta, tb), BOOL)
    f = _ARITH.get(op)
    if f is not None and dtype in _ARITH_DTYPES[op]:
        return CandleArray(f(ta, tb), dtype)
    if op in ("maximum", "minimum"):
        return CandleArray(_extreme(op, ta, tb, dtype in FLOATS), dtype)
    if dtype is BOOL:
        if op == "and":
            return CandleArray(ta * tb, BOOL)
        if op == "xor":
            return CandleArray(ta != tb, BOOL)
        if op == "or":
            return CandleArray((ta + tb) != scalar(False, BOOL, shape), BOOL)
    return _host["binary"](op, a, b)


def _extreme(op, ta, tb, floats):
    r = (ta >= tb if op == "maximum" else ta <= tb).where_cond(ta, tb)
    if floats:  # a NaN on either side wins, as numpy's maximum and minimum give
        r = (tb != tb).where_cond(tb, r)
        r = (ta != ta).where_cond(ta, r)
    return r


def where(cond, a, b):
    """The primitive ``where``: candle's ``where_cond`` on the u8 condition."""
    if empty(cond):
        return _host["where"](cond, a, b)
    return CandleArray(cond.t.where_cond(a.t, b.t), a.dtype)


# casts candle makes exactly as ember does: (from, to) by ember dtype. None from or to float16 and
# bfloat16: candle's conversions quiet a signalling NaN (0x7C40 comes back 0x7E40), ember's keep its bits
_CASTS = {(F32, F64), (F64, F32)}
for _f in (dtypes.int64, dtypes.int32, dtypes.int8, dtypes.uint8, BOOL):
    _CASTS.add((_f, F32))
    _CASTS.add((_f, F64))
    _CASTS.add((_f, dtypes.int64))
for _f in (dtypes.int8, dtypes.uint8, BOOL):
    _CASTS.add((_f, dtypes.int32))
_CASTS |= {(BOOL, dtypes.int8), (BOOL, dtypes.uint8)}


def cast(x, dtype):
    """The primitive ``cast``: candle's ``to_dtype`` where it converts as ember does, else the host's."""
    src = x.dtype
    if src is dtype:
        return CandleArray(x.t, dtype)
    if empty(x):
        return _host["cast"](x, dtype)
    if dtype is BOOL:  # != 0: nan is True, as in every ember backend
        return CandleArray(x.t != scalar(False if src is BOOL else 0, src, x.t.shape), BOOL)
    if (src, dtype) in _CASTS:
        return CandleArray(x.t.to_dtype(STORE[dtype][0]), dtype)
    return _host["cast"](x, dtype)


# ---- reductions, matmul, gather -------------------------------------------------------------

def _nan_fill(t, r, dim, dtype):
    # candle's max/min skip NaN; ember's propagate it
    has_nan = (t != t).max_keepdim(dim)
    return has_nan.where_cond(scalar(float("nan"), dtype, r.shape), r)


def reduce(op, x, dim):
    """The primitive ``reduce`` over ``dim`` (kept with size 1): sums (floats accumulated in f64),
    NaN-aware max/min and their first index, any/all of bools in candle; prod and the sums that
    must wrap on the host."""
    dtype = x.dtype
    if empty(x):
        return _host["reduce"](op, x, dim)
    t = x.t
    if op == "sum":
        if dtype is F64 or dtype is I64:
            return CandleArray(t.sum_keepdim(dim), dtype)
        if dtype is F32:  # accumulate in f64, round once
            return CandleArray(t.to_dtype(candle.f64).sum_keepdim(dim).to_dtype(candle.f32), dtype)
        if dtype in HALVES:
            r = t.to_dtype(candle.f64).sum_keepdim(dim).to_dtype(candle.f32)
            return CandleArray(r.to_dtype(t.dtype), dtype)
    if op in ("max", "min"):
        r = t.max_keepdim(dim) if op == "max" else t.min_keepdim(dim)
        if dtype in FLOATS:
            r = _nan_fill(t, r, dim, dtype)
        return CandleArray(r, dtype)
    if op in ("argmax", "argmin"):
        return CandleArray(_arg_extreme(op, t, dim, dtype), I64)
    if dtype is BOOL and op in ("any", "all"):
        return CandleArray(t.max_keepdim(dim) if op == "any" else t.min_keepdim(dim), BOOL)
    return _host["reduce"](op, x, dim)


def _arg_extreme(op, t, dim, dtype):
    # the first index holding the (NaN-aware) extreme: candle's argmax skips NaN and returns u32
    r = t.max_keepdim(dim) if op == "argmax" else t.min_keepdim(dim)
    if dtype in FLOATS:
        r = _nan_fill(t, r, dim, dtype)
    r = r.broadcast_as(t.shape)
    hit = t == r
    if dtype in FLOATS:
        hit = (t != t).where_cond(r != r, hit)
    n = t.shape[dim]
    pos = [1] * len(t.shape)
    pos[dim] = n
    idx = upload(from_values(list(range(n)), I64).reshape(tuple(pos)), I64).t.broadcast_as(t.shape)
    return hit.where_cond(idx, scalar(n, I64, t.shape)).min_keepdim(dim)


def matmul(a, b):
    """The primitive ``matmul``: candle's gemm on floats (halves in f32), the host's on ints."""
    dtype = a.dtype
    if dtype not in FLOATS or empty(a, b):
        return _host["matmul"](a, b)
    ta, tb = a.t.contiguous(), b.t.contiguous()
    shape = ta.shape[:-1] + tb.shape[-1:]
    if len(shape) > 3:  # one batch dim: candle misreads the strides of size-1 batch dims
        ta = ta.reshape((numel(ta.shape[:-2]),) + ta.shape[-2:])
        tb = tb.reshape((numel(tb.shape[:-2]),) + tb.shape[-2:])
    if dtype in HALVES:  # accumulate in f32, round once
        r = ta.to_dtype(candle.f32).matmul(tb.to_dtype(candle.f32)).to_dtype(ta.dtype)
    else:
        r = ta.matmul(tb)
    return CandleArray(r.reshape(shape), dtype)


def gather(x, dim, index):
    """The primitive ``gather``: candle's; an index out of range is the NumPy kernel's error."""
    if empty(x, index):
        return _host["gather"](x, dim, index)
    t = x.t
    for d, (n, m) in enumerate(zip(t.shape, index.t.shape)):
        if d != dim and m != n:  # candle wants equal sizes off dim; only the first m are read
            t = t.narrow(d, 0, m)
    try:
        return CandleArray(t.contiguous().gather(index.t.contiguous(), dim), x.dtype)
    except ValueError as e:
        if "InvalidIndex" not in str(e):
            raise
    return _host["gather"](x, dim, index)  # the NumPy kernel raises IndexOutOfRange naming the index


def _take(t, dim, start, step, count):
    # positions start, start + step, ... (count of them) along dim
    if step == 1:
        return t.narrow(dim, start, count)
    idx = from_values(list(range(start, start + step * count, step)), I64)
    return t.contiguous().index_select(upload(idx, I64).t, dim)


def _pad(t, dim, before, after, dtype, value=0.0):
    parts = []
    for n in (before, after):
        shape = list(t.shape)
        shape[dim] = n
        parts.append(scalar(value, dtype, tuple(shape)).contiguous() if n else None)
    if parts[0] is None and parts[1] is None:
        return t
    return candle.cat([p for p in (parts[0], t, parts[1]) if p is not None], dim)


def conv(x, w, stride, padding, dilation, groups):
    """The primitive ``conv`` on floats, composed in candle (the binding has no convolution):
    zero padding by ``cat``, one strided view per kernel tap (im2col), one batched matmul; halves
    compute in f32 and round once. Integer dtypes take the host road."""
    dtype = x.dtype
    if dtype not in FLOATS or empty(x, w):
        return _host["conv"](x, w, stride, padding, dilation, groups)
    one_d = len(stride) == 1
    t, k = x.t, w.t
    if one_d:  # a 1-D conv is a 2-D one of height 1
        t, k = t.unsqueeze(2), k.unsqueeze(2)
        stride, padding, dilation = (1,) + tuple(stride), ((0, 0),) + tuple(padding), (1,) + tuple(dilation)
    work = F32 if dtype in HALVES else dtype
    if work is not dtype:
        t, k = t.to_dtype(candle.f32), k.to_dtype(candle.f32)
    for dim in (2, 3):
        t = _pad(t, dim, padding[dim - 2][0], padding[dim - 2][1], work)
    n, c, h, wd = t.shape
    o, cg, kh, kw = k.shape
    oh = (h - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    if oh <= 0 or ow <= 0:
        return _host["conv"](x, w, stride if not one_d else stride[1:], padding if not one_d else padding[1:],
                             dilation if not one_d else dilation[1:], groups)
    taps = []
    for i in range(kh):
        rows = _take(t, 2, i * dilation[0], stride[0], oh)
        for j in range(kw):
            taps.append(_take(rows, 3, j * dilation[1], stride[1], ow))
    cols = candle.stack(taps, 2)  # (n, c, kh*kw, oh, ow): channel-major, as w's (cg, kh, kw)
    kk, og = cg * kh * kw, o // groups
    cols = cols.reshape((n * groups, kk, oh * ow))
    filters = k.contiguous().reshape((1, groups, og, kk)).broadcast_as((n, groups, og, kk))
    out = filters.contiguous().reshape((n * groups, og, kk)).matmul(cols)
    out = out.reshape((n, o, oh, ow) if not one_d else (n, o, ow))
    if work is not dtype:
        out = out.to_dtype(STORE[dtype][0])
    return CandleArray(out, dtype)


def pool(op, x, kernel, stride, padding, dilation):
    """The primitive ``pool``, composed in candle: one strided view per window tap folded with
    ``maximum`` (pads -inf, NaN wins) on floats, or summed in f64 and divided (pads count as 0)
    on f32/f64. Integers and half-precision averages take the host road."""
    dtype = x.dtype
    if empty(x) or dtype not in FLOATS or (op == "avg" and dtype in HALVES):
        return _host["pool"](op, x, kernel, stride, padding, dilation)
    one_d = len(kernel) == 1
    t = x.t.unsqueeze(2) if one_d else x.t
    if one_d:
        kernel, stride, dilation = (1,) + tuple(kernel), (1,) + tuple(stride), (1,) + tuple(dilation)
        padding = ((0, 0),) + tuple(padding)
    work = dtype if op == "max" else F64
    if work is not dtype:
        t = t.to_dtype(candle.f64)
    for dim in (2, 3):
        t = _pad(t, dim, padding[dim - 2][0], padding[dim - 2][1], work, float("-inf") if op == "max" else 0.0)
    n, c, h, wd = t.shape
    oh = (h - dilation[0] * (kernel[0] - 1) - 1) // stride[0] + 1
    ow = (wd - dilation[1] * (kernel[1] - 1) - 1) // stride[1] + 1
    out = None
    for i in range(kernel[0]):
        rows = _take(t, 2, i * dilation[0], stride[0], oh)
        for j in range(kernel[1]):
            win = _take(rows, 3, j * dilation[1], stride[1], ow)
            out = win if out is None else (_extreme("maximum", out, win, True) if op == "max" else out + win)
    if op == "avg":
        out = (out / scalar(float(kernel[0] * kernel[1]), F64, out.shape)).to_dtype(STORE[dtype][0])
    return CandleArray(out.reshape((n, c, ow)) if one_d else out, dtype)
