"""ember.accel.autocast and GradScaler: which ops change dtype, gradients in float32, the scaler's
rule, and training runs that converge like float32, on Torch("cpu") and on the Cpu and NumPy devices."""
import math
import threading

import pytest
import torch

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.accel import Autodiff, GradScaler, Torch, autocast
from ember.accel.numpy import NumPy
from ember.accel.optim import SGD, GradientsParams
from ember.errors import ArgumentError, ArgumentTypeError
from harness.check import assert_close

DEVICES = [("torch", lambda: Torch()), ("numpy", lambda: NumPy()), ("cpu", lambda: ember.Cpu())]


@pytest.mark.parametrize("name,make", DEVICES)
@pytest.mark.parametrize("low", [ember.bfloat16, ember.float16])
def test_low_precision_ops_and_float32_ops(name, make, low):
    dev = make()
    ember.seed(1)
    x = ember.randn(4, 6, device=dev)
    w = ember.randn(5, 6, device=dev)
    b = ember.randn(5, device=dev)
    img = ember.randn(1, 2, 5, 5, device=dev)
    k = ember.randn(3, 2, 3, 3, device=dev)
    with autocast(low):
        y = F.linear(x, w, b)
        assert y.dtype is low
        assert (x @ w.T).dtype is low
        assert F.conv2d(img, k).dtype is low
        assert F.softmax(y, dim=1).dtype is ember.float32
        assert F.cross_entropy(y, ember.tensor([0, 1, 2, 3], device=dev)).dtype is ember.float32
        assert (x.double() @ w.double().T).dtype is ember.float64  # float64 is the user's choice: kept
        assert (x + 1).dtype is ember.float32  # elementwise ops keep their inputs' dtypes
    assert F.linear(x, w, b).dtype is ember.float32  # outside: unchanged
    # the value is the op on rounded inputs (torch computes the reference in the same low dtype)
    tl = {ember.bfloat16: torch.bfloat16, ember.float16: torch.float16}[low]
    ref = torch.nn.functional.linear(torch.tensor(x.tolist()).to(tl), torch.tensor(w.tolist()).to(tl),
                                     torch.tensor(b.tolist()).to(tl)).float()
    tol = 1e-2 if low is ember.bfloat16 else 2e-3
    assert_close(y.float(), ref.tolist(), rtol=tol, atol=tol)


def test_blocks_nest_turn_off_and_stay_in_their_thread():
    x = ember.ones(2, 2, device=Torch())
    seen = []
    with autocast(ember.float16):
        with autocast(ember.bfloat16):
            assert (x @ x).dtype is ember.bfloat16
            with autocast(None):
                assert (x @ x).dtype is ember.float32
            with autocast(ember.float16, enabled=False):  # a no-op block keeps the outer dtype
                assert (x @ x).dtype is ember.bfloat16
        assert (x @ x).dtype is ember.float16
        t = threading.Thread(target=lambda: seen.append((x @ x).dtype))
        t.start()
        t.join()
    assert seen == [ember.float32]
    assert (x @ x).dtype is ember.float32
    from ember import composite
    assert composite.CAST_POLICY == []  # nothing left installed: the core pays one truth test


def test_bad_arguments_say_what_was_expected():
    with pytest.raises(ArgumentError, match="autocast: expected dtype float16 or bfloat16, found float64"):
        autocast(ember.float64)
    with pytest.raises(ArgumentError, match="expected enabled=True or False"):
        autocast(ember.float16, enabled="no")
    with pytest.raises(ArgumentError, match="GradScaler: expected init_scale > 0, found -1"):
        GradScaler(init_scale=-1)
    with pytest.raises(ArgumentError, match="growth_factor > 1, found 0.5"):
        GradScaler(growth_factor=0.5)
    with pytest.raises(ArgumentError, match="backoff_factor < 1, found 2"):
        GradScaler(backoff_factor=2)
    with pytest.raises(ArgumentError, match="growth_interval an int >= 1, found 0"):
        GradScaler(growth_interval=0)
    with pytest.raises(ArgumentTypeError, match="expected a loss tensor, found float"):
        GradScaler().scale(1.0)
    with pytest.raises(ArgumentTypeError, match="expected Gradients or GradientsParams, found dict"):
        GradScaler().step(SGD([nn.Param(ember.ones(2))], lr=0.1), {})


def test_gradients_come_back_float32_and_close_to_float32_ones():
    dev = Autodiff(Torch())
    ember.seed(2)
    model = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 3)).to(dev)
    x = ember.randn(16, 6, device=dev)
    y = ember.randint(0, 3, (16,), device=dev)
    g32 = GradientsParams.from_grads(F.cross_entropy(model(x), y).backward(), model)
    with autocast(ember.bfloat16):
        loss = F.cross_entropy(model(x), y)
    g16 = GradientsParams.from_grads(loss.backward(), model)
    assert len(g16) == 4
    for (n, p) in model.named_parameters():
        assert g16.get(p).dtype is ember.float32, n
        assert_close(g16.get(p), g32.get(p).tolist(), rtol=0.05, atol=0.02, msg=n)


