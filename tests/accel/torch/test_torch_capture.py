"""Step capture on the Torch device (``accel/capture/lower_torch.py``): on ``Torch("cpu")`` the plan
replays as a flat list of torch calls, on ``Torch("cuda")`` as one CUDA graph. Each check runs a
compiled and an eager copy of the same model from equal weights and compares losses and weights
bit for bit after every step. The CUDA cases run where ``torch.cuda.is_available()``; elsewhere
they are skipped, saying so.
"""
import warnings

import pytest
import torch

import ember
import ember.nn.functional as F
from ember.accel import Autodiff, compile
from ember.accel.capture import CaptureWarning
from ember.accel.optim import SGD, Adam
from ember.accel.torch import Torch
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn.module import Module

CUDA = pytest.mark.skipif(not torch.cuda.is_available(),
                          reason="no CUDA GPU here (torch.cuda.is_available() is False): the CUDA-graph "
                                 "lowering runs on the GPU machine")
WHERE = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=CUDA)]


class MLP(Module):
    def __init__(self, gen, n_in=12):
        super().__init__()
        self.fc1 = Linear(n_in, 16, generator=gen)
        self.fc2 = Linear(16, 5, generator=gen)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


def _pair(dev, opt_cls=SGD, **kw):
    out = []
    for _ in range(2):
        model = MLP(ember.Generator(0)).to(dev)
        out.append((model, opt_cls(model, lr=0.1, **kw)))
    return out


def _data(dev, n, seed=1):
    g = ember.Generator(seed)
    return ember.rand(n, 12, generator=g).to(dev), ember.randint(0, 5, (n,), generator=g).to(dev)


def _weights(model):
    return [p.value.tolist() for p in model.parameters()]


def _step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("inplace", [True, False], ids=["inplace", "copied"])
def test_replay_equals_eager_bit_for_bit(where, inplace):
    dev = Autodiff(Torch(where))
    (m1, o1), (m2, o2) = _pair(dev, momentum=0.9)
    x, y = _data(dev, 8)
    step = compile(_step, inplace=inplace)
    for i in range(8):
        a = _step(m1, o1, x, y).tolist()
        b = step(m2, o2, x, y).tolist()
        assert a == b, i
        assert _weights(m1) == _weights(m2), i
    assert not step.refused, step.refused
    assert step.lowering == "lowered", step.lowering
    assert step.stats["recorded"] == 1 and step.stats["replayed"] >= 5, step.stats
    (rec,) = step._plans.values()
    assert type(rec.lowered).__name__ == ("CudaGraphPlan" if where == "cuda" else "TorchPlan")


@pytest.mark.parametrize("where", WHERE)
def test_new_batch_size_re_records_and_old_one_replays_again(where):
    dev = Autodiff(Torch(where))
    (m1, o1), (m2, o2) = _pair(dev, momentum=0.9)
    step = compile(_step)
    # 4: eager twice (the momentum buffers appear), record, replay; 7: eager, record, replay twice;
    # 4 again: replays
    for n in (4, 4, 4, 4, 7, 7, 7, 7, 4, 4):
        x, y = _data(dev, n, seed=n)
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), n
        assert _weights(m1) == _weights(m2), n
    assert step.stats == {"eager": 3, "recorded": 2, "replayed": 5}, step.stats


@pytest.mark.parametrize("where", WHERE)
def test_a_dtype_change_re_records(where):
    dev = Autodiff(Torch(where))
    x32 = ember.rand(5, 3, generator=ember.Generator(2)).to(dev)
    step = compile(lambda a: (a * 2.0).sum())
    for a in (x32, x32, x32, x32.to(ember.float64), x32.to(ember.float64), x32.to(ember.float64), x32):
        assert step(a).tolist() == (a * 2.0).sum().tolist()
    assert step.stats["recorded"] == 2 and step.stats["replayed"] == 3, step.stats


