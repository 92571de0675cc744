"""The Torch device's fused linear, relu, softmax, log_softmax and cross entropy (forward and its
input gradient) against the composites' bodies, and the composites' own errors where the fused
path steps aside."""
import pytest

import ember
import ember.nn.functional as F
from ember.accel import Autodiff, Torch
from ember.composite import COMPOSITES
from ember.errors import ArgumentError, IndexOutOfRange, ShapeError
from harness.check import assert_close

TOL = {ember.float32: 1e-6, ember.float64: 1e-12, ember.bfloat16: 1e-2, ember.float16: 2e-3}


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.bfloat16, ember.float16])
def test_fused_paths_match_the_composites(dtype):
    ember.seed(3)
    x = ember.randn(4, 2, 5, device=Torch()).to(dtype)
    w = ember.randn(3, 5, device=Torch()).to(dtype)
    b = ember.randn(3, device=Torch()).to(dtype)
    tol = TOL[dtype]
    cases = [("linear", F.linear(x, w, b), COMPOSITES["linear"](x, w, b)),
             ("linear-nobias", F.linear(x, w), COMPOSITES["linear"](x, w)),
             ("relu", F.relu(x), COMPOSITES["relu"](x)),
             ("softmax", F.softmax(x, dim=1), COMPOSITES["softmax"](x, 1)),
             ("log_softmax", F.log_softmax(x, dim=-1), COMPOSITES["log_softmax"](x, -1))]
    for name, got, want in cases:
        assert got.dtype is want.dtype and got.shape == want.shape and got.device == Torch(), name
        assert_close(got.float(), want.float().tolist(), rtol=tol, atol=tol, msg=name)


def test_gradients_through_fused_paths_match_the_cpu():
    ember.seed(4)
    vals = [ember.randn(6, 5), ember.randn(3, 5), ember.randn(3)]
    grads = []
    for dev in (Autodiff(ember.Cpu()), Autodiff(Torch())):
        x, w, b = [v.to(dev).requires_grad_() for v in vals]
        loss = (F.log_softmax(F.relu(F.linear(x, w, b)), dim=1) * F.softmax(x[:, :3], dim=1)).sum()
        g = loss.backward()
        grads.append([t.grad(g).tolist() for t in (x, w, b)])
    for got, want in zip(grads[1], grads[0]):
        assert_close(got, want, rtol=1e-5, atol=1e-6)


def test_what_the_fused_path_cannot_take_gets_the_composites_error():
    x = ember.ones(2, 4, device=Torch())
    with pytest.raises(ShapeError, match="matmul: expected a.shape\\[-1\\] == b.shape\\[-2\\]"):
        F.linear(x, ember.ones(3, 5, device=Torch()))
    with pytest.raises(ShapeError, match="linear: expected bias of shape \\(3,\\)"):
        F.linear(x, ember.ones(3, 4, device=Torch()), ember.ones(4, device=Torch()))
    assert F.linear(x, ember.ones(3, 4, device=Torch()).double()).dtype is ember.float64  # promotion, as the composite


CE_CASES = [dict(), dict(reduction="sum"), dict(reduction="none"), dict(ignore_index=2),
            dict(ignore_index=0, reduction="sum"), dict(weight=True), dict(weight=True, ignore_index=1)]


@pytest.fixture
def ce_bodies(monkeypatch):
    """Counts of the cross entropy composites' bodies run (the op-by-op path), by name."""
    import ember.accel.autodiff.composites  # noqa: F401  (registers cross_entropy_input_grad)
    import ember.nn.functional.loss  # noqa: F401  (ember.nn.functional loads its parts on first use)
    calls = {"cross_entropy": 0, "cross_entropy_input_grad": 0}
    for name in calls:
        body = COMPOSITES[name]

        def counted(*args, _body=body, _name=name, **kwargs):
            calls[_name] += 1
            return _body(*args, **kwargs)
        monkeypatch.setitem(COMPOSITES, name, counted)
    return calls


@pytest.mark.parametrize("dtype", [ember.float32, ember.float64])
@pytest.mark.parametrize("case", CE_CASES, ids=[",".join("%s=%s" % kv for kv in sorted(c.items())) or "default"
                                                for c in CE_CASES])
def test_cross_entropy_and_its_gradient_match_the_composites(dtype, case, ce_bodies):
    from ember.accel.autodiff import composites as ad_composites
    ember.seed(5)
    kw = dict(case)
    x = (ember.randn(7, 4, device=Torch()) * 3).to(dtype)
    y = ember.tensor([0, 3, 2, 1, 2, 0, 3], device=Torch())
    if kw.get("weight"):
        kw["weight"] = ember.tensor([0.5, 2.0, 1.0, 0.25], device=Torch()).to(dtype)
    g = ember.tensor(1.5, device=Torch()).to(dtype) if kw.get("reduction") != "none" else \
        ember.arange(7, device=Torch()).to(dtype) / 3
    got = (F.cross_entropy(x, y, **kw), ad_composites.cross_entropy_input_grad(g, x, y, **kw))
    assert ce_bodies == {"cross_entropy": 0, "cross_entropy_input_grad": 0}  # the fused paths ran
    want = (COMPOSITES["cross_entropy"](x, y, **kw), COMPOSITES["cross_entropy_input_grad"](g, x, y, **kw))
    tol = TOL[dtype] * 4
    for name, a, b in zip(("loss", "input grad"), got, want):
        assert a.dtype is b.dtype and a.shape == b.shape and a.device == Torch(), name
        assert_close(a, b.tolist(), rtol=tol, atol=tol, msg=name)


