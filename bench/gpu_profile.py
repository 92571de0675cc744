"""Where a captured training step's time goes on a GPU (issue 23), beside PyTorch CUDA's floors.

    python bench/gpu_profile.py [--quick] [--json PATH] [--split-k MIN_K:CHUNK] [--models mlp,lenet,cnn]

- **Read floors**: a submit of nothing and a wait; ``Runtime.sync``; a 4-byte read through
  ``Runtime.read`` (the path every ``.item()`` takes) and through wgpu-py's own map-and-wait; a
  tensor's ``.item()``; and PyTorch's ``synchronize`` and ``.item()`` on the same GPU.
- **Read waits**: the step with a read under each of ``Runtime.read_wait``'s ways to wait
  ("thread", "poll"), interleaved; and the host time of one replay split into its
  native calls (encoder, pass, finish, submit).
- **Per step** (MLP, LeNet-5, MNIST CNN at batch 64, on ``Autodiff(Wgpu())`` and
  ``Autodiff(Fusion(Wgpu()))``): the replay's dispatches; the host time of one replay (its command
  buffer recorded and submitted, no wait); the GPU time of the replay's dispatches alone (repeated
  in one command buffer, so no host work and no read is in it); and each dispatch's GPU time
  (repeated alone in one pass), summed by kernel.

The step's time with a read is about: host time + GPU time + the read floor. ``--split-k`` sets
the Wgpu matmuls' split-K rule (``matmul_kernels.SPLIT_MIN_K``, ``SPLIT_CHUNK``) for the whole run;
``--models`` profiles only those steps. The last line is one JSON object.
"""
import json
import statistics
import sys
import time

import numpy as np

import ember
import ember.nn.functional as F
from ember.accel import Wgpu, compile
from ember.accel.autodiff import Autodiff
from ember.accel.fusion import Fusion
from ember.accel.optim import SGD
from ember.accel.wgpu import matmul_kernels as mk

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from _models import LeNet, MLP, MnistCNN  # noqa: E402  bench/_models.py

QUICK = "--quick" in sys.argv
OUT = {}


def arg(name, default):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def log(*args):
    print(*args, flush=True)


def median_us(fn, n):
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out) * 1e6


def floors(dev, torch):
    import wgpu
    rt = dev.rt
    wait = rt.device._poll_wait

    def submit_wait():
        rt.queue.submit([rt.device.create_command_encoder().finish()])
        wait()
    OUT["submit_wait_empty_us"] = median_us(submit_wait, 200)
    OUT["sync_us"] = median_us(dev.synchronize, 200)
    x = ember.ones(256, device=dev)
    a = x._data
    old = rt.read_wait
    for m in MODES:
        rt.read_wait = m
        OUT["read4_%s_us" % m] = median_us(lambda: rt.read(a.block.buffer, a.block.offset, 4), 200)
    rt.read_wait = old
    OUT["read4_ember_us"] = median_us(lambda: rt.read(a.block.buffer, a.block.offset, 4), 200)
    staging = rt.device.create_buffer(size=256, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)

    def read_wgpupy():
        enc = rt.device.create_command_encoder()
        enc.copy_buffer_to_buffer(a.block.buffer.gpu, a.block.offset, staging, 0, 4)
        rt.queue.submit([enc.finish()])
        staging.map_async("READ", 0, 4).sync_wait()
        bytes(staging.read_mapped(0, 4, copy=True))
        staging.unmap()
    OUT["read4_wgpupy_us"] = median_us(read_wgpupy, 200)
    OUT["item_us"] = median_us(lambda: x[0].item(), 200)
    line = ("floors: submit+wait %.1f us, sync %.1f us, 4-byte read %.1f us (wgpu-py's wait %.1f us), "
            ".item() %.1f us; by read wait %s" % (OUT["submit_wait_empty_us"], OUT["sync_us"], OUT["read4_ember_us"],
                                                OUT["read4_wgpupy_us"], OUT["item_us"],
                                                {m: round(OUT["read4_%s_us" % m], 1) for m in MODES}))
    if torch is not None:
        t = torch.ones(256, device="cuda")
        OUT["torch_sync_us"] = median_us(torch.cuda.synchronize, 200)
        OUT["torch_item_us"] = median_us(lambda: t[0].item(), 200)
        line += "; torch synchronize %.1f us, .item() %.1f us" % (OUT["torch_sync_us"], OUT["torch_item_us"])
    log(line)


