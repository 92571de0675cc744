"""Requests beyond what a tensor, a dtype or a device holds are refused, never answered silently:
bool masks whose shape does not match the indexed dims (reads and writes), Python ints outside a
dtype's range (creation, assignment, arithmetic: docs/architecture.md §3), creation requests beyond
the device's capacity (refused at once, §6); and int sums that count in int64 a chunk at a time."""
import time

import ember
from ember import reduction
from harness import check

PARAMETERS = ("device", "case")


class _Index:
    """``IX[:, m]`` is the index object itself (MicroPython cannot call ``slice()``)."""

    def __getitem__(self, index):
        return index


IX = _Index()


class Case:
    def __init__(self, name, fn):
        self.name = name
        self.fn = fn  # fn(device) checks itself

    def __repr__(self):
        return "Case(%s)" % self.name


def _refused(kind, contains, fn):
    with check.raises(kind, contains) as caught:
        fn()
    check.assert_true(isinstance(caught.value, ember.EmberError), "%r is not an ember.EmberError" % caught.value)
    return caught.value


# -- bool masks -----------------------------------------------------------------------------------

def _t(d, values, dtype=None):
    return ember.tensor(values, dtype=dtype, device=d)


def _mask(d, values):
    return _t(d, values, ember.bool)


def _bad_mask(index_of, shape=(3,)):
    def run(d):
        x = ember.arange(9, device=d).reshape(3, 3) if shape == (3, 3) else _t(d, [10.0, 20.0, 30.0])
        error = _refused(IndexError, "index: expected a bool mask of shape", lambda: x[index_of(d)])
        check.assert_true(isinstance(error, ember.IndexOutOfRange), "not an IndexOutOfRange: %r" % error)
    return run


def _bad_mask_write(index_of, value):
    def run(d):
        x = _t(d, [1.0, 2.0, 3.0])

        def write():
            x[index_of(d)] = value(d) if callable(value) else value
        _refused(ember.IndexOutOfRange, "index: expected a bool mask of shape (3,)", write)
        check.assert_equal(x, [1.0, 2.0, 3.0])  # nothing written
    return run


def _good_mask(index_of, expected):
    def run(d):
        x = ember.arange(9, device=d).reshape(3, 3)
        check.assert_equal(x[index_of(d)], expected)
    return run


def _good_mask_write(d):
    x = ember.arange(9, device=d).reshape(3, 3)
    x[_mask(d, [[True, False, False], [False, False, False], [False, False, True]])] = -1
    check.assert_equal(x, [[-1, 1, 2], [3, 4, 5], [6, 7, -1]])
    x[:, _mask(d, [False, True, False])] = 0
    check.assert_equal(x, [[-1, 0, 2], [3, 0, 5], [6, 0, -1]])


MASK_CASES = [
    Case("mask.read.short", _bad_mask(lambda d: _mask(d, [True, False]))),
    Case("mask.read.long", _bad_mask(lambda d: _mask(d, [True, False, True, True]))),
    Case("mask.read.list", _bad_mask(lambda d: [True, False])),
    Case("mask.read.2x2_of_3x3", _bad_mask(lambda d: _mask(d, [[False, True], [True, False]]), (3, 3))),
    Case("mask.read.3x2_of_3x3", _bad_mask(lambda d: _mask(d, [[False, True]] * 3), (3, 3))),
    Case("mask.read.dim1", _bad_mask(lambda d: IX[:, _mask(d, [True, False])], (3, 3))),
    Case("mask.read.after_int", _bad_mask(lambda d: (1, _mask(d, [True, True, False, False])), (3, 3))),
    Case("mask.read.after_none", _bad_mask(lambda d: (None, _mask(d, [True, False])), (3, 3))),
    Case("mask.write.short", _bad_mask_write(lambda d: _mask(d, [False, True]), 0.0)),
    Case("mask.write.long_tensor_value", _bad_mask_write(lambda d: _mask(d, [False, True, True, True]),
                                                         lambda d: _t(d, [5.0]))),
    Case("mask.write.index_put", lambda d: _refused(
        ember.IndexOutOfRange, "index: expected a bool mask",
        lambda: _t(d, [1.0, 2.0, 3.0]).index_put((_mask(d, [True]),), _t(d, 0.0)))),
    Case("mask.read.exact_1d", _good_mask(lambda d: _mask(d, [True, False, True]), [[0, 1, 2], [6, 7, 8]])),
    Case("mask.read.exact_2d", _good_mask(lambda d: _mask(d, [[False, True, False], [True, False, False],
                                                             [False, False, True]]), [1, 3, 8])),
    Case("mask.read.exact_dim1", _good_mask(lambda d: IX[:, _mask(d, [False, True, True])],
                                            [[1, 2], [4, 5], [7, 8]])),
    Case("mask.read.none_then_mask", _good_mask(lambda d: (None, _mask(d, [True, False, False])),
                                                [[[0, 1, 2]]])),
    Case("mask.write.exact", _good_mask_write),
]


