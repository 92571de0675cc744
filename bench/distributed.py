"""ember.accel.distributed on this machine: all-reduce bandwidth by message size beside raw mpi4py,
and the MLP / LeNet training step at 1, 2 and 4 ranks.

    python bench/distributed.py [--rounds N] [--ranks 1,2,4] [--models mlp,lenet] [--transport tcp|sm]

The script launches itself under ``mpirun`` (loopback only: ``--mca btl self,tcp --mca
btl_tcp_if_include lo``; ``--transport sm`` uses Open MPI's shared-memory BTL instead), one
thread per rank (OPENBLAS/OMP threads 1).

- all-reduce (2 ranks, float32): per message size, ember's ``all_reduce`` of a Cpu tensor and of
  a NumPy tensor beside mpi4py's blocking ``Allreduce`` of a numpy buffer of the same size, the
  three interleaved in shuffled order each round; a figure is the median over rounds.
- step: the Learner's per-batch work (strategy step, batch outputs, stop agreement, AdamW step)
  on the NumPy device at a global batch of 128; 1 rank runs ``SingleDevice`` on the whole batch,
  n ranks ``DistributedDataParallel`` on 128/n each. Each round runs every rank count once, in
  shuffled order, as its own mpirun job; a figure is the median over rounds of the job's mean step.

The last line is one JSON object:

    step_2rank_vs_1rank     1-rank MLP step time / 2-rank MLP step time (goal >= 1.6)
    allreduce_vs_mpi4py     mpi4py Allreduce time / ember all_reduce time, 10 MiB, Cpu tensor (goal >= 0.8)
    allreduce               per size: ms and GB/s (algorithmic: bytes / time) of each of the three
    step_ms                 per model and rank count: median step, ms; spread_ms: [min, max] over rounds
    foreign_cores           median CPU use of other processes during the step jobs, in cores
"""
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
SIZES = [4 << 10, 64 << 10, 1 << 20, 10 << 20]


def _arg(argv, name, default, kind=str):
    if name in argv:
        return kind(argv[argv.index(name) + 1])
    return default


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


# ---- under mpirun ----------------------------------------------------------------------------------

