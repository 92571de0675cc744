"""Optimizers, GradientsParams and LR schedulers against torch.optim.

Trajectories: the same initial values and the same gradient at every step, fed to an ember
optimizer and to torch.optim's; the parameters must agree after every step (1e-6 in float32,
1e-12 in float64), on every inner backend the harness provides.
"""
import math
import os

import numpy as np
import pytest
import torch

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff, Gradients
from ember.accel.optim import SGD, Adadelta, Adagrad, Adam, AdamW, GradientsParams, RMSprop, lr, track
from ember.nn.linear import Linear
from ember.nn.module import Module, Param
from harness import backends
from harness.check import assert_close

INNER = backends.plain()
IDS = [name for name, _ in INNER]
SHAPES = [(3, 4), (4,), (2,)]
STEPS = 6

OPTIMIZERS = {"SGD": (SGD, torch.optim.SGD), "Adam": (Adam, torch.optim.Adam), "AdamW": (AdamW, torch.optim.AdamW),
              "RMSprop": (RMSprop, torch.optim.RMSprop), "Adagrad": (Adagrad, torch.optim.Adagrad),
              "Adadelta": (Adadelta, torch.optim.Adadelta)}

CONFIGS = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "dampening": 0.3}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.1, "weight_decay": 0.05}),
    ("SGD", {"lr": 0.1, "momentum": 0.8, "weight_decay": 0.05, "nesterov": True}),
    ("SGD", {"lr": 0.1, "momentum": 0.5, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "betas": (0.8, 0.9)}),
    ("Adam", {"lr": 0.01, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1, "eps": 1e-6, "maximize": True}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.5, "amsgrad": True, "betas": (0.5, 0.7)}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "alpha": 0.9, "eps": 1e-6}),
    ("RMSprop", {"lr": 0.01, "centered": True}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.9}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5, "weight_decay": 0.1}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "weight_decay": 0.1}),
    ("Adagrad", {"lr": 0.1, "initial_accumulator_value": 0.5, "eps": 1e-6}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.05, "weight_decay": 0.2, "initial_accumulator_value": 0.1,
                 "maximize": True}),
    ("Adadelta", {}),
    ("Adadelta", {"lr": 0.5, "rho": 0.8, "eps": 1e-4}),
    ("Adadelta", {"lr": 1.0, "weight_decay": 0.1, "maximize": True}),
]
CONFIG_IDS = ["%s-%s" % (n, ",".join("%s=%s" % kv for kv in sorted(kw.items())) or "defaults") for n, kw in CONFIGS]


def _data(dtype, seed=0):
    r = np.random.default_rng(seed)
    init = [r.standard_normal(s).astype(dtype) for s in SHAPES]
    grads = [[r.standard_normal(s).astype(dtype) for s in SHAPES] for _ in range(STEPS)]
    return init, grads


def _ember_params(init, inner, dtype):
    dev = Autodiff(inner)
    return [("p%d" % i, Param(ember.tensor(a.tolist(), dtype=dtype, device=dev))) for i, a in enumerate(init)]


def _values(pairs):
    return [np.array(p.value.tolist()) for _, p in pairs]


def _torch_trajectory(torch_cls, groups_or_kwargs, init, grads, torch_dtype, kwargs=None):
    params = [torch.nn.Parameter(torch.tensor(a, dtype=torch_dtype)) for a in init]
    if kwargs is None:
        opt = torch_cls(params, foreach=False, **groups_or_kwargs)
    else:
        opt = torch_cls(groups_or_kwargs(params), foreach=False, **kwargs)
    out = []
    for step in grads:
        for p, g in zip(params, step):
            p.grad = torch.tensor(g, dtype=torch_dtype)
        opt.step()
        out.append([p.detach().numpy().copy() for p in params])
    return out


