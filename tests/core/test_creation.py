"""Creating tensors and reading them back: ember.tensor, constants, ranges, tolist/item/to_bytes, repr."""
from array import array

import ember
from harness.check import assert_equal, assert_true

PARAMETERS = ("device",)

INF = float("inf")
NAN = float("nan")


def _is(t, shape, dtype, device=None):
    assert_true(t.shape == shape, "shape %s, expected %s" % (t.shape, shape))
    assert_true(t.dtype is dtype, "dtype %s, expected %s" % (t.dtype.name, dtype.name))
    if device is not None:
        assert_true(t.device == device, "device %r, expected %r" % (t.device, device))


# -- ember.tensor ----------------------------------------------------------------------------------------

def test_nested_lists_infer_bool_int64_float32(device):
    t = ember.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    _is(t, (2, 3), ember.int64, device)
    assert_equal(t.tolist(), [[1, 2, 3], [4, 5, 6]])
    _is(ember.tensor([True, False], device=device), (2,), ember.bool_)
    _is(ember.tensor([1.0, 2.0], device=device), (2,), ember.float32)
    # the widest kind of any element wins
    _is(ember.tensor([True, 1], device=device), (2,), ember.int64)
    mixed = ember.tensor([[1, 2.5], [True, 0]], device=device)
    _is(mixed, (2, 2), ember.float32)
    assert_equal(mixed.tolist(), [[1.0, 2.5], [1.0, 0.0]])
    _is(ember.tensor([[[1]], [[2]]], device=device), (2, 1, 1), ember.int64)


def test_empty_lists(device):
    e = ember.tensor([], device=device)
    _is(e, (0,), ember.float32, device)
    assert_equal(e.tolist(), [])
    _is(ember.tensor([[]], device=device), (1, 0), ember.float32)
    two = ember.tensor([[], []], device=device)
    _is(two, (2, 0), ember.float32)
    assert_true(two.tolist() == [[], []], "tolist %r" % (two.tolist(),))
    _is(ember.tensor([], dtype=ember.int32, device=device), (0,), ember.int32)


def test_scalars_make_zero_dim_tensors(device):
    for value, dtype in ((3, ember.int64), (2.5, ember.float32), (True, ember.bool_), (-0.0, ember.float32)):
        t = ember.tensor(value, device=device)
        _is(t, (), dtype, device)
        assert_true(t.ndim == 0 and t.numel() == 1 and t.dim() == 0)
        assert_true(t.item() == value and type(t.item()) is type(value), "item %r" % (t.item(),))
        assert_true(t.tolist() == value and type(t.tolist()) is type(value))
    assert_true(ember.tensor(5, dtype=ember.float64, device=device).item() == 5.0)


def test_tuples_and_mixed_nesting(device):
    t = ember.tensor((1, 2), device=device)
    _is(t, (2,), ember.int64)
    u = ember.tensor([(1.0, 2.0), [3.0, 4.0]], device=device)
    _is(u, (2, 2), ember.float32)
    assert_equal(u.tolist(), [[1.0, 2.0], [3.0, 4.0]])


def test_explicit_dtype_converts_the_values(device):
    assert_equal(ember.tensor([1.9, -1.9], dtype=ember.int32, device=device).tolist(), [1, -1])
    assert_equal(ember.tensor([0, 2], dtype=ember.bool_, device=device).tolist(), [False, True])
    assert_equal(ember.tensor([1, 2], dtype="float16", device=device).tolist(), [1.0, 2.0])
    # float32 rounding: 0.1 is stored as float32(0.1) = 13421773 * 2**-27
    assert_true(ember.tensor([0.1], device=device).item() == 13421773 * 2.0 ** -27)
    assert_true(ember.tensor([0.1], dtype=ember.float64, device=device).item() == 0.1)


