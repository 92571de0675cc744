"""The C kernels (``ember._ckernels``, ext_c/) against the pure-Python Cpu, which defines the values.

Each case runs one op through ember's frontend on ``Cpu(kernels="c")`` and ``Cpu(kernels="python")``
with the same inputs, in contiguous and non-contiguous layouts (permuted, strided, flipped, offset,
expanded), and compares value by value: exactly (nan matches nan, and the sign of zero counts) for
elementwise ops, casts, reductions, movement and indexing; within a tolerance where the C kernels
accumulate differently (matmul, conv) or replace a composite (softmax, gelu, ...). Then: every
instruction set the CPU has, thread counts, EMBER_NUM_THREADS and EMBER_NO_C, mixing the two kinds of
Cpu device, the GIL being released, and a build with no C compiler giving the pure package.

No timing is asserted here (bench/cpu.py measures).
"""
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time
from array import array

import pytest

import ember
import ember.nn.functional as F
from ember.backend import BINARY_OPS, UNARY_OPS
from ember.backends.cpu import ckernels
from ember.elementwise import binary, unary

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PURE = ember.Cpu(kernels="python")
if ckernels.available():
    C = ember.Cpu(kernels="c")
else:  # every case below skips, saying why
    C = None

NAN, INF = float("nan"), float("inf")
FLOATS = ("float32", "float64")
INTS = ("int8", "int32", "int64")
LAYOUTS = ("contig", "permuted", "strided", "flipped", "offset")


@pytest.fixture(autouse=True)
def _need_c():
    if C is None:
        pytest.skip("the C kernels are unavailable: %s" % ckernels.reason())


# -- inputs and comparison -------------------------------------------------------------------------

