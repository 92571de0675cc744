"""Exchange with numpy, PyTorch and DLPack: what is shared (writes show through) and what is copied.

docs/interop.md states the promises these tests check:
- ``from_numpy``/``from_dlpack`` onto the NumPy device share memory; onto Cpu they copy;
- ``Tensor.numpy()``/``np.asarray(t)`` on the NumPy device are read-only views, elsewhere copies;
- ``__dlpack__`` exports the NumPy device's memory (copies for Cpu tensors, negative strides and
  consumers of DLPack < 1.0);
- ``tensor.to(device)`` between Cpu and NumPy keeps every dtype's values exactly.
"""
import numpy as np
import pytest

import ember
from ember import dtypes
from ember.accel import NumPy, from_dlpack, from_numpy
from ember.accel.numpy import interop
from harness import check

CPU = ember.Cpu()
NPD = NumPy()
NAN, INF = float("nan"), float("inf")

NP_TYPES = {
    dtypes.bool_: np.bool_, dtypes.int8: np.int8, dtypes.int32: np.int32, dtypes.int64: np.int64,
    dtypes.float16: np.float16, dtypes.float32: np.float32, dtypes.float64: np.float64,
}
ALL = (dtypes.bool_, dtypes.int8, dtypes.int32, dtypes.int64, dtypes.float16, dtypes.bfloat16,
       dtypes.float32, dtypes.float64)


def sample(dtype):
    """Values that exercise every dtype: extremes, specials, values needing all the bits."""
    if dtype is dtypes.bool_:
        return [True, False, True, True, False, False]
    if dtype.kind == "i":
        return [dtype.lo, dtype.hi, 0, -1, 7, dtype.lo + 1]
    big = {dtypes.float16: 65504.0, dtypes.bfloat16: 3.3895313892515355e38}.get(dtype, 3.0e38)
    tiny = {dtypes.float16: 6e-08, dtypes.bfloat16: 1e-40, dtypes.float32: 1e-45}.get(dtype, 5e-324)
    return [NAN, INF, -0.0, big, tiny, 1.0 / 3.0]


def same(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w), (got, want)
        if w != w:
            assert g != g, (got, want)
        else:
            assert g == w, (got, want)
            if type(w) is float and w == 0:
                assert str(g) == str(w), (got, want)  # the sign of zero


def flat(t):
    return t.reshape(-1).tolist() if t.shape else [t.item()]


# -- from_numpy ---------------------------------------------------------------------------------

def test_from_numpy_shares_memory_every_dtype():
    for dtype, nt in NP_TYPES.items():
        values = sample(dtype)
        a = np.array(values, dtype=nt).reshape(2, 3)
        t = from_numpy(a)
        assert t.device == NPD and t.dtype is dtype and t.shape == (2, 3)
        same(flat(t), [nt(v).item() for v in values] if dtype.kind != "f" else
             [float(nt(v)) for v in values])
        assert np.shares_memory(t.numpy(), a)
        a[0, 1] = a[1, 2]  # a write to the array shows in the tensor
        assert flat(t)[1] == a[0, 1].item() or (a[0, 1] != a[0, 1])


def test_from_numpy_write_through_and_views():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = from_numpy(a)
    row = t[1]          # a view of the same memory
    tt = t.T
    a[1, 2] = -5.0
    assert t.tolist()[1][2] == -5.0 and row.tolist()[2] == -5.0 and tt.tolist()[2][1] == -5.0


def test_from_numpy_non_contiguous():
    base = np.arange(60, dtype=np.float64).reshape(3, 4, 5)
    for a in (base[:, ::2, 1:4], base.transpose(2, 0, 1), base[::-1, :, ::-2], base[:, 1, :],
              np.broadcast_to(base[0:1, 0:1, :], (3, 4, 5)), base[..., 3]):
        t = from_numpy(a)
        assert t.shape == a.shape
        assert t.tolist() == a.tolist()
        assert (t * 2 + 1).tolist() == (a * 2 + 1).tolist()
        assert t.sum(0).tolist() == a.sum(0).tolist()
        assert np.shares_memory(t.numpy(), base)
        assert t.to_bytes() == np.ascontiguousarray(a).tobytes()


def test_from_numpy_onto_cpu_copies():
    for dtype, nt in NP_TYPES.items():
        a = np.array(sample(dtype), dtype=nt)
        t = from_numpy(a, device=CPU)
        assert t.device == CPU and t.dtype is dtype
        before = flat(t)
        same(before, a.tolist())
        a[2] = a[0]
        same(flat(t), before)  # the copy does not see later writes
    t = from_numpy(np.arange(6, dtype=np.int32)[::-2].reshape(3, 1), device=CPU)
    assert t.tolist() == [[5], [3], [1]]


