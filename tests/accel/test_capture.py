"""Step capture (``ember.accel.compile``): a recorded step replays with the eager step's bits.

Every check runs a compiled and an eager copy of the same model side by side from equal weights
and compares losses and weights exactly after each step, on every plain backend the harness has
(the C-backed Cpu replays its kernel calls; the others replay their primitives). Then what must
fall back (with one warning) and what must re-record.
"""
import warnings

import pytest

import ember
import ember.nn.functional as F
from ember.accel import compile
from ember.accel.autodiff import Autodiff
from ember.accel.capture import CaptureWarning, feed
from ember.accel.optim import SGD, Adam, AdamW, RMSprop
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn.module import Module
from ember.backend import chain
from harness import backends

INNER = backends.inner_for_autodiff()  # plain backends and Fusion over them
IDS = [n for n, _ in INNER]


class MLP(Module):
    def __init__(self, gen, n_in=12):
        super().__init__()
        self.fc1 = Linear(n_in, 16, generator=gen)
        self.fc2 = Linear(16, 5, generator=gen)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class Conv(Module):
    def __init__(self, gen):
        super().__init__()
        self.conv = Conv2d(1, 3, 3, padding=1, generator=gen)
        self.fc = Linear(3 * 4 * 4, 5, generator=gen)

    def forward(self, x):
        return self.fc(F.max_pool2d(F.relu(self.conv(x)), 2).flatten(1))


def _data(dev, shape, seed=1):
    g = ember.Generator(seed)
    x = ember.rand(*shape, generator=g).to(dev)
    y = ember.randint(0, 5, (shape[0],), generator=g).to(dev)
    return x, y


def _pair(inner, make, momentum=0.0):
    out = []
    for _ in range(2):
        model = make(ember.Generator(0)).to(Autodiff(inner))
        opt = SGD(model, lr=0.1, momentum=momentum)
        out.append((model, opt))
    return out


def _weights(model):
    return [p.value.tolist() for p in model.parameters()]


def _step(model, opt, x, y):
    loss = F.cross_entropy(model(x), y)
    opt.step(loss.backward())
    return loss


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
@pytest.mark.parametrize("make,shape", [(MLP, (6, 12)), (Conv, (3, 1, 8, 8))], ids=["mlp", "conv"])
def test_replay_equals_eager(inner, make, shape):
    (m1, o1), (m2, o2) = _pair(inner, make, momentum=0.9)
    x, y = _data(Autodiff(inner), shape)
    step = compile(_step)
    for i in range(6):
        a = _step(m1, o1, x, y).tolist()
        b = step(m2, o2, x, y).tolist()
        assert a == b, i
        assert _weights(m1) == _weights(m2), i
    assert not step.refused, step.refused
    assert step.stats["replayed"] >= 3, step.stats
    base = chain(inner)[-1]
    if getattr(base, "kernels", None) == "c" and base is inner or type(base).__name__ == "Wgpu":
        assert step.lowering == "lowered"
    if getattr(inner, "kernels", None) == "c":  # runs of kernel calls go to C's loop at once
        (rec,) = step._plans.values()
        assert any(s[0] == 3 for s in rec.lowered.steps)


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
def test_replayed_parameters_are_their_leaves(inner):
    """A replay makes each trained parameter's new value as ``Param.value`` would: a leaf keyed by
    the parameter's id and tied back to it, so an eager step after replays still trains it."""
    from ember.nn.module import owner
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for _ in range(6):
        _step(m1, o1, x, y)
        step(m2, o2, x, y)
    assert step.stats["replayed"] >= 3, step.stats
    for p in m2.parameters():
        v = p.value
        node = ember.backend.grad_device(v.device).grad_node(v._data)
        assert owner(v) is p and node is not None and node.is_leaf and node.id == p.id
    assert _step(m1, o1, x, y).tolist() == _step(m2, o2, x, y).tolist()  # eagerly, from the replayed leaves
    assert _weights(m1) == _weights(m2)


def test_changed_hyperparameters_re_record():
    """The key's part for a param group is kept between calls only while each value is the same
    immutable object: new betas, a new weight decay, each record again."""
    inner = ember.Cpu()
    models = [MLP(ember.Generator(0)).to(Autodiff(inner)) for _ in range(2)]
    opts = [Adam(m, lr=0.01) for m in models]
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)

    def both(n):
        for _ in range(n):
            assert step(models[0], opts[0], x, y).tolist() == _step(models[1], opts[1], x, y).tolist()
        assert _weights(models[0]) == _weights(models[1])

    both(4)
    recorded = step.stats["recorded"]
    for o in opts:
        o.param_groups[0]["betas"] = (0.5, 0.999)
    both(4)
    assert step.stats["recorded"] == recorded + 1, step.stats
    for o in opts:
        o.param_groups[0]["weight_decay"] = 0.01
    both(4)
    assert step.stats["recorded"] == recorded + 2, step.stats


