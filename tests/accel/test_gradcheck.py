"""Gradient checks: every differentiable op, autodiff against central finite differences in float64.

Runs ``Autodiff(inner)`` for every inner backend the harness provides. Each case computes
``sum(f(inputs) * w)`` for a fixed random ``w`` so every output element matters, then compares
the gradient of every float input with finite differences computed on the pure Cpu in float64.
"""
import math

import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from harness import backends

H = 1e-6


def _inner_devices():
    return [(name, dev) for name, dev in backends.inner_for_autodiff()]


def _rand(shape, gen, low=-1.0, high=1.0):
    return [low + (high - low) * v for v in gen.uniforms(math.prod(shape) if shape else 1)]


class Case:
    def __init__(self, name, fn, shapes, low=-1.0, high=1.0, ints=None, atol=1e-6, rtol=1e-5):
        self.name, self.fn, self.shapes = name, fn, shapes
        self.low, self.high, self.ints, self.atol, self.rtol = low, high, ints or {}, atol, rtol


def _loss(case, tensors, device):
    out = case.fn(*tensors)
    gen = ember.Generator(99)
    w = ember.tensor(_rand(out.shape, gen), dtype=ember.float64, device=device).reshape(out.shape)
    return (out * w).sum()


def _inputs(case, device):
    gen = ember.Generator(abs(hash(case.name)) % 10007)
    out = []
    for i, shape in enumerate(case.shapes):
        if i in case.ints:
            lo, hi = case.ints[i]
            vals = [gen.randint(lo, hi) for _ in range(math.prod(shape))]
            out.append(ember.tensor(vals, dtype=ember.int64, device=device).reshape(shape))
        else:
            vals = _rand(shape, gen, case.low, case.high)
            out.append(ember.tensor(vals, dtype=ember.float64, device=device).reshape(shape))
    return out


def _numeric(case):
    cpu = ember.Cpu()
    base = _inputs(case, cpu)
    grads = []
    for i, t in enumerate(base):
        if i in case.ints:
            grads.append(None)
            continue
        flat = t.reshape(-1).tolist()
        g = []
        for k in range(len(flat)):
            vals = []
            for step in (H, -H):
                moved = list(flat)
                moved[k] += step
                args = list(base)
                args[i] = ember.tensor(moved, dtype=ember.float64).reshape(t.shape)
                vals.append(_loss(case, args, cpu).item())
            g.append((vals[0] - vals[1]) / (2 * H))
        grads.append(g)
    return grads


def c(name, fn, *shapes, **kw):
    return Case(name, fn, list(shapes), **kw)


