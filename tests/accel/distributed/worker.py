"""What the distributed tests run under ``mpirun`` (and alone, for the single-process reference).

    python worker.py MODE OUT DTYPE EPOCHS        MODE: ddp, single, kill, hang, resume, stop, collectives

ddp/resume train an MLP with ``DistributedDataParallel`` on each rank's shard of batches of 24;
single trains the same model on the whole batches in one process (the reference); kill and hang
make rank 1 die (SIGKILL) or stop (SIGSTOP) at its third batch; stop is resume where rank 1
asks its Learner to stop at its third batch (as SIGTERM would); collectives checks
all_reduce/broadcast/all_gather values on the Cpu, NumPy and Autodiff devices and exits 0. Rank 0 (or the single process)
writes the final weights and history to OUT/weights.npz and OUT/history.json, and the Learner's
captured step's stats to OUT/compiled.json (null when it stepped eagerly).

``WORKER_COMPILE``: the Learner's ``compile`` ("auto", the default, or "off"); ``WORKER_DEVICE``:
where to train ("numpy", the default, or "cpu": the C-backed Cpu).
"""
import json
import os
import signal
import sys

import numpy as np

import ember
import ember.nn.functional as F
from ember.accel.data import DataLoader
from ember.accel.data.dataset import InMemoryDataset
from ember.accel.numpy import NumPy
from ember.accel.optim import AdamW
from ember.accel.train import Learner, SingleDevice, metrics
from ember.nn.linear import Linear
from ember.nn.module import Module

MODE, OUT, DTYPE, EPOCHS = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
BATCH = 24


class MLP(Module):
    def __init__(self):
        super().__init__()
        gen = ember.Generator(5)
        self.fc1 = Linear(8, 32, generator=gen)
        self.fc2 = Linear(32, 16, generator=gen)
        self.out = Linear(16, 3, generator=gen)

    def forward(self, x):
        return self.out(F.relu(self.fc2(F.tanh(self.fc1(x)))))


def data():
    r = np.random.default_rng(3)
    x = r.standard_normal((100, 8)).astype(DTYPE)  # 100 = 4 batches of 24 + 4: a short last batch
    y = r.integers(0, 3, 100).astype(np.int64)
    return InMemoryDataset(x, y)


class Saboteur(metrics.Metric):
    """A run metric (updated after every step, captured or not) that makes rank 1 kill or stop
    itself, or ask its Learner to stop, at its third step."""

    name = "saboteur"
    split = False

    def __init__(self, how, rank):
        self.how, self.rank, self.calls, self.learner = how, rank, 0, None
        super().__init__()

    def reset(self):
        pass

    def update(self, out):
        self.calls += 1
        if self.rank == 1 and self.calls == 3 and self.how == "stop":
            self.learner.request_stop("rank 1 asked")
        elif self.rank == 1 and self.calls == 3:
            os.kill(os.getpid(), signal.SIGKILL if self.how == "kill" else signal.SIGSTOP)

    def compute(self):
        return 0.0


def collectives():
    from ember.accel import distributed as dist
    from ember.accel.autodiff import Autodiff
    dist.init(timeout=20)
    r, w = dist.rank(), dist.world_size()
    for device in (ember.Cpu(), NumPy(), Autodiff(ember.Cpu())):
        for dtype in (ember.float32, ember.float64, ember.int64):
            t = ember.tensor([[r + 1, 2 * r], [r, 3]], dtype=dtype, device=device)
            want = np.array([[w * (w + 1) / 2, w * (w - 1)], [w * (w - 1) / 2, 3 * w]])  # sums over the ranks
            got = dist.all_reduce(t)
            assert got.device == device and got.dtype is dtype and got.shape == (2, 2), (got.device, got.dtype)
            assert np.array_equal(_np(got), want), (device, dtype, _np(got), want)
            assert np.array_equal(_np(dist.all_reduce(t, "max")), [[w, 2 * (w - 1)], [w - 1, 3]])
            assert np.array_equal(_np(dist.broadcast(t, root=w - 1)), [[w, 2 * (w - 1)], [w - 1, 3]])
            gathered = _np(dist.all_gather(t))
            assert gathered.shape == (w, 2, 2) and all(gathered[k, 0, 0] == k + 1 for k in range(w)), gathered
        m = dist.all_reduce(ember.tensor([float(r)], device=device), "mean")
        assert abs(_np(m)[0] - (w - 1) / 2) < 1e-12, _np(m)
    dist.barrier()
    if r == 0:
        open(os.path.join(OUT, "collectives.ok"), "w").write("%d ranks\n" % w)


def _np(t):
    from ember.backend import grad_device
    return t.detach().numpy() if grad_device(t.device) is not None else t.numpy()


def main():
    ember.seed(1)
    device = {"numpy": NumPy, "cpu": ember.Cpu}[os.environ.get("WORKER_DEVICE", "numpy")]()
    compile = {"auto": "auto", "off": False}[os.environ.get("WORKER_COMPILE", "auto")]
    model = MLP().to(dtype=getattr(ember, DTYPE))
    loader = DataLoader(data(), batch_size=BATCH, shuffle=True, seed=7, device=device)
    measures = ["loss", "accuracy"]
    saboteur = None
    run_dir = None
    resume = None
    if MODE == "single":
        strategy, train, rank = SingleDevice(), loader, 0
    else:
        from ember.accel.distributed import DistributedDataParallel
        strategy = DistributedDataParallel(bucket_mb=0.001, timeout=float(os.environ.get("WORKER_TIMEOUT", "20")))
        train, rank = strategy.shard(loader), strategy.rank
        if MODE in ("kill", "hang", "stop"):
            saboteur = Saboteur(MODE, rank)
            measures.append(saboteur)
    if MODE in ("resume", "single", "stop") and os.environ.get("WORKER_RUN_DIR"):
        run_dir, resume = os.environ["WORKER_RUN_DIR"], "latest"
    learner = Learner(model, AdamW(model, lr=0.01), F.cross_entropy, epochs=EPOCHS, strategy=strategy,
                      progress=None, metrics=measures, run_dir=run_dir, plot=False, device=device, compile=compile)
    if saboteur is not None:
        saboteur.learner = learner
    result = learner.fit(train, resume=resume)
    if rank == 0:
        weights = {name: p.value.detach().numpy() for name, p in model.named_parameters()}
        np.savez(os.path.join(OUT, "weights.npz"), **weights)
        with open(os.path.join(OUT, "history.json"), "w") as f:
            json.dump([{k: v for k, v in r.items() if k not in ("epoch_seconds", "saboteur")}
                       for r in result.history], f)
        with open(os.path.join(OUT, "compiled.json"), "w") as f:
            json.dump(None if learner.compiled is None else
                      {"stats": learner.compiled.stats, "refused": [str(v) for v in learner.compiled.refused.values()],
                       "lowering": getattr(learner.compiled, "lowering", None)}, f)


if MODE == "collectives":
    collectives()
else:
    main()