def test_cross_entropy_gradient_under_autodiff_matches_the_cpu(ce_bodies):
    ember.seed(6)
    vals = [ember.randn(5, 3), ember.tensor([2, -100, 0, 1, 2]), ember.tensor([1.0, 0.5, 3.0])]
    grads = []
    for dev in (Autodiff(ember.Cpu()), Autodiff(Torch())):
        x = vals[0].to(dev).requires_grad_()
        loss = F.cross_entropy(x, vals[1].to(dev), weight=vals[2].to(dev))
        grads.append((loss.tolist(), x.grad(loss.backward()).tolist()))
    assert ce_bodies["cross_entropy_input_grad"] == 1  # the Cpu's; Torch's gradient took the fused path
    assert_close(grads[1][0], grads[0][0], rtol=1e-6, atol=1e-6)
    assert_close(grads[1][1], grads[0][1], rtol=1e-5, atol=1e-6)


def test_cross_entropy_all_targets_ignored_gives_nan_as_the_composite():
    x = ember.ones(3, 4, device=Torch())
    y = ember.full((3,), -100, dtype=ember.int64, device=Torch())
    got, want = F.cross_entropy(x, y).item(), COMPOSITES["cross_entropy"](x, y).item()
    assert got != got and want != want


def test_cross_entropy_bad_class_index_raises_the_composites_error():
    x = ember.ones(3, 4, device=Torch())
    for fn in (F.cross_entropy, COMPOSITES["cross_entropy"]):
        with pytest.raises(IndexOutOfRange, match=r"cross_entropy: class indices must be in \[0, 4\) "
                                                  r"\(or ignore_index\), found 0\.\.4"):
            fn(x, ember.tensor([0, 4, -100], device=Torch()))
        with pytest.raises(IndexOutOfRange, match=r"found -1\.\.2"):
            fn(x, ember.tensor([-1, 2, 2], device=Torch()))


def test_cross_entropy_cases_the_fused_path_leaves_to_the_composite(ce_bodies):
    ember.seed(7)
    x = ember.randn(2, 3, 4, device=Torch())
    F.cross_entropy(x, ember.tensor([[0, 1, 2, 1], [2, 2, 0, 1]], device=Torch()))  # (N, C, d)
    F.cross_entropy(x[:, :, 0], ember.tensor([0, 2], device=Torch()), label_smoothing=0.1)
    F.cross_entropy(x[:, :, 0], ember.tensor([0, 2], dtype=ember.int32, device=Torch()))
    F.cross_entropy(x[:, :, 0], F.softmax(x[:, :, 1], dim=1))  # class probabilities
    assert ce_bodies["cross_entropy"] == 4
    with pytest.raises(ShapeError, match="cross_entropy: expected target of shape"):
        F.cross_entropy(x[:, :, 0], ember.tensor([0, 2, 1], device=Torch()))
    with pytest.raises(ArgumentError, match="cross_entropy: reduction must be"):
        F.cross_entropy(x[:, :, 0], ember.tensor([0, 2], device=Torch()), reduction=["mean"])


def test_cross_entropy_gradient_reuses_its_forwards_log_probabilities(monkeypatch):
    """The gradient right after its forward, on the same arrays, takes the forward's log-probabilities
    (the same kernels on the same arrays, so the same bits); logits written in place since, or too
    large to keep, are computed again."""
    import torch
    from ember.accel.autodiff import composites as ad_composites
    from ember.accel.torch import loss
    runs = []
    real = loss._forward
    monkeypatch.setattr(loss, "_forward", lambda *a: runs.append(1) or real(*a))
    ember.seed(8)
    x = ember.randn(6, 5, device=Torch())
    y = ember.tensor([0, 4, 2, -100, 1, 3], device=Torch())
    g = ember.tensor(0.5, device=Torch())

    def grad():
        return ad_composites.cross_entropy_input_grad(g, x, y).tolist()
    loss._last[0] = None
    alone = grad()  # no forward before it: computes its own
    assert len(runs) == 1
    F.cross_entropy(x, y)
    assert len(runs) == 2 and grad() == alone and len(runs) == 2  # reused, same bits
    assert grad() == alone and len(runs) == 3  # used once: the next gradient computes again
    F.cross_entropy(x, y)
    x._data.mul_(2)  # in place: torch's count moves, the kept values are stale
    twice = grad()
    assert len(runs) == 5 and twice != alone
    loss._last[0] = None
    assert grad() == twice
    monkeypatch.setattr(loss, "_KEEP_MAX", 10)  # 30 log-probabilities: too many to keep
    runs.clear()
    F.cross_entropy(x, y)
    grad()
    assert len(runs) == 2 and loss._last[0] is None
    from ember.accel import from_torch
    with torch.inference_mode():  # inference tensors keep no version count: nothing is kept
        xi = from_torch(torch.randn(6, 5))
        F.cross_entropy(xi, y)
    assert loss._last[0] is None
