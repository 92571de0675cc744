"""Loading a PyTorch checkpoint: ``ember.accel.pytorch.load`` beside ``torch.load(weights_only=True)``.

Writes a checkpoint of ``--size-mb`` (float32 tensors of a few MB, as a model's layers are) with
torch.save, then loads it whole in fresh subprocesses, ember and torch interleaved, one thread,
``--repeats`` times each; prints one JSON line with the medians: seconds, the peak RSS each load added
(VmHWM after the load minus the RSS before it, so the libraries' own import is not counted)
as a fraction of the file's size, and ember's speed relative to torch's (>= 0.5 is the goal).

    python bench/pt_load.py --size-mb 500 --repeats 3 [--legacy]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import os, sys, time
path, who = sys.argv[1], sys.argv[2]
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
if who == "torch":
    import torch
    torch.set_num_threads(1)
    load = lambda: torch.load(path, weights_only=True)
else:
    import ember
    from ember.accel import pytorch
    load = lambda: pytorch.load(path)
before = rss()
t0 = time.perf_counter()
sd = load()
took = time.perf_counter() - t0
with open("/proc/self/status") as f:  # VmHWM: this process's peak (ru_maxrss survives exec from a bigger parent)
    peak = [int(l.split()[1]) * 1024 for l in f if l.startswith("VmHWM:")][0]
n = sum(1 for _ in sd)
print(took, peak - before, n)
"""


MAKE = r"""
import sys, torch
path, count, legacy = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
g = torch.Generator().manual_seed(0)
sd = {"layer%d.weight" % i: torch.randn(1024, 1024, generator=g) for i in range(count)}
torch.save(sd, path, _use_new_zipfile_serialization=not legacy)
"""


def make(path, size_mb, legacy):
    count = max(1, (size_mb << 20) // (4 << 20))  # 4 MiB tensors
    # in a child: this process stays small, so nothing of torch's is shared with the measured ones
    subprocess.run([sys.executable, "-c", MAKE, path, str(count), "1" if legacy else "0"], check=True)
    return count


def run(path, who):
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, path, who], capture_output=True, text=True, env=env, check=True)
    took, grew, n = out.stdout.split()
    return float(took), int(grew), int(n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--size-mb", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--legacy", action="store_true", help="the legacy (non-zip) format")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "big.pt")
        count = make(path, args.size_mb, args.legacy)
        size = os.path.getsize(path)
        times = {"ember": [], "torch": []}
        grew = {"ember": [], "torch": []}
        for _ in range(args.repeats):
            for who in ("ember", "torch"):
                t, g, n = run(path, who)
                assert n == count, (who, n, count)
                times[who].append(t)
                grew[who].append(g)
    e, t = statistics.median(times["ember"]), statistics.median(times["torch"])
    print(json.dumps({
        "bench": "pt_load", "format": "legacy" if args.legacy else "zip", "file_mb": round(size / 2 ** 20, 1),
        "tensors": count, "repeats": args.repeats,
        "ember_s": round(e, 3), "torch_s": round(t, 3), "speed_vs_torch": round(t / e, 2),
        "ember_rss_over_size": round(statistics.median(grew["ember"]) / size, 3),
        "torch_rss_over_size": round(statistics.median(grew["torch"]) / size, 3),
        "ember_runs_s": [round(x, 3) for x in times["ember"]], "torch_runs_s": [round(x, 3) for x in times["torch"]],
    }))


if __name__ == "__main__":
    main()
