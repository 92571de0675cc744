"""Every loss of ``ember.nn.functional`` against PyTorch: values for each reduction, and gradients
through ``Autodiff`` against torch's autograd, on every inner backend the harness provides.

Values and gradients are compared in float64 (tight tolerances), with float32 spot checks.
A gradient is taken of ``sum(loss * w)`` for a fixed random ``w`` so every output element counts.
"""
import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from harness import backends
from harness.check import assert_close

pytestmark = pytest.mark.filterwarnings("ignore:reduction. .mean. divides")

INNER = backends.plain()
IDS = [name for name, _ in INNER]
RTOL, ATOL = 1e-9, 1e-11


def _rng(seed=0):
    return np.random.default_rng(seed)


def _ember(a, device, dtype=None, grad=False):
    a = np.asarray(a)
    if dtype is None:
        dtype = ember.int64 if a.dtype.kind in "iu" else ember.float64
    t = ember.tensor(a.tolist(), dtype=dtype, device=device)
    return t.requires_grad_() if grad else t


class Case:
    """``ember_fn(*tensors)`` vs ``torch_fn(*tensors)``; ``grad``: indices of inputs to differentiate."""

    def __init__(self, name, ember_fn, torch_fn, inputs, grad=(0,)):
        self.name, self.ember_fn, self.torch_fn, self.inputs, self.grad = name, ember_fn, torch_fn, inputs, grad