def _ember_step_grads(pairs, step, inner, dtype):
    return GradientsParams({p.id: ember.tensor(g.tolist(), dtype=dtype, device=inner)
                            for (_, p), g in zip(pairs, step)})


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
@pytest.mark.parametrize("precision", ["float32", "float64"])
@pytest.mark.parametrize("name,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_trajectory_matches_torch(name, kwargs, precision, inner):
    ember_cls, torch_cls = OPTIMIZERS[name]
    np_dtype = np.float32 if precision == "float32" else np.float64
    dtype = getattr(ember, precision)
    tol = 1e-6 if precision == "float32" else 1e-12
    init, grads = _data(np_dtype)
    pairs = _ember_params(init, inner, dtype)
    opt = ember_cls(pairs, **kwargs)
    expected = _torch_trajectory(torch_cls, kwargs, init, grads, getattr(torch, precision))
    for k, step in enumerate(grads):
        opt.step(_ember_step_grads(pairs, step, inner, dtype))
        for (n, p), want in zip(pairs, expected[k]):
            assert p.value.dtype is dtype
            assert_close(p.value, want.tolist(), rtol=0, atol=tol, msg="%s step %d %s" % (name, k, n))


def test_step_keeps_parameters_leaves_on_their_device():
    dev = Autodiff(ember.Cpu())
    p = Param(ember.tensor([1.0, 2.0], device=dev))
    q = Param(ember.tensor([3.0], device=dev))
    opt = SGD([("p", p), ("q", q)], lr=0.5, momentum=0.9)
    assert p.value.requires_grad and p.value._data.node.id == p.id  # the optimizer tracked them
    old = p.value
    x = (p.value * p.value).sum() + q.value.sum()
    grads = x.backward()
    assert isinstance(grads, Gradients)
    opt.step(grads)
    for param in (p, q):
        v = param.value
        assert v.device == dev and v.requires_grad and v._data.node.id == param.id
        assert v._data.node.backward is None  # a leaf, not a node of the update
    assert old.tolist() == [1.0, 2.0]  # the tensor it replaced is untouched
    assert_close(p.value, [1.0 - 0.5 * 2.0, 2.0 - 0.5 * 4.0])
    # the next pass differentiates the new values
    grads = (p.value * 3.0).sum().backward()
    assert_close(p.value.grad(grads), [3.0, 3.0])


def test_missing_gradient_and_frozen_parameters_are_left_alone():
    dev = Autodiff(ember.Cpu())
    a = Param(ember.tensor([1.0], device=dev))
    b = Param(ember.tensor([2.0], device=dev))
    frozen = Param(ember.tensor([5.0], device=dev), requires_grad=False)
    opt = Adam([("a", a), ("b", b), ("frozen", frozen)], lr=0.1)
    assert not frozen.value.requires_grad
    grads = GradientsParams({a.id: ember.tensor([1.0]), frozen.id: ember.tensor([1.0])})
    old_b = b.value
    opt.step(grads)
    assert b.value is old_b and frozen.value.tolist() == [5.0]
    assert b.id not in opt.state and frozen.id not in opt.state and opt.state[a.id]["step"] == 1


def test_parameters_on_a_plain_device():
    """Without autodiff (gradients computed some other way) an optimizer still steps."""
    p = Param(ember.tensor([1.0, 2.0]))
    opt = SGD([p], lr=0.1)
    opt.step(GradientsParams({p.id: ember.tensor([1.0, -1.0])}))
    assert p.value.device == ember.Cpu()
    assert_close(p.value, [0.9, 2.1])


def _group_data():
    init, grads = _data(np.float32, seed=3)
    return init, grads


def test_param_groups_match_torch():
    init, grads = _group_data()
    inner = ember.Cpu()
    pairs = _ember_params(init, inner, ember.float32)
    opt = SGD([{"params": pairs[:1], "lr": 0.2},
               {"params": pairs[1:], "weight_decay": 0.1, "momentum": 0.5}], lr=0.05, momentum=0.9)
    assert [g["lr"] for g in opt.param_groups] == [0.2, 0.05]
    assert [g["momentum"] for g in opt.param_groups] == [0.9, 0.5]

    def groups(ps):
        return [{"params": ps[:1], "lr": 0.2}, {"params": ps[1:], "weight_decay": 0.1, "momentum": 0.5}]
    expected = _torch_trajectory(torch.optim.SGD, groups, init, grads, torch.float32, {"lr": 0.05, "momentum": 0.9})
    for k, step in enumerate(grads):
        opt.step(_ember_step_grads(pairs, step, inner, ember.float32))
        for (n, p), want in zip(pairs, expected[k]):
            assert_close(p.value, want.tolist(), rtol=0, atol=1e-6)


def test_learning_rate_changes_mid_run_match_torch():
    init, grads = _group_data()
    inner = ember.Cpu()
    pairs = _ember_params(init, inner, ember.float32)
    opt = Adam([{"params": pairs[:2]}, {"params": pairs[2:], "lr": 0.03}], lr=0.01)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    topt = torch.optim.Adam([{"params": tparams[:2]}, {"params": tparams[2:], "lr": 0.03}], lr=0.01, foreach=False)
    for k, step in enumerate(grads):
        if k == 2:
            opt.lr = 0.002  # every group
            for g in topt.param_groups:
                g["lr"] = 0.002
        if k == 4:
            opt.param_groups[1]["lr"] = 0.05
            topt.param_groups[1]["lr"] = 0.05
        opt.step(_ember_step_grads(pairs, step, inner, ember.float32))
        for p, g in zip(tparams, step):
            p.grad = torch.tensor(g)
        topt.step()
        for (n, p), tp in zip(pairs, tparams):
            assert_close(p.value, tp.detach().tolist(), rtol=0, atol=1e-6)
    assert opt.lr == 0.002


def test_step_lr_argument_and_scheduler_match_torch():
    init, grads = _group_data()
    inner = ember.Cpu()
    pairs = _ember_params(init, inner, ember.float32)
    opt = SGD(pairs, lr=0.1, momentum=0.9)
    sched = lr.StepLR(0.1, step_size=2, gamma=0.5)
    tparams = [torch.nn.Parameter(torch.tensor(a)) for a in init]
    topt = torch.optim.SGD(tparams, lr=0.1, momentum=0.9, foreach=False)
    tsched = torch.optim.lr_scheduler.StepLR(topt, step_size=2, gamma=0.5)
    for step in grads:
        opt.step(_ember_step_grads(pairs, step, inner, ember.float32), lr=sched.step())
        for p, g in zip(tparams, step):
            p.grad = torch.tensor(g)
        topt.step()
        tsched.step()
        for (n, p), tp in zip(pairs, tparams):
            assert_close(p.value, tp.detach().tolist(), rtol=0, atol=1e-6)


def test_names_from_sibling_modules_get_group_prefixes():
    net = _MLP()
    opt = SGD([{"params": net.fc1}, {"params": net.fc2, "lr": 0.5}], lr=0.1)
    names = [n for n, _ in opt.named_parameters()]
    assert names == ["weight", "bias", "group1.weight", "group1.bias"]


# -- an MLP: end to end, accumulation, clipping, save and resume ------------------------------------------

class _MLP(Module):
    def __init__(self, seed=0):
        super().__init__()
        gen = ember.Generator(seed)
        self.fc1 = Linear(5, 7, generator=gen)
        self.fc2 = Linear(7, 3, generator=gen)

    def forward(self, x):
        return self.fc2(F.tanh(self.fc1(x)))


def _batch(n=8, seed=1):
    r = np.random.default_rng(seed)
    return r.standard_normal((n, 5)).astype(np.float32), r.integers(0, 3, n)


def _torch_mlp(model):
    t = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    with torch.no_grad():
        for (n, p), tp in zip(model.named_parameters(), t.parameters()):
            tp.copy_(torch.tensor(p.value.tolist()))
    return t


def _loss(model, x, y, reduction="mean"):
    dev = model.fc1.weight.device
    return F.cross_entropy(model(ember.tensor(x.tolist(), device=dev)), ember.tensor(y.tolist(), device=dev),
                           reduction=reduction)


def test_mlp_training_matches_torch():
    model = _MLP().to(Autodiff(ember.Cpu()))
    tmodel = _torch_mlp(model)
    opt = SGD(model, lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)
    topt = torch.optim.SGD(tmodel.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01, foreach=False)
    x, y = _batch()
    for _ in range(5):
        grads = GradientsParams.from_grads(_loss(model, x, y).backward(), model)
        assert len(grads) == 4
        opt.step(grads)
        topt.zero_grad()
        torch.nn.functional.cross_entropy(tmodel(torch.tensor(x)), torch.tensor(y)).backward()
        topt.step()
    for (n, p), tp in zip(model.named_parameters(), tmodel.parameters()):
        assert_close(p.value, tp.detach().tolist(), rtol=0, atol=1e-6, msg=n)


def test_from_grads_keeps_only_the_modules_trainable_parameters():
    model = track(_MLP(), Autodiff(ember.Cpu()))
    model.get_parameter("fc2.bias").requires_grad = False
    x, y = _batch()
    dev = model.fc1.weight.device
    xt = ember.tensor(x.tolist(), device=dev).requires_grad_()
    grads = F.cross_entropy(model(xt), ember.tensor(y.tolist(), device=dev)).backward()
    assert xt.grad(grads) is not None
    gp = GradientsParams.from_grads(grads, model)
    ids = {p.id for n, p in model.named_parameters() if n != "fc2.bias"}
    assert set(gp.ids()) == ids
    for n, p in model.named_parameters():
        if n != "fc2.bias":
            assert gp.get(p) is grads.get_id(p.id)
            assert gp.get(p).device == ember.Cpu()


def test_accumulation_over_passes_equals_one_pass():
    model = track(_MLP(), Autodiff(ember.Cpu()))
    x, y = _batch(8)
    full = GradientsParams.from_grads(_loss(model, x, y, "sum").backward(), model)
    parts = [GradientsParams.from_grads(_loss(model, x[i:i + 4], y[i:i + 4], "sum").backward(), model)
             for i in (0, 4)]
    for acc in (parts[0] + parts[1], sum(parts), parts[0] + Gradients(parts[1].by_id)):
        assert set(acc.ids()) == set(full.ids())
        for k in full.ids():
            assert_close(acc.get_id(k), full.get_id(k), rtol=1e-5, atol=1e-6)
    half = (parts[0] + parts[1]) * 0.5
    k = full.ids()[0]
    assert_close(half.get_id(k), (full.get_id(k) * 0.5), rtol=1e-5, atol=1e-6)
    assert_close((parts[0] + parts[1]).get_id(k) / 2, half.get_id(k))


def _grads_pair(seed=5, scale=1.0):
    r = np.random.default_rng(seed)
    arrays = [(r.standard_normal(s) * scale).astype(np.float32) for s in SHAPES]
    gp = GradientsParams({i: ember.tensor(a.tolist()) for i, a in enumerate(arrays)})
    tparams = [torch.nn.Parameter(torch.zeros(s)) for s in SHAPES]
    for p, a in zip(tparams, arrays):
        p.grad = torch.tensor(a)
    return gp, tparams


@pytest.mark.parametrize("clip", [0.1, 0.5, 5.0])
def test_clip_by_value_matches_torch(clip):
    gp, tparams = _grads_pair()
    clipped = gp.clip_by_value(clip)
    torch.nn.utils.clip_grad_value_(tparams, clip)
    for i, p in enumerate(tparams):
        assert_close(clipped.get_id(i), p.grad.tolist(), rtol=0, atol=0)
    assert gp.get_id(0).abs().max().item() > 0.5  # the original is unchanged


@pytest.mark.parametrize("norm_type", [2.0, 1.0, 3.0, "inf"])
@pytest.mark.parametrize("max_norm", [0.5, 2.0, 100.0])
def test_clip_by_norm_matches_torch(max_norm, norm_type):
    gp, tparams = _grads_pair()
    clipped = gp.clip_by_norm(max_norm, norm_type)
    total = torch.nn.utils.clip_grad_norm_(tparams, max_norm, norm_type=float(norm_type), foreach=False)
    assert math.isclose(gp.norm(norm_type), total.item(), rel_tol=1e-6)
    for i, p in enumerate(tparams):
        assert_close(clipped.get_id(i), p.grad.tolist(), rtol=1e-6, atol=1e-7)
    if gp.norm(norm_type) <= max_norm:  # below the limit: unchanged
        for i in range(len(SHAPES)):
            assert clipped.get_id(i).tolist() == gp.get_id(i).tolist()
    else:
        assert math.isclose(clipped.norm(norm_type), max_norm, rel_tol=1e-5)


def test_gradients_params_to_device():
    gp, _ = _grads_pair()
    moved = gp.to(Autodiff(ember.Cpu()))  # a decorator: its inner device
    assert all(g.device == ember.Cpu() for _, g in moved.items())
    for _, dev in INNER:
        moved = gp.to(dev)
        assert all(g.device == dev for _, g in moved.items())
        assert_close(moved.get_id(0), gp.get_id(0).tolist())


CHECKPOINT_CONFIGS = [
    ("SGD", {"lr": 0.1, "momentum": 0.9, "dampening": 0.1, "weight_decay": 0.01}),
    ("Adam", {"lr": 0.01, "amsgrad": True}),
    ("AdamW", {"lr": 0.01, "weight_decay": 0.1}),
    ("RMSprop", {"lr": 0.01, "centered": True, "momentum": 0.5}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01}),
]


