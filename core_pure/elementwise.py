"""Elementwise ops: dtype promotion, broadcasting and scalars, then one backend primitive."""
from array import array

from . import dtypes
from .composite import composite
from .errors import DTypeError, DeviceError
from .ops import BINARY_TRAIT, UNARY_TRAIT
from .shapes import broadcast_shapes
from .tensor import Tensor

_SCALARS = (bool, int, float)


def same_device(a, b, op):
    """The device ``a`` and ``b`` share, else a ``DeviceError`` naming both (``op`` names the caller)."""
    da, db = a.device, b.device
    if da is not db and da != db:
        raise DeviceError("%s: expected tensors on one device, found %r and %r" % (op, da, db))
    return da


def broadcast_to(t, shape):
    """``t``'s backend array as a view of ``shape`` (leading 1-dims, then expand)."""
    dev = t.device
    data = t._data
    if t.shape == shape:
        return data
    if len(t.shape) < len(shape):
        data = dev.reshape(data, (1,) * (len(shape) - len(t.shape)) + t.shape)
    return dev.expand(data, shape)


def _compute_dtype(op, dtype):
    """The dtype ``op`` runs in, given the promoted dtype of its operands."""
    trait = BINARY_TRAIT[op]
    if trait == "logical" or trait == "shift":
        if dtype.kind == "f":
            raise DTypeError("%s: expected bool or integer tensors, found %s" % (op, dtype.name))
        return dtypes.int64 if dtype.kind == "b" and trait == "shift" else dtype
    if trait == "to_float":
        return dtype if dtype.kind == "f" else dtypes.default_float
    if dtype.kind == "b" and trait == "arith":
        return dtypes.int64  # arithmetic on bools counts them as 0/1
    return dtype


# a Python number -> its float32 rounding: a model's few constants, rounded at every op otherwise
# (an int and a float that compare equal round alike, so they may share an entry). At most
# _F32_MAX entries: each holds two boxed floats on a board's heap, and a loop's ever-new scalars
# (an optimizer's bias corrections) must not grow it
_F32 = {}
_F32_MAX = 32


def _scalar_as(value, dtype, op):
    """A Python scalar as the dtype ``op`` computes in holds it (docs/architecture.md §3): a float
    dtype rounds it (an int beyond the float range is ±inf), an integer dtype must hold an int."""
    if dtype.kind == "f":
        try:
            if dtype is dtypes.float32:
                r = _F32.get(value) if value else None  # 0.0 == -0.0: zeros are never looked up
                if r is None:
                    r = array("f", (value,))[0]  # the scalar takes the tensor's precision
                    if value and len(_F32) < _F32_MAX:
                        _F32[value] = r
                return r
            return dtypes.round_values([value], dtype)[0]
        except OverflowError:  # an int too large for any float
            return _scalar_as(dtypes.int_as_float(value), dtype, op)
    if dtype.kind == "i":
        if type(value) is int and (value < dtype.lo or value > dtype.hi):
            dtypes.check_int(value, dtype, op)
        return int(value)
    return bool(value)


# (op, dtype) -> the result dtype of ``op`` on operands of ``dtype`` where the op runs in that
# dtype itself (no cast); filled by the general path, read by the fast paths for same-dtype operands
_SAME_DTYPE = {}


def binary(op, a, b):
    """``a op b`` where at least one side is a Tensor and the other a Tensor or Python scalar."""
    if type(a) is Tensor:
        dtype = a.dtype
        dev = a.device
        if type(b) is Tensor:
            # fast path: one device, one shape, one dtype that the op runs in (most ops in a model)
            if b.dtype is dtype and b.device is dev and b.shape == a.shape:
                out = _SAME_DTYPE.get((op, dtype))
                if out is not None:
                    return Tensor(dev.binary(op, a._data, b._data), a.shape, out, dev)
        elif (type(b) is float and dtype.kind == "f") or (type(b) is int and dtype.kind != "b"):
            # fast path: a tensor and a Python number that keeps its dtype (x * 0.5, i + 1)
            out = _SAME_DTYPE.get((op, dtype))
            if out is not None:
                return Tensor(dev.binary(op, a._data, _scalar_as(b, dtype, op)), a.shape, out, dev)
    elif type(b) is Tensor and ((type(a) is float and b.dtype.kind == "f") or (type(a) is int and b.dtype.kind != "b")):
        dtype = b.dtype
        out = _SAME_DTYPE.get((op, dtype))
        if out is not None:  # 1 - x, 2.0 * x
            return Tensor(b.device.binary(op, _scalar_as(a, dtype, op), b._data), b.shape, out, b.device)
    return _binary(op, a, b)