def _cases():
    r = _rng(1)
    N, C = 6, 4
    x = r.standard_normal((N, C))
    y = r.integers(0, C, N)
    y_ign = y.copy()
    y_ign[1] = -100
    w = r.random(C) + 0.5
    p = r.random((N, C))
    p /= p.sum(1, keepdims=True)
    x3 = r.standard_normal((N, C, 3))
    y3 = r.integers(0, C, (N, 3))
    y3[0, 1] = 2
    p3 = r.random((N, C, 3))
    p3 /= p3.sum(1, keepdims=True)
    x4 = r.standard_normal((2, 3, 2, 2))
    y4 = r.integers(0, 3, (2, 2, 2))
    w3 = np.array([1.0, 2.0, 0.5])
    lp = np.log(p)
    t01 = r.random((N, C))
    probs = r.random((N, C)) * 0.98 + 0.01
    z = r.standard_normal((N, C))
    kl_in = np.log(p[::-1].copy())
    kl_t = p.copy()
    kl_t[0, 0] = 0.0
    x1 = r.standard_normal(5)
    p1 = r.random(5)
    p1 /= p1.sum()

    cases = []

    def add(name, ef, tf, inputs, grad=(0,)):
        cases.append(Case(name, ef, tf, inputs, grad))

    def per_reduction(red):
        for ls in (0.0, 0.2):
            for weighted in (False, True):
                tag = "%s.ls%s%s" % (red, ls, ".w" if weighted else "")
                kw = dict(reduction=red, label_smoothing=ls)

                def ce(f, ignore=-100, kw=kw, weighted=weighted):
                    if weighted:
                        return lambda a, b, c: f(a, b, weight=c, ignore_index=ignore, **kw)
                    return lambda a, b: f(a, b, ignore_index=ignore, **kw)
                extra = [w] if weighted else []
                add("ce.idx." + tag, ce(F.cross_entropy), ce(TF.cross_entropy), [x, y] + extra)
                add("ce.ignore." + tag, ce(F.cross_entropy), ce(TF.cross_entropy), [x, y_ign] + extra)
                add("ce.prob." + tag, ce(F.cross_entropy), ce(TF.cross_entropy), [x, p] + extra)
                add("ce.3d.ignore2." + tag, ce(F.cross_entropy, 2), ce(TF.cross_entropy, 2), [x3, y3] + extra)
                add("ce.3d.prob." + tag, ce(F.cross_entropy), ce(TF.cross_entropy), [x3, p3] + extra)
        add("ce.4d.ls.w." + red, lambda a, b, c: F.cross_entropy(a, b, weight=c, label_smoothing=0.3, reduction=red),
            lambda a, b, c: TF.cross_entropy(a, b, weight=c, label_smoothing=0.3, reduction=red), [x4, y4, w3])
        add("nll." + red, lambda a, b: F.nll_loss(a, b, reduction=red), lambda a, b: TF.nll_loss(a, b, reduction=red),
            [lp, y])
        add("nll.w.ignore." + red, lambda a, b, c: F.nll_loss(a, b, weight=c, reduction=red),
            lambda a, b, c: TF.nll_loss(a, b, weight=c, reduction=red), [lp, y_ign, w])
        add("nll.3d.ignore2." + red, lambda a, b: F.nll_loss(a, b, ignore_index=2, reduction=red),
            lambda a, b: TF.nll_loss(a, b, ignore_index=2, reduction=red), [x3, y3])
        add("bce." + red, lambda a, b: F.binary_cross_entropy(a, b, reduction=red),
            lambda a, b: TF.binary_cross_entropy(a, b, reduction=red), [probs, t01])
        add("bce.w." + red, lambda a, b, c: F.binary_cross_entropy(a, b, weight=c, reduction=red),
            lambda a, b, c: TF.binary_cross_entropy(a, b, weight=c, reduction=red), [probs, t01, w])
        add("bce_logits." + red, lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction=red),
            lambda a, b: TF.binary_cross_entropy_with_logits(a, b, reduction=red), [x * 5, t01], (0, 1))
        add("bce_logits.w.pos_weight." + red,
            lambda a, b, c, d: F.binary_cross_entropy_with_logits(a, b, weight=c, pos_weight=d, reduction=red),
            lambda a, b, c, d: TF.binary_cross_entropy_with_logits(a, b, weight=c, pos_weight=d, reduction=red),
            [x * 5, t01, w, w * 2])
        add("mse." + red, lambda a, b: F.mse_loss(a, b, reduction=red), lambda a, b: TF.mse_loss(a, b, reduction=red),
            [x, z], (0, 1))
        add("l1." + red, lambda a, b: F.l1_loss(a, b, reduction=red), lambda a, b: TF.l1_loss(a, b, reduction=red),
            [x, z], (0, 1))
        for d in (0.5, 1.0, 2.0):
            add("huber.d%s.%s" % (d, red), lambda a, b, d=d: F.huber_loss(a, b, reduction=red, delta=d),
                lambda a, b, d=d: TF.huber_loss(a, b, reduction=red, delta=d), [x, z], (0, 1))
        for beta in (0.0, 0.5, 1.0, 2.0):
            add("smooth_l1.b%s.%s" % (beta, red),
                lambda a, b, beta=beta: F.smooth_l1_loss(a, b, reduction=red, beta=beta),
                lambda a, b, beta=beta: TF.smooth_l1_loss(a, b, reduction=red, beta=beta), [x, z], (0, 1))
    for red in ("mean", "sum", "none"):
        per_reduction(red)

    def kl(red):
        add("kl_div." + red, lambda a, b: F.kl_div(a, b, reduction=red),
            lambda a, b: TF.kl_div(a, b, reduction=red), [kl_in, kl_t], (0, 1))
        add("kl_div.log_target." + red, lambda a, b: F.kl_div(a, b, reduction=red, log_target=True),
            lambda a, b: TF.kl_div(a, b, reduction=red, log_target=True), [kl_in, np.log(p)], (0, 1))

    for red in ("mean", "sum", "none", "batchmean"):
        kl(red)
    # unbatched inputs, extreme logits, ties
    add("ce.unbatched.idx", lambda a, b: F.cross_entropy(a, b), lambda a, b: TF.cross_entropy(a, b), [x1, np.array(3)])
    add("ce.unbatched.prob", lambda a, b: F.cross_entropy(a, b), lambda a, b: TF.cross_entropy(a, b), [x1, p1])
    add("nll.unbatched", lambda a, b: F.nll_loss(a, b), lambda a, b: TF.nll_loss(a, b), [x1, np.array(3)])
    big = np.array([[1000.0, -1000.0, 0.0], [1e4, 1e4, -1e4]])
    add("ce.extreme_logits", lambda a, b: F.cross_entropy(a, b, reduction="none", label_smoothing=0.1),
        lambda a, b: TF.cross_entropy(a, b, reduction="none", label_smoothing=0.1), [big, np.array([0, 1])])
    zl = np.array([[-800.0, -50.0, 0.0, 50.0, 800.0]])
    tl = np.array([[1.0, 0.0, 0.5, 1.0, 0.0]])
    add("bce_logits.extreme", lambda a, b, c: F.binary_cross_entropy_with_logits(a, b, pos_weight=c, reduction="none"),
        lambda a, b, c: TF.binary_cross_entropy_with_logits(a, b, pos_weight=c, reduction="none"),
        [zl, tl, np.full(5, 3.0)])
    add("ce.all_ignored.mean_is_nan", lambda a, b: F.cross_entropy(a, b), lambda a, b: TF.cross_entropy(a, b),
        [big, np.array([-100, -100])])
    return cases


