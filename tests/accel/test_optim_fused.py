"""The fused optimizer updates (accel/optim/updates.py; C Cpu, NumPy, Wgpu, Torch) against the op-by-op
formulas, bit for bit.

The reference is the pure-Python Cpu running the composites' bodies, which are checked in turn
against a frozen copy of the per-parameter formulas the optimizers had before the updates were
composites (``_old_*`` below). On each fast device the fused path must run (the body must not) and
give the reference's float32 and float64 values exactly, for every option combination, over
several steps.
"""
import itertools

import numpy as np
import pytest

import ember
from ember import composite
from ember.accel.autodiff import Autodiff
from ember.accel.optim import SGD, Adam, AdamW, GradientsParams
from ember.accel.optim import updates
from ember.accel.optim.optimizer import _lerp, _zeros_like
from ember.errors import ArgumentError, ShapeError
from ember.nn.module import Param
from harness import backends

REF = ember.Cpu(kernels="python")
FAST = [(n, d) for n, d in backends.plain() if n in ("cpu-c", "numpy", "wgpu", "torch")]
FAST_IDS = [n for n, _ in FAST]
SHAPES = [(3, 4), (5,), ()]
STEPS = 4
DTYPES = ["float32", "float64"]


def _sgd_configs():
    out = []
    for momentum, dampening, nesterov, wd, maximize in itertools.product(
            (0.0, 0.9), (0.0, 0.3), (False, True), (0.0, 0.05), (False, True)):
        if nesterov and (momentum == 0 or dampening != 0):
            continue
        out.append((SGD, dict(lr=0.1, momentum=momentum, dampening=dampening, nesterov=nesterov,
                              weight_decay=wd, maximize=maximize)))
    return out


def _adam_configs():
    out = []
    for cls, wd, amsgrad, maximize, betas in itertools.product(
            (Adam, AdamW), (0.0, 0.1), (False, True), (False, True), ((0.9, 0.999), (0.3, 0.7))):
        out.append((cls, dict(lr=0.01, weight_decay=wd, amsgrad=amsgrad, maximize=maximize, betas=betas)))
    return out


CONFIGS = _sgd_configs() + _adam_configs()
CONFIG_IDS = ["%s-%s" % (c.__name__, ",".join("%s=%s" % kv for kv in sorted(kw.items()))) for c, kw in CONFIGS]


def _data(dtype, shapes=SHAPES, steps=STEPS, seed=0):
    r = np.random.default_rng(seed)
    init = [r.standard_normal(s).astype(dtype) for s in shapes]
    grads = [[r.standard_normal(s).astype(dtype) for s in shapes] for _ in range(steps)]
    for g in grads[1]:
        g.reshape(-1)[::2] = 0.0  # exact zeros (and signs of zero through maximize) in one step
    return init, grads


def _params(init, inner, dtype):
    dev = Autodiff(inner)
    dt = getattr(ember, dtype) if type(dtype) is str else dtype
    return [("p%d" % i, Param(ember.tensor(a.tolist(), dtype=dt, device=dev))) for i, a in enumerate(init)]


def _bits(pairs):
    return [np.array(p.value.tolist()).tobytes() for _, p in pairs]


def _grads(pairs, step_grads, inner, skip=()):
    by_id = {}
    for (n, p), g in zip(pairs, step_grads):
        if n not in skip:
            by_id[p.id] = ember.tensor(g.tolist(), dtype=p.dtype, device=inner)
    return GradientsParams(by_id)


def _trajectory(inner, cls, kwargs, dtype, data=None, groups=None, skip=lambda step: ()):
    init, grads = data or _data(dtype)
    pairs = _params(init, inner, dtype)
    opt = cls(groups(pairs) if groups else pairs, **kwargs)
    out = []
    for k, gs in enumerate(grads):
        opt.step(_grads(pairs, gs, inner, skip(k)))
        out.append(_bits(pairs))
    return out, opt, pairs


@pytest.fixture
def body_calls(monkeypatch):
    """Counts of the composites' bodies run (the op-by-op path), by name."""
    calls = {"sgd_update": 0, "adam_update": 0}
    for name in calls:
        body = composite.COMPOSITES[name]

        def counted(*args, _body=body, _name=name, **kwargs):
            calls[_name] += 1
            return _body(*args, **kwargs)
        monkeypatch.setitem(composite.COMPOSITES, name, counted)
    return calls


# -- the layout ---------------------------------------------------------------------------------------

def test_c_layout_matches_the_hyperparameter_names():
    from ember.backends.cpu import ckernels
    lib = ckernels.native()[0]
    if lib is None:
        pytest.skip(ckernels.reason())
    for prefix, names in (("EMB_SGD_", updates.SGD_HYPER), ("EMB_ADAM_", updates.ADAM_HYPER)):
        assert [getattr(lib, prefix + n.upper()) for n in names] == list(range(len(names)))
        assert getattr(lib, prefix + "NHYPER") == len(names)