def test_from_numpy_scalars_empty_and_byte_order():
    t = from_numpy(np.array(2.5, dtype=np.float32))
    assert t.shape == () and t.item() == 2.5
    t = from_numpy(np.float64(-1.25))
    assert t.shape == () and t.dtype is dtypes.float64 and t.item() == -1.25
    t = from_numpy(np.zeros((0, 3), dtype=np.int64))
    assert t.shape == (0, 3) and t.tolist() == []
    big = np.array([1.5, -2.0, 3.25], dtype=">f4")
    t = from_numpy(big)
    assert t.dtype is dtypes.float32 and t.tolist() == [1.5, -2.0, 3.25]
    assert not np.shares_memory(t.numpy(), big)  # converted to native order: a copy
    t = from_numpy(np.array([1, -2], dtype=">i8"), device=CPU)
    assert t.tolist() == [1, -2]


def test_from_numpy_bad_input():
    for a, text in ((np.array([1 + 2j]), "complex128"), (np.array([1, "x"], dtype=object), "object"),
                    (np.array([1, 2], dtype=np.uint16), "uint16"), (np.array(["ab"]), "<U2"),
                    (np.array([1], dtype=np.int16), "int16"), (np.array([1.0], dtype=np.longdouble), "float"),
                    (np.array(["2020-01-01"], dtype="datetime64[D]"), "datetime64")):
        with check.raises(ember.DTypeError, "from_numpy: expected a numpy array of") as e:
            from_numpy(a)
        assert text in str(e.value), str(e.value)
    with check.raises(ember.DTypeError, "a.astype(np.int32)"):
        from_numpy(np.array([1, 2], dtype=np.uint16))
    u = from_numpy(np.array([0, 255], dtype=np.uint8), device=CPU)  # uint8 is an ember dtype
    assert u.dtype is ember.uint8 and u.tolist() == [0, 255]
    for bad in ([1.0, 2.0], 3.0, "x", None):
        with check.raises(ember.ArgumentTypeError, "from_numpy: expected a numpy.ndarray"):
            from_numpy(bad)
    with check.raises(ember.ArgumentTypeError, "from_numpy: expected a device"):
        from_numpy(np.zeros(2), device="cpu")


def test_value_semantics_with_shared_memory():
    a = np.arange(6, dtype=np.float32)
    t = from_numpy(a)
    alias = t.reshape(2, 3)
    t[1:3] = 9.0           # a new array for t: neither a nor alias change
    assert a.tolist() == [0, 1, 2, 3, 4, 5]
    assert alias.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert t.tolist() == [0, 9, 9, 3, 4, 5]
    s = t.scatter(0, ember.tensor([0], device=NPD), ember.tensor([7.0], device=NPD))
    assert t.tolist()[0] == 0 and s.tolist()[0] == 7


# -- Tensor.numpy(), np.asarray(t) ---------------------------------------------------------------

def test_numpy_is_a_readonly_view_on_the_numpy_device():
    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=NPD)
    v = t.numpy()
    assert isinstance(v, np.ndarray) and v.dtype == np.float32 and not v.flags.writeable
    assert np.shares_memory(v, t._data)
    with pytest.raises(ValueError):
        v[0, 0] = 5.0
    assert t.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    w = t.T[1].numpy()
    assert w.tolist() == [2.0, 4.0] and np.shares_memory(w, t._data)


def test_numpy_copies_on_cpu_every_dtype():
    for dtype in ALL:
        t = ember.tensor(sample(dtype), dtype=dtype, device=CPU).reshape(2, 3)
        a = t.numpy()
        assert a.flags.writeable and a.shape == (2, 3)
        want = np.float32 if dtype is dtypes.bfloat16 else NP_TYPES[dtype]
        assert a.dtype == want
        same([float(v) if dtype.kind == "f" else v for v in a.ravel().tolist()], flat(t))
        a[0, 0] = a[1, 1]
        same(flat(t), flat(ember.tensor(sample(dtype), dtype=dtype)))


def test_numpy_every_dtype_on_the_numpy_device():
    for dtype in ALL:
        t = ember.tensor(sample(dtype), dtype=dtype, device=NPD)
        a = t.numpy()
        assert a.dtype == (np.float32 if dtype is dtypes.bfloat16 else NP_TYPES[dtype])
        same([float(v) if dtype.kind == "f" else v for v in a.tolist()], flat(t))