@pytest.mark.parametrize("name,kwargs", CHECKPOINT_CONFIGS, ids=[c[0] for c in CHECKPOINT_CONFIGS])
def test_save_and_resume_continues_exactly(name, kwargs, tmp_path):
    cls = OPTIMIZERS[name][0]
    dev = Autodiff(ember.Cpu())
    batches = [_batch(8, seed=s) for s in range(6)]

    def sched():
        return lr.SequentialLR([lr.LinearWarmup(kwargs["lr"], 2, 0.5), lr.CosineAnnealingLR(kwargs["lr"], 5)], [2])

    def train(model, opt, s, data):
        for x, y in data:
            opt.step(_loss(model, x, y).backward(), lr=s.step())

    # straight: 6 steps
    model = _MLP().to(dev)
    opt, s = cls(model, **kwargs), sched()
    train(model, opt, s, batches)
    straight = [p.value.tolist() for p in model.parameters()]

    # 3 steps, save everything
    model = _MLP().to(dev)
    opt, s = cls(model, **kwargs), sched()
    train(model, opt, s, batches[:3])
    model.save(str(tmp_path / "model.safetensors"))
    opt.save(str(tmp_path / "optim.safetensors"))
    s.save(str(tmp_path / "sched.safetensors"))
    del model, opt, s

    # a new model (other initial values, other parameter ids) and optimizer, loaded from the files
    model = _MLP(seed=99).to(dev)
    opt, s = cls(model, lr=123.0), sched()
    model.load(str(tmp_path / "model.safetensors"))
    opt.load(str(tmp_path / "optim.safetensors"))
    s.load(str(tmp_path / "sched.safetensors"))
    assert opt.param_groups[0]["lr"] != 123.0  # hyperparameters come from the file
    train(model, opt, s, batches[3:])
    resumed = [p.value.tolist() for p in model.parameters()]
    assert resumed == straight