def test_param_group_key_is_kept_only_for_the_same_immutable_values():
    from ember.accel.capture.state import _group_key
    g = {"params": [], "lr": 0.1, "momentum": 0.9}
    k = _group_key(g, ("params",))
    assert _group_key(g, ("params",)) is k  # kept
    g["momentum"] = 0.5
    assert _group_key(g, ("params",)) != k
    g["nesterov"] = True  # a name more
    assert ("nesterov", "True") in _group_key(g, ("params",))
    h = {"params": [], "sizes": [1, 2]}  # a list may change in place: never kept
    k = _group_key(h, ("params",))
    h["sizes"][0] = 3
    assert _group_key(h, ("params",)) == (("sizes", "[3, 2]"),) != k
    import gc
    import weakref
    from ember.accel.capture import state

    class Big:  # stands for a group's parameters
        pass
    big = Big()
    held = weakref.ref(big)
    _group_key({"params": [big], "lr": 0.1}, ("params", "lr"))
    del big
    gc.collect()
    assert held() is None  # the cache holds no group, so not its parameters
    assert all(type(v) is tuple and len(v) == 3 for v in state._group_keys.values())


def test_closure_step_and_new_batch_size_re_records():
    inner = ember.Cpu()
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    data = {"x": None, "y": None}

    def eager():
        return _step(m1, o1, data["x"], data["y"])

    @compile
    def step():
        return _step(m2, o2, data["x"], data["y"])

    for n in (4, 4, 4, 4, 7, 7, 7, 7, 4):
        data["x"], data["y"] = _data(Autodiff(inner), (n, 12), seed=n)
        assert eager().tolist() == step().tolist()
        assert _weights(m1) == _weights(m2)
    assert step.stats["recorded"] == 2, step.stats
    assert step.stats["replayed"] >= 3


def test_results_are_not_overwritten_by_later_replays():
    inner = ember.Cpu()
    (m, o), _ = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (4, 12))
    step = compile(_step)
    losses, snapshots = [], []
    for _ in range(6):
        before = [p.value for p in m.parameters()]
        snapshots.append((before, [t.tolist() for t in before]))
        losses.append((step(m, o, x, y), None))
    losses = [(t, t.tolist()) for t, _ in losses]
    for _ in range(3):
        step(m, o, x, y)
    for t, values in losses:
        assert t.tolist() == values
    for tensors, values in snapshots:
        assert [t.tolist() for t in tensors] == values


def _refused(fn, *args):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(4):
            fn(*args)
    return [w for w in caught if issubclass(w.category, CaptureWarning)]


def test_host_read_falls_back_with_one_warning():
    inner = ember.Cpu()
    (m, o), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (4, 12))

    def step(model, opt):
        loss = F.cross_entropy(model(x), y)
        if loss.item() > 100:  # a decision on a device value
            loss = loss * 0
        opt.step(loss.backward())
        return loss

    c = compile(step)
    caught = _refused(c, m, o)
    assert len(caught) == 1 and "host" in str(caught[0].message)
    assert c.stats["replayed"] == 0
    for _ in range(4):
        step(m2, o2)
    assert _weights(m) == _weights(m2)


def test_host_randomness_and_numbers_are_refused():
    inner = ember.Cpu()
    x = ember.ones(3, 4, device=inner)
    g = ember.Generator(0)

    def noisy(x):
        return x + ember.tensor([g.random() for _ in range(4)], device=inner)

    c = compile(noisy)
    caught = _refused(c, x)
    assert len(caught) == 1 and "random" in str(caught[0].message)

    c = compile(lambda x: (x * 2).sum().tolist())
    assert len(_refused(c, x)) == 1


def test_undeclared_optimizer_is_refused():
    inner = ember.Cpu()
    model = MLP(ember.Generator(0)).to(Autodiff(inner))
    opt = RMSprop(model, lr=0.01)
    x, y = _data(Autodiff(inner), (4, 12))
    c = compile(_step)
    caught = _refused(c, model, opt, x, y)
    assert len(caught) == 1 and "RMSprop" in str(caught[0].message)


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
@pytest.mark.parametrize("opt_cls,kw", [(Adam, {"amsgrad": True}), (AdamW, {}), (SGD, {"momentum": 0.9, "nesterov": True})],
                         ids=["adam", "adamw", "sgd"])
