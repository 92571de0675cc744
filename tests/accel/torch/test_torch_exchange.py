"""Exchange with torch tensors: shared memory where both sides can hold it, copies elsewhere, errors that say why."""
import numpy as np
import pytest
import torch

import ember
from ember.accel import Torch, from_torch, to_torch
from ember.errors import ArgumentTypeError, DTypeError
from harness.check import assert_close


def test_from_torch_shares_memory_on_its_own_device():
    src = torch.arange(6.0).reshape(2, 3)
    x = from_torch(src)
    assert x.device == Torch("cpu") and x.shape == (2, 3) and x.dtype is ember.float32
    assert to_torch(x).data_ptr() == src.data_ptr()
    src[0, 1] = 42.0
    assert x.tolist() == [[0.0, 42.0, 2.0], [3.0, 4.0, 5.0]]


def test_from_torch_takes_views_and_cuts_the_autograd_graph():
    leaf = torch.arange(12.0).reshape(3, 4).requires_grad_()
    view = leaf.t()[1:, ::2]  # a strided view of a tensor that requires grad
    x = from_torch(view)
    assert x._data.requires_grad is False
    assert x.tolist() == view.detach().tolist()
    assert (x * 2).sum().item() == float(view.detach().sum() * 2)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int8, torch.uint8, torch.int32, torch.int64,
                                   torch.float16, torch.bfloat16, torch.float32, torch.float64])
def test_every_dtype_round_trips(dtype):
    src = torch.tensor([[0, 1, 3], [5, 0, 1]]).to(dtype)
    x = from_torch(src)
    assert x.dtype.name == str(dtype).replace("torch.", "").replace("bool", "bool")
    back = to_torch(x)
    assert back.dtype == dtype and torch.equal(back, src)
    on_cpu = from_torch(src, device=ember.Cpu())  # a copy onto another device
    assert on_cpu.device == ember.Cpu() and on_cpu.tolist() == src.tolist()
    assert torch.equal(to_torch(on_cpu), src)


def test_unsupported_dtypes_and_types_say_what_to_do():
    with pytest.raises(DTypeError, match="found torch.complex64 \\(ember has no complex dtype"):
        from_torch(torch.zeros(2, dtype=torch.complex64))
    with pytest.raises(DTypeError, match="found torch.int16 \\(convert first, e.g. t.to\\(torch.int32\\)\\)"):
        from_torch(torch.zeros(2, dtype=torch.int16))
    with pytest.raises(ArgumentTypeError, match="from_torch: expected a torch.Tensor, found list"):
        from_torch([1, 2])
    with pytest.raises(ArgumentTypeError, match="to_torch: expected an ember.Tensor, found Tensor"):
        to_torch(torch.zeros(2))
    with pytest.raises(ArgumentTypeError, match="expected a device"):
        from_torch(torch.zeros(2), device="cpu")


def test_dlpack_and_numpy_share_torch_cpu_memory():
    x = ember.arange(6, dtype=ember.float32, device=Torch()).reshape(2, 3)
    t = torch.from_dlpack(x)
    assert t.data_ptr() == x._data.data_ptr() and t.tolist() == x.tolist()
    a = np.asarray(x)
    assert a.ctypes.data == x._data.data_ptr() and not a.flags.writeable
    assert a.tolist() == x.tolist()
    b = x.to(ember.bfloat16)
    assert b.numpy().dtype == np.float32 and b.numpy().tolist() == b.tolist()
    # other devices keep numpy's hooks
    assert np.asarray(ember.ones(2)).tolist() == [1.0, 1.0]


def test_tensors_move_between_torch_and_other_devices():
    x = ember.tensor([[1.5, -2.0], [3.25, 0.0]], dtype=ember.float16)
    y = x.to(Torch())
    assert y.device == Torch() and y.dtype is ember.float16 and y.tolist() == x.tolist()
    assert_close(y.to(ember.Cpu()), x.tolist(), rtol=0, atol=0)