@pytest.mark.parametrize("where", WHERE)
def test_results_and_copied_state_are_not_overwritten_by_later_replays(where):
    dev = Autodiff(Torch(where))
    (m, o), _ = _pair(dev, momentum=0.9)
    x, y = _data(dev, 4)
    step = compile(_step, inplace=False)
    losses, snapshots = [], []
    for _ in range(6):
        before = [p.value for p in m.parameters()]
        snapshots.append((before, [t.tolist() for t in before]))
        losses.append(step(m, o, x, y))
    values = [t.tolist() for t in losses]
    for _ in range(3):
        step(m, o, x, y)
    assert [t.tolist() for t in losses] == values
    assert len(set(values)) == len(values)  # the steps learned: new losses
    for tensors, vals in snapshots:
        assert [t.tolist() for t in tensors] == vals


@pytest.mark.parametrize("where", WHERE)
def test_adam_with_a_changing_learning_rate(where):
    dev = Autodiff(Torch(where))
    models = [MLP(ember.Generator(0)).to(dev) for _ in range(2)]
    opts = [Adam(m, lr=0.01) for m in models]
    x, y = _data(dev, 6)
    step = compile(_step)
    for i in range(7):
        for opt in opts:
            opt.lr = 0.01 / (1 + i)
        assert _step(models[0], opts[0], x, y).tolist() == step(models[1], opts[1], x, y).tolist(), i
        assert _weights(models[0]) == _weights(models[1]), i
    assert step.stats["replayed"] >= 4 and not step.refused, (step.stats, step.refused)
    assert step.lowering == "lowered"


@pytest.mark.parametrize("where", WHERE)
def test_sgd_learning_rate_held_then_changed(where):
    # a CUDA graph uploads the hyperparameters only when they change: a held rate, then a new one
    dev = Autodiff(Torch(where))
    (m, o), (m2, o2) = _pair(dev, momentum=0.5)
    x, y = _data(dev, 6)
    step = compile(_step)
    for i in range(9):
        lr = 0.1 if i < 5 else 0.02 if i < 7 else 0.1
        o.lr = o2.lr = lr
        assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist(), i
        assert _weights(m) == _weights(m2), i
    assert step.stats["replayed"] >= 6 and step.lowering == "lowered"


def _dropout_step(model, opt, x, y, g):
    h = F.dropout(F.relu(model.fc1(x)), 0.5, training=True, generator=g)
    loss = F.cross_entropy(model.fc2(h), y)
    opt.step(loss.backward())
    return loss


@pytest.mark.parametrize("where", WHERE)
def test_dropout_draws_fresh_masks_on_every_replay(where):
    dev = Autodiff(Torch(where))
    (m1, o1), (m2, o2) = _pair(dev)
    g1, g2 = ember.Generator(7), ember.Generator(7)
    x, y = _data(dev, 6)
    step = compile(_dropout_step)
    losses = []
    for i in range(7):
        a = _dropout_step(m1, o1, x, y, g1).tolist()
        b = step(m2, o2, x, y, g2).tolist()
        assert a == b, i
        assert _weights(m1) == _weights(m2), i
        losses.append(b)
    assert g1.get_state() == g2.get_state()
    assert len(set(losses[3:])) == len(losses[3:])
    assert step.stats["replayed"] >= 3 and not step.refused and step.lowering == "lowered"


@pytest.mark.parametrize("where", WHERE)
def test_bad_targets_in_a_replay_raise_the_eager_error_and_keep_the_weights(where):
    dev = Autodiff(Torch(where))
    (m, o), (m2, o2) = _pair(dev, momentum=0.9)
    x, y = _data(dev, 4)
    step = compile(_step)
    for _ in range(4):
        step(m, o, x, y)
        _step(m2, o2, x, y)
    assert step.lowering == "lowered"
    bad = ember.tensor([0, 1, 9, 2], device=dev)
    with pytest.raises(IndexError):
        step(m, o, x, bad)
    assert _weights(m) == _weights(m2)  # the failed step changed nothing
    assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    assert _weights(m) == _weights(m2)


