"""ember.accel.distributed in one process (a world of one): the collectives' values, devices and
dtypes, that Cpu and NumPy tensors reach MPI without a copy, the errors, the leaf-gradient hook
the gradient buckets start from, and the buckets themselves. test_mpi.py runs several ranks."""
import subprocess
import sys

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from ember.accel.autodiff.graph import leaf_gradients
from ember.accel.numpy import NumPy
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.linear import Linear
from ember.nn.module import Module

try:
    from ember.accel import distributed as dist
    from ember.accel.distributed import buffers
    from ember.accel.distributed.ddp import _buckets, _Reducer
except ImportError as e:  # mpi4py is what ember[mpi] brings
    pytest.fail("ember.accel.distributed needs mpi4py (pip install ember[mpi]): %s" % e, pytrace=False)

dist.init(timeout=10)
DEVICES = [ember.Cpu(), NumPy(), Autodiff(ember.Cpu())]


def _np(t):
    return t.detach().numpy() if t.requires_grad or isinstance(t.device, Autodiff) else t.numpy()


@pytest.mark.parametrize("device", DEVICES, ids=repr)
@pytest.mark.parametrize("dtype", [ember.float32, ember.float64, ember.int32, ember.int64], ids=str)
def test_collectives_of_one_rank_keep_values_device_and_dtype(device, dtype):
    t = ember.tensor([[1, -2, 3], [4, 5, -6]], dtype=dtype, device=device)
    for got in (dist.all_reduce(t), dist.all_reduce(t, "max"), dist.broadcast(t)):
        assert got.device == device and got.dtype is dtype and got.shape == (2, 3)
        assert _np(got).tolist() == [[1, -2, 3], [4, 5, -6]]
        assert got is not t
    g = dist.all_gather(t)
    assert g.shape == (1, 2, 3) and _np(g).tolist() == [[[1, -2, 3], [4, 5, -6]]]


def test_a_strided_view_and_bool_pass_through_a_copy():
    t = ember.tensor([[1.0, 2.0], [3.0, 4.0]]).T
    assert dist.all_reduce(t).tolist() == [[1.0, 3.0], [2.0, 4.0]]
    b = ember.tensor([True, False, True])
    got = dist.broadcast(b)
    assert got.dtype is ember.bool and got.tolist() == [True, False, True]


@pytest.mark.parametrize("device", [ember.Cpu(), NumPy()], ids=repr)
def test_cpu_and_numpy_tensors_reach_mpi_without_a_copy(device):
    t = ember.tensor([1.0, 2.0, 3.0], device=device)
    view = buffers.host(t)
    if isinstance(device, ember.Cpu):  # the tensor's array.array itself
        assert view.__array_interface__["data"][0] == t._data.data.buffer_info()[0]
    else:
        assert np.shares_memory(view, t._data)
    storage, recv = buffers.empty_like(t)
    recv[...] = [7.0, 8.0, 9.0]
    out = buffers.finish(storage, recv, t)
    assert out.tolist() == [7.0, 8.0, 9.0]  # the result's storage is what MPI wrote into
    recv[0] = -1.0
    assert out.tolist()[0] == -1.0


def test_bad_calls_say_what_was_expected():
    with pytest.raises(ArgumentTypeError, match="expected an ember.Tensor, found list"):
        dist.all_reduce([1.0])
    with pytest.raises(ArgumentError, match="op must be one of sum, mean, max, min, prod, found 'avg'"):
        dist.all_reduce(ember.tensor([1.0]), "avg")
    with pytest.raises(ArgumentError, match="op='mean' needs a float tensor, found int64"):
        dist.all_reduce(ember.tensor([1]), "mean")
    with pytest.raises(ArgumentError, match="expected a numeric tensor, found bool"):
        dist.all_reduce(ember.tensor([True]))
    with pytest.raises(ArgumentError, match=r"root must be a rank in 0..0, found 1"):
        dist.broadcast(ember.tensor([1.0]), root=1)
    with pytest.raises(ArgumentError, match="timeout must be a number of seconds > 0, found 0"):
        dist.init(timeout=0)
    with pytest.raises(ArgumentError, match="bucket_mb must be a number > 0, found -1"):
        dist.DistributedDataParallel(bucket_mb=-1)


