"""What the pure-Python Cpu stores (backends/cpu/storage.py): arrays of each dtype's width, the same
values as before they were arrays (float32 rounding, integer wraparound) on CPython and MicroPython,
and kernels that write into a preallocated output however many chunks it takes."""
import struct
from array import array

import ember
from ember.backends.cpu import storage
from ember.nn import functional as F
from harness.check import assert_equal, assert_true

CPU = ember.Cpu(kernels="python")
# dtype -> bytes a value in its array (None: a list of Python values)
WIDTH = [(ember.float32, 4), (ember.float64, 8), (ember.int8, 1), (ember.int32, 4), (ember.int64, 8),
         (ember.bool, None), (ember.float16, None), (ember.bfloat16, None)]


def stored(t):
    return t._data.data


def assert_stored(t, width, what):
    data = stored(t)
    if width is None or (t.dtype is ember.int64 and ember.int64 not in storage.CODES):
        assert_true(type(data) is list, "%s: stored as %s" % (what, type(data).__name__))
        return
    assert_true(type(data) is array, "%s: stored as %s" % (what, type(data).__name__))
    # MicroPython's array has no itemsize or typecode: its bytes tell the width
    assert_true(len(bytes(data)) == width * len(data), "%s: %d bytes for %d values" % (what, len(bytes(data)),
                                                                                      len(data)))


def test_each_dtype_has_its_storage():
    for dtype, width in WIDTH:
        x = ember.tensor([1, 0, 1, 1], dtype=dtype, device=CPU)
        assert_stored(x, width, dtype.name)
        assert_stored(ember.zeros(2, 3, dtype=dtype, device=CPU), width, dtype.name + " full")
        assert_stored(x.reshape(2, 2).T.reshape(4), width, dtype.name + " gathered")
        assert_stored(ember.cat([x, x]), width, dtype.name + " cat")
        assert_stored(x[ember.tensor([3, 0], device=CPU)], width, dtype.name + " gather")
        if dtype is not ember.bool:
            assert_stored(x + x, width, dtype.name + " add")
            assert_stored(x.reshape(2, 2) @ x.reshape(2, 2), width, dtype.name + " matmul")
            assert_stored(x.reshape(2, 2).max(dim=1).values, width, dtype.name + " max")
        if dtype.kind == "f":
            assert_stored(x.exp(), width, dtype.name + " exp")
            img = x.reshape(1, 1, 2, 2)
            assert_stored(F.conv2d(img, img, padding=1), width, dtype.name + " conv")
            assert_stored(F.max_pool2d(img, 2), width, dtype.name + " pool")
        assert_true(type(x.tolist()[0]) is {"b": bool, "i": int, "f": float}[dtype.kind], dtype.name)


if hasattr(array, "typecode"):
    def test_typecodes_on_cpython():
        want = {ember.float32: "f", ember.float64: "d", ember.int8: "b", ember.int64: "q"}
        for dtype, code in want.items():
            assert_true(stored(ember.ones(2, dtype=dtype, device=CPU)).typecode == code, dtype.name)
        assert_true(stored(ember.ones(2, dtype=ember.int32, device=CPU)).typecode in ("i", "l"))


