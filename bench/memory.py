"""Peak host memory of two cases from issue 14 (defect 9), each in a fresh process (peak RSS less the
RSS before the measured call), beside a reference in the same run:

- ``int8 sum``: ``x.sum()`` of an int8 tensor of N bytes on the Cpu, counting in int64 a chunk at a
  time (ember now) against casting the whole tensor first (ember before: ``ACCUMULATE_CHUNK`` set
  past N) and against PyTorch's ``torch.sum`` of the same int8 tensor.
- ``float16/bfloat16 record``: ``record.read`` of a file holding one tensor of N bytes into the
  Cpu, as a multiple of the file's size, beside float32 and beside PyTorch loading the same
  file with safetensors.

    .venv/bin/python bench/memory.py [--mb 100]
"""
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, os, resource, sys
case, mb, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
n = mb * 1000 * 1000

def rss():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024

def peak():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024

def reset_peak():
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")

import time
import ember
import ember.record
if case.startswith("sum"):
    from ember import reduction
    if case.startswith("sum-torch"):
        import torch
        x = torch.ones(n, dtype=torch.int8)
        run = lambda: int(x.sum())
    else:
        if case == "sum-whole":
            reduction.ACCUMULATE_CHUNK = n + 1  # ember before: one int64 copy of the whole tensor
        x = ember.ones(n, dtype=ember.int8, device=ember.Cpu())
        run = lambda: x.sum().item()
else:
    dtype = case.split("-")[1]
    if case.startswith("read-torch"):
        from safetensors.torch import load_file
        run = lambda: load_file(path)
    else:
        run = lambda: ember.record.read(path, device=ember.Cpu())
before = rss()
reset_peak()
t0 = time.perf_counter()
out = run()
took = time.perf_counter() - t0
print(json.dumps({"case": case, "peak_mb": (peak() - before) / 1e6, "seconds": took,
                  "result": out if type(out) is int else None}))
"""


def child(case, mb, path=""):
    env = dict(os.environ, EMBER_NUM_THREADS="1", OMP_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", CHILD, case, str(mb), path], env=env, capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def write_record(folder, dtype, mb):
    import ember
    import ember.record
    path = os.path.join(folder, "%s.safetensors" % dtype)
    dt = getattr(ember, dtype)
    n = mb * 1000 * 1000 // dt.itemsize
    x = ember.randn(n, generator=ember.Generator(0)).to(dt)
    ember.record.write(path, [("w", x)])
    return path


def main():
    mb = int(sys.argv[sys.argv.index("--mb") + 1]) if "--mb" in sys.argv else 100
    summary = {"mb": mb, "int8_sum_peak_mb": {}, "record_peak_vs_file": {}}
    print("int8 sum of %d MB on the Cpu (peak RSS above the tensor, MB):" % mb)
    for case in ("sum-chunked", "sum-whole", "sum-torch"):
        r = child(case, mb)
        summary["int8_sum_peak_mb"][case] = round(r["peak_mb"], 1)
        print("  %-12s %8.1f MB  %6.3f s  (sum %s)" % (case, r["peak_mb"], r["seconds"], r["result"]))
    rec_mb = max(mb // 10, 1)
    print("record.read of a %d MB file into the Cpu (peak RSS during the read / file size):" % rec_mb)
    with tempfile.TemporaryDirectory() as folder:
        for dtype in ("float16", "bfloat16", "float32"):
            path = write_record(folder, dtype, rec_mb)
            size = os.path.getsize(path) / 1e6
            for case in ("read-%s" % dtype, "read-torch-%s" % dtype):
                r = child(case, rec_mb, path)
                summary["record_peak_vs_file"][case] = round(r["peak_mb"] / size, 1)
                print("  %-20s %8.1f MB  %5.1fx the file  %6.3f s" % (case, r["peak_mb"], r["peak_mb"] / size,
                                                                   r["seconds"]))
    print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