@CUDA
def test_cuda_state_is_updated_in_place_in_the_graphs_buffers():
    dev = Autodiff(Torch("cuda"))
    (m, o), _ = _pair(dev, momentum=0.9)
    x, y = _data(dev, 8)
    step = compile(_step, inplace=True)  # the state copied is the default
    for _ in range(4):
        step(m, o, x, y)
    (rec,) = step._plans.values()
    held = {id(t) for t in rec.lowered.static.values()}
    from ember.backend import chain, unwrap_to
    base = chain(dev)[-1]
    ptrs = [unwrap_to(p.value.device, p.value._data, base).data_ptr() for p in m.parameters()]
    step(m, o, x, y)
    assert [unwrap_to(p.value.device, p.value._data, base).data_ptr() for p in m.parameters()] == ptrs
    assert all(id(unwrap_to(p.value.device, p.value._data, base)) in held for p in m.parameters())


def _torch_array(t):
    from ember.backend import chain, unwrap_to
    return unwrap_to(t.device, t._data, chain(t.device)[-1])


@CUDA
def test_cuda_same_batch_again_is_neither_copied_nor_checked_again():
    """The flag of a loss's class check depends only on the targets as they came in: replaying the
    same batch reads it once, a new batch (or the same tensor written in place) copies and reads again."""
    dev = Autodiff(Torch("cuda"))
    (m, o), (m2, o2) = _pair(dev, momentum=0.9)
    x, y = _data(dev, 8)
    step = compile(_step, inplace=True)
    for _ in range(6):
        assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    (rec,) = step._plans.values()
    plan = rec.lowered
    assert plan.flag is not None and plan.flag_inputs and not plan.flag_computed
    reads = plan.flag_reads
    for _ in range(3):
        assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    assert plan.flag_reads == reads  # unchanged targets: no read, no wait
    x2, y2 = _data(dev, 8, seed=2)
    assert step(m, o, x2, y2).tolist() == _step(m2, o2, x2, y2).tolist()
    assert plan.flag_reads == reads + 1
    _torch_array(x2).mul_(2)  # in place: torch's version count moves, the replay copies it in again
    _torch_array(y2).copy_(torch.tensor([4, 3, 2, 1, 0, 1, 2, 3]))
    assert step(m, o, x2, y2).tolist() == _step(m2, o2, x2, y2).tolist()
    assert plan.flag_reads == reads + 2
    _torch_array(y2)[0] = 7  # a bad class index written in place is still caught
    with pytest.raises(IndexError):
        step(m, o, x2, y2)
    with pytest.raises(IndexError):
        _step(m2, o2, x2, y2)
    assert _weights(m) == _weights(m2)


@CUDA
def test_cuda_copied_state_handed_back_is_not_copied_in_again():
    """By default the holders get copies of the graph's state buffers (never the buffers), and a copy
    handed back unchanged is not copied in: the buffer holds its values. A state tensor the program
    replaced, or wrote in place, is copied in."""
    dev = Autodiff(Torch("cuda"))
    (m, o), (m2, o2) = _pair(dev, momentum=0.9)
    x, y = _data(dev, 8)
    step = compile(_step)
    for _ in range(5):
        assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    (rec,) = step._plans.values()
    plan = rec.lowered
    assert not plan.inplace
    buffers = {id(b) for b in plan.static.values()}
    held = [_torch_array(p.value) for p in m.parameters()]
    assert not any(id(a) in buffers for a in held)
    assert {id(a) for a in held} <= {id(v[0]) for v in plan._last.values()}  # the buffers hold them
    old = [p.value for p in m.parameters()]
    old_values = [t.tolist() for t in old]
    assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    assert [t.tolist() for t in old] == old_values  # a step's copies are never written again
    assert _weights(m) == _weights(m2)
    for model in (m, m2):  # replaced by the program: copied in
        model.fc2.bias = ember.zeros(5, device=dev)
    assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    _torch_array(m.fc1.weight).mul_(0.5)  # written in place: copied in
    _torch_array(m2.fc1.weight).mul_(0.5)
    for _ in range(2):
        assert step(m, o, x, y).tolist() == _step(m2, o2, x, y).tolist()
    assert _weights(m) == _weights(m2)


