"""Where a captured ``Torch("cuda")`` training step's time goes (the MLP 784-128-10 at batch 64,
SGD, ``ember.accel.compile(step, inplace=True)``), beside PyTorch's own step as a CUDA graph.

    python bench/torch_capture_profile.py [--reps N] [--rounds N] [--profile N] [--copied]

``--copied`` profiles the default mode instead (``compile(step)``: the holders get copies of the
new state, not the graph's buffers).

Times, in microseconds, medians of interleaved rounds (each a batch of ``--reps`` calls ending
with a synchronize): the whole step with its ``.item()``; the step without the read; the capture
key alone (``collect``); the lowered plan's ``run`` alone; the CUDA graph's ``replay`` alone (back to
back); PyTorch's graph step with its ``.item()``; each graph's GPU time by CUDA events; the host's
time until a graph's ``replay`` and a whole step return (the GPU idle before each); and the kernels
of one replay of each graph (torch.profiler). Then cProfile over ``--profile`` whole steps (the host's
Python, by own time), and which of torch's multi-tensor ops with a 0-d tensor operand wait for the
GPU (a CUDA graph cannot hold those). Without CUDA it says so and stops. The last line is one JSON
object of the times.
"""
import cProfile
import io
import json
import pstats
import statistics
import sys
import time

sys.path.insert(0, __file__.rsplit("/", 1)[0])


def _arg(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def _timed(fns, sync, reps, rounds):
    out = {k: [] for k in fns}
    for f in fns.values():
        f()
    sync()
    for _ in range(rounds):
        for k, f in fns.items():
            t0 = time.perf_counter()
            for _ in range(reps):
                f()
            sync()
            out[k].append((time.perf_counter() - t0) / reps * 1e6)
    return {k: round(statistics.median(v), 2) for k, v in out.items()}


def _gpu_time(torch, fn, n):
    """Median microseconds of one ``fn()`` by CUDA events (the GPU's own clock), each call alone."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    out = []
    for _ in range(n):
        torch.cuda.synchronize()
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end) * 1e3)
    return round(statistics.median(out), 2)


def _host_time(fn, sync, n):
    """Median microseconds until ``fn()`` returns to the host, the GPU idle before each call."""
    out = []
    for _ in range(n):
        sync()
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e6)
    sync()
    return round(statistics.median(out), 2)


def _kernels(torch, fn, n):
    """A table of the GPU kernels ``n`` calls of ``fn`` ran: name, calls per ``fn``, GPU time per call."""
    from torch.profiler import ProfilerActivity, profile
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            fn()
        torch.cuda.synchronize()
    rows, total = [], 0.0
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t <= 0:
            continue
        rows.append((t / n, e.count / n, e.key))
        total += t / n
    rows.sort(reverse=True)
    lines = ["  %8.2f us  x%-4g %s" % (t, c, k[:110]) for t, c, k in rows]
    lines.append("  %8.2f us in %g kernels" % (total, sum(c for _, c, _ in rows)))
    return "\n".join(lines)


def _foreach_syncs(torch):
    """{op: whether it waits for the GPU} for the multi-tensor ops with a 0-d CUDA tensor operand."""
    xs = [torch.rand(5, device="cuda") for _ in range(3)]
    s = torch.rand(4, device="cuda")[1]  # a 0-d view, as the optimizers' hyperparameters are
    found = {}
    for name in ("_foreach_mul", "_foreach_div", "_foreach_add", "_foreach_sub"):
        torch.cuda.synchronize()
        torch.cuda.set_sync_debug_mode("error")
        try:
            getattr(torch, name)(xs, s)
            found[name] = False
        except RuntimeError as e:
            found[name] = "synchroniz" in str(e) or str(e)[:80]
        finally:
            torch.cuda.set_sync_debug_mode("default")
    return found


def main():
    import torch
    if not torch.cuda.is_available():
        print("no CUDA here (torch.cuda.is_available() is False): this profile runs on a GPU machine")
        print(json.dumps({"cuda": False}))
        return
    import ember
    import ember.nn.functional as F
    from ember.accel import Autodiff, Torch, compile, from_torch
    from ember.accel.capture import compiled as _compiled, state as _state
    from ember.accel.optim import SGD
    from _models import MLP, torch_graph_step
    reps, rounds = _arg("--reps", 200), _arg("--rounds", 7)
    sync = torch.cuda.synchronize
    dev = Autodiff(Torch("cuda"))
    g = torch.Generator().manual_seed(2)
    xs, ys = torch.randn(64, 784, generator=g), torch.randint(0, 10, (64,), generator=g)
    model = MLP(ember.Generator(0)).to(dev)
    opt = SGD(model, lr=0.01)
    x, y = from_torch(xs.cuda()).to(dev), from_torch(ys.cuda()).to(dev)

    def step():
        loss = F.cross_entropy(model(x), y)
        opt.step(loss.backward())
        return loss
    inplace = "--copied" not in sys.argv
    captured = compile(step, inplace=inplace)
    for _ in range(3):
        captured()
    (rec,) = captured._plans.values()
    print("lowering: %s, %s, %d entries, %s" % (captured.lowering, type(rec.lowered).__name__, len(rec.plan.calls),
                                               "in place" if inplace else "state copied (the default)"))
    ins = _state.collect((), {}, step)
    arrays = _compiled.base_arrays(ins.tensors)

    tm = torch.nn.Sequential(torch.nn.Linear(784, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).cuda()
    topt = torch.optim.SGD(tm.parameters(), lr=0.01)
    tstep = torch_graph_step(torch, tm, topt, xs.cuda(), ys.cuda())
    times = _timed({
        "step_with_item_us": lambda: captured().item(),
        "step_queued_us": lambda: captured(),
        "collect_us": lambda: _state.collect((), {}, step),
        "lowered_run_us": lambda: rec.lowered.run(arrays),
        "graph_replay_us": rec.lowered.graph.replay,
        "torch_graph_step_with_item_us": lambda: tstep().item(),
        "torch_graph_replay_us": tstep.graph.replay,
    }, sync, reps, rounds)
    for name, graph in (("graph_gpu_us", rec.lowered.graph), ("torch_graph_gpu_us", tstep.graph)):
        times[name] = _gpu_time(torch, graph.replay, rounds * 20)
    for name, fn in (("graph_launch_host_us", rec.lowered.graph.replay), ("torch_graph_launch_host_us", tstep.graph.replay),
                     ("step_host_us", captured)):
        times[name] = _host_time(fn, sync, rounds * 20)
    for k, v in times.items():
        print("%-32s %9.2f" % (k, v))
    for name, graph in (("ember's graph", rec.lowered.graph), ("PyTorch's graph", tstep.graph)):
        print("kernels of one replay of %s (20 replays profiled):" % name)
        print(_kernels(torch, graph.replay, 20))
    prof = cProfile.Profile()
    n = _arg("--profile", 300)
    prof.enable()
    for _ in range(n):
        captured().item()
    prof.disable()
    text = io.StringIO()
    pstats.Stats(prof, stream=text).sort_stats("tottime").print_stats(30)
    print("cProfile of %d whole steps (seconds are totals):" % n)
    print(text.getvalue())
    times["foreach_waits"] = _foreach_syncs(torch)
    print("multi-tensor ops with a 0-d CUDA operand that wait for the GPU:", times["foreach_waits"])
    times["device"] = torch.cuda.get_device_name(0)
    times["inplace"] = inplace
    print(json.dumps(times))


if __name__ == "__main__":
    main()
