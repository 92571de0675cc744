"""dtypes: names, promotion, float16/bfloat16 rounding, casts between every pair, and bytes.

Expected bit patterns and promoted dtypes were computed once on CPython (numpy 2.4 ``np.float16``,
torch 2.13.0 ``torch.bfloat16`` and ``torch.promote_types``) and are written here as constants, so
MicroPython checks the same values. Float inputs are float32-exact, so no interpreter's decimal
parsing or float64 rounding can change what is tested.
"""
import struct

import ember
from ember import bfloat16, bool_, float16, float32, float64, int8, int32, int64
from harness.check import assert_equal, assert_true, raises

PARAMETERS = ("device",)

ALL = (bool_, int8, int32, int64, float16, bfloat16, float32, float64)
NAMES = ("bool", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64")
INF = float("inf")
NAN = float("nan")


def _bits16(t):
    """The uint16 patterns of a float16/bfloat16 tensor, through its little-endian bytes."""
    raw = t.to_bytes()
    return list(struct.unpack("<%dH" % (len(raw) // 2), raw))


def _is_nan(v):
    return v != v


# -- names and facts -----------------------------------------------------------------------------------

def test_dtype_objects_and_names(device):
    for dt, name in zip(ALL, NAMES):
        assert_true(dt.name == name, "%r has name %r" % (dt, dt.name))
        assert_true(repr(dt) == "ember." + name, "repr %r" % repr(dt))
        assert_true(ember.zeros(1, dtype=name, device=device).dtype is dt, "dtype=%r" % name)
        assert_true(ember.zeros(1, dtype=dt, device=device).dtype is dt)
    assert_true(ember.bool is ember.bool_)
    aliases = (("float", float32), ("double", float64), ("half", float16), ("int", int64), ("long", int64))
    for name, dt in aliases:
        assert_true(ember.zeros(1, dtype=name, device=device).dtype is dt, "alias %r" % name)
    for py, dt in ((float, float32), (int, int64), (bool, bool_)):
        assert_true(ember.zeros(1, dtype=py, device=device).dtype is dt, "Python type %r" % py)


def test_itemsize_and_kind(device):
    sizes = (1, 1, 4, 8, 2, 2, 4, 8)
    kinds = "biiiffff"
    rows = list(zip(ALL, sizes, kinds))
    for dt, size, kind in rows[1:] + rows[:1]:  # bool last: its bytes are checked in test_bool_bytes too
        assert_true(dt.itemsize == size, "%s itemsize %d" % (dt.name, dt.itemsize))
        assert_true(dt.is_float == (kind == "f"), "%s is_float" % dt.name)
        assert_true(len(ember.zeros(3, dtype=dt, device=device).to_bytes()) == 3 * size, "%s bytes" % dt.name)


# -- promotion -------------------------------------------------------------------------------------------

# PROMOTE[i][j]: the dtype of ALL[i] op ALL[j]; from torch.promote_types for every pair (torch 2.13.0)
PROMOTE = (
    ("bool", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    ("int8", "int8", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    ("int32", "int32", "int32", "int64", "float16", "bfloat16", "float32", "float64"),
    ("int64", "int64", "int64", "int64", "float16", "bfloat16", "float32", "float64"),
    ("float16", "float16", "float16", "float16", "float16", "float32", "float32", "float64"),
    ("bfloat16", "bfloat16", "bfloat16", "bfloat16", "float32", "bfloat16", "float32", "float64"),
    ("float32", "float32", "float32", "float32", "float32", "float32", "float32", "float64"),
    ("float64", "float64", "float64", "float64", "float64", "float64", "float64", "float64"),
)


def test_promotion_table_of_two_tensors(device):
    bad = []
    for i, a in enumerate(ALL):
        for j, b in enumerate(ALL):
            if a is bool_ and b is bool_:
                continue  # bool with bool: see test_arithmetic_on_bools
            x = ember.ones(2, dtype=a, device=device)
            y = ember.ones(2, dtype=b, device=device)
            got = (x * y).dtype.name
            if got != PROMOTE[i][j]:
                bad.append("%s * %s -> %s, expected %s" % (a.name, b.name, got, PROMOTE[i][j]))
            cmp = (x < y).dtype
            if cmp is not bool_:
                bad.append("%s < %s -> %s" % (a.name, b.name, cmp.name))
    assert_true(not bad, "\n".join(bad))


def test_promotion_is_symmetric_and_exact_in_values(device):
    # the widest kind wins and holds the other side exactly
    x = ember.tensor([100, -3], dtype=int8, device=device)
    y = ember.tensor([1000000, 7], dtype=int32, device=device)
    s = x + y
    assert_true(s.dtype is int32)
    assert_equal(s.tolist(), [1000100, 4])
    h = ember.tensor([0.5, 0.25], dtype=float16, device=device)
    f = h + ember.tensor([1.5, 2.0], dtype=bfloat16, device=device)
    assert_true(f.dtype is float32, "float16 + bfloat16 gave %s" % f.dtype.name)
    assert_equal(f.tolist(), [2.0, 2.25])
    m = ember.tensor([2 ** 40 + 1], device=device) * ember.tensor([1.0], dtype=float64, device=device)
    assert_equal(m.tolist(), [2.0 ** 40 + 1])


def test_python_scalars_lift_the_kind_but_never_widen(device):
    # (tensor dtype, scalar, result dtype): torch 2.13.0 gives the same for every row
    cases = (
        (int8, 3, int8), (int8, True, int8), (int8, 2.5, float32),
        (int32, 3, int32), (int32, 2.5, float32), (int64, 2.5, float32),
        (float16, 3, float16), (float16, 2.5, float16), (bfloat16, 2.5, bfloat16),
        (float32, 2.5, float32), (float64, 2.5, float64),
        (bool_, 3, int64), (bool_, 2.5, float32),
    )
    for dt, s, want in cases:
        x = ember.ones(2, dtype=dt, device=device)
        for got in ((x + s).dtype, (s + x).dtype, (x * s).dtype):
            assert_true(got is want, "%s with %r -> %s, expected %s" % (dt.name, s, got.name, want.name))


def test_scalar_takes_the_tensors_precision(device):
    # 0.1 meets a float16 tensor as float16(0.1) = 0x2E66 = 0.0999755859375, so 1 + 0.1 is float16(1.0999755859375)
    x = ember.ones(1, dtype=float16, device=device)
    assert_equal(_bits16(x + 0.1), [0x3C66])
    # an int scalar must fit the integer dtype it meets (numpy's rule; torch wraps 200 to -56 first):
    # int8 + 200 raises, while a result beyond int8 wraps: 101 + 100 = 201 -> -55
    with raises(ember.ArgumentError, "add: the Python int 200 does not fit int8"):
        ember.ones(1, dtype=int8, device=device) + 200
    assert_equal((ember.full((1,), 101, dtype=int8, device=device) + 100).tolist(), [-55])


def test_a_scalar_met_again_rounds_as_the_first_time(device):
    # the frontend remembers the float32 rounding of the scalars it meets; zeros are rounded every
    # time (0.0 == -0.0 would share an entry), and 3 and 3.0 round alike
    x = ember.tensor([1.0, -2.0], device=device)
    u32 = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]
    bits = lambda t: [u32(v) for v in t.tolist()]
    pz, nz = 0, 0x80000000
    for _ in range(2):
        assert_equal(bits(x * 0.0), [pz, nz])
        assert_equal(bits(x * -0.0), [nz, pz])
        assert_equal(bits(x + 0.1), [0x3F8CCCCD, 0xBFF33333])
        assert_equal((x * 3).tolist(), [3.0, -6.0])
        assert_equal((x * 3.0).tolist(), [3.0, -6.0])
        assert_equal((x * 1e39).tolist(), [INF, -INF])


def test_arithmetic_on_bools(device):
    # ember counts bools as 0/1 in arithmetic (numpy and torch would give bool for add/mul);
    # comparisons, logic, maximum and minimum stay bool
    t = ember.tensor([True, True, False], device=device)
    s = t + t
    assert_true(s.dtype is int64, "bool + bool gave %s" % s.dtype.name)
    assert_equal(s.tolist(), [2, 2, 0])
    assert_true((t & t).dtype is bool_ and (t | t).dtype is bool_ and (t ^ t).dtype is bool_)
    assert_equal((t ^ ember.tensor([True, False, False], device=device)).tolist(), [False, True, False])
    assert_true(t.maximum(t).dtype is bool_)
    assert_true((t / t).dtype is float32)
    assert_true(t.sum().dtype is int64)
    assert_equal(t.sum().item(), 2)


def test_division_of_integers_is_float(device):
    q = ember.tensor([7, -7], device=device) / ember.tensor([2, 2], device=device)
    assert_true(q.dtype is float32)
    assert_equal(q.tolist(), [3.5, -3.5])
    fq = ember.tensor([7, -7], device=device) // 2
    assert_true(fq.dtype is int64)
    assert_equal(fq.tolist(), [3, -4])  # floor, as Python, numpy and torch


# -- float16 and bfloat16 rounding ----------------------------------------------------------------------

# (float32 value, float16 bits): np.array([v], np.float32).astype(np.float16).view(np.uint16), numpy 2.4
F16 = (
    (0.0, 0x0000), (-0.0, 0x8000), (1.0, 0x3C00), (-2.5, 0xC100),
    (13421773 * 2.0 ** -27, 0x2E66),                     # float32(0.1)
    (11184811 * 2.0 ** -25, 0x3555),                     # float32(1/3)
    (65504.0, 0x7BFF),                                   # the largest float16
    (65519.0, 0x7BFF),                                   # just below the midpoint to inf
    (65520.0, 0x7C00),                                   # the midpoint: to even, which is inf
    (65536.0, 0x7C00), (1e10, 0x7C00), (-1e10, 0xFC00),  # overflow
    (1.0 + 2.0 ** -11, 0x3C00),                          # a tie: to the even 1.0
    (1.0 + 3 * 2.0 ** -11, 0x3C02),                      # a tie: to the even 0x3C02
    (1.0 + 2.0 ** -11 + 2.0 ** -23, 0x3C01),             # just above the tie
    (1.0 + 2.0 ** -11 - 2.0 ** -23, 0x3C00),             # just below the tie
    (2.0 ** -14, 0x0400),                                # the smallest normal
    (2.0 ** -14 - 2.0 ** -24, 0x03FF),                   # the largest subnormal
    (2.0 ** -24, 0x0001), (-(2.0 ** -24), 0x8001),       # the smallest subnormal
    (2.0 ** -25, 0x0000),                                # half of it: a tie, to the even 0
    (2.0 ** -25 + 2.0 ** -35, 0x0001),                   # just above that tie
    (3 * 2.0 ** -25, 0x0002),                            # 1.5 subnormal steps: a tie, to the even 2
    (2.0 ** -26, 0x0000), (2.0 ** -126, 0x0000),         # underflow
    (257.0, 0x5C04), (259.0, 0x5C0C),
    (INF, 0x7C00), (-INF, 0xFC00),
)

# (float32 value, bfloat16 bits): torch.tensor([v]).to(torch.bfloat16).view(torch.int16) & 0xFFFF, torch 2.13.0
BF16 = (
    (0.0, 0x0000), (-0.0, 0x8000), (1.0, 0x3F80), (-2.5, 0xC020),
    (13421773 * 2.0 ** -27, 0x3DCD),                     # float32(0.1)
    (11184811 * 2.0 ** -25, 0x3EAB),                     # float32(1/3)
    (65504.0, 0x4780), (65536.0, 0x4780),
    (1e10, 0x5015), (-1e10, 0xD015),                     # 1e10 rounds to float32 first: 10000000000.0 exactly
    (1.0 + 2.0 ** -8, 0x3F80),                           # a tie: to the even 1.0
    (1.0 + 3 * 2.0 ** -8, 0x3F82),                       # a tie: to the even 0x3F82
    (1.0 + 2.0 ** -8 + 2.0 ** -23, 0x3F81),              # just above the tie
    (257.0, 0x4380), (259.0, 0x4382),                    # integer ties: to even
    (16711680 * 2.0 ** 104, 0x7F7F),                     # the largest bfloat16, 3.3895e38
    (16777215 * 2.0 ** 104, 0x7F80),                     # the largest float32 rounds up to inf
    (2.0 ** -126, 0x0080),                               # the smallest float32 normal
    (2.0 ** -133, 0x0001),                               # the smallest bfloat16 subnormal
    (2.0 ** -149, 0x0000),                               # the smallest float32 subnormal: far below bfloat16's, to 0
    (INF, 0x7F80), (-INF, 0xFF80),
)


def _check_table(table, dtype, device):
    values = [v for v, _ in table]
    want = [b for _, b in table]
    direct = _bits16(ember.tensor(values, dtype=dtype, device=device))
    cast = _bits16(ember.tensor(values, dtype=float32, device=device).to(dtype))
    bad = ["%r -> 0x%04X, expected 0x%04X" % (v, d, w) for v, d, w in zip(values, direct, want) if d != w]
    bad += ["%r cast from float32 -> 0x%04X, expected 0x%04X" % (v, c, w)
            for v, c, w in zip(values, cast, want) if c != w]
    assert_true(not bad, "%s rounding:\n  %s" % (dtype.name, "\n  ".join(bad)))


def test_float16_rounds_to_nearest_even(device):
    _check_table(F16, float16, device)


def test_bfloat16_rounds_to_nearest_even(device):
    _check_table(BF16, bfloat16, device)


def test_float16_values_read_back_exactly(device):
    # the value a float16 tensor reports is the exact value of its bits
    t = ember.tensor([2.0 ** -24, 65519.0, 1.0 + 2.0 ** -11 + 2.0 ** -23, 13421773 * 2.0 ** -27],
                     dtype=float16, device=device)
    assert_equal(t.tolist(), [2.0 ** -24, 65504.0, 1.0 + 2.0 ** -10, 0.0999755859375])
    b = ember.tensor([1.0 + 2.0 ** -8 + 2.0 ** -23, 13421773 * 2.0 ** -27], dtype=bfloat16, device=device)
    assert_equal(b.tolist(), [1.0 + 2.0 ** -7, 0.10009765625])


def test_nan_survives_every_float_dtype(device):
    for dt in (float16, bfloat16, float32, float64):
        t = ember.tensor([NAN, 1.0], dtype=dt, device=device)
        assert_true(_is_nan(t.tolist()[0]), "%s lost nan" % dt.name)
        assert_true(not _is_nan(t.tolist()[1]))
        for other in (float16, bfloat16, float32, float64):
            assert_true(_is_nan(t.to(other).tolist()[0]), "%s -> %s lost nan" % (dt.name, other.name))
    for bits in _bits16(ember.tensor([NAN], dtype=float16, device=device)):
        assert_true(bits & 0x7C00 == 0x7C00 and bits & 0x03FF, "float16 nan bits 0x%04X" % bits)
    for bits in _bits16(ember.tensor([NAN], dtype=bfloat16, device=device)):
        assert_true(bits & 0x7F80 == 0x7F80 and bits & 0x007F, "bfloat16 nan bits 0x%04X" % bits)


def test_float16_from_bits_round_trips(device):
    # every 64th bit pattern (both signs, zeros, subnormals, normals, inf); nan patterns stay nan
    pats = list(range(0, 0x10000, 64)) + [0x0001, 0x03FF, 0x7BFF, 0x7C00, 0xFBFF, 0xFC00]
    raw = struct.pack("<%dH" % len(pats), *pats)
    t = ember.tensor(raw, dtype=float16, shape=(len(pats),), device=device)
    back = _bits16(t)
    bad = []
    for p, b, v in zip(pats, back, t.tolist()):
        if (p & 0x7C00) == 0x7C00 and (p & 0x3FF):
            if not _is_nan(v):
                bad.append("0x%04X read as %r" % (p, v))
        elif p != b:
            bad.append("0x%04X came back as 0x%04X" % (p, b))
    assert_true(not bad, "\n".join(bad[:20]))
    # the same values again through float32 (exact: float32 holds every float16)
    assert_equal(_bits16(t.to(float32).to(float16)), back)


# -- casts ------------------------------------------------------------------------------------------------

def _cast(values, src, dst, device):
    return ember.tensor(values, dtype=src, device=device).to(dst).tolist()


def test_float_to_int_truncates_toward_zero(device):
    vals = [-2.75, -0.5, 0.0, 0.5, 2.75, 127.75]
    for dt in (int8, int32, int64):
        assert_equal(_cast(vals, float32, dt, device), [-2, 0, 0, 0, 2, 127], dt.name)
    assert_equal(_cast([-1.5, 1.5, 1000.5], float16, int32, device), [-1, 1, 1000])
    assert_equal(_cast([-1.5, 255.0], bfloat16, int64, device), [-1, 255])
    assert_equal(_cast([-2.75, 2.75], float64, int64, device), [-2, 2])


def test_nan_and_inf_to_int_give_zero(device):
    for src in (float16, bfloat16, float32, float64):
        for dst in (int8, int32, int64):
            assert_equal(_cast([NAN, INF, -INF, 3.0], src, dst, device), [0, 0, 0, 3], "%s->%s" % (src.name, dst.name))


def test_int_overflow_wraps(device):
    # two's complement, as C, numpy and torch wrap integer casts
    assert_equal(_cast([127, 128, -129, 255, 256, -1], int64, int8, device), [127, -128, 127, -1, 0, -1])
    assert_equal(_cast([2 ** 31, -2 ** 31 - 1, 2 ** 32 + 5], int64, int32, device), [-2 ** 31, 2 ** 31 - 1, 5])
    assert_equal(_cast([200, -200], int32, int8, device), [-56, 56])
    # out-of-range floats truncate, then wrap: 300.75 -> 300 -> 44; -300.75 -> -300 -> -44
    assert_equal(_cast([300.75, -300.75], float32, int8, device), [44, -44])
    # 3e9 is float32-exact: 3000000000 - 2**32 = -1294967296
    assert_equal(_cast([3e9, -3e9], float32, int32, device), [-1294967296, 1294967296])
    # arithmetic wraps too
    one = ember.tensor([1], dtype=int8, device=device)
    assert_equal((ember.tensor([127], dtype=int8, device=device) + one).tolist(), [-128])
    assert_equal((ember.tensor([2 ** 62], device=device) * 4).tolist(), [0])


def test_to_bool_is_not_equal_to_zero(device):
    assert_equal(_cast([-2.5, -0.0, 0.0, NAN, INF, 2.0 ** -149], float32, bool_, device),
                 [True, False, False, True, True, True])
    assert_equal(_cast([0.0, 2.0 ** -24, -(2.0 ** -24)], float16, bool_, device), [False, True, True])
    for dt in (int8, int32, int64):
        assert_equal(_cast([0, 1, -1, 100], dt, bool_, device), [False, True, True, True], dt.name)
    assert_equal(_cast([0, 256], int64, bool_, device), [False, True])  # not a wrap to int8 first


def test_bool_to_numbers(device):
    for dt in (int8, int32, int64):
        assert_equal(_cast([True, False], bool_, dt, device), [1, 0])
    for dt in (float16, bfloat16, float32, float64):
        assert_equal(_cast([True, False], bool_, dt, device), [1.0, 0.0])


def test_int_to_float_rounds_to_nearest_even(device):
    # numpy astype(float32/float16) and torch .to(torch.bfloat16) give these
    assert_equal(_cast([2 ** 24 + 1, 2 ** 24 + 3, -(2 ** 24 + 1)], int64, float32, device),
                 [16777216.0, 16777220.0, -16777216.0])
    assert_equal(_cast([2049, 2051, 70000, -70000], int64, float16, device), [2048.0, 2052.0, INF, -INF])
    assert_equal(_cast([257, 259, 2 ** 31 - 1], int32, bfloat16, device), [256.0, 260.0, 2.0 ** 31])
    assert_equal(_cast([2 ** 53 + 1, -(2 ** 62)], int64, float64, device), [2.0 ** 53, -(2.0 ** 62)])
    assert_equal(_cast([-128, 127], int8, float16, device), [-128.0, 127.0])


def test_float_to_float(device):
    # float64 -> float32 rounds to nearest even and overflows to inf (numpy astype agrees)
    got = _cast([1e39, -1e39, 1e-46, -1e-46, 16777217.0, 0.5], float64, float32, device)
    assert_equal(got, [INF, -INF, 0.0, -0.0, 16777216.0, 0.5])
    assert_true(struct.pack("<f", got[3]) == b"\x00\x00\x00\x80", "-1e-46 lost its sign")
    # float32 holds float16 and bfloat16 exactly
    assert_equal(_cast([65504.0, 2.0 ** -24], float16, float32, device), [65504.0, 2.0 ** -24])
    assert_equal(_cast([16711680 * 2.0 ** 104], bfloat16, float64, device), [16711680 * 2.0 ** 104])
    # bfloat16 -> float16: bfloat16(1/3) = 0.333984375 is float16-exact (0x3558); 1e10 overflows
    b = ember.tensor([11184811 * 2.0 ** -25, 1e10], dtype=bfloat16, device=device).to(float16)
    assert_equal(_bits16(b), [0x3558, 0x7C00])
    # float16 -> bfloat16: 2**-24 is a bfloat16 normal; 65504 rounds to 65536 (0x4780)
    h = ember.tensor([2.0 ** -24, 65504.0], dtype=float16, device=device).to(bfloat16)
    assert_equal(_bits16(h), [0x3380, 0x4780])


def test_every_pair_of_dtypes_casts(device):
    # small integers survive every cast and every cast back; the result has the dtype asked for
    vals = [0, 1, 2, 100]
    for src in ALL:
        start = [bool(v) for v in vals] if src is bool_ else vals
        t = ember.tensor(start, dtype=src, device=device)
        for dst in ALL:
            u = t.to(dst)
            assert_true(u.dtype is dst and u.shape == (4,), "%s -> %s" % (src.name, dst.name))
            want = [bool(v) for v in start] if dst is bool_ else [int(v) for v in start]
            assert_equal(u.tolist(), want, "%s -> %s" % (src.name, dst.name))
            if src is not bool_ and dst is not bool_:
                assert_equal(u.to(src).tolist(), start, "%s -> %s -> %s" % (src.name, dst.name, src.name))


def test_cast_returns_the_requested_dtype_objects(device):
    x = ember.tensor([1.5, -2.5], device=device)
    assert_true(x.to(int32).dtype is int32 and x.int().dtype is int32)
    assert_true(x.long().dtype is int64 and x.half().dtype is float16 and x.double().dtype is float64)
    assert_true(x.bool().dtype is bool_ and x.float().dtype is float32)
    assert_true(x.to("int8").dtype is int8 and x.to(int).dtype is int64 and x.to(bool).dtype is bool_)


# -- bytes ------------------------------------------------------------------------------------------------

# (dtype, values, little-endian bytes): numpy's .tobytes() for each, torch's for bfloat16 (bool: test_bool_bytes)
BYTES = (
    (int8, [-1, 2, -128], b"\xff\x02\x80"),
    (int32, [1, -2], b"\x01\x00\x00\x00\xfe\xff\xff\xff"),
    (int64, [1, -2], b"\x01\x00\x00\x00\x00\x00\x00\x00\xfe\xff\xff\xff\xff\xff\xff\xff"),
    (float16, [1.0, -2.0], b"\x00\x3c\x00\xc0"),
    (bfloat16, [1.0, -2.0], b"\x80\x3f\x00\xc0"),
    (float32, [1.0, -2.0], b"\x00\x00\x80\x3f\x00\x00\x00\xc0"),
    (float64, [1.0, -2.0], b"\x00\x00\x00\x00\x00\x00\xf0\x3f\x00\x00\x00\x00\x00\x00\x00\xc0"),
)


def test_to_bytes_is_little_endian_for_every_dtype(device):
    for dt, values, raw in BYTES:
        got = ember.tensor(values, dtype=dt, device=device).to_bytes()
        assert_true(got == raw, "%s: %r, expected %r" % (dt.name, got, raw))


def test_bool_bytes(device):
    t = ember.tensor([True, False, True], device=device)
    assert_true(t.to_bytes() == b"\x01\x00\x01", "%r" % t.to_bytes())
    back = ember.tensor(b"\x01\x00\x01", dtype=bool_, shape=(3,), device=device)
    assert_true(back.dtype is bool_)
    assert_equal(back.tolist(), [True, False, True])
    # a byte other than 0/1 reads as True and writes back as 1
    b = ember.tensor(b"\x00\x02", dtype=bool_, shape=(2, 1), device=device)
    assert_equal(b.tolist(), [[False], [True]])
    assert_true(b.to_bytes() == b"\x00\x01")


def test_bytes_round_trip_for_every_dtype(device):
    for dt, values, raw in BYTES:
        n = len(values)
        t = ember.tensor(raw, dtype=dt, shape=(n,), device=device)
        assert_true(t.dtype is dt and t.shape == (n,), dt.name)
        assert_equal(t.tolist(), values, dt.name)
        assert_true(t.to_bytes() == raw, "%s does not round-trip" % dt.name)
        col = ember.tensor(bytearray(raw), dtype=dt.name, shape=(n, 1), device=device)
        assert_equal(col.tolist(), [[v] for v in values], dt.name)
        assert_true(ember.tensor(memoryview(raw), dtype=dt, shape=[n], device=device).to_bytes() == raw)


def test_bytes_of_odd_shapes(device):
    one = ember.tensor(b"\x00\x00\x80\x3f", dtype=float32, shape=(), device=device)
    assert_true(one.shape == () and one.item() == 1.0)
    empty = ember.tensor(b"", dtype=int32, shape=(0, 3), device=device)
    assert_true(empty.shape == (0, 3) and empty.to_bytes() == b"")
    assert_equal(empty.tolist(), [])


def test_to_bytes_of_views_is_row_major(device):
    x = ember.arange(6, dtype=int8, device=device).reshape(2, 3)
    assert_true(x.transpose(0, 1).to_bytes() == b"\x00\x03\x01\x04\x02\x05")
    assert_true(x[:, 1:].to_bytes() == b"\x01\x02\x04\x05")
    assert_true(x[0:1].expand(2, 3).to_bytes() == b"\x00\x01\x02\x00\x01\x02")


def test_bytes_of_special_floats(device):
    specials = [INF, -INF, -0.0, 2.0 ** -149, 16777215 * 2.0 ** 104]
    raw = ember.tensor(specials, dtype=float32, device=device).to_bytes()
    want = struct.pack("<5I", 0x7F800000, 0xFF800000, 0x80000000, 0x00000001, 0x7F7FFFFF)
    assert_true(raw == want, "%r, expected %r" % (raw, want))
    back = ember.tensor(want, dtype=float32, shape=(5,), device=device)
    assert_equal(back.tolist(), specials)