def _grads(by_id):
    return GradientsParams({k: ember.tensor(v, device=Torch()) for k, v in by_id.items()})


def test_scaler_skips_inf_and_nan_steps_and_backs_off_then_grows():
    p = nn.Param(ember.tensor([1.0, 2.0], device=Torch()))
    opt = SGD([p], lr=1.0)
    scaler = GradScaler(init_scale=8.0, growth_interval=2)
    assert scaler.scale(ember.tensor(3.0, device=Torch())).item() == 24.0
    for bad in (math.inf, math.nan):
        assert scaler.step(opt, _grads({p.id: [bad, 0.0]})) is False
        scaler.update()
        assert p.value.tolist() == [1.0, 2.0]
    assert scaler.get_scale() == 2.0  # 8 halved twice
    assert scaler.step(opt, _grads({p.id: [4.0, -2.0]})) is True  # unscaled: [2, -1]
    scaler.update()
    assert p.value.tolist() == [-1.0, 3.0] and scaler.get_scale() == 2.0
    scaler.step(opt, _grads({p.id: [0.0, 0.0]}))
    scaler.update()
    assert scaler.get_scale() == 4.0  # two clean steps in a row: doubled
    state = scaler.state_dict()
    other = GradScaler()
    other.load_state_dict(state)
    assert other.get_scale() == 4.0 and other.state_dict() == state


def test_scaler_follows_torchs_gradscaler_scale_sequence():
    verdicts = [False, True, False, False, False, True, True, False, False, False]
    ours = GradScaler(init_scale=1024.0, growth_interval=3)
    theirs = torch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=3)
    p = nn.Param(ember.tensor([0.0], device=Torch()))
    opt = SGD([p], lr=0.0)
    tp = torch.zeros(1, requires_grad=True)
    topt = torch.optim.SGD([tp], lr=0.0)
    for inf in verdicts:
        ours.step(opt, _grads({p.id: [math.inf if inf else 1.0]}))
        ours.update()
        topt.zero_grad()
        theirs.scale(torch.ones(()))  # torch's scaler starts its bookkeeping here
        tp.grad = torch.tensor([math.inf if inf else 1.0])
        theirs.step(topt)
        theirs.update()
        assert ours.get_scale() == theirs.get_scale()


def test_scaler_serves_pytorchs_loop():
    dev = Autodiff(Torch())
    p = nn.Param(ember.tensor([1.0, -1.0], device=dev))
    opt = SGD([p], lr=0.5)
    scaler = GradScaler(init_scale=4.0)
    opt.zero_grad()
    scaler.scale((p.value * p.value).sum()).backward()  # grad 2p, scaled by 4
    assert scaler.step(opt) is True
    scaler.update()
    assert p.value.tolist() == [0.0, 0.0]
    disabled = GradScaler(enabled=False)
    loss = ember.tensor(2.0)
    assert disabled.scale(loss) is loss and disabled.get_scale() == 1.0


def _task(dev):
    """A fixed 3-class problem from a random teacher: 96 points in 8 dims."""
    ember.seed(4)
    x = ember.randn(96, 8)
    teacher = ember.randn(8, 3)
    y = (x @ teacher).argmax(dim=1)
    return x.to(dev), y.to(dev)


def _train(dev, low, steps, scaler=None):
    x, y = _task(dev)
    ember.seed(9)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 3)).to(dev)
    opt = SGD(model, lr=0.5, momentum=0.9)
    losses = []
    for _ in range(steps):
        with autocast(low, enabled=low is not None):
            loss = F.cross_entropy(model(x), y)
        losses.append(loss.item())
        if scaler is None:
            opt.step(GradientsParams.from_grads(loss.backward(), model))
        else:
            scaler.step(opt, GradientsParams.from_grads(scaler.scale(loss).backward(), model))
            scaler.update()
    for _, p in model.named_parameters():
        assert p.value.dtype is ember.float32  # master weights stay float32
    return losses


@pytest.mark.parametrize("name,make,low,steps", [
    ("torch", lambda: Torch(), ember.bfloat16, 60),
    ("torch", lambda: Torch(), ember.float16, 60),
    ("numpy", lambda: NumPy(), ember.float16, 60),
    ("cpu", lambda: ember.Cpu(), ember.bfloat16, 12),
])
def test_training_with_autocast_converges_like_float32(name, make, low, steps):
    dev = Autodiff(make())
    ref = _train(dev, None, steps)
    got = _train(dev, low, steps, GradScaler(init_scale=2.0 ** 12) if low is ember.float16 else None)
    assert ref[-1] < 0.5 * ref[0]  # the float32 run learns
    assert abs(got[-1] - ref[-1]) < 0.05 + 0.1 * ref[-1], (got[-1], ref[-1])
    assert abs(got[0] - ref[0]) < 0.02
