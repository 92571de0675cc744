"""The Candle device (ember.accel.candle) on the cases where candle and ember could part ways.

The conformance suite runs every op on Candle() and Autodiff(Candle()); this file checks what that
suite cannot see: the exact exchange of every dtype, each native path's trap (NaN in max/min, the
sign of -0, f32 sums, half matmuls, wrapping ints, gather's bounds), threads, empties, the lazy
import, and that docs/candle.md names every primitive.
"""
import os
import struct
import subprocess
import sys
import threading

import numpy as np
import pytest

try:
    import candle  # noqa: F401
except ImportError as e:  # a required package: fail, never skip
    raise ImportError("tests/accel/candle need candle-nn==0.4.2 (pip install -e '.[candle]'): %s" % e)

import ember
import ember.optim
from ember import dtypes
from ember.accel import Autodiff, Candle, NumPy
from ember.backend import PRIMITIVES
from ember.errors import IndexOutOfRange

DEV = Candle()
REF = NumPy()
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

EXTREMES = {
    dtypes.float32: ("<f4", [0.0, -0.0, 1.5, float("inf"), float("-inf"), 1e-45, 3.4028234663852886e38]),
    dtypes.float64: ("<f8", [0.0, -0.0, 5e-324, 1.7976931348623157e308, -2.5, float("inf"), 0.1]),
    dtypes.float16: ("<f2", [0.0, -0.0, 6e-08, 65504.0, -1.0009765625, float("inf"), 0.5]),
    dtypes.int64: ("<i8", [-2 ** 63, 2 ** 63 - 1, 0, -1, 2 ** 40, 7, -9]),
    dtypes.int32: ("<i4", [-2 ** 31, 2 ** 31 - 1, 0, -1, 65536, 7, -9]),
    dtypes.int8: ("<i1", [-128, 127, 0, -1, 64, 7, -9]),
    dtypes.uint8: ("u1", [0, 255, 1, 128, 64, 7, 9]),
}


@pytest.mark.parametrize("dtype", list(EXTREMES) + [dtypes.bfloat16, dtypes.bool_], ids=lambda d: d.name)
def test_bytes_round_trip_exactly_for_every_dtype(dtype):
    if dtype is dtypes.bfloat16:
        raw = struct.pack("<7H", 0x0000, 0x8000, 0x0001, 0x7F7F, 0xFF80, 0x3F81, 0x7FC0)
    elif dtype is dtypes.bool_:
        raw = bytes([0, 1, 1, 0, 1, 0, 0])
    else:
        layout, values = EXTREMES[dtype]
        raw = np.array(values, dtype=layout).tobytes()
    t = ember.tensor(raw, dtype=dtype, shape=(7,), device=DEV)
    assert t.to_bytes() == raw
    want = ember.tensor(raw, dtype=dtype, shape=(7,), device=REF).tolist()
    assert [repr(v) for v in t.tolist()] == [repr(v) for v in want]  # repr: nan equals nan, -0.0 is not 0.0


def _pair(values, dtype, shape):
    return (ember.tensor(values, dtype=dtype, device=DEV).reshape(shape),
            ember.tensor(values, dtype=dtype, device=REF).reshape(shape))


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.to_bytes() == b.to_bytes(), (a.tolist(), b.tolist())


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16], ids=str)
def test_max_and_min_propagate_nan_as_numpy_does(dtype):
    nan = float("nan")
    c, n = _pair([1.0, nan, 3.0, -2.0, 5.0, 0.5, nan, nan, -1.0], dtype, (3, 3))
    for dim in (0, 1):
        _same(c.max(dim).values, n.max(dim).values)
        _same(c.min(dim).values, n.min(dim).values)


def test_neg_of_zero_is_negative_zero():
    c, n = _pair([0.0, -0.0, 2.0], ember.float32, (3,))
    _same(-c, -n)
    assert struct.unpack("<3f", (-c).to_bytes())[0] == 0.0 and str((-c).tolist()[0]) == "-0.0"


def test_float32_sum_is_rounded_once_from_float64():
    g = np.random.default_rng(0)
    v = (g.standard_normal(1 << 20) * 1e3 + 1e4).astype(np.float32)
    got = ember.tensor(v.tobytes(), dtype=ember.float32, shape=v.shape, device=DEV).sum().item()
    assert got == float(np.float32(v.astype(np.float64).sum()))


def test_half_matmul_accumulates_in_float32():
    a = np.full((2, 4096), 1.0 + 2.0 ** -10, dtype=np.float16)  # a float16 sum would stall at 2048
    b = np.full((4096, 3), 1.0, dtype=np.float16)
    ta = ember.tensor(a.tobytes(), dtype=ember.float16, shape=a.shape, device=DEV)
    tb = ember.tensor(b.tobytes(), dtype=ember.float16, shape=b.shape, device=DEV)
    want = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    assert (ta @ tb).tolist() == want.tolist()


@pytest.mark.parametrize("dtype,values,op", [
    (ember.int32, [2 ** 31 - 1, -2 ** 31, 5], lambda x: x + 1),
    (ember.int32, [2 ** 30, -3, 7], lambda x: x * 4),
    (ember.int8, [127, -128, 100], lambda x: x + x),
    (ember.uint8, [0, 3, 255], lambda x: x - 4),
    (ember.uint8, [200, 3, 255], lambda x: x * x),
    (ember.int64, [2 ** 63 - 1, -2 ** 63, 3], lambda x: x + 1),
], ids=["i32.add", "i32.mul", "i8.add", "u8.sub", "u8.mul", "i64.add"])
def test_integer_arithmetic_wraps_like_numpy(dtype, values, op):
    c, n = _pair(values, dtype, (3,))
    _same(op(c), op(n))