def test_optimizer_record_layout(tmp_path):
    model = _MLP().to(Autodiff(ember.Cpu()))
    opt = Adam(model, lr=0.01)
    x, y = _batch()
    opt.step(_loss(model, x, y).backward())
    path = str(tmp_path / "o.safetensors")
    opt.save(path)
    with ember.record.open(path) as r:
        names = set(r.names())
        meta = r.metadata
    assert names == {"%s.%s" % (n, k) for n, _ in model.named_parameters() for k in ("exp_avg", "exp_avg_sq")}
    assert meta["optimizer"] == "Adam" and '"step": 1' in meta["scalars"]


def test_state_dict_round_trip_and_mismatch():
    model = _MLP().to(Autodiff(ember.Cpu()))
    opt = RMSprop(model, lr=0.01, momentum=0.9)
    x, y = _batch()
    opt.step(_loss(model, x, y).backward())
    sd = opt.state_dict()
    assert sd["param_groups"][0]["params"] == [n for n, _ in model.named_parameters()]
    assert set(sd["state"]["fc1.weight"]) == {"step", "square_avg", "momentum_buffer"}
    other = RMSprop(_MLP().to(Autodiff(ember.Cpu())), lr=0.5)
    other.load_state_dict(sd)
    assert other.lr == 0.01
    wrong = RMSprop(_MLP().fc1.to(Autodiff(ember.Cpu())))
    with pytest.raises(ember.ArgumentError):
        wrong.load_state_dict(sd)