def _gpu_seconds(dev, steps, reps):
    """GPU seconds of ``steps`` (a replay's dispatches) run ``reps`` times in one pass, the empty
    submit-and-wait floor taken off."""
    rt = dev.rt
    enc = rt.device.create_command_encoder()
    cp = enc.begin_compute_pass()
    for _ in range(reps):
        for pipe, bg, offset, gx, gy, gz in steps:
            cp.set_pipeline(pipe)
            cp.set_bind_group(0, bg, [offset])
            cp.dispatch_workgroups(gx, gy, gz)
    cp.end()
    cmd = enc.finish()
    dev.synchronize()
    t0 = time.perf_counter()
    rt.queue.submit([cmd])
    rt.device._poll_wait()
    return max(time.perf_counter() - t0 - OUT["submit_wait_empty_us"] * 1e-6, 0.0) / reps


def _name(key):
    """A kernel's pipeline key, short: the op, or a fused kernel's shape and first ops."""
    k = None
    if key and key[0] == "fusion":
        k = key[1]
    elif key and key[0] == "fusion-mm" and type(key[2]) is tuple:
        k = key[2][0]
    if type(k) is tuple and k:
        nodes = k[6] if k[0] == "matmul" else k[4]
        ops = [n[2] if n[0] in ("unary", "binary", "reduce") else n[0] for n in nodes
               if type(n) is tuple and n and n[0] not in ("load", "const", "row", "acc")]
        return "fused %s %s" % (k[0], "+".join(str(o) for o in ops[:6]))
    return " ".join(str(p) for p in key[:3])


def steps(dev):
    batch = 64
    rng = np.random.default_rng(2)
    keys = {}
    models = arg("--models", "mlp,lenet,cnn").split(",")
    for name, cls, shape in (("mlp", MLP, (batch, 784)), ("lenet", LeNet, (batch, 1, 28, 28)),
                             ("cnn", MnistCNN, (batch, 1, 28, 28))):
        xs = rng.standard_normal(shape).astype(np.float32)
        ys = rng.integers(0, 10, batch)
        if name not in models:
            continue
        for tag, ad in (("", Autodiff(dev)), ("fused_", Autodiff(Fusion(dev)))):
            model = cls(ember.Generator(0)).to(ad)
            opt = SGD(model, lr=0.01)
            x = ember.from_bytes(xs.tobytes(), xs.shape, ember.float32, device=dev).to(ad) \
                if hasattr(ember, "from_bytes") else ember.tensor(xs.tolist(), device=ad)
            y = ember.tensor(ys.tolist(), dtype=ember.int64, device=ad)

            def step():
                loss = F.cross_entropy(model(x), y)
                opt.step(loss.backward())
                return loss
            c = compile(step)
            for _ in range(4):
                c()
            key = "%s_%s" % (name, tag)
            if c.lowering != "lowered":
                OUT[key + "lowering"] = c.lowering
                log("%s: not lowered: %s" % (key, c.lowering))
                continue
            (rec,) = c._plans.values()
            plan = rec.lowered
            for k, e in dev.rt._pipelines.items():
                keys[id(e[0])] = k
            dev.synchronize()

            def host():
                c()
            samples = []
            for _ in range(30 if not QUICK else 3):
                dev.synchronize()
                t0 = time.perf_counter()
                c()
                samples.append(time.perf_counter() - t0)
            dev.synchronize()
            host_us = statistics.median(samples) * 1e6
            reps = 50 if not QUICK else 2
            gpu_us = statistics.median([_gpu_seconds(dev, plan.steps, reps) for _ in range(5)]) * 1e6
            read_us = statistics.median([_read_step(c) for _ in range(20 if not QUICK else 2)]) * 1e6
            modes = read_modes(dev, c, 5 if not QUICK else 1)
            phases = host_phases(dev, c, plan, 30 if not QUICK else 2)
            OUT[key + "step_with_read_us_by_wait"] = modes
            OUT[key + "host_phases_us"] = phases
            log("%s: step with a read by read wait: %s; host per replay: %s"
                % (key, {m: round(v, 1) for m, v in modes.items()}, {k: round(v, 1) for k, v in phases.items()}))
            per = {}
            for st in plan.steps:
                t = _gpu_seconds(dev, [st], reps * 2) * 1e6
                n = _name(keys.get(id(st[0]), ("?",)))
                agg = per.setdefault(n, [0, 0.0])
                agg[0] += 1
                agg[1] += t
            top = sorted(per.items(), key=lambda kv: -kv[1][1])
            OUT[key + "dispatches"] = len(plan.steps)
            OUT[key + "host_us"] = host_us
            OUT[key + "gpu_us"] = gpu_us
            OUT[key + "step_with_read_us"] = read_us
            OUT[key + "uploads"] = len(plan.writes)
            OUT[key + "by_kernel_us"] = {n: [k, round(t, 2)] for n, (k, t) in top}
            log("%s: %d dispatches, %d uploads; host %.1f us, GPU %.1f us (sum of dispatches alone %.1f us), "
                "step with a read %.1f us" % (key, len(plan.steps), len(plan.writes), host_us, gpu_us,
                                              sum(t for _, t in per.values()), read_us))
            for n, (k, t) in top[:12]:
                log("    %8.1f us  %3dx  %s" % (t, k, n))