# -- Python ints beyond a dtype -------------------------------------------------------------------

def _int_refused(fn, value, dtype_name, op=None):
    def run(d):
        text = "the Python int %d does not fit %s" % (value, dtype_name)
        error = _refused(ember.ArgumentError, text, lambda: fn(d))
        if op is not None:
            check.assert_true(str(error).startswith(op + ": "), "%r does not start with %r" % (str(error), op))
        check.assert_true(isinstance(error, ValueError), "not a ValueError: %r" % error)
    return run


def _assign(d, dtype, index, value):
    x = ember.tensor([1, 2, 3], dtype=dtype, device=d)
    x[index] = value
    return x


def _exact(fn, expected, dtype=None):
    def run(d):
        out = fn(d)
        check.assert_equal(out, expected)
        if dtype is not None:
            check.assert_true(out.dtype is dtype, "dtype %r, expected %r" % (out.dtype, dtype))
    return run


I64_MAX = 2 ** 63 - 1
I64_MIN = -2 ** 63
INT_CASES = [
    Case("int.tensor.2**63", _int_refused(lambda d: ember.tensor([2 ** 63], device=d), 2 ** 63, "int64", "tensor")),
    Case("int.tensor.-2**63-1", _int_refused(lambda d: ember.tensor([[1, I64_MIN - 1]], device=d),
                                             I64_MIN - 1, "int64", "tensor")),
    Case("int.tensor.int32", _int_refused(lambda d: ember.tensor([2 ** 40], dtype=ember.int32, device=d),
                                          2 ** 40, "int32", "tensor")),
    Case("int.tensor.int8", _int_refused(lambda d: ember.tensor([1, 128], dtype=ember.int8, device=d),
                                         128, "int8", "tensor")),
    Case("int.tensor.scalar", _int_refused(lambda d: ember.tensor(-129, dtype=ember.int8, device=d),
                                           -129, "int8", "tensor")),
    Case("int.full.2**64", _int_refused(lambda d: ember.full((2,), 2 ** 64, dtype=ember.int64, device=d),
                                        2 ** 64, "int64", "full")),
    Case("int.full_like", _int_refused(lambda d: ember.full_like(ember.ones(2, dtype=ember.int32, device=d), 2 ** 31),
                                       2 ** 31, "int32", "full_like")),
    Case("int.arange.int32", _int_refused(lambda d: ember.arange(2 ** 31 - 2, 2 ** 31 + 1, dtype=ember.int32, device=d),
                                          2 ** 31, "int32", "arange")),
    Case("int.arange.int64", _int_refused(lambda d: ember.arange(2 ** 63, 2 ** 63 + 2, device=d),
                                          2 ** 63, "int64", "arange")),
    Case("int.randint.int8", _int_refused(lambda d: ember.randint(0, 1000, (3,), dtype=ember.int8, device=d),
                                          999, "int8", "randint")),
    Case("int.setitem.scalar", _int_refused(lambda d: _assign(d, ember.int64, 0, 2 ** 64 + 5), 2 ** 64 + 5,
                                            "int64", "setitem")),
    Case("int.setitem.list", _int_refused(lambda d: _assign(d, ember.int32, IX[0:2], [2 ** 31, 1]), 2 ** 31,
                                          "int32", "setitem")),
    Case("int.setitem.advanced", _int_refused(lambda d: _assign(d, ember.int8, [0, 2], 200), 200, "int8",
                                              "setitem")),
    Case("int.masked_fill", _int_refused(lambda d: ember.ones(2, dtype=ember.int8, device=d).masked_fill(
        ember.ones(2, dtype=ember.bool, device=d), 300), 300, "int8", "masked_fill")),
    Case("int.where", _int_refused(lambda d: ember.where(ember.ones(2, dtype=ember.bool, device=d), 2 ** 40,
                                                         ember.ones(2, dtype=ember.int32, device=d)),
                                   2 ** 40, "int32", "where")),
    Case("int.mul.2**70", _int_refused(lambda d: ember.tensor([1], device=d) * 2 ** 70, 2 ** 70, "int64", "mul")),
    Case("int.radd.int32", _int_refused(lambda d: 2 ** 40 + ember.tensor([1], dtype=ember.int32, device=d),
                                        2 ** 40, "int32", "add")),
    Case("int.eq.int8", _int_refused(lambda d: ember.tensor([0], dtype=ember.int8, device=d) == 256, 256, "int8",
                                     "eq")),
    Case("int.bool_sub", _int_refused(lambda d: ember.tensor([True], device=d) - 2 ** 63, 2 ** 63, "int64", "sub")),
    Case("int.clamp", _int_refused(lambda d: ember.tensor([1], dtype=ember.int32, device=d).clamp(max=2 ** 31),
                                   2 ** 31, "int32")),
    # at the edges the values are exact; a float result rounds the int (±inf beyond the dtype)
    Case("int.exact.int64_edges", _exact(lambda d: ember.tensor([I64_MAX, I64_MIN], device=d), [I64_MAX, I64_MIN])),
    Case("int.exact.int8_edges", _exact(lambda d: ember.tensor([127, -128], dtype=ember.int8, device=d),
                                        [127, -128])),
    Case("int.exact.setitem", _exact(lambda d: _assign(d, ember.int32, 1, 2 ** 31 - 1), [1, 2 ** 31 - 1, 3])),
    Case("int.exact.add_edge", _exact(lambda d: ember.tensor([0], dtype=ember.int32, device=d) + (2 ** 31 - 1),
                                      [2 ** 31 - 1], ember.int32)),
    Case("int.float.beyond_f32", _exact(lambda d: ember.tensor([1.0], device=d) + 2 ** 200, [float("inf")],
                                        ember.float32)),
    Case("int.float.beyond_any_float", _exact(lambda d: ember.tensor([1.0], device=d) * -10 ** 400,
                                              [float("-inf")], ember.float32)),
    Case("int.float.tensor_beyond_any_float", _exact(lambda d: ember.tensor([1, -10 ** 400], dtype=ember.float32,
                                                                            device=d), [1.0, float("-inf")])),
    Case("int.float.full_beyond_any_float", _exact(lambda d: ember.full((2,), 10 ** 400, dtype=ember.float64,
                                                                        device=d), [float("inf")] * 2)),
    Case("int.float.f64", _exact(lambda d: ember.tensor([0.0], dtype=ember.float64, device=d) + 2 ** 63,
                                 [9.223372036854775808e18], ember.float64)),
]


