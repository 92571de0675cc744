"""The Torch device's conv and pool gradients (torch's backward kernels) against the composites'
bodies (accel/autodiff/rules.py), which the Cpu reference runs, over the geometry corners."""
import pytest

import ember
from ember.accel import Torch
from ember.accel.autodiff import rules  # noqa: F401  (registers the composites)
from ember.composite import COMPOSITES, run
from harness.check import assert_close

CONVS = [  # (x shape, w shape, stride, padding pairs, dilation, groups)
    ((2, 3, 7, 6), (4, 3, 3, 2), (1, 1), ((1, 1), (0, 0)), (1, 1), 1),
    ((2, 4, 9, 8), (6, 2, 3, 3), (2, 1), ((0, 2), (1, 0)), (1, 2), 2),
    ((1, 2, 8, 8), (2, 1, 2, 3), (3, 2), ((2, 1), (1, 2)), (2, 1), 2),
    ((3, 2, 11), (5, 2, 4), (2,), ((1, 3),), (2,), 1),
]


def _pair(shape, seed):
    ember.seed(seed)
    x = ember.randn(*shape)
    return x, x.to(Torch())


@pytest.mark.parametrize("case", range(len(CONVS)))
def test_conv_gradients_match_the_composites(case):
    xs, ws, stride, padding, dilation, groups = CONVS[case]
    x, tx = _pair(xs, case)
    w, tw = _pair(ws, 10 + case)
    y = ember.Cpu().conv(x._data, w._data, stride, padding, dilation, groups)
    g, tg = _pair(y.shape, 20 + case)
    for name, args, targs in (
            ("conv_input_grad", (g, w, xs), (tg, tw, xs)),
            ("conv_weight_grad", (x, g, ws), (tx, tg, ws))):
        want = COMPOSITES[name](*args, stride, padding, dilation, groups)
        got = run(Torch(), name, targs + (stride, padding, dilation, groups), {})
        assert got.device == Torch() and got.shape == want.shape
        assert_close(got, want.tolist(), rtol=1e-5, atol=1e-5, msg=name)


POOLS = [  # (op, x shape, kernel, stride, padding pairs, dilation)
    ("max", (2, 3, 7, 7), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)),
    ("max", (1, 2, 8, 7), (3, 2), (2, 1), ((1, 1), (0, 1)), (2, 1)),
    ("avg", (2, 2, 7, 6), (3, 3), (2, 2), ((1, 1), (1, 0)), (1, 1)),
    ("avg", (1, 2, 9, 9), (2, 2), (1, 2), ((0, 0), (0, 0)), (2, 2)),  # dilated avg: the composite
    ("max", (2, 3, 10), (3,), (2,), ((1, 1),), (1,)),
]


@pytest.mark.parametrize("case", range(len(POOLS)))
@pytest.mark.parametrize("values", ["random", "ties", "nan"])
def test_pool_gradients_match_the_composite(case, values):
    op, xs, kernel, stride, padding, dilation = POOLS[case]
    x, _ = _pair(xs, 30 + case)
    if values == "ties":
        x = (x * 2).round().clamp(-1, 1)  # many equal values per window: the first one wins
    elif values == "nan":
        x = ember.where(x > 1.2, float("nan"), x)
    tx = x.to(Torch())
    y = ember.Cpu().pool(op, x._data, kernel, stride, padding, dilation)
    g, tg = _pair(y.shape, 40 + case)
    want = COMPOSITES["pool_input_grad"](g, x, op, kernel, stride, padding, dilation)
    got = run(Torch(), "pool_input_grad", (tg, tx, op, kernel, stride, padding, dilation), {})
    assert got.device == Torch() and got.shape == want.shape
    assert_close(got, want.tolist(), rtol=1e-6, atol=1e-6)