class ConvNet(Module):
    def __init__(self, gen):
        super().__init__()
        self.conv = Conv2d(1, 4, 3, padding=1, generator=gen)
        self.fc = Linear(4 * 4 * 4, 5, generator=gen)

    def forward(self, x):
        return self.fc(F.max_pool2d(F.relu(self.conv(x)), 2).reshape(x.shape[0], -1))


@pytest.mark.parametrize("where", WHERE)
def test_a_conv_step_is_lowered_and_replays_the_eager_bits(where):
    # on CUDA the convolutions take cuDNN's deterministic algorithms: the recording's check needs
    # the same bits twice (with atomics in a weight gradient the capture was refused)
    dev = Autodiff(Torch(where))
    models = [ConvNet(ember.Generator(0)).to(dev) for _ in range(2)]
    opts = [SGD(m, lr=0.05, momentum=0.9) for m in models]
    g = ember.Generator(3)
    x, y = ember.rand(16, 1, 8, 8, generator=g).to(dev), ember.randint(0, 5, (16,), generator=g).to(dev)
    step = compile(_step)
    for i in range(6):
        assert step(models[0], opts[0], x, y).tolist() == _step(models[1], opts[1], x, y).tolist(), i
        assert _weights(models[0]) == _weights(models[1]), i
    assert step.lowering == "lowered" and not step.refused, (step.lowering, step.refused)


@pytest.mark.parametrize("where", WHERE)
def test_a_nan_into_a_max_pool_replays_the_composites_gradient(where):
    # a nan reaching a max pool makes its gradient step aside to the composite: the replay gives the
    # eager step's values (in a CUDA graph the nan test raises the flag, the step runs again eagerly)
    dev = Autodiff(Torch(where))
    models = [ConvNet(ember.Generator(0)).to(dev) for _ in range(2)]
    opts = [SGD(m, lr=0.05) for m in models]
    g = ember.Generator(4)
    x, y = ember.rand(4, 1, 8, 8, generator=g), ember.randint(0, 5, (4,), generator=g).to(dev)
    step = compile(_step)
    for _ in range(4):
        step(models[0], opts[0], x.to(dev), y)
        _step(models[1], opts[1], x.to(dev), y)
    holes = x.tolist()
    holes[0][0][0][:2] = [float("nan"), float("nan")]
    bad = ember.tensor(holes).to(dev)
    assert repr(step(models[0], opts[0], bad, y).tolist()) == repr(_step(models[1], opts[1], bad, y).tolist())
    assert repr(_weights(models[0])) == repr(_weights(models[1]))
    assert step.lowering == "lowered"


@CUDA
def test_cuda_graph_replay_is_faster_than_the_generic_replay():
    # not a speed assertion on timings: the graph's replay makes no per-op Python call, so the
    # closures are never called again after the capture
    dev = Autodiff(Torch("cuda"))
    (m, o), _ = _pair(dev)
    x, y = _data(dev, 8)
    step = compile(_step)
    for _ in range(3):
        step(m, o, x, y)
    (rec,) = step._plans.values()
    calls = []
    rec.lowered.calls = [lambda slots: calls.append(1)]
    before = _weights(m)
    step(m, o, x, y)
    assert calls == [] and _weights(m) != before


def test_step_reading_the_host_falls_back_with_one_warning():
    dev = Autodiff(Torch("cpu"))
    x = ember.ones(3, device=dev)
    step = compile(lambda a: a * float((a.sum()).item()))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            assert step(x).tolist() == [3.0] * 3
    assert len([w for w in caught if issubclass(w.category, CaptureWarning)]) == 1
    assert step.refused and "reads values to the host" in next(iter(step.refused.values()))