# -- capacity -------------------------------------------------------------------------------------

def _ticks():
    if hasattr(time, "ticks_ms"):
        return time.ticks_ms() / 1000.0
    return time.perf_counter()


def _refused_fast(make):
    def run(d):
        t0 = _ticks()
        error = _refused(MemoryError, "out of memory", lambda: make(d))
        took = _ticks() - t0
        check.assert_true(isinstance(error, ember.OutOfMemoryError), "not an OutOfMemoryError: %r" % error)
        check.assert_true(" bytes)" in str(error), "the size is not named: %s" % error)
        # a refusal reads the device's free memory: far below the 0.1 s the issue asks for; on
        # MicroPython it first collects garbage, which on the test runners' 64 MB heap (a board's is
        # a few hundred KB) takes up to about 0.1 s on a busy machine
        limit = 0.1 if not hasattr(time, "ticks_ms") else 1.0
        check.assert_true(took < limit, "refused after %.3f s" % took)
    return run


def _past_capacity(d, itemsize):
    # twice what the device has free: free memory moves between two reads (another process, a
    # collection), and a request that slipped under the check would really be built
    return 2 * d.capacity() // itemsize + 1


CAPACITY_CASES = [
    Case("capacity.zeros.2**63", _refused_fast(lambda d: ember.zeros(2 ** 63, device=d))),
    Case("capacity.zeros.2d", _refused_fast(lambda d: ember.zeros(2 ** 40, 2 ** 40, device=d))),
    Case("capacity.full.twice_free", _refused_fast(lambda d: ember.full((_past_capacity(d, 4),), 1.5, device=d))),
    Case("capacity.ones.int64", _refused_fast(lambda d: ember.ones(_past_capacity(d, 8), dtype=ember.int64,
                                                                   device=d))),
    Case("capacity.empty", _refused_fast(lambda d: ember.empty(_past_capacity(d, 1), dtype=ember.int8, device=d))),
    Case("capacity.randn", _refused_fast(lambda d: ember.randn(_past_capacity(d, 4), device=d))),
    Case("capacity.rand", _refused_fast(lambda d: ember.rand(10 ** 13, device=d))),
    Case("capacity.randint", _refused_fast(lambda d: ember.randint(0, 10, (10 ** 13,), device=d))),
    Case("capacity.random", _refused_fast(lambda d: ember.random((10 ** 13,), ember.Normal(0.0, 1.0), device=d))),
    Case("capacity.arange", _refused_fast(lambda d: ember.arange(_past_capacity(d, 8), device=d))),
    Case("capacity.linspace", _refused_fast(lambda d: ember.linspace(0.0, 1.0, 10 ** 13, device=d))),
    Case("capacity.eye", _refused_fast(lambda d: ember.eye(10 ** 7, device=d))),
    Case("capacity.zeros_like_view", _refused_fast(
        lambda d: ember.zeros_like(ember.ones(1, device=d).expand(_past_capacity(d, 4))))),
]