def test_rank_before_init_is_a_clear_error():
    code = ("from ember.accel import distributed as d\n"
            "try:\n    d.rank()\nexcept d.DistributedError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, timeout=60).stdout
    assert "distributed.rank: the process group is not set up; call ember.accel.distributed.init() first" in out


class MLP(Module):
    def __init__(self):
        super().__init__()
        gen = ember.Generator(2)
        self.fc1 = Linear(4, 8, generator=gen)
        self.fc2 = Linear(8, 8, generator=gen)
        self.out = Linear(8, 3, generator=gen)

    def forward(self, x):
        h = F.tanh(self.fc1(x))
        return self.out(F.relu(self.fc2(h) + h))  # fc1's output used twice


def _batch(device):
    r = np.random.default_rng(0)
    x = ember.tensor(r.standard_normal((6, 4)).tolist(), device=device)
    return x, ember.tensor(r.integers(0, 3, 6).tolist(), device=device)


def test_leaf_hook_gives_each_final_gradient_once_last_layer_first():
    device = Autodiff(ember.Cpu())
    model = MLP().to(device)
    from ember.accel.optim import track
    track(model)
    x, y = _batch(device)
    want = F.cross_entropy(model(x), y).backward()
    seen = []
    with leaf_gradients(lambda i, g: seen.append((i, g.tolist()))):
        got = F.cross_entropy(model(x), y).backward()
    ids = [p.id for p in model.parameters()]
    assert sorted(i for i, _ in seen) == sorted(ids)
    for i, g in seen:
        assert g == want.by_id[i].tolist() == got.by_id[i].tolist()
    order = [i for i, _ in seen]
    named = dict(model.named_parameters())
    assert order.index(named["out.weight"].id) < order.index(named["fc1.weight"].id)


def test_buckets_start_during_backward_and_sum_to_the_gradients():
    device = Autodiff(ember.Cpu())
    model = MLP().to(device)
    from ember.accel.optim import GradientsParams, track
    track(model)
    x, y = _batch(device)
    want = GradientsParams.from_grads(F.cross_entropy(model(x), y).backward(), model)
    params = model.parameters()
    buckets = _buckets(params, 200)  # bytes: several buckets
    assert len(buckets) >= 3 and buckets[0].params[0] is params[-1]
    reducer = _Reducer(buckets)
    started = []
    hook = reducer.ready

    def ready(i, g):
        hook(i, g)
        started.append(reducer.next)
    with leaf_gradients(ready):
        grads = F.cross_entropy(model(x), y).backward()
    assert len(started) == len(params) and started[-1] == len(buckets)
    assert started[-2] >= len(buckets) - 1 >= 2  # every bucket but fc1's left before fc1's gradients were done
    out = reducer.finish(grads, 1.0)
    for p in params:
        assert out.get(p).device == ember.Cpu()
        np.testing.assert_array_equal(np.array(out.get(p).tolist()), np.array(want.get(p).tolist()))


@pytest.mark.parametrize("device", [ember.Cpu(), NumPy()], ids=repr)
def test_a_result_keeps_its_values_while_held_and_its_storage_is_reused_once_dropped(device):
    t = ember.ones((40000,), device=device)
    first = dist.all_reduce(t)
    held = buffers.host(first)
    second = dist.all_reduce(t * 3)
    assert not np.shares_memory(buffers.host(second), held)  # first is still held: new storage
    assert first.tolist()[:2] == [1.0, 1.0] and second.tolist()[:2] == [3.0, 3.0]
    address = held.__array_interface__["data"][0]
    del first, held
    third = dist.all_reduce(t * 5)
    assert buffers.host(third).__array_interface__["data"][0] == address  # first's storage, reused
    assert third.tolist()[:2] == [5.0, 5.0] and second.tolist()[:2] == [3.0, 3.0]


def test_mpi4py_runs_on_the_systems_open_mpi():
    from mpi4py import MPI
    version = MPI.Get_library_version()
    assert "Open MPI" in version, "mpi4py loaded %r; expected Debian's Open MPI (docs/distributed.md)" % version


def test_the_learner_names_what_a_strategy_must_be():
    from ember.accel.optim import SGD
    from ember.accel.train import Learner
    model = MLP()
    with pytest.raises(ArgumentTypeError, match=r"strategy must be SingleDevice\(\), DataParallel\(n\) or "
                                                r"ember.accel.distributed.DistributedDataParallel\(\) \(a Strategy\), "
                                                r"found object"):
        Learner(model, SGD(model, lr=0.1), F.cross_entropy, strategy=object(), progress=None)


def test_a_world_of_one_trains_as_single_device():
    from ember.accel.data import DataLoader
    from ember.accel.data.dataset import InMemoryDataset
    from ember.accel.optim import SGD
    from ember.accel.train import Learner, SingleDevice
    r = np.random.default_rng(1)
    data = InMemoryDataset(r.standard_normal((20, 4)), r.integers(0, 3, 20))
    weights = []
    for strategy in (SingleDevice(), dist.DistributedDataParallel()):
        model = MLP().to(dtype=ember.float64)
        loader = DataLoader(data, batch_size=8, shuffle=True, seed=2, device=NumPy())
        train = strategy.shard(loader) if isinstance(strategy, dist.DistributedDataParallel) else loader
        assert len(train) == len(loader) == 3
        Learner(model, SGD(model, lr=0.1), F.cross_entropy, epochs=2, strategy=strategy, progress=None,
                device=NumPy()).fit(train)
        weights.append({n: p.value.detach().numpy() for n, p in model.named_parameters()})
    for name in weights[0]:
        np.testing.assert_allclose(weights[1][name], weights[0][name], rtol=0, atol=1e-12)


class _Unused(Module):
    """An MLP with a layer the loss never reaches: its gradient is zeros in both steps."""

    def __init__(self):
        super().__init__()
        gen = ember.Generator(4)
        self.fc = Linear(4, 3, generator=gen)
        self.spare = Linear(3, 2, generator=gen)

    def forward(self, x):
        return self.fc(x)


@pytest.mark.parametrize("device", [ember.Cpu(), NumPy()], ids=repr)
def test_a_world_of_one_captures_the_step_as_the_eager_one(device):
    # a parameter without gradient and a learning rate the scheduler changes every 2 steps, replayed
    from ember.accel.data import DataLoader
    from ember.accel.data.dataset import InMemoryDataset
    from ember.accel.distributed.captured import CapturedStep
    from ember.accel.optim import AdamW, lr
    from ember.accel.train import Learner
    r = np.random.default_rng(1)
    data = InMemoryDataset(r.standard_normal((20, 4)).astype(np.float32), r.integers(0, 3, 20))
    weights = []
    for compile in (False, "auto"):
        model = _Unused()
        ddp = dist.DistributedDataParallel()
        learner = Learner(model, AdamW(model, lr=0.01), F.cross_entropy, epochs=2, strategy=ddp, progress=None,
                          device=device, compile=compile, scheduler=lr.StepLR(0.01, 2, 0.5))
        learner.fit(ddp.shard(DataLoader(data, batch_size=8, shuffle=True, seed=2, device=device)))
        weights.append({n: p.value.detach().numpy() for n, p in model.named_parameters()})
    assert type(learner.compiled) is CapturedStep and learner.compiled.refused == {}
    assert learner.compiled.stats["update"]["replayed"] > 0
    for name in weights[0]:
        assert np.array_equal(weights[1][name], weights[0][name]), name


def test_compile_true_names_the_strategies_that_capture():
    from ember.accel.optim import SGD
    from ember.accel.train import DataParallel, Learner
    model = MLP()
    with pytest.raises(ArgumentError, match="capture needs SingleDevice or DistributedDataParallel"):
        Learner(model, SGD(model, lr=0.1), F.cross_entropy, strategy=DataParallel(2), progress=None, compile=True)