def test_optimizers_with_a_schedule_replay_their_live_hyperparameters(inner, opt_cls, kw):
    # the learning rate changes every step and Adam's bias corrections with the step count: the
    # replayed steps read both as the eager ones do (fused kernels, or the formulas on the pure Cpu)
    models = [MLP(ember.Generator(0)).to(Autodiff(inner)) for _ in range(2)]
    opts = [opt_cls(m, lr=0.01, **kw) for m in models]
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CaptureWarning)
        for i in range(7):
            for o in opts:
                o.lr = 0.01 / (1 + i)
            a = _step(models[0], opts[0], x, y).tolist()
            b = step(models[1], opts[1], x, y).tolist()
            assert a == b, i
            assert _weights(models[0]) == _weights(models[1]), i
    assert opts[0].state_dict()["state"].keys() == opts[1].state_dict()["state"].keys()
    for k, s in opts[0].state_dict()["state"].items():
        assert s["step"] == opts[1].state_dict()["state"][k]["step"] == 7
    assert step.stats["replayed"] >= 4 and not step.refused, (step.stats, step.refused)
    base = chain(inner)[-1]
    if getattr(base, "kernels", None) == "c" and base is inner or type(base).__name__ == "Wgpu":
        assert step.lowering == "lowered"  # the fused update's pointer table is rewritten each replay


def test_feed_is_evaluated_on_every_replay():
    inner = ember.Cpu()

    class Box:  # an object counts by identity in the key: its value reaches the step by the feed
        v = 1.0
    x = ember.ones(5, device=inner)

    @compile
    def step(x, box):
        return x * feed(lambda: box.v, ember.float32, inner)

    box = Box()
    for v in (1.0, 2.0, 3.0, 4.0, 5.0, 6.0):
        box.v = v
        assert step(x, box).tolist() == [v] * 5
    assert step.stats["replayed"] == 4


@pytest.mark.parametrize("make,shape", [(MLP, (6, 12)), (Conv, (3, 1, 8, 8))], ids=["mlp", "conv"])
def test_c_cpu_step_lowers_whole_masks_included(make, shape):
    """cross_entropy's masks (target != ignore_index, the where and casts they feed) and its
    backward's scatter stay C kernel calls: the whole step is runs of C's loop."""
    inner = ember.Cpu(kernels="c")
    (m1, o1), (m2, o2) = _pair(inner, make)
    x, y = _data(Autodiff(inner), shape)
    step = compile(_step)
    for i in range(4):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        assert _weights(m1) == _weights(m2), i
    (rec,) = step._plans.values()
    assert step.lowering == "lowered"
    assert [s[0] for s in rec.lowered.steps if s[0] != 1] == [3], [s[0] for s in rec.lowered.steps]


def test_c_cpu_results_take_their_buffers_and_spares_come_back():
    """A lowered replay copies no result: each result keeps the buffer the kernels wrote, the next
    replay writes a spare, and a buffer is a spare again once no tensor holds it."""
    from ember.accel.capture.compiled import base_arrays
    from ember.backends.cpu import pool
    inner = ember.Cpu(kernels="c")
    (m1, o1), (m2, o2) = _pair(inner, MLP, momentum=0.9)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for _ in range(3):
        _step(m1, o1, x, y), step(m2, o2, x, y)
    (rec,) = step._plans.values()
    low = rec.lowered
    assert low.handed, "the new weights live in buffers the plan made"

    def buffers():
        return [id(a.data) for a in base_arrays([p.value for p in m2.parameters()])]
    kept = []
    for i in range(4):  # old weights held: every replay writes other buffers
        kept.append((buffers(), [p.value for p in m2.parameters()]))
        _step(m1, o1, x, y), step(m2, o2, x, y)
        assert _weights(m1) == _weights(m2), i
    ids = [b for bs, _ in kept for b in bs] + buffers()
    assert len(set(ids)) == len(ids)
    for _, tensors in kept:  # what a replay returned stays as it was
        assert all(type(t.tolist()) is list for t in tensors)
    del kept, tensors
    if pool._pool_state["base"] is None:
        return  # no trusted reference counts: spares are made anew, results are still right
    step(m2, o2, x, y)
    seen = set()  # nothing old held: two buffers per result take turns
    for _ in range(4):
        step(m2, o2, x, y)
        seen.update(buffers())
    assert len(seen) <= 2 * len(m2.parameters())