# -- int sums a chunk at a time -------------------------------------------------------------------

def _chunked_sum(d):
    saved = reduction.ACCUMULATE_CHUNK
    x = (ember.arange(2 * 3 * 7, device=d).reshape(2, 3, 7) % 256 - 128).to(ember.int8)
    b = (ember.arange(60, device=d).reshape(3, 20) % 3 == 0)
    calls = [(x, None), (x, 0), (x, 1), (x, 2), (x, (0, 2)), (x, (1, 2)), (x[1:2], 2), (b, None), (b, 1)]
    expected = [(t.sum(dim).tolist(), t.sum(dim, keepdim=True).tolist(), t.prod(dim).tolist()) for t, dim in calls]
    try:
        for chunk in (1, 5, 9, 40):
            reduction.ACCUMULATE_CHUNK = chunk
            for (t, dim), (s, sk, p) in zip(calls, expected):
                got = t.sum(dim)
                check.assert_true(got.dtype is ember.int64, "sum of %s gives %r" % (t.dtype, got.dtype))
                check.assert_equal(got, s, "chunk %d: sum(%r)" % (chunk, dim))
                check.assert_equal(t.sum(dim, keepdim=True), sk, "chunk %d: sum(%r, keepdim)" % (chunk, dim))
                check.assert_equal(t.prod(dim), p, "chunk %d: prod(%r)" % (chunk, dim))
    finally:
        reduction.ACCUMULATE_CHUNK = saved
    check.assert_equal(ember.full((3, 4), 100, dtype=ember.int8, device=d).sum(), 1200)


CASES = MASK_CASES + INT_CASES + CAPACITY_CASES + [Case("sum.int8_chunked", _chunked_sum)]


def test_bounds(device, case):
    case.fn(device)