def test_array_array(device):
    f = ember.tensor(array("f", [1.5, 2.0]), device=device)
    assert_equal(f.tolist(), [1.5, 2.0])
    assert_true(f.dtype is ember.float32)
    d = ember.tensor(array("d", [0.1]), device=device)
    assert_true(d.dtype is ember.float64 and d.item() == 0.1, "array('d') gave %s" % d.dtype.name)
    i = ember.tensor(array("i", [1, -2]), device=device)
    assert_equal(i.tolist(), [1, -2])
    assert_true(i.dtype is ember.int32, "array('i') gave %s" % i.dtype.name)
    b = ember.tensor(array("b", [-1, 2]), device=device)
    assert_true(b.dtype is ember.int8, "array('b') gave %s" % b.dtype.name)
    q = ember.tensor(array("q", [2 ** 40]), device=device)
    assert_true(q.dtype is ember.int64 and q.item() == 2 ** 40)
    # an explicit dtype wins over the typecode
    assert_true(ember.tensor(array("i", [1]), dtype=ember.float32, device=device).dtype is ember.float32)
    _is(ember.tensor(array("f"), device=device), (0,), ember.float32)


def test_bytes(device):
    t = ember.tensor(b"\x00\x00\x80\x3f\x00\x00\x00\xc0", dtype=ember.float32, shape=(2,), device=device)
    _is(t, (2,), ember.float32, device)
    assert_equal(t.tolist(), [1.0, -2.0])
    m = ember.tensor(bytearray(b"\x01\x00\x02\x00\x03\x00"), dtype="float16", shape=(3, 1), device=device)
    # float16 bits 0x0001, 0x0002, 0x0003: 1, 2 and 3 times 2**-24
    assert_equal(m.tolist(), [[2.0 ** -24], [2.0 ** -23], [3 * 2.0 ** -24]])
    assert_equal(ember.tensor(b"\x05", dtype=ember.int8, shape=1, device=device).tolist(), [5])


def test_another_tensor(device):
    x = ember.tensor([[1.5, 2.5]], device=device)
    y = ember.tensor(x, device=device)
    _is(y, (1, 2), ember.float32, device)
    assert_equal(y.tolist(), [[1.5, 2.5]])
    z = ember.tensor(x, dtype=ember.int64, device=device)
    _is(z, (1, 2), ember.int64)
    assert_equal(z.tolist(), [[1, 2]])
    assert_true(x.dtype is ember.float32, "ember.tensor(x, dtype=) changed x")


def test_default_device_is_used_and_can_be_changed(device):
    previous = ember.set_default_device(device)
    try:
        assert_true(ember.default_device() is device)
        assert_true(ember.zeros(2).device == device and ember.tensor([1]).device == device)
        assert_true(ember.arange(3).device == device and ember.rand(2).device == device)
    finally:
        back = ember.set_default_device(previous)
    assert_true(back is device and ember.default_device() is previous)


# -- constants and ranges ------------------------------------------------------------------------------

def test_zeros_ones_full(device):
    z = ember.zeros(2, 3, device=device)
    _is(z, (2, 3), ember.float32, device)
    assert_equal(z.tolist(), [[0.0] * 3] * 2)
    _is(ember.zeros((2, 3), device=device), (2, 3), ember.float32)
    _is(ember.zeros([4], device=device), (4,), ember.float32)
    _is(ember.zeros(device=device), (), ember.float32)
    _is(ember.zeros(0, 5, device=device), (0, 5), ember.float32)
    o = ember.ones(3, dtype=ember.int32, device=device)
    _is(o, (3,), ember.int32)
    assert_equal(o.tolist(), [1, 1, 1])
    assert_equal(ember.ones(2, dtype=ember.bool_, device=device).tolist(), [True, True])
    _is(ember.full((2,), 7, device=device), (2,), ember.int64)
    _is(ember.full((2,), 7.0, device=device), (2,), ember.float32)
    _is(ember.full((2,), True, device=device), (2,), ember.bool_)
    h = ember.full((), 1.5, dtype=ember.float16, device=device)
    _is(h, (), ember.float16)
    assert_true(h.item() == 1.5)
    assert_equal(ember.full((2, 2), -3, dtype=ember.int8, device=device).tolist(), [[-3, -3], [-3, -3]])
    n = ember.full((3,), NAN, device=device).tolist()
    assert_true(all(v != v for v in n))