def values(dtype, n, seed, special=True):
    rnd = random.Random(seed)
    if dtype in FLOATS or dtype in ("float16", "bfloat16"):
        out = [rnd.uniform(-4, 4) for _ in range(n)]
        if special and n >= 8:
            extras = [NAN, INF, -INF, 0.0, -0.0, 1e-30, -2.5, 0.5, 100.0, -100.0]
            for i, v in enumerate(extras[:n // 2]):
                out[(i * 7 + 3) % n] = v
        return out
    if dtype == "bool":
        return [rnd.random() < 0.5 for _ in range(n)]
    bits = {"int8": 8, "int32": 32, "int64": 64}[dtype]
    lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    out = [rnd.randint(-20, 20) for _ in range(n)]
    if special and n >= 8:
        for i, v in enumerate([lo, hi, 0, -1, 1, lo + 1][:n // 2]):
            out[(i * 5 + 2) % n] = v
    return out


def build(dev, flat, shape, dtype, layout="contig"):
    """A tensor of ``shape`` holding ``flat`` (row-major), stored in the given layout."""
    if layout == "contig" or len(shape) == 0 or not flat:
        return ember.tensor(flat, dtype=dtype, device=dev).reshape(shape)
    if layout == "permuted" and len(shape) >= 2:
        back = tuple(range(len(shape) - 1, -1, -1))
        t = ember.tensor(flat, dtype=dtype, device=dev).reshape(shape)
        src = t.permute(back).tolist()  # the transpose's values, row-major
        return ember.tensor(src, dtype=dtype, device=dev).permute(back)
    if layout == "strided":
        wide = []
        for v in flat:
            wide += [v, v]
        return ember.tensor(wide, dtype=dtype, device=dev).reshape(shape[:-1] + (2 * shape[-1],))[..., ::2]
    if layout == "flipped":
        rev = list(reversed(flat))
        return ember.tensor(rev, dtype=dtype, device=dev).reshape(shape).flip(tuple(range(len(shape))))
    if layout == "offset":
        pad = flat[:1] * 3
        return ember.tensor(pad + flat, dtype=dtype, device=dev)[3:].reshape(shape)
    return ember.tensor(flat, dtype=dtype, device=dev).reshape(shape)


def both(flat, shape, dtype, layout="contig"):
    return build(C, flat, shape, dtype, layout), build(PURE, flat, shape, dtype, layout)


def flatten(v):
    if type(v) is not list:
        return [v]
    out = []
    for x in v:
        out += flatten(x)
    return out


def same(got, want, rtol=0.0, atol=0.0, what="", bound=None):
    """Value by value; exact unless a tolerance is given (then nan, inf and signs must still match).
    With ``bound`` (a tensor of the same shape), the allowed error is rtol * |bound| + atol: for sums
    of products, whose float32 rounding scales with the sum of the terms' magnitudes, not the result."""
    assert type(got) is ember.Tensor and type(want) is ember.Tensor, what
    assert got.shape == want.shape, "%s: shape %s != %s" % (what, got.shape, want.shape)
    assert got.dtype is want.dtype, "%s: dtype %s != %s" % (what, got.dtype, want.dtype)
    gv, wv = flatten(got.tolist()), flatten(want.tolist())
    bv = flatten(bound.tolist()) if bound is not None else None
    for i, (g, w) in enumerate(zip(gv, wv)):
        assert type(g) is type(w), "%s[%d]: %r (%s) != %r (%s)" % (what, i, g, type(g).__name__, w,
                                                                   type(w).__name__)
        if type(w) is float:
            if w != w:
                assert g != g, "%s[%d]: %r, expected nan" % (what, i, g)
            elif rtol or atol:
                scale = abs(bv[i]) if bv is not None else abs(w)
                assert abs(g - w) <= atol + rtol * scale or g == w, "%s[%d]: %r != %r" % (what, i, g, w)
            else:
                assert g == w and math.copysign(1.0, g) == math.copysign(1.0, w), \
                    "%s[%d]: %r != %r" % (what, i, g, w)
        else:
            assert g == w, "%s[%d]: %r != %r" % (what, i, g, w)
    # the C device keeps its storage: arrays for numeric dtypes, lists of bools for bool (a C result's
    # list keeps its bytes: cstorage.Bools)
    if got.device is C or type(got.device) is type(C):
        data = got._data.data
        if got.dtype is ember.bool:
            assert isinstance(data, list) and all(type(v) is bool for v in data), what
        elif got.dtype.name in FLOATS + INTS:
            assert type(data) is array, "%s: stored as %s" % (what, type(data).__name__)


# -- elementwise -------------------------------------------------------------------------------------

def unary_cases():
    cases = []
    for op in UNARY_OPS:
        if op in ("isnan", "isinf", "logical_not"):
            dts = FLOATS + INTS + ("bool",)
        elif op == "bitwise_not":
            dts = INTS + ("bool",)
        elif op in ("neg", "abs", "sign"):
            dts = FLOATS + INTS + ("float16",)
        else:
            dts = FLOATS + ("float16", "int32")
        for dt in dts:
            cases.append((op, dt))
    return cases


@pytest.mark.parametrize("op,dtype", unary_cases())
@pytest.mark.parametrize("layout", ("contig", "permuted", "flipped"))
def test_unary(op, dtype, layout):
    shape = (5, 7)
    flat = values(dtype, 35, hash((op, dtype)) & 0xFFFF)
    if op in ("bitwise_not",) and dtype == "bool":
        xc, xp = both(flat, shape, dtype, layout)
        same(xc.bitwise_not(), xp.bitwise_not(), what="bitwise_not")
        return
    xc, xp = both(flat, shape, dtype, layout)
    got, want = unary(op, xc), unary(op, xp)
    if op in ("floor", "ceil", "round", "trunc") and dtype in FLOATS:
        # the conformance suite asks for IEEE signed zeros here (ceil(-0.3) is -0.0), which the C
        # kernels give; compare values only, whichever way the pure kernel signs its zeros
        same(got + 0.0, want + 0.0, what="%s %s %s" % (op, dtype, layout))
        return
    same(got, want, what="%s %s %s" % (op, dtype, layout))


def binary_cases():
    cases = []
    for op in BINARY_OPS:
        for dt in FLOATS + INTS + ("bool", "float16"):
            if op in ("and", "or", "xor") and dt in FLOATS + ("float16",):
                continue
            if op in ("lshift", "rshift") and dt not in INTS:
                continue
            cases.append((op, dt))
    return cases


def binary_operands(op, dtype, n, seed):
    a = values(dtype, n, seed)
    b = values(dtype, n, seed + 1)
    if dtype in INTS and op in ("lshift", "rshift"):
        rnd = random.Random(seed)
        b = [rnd.choice([-1, 0, 1, 3, 7, 31, 63, 64, 100]) for _ in range(n)]
    if dtype in INTS and op == "pow":
        rnd = random.Random(seed)
        b = [rnd.choice([-3, -1, 0, 1, 2, 3, 5, 40]) for _ in range(n)]
    if dtype in INTS and op in ("floordiv", "mod"):
        b[0] = 0
        b[1] = -1
    return a, b


@pytest.mark.parametrize("op,dtype", binary_cases())
@pytest.mark.parametrize("layout", ("contig", "permuted", "offset"))
def test_binary(op, dtype, layout):
    shape = (4, 9)
    a, b = binary_operands(op, dtype, 36, hash((op, dtype)) & 0xFFFF)
    ac, ap = both(a, shape, dtype, layout)
    bc, bp = both(b, shape, dtype, "strided")
    same(binary(op, ac, bc), binary(op, ap, bp), what="%s %s %s" % (op, dtype, layout))


@pytest.mark.parametrize("op,dtype", binary_cases())
def test_binary_scalar_and_broadcast(op, dtype):
    a, b = binary_operands(op, dtype, 12, 7)
    ac, ap = both(a, (3, 4), dtype)
    bc, bp = both(b[:4], (4,), dtype)
    same(binary(op, ac, bc), binary(op, ap, bp), what="broadcast row")
    cc, cp = both(b[:3], (3, 1), dtype)
    same(binary(op, ac, cc), binary(op, ap, cp), what="broadcast column")
    scalars = {"bool": [True, False], "float32": [2.5, -0.0, INF, NAN, 3], "float64": [2.5, -1e300, 0],
               "float16": [1.5], "int8": [3, 0, -1, 300, -1000], "int32": [7, 0, -1, 1 << 40],
               "int64": [5, 0, -1, 1 << 70, -(1 << 80)]}[dtype]
    if op in ("lshift", "rshift"):
        scalars = [0, 3, 64, -1]
    bits = {"int8": 8, "int32": 32, "int64": 64}.get(dtype)
    for s in scalars:
        if bits and op not in ("div", "atan2") and type(s) is int and not -(1 << (bits - 1)) <= s < 1 << (bits - 1):
            # a Python int outside the dtype the op computes in is refused alike by both
            # (docs/architecture.md §3; div and atan2 compute in a float dtype)
            for x in (ac, ap):
                with pytest.raises(ember.ArgumentError, match="does not fit %s" % dtype):
                    binary(op, x, s)
            continue
        same(binary(op, ac, s), binary(op, ap, s), what="%s tensor-scalar %r" % (op, s))
        same(binary(op, s, ac), binary(op, s, ap), what="%s scalar-tensor %r" % (op, s))


@pytest.mark.parametrize("dtype", FLOATS + INTS + ("bool", "float16"))
def test_where(dtype):
    cond = values("bool", 24, 3)
    a, b = values(dtype, 24, 4), values(dtype, 24, 5)
    cc, cp = both(cond, (2, 3, 4), "bool", "permuted")
    ac, ap = both(a, (2, 3, 4), dtype, "strided")
    bc, bp = both(b[:4], (4,), dtype)
    same(ember.where(cc, ac, bc), ember.where(cp, ap, bp), what="where")


@pytest.mark.parametrize("src", FLOATS + INTS + ("bool", "float16", "bfloat16"))
@pytest.mark.parametrize("dst", FLOATS + INTS + ("bool", "float16"))
def test_cast(src, dst):
    flat = values(src, 30, 11)
    if src in FLOATS:
        flat[:8] = [1e20, -1e20, 3e9, -3e9, 200.7, -129.5, 2.0 ** 63, -(2.0 ** 64) * 3]
    xc, xp = both(flat, (5, 6), src, "permuted")
    same(xc.to(dst), xp.to(dst), what="cast %s -> %s" % (src, dst))


# -- reductions ------------------------------------------------------------------------------------

@pytest.mark.parametrize("op", ("sum", "prod", "max", "min", "argmax", "argmin", "any", "all"))
@pytest.mark.parametrize("dtype", FLOATS + INTS + ("bool",))
def test_reduce(op, dtype):
    flat = values(dtype, 60, 21, special=False)
    if dtype in FLOATS:
        flat = [round(v, 1) for v in flat]  # ties for max/argmax
        flat[7] = NAN
        flat[31] = -0.0
    if op == "prod" and dtype in FLOATS:
        flat = [v / 3 for v in flat]
    for layout in ("contig", "permuted", "strided"):
        xc, xp = both(flat, (3, 4, 5), dtype, layout)
        for dim in range(3):
            same(_reduce(xc, op, dim), _reduce(xp, op, dim), what="%s %s dim %d %s" % (op, dtype, dim, layout))


def _reduce(t, op, dim):
    dev = t.device
    out = dev.reduce(op, t._data, dim)
    shape = t.shape[:dim] + (1,) + t.shape[dim + 1:]
    if op in ("argmax", "argmin"):
        dtype = ember.int64
    elif op in ("any", "all"):
        dtype = ember.bool
    elif op in ("sum", "prod") and t.dtype is ember.bool:
        dtype = ember.int64
    else:
        dtype = t.dtype
    return ember.Tensor(out, shape, dtype, dev)


def test_reduce_frontend_and_empty():
    xc, xp = both(values("float32", 24, 2), (2, 3, 4), "float32", "permuted")
    same(xc.sum(), xp.sum(), rtol=1e-6, what="sum all")
    same(xc.mean(1), xp.mean(1), rtol=1e-6, what="mean")
    same(xc.max(2).values, xp.max(2).values, what="max values")
    same(xc.max(2).indices, xp.max(2).indices, what="max indices")
    ec, ep = both([], (2, 0, 3), "float32")
    same(ec.sum(1), ep.sum(1), what="empty sum")
    same(ec.prod(1), ep.prod(1), what="empty prod")


# -- matmul, conv, pooling ------------------------------------------------------------------------------

MATMUL_SHAPES = [((1, 5), (5, 3)), ((3, 1), (1, 4)), ((7, 33), (33, 9)), ((2, 130), (130, 70)),
                 ((40, 300), (300, 41)), ((130, 64), (64, 130)), ((2, 3, 17, 8), (2, 3, 8, 19)),
                 ((4, 6, 5), (5, 7)), ((0, 4), (4, 3)), ((3, 0), (0, 4))]


@pytest.mark.parametrize("dtype", FLOATS + INTS + ("float16",))
@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(dtype, sa, sb):
    from ember.shapes import numel
    a = values(dtype, numel(sa), 1, special=False)
    b = values(dtype, numel(sb), 2, special=False)
    if dtype in INTS:
        bits = {"int8": 8, "int32": 32, "int64": 64}[dtype]
        half = 1 << (bits - 1)
        a = [(v * 1000003 + half) % (2 * half) - half for v in a]  # large values (in range) whose products wrap
    tol = {"float32": 3e-6, "float64": 1e-14, "float16": 2e-3}.get(dtype, 0)
    for la, lb in (("contig", "contig"), ("permuted", "permuted"), ("strided", "flipped")):
        ac, ap = both(a, sa, dtype, la)
        bc, bp = both(b, sb, dtype, lb)
        bound = ap.abs() @ bp.abs() if tol else None
        same(ac @ bc, ap @ bp, rtol=tol, atol=tol, bound=bound,
             what="matmul %s %s@%s %s/%s" % (dtype, sa, sb, la, lb))


def test_matmul_vectors_and_transposed_weight():
    a = values("float32", 64, 3, special=False)
    w = values("float32", 64 * 48, 4, special=False)
    ac, ap = both(a, (64,), "float32")
    wc, wp = both(w, (48, 64), "float32")
    same(ac @ wc.T, ap @ wp.T, rtol=3e-6, bound=ap.abs() @ wp.T.abs(), what="vector @ w.T")
    same(wc @ ac, wp @ ap, rtol=3e-6, bound=wp.abs() @ ap.abs(), what="w @ vector")


CONVS = [
    # (x shape, w shape, stride, padding, dilation, groups)
    ((1, 1, 8, 8), (2, 1, 3, 3), 1, 0, 1, 1),
    ((2, 3, 9, 7), (4, 3, 3, 2), 1, 1, 1, 1),
    ((1, 4, 10, 10), (6, 2, 3, 3), 2, 1, 1, 2),
    ((1, 2, 11, 9), (3, 2, 3, 3), (2, 1), (2, 0), (2, 1), 1),
    ((2, 6, 7, 7), (6, 1, 3, 3), 1, "same", 1, 6),
    ((1, 8, 30, 30), (16, 8, 5, 5), 1, 2, 1, 1),
]


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv2d(dtype, case):
    from ember.shapes import numel
    xs, ws, stride, padding, dilation, groups = CONVS[case]
    x = values(dtype, numel(xs), case, special=False)
    w = values(dtype, numel(ws), case + 50, special=False)
    tol = {"float32": 3e-6, "float64": 1e-14, "float16": 3e-3}[dtype]
    xc, xp = both(x, xs, dtype, "permuted")
    wc, wp = both(w, ws, dtype)
    bc, bp = both(values(dtype, ws[0], 9, special=False), (ws[0],), dtype)
    args = (stride, padding, dilation, groups)
    bound = F.conv2d(xp.abs(), wp.abs(), bp.abs(), *args)
    same(F.conv2d(xc, wc, bc, *args), F.conv2d(xp, wp, bp, *args), rtol=tol, atol=tol, bound=bound,
         what="conv2d %s" % (CONVS[case],))


def test_conv1d():
    x = values("float32", 2 * 3 * 20, 5, special=False)
    w = values("float32", 4 * 3 * 5, 6, special=False)
    xc, xp = both(x, (2, 3, 20), "float32", "strided")
    wc, wp = both(w, (4, 3, 5), "float32")
    for stride, padding, dilation in ((1, 0, 1), (2, 2, 1), (1, 3, 2)):
        bound = F.conv1d(xp.abs(), wp.abs(), None, stride, padding, dilation)
        same(F.conv1d(xc, wc, None, stride, padding, dilation), F.conv1d(xp, wp, None, stride, padding, dilation),
             rtol=3e-6, bound=bound, what="conv1d")


@pytest.mark.parametrize("dtype", ("float32", "float64", "float16"))
def test_pooling(dtype):
    x = values(dtype, 2 * 3 * 9 * 8, 8)
    xc, xp = both(x, (2, 3, 9, 8), dtype, "permuted")
    for k, s, p, d in ((2, None, 0, 1), (3, 2, 1, 1), (3, 1, 1, 2), ((2, 3), (1, 2), (1, 1), 1)):
        same(F.max_pool2d(xc, k, s, p, d), F.max_pool2d(xp, k, s, p, d), what="max_pool2d %s" % ((k, s, p, d),))
        if d == 1:
            same(F.avg_pool2d(xc, k, s, p), F.avg_pool2d(xp, k, s, p), what="avg_pool2d")
    yc, yp = both(x[:2 * 3 * 12], (2, 3, 12), dtype, "strided")
    same(F.max_pool1d(yc, 3, 2, 1), F.max_pool1d(yp, 3, 2, 1), what="max_pool1d")
    same(F.avg_pool1d(yc, 4), F.avg_pool1d(yp, 4), what="avg_pool1d")


# -- movement and indexing ---------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS + INTS + ("bool", "float16"))
def test_movement(dtype):
    flat = values(dtype, 60, 31)
    for layout in LAYOUTS:
        xc, xp = both(flat, (3, 4, 5), dtype, layout)
        same(xc.reshape(12, 5), xp.reshape(12, 5), what="reshape %s" % layout)
        same(xc.permute(2, 0, 1).reshape(-1), xp.permute(2, 0, 1).reshape(-1), what="permute+reshape")
        same(ember.cat([xc, xc[:, 1:3], xc.flip(1)], 1), ember.cat([xp, xp[:, 1:3], xp.flip(1)], 1), what="cat")
        yc, yp = xc.clone(), xp.clone()
        vc, vp = both(values(dtype, 6, 2), (3, 2), dtype, "flipped")
        yc[:, 1:4:2, 1] = vc
        yp[:, 1:4:2, 1] = vp
        same(yc, yp, what="slice_assign %s" % layout)
        same(xc, xp, what="slice_assign left its input alone")
        if dtype != "float16":
            assert xc.to_bytes() == xp.to_bytes(), "to_bytes %s %s" % (dtype, layout)
    tc = ember.Tensor(C.from_bytes(xp.to_bytes(), (3, 4, 5), xp.dtype), (3, 4, 5), xp.dtype, C)
    same(tc, xp.contiguous(), what="from_bytes")


@pytest.mark.parametrize("dtype", FLOATS + INTS + ("bool", "float16"))
def test_gather_scatter(dtype):
    flat = values(dtype, 30, 41)
    xc, xp = both(flat, (5, 6), dtype, "permuted")
    rnd = random.Random(5)
    for dim in (0, 1):
        idx = [rnd.randrange(xc.shape[dim]) for _ in range(4 * 3)]
        ic, ip = both(idx, (4, 3), "int64", "strided")
        same(xc.gather(dim, ic), xp.gather(dim, ip), what="gather dim %d" % dim)
        src = values(dtype, 4 * 6, 43)
        sc, sp = both(src, (4, 6), dtype, "flipped")
        same(xc.scatter(dim, ic, sc), xp.scatter(dim, ip, sp), what="scatter set dim %d" % dim)
        if dtype != "bool":
            same(xc.scatter_add(dim, ic, sc), xp.scatter_add(dim, ip, sp), what="scatter add dim %d" % dim)
    bad_c, bad_p = both([0, 1, 9, 2], (1, 4), "int64")
    for fn in (lambda x, i: x.gather(0, i), lambda x, i: x.scatter(0, i, x[:1, :4])):
        with pytest.raises(ember.IndexOutOfRange) as got:
            fn(xc, bad_c)
        with pytest.raises(ember.IndexOutOfRange) as want:
            fn(xp, bad_p)
        assert str(got.value) == str(want.value)


def test_scatter_add_float32_rounds_once():
    # repeated adds at one position: Python adds in double and rounds once; so must C
    xc, xp = both([0.0] * 3, (3,), "float32")
    src = [0.1] * 50 + [1e8, -1e8]
    ic, ip = both([1] * 52, (52,), "int64")
    sc, sp = both(src, (52,), "float32")
    same(xc.scatter_add(0, ic, sc), xp.scatter_add(0, ip, sp), what="scatter_add f32")


# -- fused composites ----------------------------------------------------------------------------------

def test_fused_composites():
    flat = values("float32", 6 * 37, 51)
    flat[40:45] = [50.0, -50.0, 80.0, -90.0, 1e-3]
    for layout in ("contig", "permuted", "strided"):
        xc, xp = both(flat, (6, 37), "float32", layout)
        tol = dict(rtol=1e-5, atol=1e-6)
        same(F.softmax(xc, -1), F.softmax(xp, -1), **tol, what="softmax")
        same(F.log_softmax(xc, 1), F.log_softmax(xp, 1), rtol=1e-5, atol=2e-6, what="log_softmax")
        same(F.softmax(xc, 0), F.softmax(xp, 0), **tol, what="softmax dim 0 (composite)")
        same(F.gelu(xc), F.gelu(xp), **tol, what="gelu")
        same(F.gelu(xc, approximate="tanh"), F.gelu(xp, approximate="tanh"), **tol, what="gelu tanh")
        same(F.relu(xc), F.relu(xp), what="relu")
        wc, wp = both(values("float32", 37, 3, special=False), (37,), "float32")
        bc, bp = both(values("float32", 37, 4, special=False), (37,), "float32")
        same(F.layer_norm(xc, 37, wc, bc), F.layer_norm(xp, 37, wp, bp), rtol=1e-4, atol=1e-5, what="layer_norm")
        same(F.layer_norm(xc, (37,)), F.layer_norm(xp, (37,)), rtol=1e-4, atol=1e-5, what="layer_norm plain")
        lc, lp = both(values("float32", 37 * 11, 5, special=False), (11, 37), "float32", layout)
        lb_c, lb_p = both(values("float32", 11, 6, special=False), (11,), "float32")
        same(F.linear(xc, lc, lb_c), F.linear(xp, lp, lb_p), rtol=1e-5, atol=1e-5, what="linear")
        same(F.linear(xc[0], lc), F.linear(xp[0], lp), rtol=1e-5, atol=1e-5, what="linear 1-d")
    specials = [[NAN, 1.0, 2.0], [INF, 1.0, 0.0], [-INF, -INF, -INF], [-INF, 0.0, 1.0]]
    for row in specials:
        xc, xp = both(row, (1, 3), "float32")
        same(F.softmax(xc, -1), F.softmax(xp, -1), rtol=1e-6, atol=1e-6, what="softmax %r" % (row,))
        same(F.log_softmax(xc, -1), F.log_softmax(xp, -1), rtol=1e-6, atol=1e-6, what="log_softmax %r" % (row,))
    xc, xp = both([NAN, INF, -INF, 0.0, -0.0, 1e30, -1e30], (7,), "float32")
    same(F.gelu(xc), F.gelu(xp), rtol=1e-6, atol=1e-6, what="gelu specials")
    same(F.gelu(xc, approximate="tanh"), F.gelu(xp, approximate="tanh"), rtol=1e-6, atol=1e-6, what="gelu tanh specials")


def test_fused_paths_are_the_c_devices_only():
    from ember.composite import FUSED, OVERRIDES, resolve
    assert FUSED.get(type(C), {}).get("softmax") is not None and type(C) not in OVERRIDES
    assert resolve(type(PURE), "softmax") == (None, None)
    calls = []

    def mine(x, dim=-1):
        calls.append(dim)
        return x
    ember.Cpu.override("softmax", mine)  # a user's override on ember.Cpu reaches both kinds
    try:
        x = ember.ones(2, 3, device=C)
        assert F.softmax(x, 1) is x and F.softmax(x.to(ember.float64)).dtype is ember.float64
        assert calls == [1, -1]
    finally:
        ember.Cpu.override("softmax", None)
    assert F.softmax(ember.ones(2, 2, device=C)).tolist() == [[0.5, 0.5], [0.5, 0.5]]


# -- instruction sets, threads, settings --------------------------------------------------------------------

def _work():
    """A few ops whose results should not depend on the ISA or the thread count."""
    g = ember.Generator(3)
    out = []
    a = ember.randn(97, 203, generator=g, device=C)
    b = ember.randn(203, 150, generator=g, device=C)
    out.append(a @ b)
    out.append(F.gelu(a))
    out.append(F.softmax(a, -1))
    out.append(a.exp() + a * 2 - (a > 0).float())
    out.append(a.sum(0))
    x = ember.randn(2, 8, 20, 20, generator=g, device=C)
    w = ember.randn(16, 8, 3, 3, generator=g, device=C)
    out.append(F.max_pool2d(F.conv2d(x, w, padding=1), 2))
    return out


def test_every_instruction_set_gives_the_same_values():
    first = ckernels.isa()
    names = ckernels.ISA_NAMES[:ckernels.native()[0].emb_best_isa() + 1]
    try:
        results = {}
        for name in names:
            ckernels.set_isa(name)
            assert ckernels.isa() == name
            results[name] = _work()
    finally:
        ckernels.set_isa(first)
    ref = results[names[0]]
    for name in names[1:]:
        for i, (got, want) in enumerate(zip(results[name], ref)):
            same(got, want, rtol=5e-5, atol=5e-5, what="%s vs %s, result %d" % (name, names[0], i))
    with pytest.raises(ValueError):
        ckernels.set_isa("sse9")


def test_thread_counts_give_the_same_values():
    before = ckernels.set_num_threads(1)
    try:
        one = _work()
        ckernels.set_num_threads(3)
        three = _work()
    finally:
        ckernels.set_num_threads(before)
    for i, (got, want) in enumerate(zip(three, one)):
        same(got, want, rtol=5e-5, atol=5e-5, what="3 threads vs 1, result %d" % i)


def _python(code, **env):
    full = dict(os.environ)
    full.update(env)
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=full, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    return run.stdout.strip()


def test_environment_settings():
    code = ("import ember; from ember.backends.cpu import ckernels; "
            "print(ember.Cpu().kernels, ember.Cpu(kernels='c').kernels, ckernels.num_threads())")
    assert _python(code, EMBER_NUM_THREADS="3") == "c c 3"
    assert _python(code, EMBER_NUM_THREADS="1", EMBER_NO_C="1") == "python c 1"
    assert _python(code, EMBER_NO_C="0", EMBER_NUM_THREADS="bogus").startswith("c c ")


def test_device_kinds_are_one_device():
    assert C == PURE and hash(C) == hash(PURE) and C.kernels == "c" and PURE.kernels == "python"
    assert isinstance(C, ember.Cpu) and type(ember.Cpu(kernels="python")) is ember.Cpu
    with pytest.raises(ember.ArgumentError):
        ember.Cpu(kernels="fortran")
    a = values("float32", 12, 61)
    b = values("float32", 12, 62)
    ac, ap = both(a, (3, 4), "float32", "permuted")
    bc, bp = both(b, (3, 4), "float32")
    want = ap * bp + ap
    same(ac * bp + ap, want, what="C op on a pure tensor")
    same(ap * bc + ac, want, what="pure op on a C tensor")
    same(ap @ bc.T, ap @ bp.T, what="pure matmul on C storage")
    mask_c = ac > 0  # bools from C, used by the pure device
    same(ember.where(mask_c.to(PURE), ap, bp), ember.where(ap > 0, ap, bp), what="mixed where")
    gathered = ap.gather(1, ember.tensor([[0, 1]] * 3, device=C))
    assert gathered.tolist() == ap.gather(1, ember.tensor([[0, 1]] * 3, device=PURE)).tolist()
    assert [type(v) for v in flatten((mask_c & (bp > 0)).tolist())] == [bool] * 12
    xc = ember.randn(1, 2, 6, 6, device=C)
    wp = ember.randn(3, 2, 3, 3, device=PURE)
    xp = ember.tensor(xc.tolist(), device=PURE)
    same(F.conv2d(xc, wp), F.conv2d(xp, wp), rtol=2e-5, atol=2e-5, what="conv, C input and pure weight")
    same(F.conv2d(xp, wp.to(ember.float32)), F.conv2d(xp, wp), what="conv, pure")


def test_kernels_release_the_gil():
    a = ember.randn(700, 700, device=C)
    inside = threading.Event()
    done = threading.Event()
    before = ckernels.set_num_threads(1)
    count = [0]

    def worker():
        inside.set()
        for _ in range(5):
            a @ a
        done.set()
    try:
        t = threading.Thread(target=worker)
        t.start()
        inside.wait()
        while not done.is_set():
            count[0] += 1
            time.sleep(0)
        t.join()
    finally:
        ckernels.set_num_threads(before)
    # with the GIL held through each matmul the loop could only run between the calls
    assert count[0] > 50, "the main thread ran %d times while 5 matmuls ran" % count[0]


def test_pure_build_without_a_compiler():
    """``CC=false pip install .`` into a scratch venv: the build succeeds and ember is pure Python."""
    venv_dir = tempfile.mkdtemp(prefix="ember-purebuild-")
    src = os.path.join(venv_dir, "src")
    try:
        try:
            shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
                ".venv", "node_modules", ".git", "build", "dist", "*.egg-info", "_ckernels*", "__pycache__"))
            subprocess.run([sys.executable, "-m", "venv", os.path.join(venv_dir, "venv")], check=True,
                           capture_output=True, timeout=300)
        except (OSError, subprocess.SubprocessError) as e:
            pytest.skip("cannot make a scratch venv here: %s" % (e,))
        py = os.path.join(venv_dir, "venv", "bin", "python")
        env = dict(os.environ, CC="false", PIP_DISABLE_PIP_VERSION_CHECK="1")
        env.pop("EMBER_PURE", None)
        # the build backend's requirements come from the index (setuptools, cffi), as for any user
        run = subprocess.run([py, "-m", "pip", "install", "-v", src], capture_output=True, text=True,
                             env=env, timeout=900, cwd=venv_dir)
        if run.returncode != 0 and ("Could not find a version" in run.stderr or "connection" in run.stderr.lower()
                                     or "Name or service not known" in run.stderr):
            print("pip could not reach a package index:", run.stderr[-2000:])
            pytest.skip("pip cannot fetch the build requirements here: %s" % run.stderr.strip()[-300:])
        assert run.returncode == 0, run.stdout + run.stderr
        assert "building the pure-Python package" in run.stdout + run.stderr, run.stdout[-3000:]
        check = ("import ember, ember.backends.cpu.ckernels as k; x = ember.tensor([1.0, 2.0]); "
                 "print(type(ember.Cpu()).__name__, k.available(), (x @ x).item())")
        out = subprocess.run([py, "-c", check], capture_output=True, text=True, cwd=venv_dir, timeout=300)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == ["Cpu", "False", "5.0"], out.stdout
        try:
            subprocess.run([py, "-c", "import ember._ckernels"], check=True, capture_output=True, cwd=venv_dir)
            raise AssertionError("the pure build shipped ember._ckernels")
        except subprocess.CalledProcessError:
            pass
    finally:
        shutil.rmtree(venv_dir, ignore_errors=True)


def test_reused_output_buffers_never_change_a_live_tensor():
    """Large outputs come from a pool of arrays handed out again only once nothing refers to them."""
    from ember.backends.cpu import cdevice, pool
    n = 1 << 16
    x = ember.randn(n, device=C)
    cdevice.release_buffers()
    kept = [F.gelu(x), x * 2.0, x + x, F.softmax(x, -1), x.exp()]
    snapshots = [t.tolist() for t in kept]
    view = (x * 3.0)[5:]  # only a view refers to this output's array
    view_values = view.tolist()
    data = (x - 1.0)._data.data  # only a bare reference to the array
    data_values = data.tolist()
    for _ in range(3):
        for t in (F.gelu(x), x * 2.0, x + x, F.softmax(x, -1), x.exp(), x * 3.0, x - 1.0):
            del t
        junk = [x * 5.0 for _ in range(6)]
        del junk
    assert [t.tolist() for t in kept] == snapshots
    assert view.tolist() == view_values
    assert data.tolist() == data_values
    if pool._pool_state["base"] is not None:
        pooled = pool._pool[("f", n)]
        assert 1 <= len(pooled) <= pool._POOL_PER_SIZE
        b = x * 7.0
        assert any(b._data.data is p for p in pooled), "a released output array should be reused"
        assert all(t._data.data is not b._data.data for t in kept)
    cdevice.release_buffers()
