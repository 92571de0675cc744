"""The NumPy device against the pure-Python Cpu backend, primitive by primitive.

The Cpu backend defines ember's values (docs/architecture.md §3). Every case here runs one primitive
on both devices with the same inputs, in contiguous and non-contiguous layouts (permuted, strided,
flipped, expanded), and compares the results value by value: exactly (nan matches nan) unless the
case names a tolerance (float32 transcendental functions, float32 BLAS accumulation). Each case
also checks that the NumPy device returns arrays of the right dtype (never numpy scalars), leaves
its inputs unchanged and emits no numpy warning.

The conformance suite (tests/conformance) checks both devices against numpy's float64 results;
this file adds the primitives and corners it does not reach.
"""
import math
import random
import sys
import warnings

import numpy as np

import ember
import ember.nn.functional as F
from ember import dtypes
from ember.accel.numpy import NumPy
from ember.accel.numpy.arrays import BF16, ember_dtype
from ember.backend import BINARY_OPS, POOL_OPS, PRIMITIVES, REDUCE_OPS, SCAN_OPS, SCATTER_MODES, UNARY_OPS
from harness import check

PARAMETERS = ("case",)


def _pure_cpu():
    # the pure-Python Cpu device defines the values (the C kernels are compared with it elsewhere)
    try:
        return ember.Cpu(kernels="python")
    except TypeError:  # a Cpu without kernel choice is the pure one
        return ember.Cpu()


CPU = _pure_cpu()
NPD = NumPy()

NAN, INF = float("nan"), float("inf")
FLOATS = (dtypes.float32, dtypes.float64, dtypes.float16, dtypes.bfloat16)
INTS = (dtypes.int8, dtypes.int32, dtypes.int64)
ALL = FLOATS + INTS + (dtypes.bool_,)
LAYOUTS = ("contig", "permuted", "strided", "flipped")
TOL = {dtypes.float32: 2e-6, dtypes.float64: 1e-13, dtypes.float16: 2e-3, dtypes.bfloat16: 1.6e-2}
SPECIAL = [NAN, INF, -INF, 0.0, -0.0, 1e-30, 3e38, -3e38, 65504.0, 1e-8, 0.5, -0.5, 1.5, 2.5, -2.5, 7.0]


class Case:
    def __init__(self, name, fn):
        self.name = name
        self.fn = fn

    def __repr__(self):
        return "Case(%s)" % self.name


CASES = []
SIGNLESS = [False]  # set while a case compares ops whose zero sign IEEE leaves open (max of 0.0, -0.0)


def add(name, fn, *args):
    CASES.append(Case(name, lambda: fn(*args)))


# -- inputs -------------------------------------------------------------------------------------

def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def values(dtype, n, seed, special=True, lo=None, hi=None):
    r = random.Random(seed)
    if dtype.kind == "f":
        lo = -4.0 if lo is None else lo
        hi = 4.0 if hi is None else hi
        out = [r.uniform(lo, hi) for _ in range(n)]
        if special:
            for i, v in enumerate(SPECIAL):
                if i * 3 + 1 < n:
                    out[i * 3 + 1] = v
        return out
    if dtype.kind == "i":
        lo = -20 if lo is None else lo
        hi = 20 if hi is None else hi
        out = [r.randint(lo, hi) for _ in range(n)]
        if special and n > 4:
            out[1], out[3] = dtype.lo, dtype.hi
        return out
    return [r.random() < 0.5 for _ in range(n)]


def layout_data(flat, shape, layout):
    """(storage flat, storage shape, how to view it as ``shape``) for a layout."""
    a = np.array(flat, dtype=object).reshape(shape)
    if layout == "permuted" and len(shape) >= 2:
        return a.transpose().ravel().tolist(), tuple(reversed(shape)), "permuted"
    if layout == "strided" and len(shape) >= 1 and numel(shape):
        wide = np.empty(shape[:-1] + (2 * shape[-1],), dtype=object)
        wide[..., ::2] = a
        wide[..., 1::2] = a  # the filler is never read
        return wide.ravel().tolist(), wide.shape, "strided"
    if layout == "flipped" and len(shape) >= 1:
        return a[..., ::-1].ravel().tolist(), shape, "flipped"
    return flat, shape, "contig"


def build(dev, flat, shape, dtype, layout="contig"):
    flat_s, shape_s, how = layout_data(flat, tuple(shape), layout)
    x = dev.from_list(flat_s, tuple(shape_s), dtype)
    if how == "permuted":
        return dev.permute(x, tuple(range(len(shape) - 1, -1, -1)))
    if how == "strided":
        return dev.slice(x, tuple((0, n, 1) for n in shape[:-1]) + ((0, 2 * shape[-1], 2),))
    if how == "flipped":
        n = shape[-1]
        return dev.slice(x, tuple((0, m, 1) for m in shape[:-1]) + ((n - 1, -1, -1),))
    return x


def pair(flat, shape, dtype, layout="contig"):
    return build(CPU, flat, shape, dtype, layout), build(NPD, flat, shape, dtype, layout)


# -- comparing ----------------------------------------------------------------------------------

def same_values(got, want, rtol=0.0, what="", atol=None):
    """Equal values (nan matches nan); without a tolerance, zeros must carry the same sign too.
    ``atol``: a further absolute allowance per value (a float32 sum's rounding, see ``_bound``)."""
    if len(got) != len(want):
        raise AssertionError("%s: %d values, Cpu has %d" % (what, len(got), len(want)))
    for i, (g, w) in enumerate(zip(got, want)):
        if type(g) is not type(w):
            raise AssertionError("%s: value %d is %s %r, Cpu has %s %r" % (what, i, type(g).__name__, g,
                                                                          type(w).__name__, w))
        if type(w) is float:
            if w != w:
                ok = g != g
            elif rtol and not (w in (INF, -INF)):
                ok = abs(g - w) <= rtol * abs(w) + 1e-30 or abs(g - w) <= rtol * 1e-6 or \
                    (atol is not None and abs(g - w) <= atol[i])
            else:
                ok = g == w and (g != 0 or SIGNLESS[0] or math.copysign(1.0, g) == math.copysign(1.0, w))
        else:
            ok = g == w
        if not ok:
            raise AssertionError("%s: value %d is %r, Cpu has %r" % (what, i, g, w))