CASES = _cases()


def _run(case, device, dtype=ember.float64):
    ins = [_ember(a, device, None if np.asarray(a).dtype.kind in "iu" else dtype, i in case.grad
                  and np.asarray(a).dtype.kind == "f") for i, a in enumerate(case.inputs)]
    tdt = torch.float64 if dtype is ember.float64 else torch.float32
    tins = [torch.tensor(np.asarray(a), dtype=None if np.asarray(a).dtype.kind in "iu" else tdt,
                         requires_grad=i in case.grad and np.asarray(a).dtype.kind == "f")
            for i, a in enumerate(case.inputs)]
    out = case.ember_fn(*ins)
    tout = case.torch_fn(*tins)
    return ins, tins, out, tout


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_value_and_grad(case, inner):
    dev = Autodiff(inner)
    ins, tins, out, tout = _run(case, dev)
    assert out.shape == tuple(tout.shape), (out.shape, tout.shape)
    assert out.dtype is ember.float64
    assert_close(out, tout.detach().tolist(), rtol=RTOL, atol=ATOL, msg=case.name)
    if np.isnan(tout.detach().numpy()).any():
        return
    w = _rng(7).standard_normal(tuple(tout.shape))
    grads = (out * _ember(w, dev)).sum().backward()
    (tout * torch.tensor(w)).sum().backward()
    for i in case.grad:
        if not tins[i].requires_grad:
            continue
        g = ins[i].grad(grads)
        assert g is not None, "%s: no gradient for input %d" % (case.name, i)
        assert g.device == inner
        assert_close(g, tins[i].grad.tolist(), rtol=1e-8, atol=1e-10, msg="%s grad %d" % (case.name, i))


F32 = [c for c in CASES if c.name.endswith(".mean") or c.name.endswith(".batchmean")
       or c.name in ("ce.idx.mean.ls0.2.w", "ce.prob.mean.ls0.2.w", "ce.extreme_logits")]


@pytest.mark.parametrize("case", F32, ids=[c.name for c in F32])
def test_float32(case):
    dev = Autodiff(ember.Cpu())
    ins, tins, out, tout = _run(case, dev, ember.float32)
    assert out.dtype is ember.float32
    assert_close(out, tout.detach().tolist(), rtol=2e-6, atol=2e-6, msg=case.name)
    grads = out.sum().backward()
    tout.sum().backward()
    for i in case.grad:
        if tins[i].requires_grad:
            assert_close(ins[i].grad(grads), tins[i].grad.tolist(), rtol=1e-5, atol=1e-6, msg=case.name)


def test_losses_on_plain_device_record_nothing():
    x = ember.randn(4, 3)
    loss = F.cross_entropy(x, ember.tensor([0, 1, 2, 0]))
    assert loss.shape == () and not loss.requires_grad


def test_bce_saturated_values_match_torch():
    """Probabilities of exactly 0 and 1: each log is clamped at -100, like PyTorch."""
    x = [0.0, 1.0, 0.5, 1e-30, 1.0, 0.0]
    t = [1.0, 0.0, 0.5, 1.0, 1.0, 0.0]
    out = F.binary_cross_entropy(ember.tensor(x, dtype=ember.float64), ember.tensor(t, dtype=ember.float64),
                                 reduction="none")
    ref = TF.binary_cross_entropy(torch.tensor(x, dtype=torch.float64), torch.tensor(t, dtype=torch.float64),
                                  reduction="none")
    assert_close(out, ref.tolist(), rtol=1e-12, atol=0)


