"""ember on a microcontroller's heap: the digits CNN and LeNet-5, int8 and float32, deployed with
``ember deploy`` and run on MicroPython's unix port with a fixed heap.

    .venv/bin/python bench/boards.py [--quick]

For each model and precision: the smallest ``-X heapsize`` with which the bundle classifies every
input (binary search, 1 KB steps; the heap is fixed, so fragmentation counts as on a board), the
live heap after load and at its peak (``gc.collect(); gc.mem_alloc()``), the bundle's flash bytes,
and the time per image on the unix port beside CPython running the same bundle (the reference,
in the same run). Also the heap of ``import ember`` plus the deployment subset a model imports, as
``.mpy`` on the unix port, beside the full ember core's ``import ember`` (``.py`` sources, as the
core is copied to a board today). Accuracy: the deployed int8 digits against float32 on the 359
held-out digits (calibrated on 200 training digits).

The digits record comes from ``examples/train_digits.py`` (``make demo``), which this script runs
first when the record is missing; LeNet-5 is ``tests/golden/lenet.safetensors`` with
``examples/lenet/lenet5.py``. The reference beside the bundles: the full core (as ``.py``, pure
Cpu): its ``import ember``, the models loaded, and the smallest heap with which
``examples/digits/classify.py`` classifies the digits. ``--quick``: LeNet on 5 inputs instead of 20
and no classify.py search. The last line is JSON.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests"))

import ember  # noqa: E402
from ember import record  # noqa: E402
from ember.accel.deploy import deploy  # noqa: E402
from ember.accel.deploy.run import micropython_binary, parse_output  # noqa: E402

DIGITS_RECORD = os.path.join(ROOT, "examples", "digits", "artifacts", "digits_cnn.safetensors")
HELDOUT = os.path.join(ROOT, "examples", "digits", "artifacts", "heldout.safetensors")
DIGITS_MODEL = os.path.join(ROOT, "examples", "digits", "digits_cnn.py") + ":DigitsCNN"
LENET_RECORD = os.path.join(ROOT, "tests", "golden", "lenet.safetensors")
LENET_MODEL = os.path.join(ROOT, "examples", "lenet", "lenet5.py") + ":LeNet5"
GOALS_KB = {"digits_int8": 64, "digits_f32": 128, "lenet_int8": 190000 / 1024.0, "deploy_subset": 24}


def digits_data(folder):
    """(heldout inputs record, calibration record): the held-out digits as the model sees them, and
    200 digits of the training split (the split examples/train_digits.py makes)."""
    if not os.path.exists(DIGITS_RECORD):
        print("no trained digits record: running examples/train_digits.py first (make demo does too)")
        subprocess.run([sys.executable, os.path.join(ROOT, "examples", "train_digits.py")], check=True)
    from ember.accel.data import load_digits
    with record.open(HELDOUT) as r:
        images, labels = r.read("images"), r.read("labels")
    heldout = os.path.join(folder, "digits_heldout.safetensors")
    record.write(heldout, [("inputs", images.to(ember.float32).unsqueeze(1) / 16), ("labels", labels)])
    rest, _ = load_digits().split(0.2, seed=0, stratify=True)
    train, _ = rest.split(0.1, seed=1, stratify=True)
    x, _ = train.get_batch(range(200))
    calib = os.path.join(folder, "digits_calibration.safetensors")
    record.write(calib, [("inputs", ember.tensor(x.tobytes(), dtype=ember.float32, shape=x.shape))])
    return heldout, calib


def lenet_data(folder, n):
    """Noisy prototypes of each class (the task the golden LeNet learned), and 64 more to calibrate."""
    from core.test_embedded_lenet import prototypes
    protos = prototypes(ember)
    paths = []
    for name, count, seed in (("lenet_inputs", n, 7), ("lenet_calibration", 64, 8)):
        labels = [k % 10 for k in range(count)]
        noise = ember.randn(count, 1, 28, 28, generator=ember.Generator(seed))
        x = ember.stack([protos[k] for k in labels], 0) + noise
        path = os.path.join(folder, name + ".safetensors")
        record.write(path, [("inputs", x), ("labels", ember.tensor(labels, dtype=ember.int32))])
        paths.append(path)
    return paths


# A board maps a ROMFS partition into memory; the unix port has none, so this mounts the bundle's
# romfs.img from a bytes object read first (one block at the start of the heap) and the heap
# figures are given less the image's size: what the same run needs beside a ROM partition.
ROMFS_MAIN = """import sys, vfs
f = open("romfs.img", "rb")
image = f.read()
f.close()
vfs.mount(vfs.VfsRom(image), "/rom")
sys.path.insert(0, "/rom")
exec(open("main.py").read())
"""


def run_bundle(bundle, heap_bytes, romfs=False):
    """(ok, output) of the bundle's main.py on the unix port with a fixed heap; with ``romfs``, its
    code, weights and plan from romfs.img (nothing of them on the module path)."""
    script = "main.py"
    if romfs:
        script = "_romfs_main.py"
        with open(os.path.join(bundle, script), "w") as f:
            f.write(ROMFS_MAIN)
    env = dict(os.environ, MICROPYPATH=".frozen" if romfs else bundle)
    proc = subprocess.run([micropython_binary(), "-X", "heapsize=%d" % heap_bytes, script], cwd=bundle, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=900)
    return proc.returncode == 0 and "\ncorrect " in proc.stdout, proc.stdout


def smallest_heap_kb(bundle, lo_kb=8, hi_kb=4096, romfs=False):
    """The smallest heap (KB) with which the bundle classifies all its inputs."""
    ok, _ = run_bundle(bundle, hi_kb * 1024, romfs)
    if not ok:
        return None
    while lo_kb < hi_kb:
        mid = (lo_kb + hi_kb) // 2
        if run_bundle(bundle, mid * 1024, romfs)[0]:
            hi_kb = mid
        else:
            lo_kb = mid + 1
    return hi_kb


def import_heap_kb(folder, module, path):
    """Heap of ``import ember`` and of importing ``module`` (with what it imports) on the unix port."""
    script = ("import gc\ngc.collect(); a = gc.mem_alloc()\nimport ember\ngc.collect(); b = gc.mem_alloc()\n"
              "%s\ngc.collect(); c = gc.mem_alloc()\nprint(b - a, c - a)\n" % (
                  ("import " + module) if module else "pass"))
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        proc = subprocess.run([micropython_binary(), "-X", "heapsize=8M", f.name], cwd=folder,
                              env=dict(os.environ, MICROPYPATH=path), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=300)
    finally:
        os.remove(f.name)
    parts = proc.stdout.split()
    if proc.returncode != 0 or len(parts) != 2:
        raise RuntimeError("import measurement failed:\n" + proc.stdout)
    return int(parts[0]) / 1024.0, int(parts[1]) / 1024.0


def romfs_import_kb(bundle, module):
    """Heap of importing the model (ember + its deployment subset) from the bundle's ROMFS image,
    less nothing: the image itself is allocated before the first reading."""
    script = ("import gc, sys, vfs\nf = open('romfs.img', 'rb')\nimage = f.read()\nf.close()\n"
              "vfs.mount(vfs.VfsRom(image), '/rom')\nsys.path.insert(0, '/rom')\n"
              "gc.collect(); a = gc.mem_alloc()\nimport %s\ngc.collect(); print(gc.mem_alloc() - a)\n" % module)
    path = os.path.join(bundle, "_romfs_import.py")
    with open(path, "w") as f:
        f.write(script)
    proc = subprocess.run([micropython_binary(), "-X", "heapsize=8M", path], cwd=bundle,
                          env=dict(os.environ, MICROPYPATH=".frozen"), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("ROMFS import measurement failed:\n" + proc.stdout)
    return int(proc.stdout.split()[-1]) / 1024.0


def _full_core(folder):
    lib = os.path.join(folder, "lib")
    os.makedirs(lib, exist_ok=True)
    link = os.path.join(lib, "ember")
    if not os.path.exists(link):
        os.symlink(os.path.join(ROOT, "core_pure"), link)
    return lib


def full_core_import_kb(folder):
    """``import ember`` of the whole core as .py, the way core_pure/ is copied to a board."""
    return import_heap_kb(folder, None, _full_core(folder))[0]


def full_core_loaded_kb(folder, model, weights):
    """Live heap with the float model built by the full core under ``init.skip()`` (no random draw)
    and loaded, as ``.py`` on the pure-Python Cpu: the reference the deployment runtime replaces."""
    path, cls = model.split(":")
    script = "\n".join([
        "import gc, sys", "sys.path.insert(0, %r)" % os.path.dirname(path), "import ember", "from ember.nn import init",
        "from %s import %s" % (os.path.basename(path)[:-3], cls),
        "with init.skip():", "    m = %s()" % cls, "m.load(%r)" % weights, "gc.collect()", "print(gc.mem_alloc())", ""])
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(script)
    try:
        proc = subprocess.run([micropython_binary(), "-X", "heapsize=64M", f.name], cwd=folder,
                              env=dict(os.environ, MICROPYPATH=_full_core(folder)), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=600)
    finally:
        os.remove(f.name)
    if proc.returncode != 0:
        raise RuntimeError("full-core measurement failed:\n" + proc.stdout)
    return int(proc.stdout.split()[-1]) / 1024.0


def full_core_classify_min_kb(folder):
    """The smallest heap with which ``examples/digits/classify.py`` (the full core on the pure Cpu,
    batches of 40, as ``make demo`` runs it on the wasm port) classifies the 359 digits: the path
    the deployment runtime replaces on a board."""
    lib = _full_core(folder)
    app = os.path.join(ROOT, "examples", "digits")

    def ok(kb):
        proc = subprocess.run([micropython_binary(), "-X", "heapsize=%dK" % kb, os.path.join(app, "classify.py")],
                              cwd=folder, env=dict(os.environ, MICROPYPATH=lib + ":" + app), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=900)
        return proc.returncode == 0 and "correct: " in proc.stdout
    lo, hi = 64, 1024
    while not ok(hi):
        lo, hi = hi, hi * 4
        if hi > 1 << 20:
            return None
    while hi - lo > 8:  # 8 KB steps: each try classifies all 359 digits
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi


def main():
    quick = "--quick" in sys.argv[1:]
    work = tempfile.mkdtemp(prefix="ember-bench-boards-")
    heldout, calib = digits_data(work)
    lenet_inputs, lenet_calib = lenet_data(work, 5 if quick else 20)
    cases = [
        ("digits_int8", DIGITS_RECORD, DIGITS_MODEL, "int8", calib, heldout),
        ("digits_f32", DIGITS_RECORD, DIGITS_MODEL, "float32", None, heldout),
        ("lenet_int8", LENET_RECORD, LENET_MODEL, "int8", lenet_calib, lenet_inputs),
        ("lenet_f32", LENET_RECORD, LENET_MODEL, "float32", None, lenet_inputs),
    ]
    rows, out = [], {}
    for name, weights, model, precision, calibration, data in cases:
        bundle = os.path.join(work, name)
        report = deploy("unix", weights, model, bundle, precision=precision, calibration=calibration, data=data,
                        log=lambda s: None)
        ok, text = run_bundle(bundle, 190000)  # the rp2040's heap, when it fits there
        if not ok:
            ok, text = run_bundle(bundle, 4 * 1024 * 1024)
        got = parse_output(text, name)
        f = {"live_after_load_kb": got["heap_after_load"] / 1024.0, "live_peak_kb": got["heap_peak"] / 1024.0,
             "ms_per_image": got["ms_per_image"], "correct": "%d/%d" % (got["correct"], len(got["predictions"]))}
        floor_kb = int(f["live_peak_kb"])  # a heap below the live peak cannot work
        min_kb = smallest_heap_kb(bundle, lo_kb=floor_kb)
        module = os.path.basename(model.split(":")[0])[:-3]
        _, subset_kb = import_heap_kb(bundle, module, bundle)
        if report.get("romfs_bytes"):
            image_kb = report["romfs_bytes"] / 1024.0
            rom_kb = smallest_heap_kb(bundle, lo_kb=int(image_kb) + 8, romfs=True)
            rom = {"romfs_kb": image_kb, "romfs_min_heap_kb": None if rom_kb is None else rom_kb - image_kb,
                   "romfs_subset_heap_kb": romfs_import_kb(bundle, module)}
        else:
            rom = {"romfs_kb": None, "romfs_min_heap_kb": None, "romfs_subset_heap_kb": None}
        row = {"min_heap_kb": min_kb, "flash_kb": report["flash_bytes"] / 1024.0, "subset_heap_kb": subset_kb,
               "cpython_ms_per_image": report["cpython_ms_per_image"], "correct": f.get("correct"),
               "accuracy_pt": report.get("deployed_accuracy_pt"), "f32_accuracy_pt": report.get("float32_accuracy_pt")}
        row.update(f)
        row.update(rom)
        rows.append((name, row))
        for k, v in row.items():
            out["%s_%s" % (name, k)] = round(v, 3) if type(v) is float else v
    full_kb = full_core_import_kb(work)
    for name, weights, model in (("digits", DIGITS_RECORD, DIGITS_MODEL), ("lenet", LENET_RECORD, LENET_MODEL)):
        out["full_core_%s_loaded_heap_kb" % name] = round(full_core_loaded_kb(work, model, weights), 3)
    out["full_core_digits_classify_min_heap_kb"] = None if quick else full_core_classify_min_kb(work)
    out["deploy_subset_heap_kb"] = out["digits_int8_subset_heap_kb"]
    out["full_core_import_heap_kb"] = round(full_kb, 3)
    out["digits_int8_accuracy_drop_pt"] = round(out["digits_f32_accuracy_pt"] - out["digits_int8_accuracy_pt"], 3)
    print("MicroPython unix port (%s), fixed heap; CPython runs the same bundle as the reference" % micropython_binary())
    print("%-12s %9s %9s %9s %8s %10s %10s %9s %s" % ("bundle", "min heap", "live", "peak", "flash", "ms/image",
                                                      "CPython ms", "import", "correct"))
    for name, r in rows:
        print("%-12s %7s KB %6.1f KB %6.1f KB %5.1f KB %10.2f %10.2f %6.1f KB %s" % (
            name, r["min_heap_kb"], r["live_after_load_kb"], r["live_peak_kb"], r["flash_kb"],
            r["ms_per_image"], r["cpython_ms_per_image"], r["subset_heap_kb"], r["correct"]))
    print("the same bundles from romfs.img (code run and int8 weights read in place, as from a board's ROM "
          "partition; heap less the image):")
    for name, r in rows:
        if r["romfs_kb"] is not None:
            print("%-12s min heap %s KB beside a %.1f KB image; import ember + subset %.1f KB" % (
                name, "%.0f" % r["romfs_min_heap_kb"] if r["romfs_min_heap_kb"] is not None else "-", r["romfs_kb"],
                r["romfs_subset_heap_kb"]))
    print("import ember + the digits model's deployment subset as .mpy: %.1f KB (goal <= %d KB); the full core's "
          "import ember as .py: %.1f KB" % (out["deploy_subset_heap_kb"], GOALS_KB["deploy_subset"], full_kb))
    print("the full core (.py, pure Cpu, float32) with the model built under init.skip() and loaded: digits %.1f KB, "
          "LeNet-5 %.1f KB live (against ember.micro's live after load above)" % (
              out["full_core_digits_loaded_heap_kb"], out["full_core_lenet_loaded_heap_kb"]))
    if out["full_core_digits_classify_min_heap_kb"]:
        print("the full core classifying the 359 digits as examples/digits/classify.py does (batches of 40): "
              "smallest heap %d KB" % out["full_core_digits_classify_min_heap_kb"])
    print("digits int8 accuracy %.2f%% vs float32 %.2f%%: drop %.2f points (goal <= 0.5)" % (
        out["digits_int8_accuracy_pt"], out["digits_f32_accuracy_pt"], out["digits_int8_accuracy_drop_pt"]))
    for key, goal in (("digits_int8", 64), ("digits_f32", 128), ("lenet_int8", 190000 / 1024.0)):
        got = out["%s_min_heap_kb" % key]
        print("goal %s: min heap %s KB, goal <= %.0f KB: %s" % (key, got, goal, "met" if got and got <= goal else "MISSED"))
    print(json.dumps(out, sort_keys=True))


if __name__ == "__main__":
    main()