def allreduce_role(rounds):
    import numpy as np
    from mpi4py import MPI
    import ember
    from ember.accel import distributed as dist
    from ember.accel.numpy import NumPy
    dist.init()
    comm = MPI.COMM_WORLD
    rng = random.Random(1)
    out = {}
    for size in SIZES:
        n = size // 4
        a = np.ones(n, np.float32)
        b = np.empty_like(a)
        cpu = ember.ones((n,))
        npt = ember.ones((n,), device=NumPy())
        reps = max(3, min(200, (8 << 20) // size * 3))
        cells = {"ember_cpu": lambda: dist.all_reduce(cpu), "ember_numpy": lambda: dist.all_reduce(npt),
                 "mpi4py": lambda: comm.Allreduce(a, b)}
        for f in cells.values():
            f()
        times = {k: [] for k in cells}
        for _ in range(rounds):
            order = list(cells)
            rng.shuffle(order)  # the same seed on every rank: the same order
            for k in order:
                comm.Barrier()
                t0 = time.perf_counter()
                for _ in range(reps):
                    cells[k]()
                times[k].append((time.perf_counter() - t0) / reps)
        out[str(size)] = {k: {"ms": round(median(v) * 1e3, 4), "GB_s": round(size / median(v) / 1e9, 3)}
                          for k, v in times.items()}
    if comm.Get_rank() == 0:
        print("RESULT " + json.dumps(out), flush=True)


def step_role(model_name, steps):
    import numpy as np
    import ember
    import ember.nn.functional as F
    from ember.accel.autodiff import Autodiff
    from ember.accel.numpy import NumPy
    from ember.accel.optim import AdamW, track
    from ember.accel.train import SingleDevice
    from _load import LoadMeter
    from _models import MLP, LeNet
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if world > 1:
        from ember.accel.distributed import DistributedDataParallel, barrier
        strategy = DistributedDataParallel()
    else:
        strategy, barrier = SingleDevice(), (lambda: None)
    rank = getattr(strategy, "rank", 0)
    device = Autodiff(NumPy())
    model = (MLP if model_name == "mlp" else LeNet)(ember.Generator(0)).to(device)
    track(model)
    opt = AdamW(model, lr=1e-3)
    r = np.random.default_rng(0)
    shape = (128, 784) if model_name == "mlp" else (128, 1, 28, 28)
    x_all = r.standard_normal(shape).astype(np.float32)
    y_all = r.integers(0, 10, 128)
    a, b = 128 * rank // world, 128 * (rank + 1) // world
    x = _on(x_all[a:b], device)
    y = _on(y_all[a:b], device)

    def step():
        grads, loss, logits = strategy.step(model, F.cross_entropy, x, y)
        strategy.outputs(logits, y)
        strategy.agree_stop(None)
        opt.step(grads)
    for _ in range(3):
        step()
    barrier()
    meter = LoadMeter()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    seconds = (time.perf_counter() - t0) / steps
    if rank == 0:
        print("RESULT " + json.dumps({"step_s": seconds, "foreign": meter.foreign_cores()}), flush=True)


def _on(a, device):
    from ember.accel.data.loader import to_tensor
    return to_tensor(a, device.inner).to(device)


# ---- the driver ------------------------------------------------------------------------------------

def mpirun(n, args, transport):
    btl = ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo"] if transport == "tcp" else \
        ["--mca", "btl", "self,vader"]
    cmd = ["mpirun", "-n", str(n), "--oversubscribe", "--bind-to", "none", "--mca", "oob_tcp_if_include", "lo"] \
        + btl + [sys.executable, os.path.abspath(__file__)] + args
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=600)
    for line in p.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    sys.exit("mpirun -n %d %s failed:\n%s" % (n, " ".join(args), p.stdout[-3000:]))


def main(argv):
    rounds = _arg(argv, "--rounds", 5, int)
    ranks = [int(v) for v in _arg(argv, "--ranks", "1,2,4").split(",")]
    models = _arg(argv, "--models", "mlp,lenet").split(",")
    transport = _arg(argv, "--transport", "tcp")
    if transport not in ("tcp", "sm"):
        sys.exit("--transport must be tcp or sm, found %r" % transport)
    print("all-reduce, 2 ranks, float32, %s transport, median of %d rounds" % (transport, rounds))
    ar = mpirun(2, ["--role", "allreduce", "--rounds", str(rounds)], transport)
    print("%10s %24s %24s %24s" % ("bytes", "ember Cpu ms (GB/s)", "ember NumPy ms (GB/s)", "mpi4py ms (GB/s)"))
    for size in SIZES:
        c = ar[str(size)]
        print("%10d %24s %24s %24s" % (size, *("%.3f (%.2f)" % (c[k]["ms"], c[k]["GB_s"])
                                                for k in ("ember_cpu", "ember_numpy", "mpi4py"))))
    steps = {m: {n: [] for n in ranks} for m in models}
    foreign = []
    rng = random.Random(0)
    for _ in range(rounds):
        for model in models:
            order = list(ranks)
            rng.shuffle(order)
            for n in order:
                res = mpirun(n, ["--role", "step", "--model", model, "--steps", "30" if model == "mlp" else "6"],
                             transport)
                steps[model][n].append(res["step_s"])
                if res["foreign"] is not None:
                    foreign.append(res["foreign"])
    print("step (NumPy device, global batch 128, AdamW), median of %d rounds, ms" % rounds)
    for model in models:
        print("%6s " % model + "  ".join("%d rank%s: %.2f" % (n, "" if n == 1 else "s", median(steps[model][n]) * 1e3)
                                        for n in ranks))
    big = ar[str(10 << 20)]
    result = {
        "step_2rank_vs_1rank": round(median(steps["mlp"][1]) / median(steps["mlp"][2]), 3)
        if "mlp" in models and 1 in ranks and 2 in ranks else None,
        "allreduce_vs_mpi4py": round(big["mpi4py"]["ms"] / big["ember_cpu"]["ms"], 3),
        "allreduce_vs_mpi4py_numpy": round(big["mpi4py"]["ms"] / big["ember_numpy"]["ms"], 3),
        "allreduce": ar,
        "step_ms": {m: {str(n): round(median(v) * 1e3, 3) for n, v in d.items()} for m, d in steps.items()},
        "spread_ms": {m: {str(n): [round(min(v) * 1e3, 3), round(max(v) * 1e3, 3)] for n, v in d.items()}
                      for m, d in steps.items()},
        "foreign_cores": round(median(foreign), 2) if foreign else None,
        "transport": transport, "rounds": rounds, "cores": os.cpu_count(),
        "goal_step_2rank_vs_1rank": 1.6, "goal_allreduce_vs_mpi4py": 0.8,
    }
    print(json.dumps(result))


if __name__ == "__main__":
    role = _arg(sys.argv, "--role", None)
    if role == "allreduce":
        allreduce_role(_arg(sys.argv, "--rounds", 5, int))
    elif role == "step":
        step_role(_arg(sys.argv, "--model", "mlp"), _arg(sys.argv, "--steps", 30, int))
    else:
        main(sys.argv[1:])