WGPU = [d for n, d in INNER if n == "wgpu"]


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_state_takes_turns_in_two_banks(inner):
    """On Wgpu a replay reads the state where the last one wrote it and writes the other bank
    (nothing copied); old state someone still holds makes it copy instead, and stays as it was."""
    from ember.accel.capture.compiled import base_arrays
    (m1, o1), (m2, o2) = _pair(inner, MLP, momentum=0.9)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for i in range(4):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    (rec,) = step._plans.values()
    low = rec.lowered
    assert low.banks is not None and len(low.banks[1]) == 2 * len(m2.parameters())  # weights, momenta
    banks = [{id(b) for b in bank.blocks} for bank in low.banks[0]]

    def bank_of_weights():
        blocks = {id(a.block) for a in base_arrays([p.value for p in m2.parameters()])}
        return [k for k in (0, 1) if blocks <= banks[k]]
    seen = []
    for i in range(4):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        assert _weights(m1) == _weights(m2), i
        seen += bank_of_weights()
    assert seen in ([0, 1, 0, 1], [1, 0, 1, 0]), seen
    held = [(p.value, p.value.tolist()) for p in m2.parameters()]  # old weights kept
    for i in range(3):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        assert _weights(m1) == _weights(m2), i
    assert [t.tolist() for t, _ in held] == [v for _, v in held]
    del held
    for i in range(3):  # and back to taking turns
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        seen.append(bank_of_weights())
    assert _weights(m1) == _weights(m2)
    assert seen[-2:] in ([[0], [1]], [[1], [0]]), seen


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_replay_cut_into_parts_submits_each_and_equals_eager(inner, monkeypatch):
    """A replay encoded when it runs (none ahead) submits each part as soon as it is encoded."""
    from ember.accel.capture import lower_wgpu
    monkeypatch.setattr(lower_wgpu, "PARTS", (0.2, 0.5, 1.0))
    monkeypatch.setattr(lower_wgpu, "AHEAD", False)
    (m1, o1), (m2, o2) = _pair(inner, Conv)
    x, y = _data(Autodiff(inner), (3, 1, 8, 8))
    step = compile(_step)
    for i in range(3):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    (rec,) = step._plans.values()
    assert len(rec.lowered.cuts) == 3 and rec.lowered.cuts[-1][1] == len(rec.lowered.steps)
    for i in range(3):
        want = _step(m1, o1, x, y).tolist()
        before = inner.rt.submits
        got = step(m2, o2, x, y)
        assert inner.rt.submits - before == 3  # one command buffer a part
        assert got.tolist() == want, i
        assert _weights(m1) == _weights(m2), i