def f32_bits(t):
    raw = t.to_bytes()
    return list(struct.unpack("<%dI" % (len(raw) // 4), raw))


# float32 rounding on store, as dtypes.round_values did when the values were lists: round to
# nearest even, subnormals kept, overflow to inf (the largest float32 is 0x7f7fffff)
ROUNDING = [
    (0.1, 0x3DCCCCCD), (-0.0, 0x80000000), (float("inf"), 0x7F800000), (float("-inf"), 0xFF800000),
    (2.0 ** -149, 0x00000001), (2.0 ** -150, 0x00000000), (3 * 2.0 ** -150, 0x00000002),
    (1e-45, 0x00000001), (-3e-46, 0x80000000), (1.1754942e-38, 0x007FFFFF),
    (3.4028234663852886e38, 0x7F7FFFFF), (3.4028235e38, 0x7F7FFFFF),
    (3.4028235677973366e38, 0x7F800000), (3.5e38, 0x7F800000), (-1e300, 0xFF800000),
    (1 + 2.0 ** -24, 0x3F800000), (1 + 3 * 2.0 ** -24, 0x3F800002), (16777217, 0x4B800000),
]


def test_float32_rounds_on_store_as_before():
    values = [v for v, _ in ROUNDING]
    want = [b for _, b in ROUNDING]
    x = ember.tensor(values, dtype=ember.float32, device=CPU)
    assert_equal(f32_bits(x), want)
    assert_equal(x.tolist(), ember.dtypes.round_values(values, ember.float32))
    assert_equal(f32_bits(ember.tensor(values, dtype=ember.float64, device=CPU).to(ember.float32)), want)
    nan = ember.tensor([float("nan")], device=CPU)
    bits = f32_bits(nan)[0]
    assert_true(bits & 0x7F800000 == 0x7F800000 and bits & 0x7FFFFF, "nan stored as %x" % bits)
    # results round too: double sums of float32 values, rounded once per element
    big = ember.tensor([3.4028234663852886e38, 1.0, 2.0 ** -149], device=CPU)
    assert_equal(f32_bits(big + big), [0x7F800000, 0x40000000, 0x00000002])
    assert_equal(f32_bits(big * 0.5), [0x7EFFFFFF, 0x3F000000, 0x00000000])


def test_integers_wrap_as_before():
    i32 = ember.int32
    x = ember.tensor([2 ** 31 - 1, -2 ** 31, 2 ** 30, 7], dtype=i32, device=CPU)
    assert_equal((x + 1).tolist(), [-2 ** 31, -2 ** 31 + 1, 2 ** 30 + 1, 8])
    assert_equal((x - 1).tolist(), [2 ** 31 - 2, 2 ** 31 - 1, 2 ** 30 - 1, 6])
    assert_equal((x * 4).tolist(), [-4, 0, 0, 28])
    assert_equal((-x).tolist(), [-2 ** 31 + 1, -2 ** 31, -2 ** 30, -7])
    # a Python int outside the dtype is refused (docs/architecture.md, "Python ints never wrap")
    try:
        ember.tensor([2 ** 31, 5], dtype=i32, device=CPU)
        raised = False
    except ember.ArgumentError:
        raised = True
    assert_true(raised, "2**31 into int32 must be refused")
    assert_equal(ember.tensor([3e9, -3e9], device=CPU).to(i32).tolist(), [-1294967296, 1294967296])
    m = ember.tensor([[2 ** 16, 2 ** 16], [1, 1]], dtype=i32, device=CPU)
    assert_equal((m @ m).tolist(), [[65536, 65536], [65537, 65537]])
    assert_equal(((m * 2 ** 15) @ m).tolist(), [[-2 ** 31, -2 ** 31], [-2 ** 31 + 2 ** 15, -2 ** 31 + 2 ** 15]])
    i64 = ember.tensor([2 ** 63 - 1, -2 ** 63], dtype=ember.int64, device=CPU)
    assert_equal((i64 + 1).tolist(), [-2 ** 63, -2 ** 63 + 1])
    i8 = ember.tensor([127, -128], dtype=ember.int8, device=CPU)
    assert_equal((i8 + 1).tolist(), [-128, -127])
    assert_equal(ember.tensor([1, 2], dtype=i32, device=CPU).cumprod(0).tolist(), [1, 2])
    assert_equal(x.sum().tolist(), 2 ** 31 - 1 - 2 ** 31 + 2 ** 30 + 7)  # sums accumulate in int64


def test_bytes_round_trip_through_storage():
    for dtype, _ in WIDTH:
        x = ember.tensor([1, 0, 2, 3], dtype=dtype, device=CPU) if dtype is not ember.bool else \
            ember.tensor([True, False, True, True], device=CPU)
        y = ember.tensor(x.to_bytes(), dtype=dtype, shape=(4,), device=CPU)
        assert_equal(y.tolist(), x.tolist(), msg=dtype.name)


def test_kernels_fill_outputs_of_many_chunks():
    # CHUNK is a few hundred values on MicroPython, thousands on CPython: shrink it to cross it
    old = storage.CHUNK
    n = 37
    x = ember.arange(n, device=CPU).to(ember.float32) - 18.5
    img = ember.arange(2 * 3 * 5 * 4, device=CPU).to(ember.float32).reshape(2, 3, 5, 4) / 7 - 4
    w = ember.arange(4 * 3 * 3 * 3, device=CPU).to(ember.float32).reshape(4, 3, 3, 3) / 50 - 1

    def results():
        return [(x * 1.5).tolist(), (x * x + x).tolist(), x.exp().tolist(), (x > 0).tolist(),
                ember.where(x > 0, x, -x).tolist(), x.to(ember.int32).tolist(), x.reshape(37, 1).sum(1).tolist(),
                x.reshape(37, 1).max(1).values.tolist(), x.reshape(37, 1).argmax(1).tolist(),
                x[ember.arange(36, -1, -1, device=CPU)].tolist(), (x.reshape(1, 37).T @ x.reshape(1, 37)).tolist(),
                (x.reshape(37, 1) @ ember.tensor([[1.0, -2.0]], device=CPU)).tolist(),
                F.conv2d(img, w, padding=1).tolist(), F.max_pool2d(img, 2).tolist(),
                F.avg_pool2d(img, 2, stride=1).tolist()]
    want = results()
    try:
        for chunk in (1, 5):
            storage.CHUNK = chunk
            got = results()
            for i in range(len(want)):
                assert_equal(got[i], want[i], msg="result %d with CHUNK %d" % (i, chunk))
    finally:
        storage.CHUNK = old