def test_loading_the_wrong_record_is_an_error(tmp_path):
    model = _MLP().to(Autodiff(ember.Cpu()))
    opt = SGD(model, lr=0.1, momentum=0.9)
    x, y = _batch()
    opt.step(_loss(model, x, y).backward())
    path = str(tmp_path / "o.safetensors")
    opt.save(path)
    with pytest.raises(ember.RecordError, match="SGD"):
        Adam(model).load(path)
    model.save(str(tmp_path / "m.safetensors"))
    with pytest.raises(ember.RecordError, match="not an ember optimizer record"):
        opt.load(str(tmp_path / "m.safetensors"))


@pytest.mark.parametrize("make", [
    lambda ps: SGD(ps, lr=-1.0),
    lambda ps: SGD(ps, lr=0.1, nesterov=True),
    lambda ps: SGD(ps, lr=0.1, momentum=-0.5),
    lambda ps: SGD(ps, lr=0.1, betas=(0.9, 0.99)),
    lambda ps: Adam(ps, betas=(0.9, 1.0)),
    lambda ps: Adam(ps, eps=-1.0),
    lambda ps: AdamW(ps, weight_decay=-0.1),
    lambda ps: RMSprop(ps, alpha=-0.1),
    lambda ps: Adagrad(ps, lr_decay=-1.0),
    lambda ps: SGD([], lr=0.1),
    lambda ps: SGD([{"params": ps}, {"params": ps[:1]}], lr=0.1),
    lambda ps: SGD([{"params": ps, "gamma": 1.0}], lr=0.1),
])
def test_bad_arguments(make):
    pairs = _ember_params(_data(np.float32)[0], ember.Cpu(), ember.float32)
    with pytest.raises(ember.EmberError):
        make(pairs)


