"""float16 / bfloat16 / float32 rounding against numpy and PyTorch, over many bit patterns (CPython only).

tests/core/test_dtypes.py checks chosen edge cases on every interpreter; this file sweeps: every
float16 and bfloat16 bit pattern, and a few hundred thousand float32 patterns (uniform over the
bits, plus the neighbourhoods of every float16 rounding boundary).
"""
import numpy as np
import pytest

import ember

PARAMETERS = ("device",)


def _from_bits(bits, dtype, device):
    raw = np.asarray(bits).astype("<u%d" % (np.dtype(bits.dtype).itemsize)).tobytes()
    return ember.tensor(raw, dtype=dtype, shape=(len(bits),), device=device)


def _u16(t):
    return np.frombuffer(t.to_bytes(), dtype="<u2")


def _sample_f32_bits(seed):
    rng = np.random.default_rng(seed)
    uniform = rng.integers(0, 2 ** 32, size=150_000, dtype=np.uint64).astype(np.uint32)
    # float32 neighbours of every float16 value and of every midpoint between two of them
    h = np.arange(0, 0x7C00, dtype=np.uint16)
    lo = h.view(np.float16).astype(np.float32).view(np.uint32)
    mids = ((h[:-1].view(np.float16).astype(np.float64) + h[1:].view(np.float16).astype(np.float64)) / 2)
    mid_bits = mids.astype(np.float32).view(np.uint32)
    near = np.concatenate([lo, lo + 1, lo - 1, mid_bits, mid_bits + 1, mid_bits - 1]).astype(np.uint32)
    near = np.concatenate([near, near | np.uint32(0x80000000)])
    return np.concatenate([uniform, near])


def _same_or_both_nan(a, b, width):
    exp = {16: 0x7C00, 32: 0x7F800000}[width]
    man = {16: 0x03FF, 32: 0x007FFFFF}[width]
    a_nan = ((a & exp) == exp) & ((a & man) != 0)
    b_nan = ((b & exp) == exp) & ((b & man) != 0)
    return (a == b) | (a_nan & b_nan)


def test_every_float16_pattern_reads_and_writes_back(device):
    bits = np.arange(2 ** 16, dtype=np.uint16)
    t = _from_bits(bits, ember.float16, device)
    want = bits.view(np.float16).astype(np.float64)
    got = np.array(t.tolist(), dtype=np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), "float16 bits read wrong: %s" % [hex(b) for b in bits[~same][:10]]
    # the sign of zero survives
    assert np.signbit(got[0x8000]) and not np.signbit(got[0])
    back = _u16(t)
    nan = np.isnan(want)
    assert np.array_equal(back[~nan], bits[~nan]), "float16 bits do not round-trip"
    assert np.isnan(_u16(t).view(np.float16)[nan]).all()


def test_float32_to_float16_matches_numpy(device):
    bits = _sample_f32_bits(1)
    t = _from_bits(bits, ember.float32, device).to(ember.float16)
    got = _u16(t)
    with np.errstate(over="ignore"):
        want = bits.view(np.float32).astype(np.float16).view(np.uint16)
    ok = _same_or_both_nan(got, want, 16)
    assert ok.all(), "%d of %d differ, e.g. %s" % (
        (~ok).sum(), ok.size, ["0x%08X -> 0x%04X, numpy 0x%04X" % (b, g, w)
                               for b, g, w in zip(bits[~ok][:8], got[~ok][:8], want[~ok][:8])])


def test_every_bfloat16_pattern_reads_and_writes_back(device):
    bits = np.arange(2 ** 16, dtype=np.uint16)
    t = _from_bits(bits, ember.bfloat16, device)
    with np.errstate(invalid="ignore"):  # signalling nan patterns
        want = (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)  # float32's top half
    got = np.array(t.tolist(), dtype=np.float64)
    same = (got == want) | (np.isnan(got) & np.isnan(want))
    assert same.all(), "bfloat16 bits read wrong: %s" % [hex(b) for b in bits[~same][:10]]
    nan = np.isnan(want)
    assert np.array_equal(_u16(t)[~nan], bits[~nan]), "bfloat16 bits do not round-trip"


def test_float32_to_bfloat16_matches_torch(device):
    torch = pytest.importorskip("torch", reason="torch==2.13.0 (ember[dev]) is the bfloat16 reference")
    bits = _sample_f32_bits(2)
    t = _from_bits(bits, ember.float32, device).to(ember.bfloat16)
    got = _u16(t)
    want = torch.from_numpy(bits.view(np.float32).copy()).to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16)
    exp, man = 0x7F80, 0x007F
    ok = (got == want) | (((got & exp) == exp) & ((got & man) != 0) & ((want & exp) == exp) & ((want & man) != 0))
    assert ok.all(), "%d of %d differ, e.g. %s" % (
        (~ok).sum(), ok.size, ["0x%08X -> 0x%04X, torch 0x%04X" % (b, g, w)
                               for b, g, w in zip(bits[~ok][:8], got[~ok][:8], want[~ok][:8])])


def test_float64_to_float32_matches_numpy(device):
    rng = np.random.default_rng(3)
    bits = rng.integers(0, 2 ** 64, size=100_000, dtype=np.uint64)
    values = bits.view(np.float64)
    # keep the interesting range (around float32's) and a share of everything else
    values = np.concatenate([values[:20_000], np.ldexp(rng.standard_normal(80_000), rng.integers(-160, 140, 80_000))])
    t = ember.tensor(values.astype("<f8").tobytes(), dtype=ember.float64, shape=(values.size,), device=device)
    got = np.frombuffer(t.to(ember.float32).to_bytes(), dtype="<u4")
    with np.errstate(over="ignore", invalid="ignore"):
        want = values.astype(np.float32).view(np.uint32)
    ok = _same_or_both_nan(got, want, 32)
    assert ok.all(), "%d differ, e.g. %r" % ((~ok).sum(), values[~ok][:5])


def test_float64_to_half_types_round_through_float32_like_torch(device):
    # ember (like torch) rounds float64 to float16/bfloat16 through float32; numpy rounds directly,
    # so the two can differ by one ulp on values within 2**-29 relative of a half-way point
    torch = pytest.importorskip("torch", reason="torch==2.13.0 (ember[dev]) is the reference")
    rng = np.random.default_rng(4)
    values = np.ldexp(rng.standard_normal(50_000), rng.integers(-30, 20, 50_000))
    src = ember.tensor(values.astype("<f8").tobytes(), dtype=ember.float64, shape=(values.size,), device=device)
    for dtype, tdtype in ((ember.float16, torch.float16), (ember.bfloat16, torch.bfloat16)):
        got = _u16(src.to(dtype))
        want = torch.from_numpy(values).to(tdtype).view(torch.int16).numpy().view(np.uint16)
        assert np.array_equal(got, want), "%s: %d differ" % (dtype.name, (got != want).sum())
