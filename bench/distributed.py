"""ember.accel.distributed on this machine: all-reduce bandwidth by message size beside raw mpi4py,
and the MLP / LeNet training step at 1, 2 and 4 ranks, captured on the C Cpu and eager on NumPy.

    python bench/distributed.py [--rounds N] [--ranks 1,2,4] [--models mlp,lenet] [--transport tcp|sm]

The script launches itself under ``mpirun`` (loopback only: ``--mca btl self,tcp --mca
btl_tcp_if_include lo``; ``--transport sm`` uses Open MPI's shared-memory BTL instead), one
thread per rank (OPENBLAS/OMP threads 1, ``EMBER_NUM_THREADS=1``).

- all-reduce (2 ranks, float32): per message size, ember's ``all_reduce`` of a Cpu tensor and of
  a NumPy tensor beside mpi4py's blocking ``Allreduce`` of a numpy buffer of the same size, the
  three interleaved in shuffled order each round; a figure is the median over rounds.
- step: the Learner's per-batch work at a global batch of 128 with AdamW; 1 rank runs
  ``SingleDevice`` on the whole batch, n ranks ``DistributedDataParallel`` on 128/n each, on two
  paths: ``compiled_cpu``, the strategy's captured step (``strategy.compiled_step()``, what
  ``Learner(compile="auto")`` replays) on ``Autodiff(ember.Cpu())`` with the C kernels, then the
  batch outputs and the stop agreement; ``eager_numpy``, the strategy's eager step, batch outputs,
  stop agreement and AdamW step on ``Autodiff(NumPy())``. Each round runs every (path, rank count)
  once, in shuffled order, as its own mpirun job; a figure is the median over rounds of the job's
  mean step.
- parts: the compiled MLP step at 1 rank (batch 128, and batch 64) and 2 ranks (64 a rank), each
  part timed alone in one mpirun job, interleaved (median and min over rounds):
  ``gradients_call`` / ``update_call`` (the two ``Compiled`` calls), ``gradients_plan`` /
  ``update_plan`` (their lowered plans' ``run`` alone: the C loop, the copies out of the plan's
  buffers and the Python around them), the all-reduce of
  the flat gradient with the small float64 one, the outputs gather with the stop agreement, the
  whole step (``ddp_step``) and, at 1 rank, ``SingleDevice``'s captured step and its plan;
  ``gradients_kernels`` / ``update_kernels``: the time inside the C kernels' entry points
  (``ember._ckernels.emb_*``) per plan run, read from cProfile: the min over rounds of 50 runs.

The last line is one JSON object:

    step_2rank_vs_1rank     compiled_cpu: 1-rank MLP step / 2-rank MLP step (goal >= 1.6)
    eager_numpy_step_2rank_vs_1rank   the same ratio on the eager NumPy path
    allreduce_vs_mpi4py     mpi4py Allreduce time / ember all_reduce time, 10 MiB, Cpu tensor (goal >= 0.8)
    allreduce               per size: ms and GB/s (algorithmic: bytes / time) of each of the three
    step_ms                 per path, model and rank count: median step, ms; spread_ms: [min, max] over rounds
    compiled_mlp_parts_us   per job ("1 rank, batch 128", "1 rank, batch 64", "2 ranks, batch 64"):
                            the parts above, [median, min] us (rank 0's; the min is the figure least
                            touched by other processes), the kernels' us, gradient_bytes, batch
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
BATCH = 128  # the global batch of the step cells
PATHS = ("compiled_cpu", "eager_numpy")


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


def _setup(model_name, path, world, rank):
    """(model, AdamW, x, y) of this rank's slice of the global batch of 128, on ``path``'s device."""
    import numpy as np
    import ember
    from ember.accel.autodiff import Autodiff
    from ember.accel.numpy import NumPy
    from ember.accel.optim import AdamW, track
    from _models import MLP, LeNet
    device = Autodiff(NumPy() if path == "eager_numpy" else ember.Cpu())
    model = (MLP if model_name == "mlp" else LeNet)(ember.Generator(0)).to(device)
    track(model)
    opt = AdamW(model, lr=1e-3)
    r = np.random.default_rng(0)
    shape = (BATCH, 784) if model_name == "mlp" else (BATCH, 1, 28, 28)
    x_all = r.standard_normal(shape).astype(np.float32)
    y_all = r.integers(0, 10, BATCH)
    a, b = BATCH * rank // world, BATCH * (rank + 1) // world
    return model, opt, _on(x_all[a:b], device), _on(y_all[a:b], device)


def _strategy(world):
    from ember.accel.train import SingleDevice
    if world > 1:
        from ember.accel.distributed import DistributedDataParallel, barrier
        return DistributedDataParallel(), barrier
    return SingleDevice(), (lambda: None)


def step_role(model_name, steps, path):
    """The Learner's per-batch work on ``path``: "eager_numpy" (strategy step, outputs, stop
    agreement, AdamW step on the NumPy device) or "compiled_cpu" (the strategy's captured step on
    the C Cpu, then outputs and stop agreement, as ``Learner(compile="auto")`` runs it)."""
    import ember.nn.functional as F
    from _load import LoadMeter
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    strategy, barrier = _strategy(world)
    rank = getattr(strategy, "rank", 0)
    model, opt, x, y = _setup(model_name, path, world, rank)
    if path == "compiled_cpu":
        captured = strategy.compiled_step()

        def step():
            loss, logits = captured(model, opt, F.cross_entropy, x, y)
            strategy.outputs(logits, y)
            strategy.agree_stop(None)
    else:
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


def breakdown_role(reps, split):
    """Where the compiled MLP step's time goes at this world size, on a shard of batch 128 / ``split``
    a rank (default: the world size): each of the captured DDP step's parts timed alone,
    interleaved, over ``reps`` runs of 20 each."""
    import numpy as np
    import ember.nn.functional as F
    from ember.accel.capture import state
    from ember.accel.capture.compiled import base_arrays
    from ember.accel.distributed import DistributedDataParallel, barrier, comm
    from ember.accel.train import SingleDevice
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    ddp = DistributedDataParallel()
    rank = ddp.rank
    model, opt, x, y = _setup("mlp", "compiled_cpu", split or world, rank)
    captured = ddp.compiled_step()
    for _ in range(4):
        loss, logits = captured(model, opt, F.cross_entropy, x, y)
    g, u = captured.gradients, captured.update
    _, _, flats = g(model, F.cross_entropy, x, y)
    flat = flats[0]
    send = np.frombuffer(flat._data.data, np.float32)
    recv = np.empty_like(send)
    grads = [flat]

    def plan_of(compiled, args):
        ins = state.collect(args, {}, compiled.fn)
        return compiled._plans[ins.key].lowered, ins

    def plan_run(compiled, args):  # the lowered plan alone: its C loop and the Python around it
        lowered, ins = plan_of(compiled, args)
        return lambda: lowered.run(base_arrays(ins.tensors))

    def allreduce():
        meta = np.zeros(2 * world + 1)
        got = np.empty_like(meta)
        comm.wait([comm.iall_reduce_sum(send, recv), comm.iall_reduce_sum(meta, got)], "bench")

    cells = {
        "ddp_step": lambda: (captured(model, opt, F.cross_entropy, x, y), ddp.outputs(logits, y), ddp.agree_stop(None)),
        "gradients_call": lambda: g(model, F.cross_entropy, x, y),
        "gradients_plan": plan_run(g, (model, F.cross_entropy, x, y)),
        "update_call": lambda: u(model, opt, grads),
        "update_plan": plan_run(u, (model, opt, grads)),
        "collect_update_inputs": lambda: state.collect((model, opt, grads), {}, u.fn),
        "allreduce_grads_and_meta": allreduce,
        "outputs_and_stop": lambda: (ddp.outputs(logits, y), ddp.agree_stop(None)),
    }
    if world == 1:
        single = SingleDevice().compiled_step()
        for _ in range(4):
            single(model, opt, F.cross_entropy, x, y)
        cells["single_step"] = lambda: single(model, opt, F.cross_entropy, x, y)
        cells["single_plan"] = plan_run(single, (model, opt, F.cross_entropy, x, y))
    times = {k: [] for k in cells}
    rng = random.Random(2)
    for _ in range(reps):
        order = sorted(cells)
        rng.shuffle(order)  # the same seed on every rank: the same collectives in the same order
        for k in order:
            barrier()
            t0 = time.perf_counter()
            for _ in range(20):
                cells[k]()
            times[k].append((time.perf_counter() - t0) / 20)
    kernels = {name: min(_kernel_time(cells[name + "_plan"]) for _ in range(reps)) for name in ("gradients", "update")}
    if rank == 0:
        out = {k: [round(median(v) * 1e6, 1), round(min(v) * 1e6, 1)] for k, v in times.items()}
        out.update({k + "_kernels": round(v * 1e6, 1) for k, v in kernels.items()})
        out["gradient_bytes"] = int(send.nbytes)
        out["batch"] = int(x.shape[0])
        print("RESULT " + json.dumps(out), flush=True)


def _kernel_time(run, calls=50):
    """Seconds per ``run()`` spent inside the C kernels' entry points (cProfile's own time of the
    ``emb_*`` built-ins)."""
    import cProfile
    import pstats
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(calls):
        run()
    prof.disable()
    stats = pstats.Stats(prof).stats
    return sum(v[2] for (_, _, name), v in stats.items() if "emb_" in name) / calls


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
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", EMBER_NUM_THREADS="1")
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
    steps = {p: {m: {n: [] for n in ranks} for m in models} for p in PATHS}
    foreign = []
    rng = random.Random(0)
    for _ in range(rounds):
        for model in models:
            cells = [(p, n) for p in PATHS for n in ranks]
            rng.shuffle(cells)
            for path, n in cells:
                count = "30" if model == "mlp" else ("20" if path == "compiled_cpu" else "6")
                res = mpirun(n, ["--role", "step", "--model", model, "--path", path, "--steps", count], transport)
                steps[path][model][n].append(res["step_s"])
                if res["foreign"] is not None:
                    foreign.append(res["foreign"])
    print("step (global batch %d, AdamW, one thread a rank), median of %d rounds, ms" % (BATCH, rounds))
    for path in PATHS:
        for model in models:
            print("%12s %6s " % (path, model) + "  ".join(
                "%d rank%s: %.3f" % (n, "" if n == 1 else "s", median(steps[path][model][n]) * 1e3) for n in ranks))
    parts = {}
    for n, split in ((1, 1), (1, 2), (2, 2)):  # batch 128 alone, 64 alone, 64 beside another rank
        if n in ranks:
            parts["%d rank%s, batch %d" % (n, "" if n == 1 else "s", BATCH // split)] = mpirun(
                n, ["--role", "breakdown", "--rounds", str(max(5, rounds)), "--split", str(split)], transport)
    print("compiled MLP step by part, us (batch %d / ranks a rank; [median, min]): %s" % (BATCH, json.dumps(parts)))
    big = ar[str(10 << 20)]

    def ratio(path):
        mlp = steps[path].get("mlp")
        if mlp is None or 1 not in ranks or 2 not in ranks:
            return None
        return round(median(mlp[1]) / median(mlp[2]), 3)
    result = {
        "step_2rank_vs_1rank": ratio("compiled_cpu"),
        "eager_numpy_step_2rank_vs_1rank": ratio("eager_numpy"),
        "allreduce_vs_mpi4py": round(big["mpi4py"]["ms"] / big["ember_cpu"]["ms"], 3),
        "allreduce_vs_mpi4py_numpy": round(big["mpi4py"]["ms"] / big["ember_numpy"]["ms"], 3),
        "allreduce": ar,
        "step_ms": {p: {m: {str(n): round(median(v) * 1e3, 3) for n, v in d.items()} for m, d in per.items()}
                    for p, per in steps.items()},
        "spread_ms": {p: {m: {str(n): [round(min(v) * 1e3, 3), round(max(v) * 1e3, 3)] for n, v in d.items()}
                          for m, d in per.items()} for p, per in steps.items()},
        "compiled_mlp_parts_us": parts,
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
        step_role(_arg(sys.argv, "--model", "mlp"), _arg(sys.argv, "--steps", 30, int),
                  _arg(sys.argv, "--path", "compiled_cpu"))
    elif role == "breakdown":
        breakdown_role(_arg(sys.argv, "--rounds", 5, int), _arg(sys.argv, "--split", 0, int))
    else:
        main(sys.argv[1:])