# -- the bodies are today's formulas ----------------------------------------------------------------------

def _old_sgd(x, g, state, group):
    lr, momentum, wd = group["lr"], group["momentum"], group["weight_decay"]
    if group["maximize"]:
        g = -g
    if wd != 0:
        g = g + x * wd
    if momentum != 0:
        buf = state.get("momentum_buffer")
        if buf is None:
            buf = g
        else:
            buf = buf * momentum
            damp = 1.0 - group["dampening"]
            buf = buf + (g if damp == 1.0 else g * damp)
        state["momentum_buffer"] = buf
        g = g + buf * momentum if group["nesterov"] else buf
    state["step"] += 1
    return x - g * lr


def _old_adam(decoupled):
    def update(x, g, state, group):
        lr, wd, eps = group["lr"], group["weight_decay"], group["eps"]
        beta1, beta2 = group["betas"]
        if group["maximize"]:
            g = -g
        m = state.get("exp_avg")
        if m is None:
            m = state["exp_avg"] = _zeros_like(x)
            state["exp_avg_sq"] = _zeros_like(x)
            if group["amsgrad"]:
                state["max_exp_avg_sq"] = _zeros_like(x)
        v = state["exp_avg_sq"]
        state["step"] += 1
        step = state["step"]
        if wd != 0:
            if decoupled:
                x = x * (1.0 - lr * wd)
            else:
                g = g + x * wd
        m = state["exp_avg"] = _lerp(m, g, 1.0 - beta1)
        v = state["exp_avg_sq"] = v * beta2 + g * (1.0 - beta2) * g
        bias_correction1 = 1.0 - beta1 ** step
        bias_correction2 = 1.0 - beta2 ** step
        step_size = lr / bias_correction1
        bias_correction2_sqrt = bias_correction2 ** 0.5
        if group["amsgrad"]:
            vmax = state["max_exp_avg_sq"] = state["max_exp_avg_sq"].maximum(v)
            denom = vmax.sqrt() / bias_correction2_sqrt + eps
        else:
            denom = v.sqrt() / bias_correction2_sqrt + eps
        return x + (m / denom) * (-step_size)
    return update


def _old_optimizer(cls):
    """``cls`` with its pre-composite per-parameter update."""
    update = _old_sgd if cls is SGD else _old_adam(cls is AdamW)

    class Old(cls):
        def _update(self, x, g, state, group):
            return update(x, g, state, group)

        def _update_group(self, group, xs, gs, states):
            return [update(x, g, s, group) for x, g, s in zip(xs, gs, states)]
    Old.__name__ = cls.__name__
    return Old