class _Timed:
    """``obj`` with the calls named in ``names`` timed into ``acc`` (name -> seconds); what they
    return is timed the same way when it is a command encoder or a pass."""

    def __init__(self, obj, acc, names):
        self._obj, self._acc, self._names = obj, acc, names

    def __getattr__(self, name):
        v = getattr(self._obj, name)
        if name not in self._names:
            return v
        acc = self._acc

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            r = v(*args, **kwargs)
            acc[name] = acc.get(name, 0.0) + time.perf_counter() - t0
            if name in ("create_command_encoder", "begin_compute_pass"):
                return _Timed(r, acc, ("begin_compute_pass", "finish", "end"))
            return r
        return timed


def host_phases(dev, c, plan, n):
    """Seconds per replay in each native call of the replay, beside the replay and the call."""
    from ember.accel.capture import lower_wgpu
    rt = dev.rt
    acc = {}
    run = plan.run

    def timed_run(*args, **kwargs):
        t0 = time.perf_counter()
        r = run(*args, **kwargs)
        acc["replay"] = acc.get("replay", 0.0) + time.perf_counter() - t0
        return r
    device, queue = rt.device, rt.queue
    rt.device = _Timed(device, acc, ("create_command_encoder",))
    rt.queue = _Timed(queue, acc, ("submit", "write_buffer"))
    plan.run = timed_run
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            c()
        total = time.perf_counter() - t0
    finally:
        rt.device, rt.queue = device, queue
        del plan.run
        dev.synchronize()
    out = {k: v / n * 1e6 for k, v in acc.items()}
    out["call"] = total / n * 1e6
    return out


MODES = ("thread", "poll")


def read_modes(dev, c, rounds):
    """Median step-with-a-read microseconds under each of Runtime's read waits, rounds interleaved."""
    rt = dev.rt
    old = rt.read_wait
    got = {m: [] for m in MODES}
    try:
        for _ in range(rounds):
            for m in MODES:
                rt.read_wait = m
                _read_step(c)
                got[m].append(statistics.median([_read_step(c) for _ in range(5)]) * 1e6)
    finally:
        rt.read_wait = old
    return {m: statistics.median(v) for m, v in got.items()}


def _read_step(c):
    t0 = time.perf_counter()
    c().item()
    return time.perf_counter() - t0


def main():
    try:
        import torch
        if not torch.cuda.is_available():
            torch = None
    except ImportError:
        torch = None
    dev = Wgpu()
    log("adapter %s" % dev.rt.label)
    rule = arg("--split-k", None)
    if rule:
        mk.SPLIT_MIN_K, mk.SPLIT_CHUNK = (int(v) for v in rule.split(":"))
    OUT["split_k"] = "%d:%d" % (mk.SPLIT_MIN_K, mk.SPLIT_CHUNK)
    log("split-K rule (SPLIT_MIN_K:SPLIT_CHUNK): %s" % OUT["split_k"])
    floors(dev, torch)
    steps(dev)
    path = arg("--json", None)
    if path:
        with open(path, "w") as f:
            json.dump(OUT, f, indent=1)
    print(json.dumps(OUT))


if __name__ == "__main__":
    main()
