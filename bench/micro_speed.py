"""ember.micro's digits CNN (float32 as the web page runs it, int8 as boards do) on MicroPython:
this tree's ``ember.micro`` beside the one of an older commit (``--ref``, default HEAD), in the same
process, interleaved, medians, on the wasm port (node) and the unix port.

    .venv/bin/python bench/micro_speed.py [--ref REV] [--reps N] [--images N]

Needs the records ``make demo`` writes (examples/digits/artifacts: digits_cnn.safetensors, rp2040/).
The last line is one JSON object: ``<port>_<f32|i8>_ms_old``/``_new`` and ``_new_vs_old`` (old / new).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ART = os.path.join(ROOT, "examples", "digits", "artifacts")


def stage(ref):
    d = tempfile.mkdtemp(prefix="ember-micro-speed-")
    os.makedirs(os.path.join(d, "emold", "micro"))
    open(os.path.join(d, "emold", "__init__.py"), "w").close()
    names = subprocess.run(["git", "ls-tree", "--name-only", ref, "core_pure/micro/"], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.split()
    for n in names:
        src = subprocess.run(["git", "show", "%s:%s" % (ref, n)], cwd=ROOT, check=True, capture_output=True).stdout
        with open(os.path.join(d, "emold", "micro", os.path.basename(n)), "wb") as f:
            f.write(src)
    files = {"f32.safetensors": "digits_cnn.safetensors", "i8.safetensors": "rp2040/model.safetensors",
             "i8_plan.json": "rp2040/plan.json", "data.safetensors": "rp2040/data.safetensors"}
    for dst, src in files.items():
        p = os.path.join(ART, src)
        if not os.path.exists(p):
            sys.exit("micro_speed: %s is missing: run `make demo` first" % os.path.relpath(p, ROOT))
        shutil.copy(p, os.path.join(d, dst))
    web = os.path.join(ROOT, "build", "web", "digits_plan.json")
    if not os.path.exists(web):
        sys.exit("micro_speed: build/web/digits_plan.json is missing: run `make web` first")
    shutil.copy(web, os.path.join(d, "f32_plan.json"))
    shutil.copy(os.path.join(ROOT, "bench", "_micro_speed_mpy.py"), os.path.join(d, "bench_micro.py"))
    return d


def main():
    args = sys.argv[1:]
    opt = {"--ref": "HEAD", "--reps": "7", "--images": "20"}
    for i in range(0, len(args), 2):
        if args[i] not in opt or i + 1 >= len(args):
            sys.exit("micro_speed: expected --ref REV, --reps N or --images N, found %r" % args[i])
        opt[args[i]] = args[i + 1]
    d = stage(opt["--ref"])
    result = {"ref": opt["--ref"]}
    try:
        script = os.path.join(d, "bench_micro.py")
        for port, cmd in (("wasm", ["node", os.path.join(ROOT, "tests", "mpy", "run.mjs")]),
                          ("unix", [sys.executable, os.path.join(ROOT, "tests", "mpy", "run_unix.py")])):
            out = subprocess.run(cmd + ["--script", script, opt["--reps"], opt["--images"], "lists"], cwd=ROOT,
                                 capture_output=True, text=True)
            print("%s:\n%s" % (port, out.stdout + out.stderr))
            if out.returncode:
                sys.exit("micro_speed: the %s run failed" % port)
            for line in out.stdout.splitlines():
                if " ms/image median: " in line:
                    w = line.split()
                    result["%s_%s_ms_old" % (port, w[0])] = float(w[4])
                    result["%s_%s_ms_new" % (port, w[0])] = float(w[6])
                    result["%s_%s_new_vs_old" % (port, w[0])] = round(float(w[4]) / float(w[6]), 2)
    finally:
        shutil.rmtree(d)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