def test_step_needs_gradients():
    pairs = _ember_params(_data(np.float32)[0], ember.Cpu(), ember.float32)
    opt = SGD(pairs, lr=0.1)
    with pytest.raises(ember.ArgumentTypeError):
        opt.step({pairs[0][1].id: ember.zeros(3, 4)})
    with pytest.raises(ember.ShapeError):
        opt.step(GradientsParams({pairs[0][1].id: ember.zeros(4, 3)}))


def test_track_needs_an_autodiff_device():
    with pytest.raises(ember.ArgumentError, match="Autodiff"):
        track(_MLP())
    model = track(_MLP(), Autodiff(ember.Cpu()))
    assert all(p.value.requires_grad and p.value._data.node.id == p.id for p in model.parameters())


# -- schedulers ----------------------------------------------------------------------------------------------

N_SCHED = 40


def _torch_lrs(make, base=0.1):
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=base)
    sched = make(opt)
    out = []
    for _ in range(N_SCHED):
        out.append(sched.get_last_lr()[0])
        opt.step()
        sched.step()
    return out


def _ember_lrs(sched):
    return [sched.step() for _ in range(N_SCHED)]


S = torch.optim.lr_scheduler
SCHEDULERS = [
    ("step", lambda: lr.StepLR(0.1, 3, 0.5), lambda o: S.StepLR(o, 3, 0.5)),
    ("step.default_gamma", lambda: lr.Step(0.1, 4), lambda o: S.StepLR(o, 4)),
    ("exponential", lambda: lr.ExponentialLR(0.1, 0.9), lambda o: S.ExponentialLR(o, 0.9)),
    ("linear.defaults", lambda: lr.LinearLR(0.1), lambda o: S.LinearLR(o)),
    ("linear.factors", lambda: lr.LinearLR(0.1, 0.25, 0.75, 10), lambda o: S.LinearLR(o, 0.25, 0.75, 10)),
    ("linear.decay", lambda: lr.Linear(0.1, 1.0, 0.1, 7), lambda o: S.LinearLR(o, 1.0, 0.1, 7)),
    ("cosine", lambda: lr.CosineAnnealingLR(0.1, 10), lambda o: S.CosineAnnealingLR(o, 10)),
    ("cosine.eta_min", lambda: lr.CosineAnnealing(0.1, 7, 0.01), lambda o: S.CosineAnnealingLR(o, 7, 0.01)),
    ("sequential.warmup_cosine",
     lambda: lr.SequentialLR([lr.LinearLR(0.1, 0.1, 1.0, 5), lr.CosineAnnealingLR(0.1, 20, 0.001)], [5]),
     lambda o: S.SequentialLR(o, [S.LinearLR(o, 0.1, 1.0, 5), S.CosineAnnealingLR(o, 20, 0.001)], [5])),
    ("sequential.three",
     lambda: lr.Sequence([lr.ExponentialLR(0.1, 0.8), lr.StepLR(0.1, 2, 0.5), lr.CosineAnnealingLR(0.1, 6, 0.01)],
                         [4, 10]),
     lambda o: S.SequentialLR(o, [S.ExponentialLR(o, 0.8), S.StepLR(o, 2, 0.5), S.CosineAnnealingLR(o, 6, 0.01)],
                              [4, 10])),
    ("sequential.linear_after",
     lambda: lr.SequentialLR([lr.StepLR(0.1, 2), lr.LinearLR(0.1, 0.5, 0.2, 8)], [3]),
     lambda o: S.SequentialLR(o, [S.StepLR(o, 2), S.LinearLR(o, 0.5, 0.2, 8)], [3])),
]


