"""The Torch device: construction, identity, laziness, random streams, TF32 switch, torch's autograd off.

The conformance suite (tests/conformance, ``-k torch``) checks every primitive's values against
numpy; this file checks what is particular to the device.
"""
import subprocess
import sys

import pytest
import torch

import ember
import ember.nn.functional as F
from ember.accel import Autodiff, Torch
from ember.accel.optim import SGD, GradientsParams
from ember.accel.torch import linalg
from ember.errors import ArgumentTypeError, DeviceError
from harness.check import assert_close


def test_devices_compare_by_torch_device():
    assert Torch() == Torch("cpu") == Torch(torch.device("cpu"))
    assert hash(Torch()) == hash(Torch("cpu"))
    assert Torch() != ember.Cpu()
    assert repr(Torch()) == "Torch('cpu')"
    x = ember.ones(2, device=Torch())
    with pytest.raises(DeviceError, match="Torch\\('cpu'\\).*Cpu\\(\\)|Cpu\\(\\).*Torch\\('cpu'\\)"):
        x + ember.ones(2)


def test_bad_devices_say_what_was_expected():
    with pytest.raises(DeviceError, match="expected a device \"cpu\", \"cuda\", \"cuda:N\" or \"mps\", found 'tpu'"):
        Torch("tpu")
    with pytest.raises(DeviceError, match="found 'meta'"):
        Torch("meta")
    with pytest.raises(ArgumentTypeError, match="found int"):
        Torch(3)
    with pytest.raises(ArgumentTypeError, match="tf32=True or False, found 'yes'"):
        Torch("cpu", tf32="yes")
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="needs a CUDA build of torch and a GPU"):
            Torch("cuda")


def test_import_ember_accel_does_not_import_torch():
    code = ("import sys, ember, ember.accel; assert 'torch' not in sys.modules; "
            "ember.accel.Autodiff; assert 'torch' not in sys.modules; "
            "ember.accel.Torch; assert 'torch' in sys.modules; print('ok')")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.float16, ember.bfloat16])
def test_random_draws_are_the_cpu_stream(dtype):
    for kind in ("rand", "randn"):
        ember.seed(7)
        ref = getattr(ember, kind)(5, 7, dtype=dtype).tolist()
        ember.seed(7)
        got = getattr(ember, kind)(5, 7, dtype=dtype, device=Torch())
        assert type(got._data) is torch.Tensor and got._data.dtype == linalg_dtype(dtype)
        assert got.tolist() == ref, kind
    ember.seed(3)
    ref = ember.randint(-5, 9, (40,)).tolist()
    ember.seed(3)
    assert ember.randint(-5, 9, (40,), device=Torch()).tolist() == ref


def linalg_dtype(dtype):
    from ember.accel.torch.arrays import TORCH
    return TORCH[dtype]


def test_integer_matmul_wraps_like_the_cpu():
    for dtype in (ember.int8, ember.uint8, ember.int32, ember.int64):
        a = [[100, 7], [3, 127]]
        b = [[3, 2], [5, 128 if dtype is ember.uint8 else -128]]
        ref = (ember.tensor(a, dtype=dtype) @ ember.tensor(b, dtype=dtype)).tolist()
        got = ember.tensor(a, dtype=dtype, device=Torch()) @ ember.tensor(b, dtype=dtype, device=Torch())
        assert got.dtype is dtype and got.tolist() == ref, dtype.name


def test_tf32_is_off_unless_asked_and_the_switch_is_put_back():
    m, c = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = (m.allow_tf32, c.allow_tf32)
    try:
        m.allow_tf32 = c.allow_tf32 = True  # torch's own default for cuDNN is True
        with linalg.precision(False):
            assert (m.allow_tf32, c.allow_tf32) == (False, False)
        assert (m.allow_tf32, c.allow_tf32) == (True, True)
        m.allow_tf32 = c.allow_tf32 = False
        with linalg.precision(True):
            assert (m.allow_tf32, c.allow_tf32) == (True, True)
        assert (m.allow_tf32, c.allow_tf32) == (False, False)
    finally:
        m.allow_tf32, c.allow_tf32 = saved
    assert Torch().tf32 is False and Torch("cpu", tf32=True).tf32 is True
    assert Torch("cpu", tf32=True) == Torch("cpu")  # the same memory: tensors of both meet


def test_training_steps_match_pytorch_and_torch_autograd_stays_off():
    dev = Autodiff(Torch())
    ember.seed(5)
    x = ember.randn(32, 8)
    y = ember.randint(0, 3, (32,))
    model = ember.nn.Sequential(ember.nn.Linear(8, 16), ember.nn.ReLU(), ember.nn.Linear(16, 3))
    ref = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))
    with torch.no_grad():
        for p, q in zip(ref.parameters(), [model[0].weight, model[0].bias, model[2].weight, model[2].bias]):
            p.copy_(torch.tensor(q.tolist()))
    model.to(dev)
    opt = SGD(model, lr=0.2, momentum=0.9)
    topt = torch.optim.SGD(ref.parameters(), lr=0.2, momentum=0.9)
    xd, yd = x.to(dev), y.to(dev)
    tx, ty = torch.tensor(x.tolist()), torch.tensor(y.tolist())
    for _ in range(5):
        loss = F.cross_entropy(model(xd), yd)
        assert loss._data.value.requires_grad is False and loss._data.value.grad_fn is None
        opt.step(GradientsParams.from_grads(loss.backward(), model))
        topt.zero_grad()
        torch.nn.functional.cross_entropy(ref(tx), ty).backward()
        topt.step()
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        assert_close(p.value, q.detach().tolist(), rtol=1e-5, atol=1e-6, msg=name)
        assert type(p.value.to(Torch())._data) is torch.Tensor