def test_bce_saturated_gradient_matches_torch():
    dev = Autodiff(ember.Cpu())
    x = [0.0, 1.0, 0.5, 1.0, 0.0]
    t = [1.0, 0.0, 0.5, 1.0, 0.0]
    e = ember.tensor(x, dtype=ember.float64, device=dev).requires_grad_()
    grads = F.binary_cross_entropy(e, ember.tensor(t, dtype=ember.float64, device=dev), reduction="sum").backward()
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    TF.binary_cross_entropy(tx, torch.tensor(t, dtype=torch.float64), reduction="sum").backward()
    assert_close(e.grad(grads), tx.grad.tolist(), rtol=1e-9, atol=0)


# -- bad input ------------------------------------------------------------------------------------------

X = ember.randn(3, 4)


def _raises(exc, fn):
    with pytest.raises(exc) as info:
        fn()
    assert isinstance(info.value, ember.EmberError)
    return str(info.value)


@pytest.mark.parametrize("name,fn", [
    ("mse", lambda: F.mse_loss(X, ember.randn(4, 3))),
    ("l1", lambda: F.l1_loss(X, ember.randn(3))),
    ("huber", lambda: F.huber_loss(X, ember.randn(3, 5))),
    ("smooth_l1", lambda: F.smooth_l1_loss(X, ember.randn(3, 5))),
    ("kl_div", lambda: F.kl_div(X, ember.randn(3, 5))),
    ("bce", lambda: F.binary_cross_entropy(ember.rand(3), ember.rand(4))),
    ("bce_logits", lambda: F.binary_cross_entropy_with_logits(X, ember.rand(3, 5))),
    ("ce.idx", lambda: F.cross_entropy(X, ember.tensor([0, 1]))),
    ("ce.prob", lambda: F.cross_entropy(X, ember.rand(3, 5))),
    ("nll", lambda: F.nll_loss(X, ember.tensor([[0, 1, 2]]))),
])
def test_shape_mismatch(name, fn):
    msg = _raises(ember.ShapeError, fn)
    assert "shape" in msg


def test_float_targets_for_nll():
    msg = _raises(ember.DTypeError, lambda: F.nll_loss(X, ember.tensor([0.0, 1.0, 2.0])))
    assert msg.startswith("nll_loss:") and "float32" in msg


@pytest.mark.parametrize("target", [[0, 1, 4], [0, -1, 2], [0, 9, 1]])
@pytest.mark.parametrize("fn", [F.cross_entropy, F.nll_loss], ids=["cross_entropy", "nll_loss"])
def test_class_out_of_range(fn, target):
    msg = _raises(ember.EmberError, lambda: fn(X, ember.tensor(target)))
    assert "[0, 4)" in msg


def test_ignore_index_is_not_out_of_range():
    F.cross_entropy(X, ember.tensor([0, -100, 3]))
    F.cross_entropy(X, ember.tensor([0, 7, 3]), ignore_index=7)


@pytest.mark.parametrize("fn", [
    lambda r: F.mse_loss(X, X, reduction=r),
    lambda r: F.l1_loss(X, X, reduction=r),
    lambda r: F.cross_entropy(X, ember.tensor([0, 1, 2]), reduction=r),
    lambda r: F.nll_loss(X, ember.tensor([0, 1, 2]), reduction=r),
    lambda r: F.kl_div(X, X, reduction=r),
    lambda r: F.binary_cross_entropy_with_logits(X, X, reduction=r),
])
def test_bad_reduction(fn):
    msg = _raises(ember.ArgumentError, lambda: fn("avg"))
    assert "'avg'" in msg


def test_bad_label_smoothing():
    _raises(ember.ArgumentError, lambda: F.cross_entropy(X, ember.tensor([0, 1, 2]), label_smoothing=1.5))


def test_class_weight_of_wrong_size():
    _raises(ember.ShapeError, lambda: F.cross_entropy(X, ember.tensor([0, 1, 2]), weight=ember.ones(3)))