@pytest.mark.parametrize("cls,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_bodies_give_the_old_formulas_values(cls, kwargs):
    for dtype in DTYPES:
        new = _trajectory(REF, cls, kwargs, dtype)[0]
        old = _trajectory(REF, _old_optimizer(cls), kwargs, dtype)[0]
        assert new == old, dtype


# -- fused == reference ----------------------------------------------------------------------------------

_REF_CACHE = {}


def _reference(cls, kwargs, dtype):
    key = (cls.__name__, tuple(sorted(kwargs.items())), dtype)
    if key not in _REF_CACHE:
        _REF_CACHE[key] = _trajectory(REF, cls, kwargs, dtype)[0]
    return _REF_CACHE[key]


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
@pytest.mark.parametrize("cls,kwargs", CONFIGS, ids=CONFIG_IDS)
def test_fused_matches_the_reference_bit_for_bit(cls, kwargs, inner, body_calls):
    refs = [_reference(cls, kwargs, dtype) for dtype in DTYPES]
    body_calls.update(sgd_update=0, adam_update=0)
    for dtype, ref in zip(DTYPES, refs):
        assert _trajectory(inner, cls, kwargs, dtype)[0] == ref, dtype
    assert body_calls == {"sgd_update": 0, "adam_update": 0}  # the fused kernels ran, every step


BODIES = {name: composite.COMPOSITES[name] for name in ("sgd_update", "adam_update")}


def _op_by_op(inner, cls, kwargs, dtype, data):
    """The trajectory with the composites' bodies forced on ``inner``'s class (a user's override
    beats the fused path): the same device's op-by-op values."""
    for name, body in BODIES.items():
        type(inner).override(name, body)
    try:
        return _trajectory(inner, cls, kwargs, dtype, data=data)[0]
    finally:
        for name in BODIES:
            type(inner).override(name, None)


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_large_parameters_split_over_threads(inner, monkeypatch, body_calls):
    # above the C Cpu's buffer pool size and two threads' shares
    from ember.backends.cpu import ckernels
    monkeypatch.setitem(ckernels._state, "threads", 2)
    data = _data("float32", shapes=[(140001,), (300, 7)], steps=3, seed=3)
    for cls, kwargs in ((SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True)),
                        (AdamW, dict(lr=0.01, amsgrad=True))):
        got = _trajectory(inner, cls, kwargs, "float32", data=data)[0]
        assert body_calls == {"sgd_update": 0, "adam_update": 0}
        assert got == _op_by_op(inner, cls, kwargs, "float32", data), cls.__name__


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_groups_with_different_hyperparameters(inner):
    def groups(pairs):
        return [{"params": pairs[:2], "lr": 0.05, "momentum": 0.5},
                {"params": pairs[2:], "weight_decay": 0.1, "nesterov": True, "momentum": 0.9}]

    def adam_groups(pairs):
        return [{"params": pairs[:1], "betas": (0.2, 0.5), "amsgrad": True}, {"params": pairs[1:], "lr": 0.1}]

    for cls, kwargs, make in ((SGD, {"lr": 0.1}, groups), (Adam, {}, adam_groups), (AdamW, {}, adam_groups)):
        for dtype in DTYPES:
            got = _trajectory(inner, cls, kwargs, dtype, groups=make)[0]
            assert got == _trajectory(REF, cls, kwargs, dtype, groups=make)[0], (cls.__name__, dtype)


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_parameters_without_gradients_and_uneven_step_counts(inner):
    # p1 misses steps 0 and 2: Adam's cohorts then hold different step counts (bias corrections)
    def skip(k):
        return ("p1",) if k in (0, 2) else ()

    for cls, kwargs in ((SGD, {"lr": 0.1, "momentum": 0.9}), (Adam, {"lr": 0.01}), (AdamW, {"amsgrad": True})):
        got, opt, pairs = _trajectory(inner, cls, kwargs, "float32", skip=skip)
        ref, ref_opt, _ = _trajectory(REF, cls, kwargs, "float32", skip=skip)
        assert got == ref, cls.__name__
        steps = [opt.state[p.id]["step"] for _, p in pairs]
        assert steps == [STEPS, STEPS - 2, STEPS]
    init, _ = _data("float32")
    got = _trajectory(inner, SGD, {"lr": 0.1}, "float32", skip=lambda k: ("p0",))[0]
    assert got[-1][0] == np.array(init[0].astype(np.float64)).tobytes()  # never stepped: unchanged


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_state_round_trip_continues_exactly(inner, tmp_path):
    data = _data("float32", steps=5, seed=1)
    for cls, kwargs in ((SGD, {"lr": 0.1, "momentum": 0.9, "dampening": 0.1}), (AdamW, {"amsgrad": True})):
        straight = _trajectory(inner, cls, kwargs, "float32", data=data)[0]
        init, grads = data
        pairs = _params(init, inner, "float32")
        opt = cls(pairs, **kwargs)
        for gs in grads[:3]:
            opt.step(_grads(pairs, gs, inner))
        path = opt.save(str(tmp_path / ("%s.safetensors" % cls.__name__)))
        saved = opt.state_dict()
        pairs2 = [(n, Param(ember.tensor(p.value.tolist(), dtype=ember.float32, device=Autodiff(inner))))
                  for n, p in pairs]
        opt2 = cls(pairs2, **kwargs)
        opt2.load(path)
        again = opt2.state_dict()
        assert again["param_groups"] == saved["param_groups"]
        for n in saved["state"]:
            for k, v in saved["state"][n].items():
                w = again["state"][n][k]
                assert (v.tolist() == w.tolist()) if isinstance(v, ember.Tensor) else v == w, (n, k)
        for gs in grads[3:]:
            opt2.step(_grads(pairs2, gs, inner))
        assert _bits(pairs2) == straight[-1], cls.__name__