def test_array_protocol():
    t = ember.tensor([1.0, 2.0, 3.0], device=NPD)
    a = np.asarray(t)
    assert np.shares_memory(a, t._data) and not a.flags.writeable
    c = np.array(t)
    assert not np.shares_memory(c, t._data) and c.flags.writeable
    c2 = np.asarray(t, copy=True)
    assert not np.shares_memory(c2, t._data) and c2.flags.writeable
    assert np.shares_memory(np.asarray(t, copy=False), t._data)
    d = np.asarray(t, dtype=np.float64)
    assert d.dtype == np.float64 and d.tolist() == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError):
        np.asarray(t, dtype=np.float64, copy=False)
    u = ember.tensor([1.0, 2.0], device=CPU)
    assert np.asarray(u).tolist() == [1.0, 2.0] and np.asarray(u).flags.writeable
    with pytest.raises(ValueError):
        np.asarray(u, copy=False)
    assert (np.asarray(t) + 1).tolist() == [2.0, 3.0, 4.0]


# -- DLPack ---------------------------------------------------------------------------------------

def test_dlpack_to_numpy():
    t = ember.tensor([[1, 2], [3, 4]], dtype=ember.int32, device=NPD)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.tolist() == [[1, 2], [3, 4]] and np.shares_memory(a, t._data) and not a.flags.writeable
    u = ember.tensor([1.5, 2.5], device=CPU)
    assert u.__dlpack_device__() == (1, 0)
    b = np.from_dlpack(u)
    assert b.tolist() == [1.5, 2.5]
    f = t.flip(1)  # negative strides are exported as a copy
    assert np.from_dlpack(f).tolist() == [[2, 1], [4, 3]]
    e = ember.tensor([1.0, 2.0], device=NPD).reshape(2, 1).expand(2, 3)
    assert np.from_dlpack(e).tolist() == [[1.0] * 3, [2.0] * 3]
    with check.raises(BufferError, "bfloat16"):
        np.from_dlpack(ember.tensor([1.0], dtype=ember.bfloat16, device=NPD))


def test_dlpack_legacy_consumer_gets_a_copy():
    t = ember.tensor([1.0, 2.0], device=NPD)

    class Legacy:  # asks as a DLPack < 1.0 consumer does (no max_version): no read-only flag
        def __dlpack__(self, **kwargs):
            return interop.dlpack(t, None)

        def __dlpack_device__(self):
            return (1, 0)

    a = np.from_dlpack(Legacy())
    assert a.tolist() == [1.0, 2.0] and not np.shares_memory(a, t._data)


def test_dlpack_to_torch():
    torch = pytest.importorskip("torch")
    for dtype, tt in ((dtypes.float32, torch.float32), (dtypes.float64, torch.float64), (dtypes.int64, torch.int64),
                      (dtypes.int8, torch.int8), (dtypes.int32, torch.int32), (dtypes.bool_, torch.bool),
                      (dtypes.float16, torch.float16)):
        t = ember.tensor(sample(dtype), dtype=dtype, device=NPD).reshape(3, 2)
        x = torch.from_dlpack(t)
        assert x.dtype == tt and tuple(x.shape) == (3, 2)
        same([float(v) if dtype.kind == "f" else v for v in x.reshape(-1).tolist()], flat(t))
        assert np.shares_memory(x.numpy(), t._data)  # no copy
        c = ember.tensor(sample(dtype), dtype=dtype, device=CPU)
        same([float(v) if dtype.kind == "f" else v for v in torch.from_dlpack(c).tolist()], flat(c))
    s = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=NPD)
    assert torch.from_dlpack(s.T).tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert torch.from_dlpack(s.flip(1)).tolist() == [[3.0, 2.0, 1.0], [6.0, 5.0, 4.0]]  # negative strides


def test_from_dlpack_torch_shares_memory():
    torch = pytest.importorskip("torch")
    for tt, dtype in ((torch.float32, dtypes.float32), (torch.float64, dtypes.float64), (torch.int64, dtypes.int64),
                      (torch.int32, dtypes.int32), (torch.int8, dtypes.int8), (torch.float16, dtypes.float16),
                      (torch.bool, dtypes.bool_)):
        x = torch.tensor([[1, 0, 3], [4, 5, 0]], dtype=tt)
        t = from_dlpack(x)
        assert t.device == NPD and t.dtype is dtype and t.shape == (2, 3)
        assert t.tolist() == x.tolist()
        x[0, 0] = 0 if tt is torch.bool else 9  # a write through torch shows in the ember tensor
        assert t.tolist() == x.tolist()
    x = torch.arange(12.0).reshape(3, 4).t()  # non-contiguous
    t = from_dlpack(x)
    assert t.tolist() == x.tolist() and (t @ t.T).tolist() == (x @ x.t()).tolist()
    c = from_dlpack(torch.tensor([1.0, 2.0]), device=CPU)
    assert c.device == CPU and c.tolist() == [1.0, 2.0]