def _binary(op, a, b):
    """``binary``'s general path: promotion, casts, broadcasting, numpy scalars."""
    if type(a) is Tensor and type(b) is Tensor:
        dev = same_device(a, b, op)
        dtype = a.dtype if a.dtype is b.dtype else dtypes.promote(a.dtype, b.dtype)
        dtype = _compute_dtype(op, dtype)
        pa = a._data if a.dtype is dtype else dev.cast(a._data, dtype)
        pb = b._data if b.dtype is dtype else dev.cast(b._data, dtype)
        shape = a.shape
        if b.shape != shape:
            shape = broadcast_shapes(a.shape, b.shape, op)
            if a.shape != shape:
                pa = broadcast_to(Tensor(pa, a.shape, dtype, dev), shape)
            if b.shape != shape:
                pb = broadcast_to(Tensor(pb, b.shape, dtype, dev), shape)
    else:
        t, s = (a, b) if type(a) is Tensor else (b, a)
        if type(s) not in _SCALARS and hasattr(s, "item"):
            if getattr(s, "shape", ()) not in ((), (1,)):
                from .errors import ArgumentTypeError
                raise ArgumentTypeError("%s: expected a tensor or a number, found an array of shape %s; "
                                        "convert it with ember.accel.from_numpy" % (op, s.shape))
            s = s.item()  # a numpy scalar or 0-d array
            a, b = (t, s) if t is a else (s, t)
        dev = t.device
        dtype = _compute_dtype(op, dtypes.promote_scalar(t.dtype, s, op))
        pt = t._data if t.dtype is dtype else dev.cast(t._data, dtype)
        s = _scalar_as(s, dtype, op)
        pa, pb = (pt, s) if t is a else (s, pt)
        shape = t.shape
    out_dtype = dtypes.bool_ if BINARY_TRAIT[op] == "compare" else dtype
    out = dev.binary(op, pa, pb)
    if (type(a) is not Tensor or a.dtype is dtype) and (type(b) is not Tensor or b.dtype is dtype):
        _SAME_DTYPE[(op, dtype)] = out_dtype  # op runs in its operands' dtype: the fast paths may skip promotion
    return Tensor(out, shape, out_dtype, dev)


def unary(op, x):
    dev = x.device
    data = x._data
    dtype = x.dtype
    if dtype.kind == "f" and op != "logical_not":  # the common case first: a float op on floats
        return Tensor(dev.unary(op, data), x.shape, dtypes.bool_ if op == "isnan" or op == "isinf" else dtype, dev)
    if op == "logical_not":
        if dtype is not dtypes.bool_:
            data = dev.cast(data, dtypes.bool_)
        return Tensor(dev.unary(op, data), x.shape, dtypes.bool_, dev)
    if op == "isnan" or op == "isinf":  # bool and integer values are never nan or inf
        return Tensor(dev.full(x.shape, False, dtypes.bool_), x.shape, dtypes.bool_, dev)
    trait = UNARY_TRAIT[op]
    if trait == "rounding":
        return x.clone()
    if trait == "float":
        dtype = dtypes.default_float
    elif dtype.kind == "b":
        dtype = dtypes.int64
    if dtype is not x.dtype:
        data = dev.cast(data, dtype)
    return Tensor(dev.unary(op, data), x.shape, dtype, dev)


def where(cond, a, b):
    """Elements of ``a`` where ``cond`` is true, else of ``b``; ``a``/``b`` may be Python scalars."""
    from .creation import _full
    if type(cond) is not Tensor:
        raise DTypeError("where: expected a bool tensor condition, found %s" % type(cond).__name__)
    dev = cond.device
    ta = a if type(a) is Tensor else None
    tb = b if type(b) is Tensor else None
    if ta is None and tb is None:
        dtype = dtypes.promote(dtypes.of_value(a), dtypes.of_value(b))
    elif ta is None:
        dtype = dtypes.promote_scalar(tb.dtype, a, "where")
    elif tb is None:
        dtype = dtypes.promote_scalar(ta.dtype, b, "where")
    else:
        dtype = dtypes.promote(ta.dtype, tb.dtype)
    ta = ta if ta is not None else _full((), a, dtype, dev, "where")
    tb = tb if tb is not None else _full((), b, dtype, dev, "where")
    same_device(cond, ta, "where")
    same_device(cond, tb, "where")
    shape = broadcast_shapes(broadcast_shapes(cond.shape, ta.shape, "where"), tb.shape, "where")
    c = cond if cond.dtype is dtypes.bool_ else cond.to(dtypes.bool_)
    ta, tb = ta.to(dtype), tb.to(dtype)
    out = dev.where(broadcast_to(c, shape), broadcast_to(ta, shape), broadcast_to(tb, shape))
    return Tensor(out, shape, dtype, dev)