@pytest.mark.parametrize("name,make,make_torch", SCHEDULERS, ids=[s[0] for s in SCHEDULERS])
def test_scheduler_matches_torch_exactly(name, make, make_torch):
    assert _ember_lrs(make()) == _torch_lrs(make_torch)


def test_noam_and_warmup_match_torch_lambda():
    w, d = 4, 16
    noam = _torch_lrs(lambda o: S.LambdaLR(o, lambda e: d ** -0.5 * min((e + 1) ** -0.5, (e + 1) * w ** -1.5)), 2.0)
    assert _ember_lrs(lr.Noam(2.0, warmup_steps=w, model_size=d)) == noam
    assert max(noam) == noam[w - 1]  # the peak is at the end of the warm-up
    warm = _torch_lrs(lambda o: S.LambdaLR(o, lambda e: min(e, 10) / 10))
    assert _ember_lrs(lr.LinearWarmup(0.1, 10)) == warm
    linear = _torch_lrs(lambda o: S.LinearLR(o, 0.25, 1.0, 10))
    for a, b in zip(_ember_lrs(lr.LinearWarmup(0.1, 10, start_factor=0.25)), linear):
        assert math.isclose(a, b, rel_tol=1e-12)


def test_constant():
    assert _ember_lrs(lr.Constant(0.3)) == [0.3] * N_SCHED


def _sequence():
    return lr.SequentialLR([lr.LinearWarmup(0.1, 3), lr.CosineAnnealingLR(0.1, 5, 0.01), lr.ExponentialLR(0.05, 0.9)],
                           [3, 9])


def test_scheduler_save_and_resume(tmp_path):
    straight = _ember_lrs(_sequence())
    s = _sequence()
    first = [s.step() for _ in range(7)]
    path = str(tmp_path / "s.safetensors")
    s.save(path)
    again = _sequence()
    again.load(path)
    assert first + [again.step() for _ in range(N_SCHED - 7)] == straight
    other = lr.StepLR(0.1, 2)
    other.step()
    with pytest.raises(ember.ArgumentError):
        other.load_state_dict(s.state_dict())
    restored = _sequence()
    restored.load_state_dict(s.state_dict())
    assert restored.lr == s.lr


@pytest.mark.parametrize("make", [
    lambda: lr.StepLR(0.1, 0),
    lambda: lr.LinearLR(0.1, 0.0),
    lambda: lr.CosineAnnealingLR(0.1, 0),
    lambda: lr.SequentialLR([lr.Constant(0.1), lr.Constant(0.2)], []),
    lambda: lr.SequentialLR([lr.Constant(0.1), lr.Constant(0.2), lr.Constant(0.3)], [5, 5]),
    lambda: lr.SequentialLR([], []),
    lambda: lr.Noam(1.0, warmup_steps=0),
    lambda: lr.Constant(-1.0),
])
def test_bad_scheduler_arguments(make):
    with pytest.raises(ember.EmberError):
        make()


def test_no_files_left_behind(tmp_path):
    s = lr.Constant(0.1)
    s.save(str(tmp_path / "c.safetensors"))
    assert sorted(os.listdir(tmp_path)) == ["c.safetensors"]