def test_mixed_dtypes_in_a_group_fall_back_where_no_kernel(body_calls):
    inner = dict(FAST).get("cpu-c")
    if inner is None:
        pytest.skip("the C kernels are not built")
    r = np.random.default_rng(5)
    dts = [ember.float32, ember.float64, ember.float16, ember.float32]
    init = [r.standard_normal((4,)).astype(np.float32) for _ in dts]
    grads = [[r.standard_normal((4,)).astype(np.float32) for _ in dts] for _ in range(3)]

    def run(dev, cls, kwargs):
        pairs = [("p%d" % i, Param(ember.tensor(a.tolist(), dtype=dt, device=Autodiff(dev))))
                 for i, (a, dt) in enumerate(zip(init, dts))]
        opt = cls(pairs, **kwargs)
        for gs in grads:
            opt.step(_grads(pairs, gs, dev))
        return _bits(pairs), [p.dtype for _, p in pairs]

    for cls, kwargs in ((SGD, {"lr": 0.1, "momentum": 0.9}), (Adam, {"lr": 0.01})):
        before = dict(body_calls)
        got = run(inner, cls, kwargs)
        name = "sgd_update" if cls is SGD else "adam_update"
        assert body_calls[name] - before[name] == 3  # the float16 cohort, once a step
        assert got == run(REF, cls, kwargs), cls.__name__
        assert got[1] == dts


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_strided_gradients(inner):
    r = np.random.default_rng(7)
    init = [r.standard_normal((3, 5)).astype(np.float32)]
    gsrc = [r.standard_normal((5, 3)).astype(np.float32) for _ in range(3)]

    def run(dev, cls, kwargs):
        pairs = _params(init, dev, "float32")
        opt = cls(pairs, **kwargs)
        for g in gsrc:
            gt = ember.tensor(g.tolist(), dtype=ember.float32, device=dev).T  # a transposed view
            opt.step(GradientsParams({pairs[0][1].id: gt}))
        return _bits(pairs)

    for cls, kwargs in ((SGD, {"lr": 0.1, "momentum": 0.9}), (Adam, {"lr": 0.01})):
        assert run(inner, cls, kwargs) == run(REF, cls, kwargs), cls.__name__


@pytest.mark.parametrize("inner", [d for _, d in FAST], ids=FAST_IDS)
def test_bad_gradient_is_an_error_and_changes_nothing(inner):
    init, grads = _data("float32")
    for cls in (SGD, Adam):
        pairs = _params(init, inner, "float32")
        opt = cls(pairs, lr=0.1)
        before = _bits(pairs)
        bad = {p.id: ember.tensor(g.tolist(), dtype=ember.float32, device=inner) for (_, p), g in zip(pairs, grads[0])}
        bad[pairs[1][1].id] = ember.zeros((7,), device=inner)
        with pytest.raises(ShapeError, match=r"step: gradient of shape \(7,\) for parameter 'p1' of shape \(5,\)"):
            opt.step(GradientsParams(bad))
        assert _bits(pairs) == before and opt.state == {}
        with pytest.raises(ArgumentError):
            cls(pairs, lr=-1.0)


def test_a_user_override_beats_the_fused_kernel():
    inner = dict(FAST).get("cpu-c")
    if inner is None:
        pytest.skip("the C kernels are not built")
    seen = []

    def mine(hyper, values, params, grads, bufs):
        seen.append(hyper.tolist())
        return composite.COMPOSITES["sgd_update"](hyper, values, params, grads, bufs)
    ember.Cpu.override("sgd_update", mine)
    try:
        _trajectory(inner, SGD, {"lr": 0.5, "momentum": 0.25}, "float32")
    finally:
        ember.Cpu.override("sgd_update", None)
    at = updates.SGD_AT
    assert len(seen) == STEPS
    assert seen[0][at["lr"]] == 0.5 and seen[0][at["momentum"]] == 0.25 and seen[0][at["momentum_on"]] == 1.0


def test_torch_takes_large_tensors_alone_in_a_graph_with_the_same_bits(monkeypatch, body_calls):
    # inside a CUDA graph capture (faked here on the CPU) the Torch device's updates take the
    # tensors above optim.ALONE one by one instead of through a multi-tensor kernel
    inner = dict(FAST).get("torch")
    if inner is None:
        pytest.skip("torch is not installed")
    from ember.accel.torch import optim as torch_optim
    data = _data("float32", shapes=[(40,), (3, 4), (7,), ()], steps=3, seed=5)
    configs = ((SGD, dict(lr=0.1, momentum=0.9, weight_decay=0.01, nesterov=True, maximize=True)),
               (AdamW, dict(lr=0.01, amsgrad=True)), (Adam, dict(lr=0.01, weight_decay=0.1)))
    want = [_trajectory(inner, cls, kwargs, "float32", data=data)[0] for cls, kwargs in configs]
    alone = []
    real = torch_optim._each

    def each(name, *args):
        first = next(a for a in args if type(a) in (list, tuple))
        alone.extend(t.numel() for t in first if t.numel() > torch_optim.ALONE)
        return real(name, *args)
    monkeypatch.setattr(torch_optim, "ALONE", 10)
    monkeypatch.setattr(torch_optim, "_capturing", lambda t: True)
    monkeypatch.setattr(torch_optim, "_each", each)
    got = [_trajectory(inner, cls, kwargs, "float32", data=data)[0] for cls, kwargs in configs]
    assert body_calls == {"sgd_update": 0, "adam_update": 0}
    assert got == want
    assert set(alone) == {40, 12}  # the two tensors above 10 elements went alone, every op