@composite
def relu(x):
    """max(x, 0), elementwise (nan stays nan); a composite, so backends may fuse it (``F.relu``)."""
    return x.maximum(0)


def clamp(x, min=None, max=None):
    """Each element limited to [min, max]; either bound may be None, a number or a tensor (broadcast)."""
    if min is None and max is None:
        from .errors import ArgumentError
        raise ArgumentError("clamp: expected min or max, found neither")
    _clamp_bounds(x, min, max)
    if min is not None:
        x = binary("maximum", x, min)
    if max is not None:
        x = binary("minimum", x, max)
    return x


def _clamp_bounds(x, lo, hi):
    """Errors in clamp's arguments named as clamp's, not as the maximum/minimum it runs."""
    from .errors import ArgumentTypeError
    if type(x) is not Tensor:
        raise ArgumentTypeError("clamp: expected a tensor input, found %s" % type(x).__name__)
    for name, v in (("min", lo), ("max", hi)):
        if type(v) is Tensor:
            same_device(x, v, "clamp")
            broadcast_shapes(x.shape, v.shape, "clamp")
        elif v is not None and type(v) not in (int, float, bool) and not hasattr(v, "dtype"):
            raise ArgumentTypeError("clamp: expected %s as a number, a tensor or None, found %s"
                                    % (name, type(v).__name__))


def isfinite(x):
    """A bool tensor: True where ``x`` is neither inf nor nan (always True for integers)."""
    if x.dtype.kind != "f":
        from .creation import full
        return full(x.shape, True, dtype=dtypes.bool_, device=x.device)
    return binary("eq", binary("sub", x, x), 0.0)  # inf - inf and nan - nan are nan


def _as_bool(v):
    if type(v) is Tensor:
        return v.to(dtypes.bool_)
    return bool(v)


def logical(op, a, b):
    """``logical_and/or/xor``: any dtypes, read as true where nonzero; the result is bool."""
    for v in (a, b):
        if type(v) not in (Tensor, int, float, bool):
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("logical_%s: expected a tensor or a number, found %s" % (op, type(v).__name__))
    return binary(op, _as_bool(a), _as_bool(b))


def bitwise(op, a, b):
    """``bitwise_and/or/xor`` of bool or integer tensors."""
    return binary(op, a, b)


def bitwise_not(x):
    if x.dtype.kind == "f":
        raise DTypeError("bitwise_not: expected a bool or integer tensor, found %s" % x.dtype.name)
    if x.dtype is dtypes.bool_:
        return unary("logical_not", x)
    return Tensor(x.device.unary("bitwise_not", x._data), x.shape, x.dtype, x.device)


def div(a, b, rounding_mode=None):
    """``a / b`` (always a float), or with ``rounding_mode`` the quotient rounded toward zero
    (``"trunc"``) or down (``"floor"``), in the operands' promoted dtype: ``torch.div``'s rules."""
    if rounding_mode is None:
        return binary("div", a, b)
    if rounding_mode == "floor":
        return binary("floordiv", a, b)
    if rounding_mode != "trunc":
        from .errors import ArgumentError
        raise ArgumentError("div: rounding_mode must be None, 'trunc' or 'floor', found %r" % (rounding_mode,))
    floor = binary("floordiv", a, b)
    if floor.dtype.kind == "f":
        return binary("div", a, b).trunc()
    # an inexact quotient of mixed signs was floored one below its truncation
    inexact = binary("mod", a, b) != 0
    mixed = binary("ne", binary("lt", a, 0), binary("lt", b, 0)) if type(b) is Tensor else \
        (binary("ge", a, 0) if b < 0 else binary("lt", a, 0))
    return where(inexact & mixed, floor + 1, floor)
