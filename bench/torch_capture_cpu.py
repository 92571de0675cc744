"""Torch("cpu") MLP b64 step (1 thread): eager, the generic captured replay (lower=False), and the
flat torch-call lowering (accel/capture/lower_torch.py), interleaved rounds, medians in ms."""
import sys, time, statistics, torch
sys.path.insert(0, "bench")
torch.set_num_threads(1)
import ember, ember.nn.functional as F
from ember.accel import Autodiff, compile, Torch
from ember.accel.optim import SGD
from _models import MLP
dev = Autodiff(Torch("cpu"))
def make():
    m = MLP(ember.Generator(0)).to(dev); o = SGD(m, lr=0.01)
    g = ember.Generator(2)
    x = ember.rand(64, 784, generator=g).to(dev); y = ember.randint(0, 10, (64,), generator=g).to(dev)
    def step():
        loss = F.cross_entropy(m(x), y); o.step(loss.backward()); return loss
    return step
eager = make(); gen = compile(make(), lower=False); low = compile(make())
for f in (gen, low):
    for _ in range(3): f()
print(low.lowering, [type(r.lowered).__name__ for r in low._plans.values()])
res = {"eager": [], "generic": [], "flat": []}
for _ in range(7):
    for k, f in (("eager", eager), ("generic", gen), ("flat", low)):
        t = time.perf_counter()
        for _ in range(30): f().tolist()
        res[k].append((time.perf_counter() - t) / 30 * 1e3)
print({k: round(statistics.median(v), 3) for k, v in res.items()})