def test_like_constructors_keep_shape_dtype_and_device(device):
    x = ember.tensor([[1, 2, 3]], dtype=ember.int8, device=device)
    for t, value in ((ember.zeros_like(x), 0), (ember.ones_like(x), 1), (ember.full_like(x, 9), 9)):
        _is(t, (1, 3), ember.int8, device)
        assert_equal(t.tolist(), [[value] * 3])
    f = ember.ones_like(x, dtype=ember.float32)
    _is(f, (1, 3), ember.float32, device)
    assert_equal(ember.full_like(x, 2.7).tolist(), [[2, 2, 2]])  # the fill is converted to x's dtype


def test_arange_of_ints(device):
    cases = (
        ((5,), [0, 1, 2, 3, 4]),
        ((1, 4), [1, 2, 3]),
        ((5, 0, -2), [5, 3, 1]),
        ((0, -3, -1), [0, -1, -2]),
        ((-3, 3, 2), [-3, -1, 1]),
        ((0, 10, 3), [0, 3, 6, 9]),
        ((3, 3), []),
        ((5, 0), []),
        ((0, 5, -1), []),
        ((0,), []),
    )
    for args, want in cases:
        t = ember.arange(*args, device=device)
        _is(t, (len(want),), ember.int64, device)
        assert_equal(t.tolist(), want, "arange%s" % (args,))


def test_arange_of_floats(device):
    quarters = ember.arange(0, 1, 0.25, device=device)
    _is(quarters, (4,), ember.float32)
    assert_equal(quarters.tolist(), [0.0, 0.25, 0.5, 0.75])
    assert_equal(ember.arange(1, 2.5, 0.5, device=device).tolist(), [1.0, 1.5, 2.0])
    assert_equal(ember.arange(2.0, -1.0, -1.5, device=device).tolist(), [2.0, 0.5])
    assert_equal(ember.arange(0.5, 0.5, 0.1, device=device).tolist(), [])
    assert_equal(ember.arange(4, dtype=ember.float64, device=device).tolist(), [0.0, 1.0, 2.0, 3.0])
    tenths = ember.arange(0.0, 1.0, 0.1, device=device)
    _is(tenths, (10,), ember.float32)
    assert_true(tenths.tolist()[-1] == 15099494 * 2.0 ** -24, "last %r" % tenths.tolist()[-1])  # float32(0.9)


def test_arange_never_reaches_its_end(device):
    # numpy.arange and torch.arange give 10 values for (-2.0, 1.0, 0.3) and 11 for (2.0, 0.9, -0.1)
    # (count = ceil((end - start) / step)); the value at `end` itself must not appear
    for args, count in (((-2.0, 1.0, 0.3), 10), ((2.0, 0.9, -0.1), 11), ((1.1, -0.4, -0.3), 5)):
        t = ember.arange(*args, dtype=ember.float64, device=device)
        values = t.tolist()
        assert_true(len(values) == count, "arange%s has %d values, numpy has %d" % (args, len(values), count))
        start, end, step = args
        assert_true(all((v < end) if step > 0 else (v > end) for v in values), "arange%s reached its end" % (args,))


# -- reading -------------------------------------------------------------------------------------------

def test_tolist_types(device):
    assert_true(type(ember.tensor([1.5], device=device).tolist()[0]) is float)
    assert_true(type(ember.tensor([1], dtype=ember.int8, device=device).tolist()[0]) is int)
    assert_true(type(ember.tensor([1], dtype=ember.float16, device=device).tolist()[0]) is float)
    assert_true(type(ember.tensor([True], device=device).tolist()[0]) is bool)
    nested = ember.arange(24, device=device).reshape(2, 3, 4).tolist()
    assert_true(nested[1][2][3] == 23 and len(nested) == 2 and len(nested[0]) == 3 and len(nested[0][0]) == 4)
    assert_true(ember.zeros(2, 0, 3, device=device).tolist() == [[], []])