def test_gather_reads_narrower_index_and_refuses_out_of_range():
    x = ember.arange(12, device=DEV).reshape(3, 4).float()
    idx = ember.tensor([[3, 0], [1, 1]], device=DEV)  # 2 rows of 3, 2 columns of 4
    assert x.gather(1, idx).tolist() == [[3.0, 0.0], [5.0, 5.0]]
    with pytest.raises(IndexOutOfRange, match="out of range"):
        x.gather(1, ember.tensor([[4, 0]], device=DEV)).tolist()


def test_stepped_slices_and_permutes_of_views_match_numpy():
    g = np.random.default_rng(1)
    v = g.standard_normal((2, 3, 4, 5)).astype(np.float32)
    c = ember.tensor(v.tobytes(), dtype=ember.float32, shape=v.shape, device=DEV)
    for perm in ((3, 1, 0, 2), (1, 2, 3, 0), (0, 3, 2, 1)):
        p = c.permute(*perm)
        assert p.tolist() == v.transpose(perm).tolist()
        assert p.flip(1)[:, ::2].tolist() == v.transpose(perm)[:, ::-1][:, ::2].tolist()


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16], ids=str)
def test_composed_conv_matches_numpy(dtype):
    import ember.nn.functional as F
    out = []
    for dev in (DEV, REF):
        ember.seed(1)
        x = ember.randn(2, 4, 9, 7, device=dev).to(dtype)
        w = ember.randn(6, 2, 3, 2, device=dev).to(dtype)
        out.append(np.array(F.conv2d(x, w, stride=(2, 1), padding=(1, 2), dilation=(1, 2), groups=2).float().tolist()))
        x1, w1 = x.reshape(2, 4, 63), w.reshape(6, 2, 6)
        out.append(np.array(F.conv1d(x1, w1, stride=3, padding=2, groups=2).float().tolist()))
    tol = 2e-3 if dtype is ember.float16 else 1e-5
    for got, want in ((out[0], out[2]), (out[1], out[3])):
        assert got.shape == want.shape and np.allclose(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [ember.float32, ember.bfloat16], ids=str)
def test_composed_pools_keep_nan_and_pads_as_numpy(dtype):
    import ember.nn.functional as F
    out = []
    for dev in (DEV, REF):
        ember.seed(2)
        x = ember.randn(2, 3, 7, 6, device=dev)
        x = ember.where(x > 1.5, ember.full_like(x, float("nan")), x).to(dtype)
        out.append(F.max_pool2d(x, (2, 3), stride=(1, 2), padding=1, dilation=(2, 1)))
        out.append(F.avg_pool2d(x, 3, stride=2, padding=1))
    for got, want in ((out[0], out[2]), (out[1], out[3])):
        assert [repr(v) for v in got.tolist()] == [repr(v) for v in want.tolist()]


def test_empty_arrays_take_the_host_road():
    e = ember.zeros(0, 3, device=DEV)
    assert (e + 1).shape == (0, 3)
    assert e.sum(0).tolist() == [0.0, 0.0, 0.0]
    assert ember.cat([e, ember.ones(2, 3, device=DEV)]).tolist() == [[1.0] * 3] * 2
    assert (e @ ember.ones(3, 2, device=DEV)).shape == (0, 2)


def test_threads_exchange_their_own_arrays():
    bad = []

    def work(k):
        for i in range(30):
            vals = [float(k * 1000 + i + j) for j in range(64)]
            t = ember.tensor(vals, device=DEV) * 1.0
            if t.tolist() != vals:
                bad.append((k, i))
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not bad
    from ember.accel.candle import exchange
    assert os.listdir(exchange._dir[0]) == []  # each transfer removes its file


def test_training_steps_match_the_numpy_device():
    def run(dev):
        ember.seed(3)
        model = ember.nn.Sequential(ember.nn.Linear(4, 8), ember.nn.ReLU(), ember.nn.Linear(8, 2)).to(Autodiff(dev))
        opt = ember.optim.SGD(model.parameters(), lr=0.1)
        x = ember.randn(16, 4).to(Autodiff(dev))
        y = ember.randn(16, 2).to(Autodiff(dev))
        losses = []
        for _ in range(3):
            loss = ((model(x) - y) ** 2).mean()
            grads = loss.backward()
            opt.step(grads)
            losses.append(loss.item())
        return losses
    got, want = run(DEV), run(REF)
    assert all(abs(a - b) <= 1e-5 * max(1.0, abs(b)) for a, b in zip(got, want)), (got, want)
    assert got[-1] < got[0]


def test_the_docs_table_names_every_primitive():
    with open(os.path.join(ROOT, "docs", "candle.md")) as f:
        text = f.read()
    missing = [p for p in PRIMITIVES if "| `%s`" % p not in text]
    assert not missing, "docs/candle.md lacks rows for %s" % missing


def _python(code):
    env = dict(os.environ)
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT)


def test_import_ember_accel_does_not_import_candle():
    r = _python("import sys, ember, ember.accel\n"
                "assert 'candle' not in sys.modules\n"
                "ember.accel.Candle\n"
                "assert 'candle' in sys.modules\n")
    assert r.returncode == 0, r.stderr


def test_a_missing_binding_says_what_to_install():
    r = _python("import sys\nsys.modules['candle'] = None\n"
                "from ember.accel import Candle\n")
    assert r.returncode != 0
    assert "pip install 'ember[candle]'" in r.stderr and "candle-nn==0.4.2" in r.stderr, r.stderr
