"""Thread-safe training (F3): data-parallel on 2 threads matches single-thread training.

Each step (on ``Autodiff`` over every inner backend the harness provides) the main thread forks
the model once per worker (``fork`` keeps parameter ids, so gradients from any copy are keyed
alike). Each worker runs forward and backward on its half of the batch, on its own copy, with
its own graph; its loss is the half's mean scaled by ``half / batch``, so the two gradients sum
to the full-batch mean's. The main thread adds the ``GradientsParams`` and steps. Backward never
mutates a parameter, so no worker sees another's work, and the shared model is only written by
the main thread between steps.
"""
import threading

import numpy as np
import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff
from ember.accel.optim import SGD, Adam, GradientsParams
from ember.nn.linear import Linear
from ember.nn.module import Module
from harness import backends
from harness.check import assert_close

INNER = backends.plain()

BATCH, WORKERS, STEPS = 16, 2, 5


class MLP(Module):
    def __init__(self):
        super().__init__()
        gen = ember.Generator(11)
        self.fc1 = Linear(6, 16, generator=gen)
        self.fc2 = Linear(16, 16, generator=gen)
        self.out = Linear(16, 3, generator=gen)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.tanh(self.fc1(x)))))


def _data():
    r = np.random.default_rng(4)
    xs = [r.standard_normal((BATCH, 6)).astype(np.float32) for _ in range(STEPS)]
    ys = [r.integers(0, 3, BATCH) for _ in range(STEPS)]
    return xs, ys


def _grads(model, x, y, scale):
    dev = model.fc1.weight.device
    logits = model(ember.tensor(x.tolist(), device=dev))
    loss = F.cross_entropy(logits, ember.tensor(y.tolist(), device=dev))
    if scale != 1.0:
        loss = loss * scale
    return GradientsParams.from_grads(loss.backward(), model)


def _single(make_opt, xs, ys, inner):
    model = MLP().to(Autodiff(inner))
    opt = make_opt(model)
    for x, y in zip(xs, ys):
        opt.step(_grads(model, x, y, 1.0))
    return model


def _parallel(make_opt, xs, ys, seen, inner):
    model = MLP().to(Autodiff(inner))
    opt = make_opt(model)
    part = BATCH // WORKERS
    for x, y in zip(xs, ys):
        results = [None] * WORKERS
        errors = []
        barrier = threading.Barrier(WORKERS)
        idents = set()
        seen.append(idents)

        def work(i, replica):
            try:
                barrier.wait()  # both threads compute at the same time
                idents.add(threading.get_ident())
                sl = slice(i * part, (i + 1) * part)
                results[i] = _grads(replica, x[sl], y[sl], part / BATCH)
            except BaseException as e:  # reported by the main thread
                errors.append(e)

        before = [p.value.tolist() for p in model.parameters()]
        threads = [threading.Thread(target=work, args=(i, model.fork())) for i in range(WORKERS)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        assert [p.value.tolist() for p in model.parameters()] == before  # backward mutated nothing
        total = results[0]
        for g in results[1:]:
            total = total + g
        assert set(total.ids()) == {p.id for p in model.parameters()}
        opt.step(total)
    return model


@pytest.mark.parametrize("make_opt", [lambda m: SGD(m, lr=0.5, momentum=0.9), lambda m: Adam(m, lr=0.01)],
                         ids=["sgd", "adam"])
@pytest.mark.parametrize("inner", [d for _, d in INNER], ids=[n for n, _ in INNER])
def test_two_threads_match_one(make_opt, inner):
    xs, ys = _data()
    seen = []
    single = _single(make_opt, xs, ys, inner)
    parallel = _parallel(make_opt, xs, ys, seen, inner)
    for idents in seen:  # every step ran on two threads other than the main one
        assert len(idents) == WORKERS and threading.get_ident() not in idents
    moved = 0.0
    for (n, a), b, start in zip(single.named_parameters(), parallel.parameters(), MLP().parameters()):
        assert_close(b.value, a.value.tolist(), rtol=0, atol=1e-5, msg=n)
        moved = max(moved, max(abs(u - v) for u, v in zip(a.value.reshape(-1).tolist(),
                                                           start.value.reshape(-1).tolist())))
    assert moved > 1e-2  # training did move the weights


def test_forks_share_ids_not_values():
    model = MLP().to(Autodiff(ember.Cpu()))
    SGD(model, lr=0.1)
    fork = model.fork()
    assert [p.id for p in fork.parameters()] == [p.id for p in model.parameters()]
    x, y = _data()
    g = _grads(fork, x[0], y[0], 1.0)
    SGD(fork, lr=1.0).step(g)
    changed = [a.value.tolist() != b.value.tolist() for a, b in zip(model.parameters(), fork.parameters())]
    assert all(changed)  # stepping the fork leaves the original alone