def test_item(device):
    assert_true(ember.tensor([[7]], device=device).item() == 7)
    assert_true(ember.tensor([2.5], device=device).item() == 2.5)
    assert_true(ember.tensor([True], device=device).item() is True)
    x = ember.arange(6, device=device).reshape(2, 3)
    assert_true(x[1, 2].item() == 5)
    assert_true(int(ember.tensor(3.9, device=device)) == 3)
    assert_true(bool(ember.tensor([0], device=device)) is False and bool(ember.tensor(2.0, device=device)) is True)


def test_len_and_iteration(device):
    x = ember.arange(6, device=device).reshape(3, 2)
    assert_true(len(x) == 3)
    rows = [r.tolist() for r in x]
    assert_true(rows == [[0, 1], [2, 3], [4, 5]], "%r" % rows)
    assert_true(len(ember.zeros(0, 2, device=device)) == 0)


def test_size_and_numel(device):
    x = ember.zeros(2, 3, 4, device=device)
    assert_true(x.size() == (2, 3, 4) and x.size(1) == 3 and x.size(-1) == 4)
    assert_true(x.numel() == 24 and x.ndim == 3)
    assert_true(ember.zeros(3, 0, device=device).numel() == 0)


# -- repr ---------------------------------------------------------------------------------------------

def test_repr_shows_values_shape_dtype_and_device(device):
    r = repr(ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=device))
    for part in ("1.0000", "4.0000", "shape=(2, 2)", "dtype=float32", "device=" + repr(device)):
        assert_true(part in r, "%r is not in %r" % (part, r))
    assert_true(r.startswith("tensor("), r)
    ints = repr(ember.tensor([1, -2], device=device))
    assert_true("[1, -2]" in ints and "dtype=int64" in ints, ints)
    bools = repr(ember.tensor([True, False], device=device))
    assert_true("[True, False]" in bools and "dtype=bool" in bools, bools)
    scalar = repr(ember.tensor(1.5, device=device))
    assert_true("1.5000" in scalar and "shape=()" in scalar, scalar)
    empty = repr(ember.zeros(0, device=device))
    assert_true("[]" in empty and "shape=(0,)" in empty, empty)


def test_repr_of_nan_and_inf(device):
    r = repr(ember.tensor([NAN, INF, -INF, 1.0], device=device))
    assert_true("[nan, inf, -inf, 1.0000]" in r, r)
    h = repr(ember.tensor([NAN, -INF], dtype=ember.float16, device=device))
    assert_true("nan" in h and "-inf" in h and "float16" in h, h)


def test_repr_switches_to_exponents_for_extreme_magnitudes(device):
    small = repr(ember.tensor([1e-5, 1.0], device=device))
    assert_true("e-05" in small, small)
    big = repr(ember.tensor([1e9, 1.0], device=device))
    assert_true("e+09" in big, big)


def test_repr_abbreviates_past_1000_elements(device):
    full = repr(ember.arange(1000, device=device))
    assert_true("..." not in full and ", 500," in full, "1000 elements should print whole")
    short = repr(ember.arange(1001, device=device))
    assert_true("..." in short and "0, 1, 2" in short and "998, 999, 1000" in short, short)
    assert_true(", 500," not in short and "shape=(1001,)" in short, short)
    grid = repr(ember.arange(2000, device=device).reshape(40, 50))
    assert_true("..." in grid and "shape=(40, 50)" in grid and "1999" in grid and ", 1000," not in grid, grid[:200])
    assert_true(len(grid) < 1000, "abbreviated repr is %d characters" % len(grid))


def test_repr_of_a_view_shows_its_own_values(device):
    x = ember.arange(6, device=device).reshape(2, 3)
    r = repr(x.transpose(0, 1))
    assert_true("[[0, 3]," in r and "[2, 5]]" in r and "shape=(3, 2)" in r, r)