def expect(cpu_out, np_out, rtol=0.0, what="", atol=None):
    """The NumPy result has the Cpu result's shape, dtype and values (within ``rtol``)."""
    if type(np_out) not in (np.ndarray, BF16):
        raise AssertionError("%s: NumPy returned %s, expected an ndarray" % (what, type(np_out).__name__))
    if tuple(np_out.shape) != tuple(cpu_out.shape):
        raise AssertionError("%s: shape %s, Cpu has %s" % (what, np_out.shape, cpu_out.shape))
    if ember_dtype(np_out) is not cpu_out.dtype:
        raise AssertionError("%s: dtype %s, Cpu has %s" % (what, ember_dtype(np_out).name, cpu_out.dtype.name))
    same_values(NPD.to_list(np_out), CPU.to_list(cpu_out), rtol, what, atol)


# IEEE leaves the sign of max(0.0, -0.0) open; numpy's SIMD loops and the Cpu backend pick differently
ZERO_SIGN_OPEN = ("maximum", "minimum", "max", "min", "cummax", "cummin")


def both(fn, cpu_args, np_args, rtol=0.0, what="", atol=None):
    """Run ``fn(device, *args)`` on each device: same results, NumPy inputs untouched, no warnings."""
    SIGNLESS[0] = any(" %s " % op in " %s " % what for op in ZERO_SIGN_OPEN)
    cpu_out = fn(CPU, *cpu_args)
    before = [(a, np.array(a, copy=True)) for a in np_args if isinstance(a, np.ndarray)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np_out = fn(NPD, *np_args)
    for a, b in before:
        if not np.array_equal(a, b, equal_nan=a.dtype.kind == "f"):
            raise AssertionError("%s: the NumPy device changed an input array" % what)
    if type(cpu_out) is tuple:
        for k, (c, n) in enumerate(zip(cpu_out, np_out)):
            expect(c, n, rtol, "%s[%d]" % (what, k))
    else:
        expect(cpu_out, np_out, rtol, what, atol)
    return np_out


def _bound(fn, dtype, k, *cpu_args):
    """Per output, how far a float32 sum of ``k`` products may land from the exact one in any
    order of summation: k * 2^-24 * the sum of the products' magnitudes (``fn`` on the inputs'
    absolute values, on the Cpu). BLAS's sgemm sums in float32, in an order of its kernel's
    choosing; the Cpu sums more exactly. None for other dtypes."""
    if dtype is not dtypes.float32:
        return None
    mags = fn(CPU, *[CPU.unary("abs", a) for a in cpu_args])
    return [k * 2.0 ** -24 * v for v in CPU.to_list(mags)]


def tol(dtype, native=True):
    return TOL[dtype] if dtype.kind == "f" and native else 0.0


# -- data in and out ----------------------------------------------------------------------------

def check_from_list(dtype, flat):
    both(lambda d: d.from_list(flat, (len(flat),), dtype), (), (), what="from_list")


ROUNDING = {
    "f": [0.1, 1.0 / 3.0, 65519.0, 65520.0, 3.5e38, -3.5e38, 1e-45, 1e-40, 5e-324, 2 ** 24 + 1, -7, True,
          NAN, INF, -0.0, 16777217, 2 ** 70, 6.1e-5, 1.00390625, 1.005859375],
    "i": [1.7, -1.7, NAN, INF, -INF, 2 ** 63, 2 ** 64 + 5, -2 ** 63 - 1, True, 300, -129, 1e20, -1e19,
          2.0 ** 63, 2 ** 62 + 1, 0.9999],
    "b": [0, 1, 2, 0.0, NAN, -0.0, True, False, -3, 1e-300],
}
for _dt in ALL:
    add("from_list.%s" % _dt.name, check_from_list, _dt, ROUNDING[_dt.kind])
add("from_list.int64.all_ints", check_from_list, dtypes.int64, [5, -3, 2 ** 63 - 1, -2 ** 63, True])
add("from_list.int8.big_ints", check_from_list, dtypes.int8, [2 ** 63 + 7, 2 ** 100, -2 ** 70 - 1, 127])
add("from_list.float32.empty", check_from_list, dtypes.float32, [])
add("from_list.int32.empty", check_from_list, dtypes.int32, [])


def check_from_list_numpy_data(dtype):
    flat = values(dtype, 24, 7)
    x = NPD.from_list(np.array(flat, dtype=object).astype(np.float64 if dtype.kind == "f" else
                                                          np.int64 if dtype.kind == "i" else bool),
                      (2, 3, 4), dtype)
    expect(CPU.from_list(flat, (2, 3, 4), dtype), x, 0.0, "from_list(ndarray)")


for _dt in ALL:
    add("from_list.ndarray.%s" % _dt.name, check_from_list_numpy_data, _dt)


def check_bytes(dtype, layout):
    shape = (3, 4)
    flat = values(dtype, 12, 11, special=False)
    if dtype.kind == "f":
        flat[2], flat[5], flat[7] = INF, -0.0, -INF
    c, n = pair(flat, shape, dtype, layout)
    cb, nb = CPU.to_bytes(c), NPD.to_bytes(n)
    if cb != nb:
        raise AssertionError("to_bytes differs: %r vs Cpu %r" % (nb, cb))
    both(lambda d, b: d.from_bytes(b, shape, dtype), (cb,), (nb,), what="from_bytes")
    both(lambda d, b: d.from_bytes(b, shape, dtype), (bytearray(cb),), (bytearray(nb),), what="from_bytes")


for _dt in ALL:
    for _lay in ("contig", "permuted", "flipped"):
        add("bytes.%s.%s" % (_dt.name, _lay), check_bytes, _dt, _lay)


def check_bytes_nan():
    for dt in (dtypes.float16, dtypes.bfloat16, dtypes.float32):
        n = NPD.from_list([NAN, 1.0, -NAN], (3,), dt)
        back = NPD.to_list(NPD.from_bytes(NPD.to_bytes(n), (3,), dt))
        assert back[0] != back[0] and back[1] == 1.0 and back[2] != back[2], (dt, back)
        c = CPU.from_bytes(NPD.to_bytes(n), (3,), dt)
        assert CPU.to_list(c)[0] != CPU.to_list(c)[0]


add("bytes.nan", check_bytes_nan)


def check_bool_bytes():
    # any nonzero byte is True, as on the Cpu backend
    buf = bytes([0, 1, 2, 255])
    both(lambda d: d.from_bytes(buf, (4,), dtypes.bool_), (), (), what="from_bytes bool")


add("bytes.bool.nonzero", check_bool_bytes)


def check_full(value, dtype, shape):
    both(lambda d: d.full(shape, value, dtype), (), (), what="full(%r, %s)" % (value, dtype.name))


for _v, _dt in ((2.7, dtypes.int64), (NAN, dtypes.int32), (1000, dtypes.int8), (0.1, dtypes.bfloat16),
                (70000.0, dtypes.float16), (True, dtypes.float32), (-0.0, dtypes.float32), (0, dtypes.bool_),
                (2.5, dtypes.bool_), (0.1, dtypes.float64), (0.1, dtypes.float32), (-INF, dtypes.float16),
                (2 ** 64 + 3, dtypes.int64), (0, dtypes.bfloat16)):
    add("full.%r.%s" % (_v, _dt.name), check_full, _v, _dt, (2, 3))
add("full.0d", check_full, 1.5, dtypes.float32, ())
add("full.empty", check_full, 1.5, dtypes.float32, (0, 4))


# -- movement ---------------------------------------------------------------------------------

def check_movement(dtype, layout):
    shape = (2, 3, 4)
    flat = values(dtype, 24, 3)
    c, n = pair(flat, shape, dtype, layout)
    both(lambda d, x: d.reshape(x, (4, 6)), (c,), (n,), what="reshape")
    both(lambda d, x: d.reshape(x, (24,)), (c,), (n,), what="reshape flat")
    both(lambda d, x: d.permute(x, (2, 0, 1)), (c,), (n,), what="permute")
    both(lambda d, x: d.slice(x, ((1, 2, 1), (2, -1, -1), (0, 4, 3))), (c,), (n,), what="slice neg step")
    both(lambda d, x: d.slice(x, ((0, 2, 1), (0, 0, 1), (0, 4, 1))), (c,), (n,), what="slice empty")
    both(lambda d, x: d.expand(d.reshape(d.slice(x, ((0, 1, 1), (0, 3, 1), (1, 2, 1))), (3, 1)), (3, 5)),
         (c,), (n,), what="expand")
    c1, n1 = pair(values(dtype, 6, 4), (2, 1, 3), dtype, layout)
    both(lambda d, x: d.expand(d.permute(x, (2, 1, 0)), (3, 4, 2)), (c1,), (n1,), what="expand permuted")
    both(lambda d, x: d.expand(d.slice(x, ((1, -1, -1), (0, 1, 1), (2, -1, -1))), (2, 5, 3)), (c1,), (n1,),
         what="expand flipped")
    region = ((0, 2, 1), (2, -1, -2), (1, 4, 2))
    vflat = values(dtype, 2 * 2 * 2, 9)
    cv, nv = pair(vflat, (2, 2, 2), dtype, "permuted")
    out = both(lambda d, x, v: d.slice_assign(x, region, v), (c, cv), (n, nv), what="slice_assign")
    if np.shares_memory(out, n):
        raise AssertionError("slice_assign returned memory shared with its input")
    both(lambda d, x, y: d.cat([x, y, x], 1), (c, c), (n, n), what="cat")
    c2, n2 = pair(values(dtype, 8, 5), (2, 1, 4), dtype, layout)
    both(lambda d, x, y: d.cat([x, y], 1), (c, c2), (n, n2), what="cat uneven")
    both(lambda d, x: d.cat([x], 0), (c,), (n,), what="cat one")


for _dt in ALL:
    for _lay in LAYOUTS:
        add("movement.%s.%s" % (_dt.name, _lay), check_movement, _dt, _lay)


def check_views():
    # movement ops are numpy views (no copy) where numpy can make one
    x = NPD.from_list(list(range(24)), (2, 3, 4), dtypes.float32)
    for name, out in (("reshape", NPD.reshape(x, (6, 4))), ("permute", NPD.permute(x, (2, 1, 0))),
                      ("slice", NPD.slice(x, ((0, 2, 1), (2, -1, -1), (0, 4, 2)))),
                      ("expand", NPD.expand(NPD.reshape(x, (1, 24)), (5, 24)))):
        assert np.shares_memory(out, x), name
    b = NPD.from_list([1.5, 2.5, 3.0], (3, 1), dtypes.bfloat16)
    assert type(NPD.expand(b, (3, 4))) is BF16
    assert type(NPD.expand(NPD.permute(NPD.expand(b, (3, 2)), (1, 0)), (2, 3))) is BF16
    e = NPD.from_list([], (1, 0), dtypes.float32)
    assert NPD.expand(e, (4, 0)).shape == (4, 0)


add("movement.views", check_views)


# -- elementwise --------------------------------------------------------------------------------

# float ops the Cpu backend computes as one correctly rounded operation, or exactly on both devices
EXACT_UNARY = ("neg", "abs", "sign", "sqrt", "floor", "ceil", "round", "trunc", "reciprocal", "isnan",
               "isinf", "logical_not", "rsqrt", "sigmoid", "erf")
FLOAT_ONLY = ("exp", "log", "sqrt", "rsqrt", "sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
              "tanh", "erf", "sigmoid", "expm1", "log1p", "reciprocal")


def unary_ops(dtype):
    if dtype.kind == "f":
        return [op for op in UNARY_OPS if op != "bitwise_not"]
    if dtype.kind == "i":
        return ["neg", "abs", "sign", "bitwise_not", "floor", "ceil", "round", "trunc", "isnan", "isinf",
                "logical_not"]
    return ["bitwise_not", "logical_not", "isnan", "isinf", "floor"]


def check_unary(op, dtype, layout):
    shape = (3, 5)
    flat = values(dtype, 15, 21)
    c, n = pair(flat, shape, dtype, layout)
    rtol = 0.0 if op in EXACT_UNARY else tol(dtype)
    if dtype is dtypes.float64 and op in ("sigmoid", "erf", "rsqrt"):
        rtol = TOL[dtype]
    if dtype in (dtypes.float16, dtypes.bfloat16) and op in ("sigmoid", "erf", "rsqrt"):
        rtol = TOL[dtype]  # a float64 result one ulp away from Python's may round the other way
    both(lambda d, x: d.unary(op, x), (c,), (n,), rtol, "unary %s %s %s" % (op, dtype.name, layout))


for _dt in ALL:
    for _op in unary_ops(_dt):
        for _lay in ("contig", "flipped"):
            add("unary.%s.%s.%s" % (_op, _dt.name, _lay), check_unary, _op, _dt, _lay)


def check_unary_wide():
    # a float32 tensor of many values: the rounding-sensitive ops agree everywhere
    r = random.Random(5)
    flat = [r.uniform(-40, 40) for _ in range(4000)] + [r.uniform(-1, 1) * 10.0 ** r.randint(-40, 38)
                                                         for _ in range(4000)]
    for dt in (dtypes.float32, dtypes.float16, dtypes.bfloat16):
        c, n = pair(flat, (len(flat),), dt)
        for op in ("neg", "abs", "sign", "sqrt", "floor", "ceil", "round", "trunc", "reciprocal"):
            both(lambda d, x: d.unary(op, x), (c,), (n,), 0.0, "unary %s %s" % (op, dt.name))
        for op in ("exp", "log", "tanh", "sin", "cos", "sigmoid", "erf", "expm1", "log1p", "atan", "rsqrt"):
            both(lambda d, x: d.unary(op, x), (c,), (n,), TOL[dt], "unary %s %s" % (op, dt.name))


add("unary.wide", check_unary_wide)


def binary_ops(dtype):
    if dtype.kind == "f":
        return ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "floordiv", "mod", "atan2",
                "eq", "ne", "lt", "le", "gt", "ge"]
    if dtype.kind == "i":
        return ["add", "sub", "mul", "pow", "maximum", "minimum", "floordiv", "mod", "eq", "ne", "lt", "le",
                "gt", "ge", "and", "or", "xor", "lshift", "rshift"]
    return ["maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "and", "or", "xor"]


def binary_inputs(op, dtype, n, seed):
    if dtype.kind == "i":
        if op == "pow":
            return values(dtype, n, seed, False, -4, 5), values(dtype, n, seed + 1, False, -3, 9)
        if op in ("lshift", "rshift"):
            return values(dtype, n, seed), values(dtype, n, seed + 1, False, -2, 70)
        if op in ("floordiv", "mod"):
            return values(dtype, n, seed), values(dtype, n, seed + 1, False, -3, 3)
    if dtype.kind == "f" and op == "pow":
        return values(dtype, n, seed, True, 0.0, 3.0), values(dtype, n, seed + 1, True, -3.0, 3.0)
    return values(dtype, n, seed), values(dtype, n, seed + 1)


def binary_tol(op, dtype):
    if dtype.kind != "f" or op in ("add", "sub", "mul", "div", "maximum", "minimum", "floordiv", "mod", "eq",
                                   "ne", "lt", "le", "gt", "ge"):
        return 0.0
    return TOL[dtype] if dtype.kind == "f" else 0.0


def check_binary(op, dtype, layout):
    shape = (4, 6)
    fa, fb = binary_inputs(op, dtype, 24, 31)
    ca, na = pair(fa, shape, dtype, layout)
    cb, nb = pair(fb, shape, dtype, "permuted" if layout == "contig" else "contig")
    rtol = binary_tol(op, dtype)
    what = "binary %s %s %s" % (op, dtype.name, layout)
    both(lambda d, a, b: d.binary(op, a, b), (ca, cb), (na, nb), rtol, what)
    # every special float against every other
    if dtype.kind == "f" and layout == "contig":
        xs = [x for x in SPECIAL for _ in SPECIAL]
        ys = [y for _ in SPECIAL for y in SPECIAL]
        ca, na = pair(xs, (len(xs),), dtype)
        cb, nb = pair(ys, (len(ys),), dtype)
        both(lambda d, a, b: d.binary(op, a, b), (ca, cb), (na, nb), rtol, what + " specials")


for _dt in ALL:
    for _op in binary_ops(_dt):
        for _lay in ("contig", "strided"):
            add("binary.%s.%s.%s" % (_op, _dt.name, _lay), check_binary, _op, _dt, _lay)


def scalar_for(dtype, s):
    """The scalar as the frontend hands it to the backend (already of the tensor's kind)."""
    if dtype.kind == "f":
        return dtypes.round_values([float(s)], dtype)[0]
    if dtype.kind == "i":
        return int(s)
    return bool(s)


SCALARS = {"f": [2.5, -1.5, 0.0, -0.0, NAN, INF, 3.0, 1e-3], "i": [3, -3, 0, 1, -1, 1000, -2 ** 40, 2 ** 63 - 1,
                                                                  2 ** 70, -2 ** 64, 64, 7],
           "b": [True, False]}


def check_binary_scalar(op, dtype):
    flat = binary_inputs(op, dtype, 12, 41)[0]
    c, n = pair(flat, (3, 4), dtype, "strided")
    rtol = binary_tol(op, dtype)
    for s in SCALARS[dtype.kind]:
        s = scalar_for(dtype, s)
        if op in ("lshift", "rshift") and not -1 <= s <= 70:
            continue
        what = "binary %s %s with %r" % (op, dtype.name, s)
        both(lambda d, a: d.binary(op, a, s), (c,), (n,), rtol, what + " (right)")
        both(lambda d, a: d.binary(op, s, a), (c,), (n,), rtol, what + " (left)")


for _dt in ALL:
    for _op in binary_ops(_dt):
        add("binary_scalar.%s.%s" % (_op, _dt.name), check_binary_scalar, _op, _dt)


def check_binary_0d():
    for dt in ALL:
        for op in binary_ops(dt):
            fa, fb = binary_inputs(op, dt, 1, 51)
            ca, na = pair(fa, (), dt)
            cb, nb = pair(fb, (), dt)
            both(lambda d, a, b: d.binary(op, a, b), (ca, cb), (na, nb), binary_tol(op, dt), "0d %s" % op)
            s = scalar_for(dt, SCALARS[dt.kind][0])
            both(lambda d, a: d.binary(op, a, s), (ca,), (na,), binary_tol(op, dt), "0d scalar %s" % op)
        for dst in ALL:
            for v in CAST_SPECIAL["f"][:8] if dt.kind == "f" else values(dt, 3, 53):
                ca, na = pair(dtypes.round_values([v], dt), (), dt)
                both(lambda d, a: d.cast(a, dst), (ca,), (na,), 0.0, "0d cast %s->%s" % (dt.name, dst.name))
        for op in unary_ops(dt):
            ca, na = pair(values(dt, 1, 52), (), dt)
            rtol = 0.0 if op in EXACT_UNARY else tol(dt)
            both(lambda d, a: d.unary(op, a), (ca,), (na,), rtol or TOL.get(dt, 0.0), "0d unary %s" % op)


add("elementwise.0d", check_binary_0d)


def check_binary_expanded():
    c, n = pair(values(dtypes.float32, 4, 61), (4, 1), dtypes.float32)
    c2, n2 = pair(values(dtypes.float32, 5, 62), (1, 5), dtypes.float32)
    both(lambda d, a, b: d.binary("mul", d.expand(a, (4, 5)), d.expand(b, (4, 5))), (c, c2), (n, n2),
         what="expanded")


add("binary.expanded", check_binary_expanded)


def check_where(dtype, layout):
    shape = (3, 4)
    cc, nc = pair(values(dtypes.bool_, 12, 71), shape, dtypes.bool_, layout)
    ca, na = pair(values(dtype, 12, 72), shape, dtype, "permuted")
    cb, nb = pair(values(dtype, 12, 73), shape, dtype, layout)
    both(lambda d, c, a, b: d.where(c, a, b), (cc, ca, cb), (nc, na, nb), what="where %s" % dtype.name)
    c0, n0 = pair([True], (), dtypes.bool_)
    a0, b0 = pair([1.5], (), dtypes.float32)
    both(lambda d, c, a: d.where(c, a, a), (c0, a0), (n0, b0), what="where 0d")


for _dt in ALL:
    for _lay in ("contig", "flipped"):
        add("where.%s.%s" % (_dt.name, _lay), check_where, _dt, _lay)


CAST_SPECIAL = {"f": SPECIAL + [1e20, -1e20, 2.0 ** 63, -2.0 ** 63, 2.0 ** 64 + 2 ** 12, 127.9, -128.9, 255.0,
                                 2.0 ** 31, 1e300, -1e300, 1.00390625, 70000.0, 3.4028235e38],
                "i": None, "b": None}


def check_cast(src, dst, layout):
    flat = values(src, 30, 81)
    if src.kind == "f":
        flat = flat[:30 - len(CAST_SPECIAL["f"])] + [dtypes.round_values([v], src)[0] for v in CAST_SPECIAL["f"]]
        flat = flat[:30] if len(flat) >= 30 else flat + [0.0] * (30 - len(flat))
    c, n = pair(flat, (5, 6), src, layout)
    both(lambda d, x: d.cast(x, dst), (c,), (n,), what="cast %s->%s" % (src.name, dst.name))


for _s in ALL:
    for _d in ALL:
        if _s is not _d:
            add("cast.%s.%s" % (_s.name, _d.name), check_cast, _s, _d, "contig")
    add("cast.%s.float32.permuted" % _s.name, check_cast, _s, dtypes.float32, "permuted")


def check_cast_identity():
    x = NPD.from_list([1.0, 2.0], (2,), dtypes.bfloat16)
    assert NPD.cast(x, dtypes.bfloat16) is x
    y = NPD.cast(x, dtypes.float32)
    assert type(y) is np.ndarray and y.dtype == np.float32


add("cast.identity", check_cast_identity)


# -- reductions, scans, sort ----------------------------------------------------------------------

def check_reduce(op, dtype, layout):
    shape = (3, 4, 5)
    flat = values(dtype, 60, 91)
    if dtype.kind == "f" and op in ("sum", "prod"):
        flat = [v if abs(v) < 1e30 else 1.0 for v in flat]
    c, n = pair(flat, shape, dtype, layout)
    for dim in range(3):
        both(lambda d, x: d.reduce(op, x, dim), (c,), (n,), 0.0, "reduce %s %s dim %d" % (op, dtype.name, dim))
    if op in ("sum", "prod", "max", "min", "argmax", "argmin") and dtype.kind == "f":
        # nan-free data too: the extremes and their first index
        clean = [v if v == v else 0.25 for v in flat]
        c, n = pair(clean, shape, dtype, layout)
        for dim in range(3):
            both(lambda d, x: d.reduce(op, x, dim), (c,), (n,), 0.0, "reduce %s clean dim %d" % (op, dim))


for _dt in ALL:
    for _op in REDUCE_OPS:
        if _dt.kind == "b" and _op in ("sum", "prod"):
            continue
        for _lay in ("contig", "permuted"):
            add("reduce.%s.%s.%s" % (_op, _dt.name, _lay), check_reduce, _op, _dt, _lay)


def check_reduce_ties_and_empty():
    c, n = pair([1.0, 3.0, 3.0, -0.0, 0.0, NAN, 2.0, NAN], (2, 4), dtypes.float32)
    for op in ("argmax", "argmin", "max", "min"):
        both(lambda d, x: d.reduce(op, x, 1), (c,), (n,), what="ties %s" % op)
    for dt in (dtypes.float32, dtypes.int64, dtypes.bool_):
        c, n = pair([], (0, 3), dt)
        for op in ("sum", "prod", "any", "all") if dt.kind != "b" else ("any", "all"):
            both(lambda d, x: d.reduce(op, x, 0), (c,), (n,), what="empty %s %s" % (op, dt.name))
    c, n = pair([2 ** 62, 2 ** 62, 2 ** 62, 5], (4,), dtypes.int64)
    both(lambda d, x: d.reduce("sum", x, 0), (c,), (n,), what="sum wraps")
    both(lambda d, x: d.reduce("prod", x, 0), (c,), (n,), what="prod wraps")
    c, n = pair([1e30, 1e30, 1e-30], (3,), dtypes.float32)
    both(lambda d, x: d.reduce("prod", x, 0), (c,), (n,), what="prod overflows to inf")
    c, n = pair([3e38, 3e38, -3e38], (3,), dtypes.float32)
    both(lambda d, x: d.reduce("sum", x, 0), (c,), (n,), what="sum in double")


add("reduce.corners", check_reduce_ties_and_empty)


def check_scan(op, dtype, layout):
    shape = (3, 6)
    flat = values(dtype, 18, 101, lo=-3 if dtype.kind == "i" else None, hi=3 if dtype.kind == "i" else None)
    if op in ("cumsum", "cumprod") and dtype.kind == "f":
        flat = [v if abs(v) < 1e30 else 2.0 for v in flat]
    if op in ("cumsum", "cumprod") and dtype.kind == "i":
        flat[4], flat[5] = dtype.hi, dtype.lo
    c, n = pair(flat, shape, dtype, layout)
    for dim in range(2):
        both(lambda d, x: d.scan(op, x, dim), (c,), (n,), 0.0, "scan %s %s dim %d" % (op, dtype.name, dim))


for _dt in ALL:
    for _op in SCAN_OPS:
        if _dt.kind == "b" and _op in ("cumsum", "cumprod"):
            continue
        for _lay in ("contig", "permuted"):
            add("scan.%s.%s.%s" % (_op, _dt.name, _lay), check_scan, _op, _dt, _lay)


def check_scan_ties():
    flat = [1.0, 3.0, 3.0, 2.0, 3.0, NAN, 5.0, NAN, 1.0, 1.0, 0.5, 0.5, -1.0, 7.0, 7.0, 6.0]
    c, n = pair(flat, (2, 8), dtypes.float32)
    for op in SCAN_OPS:
        both(lambda d, x: d.scan(op, x, 1), (c,), (n,), what="scan ties %s" % op)


add("scan.ties", check_scan_ties)


def check_sort(dtype, layout, descending):
    shape = (4, 7)
    flat = values(dtype, 28, 111, lo=-3 if dtype.kind == "i" else None, hi=3 if dtype.kind == "i" else None)
    if dtype.kind == "f":
        flat = [float(round(v)) if i % 3 and abs(v) < 1e30 else v for i, v in enumerate(flat)]  # ties
        flat = dtypes.round_values(flat, dtype)
    c, n = pair(flat, shape, dtype, layout)
    for dim in range(2):
        both(lambda d, x: d.sort(x, dim, descending), (c,), (n,), 0.0,
             "sort %s dim %d descending=%s" % (dtype.name, dim, descending))


for _dt in ALL:
    for _lay in ("contig", "permuted"):
        for _desc in (False, True):
            add("sort.%s.%s.%s" % (_dt.name, _lay, "desc" if _desc else "asc"), check_sort, _dt, _lay, _desc)


def check_sort_empty():
    c, n = pair([], (0, 3), dtypes.float32)
    both(lambda d, x: d.sort(x, 0, True), (c,), (n,), what="sort empty")


add("sort.empty", check_sort_empty)


# -- matmul, conv, pool -----------------------------------------------------------------------------

def check_matmul(dtype, layout, batch, m, k, n_):
    lo, hi = (-5, 6) if dtype.kind == "i" else (None, None)
    fa = values(dtype, numel(batch + (m, k)), 121, special=False, lo=lo, hi=hi)
    fb = values(dtype, numel(batch + (k, n_)), 122, special=False, lo=lo, hi=hi)
    ca, na = pair(fa, batch + (m, k), dtype, layout)
    cb, nb = pair(fb, batch + (k, n_), dtype, "contig")
    rtol = {dtypes.float32: 1e-5, dtypes.float64: 1e-12}.get(dtype, TOL.get(dtype, 0.0))
    fn = lambda d, a, b: d.matmul(a, b)  # noqa: E731
    both(fn, (ca, cb), (na, nb), rtol, "matmul %s %s %s" % (dtype.name, batch + (m, k), batch + (k, n_)),
         _bound(fn, dtype, k, ca, cb))


for _dt in FLOATS + INTS:
    for _lay in ("contig", "permuted", "flipped"):
        add("matmul.%s.%s" % (_dt.name, _lay), check_matmul, _dt, _lay, (2,), 3, 4, 5)
add("matmul.k0", check_matmul, dtypes.float32, "contig", (), 3, 0, 2)
add("matmul.m0", check_matmul, dtypes.float32, "contig", (2,), 0, 3, 2)
add("matmul.batch2", check_matmul, dtypes.float64, "permuted", (2, 3), 2, 2, 2)


def check_matmul_wrap():
    c, n = pair([100, 100, 100, 100], (2, 2), dtypes.int8)
    both(lambda d, a: d.matmul(a, a), (c,), (n,), what="matmul int8 wraps")
    c, n = pair([2 ** 62, 3, 2 ** 62, 5], (2, 2), dtypes.int64)
    both(lambda d, a: d.matmul(a, a), (c,), (n,), what="matmul int64 wraps")
    c, n = pair([1.0, 0.0, 0.0, 1.0], (2, 2), dtypes.float32)
    c2, n2 = pair([3.0, 4.0], (1, 2), dtypes.float32)
    both(lambda d, a, b: d.matmul(d.expand(d.reshape(b, (1, 1, 2)), (3, 1, 2)), d.expand(d.reshape(a, (1, 2, 2)),
                                                                                         (3, 2, 2))),
         (c, c2), (n, n2), what="matmul expanded batch")


add("matmul.corners", check_matmul_wrap)


def check_conv(dtype, xshape, wshape, stride, padding, dilation, groups, layout):
    fx = values(dtype, numel(xshape), 131, special=False)
    fw = values(dtype, numel(wshape), 132, special=False)
    cx, nx = pair(fx, xshape, dtype, layout)
    cw, nw = pair(fw, wshape, dtype, "contig")
    rtol = {dtypes.float32: 1e-5, dtypes.float64: 1e-12}.get(dtype, TOL.get(dtype))
    fn = lambda d, x, w: d.conv(x, w, stride, padding, dilation, groups)  # noqa: E731
    both(fn, (cx, cw), (nx, nw), rtol,
         "conv %s x%s w%s s%s p%s d%s g%d" % (dtype.name, xshape, wshape, stride, padding, dilation, groups),
         _bound(fn, dtype, numel(wshape[1:]), cx, cw))


CONVS = [
    ((2, 3, 7, 6), (4, 3, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 3, 7, 6), (4, 3, 3, 2), (2, 1), ((1, 1), (2, 0)), (1, 2), 1),
    ((1, 4, 6, 6), (6, 2, 3, 3), (1, 2), ((1, 2), (1, 1)), (2, 1), 2),
    ((2, 4, 5, 5), (4, 1, 2, 2), (1, 1), ((0, 0), (1, 1)), (1, 1), 4),
    ((2, 3, 9), (4, 3, 3), (2,), ((1, 2),), (2,), 1),
    ((1, 4, 8), (2, 2, 1), (1,), ((0, 0),), (1,), 2),
    ((1, 1, 1, 1), (1, 1, 1, 1), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
]
for _dt in FLOATS:
    for _i, _c in enumerate(CONVS):
        add("conv.%s.%d" % (_dt.name, _i), check_conv, _dt, *(_c + ("contig",)))
    add("conv.%s.permuted" % _dt.name, check_conv, _dt, *(CONVS[1] + ("permuted",)))


def check_pool(op, dtype, xshape, kernel, stride, padding, dilation, layout):
    flat = values(dtype, numel(xshape), 141, special=False)
    if dtype.kind == "f":
        for i, v in ((3, NAN), (6, INF), (7, -INF), (11, -INF)):
            if i < len(flat):
                flat[i] = v
    cx, nx = pair(flat, xshape, dtype, layout)
    both(lambda d, x: d.pool(op, x, kernel, stride, padding, dilation), (cx,), (nx,), 0.0,
         "pool %s %s x%s k%s s%s p%s d%s" % (op, dtype.name, xshape, kernel, stride, padding, dilation))


POOLS = [
    ((2, 3, 6, 6), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ((1, 2, 7, 5), (3, 2), (2, 1), ((1, 1), (1, 1)), (1, 1)),
    ((1, 2, 7, 7), (2, 3), (1, 2), ((1, 1), (0, 0)), (2, 1)),
    ((2, 2, 9), (3,), (2,), ((1, 1),), (1,)),
    ((1, 1, 8), (2,), (3,), ((0, 0),), (2,)),
]
for _dt in FLOATS:
    for _op in POOL_OPS:
        for _i, _p in enumerate(POOLS):
            add("pool.%s.%s.%d" % (_op, _dt.name, _i), check_pool, _op, _dt, *(_p + ("contig",)))
        add("pool.%s.%s.flipped" % (_op, _dt.name), check_pool, _op, _dt, *(POOLS[1] + ("flipped",)))


# -- gather, scatter ----------------------------------------------------------------------------

def check_gather_scatter(dtype, layout):
    shape = (3, 5)
    cx, nx = pair(values(dtype, 15, 151), shape, dtype, layout)
    r = random.Random(152)
    for dim in range(2):
        ishape = (2, 4) if dim == 0 else (3, 3)
        n = shape[dim]
        idx = [r.randrange(n) for _ in range(numel(ishape))]
        ci, ni = pair(idx, ishape, dtypes.int64, "permuted")
        both(lambda d, x, i: d.gather(x, dim, i), (cx, ci), (nx, ni), what="gather %s dim %d" % (dtype.name, dim))
        cs, ns = pair(values(dtype, 15, 153), shape, dtype, "flipped")
        for mode in SCATTER_MODES:
            both(lambda d, x, i, s: d.scatter(x, dim, i, s, mode), (cx, ci, cs), (nx, ni, ns),
                 TOL[dtype] if mode == "add" and dtype in (dtypes.float16, dtypes.bfloat16) else 0.0,
                 "scatter %s %s dim %d" % (mode, dtype.name, dim))


for _dt in ALL:
    for _lay in ("contig", "strided"):
        add("gather_scatter.%s.%s" % (_dt.name, _lay), check_gather_scatter, _dt, _lay)


def check_scatter_duplicates():
    cx, nx = pair([0.0] * 4, (4,), dtypes.float32)
    ci, ni = pair([1, 1, 3, 1], (4,), dtypes.int64)
    cs, ns = pair([0.1, 0.2, 0.3, 1e8], (4,), dtypes.float32)
    both(lambda d, x, i, s: d.scatter(x, 0, i, s, "set"), (cx, ci, cs), (nx, ni, ns), what="set: last wins")
    both(lambda d, x, i, s: d.scatter(x, 0, i, s, "add"), (cx, ci, cs), (nx, ni, ns), what="add in double")
    cb, nb = pair([False, True, False], (3,), dtypes.bool_)
    ci, ni = pair([0, 0, 2], (3,), dtypes.int64)
    cs, ns = pair([True, True, False], (3,), dtypes.bool_)
    both(lambda d, x, i, s: d.scatter(x, 0, i, s, "add"), (cb, ci, cs), (nb, ni, ns), what="bool add is or")
    ck, nk = pair([120, 0], (2,), dtypes.int8)
    ci, ni = pair([0, 0], (2,), dtypes.int64)
    cs, ns = pair([100, 100], (2,), dtypes.int8)
    both(lambda d, x, i, s: d.scatter(x, 0, i, s, "add"), (ck, ci, cs), (nk, ni, ns), what="int8 add wraps")


add("scatter.duplicates", check_scatter_duplicates)


def check_index_errors():
    for dev in (CPU, NPD):
        x = dev.from_list([1.0, 2.0, 3.0], (3,), dtypes.float32)
        for bad in ([0, 3], [-1, 0]):
            i = dev.from_list(bad, (2,), dtypes.int64)
            with check.raises(ember.IndexOutOfRange, "gather: index %d is out of range for dim 0 of size 3"
                              % (3 if 3 in bad else -1)):
                dev.gather(x, 0, i)
            with check.raises(ember.IndexOutOfRange, "scatter: index"):
                dev.scatter(x, 0, i, x, "set")


add("index.errors", check_index_errors)


# -- the device as a whole ----------------------------------------------------------------------

def check_primitive_set():
    for name in PRIMITIVES:
        assert callable(getattr(NPD, name)), name
        assert getattr(NumPy, name) is not getattr(ember.Backend, name, None), name
    assert NumPy() == NumPy() and hash(NumPy()) == hash(NPD) and NumPy() != CPU
    assert repr(NPD) == "NumPy()"
    assert isinstance(NPD, ember.Backend)
    for op in BINARY_OPS:
        assert any(op in binary_ops(dt) for dt in ALL), op
    for op in UNARY_OPS:
        assert any(op in unary_ops(dt) for dt in ALL), op


add("device.primitives", check_primitive_set)


def check_frontend():
    # a few whole-API paths on the NumPy device against the Cpu device
    for dev_pair in ((CPU, NPD),):
        outs = []
        for dev in dev_pair:
            ember.seed(3)
            x = ember.randn(4, 6, device=dev)
            w = ember.randn(3, 6, device=dev)
            b = ember.randn(3, device=dev)
            y = F.linear(x, w, b).relu()
            z = F.log_softmax(y, dim=1)
            t = x.clone()
            t[1:3, ::2] = 5.0
            outs.append((z.tolist(), (x > 0).sum().item(), x.max(1).indices.tolist(), t.tolist(),
                         x.tolist(), x.cumsum(0).tolist(), x.sort(1, descending=True).indices.tolist()))
        a, b = outs
        check.assert_close(a[0], b[0], rtol=1e-5, atol=1e-6)
        assert a[1:] == b[1:]


add("frontend.paths", check_frontend)


def check_lenet_shapes():
    outs = []
    for dev in (CPU, NPD):
        ember.seed(1)
        x = ember.randn(2, 1, 12, 12, device=dev)
        w = ember.randn(4, 1, 5, 5, device=dev) * 0.2
        y = F.max_pool2d(F.conv2d(x, w, padding=2).relu(), 2)
        y = F.avg_pool2d(y, 2, padding=1)
        outs.append(y.tolist())
    check.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-6)


add("frontend.conv_pool", check_lenet_shapes)


def check_no_numpy_on_import():
    import subprocess
    code = ("import sys, ember, ember.accel; assert 'numpy' not in sys.modules, 'numpy imported'; "
            "ember.accel.NumPy; assert 'numpy' in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True)


add("import.lazy", check_no_numpy_on_import)


def test_numpy_backend(case):
    case.fn()