def _new_batch(like, seed):
    return _data(like.device, tuple(like.shape), seed)


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_replay_encoded_ahead_submits_once_and_equals_eager(inner, monkeypatch):
    """Each replay encodes the next one's commands: that one submits them at once, with its new
    inputs copied in before them, and computes what the eager step does."""
    from ember.accel.capture import lower_wgpu
    monkeypatch.setattr(lower_wgpu, "PARTS", (0.5, 1.0))
    (m1, o1), (m2, o2) = _pair(inner, Conv, momentum=0.9)
    x, y = _data(Autodiff(inner), (3, 1, 8, 8))
    step = compile(_step)
    for i in range(4):  # recorded at the third; the fourth takes the state into the banks
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    (rec,) = step._plans.values()
    low = rec.lowered
    assert low.ahead is not None and low.banks is not None
    queue = _CountedQueue(inner.rt.queue)
    monkeypatch.setattr(inner.rt, "queue", queue)
    for i in range(4):
        x, y = _new_batch(x, 10 + i)  # a new batch every step: copied in ahead of the body
        want = _step(m1, o1, x, y).tolist()
        foreseen = low.ahead
        before = queue.submits
        got = step(m2, o2, x, y)
        assert queue.submits - before == 1, i  # the foreseen body and the input copies, together
        assert low.ahead is not foreseen and low.ahead is not None
        assert got.tolist() == want, i
        assert _weights(m1) == _weights(m2), i


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_replay_foreseen_wrongly_is_encoded_anew(inner, monkeypatch):
    """Old weights held by the caller: the bank the replay foresaw is taken, so the replay drops
    the body encoded ahead and encodes its own; the held tensors keep their values."""
    from ember.accel.capture import lower_wgpu
    (m1, o1), (m2, o2) = _pair(inner, MLP, momentum=0.9)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for i in range(3):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    low = step._plans[next(iter(step._plans))].lowered
    encoded = []
    real = lower_wgpu.WgpuPlan._encode

    def counted(self, key, enc=None, submit=None):
        encoded.append(submit is not None)  # True: encoded for the replay running now
        return real(self, key, enc, submit)
    monkeypatch.setattr(lower_wgpu.WgpuPlan, "_encode", counted)
    held = [(p.value, p.value.tolist()) for p in m2.parameters()]
    for i in range(3):
        want = _step(m1, o1, x, y).tolist()
        assert step(m2, o2, x, y).tolist() == want, i
        assert _weights(m1) == _weights(m2), i
    assert True in encoded  # a miss: encoded when it ran
    assert [t.tolist() for t, _ in held] == [v for _, v in held]
    del held
    for i in range(3):  # the turns come back, and with them the foreseen bodies
        want = _step(m1, o1, x, y).tolist()
        assert step(m2, o2, x, y).tolist() == want, i
    encoded.clear()
    for i in range(3):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    assert encoded == [False] * 3, encoded  # each replay foreseen, each encoding the next
    assert _weights(m1) == _weights(m2) and low.ahead is not None


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_replay_out_of_memory_ahead_still_steps(inner, monkeypatch):
    """No room to encode the next replay ahead: this one still returns, the next encodes its own."""
    from ember.accel.capture import lower_wgpu
    from ember.accel.wgpu import OutOfMemoryError
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for i in range(4):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
    real = lower_wgpu.WgpuPlan._encode

    def full(self, key, enc=None, submit=None):
        if submit is None:
            raise OutOfMemoryError("wgpu: out of memory (test)")
        return real(self, key, enc, submit)
    monkeypatch.setattr(lower_wgpu.WgpuPlan, "_encode", full)
    for i in range(3):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        assert _weights(m1) == _weights(m2), i
    low = step._plans[next(iter(step._plans))].lowered
    assert low.ahead is None


class _CountedQueue:
    """A wgpu queue that counts its submits."""

    def __init__(self, queue):
        self.queue, self.submits = queue, 0

    def submit(self, cmds):
        self.submits += 1
        return self.queue.submit(cmds)

    def __getattr__(self, name):
        return getattr(self.queue, name)


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_loss_read_after_a_replay_takes_no_submit_of_its_own(inner, monkeypatch):
    """A replay copies its loss out with the step: the ``.item()`` after it maps that copy."""
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for i in range(3):
        assert _step(m1, o1, x, y).item() == step(m2, o2, x, y).item(), i
    queue = _CountedQueue(inner.rt.queue)
    monkeypatch.setattr(inner.rt, "queue", queue)
    for i in range(3):
        want = _step(m1, o1, x, y).item()
        loss = step(m2, o2, x, y)
        before = queue.submits
        assert loss.item() == want, i
        assert queue.submits == before  # mapped, not copied and submitted again
    # work recorded after the replay: the read submits it and reads the loss afresh
    loss = step(m2, o2, x, y)
    doubled = loss * 2
    want = _step(m1, o1, x, y).item()
    before = queue.submits
    assert doubled.item() == 2 * want and loss.item() == want
    assert queue.submits > before


@pytest.mark.parametrize("inner", WGPU, ids=["wgpu"] * len(WGPU))
def test_wgpu_index_fault_in_a_replay_is_raised_by_the_read_after_it(inner):
    """The replay stages the index checks' error record with its loss: a bad target still raises."""
    (m2, o2), = _pair(inner, MLP)[1:]
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_step)
    for _ in range(3):
        step(m2, o2, x, y).item()
    replayed = step.stats["replayed"]
    bad = ember.tensor([0, 1, 2, 3, 4, 9], dtype=ember.int64, device=y.device)
    with pytest.raises(ember.IndexOutOfRange, match="9 is out of range"):
        step(m2, o2, x, bad).item()
    assert step.stats["replayed"] == replayed + 1, step.stats  # a replay found it
    loss = step(m2, o2, x, y).item()  # the record was cleared: the next step reads as usual
    assert loss == loss and step.stats["replayed"] == replayed + 2