CASES = [
    # elementwise
    c("neg", lambda x: -x, (2, 3)),
    c("abs", lambda x: x.abs(), (2, 3)),
    c("exp", lambda x: x.exp(), (2, 3)),
    c("log", lambda x: x.log(), (2, 3), low=0.5, high=2.0),
    c("sqrt", lambda x: x.sqrt(), (2, 3), low=0.5, high=2.0),
    c("rsqrt", lambda x: x.rsqrt(), (2, 3), low=0.5, high=2.0),
    c("sin", lambda x: x.sin(), (2, 3)),
    c("cos", lambda x: x.cos(), (2, 3)),
    c("tan", lambda x: x.tan(), (2, 3)),
    c("asin", lambda x: x.asin(), (2, 3), low=-0.8, high=0.8),
    c("acos", lambda x: x.acos(), (2, 3), low=-0.8, high=0.8),
    c("atan", lambda x: x.atan(), (2, 3)),
    c("sinh", lambda x: x.sinh(), (2, 3)),
    c("cosh", lambda x: x.cosh(), (2, 3)),
    c("tanh", lambda x: x.tanh(), (2, 3)),
    c("erf", lambda x: x.erf(), (2, 3)),
    c("sigmoid", lambda x: x.sigmoid(), (2, 3)),
    c("expm1", lambda x: x.expm1(), (2, 3)),
    c("log1p", lambda x: x.log1p(), (2, 3), low=-0.5, high=1.0),
    c("reciprocal", lambda x: x.reciprocal(), (2, 3), low=0.5, high=2.0),
    c("add.broadcast", lambda a, b: a + b, (2, 3), (3,)),
    c("sub.broadcast", lambda a, b: a - b, (2, 1), (1, 3)),
    c("mul.broadcast", lambda a, b: a * b, (2, 3), (2, 1)),
    c("div", lambda a, b: a / b, (2, 3), (2, 3), low=0.5, high=2.0),
    c("pow", lambda a, b: a ** b, (2, 3), (2, 3), low=0.5, high=2.0),
    c("pow.scalar_exp", lambda a: a ** 3, (2, 3)),
    c("pow.scalar_base", lambda b: 2.0 ** b, (2, 3)),
    c("rsub.scalar", lambda a: 1.5 - a, (2, 3)),
    c("rdiv.scalar", lambda a: 1.5 / a, (2, 3), low=0.5, high=2.0),
    c("maximum", lambda a, b: a.maximum(b), (2, 3), (2, 3)),
    c("minimum", lambda a, b: a.minimum(b), (2, 3), (2, 3)),
    c("atan2", lambda a, b: a.atan2(b), (2, 3), (2, 3), low=0.3, high=1.0),
    c("remainder", lambda a, b: a % b, (2, 3), (2, 3), low=0.3, high=1.0),
    c("clamp", lambda x: x.clamp(-0.5, 0.5), (3, 4)),
    c("where", lambda a, b: ember.where(a > b, a, b * 2), (2, 3), (2, 3)),
    # movement
    c("reshape", lambda x: x.reshape(3, 2) * ember.arange(6, dtype=ember.float64, device=x.device).reshape(3, 2), (2, 3)),
    c("permute", lambda x: x.permute(2, 0, 1), (2, 3, 2)),
    c("transpose+matmul", lambda x: x.T @ x, (3, 2)),
    c("expand", lambda x: x.expand(2, 3, 4), (3, 1)),
    c("getitem.slices", lambda x: x[1:, ::2], (3, 4)),
    c("getitem.tensor", lambda x: x[ember.tensor([2, 0, 2], device=x.device)], (3, 4)),
    c("getitem.mask", lambda x: x[x > 0], (3, 4)),
    c("flip", lambda x: x.flip((0, 1)), (2, 3)),
    c("roll", lambda x: x.roll(1, 1), (2, 3)),
    c("repeat", lambda x: x.repeat(2, 2), (2, 3)),
    c("cat", lambda a, b: ember.cat([a, b], 1), (2, 3), (2, 2)),
    c("stack", lambda a, b: ember.stack([a, b], 0), (2, 3), (2, 3)),
    c("pad.reflect", lambda x: F.pad(x, (2, 1), mode="reflect"), (2, 4)),
    c("pad.constant", lambda x: F.pad(x, (1, 2, 1, 0)), (2, 3)),
    c("tril", lambda x: x.tril(), (3, 3)),
    # reductions and scans
    c("sum.dim", lambda x: x.sum(1), (2, 3)),
    c("sum.all", lambda x: x.sum() * x, (2, 3)),
    c("mean", lambda x: x.mean((0, 2), keepdim=True), (2, 3, 2)),
    c("prod", lambda x: x.prod(1), (2, 4)),
    c("prod.zero", lambda x: (x * ember.tensor([1.0, 0.0, 1.0], dtype=ember.float64, device=x.device)).prod(1), (2, 3)),
    c("max.dim", lambda x: x.max(1).values, (3, 4)),
    c("min.all", lambda x: x.min(), (3, 4)),
    c("var", lambda x: x.var(1), (3, 4)),
    c("std", lambda x: x.std(), (3, 4)),
    c("logsumexp", lambda x: x.logsumexp(1), (3, 4)),
    c("cumsum", lambda x: x.cumsum(1), (2, 4)),
    c("cumprod", lambda x: x.cumprod(1), (2, 4)),
    c("cumprod.zero", lambda x: (x * ember.tensor([1.0, 0.0, 1.0, 1.0], dtype=ember.float64, device=x.device)).cumprod(1), (2, 4)),
    c("cummax", lambda x: x.cummax(1).values, (2, 4)),
    c("sort", lambda x: x.sort(1, descending=True).values, (2, 4)),
    c("topk", lambda x: x.topk(2).values, (2, 4)),
    # linear algebra and indexing
    c("matmul.2d", lambda a, b: a @ b, (2, 3), (3, 4)),
    c("matmul.1d", lambda a, b: a @ b, (3,), (3, 2)),
    c("matmul.batched", lambda a, b: a @ b, (2, 2, 3), (3, 2)),
    c("gather", lambda x, i: x.gather(1, i), (3, 4), (3, 2), ints={1: (0, 4)}),
    c("scatter.set", lambda x, s: x.scatter(1, ember.tensor([[0], [2]], device=x.device), s), (2, 3), (2, 1)),
    c("scatter.add", lambda x, s: x.scatter_add(0, ember.tensor([[1, 0, 1]], device=x.device), s), (2, 3), (1, 3)),
    c("index_select", lambda x: x.index_select(0, ember.tensor([1, 1, 0], device=x.device)), (2, 3)),
    c("masked_fill", lambda x: x.masked_fill(x > 0.3, 0.0), (2, 3)),
    c("embedding", lambda w: F.embedding(ember.tensor([[0, 2], [2, 1]], device=w.device), w), (3, 4)),
    # nn
    c("relu", lambda x: F.relu(x), (2, 5)),
    c("gelu", lambda x: F.gelu(x), (2, 5)),
    c("gelu.tanh", lambda x: F.gelu(x, approximate="tanh"), (2, 5)),
    c("silu", lambda x: F.silu(x), (2, 5)),
    c("softplus", lambda x: F.softplus(x), (2, 5)),
    c("elu", lambda x: F.elu(x), (2, 5)),
    c("mish", lambda x: F.mish(x), (2, 5)),
    c("hardswish", lambda x: F.hardswish(x), (2, 5), low=-2.9, high=2.9),
    c("leaky_relu", lambda x: F.leaky_relu(x, 0.1), (2, 5)),
    c("softmax", lambda x: F.softmax(x, -1), (2, 5)),
    c("log_softmax", lambda x: F.log_softmax(x, 0), (3, 4)),
    c("linear", lambda x, w, b: F.linear(x, w, b), (2, 3), (4, 3), (4,)),
    c("layer_norm", lambda x, w, b: F.layer_norm(x, (4,), w, b), (3, 4), (4,), (4,)),
    c("group_norm", lambda x, w, b: F.group_norm(x, 2, w, b), (2, 4, 3), (4,), (4,)),
    c("rms_norm", lambda x, w: F.rms_norm(x, (4,), w), (3, 4), (4,)),
    c("batch_norm.train", lambda x, w, b: F.batch_norm(x, None, None, w, b, training=True), (4, 3), (3,), (3,)),
    c("conv1d", lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1), (2, 2, 7), (3, 2, 3), (3,)),
    c("conv2d", lambda x, w: F.conv2d(x, w, padding=1), (1, 2, 4, 4), (3, 2, 3, 3)),
    c("conv2d.stride_dilation", lambda x, w: F.conv2d(x, w, stride=2, dilation=2, padding=2), (2, 1, 6, 5), (2, 1, 3, 2)),
    c("conv2d.groups", lambda x, w: F.conv2d(x, w, groups=2, padding="same"), (1, 4, 4, 4), (4, 2, 3, 3)),
    c("conv_transpose2d", lambda x, w: F.conv_transpose2d(x, w, stride=2, padding=1), (1, 2, 3, 3), (2, 3, 3, 3)),
    c("max_pool2d", lambda x: F.max_pool2d(x, 2), (1, 2, 4, 4)),
    c("max_pool2d.overlap", lambda x: F.max_pool2d(x, 3, stride=1, padding=1), (1, 1, 4, 4)),
    c("max_pool1d", lambda x: F.max_pool1d(x, 2), (2, 2, 6)),
    c("avg_pool2d", lambda x: F.avg_pool2d(x, 2, stride=1, padding=1), (1, 2, 3, 3)),
    c("adaptive_avg_pool2d", lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 4)),
    c("interpolate.bilinear", lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), (1, 1, 3, 2)),
    c("attention.causal", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=True), (2, 3, 4), (2, 3, 4), (2, 3, 4)),
    # PyTorch's spellings (issue 22)
    c("max_pool2d.ceil", lambda x: F.max_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), (1, 2, 6, 5)),
    c("max_pool2d.indices", lambda x: F.max_pool2d(x, 2, ceil_mode=True, return_indices=True)[0], (1, 1, 5, 5)),
    c("avg_pool2d.ceil", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True), (1, 2, 6, 5)),
    c("avg_pool2d.exclude_pad", lambda x: F.avg_pool2d(x, 3, stride=2, padding=1, ceil_mode=True,
                                                       count_include_pad=False), (1, 1, 6, 5)),
    c("avg_pool2d.divisor", lambda x: F.avg_pool2d(x, 2, divisor_override=3), (1, 1, 4, 4)),
    c("avg_pool1d.ceil", lambda x: F.avg_pool1d(x, 2, stride=2, ceil_mode=True, count_include_pad=False), (2, 1, 5)),
    c("pad.circular", lambda x: F.pad(x, (2, 1, 1, 1), mode="circular"), (1, 2, 3, 4)),
    c("pad.crop_reflect", lambda x: F.pad(x, (-1, 2), mode="reflect"), (2, 5)),
    c("interpolate.trilinear", lambda x: F.interpolate(x, size=(3, 4, 2), mode="trilinear"), (1, 1, 2, 3, 3)),
    c("interpolate.nearest_exact", lambda x: F.interpolate(x, scale_factor=1.5, mode="nearest-exact"), (1, 1, 2, 3)),
    c("attention.gqa", lambda q, k, v: F.scaled_dot_product_attention(q, k, v, enable_gqa=True),
      (1, 4, 3, 2), (1, 2, 3, 2), (1, 2, 3, 2)),
    c("scatter.multiply", lambda x, s: x.scatter(1, ember.tensor([[0, 0], [2, 1]], device=x.device), s,
                                                 reduce="multiply"), (2, 3), (2, 2)),
    c("div.trunc", lambda a: a.div(0.3, rounding_mode="trunc") * a, (2, 3)),
    c("sum.axis_dtype", lambda x: x.sum(axis=(0, 2), dtype=ember.float64), (2, 3, 2)),
    c("getitem.int_between_tensors", lambda x: x[1, :, ember.tensor([0, 2], device=x.device), 0:2], (2, 3, 3, 4)),
]


