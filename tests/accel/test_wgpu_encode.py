"""The Wgpu runtime's C encoder (ext_c/wgpu_encode.c): a dispatch, and a replayed step, recorded
by compiled calls into wgpu-native instead of libffi calls from Python.

Both ways must record the same commands: every check runs the same work through the C encoder and
through the libffi calls (``rt.c_dispatch = None``) and compares the values bit for bit. Where the
C kernels are built (CI builds them), the encoder must be in use.
"""
import pytest

import ember
import ember.nn.functional as F
from ember.backends.cpu import ckernels
from harness import backends

wgpu_dev = dict(backends.available()).get("wgpu")
pytestmark = pytest.mark.skipif(wgpu_dev is None, reason="no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))


@pytest.fixture
def rt():
    rt = wgpu_dev.rt
    keep = rt.c_dispatch
    yield rt
    wgpu_dev.synchronize()
    rt.c_dispatch = keep


def _work(dev):
    """A mix of kernels (elementwise on one and on many pipelines, a matmul, a reduction, a strided
    view) whose dispatches change pipeline and bind group often."""
    g = ember.Generator(3)
    x = ember.tensor(g.normals(6 * 70), device=dev).reshape(6, 70)
    w = ember.tensor(g.normals(70 * 9), device=dev).reshape(70, 9)
    y = (x * 0.5 + 1.0).exp() - x
    z = (y @ w).relu()
    s = (x.T.contiguous() * 2.0).sum(0)
    big = ember.tensor(g.normals(1 << 16), device=dev)
    return [z.tolist(), s.tolist(), F.softmax(z, dim=-1).tolist(), (big * big + 1.0).sum().item()]


def test_the_encoder_is_in_use_where_the_c_kernels_are_built(rt):
    from ember.accel.wgpu import runtime
    if not ckernels.available():
        pytest.skip("the C kernels are not built here: %s" % ckernels.reason())
    assert runtime._C is not None and rt.c_dispatch is not None


def test_c_and_libffi_dispatches_give_the_same_bits(rt):
    if rt.c_dispatch is None:
        pytest.skip("no C encoder here (the C kernels are not built)")
    n0 = rt.dispatches
    c = _work(wgpu_dev)
    n1 = rt.dispatches
    rt.c_dispatch = None
    ffi = _work(wgpu_dev)
    assert c == ffi
    assert rt.dispatches - n1 == n1 - n0 > 5


def test_a_replayed_step_encodes_the_same_through_c_and_libffi(rt):
    from ember.accel import compile
    from ember.accel.autodiff import Autodiff
    from ember.accel.optim import SGD
    from ember.nn.linear import Linear
    from ember.nn.module import Module
    if rt.c_dispatch is None:
        pytest.skip("no C encoder here (the C kernels are not built)")

    class MLP(Module):
        def __init__(self, gen):
            super().__init__()
            self.fc1 = Linear(12, 16, generator=gen)
            self.fc2 = Linear(16, 5, generator=gen)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    def train_step(model, opt, x, y):
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss

    dev = Autodiff(wgpu_dev)
    g = ember.Generator(1)
    x = ember.rand(8, 12, generator=g).to(dev)
    y = ember.randint(0, 5, (8,), generator=g).to(dev)
    runs = []
    for encoder in (rt.c_dispatch, None):
        rt.c_dispatch = encoder
        model = MLP(ember.Generator(0)).to(dev)
        opt = SGD(model, lr=0.1, momentum=0.9)
        step = compile(train_step)
        losses = [step(model, opt, x, y).tolist() for _ in range(6)]
        assert step.stats["replayed"] >= 3, step.stats
        (plan,) = step._plans.values()
        assert plan.lowered.steps.words is not None  # the packed form the C encoder reads
        runs.append((losses, [p.value.tolist() for p in model.parameters()]))
    assert runs[0] == runs[1]


def test_the_encoder_refuses_null_handles_and_records_nothing():
    from ember.accel.wgpu import runtime
    if runtime._C is None:
        pytest.skip("no C encoder here (the C kernels are not built)")
    from array import array
    lib, ffi = runtime._C, runtime._ffi
    assert lib.emb_wgpu_dispatch(ffi.NULL, ffi.NULL, ffi.NULL, 0, 1, 1, 1) == -1
    assert lib.emb_wgpu_encode(ffi.NULL, 1, 0) == -1
    # a step naming no pipeline or no bind group stops the loop before wgpu-native sees it
    rt = wgpu_dev.rt
    wgpu_dev.synchronize()
    enc = rt.device.create_command_encoder()
    cp = enc.begin_compute_pass()
    steps = array("Q", [0, 0, 0, 1, 1, 1])
    assert lib.emb_wgpu_encode(cp._internal, 1, steps.buffer_info()[0]) == -1
    assert lib.emb_wgpu_encode(cp._internal, 0, steps.buffer_info()[0]) == 0
    cp.end()
    rt.queue.submit([enc.finish()])
    wgpu_dev.synchronize()
