"""Gradient checks of the structural ops (einsum, diagonals, windows, scatter_reduce, 3-D conv and
pooling, unpooling, im2col): autodiff against central finite differences in float64, on every
inner backend, as tests/accel/test_gradcheck.py does for the rest."""
import pytest

import ember
import ember.nn.functional as F
from test_gradcheck import _inner_devices, c, check_gradient


def _scatter(reduce, include_self, dim=0):
    return lambda x, i, s: x.scatter_reduce(dim, i, s, reduce, include_self=include_self)


def _unpool(x):
    # one index inside each 2 x 2 window of a 4 x 4 plane, different per window and channel
    idx = [[[(2 * i + (i + j + ch) % 2) * 4 + 2 * j + (j + ch) % 2 for j in range(2)] for i in range(2)]
           for ch in range(2)]
    return F.max_unpool2d(x, ember.tensor([idx], device=x.device), 2)


CASES = [
    c("einsum.bmm", lambda a, b: ember.einsum("bij,bjk->bik", a, b), (2, 2, 3), (2, 3, 2)),
    c("einsum.trace", lambda a: ember.einsum("ii", a), (3, 3)),
    c("einsum.diag", lambda a: ember.einsum("ii->i", a), (3, 3)),
    c("einsum.bik", lambda a, b: ember.einsum("bij,bkj->bik", a, b), (2, 2, 3), (2, 3, 3)),
    c("einsum.chain3", lambda a, b, d: ember.einsum("ij,jk,kl->il", a, b, d), (2, 3), (3, 2), (2, 2)),
    c("einsum.bcast", lambda a, b: ember.einsum("ij,ij->i", a, b), (3, 1), (3, 4)),
    c("einsum.ellipsis", lambda a, b: ember.einsum("...j,j", a, b), (2, 2, 3), (3,)),
    c("diag.vector", lambda x: x.diag(1), (3,)),
    c("diag.matrix", lambda x: ember.diag(x, -1), (3, 4)),
    c("diagonal", lambda x: x.diagonal(1, 1, 2), (2, 3, 4)),
    c("repeat_interleave.int", lambda x: x.repeat_interleave(2, 1), (2, 3)),
    c("repeat_interleave.tensor", lambda x: x.repeat_interleave(ember.tensor([2, 0, 1], device=x.device), 1), (2, 3)),
    c("unflatten", lambda x: x.unflatten(1, (2, 2)) * x.unflatten(1, (2, 2)), (3, 4)),
    c("view_as", lambda x: x.view_as(ember.zeros(4, 3)).T, (2, 6)),
    c("unfold.tensor", lambda x: x.unfold(1, 3, 2), (2, 7)),
    c("meshgrid", lambda a, b: ember.meshgrid(a, b)[0] * ember.meshgrid(a, b, indexing="xy")[1].T, (3,), (2,)),
    c("logcumsumexp", lambda x: x.logcumsumexp(1), (2, 5), low=-3.0, high=3.0),
    c("std_mean", lambda x: ember.std_mean(x, 1)[0] + ember.std_mean(x, 1)[1] * 2, (3, 4)),
    c("var_mean", lambda x: ember.var_mean(x, 0, correction=0)[0] * ember.var_mean(x)[1], (3, 4)),
    c("scatter_reduce.sum", _scatter("sum", True), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("scatter_reduce.sum.noself", _scatter("sum", False), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("scatter_reduce.mean", _scatter("mean", True, 1), (3, 4), (3, 3), (3, 3), ints={1: (0, 4)}),
    c("scatter_reduce.mean.noself", _scatter("mean", False), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("scatter_reduce.prod", _scatter("prod", True), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("scatter_reduce.prod.noself", _scatter("prod", False, 1), (3, 4), (3, 3), (3, 3), ints={1: (0, 4)}),
    c("scatter_reduce.amax", _scatter("amax", True), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("scatter_reduce.amin.noself", _scatter("amin", False), (3, 4), (2, 4), (2, 4), ints={1: (0, 3)}),
    c("conv3d", lambda x, w, b: F.conv3d(x, w, b, padding=1, stride=(2, 1, 1)), (1, 2, 3, 3, 3), (2, 2, 2, 2, 2),
      (2,)),
    c("conv3d.groups", lambda x, w: F.conv3d(x, w, groups=2, dilation=(1, 2, 1)), (1, 2, 2, 4, 3), (2, 1, 2, 2, 2)),
    c("conv_transpose3d", lambda x, w: F.conv_transpose3d(x, w, stride=2, padding=1, output_padding=1),
      (1, 2, 2, 2, 2), (2, 1, 2, 2, 2)),
    c("max_pool3d", lambda x: F.max_pool3d(x, 2, 1, 1), (1, 1, 3, 3, 3)),
    c("avg_pool3d", lambda x: F.avg_pool3d(x, 2, 1, 1, count_include_pad=False), (1, 2, 3, 2, 3)),
    c("max_unpool2d", _unpool, (1, 2, 2, 2)),
    c("unfold.im2col", lambda x: F.unfold(x, 2, padding=1, stride=2), (1, 2, 3, 3)),
]


@pytest.mark.parametrize("case", CASES, ids=[k.name for k in CASES])
@pytest.mark.parametrize("checkpointing", [False, True], ids=["kept", "checkpointed"])
@pytest.mark.parametrize("inner", [d for _, d in _inner_devices()], ids=[n for n, _ in _inner_devices()])
def test_struct_gradient_matches_finite_differences(inner, checkpointing, case):
    check_gradient(inner, checkpointing, case)