@pytest.mark.parametrize("case", CASES, ids=[k.name for k in CASES])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["kept", "checkpointed"])
@pytest.mark.parametrize("inner", [d for _, d in _inner_devices()], ids=[n for n, _ in _inner_devices()])
def test_gradient_matches_finite_differences(inner, checkpointing, case):
    check_gradient(inner, checkpointing, case)


def check_gradient(inner, checkpointing, case):
    """Autodiff(inner)'s gradient of every float input of ``case`` against finite differences."""
    dev = Autodiff(inner, checkpointing=checkpointing)
    inputs = _inputs(case, dev)
    leaves = [t if i in case.ints else t.requires_grad_() for i, t in enumerate(inputs)]
    grads = _loss(case, leaves, dev).backward()
    expected = _numeric(case)
    for i, (t, want) in enumerate(zip(leaves, expected)):
        if want is None:
            continue
        got = t.grad(grads)
        assert got is not None, "%s: input %d got no gradient" % (case.name, i)
        assert got.shape == t.shape
        assert got.device == inner
        flat = got.reshape(-1).tolist()
        for k, (a, b) in enumerate(zip(flat, want)):
            assert abs(a - b) <= case.atol + case.rtol * abs(b) + 1e-5 * max(1.0, abs(b)), \
                "%s: d/d input %d [%d]: autodiff %r, finite differences %r" % (case.name, i, k, a, b)


def test_cast_passes_the_gradient_back_in_the_input_dtype():
    # finite differences cannot see through float32 rounding, so this one is checked exactly
    dev = Autodiff(ember.Cpu())
    x = ember.tensor([0.1, 0.2, 0.3], dtype=ember.float64, device=dev).requires_grad_()
    grads = (x.float() * 3).sum().backward()
    g = x.grad(grads)
    assert g.dtype is ember.float64
    assert g.tolist() == [3.0, 3.0, 3.0]