def test_from_dlpack_torch_bfloat16_is_copied_exactly():
    torch = pytest.importorskip("torch")
    x = torch.tensor([1.0, -2.5, 3.140625, 1e38, float("inf"), -0.0], dtype=torch.bfloat16)
    for dev in (NPD, CPU):
        t = from_dlpack(x, device=dev)
        assert t.dtype is dtypes.bfloat16 and t.device == dev
        same(t.tolist(), x.float().tolist())
        assert t.to_bytes() == x.view(torch.int16).numpy().astype("<i2").tobytes()
    t = from_dlpack(x)
    x[0] = 7.0
    assert t.tolist()[0] == 1.0  # a copy


def test_from_dlpack_errors_and_other_sources():
    torch = pytest.importorskip("torch")
    with check.raises(ember.ArgumentError, "detach"):
        from_dlpack(torch.ones(2, requires_grad=True))
    with check.raises(ember.DTypeError, "int16"):
        from_dlpack(torch.tensor([1, 2], dtype=torch.int16))
    with check.raises(ember.ArgumentTypeError, "from_dlpack: expected an object with __dlpack__"):
        from_dlpack([1.0, 2.0])
    a = np.arange(4.0)
    t = from_dlpack(a)
    a[0] = 8.0
    assert t.tolist()[0] == 8.0
    u = ember.tensor([1, 2], device=CPU)
    assert from_dlpack(u).device == NPD and from_dlpack(u).tolist() == [1, 2]
    assert from_dlpack(u, device=CPU) is u


def test_torch_roundtrip_through_ember():
    torch = pytest.importorskip("torch")
    x = torch.randn(4, 5)
    t = from_dlpack(x)
    y = torch.from_dlpack((t * 2).exp())
    assert torch.allclose(y, (x * 2).exp(), rtol=1e-6)


# -- tensor.to(device) ----------------------------------------------------------------------------

def test_to_device_every_dtype_both_ways():
    for dtype in ALL:
        values = sample(dtype)
        for src, dst in ((CPU, NPD), (NPD, CPU), (NPD, NPD), (CPU, CPU)):
            t = ember.tensor(values, dtype=dtype, device=src).reshape(3, 2)
            u = t.T.to(dst)  # a non-contiguous source
            assert u.device == dst and u.dtype is dtype and u.shape == (2, 3)
            same(flat(u), flat(t.T))
            assert u.to_bytes() == t.T.to_bytes()
            back = u.to(src)
            same(flat(back), flat(t.T))


def test_to_device_keeps_float_rounding():
    vals = [0.1, 1.0 / 3.0, 65519.0, 1e-8, 3.0e38]
    for dtype in (dtypes.float16, dtypes.bfloat16, dtypes.float32):
        c = ember.tensor(vals, dtype=dtype, device=CPU)
        n = ember.tensor(vals, dtype=dtype, device=NPD)
        same(n.tolist(), c.tolist())
        same(c.to(NPD).tolist(), n.tolist())
        same(n.to(CPU).tolist(), c.tolist())
        assert n.to_bytes() == c.to_bytes()


def test_devices_do_not_mix():
    with check.raises(ember.DeviceError, "NumPy()"):
        ember.tensor([1.0], device=CPU) + ember.tensor([1.0], device=NPD)


def test_accel_exports():
    import ember.accel
    assert ember.accel.NumPy is NumPy
    assert ember.accel.from_numpy is interop.from_numpy and ember.accel.from_dlpack is interop.from_dlpack
    assert "NumPy" in dir(ember.accel)
    with pytest.raises(AttributeError):
        ember.accel.NoSuchThing  # noqa: B018


def test_the_core_reaches_numpy_through_the_interop_hook():
    """tensor.py never imports ember.accel: a fresh interpreter that imports only ember still gets
    np.asarray(t) and t.numpy(), through ember.interop importing the default module on first use."""
    import subprocess
    import sys
    code = ("import sys, numpy as np, ember\n"
            "assert not any(k.startswith('ember.accel') for k in sys.modules)\n"
            "a = np.asarray(ember.ones(2)); assert a.tolist() == [1.0, 1.0]\n"
            "assert ember.tensor([3]).numpy().tolist() == [3]\n"
            "assert 'ember.accel.numpy.interop' in sys.modules\n")
    subprocess.run([sys.executable, "-c", code], check=True)
    import inspect
    source = inspect.getsource(sys.modules["ember.tensor"])
    assert "import ember.accel" not in source and "from ember.accel" not in source
    assert "nn.functional" not in source