def test_replay_cuts_are_checked():
    from ember.accel.capture.lower_wgpu import _cuts
    assert _cuts(10, (1.0,)) == [(0, 10)]
    assert _cuts(10, (0.25, 1.0)) == [(0, 2), (2, 10)] or _cuts(10, (0.25, 1.0)) == [(0, 3), (3, 10)]
    assert _cuts(2, (0.1, 0.2, 1.0)) == [(0, 1), (1, 2)]
    for bad in ((), (0.5, 0.2), (0.0, 1.0), (1.5,)):
        with pytest.raises(ValueError, match="PARTS"):
            _cuts(10, bad)


def test_c_cpu_bool_results_read_outside_c_stay_generic():
    """A bool mask the step returns, or a generic entry reads, is made every replay as a list."""
    inner = ember.Cpu(kernels="c")
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (6, 12))

    def masked(model, opt, x, y):
        logits = model(x)
        keep = logits.detach() > 0
        loss = F.cross_entropy(logits, y)
        opt.step(loss.backward())
        return loss, keep, keep.sum(), keep.flip(0)

    step = compile(masked)
    for i in range(6):
        want = [t.tolist() for t in masked(m1, o1, x, y)]
        got = [t.tolist() for t in step(m2, o2, x, y)]
        assert got == want, i
    assert step.lowering == "lowered" and step.stats["replayed"] >= 3, (step.lowering, step.stats)
    (rec,) = step._plans.values()
    assert any(s[0] == 2 and s[2].name == "binary" for s in rec.lowered.steps)  # the returned mask


def test_bad_targets_in_a_replay_raise_the_eager_error():
    inner = ember.Cpu()
    (m, o), _ = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (4, 12))
    step = compile(_step)
    for _ in range(4):
        step(m, o, x, y)
    bad = ember.tensor([0, 1, 9, 2], device=Autodiff(inner))
    with pytest.raises(IndexError):
        step(m, o, x, bad)


def test_two_devices_are_refused():
    from ember.accel import NumPy
    a = ember.ones(3, device=ember.Cpu())
    b = ember.ones(3, device=NumPy())
    c = compile(lambda a, b: a + b.to(ember.Cpu()))
    caught = _refused(c, a, b)
    assert len(caught) == 1 and "two devices" in str(caught[0].message)
    assert c(a, b).tolist() == [2.0] * 3


def _dropout_step(model, opt, x, y, g):
    h = F.dropout(F.relu(model.fc1(x)), 0.5, training=True, generator=g)
    loss = F.cross_entropy(model.fc2(h), y)
    opt.step(loss.backward())
    return loss


@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=IDS)
def test_dropout_draws_fresh_masks_on_every_replay(inner):
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    g1, g2 = ember.Generator(7), ember.Generator(7)
    x, y = _data(Autodiff(inner), (6, 12))
    step = compile(_dropout_step)
    losses = []
    for i in range(7):
        a = _dropout_step(m1, o1, x, y, g1).tolist()
        b = step(m2, o2, x, y, g2).tolist()
        assert a == b, i
        assert _weights(m1) == _weights(m2), i
        losses.append(b)
    assert g1.get_state() == g2.get_state()
    assert len(set(losses[3:])) == len(losses[3:])  # new masks, new losses
    assert step.stats["replayed"] >= 3 and not step.refused, (step.stats, step.refused)


@pytest.mark.parametrize("inner", [d for n, d in INNER if n.startswith("fusion-")],
                         ids=[n for n in IDS if n.startswith("fusion-")])
def test_fused_kernels_are_entries_of_the_plan(inner):
    # a kernel Fusion generates is one entry (as a fused composite is): the step replays its
    # kernels, and fewer entries than the same step unfused
    (m1, o1), (m2, o2) = _pair(inner, MLP)
    x, y = _data(Autodiff(inner), (4, 12))
    step = compile(_step)
    for i in range(5):
        assert _step(m1, o1, x, y).tolist() == step(m2, o2, x, y).tolist(), i
        assert _weights(m1) == _weights(m2), i
    assert step.stats["replayed"] >= 2 and not step.refused, (step.stats, step.refused)
    (rec,) = step._plans.values()
    fused = [e for e in rec.plan.entries if e.name == "fused kernel"]
    assert fused, rec.plan.entries
    plain = chain(inner)[-1]
    (q1, p1), _ = _pair(plain, MLP)
    unfused = compile(_step)
    for _ in range(3):
        unfused(q1, p1, *_data(Autodiff(plain), (4, 12)))
    (urec,) = unfused._plans.values()
    assert len(rec.plan.entries) < len(urec.plan.entries), (len(rec.plan.entries), len(urec.plan.entries))
