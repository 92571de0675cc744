"""``make web``: the static site of examples/web/ built into a folder (default build/web/).

    python tools/web/build.py [OUT]

What the folder gets:
- the page (index.html, app.js, gpu.js, sw.js) and the Python it runs (web_infer.py, preprocess.py);
- MicroPython's WebAssembly port (micropython.mjs, micropython.wasm) from node_modules;
- ember's deployment runtime (``ember.micro`` and the ``ember.nn`` names over it, as .mpy from
  ``ember deploy --board wasm --precision float32``) and each model's definition and arena plan;
- the records: ``digits_cnn.safetensors`` as ``make demo`` trained it (the same file, trained here when
  missing) and ``shapes_cnn.safetensors`` (examples/web/train_shapes.py, trained here when missing);
- the WGSL kernels and dispatch list of each model for the GPU path, from the Wgpu backend itself
  (tools/web/gpu_plan.py); sample images for the classifier; files.json (every file and its size).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.path.join(ROOT, "examples", "web")
DIGITS = os.path.join(ROOT, "examples", "digits")
MICROPYTHON = os.path.join(ROOT, "node_modules", "@micropython", "micropython-webassembly-pyscript")
PAGE = ("index.html", "app.js", "gpu.js", "sw.js")
PYTHON = ("web_infer.py", "preprocess.py")
MODELS = {  # name: (model file, class, record, input shape, how to make a missing record)
    "digits": (os.path.join(DIGITS, "digits_cnn.py"), "DigitsCNN",
               os.path.join(DIGITS, "artifacts", "digits_cnn.safetensors"), (1, 8, 8),
               [os.path.join(ROOT, "examples", "train_digits.py")]),
    "shapes": (os.path.join(SITE, "shapes_cnn.py"), "ShapesCNN",
               os.path.join(SITE, "artifacts", "shapes_cnn.safetensors"), (1, 16, 16),
               [os.path.join(SITE, "train_shapes.py")]),
}


def _record(name, record, make):
    if not os.path.exists(record):
        print("web: %s is missing: %s" % (os.path.relpath(record, ROOT), " ".join(os.path.relpath(m, ROOT) for m in make)))
        subprocess.run([sys.executable] + make, check=True, cwd=ROOT)
    if not os.path.exists(record):
        sys.exit("web: %s did not write %s" % (make[0], record))


def _deploy(name, out, runtime_done, record=None):
    """ember deploy (float32, the wasm board) into a scratch folder; copy the runtime once, the model
    file and its plan always; the record is the trained file itself (or ``record``, a test's)."""
    from ember.accel.deploy import deploy
    path, cls, trained, shape, make = MODELS[name]
    if record is None:
        record = trained
        _record(name, record, make)
    scratch = tempfile.mkdtemp(prefix="ember-web-")
    try:
        bundle = os.path.join(scratch, "bundle")
        deploy("wasm", record, "%s:%s" % (path, cls), bundle, precision="float32", input_shape=shape,
               log=lambda text: None)
        module = os.path.basename(path)[:-3]
        shutil.copy(os.path.join(bundle, module + ".mpy"), out)
        shutil.copy(os.path.join(bundle, "plan.json"), os.path.join(out, name + "_plan.json"))
        os.remove(os.path.join(bundle, "ember", "micro", "run.mpy"))  # a board's main loop: the page has its own
        if not runtime_done:
            shutil.copytree(os.path.join(bundle, "ember"), os.path.join(out, "ember"))
        else:  # a second model may import ember.nn names the first did not
            for folder, _, files in os.walk(os.path.join(bundle, "ember")):
                for f in files:
                    dst = os.path.join(out, os.path.relpath(os.path.join(folder, f), bundle))
                    if not os.path.exists(dst):
                        os.makedirs(os.path.dirname(dst), exist_ok=True)
                        shutil.copy(os.path.join(folder, f), dst)
    finally:
        shutil.rmtree(scratch)
    shutil.copy(record, os.path.join(out, name + "_cnn.safetensors"))


def _mpy(src, dst):
    from ember.accel.deploy.run import mpy_cross_binary
    subprocess.run([mpy_cross_binary(), "-O2", "-o", dst, src], check=True)


def build(out, records=None, gpu=True):
    """The site in folder ``out`` (replaced); ``records``: {model name: record path} in place of the
    trained ones (the tests' own); ``gpu``: record the GPU plans (needs wgpu). Returns {file: bytes}."""
    records = records or {}
    if not os.path.exists(os.path.join(MICROPYTHON, "micropython.wasm")):
        sys.exit("web: MicroPython's wasm port is missing: run `make node_modules`")
    if os.path.isdir(out):
        shutil.rmtree(out)
    os.makedirs(out)
    for f in PAGE:
        shutil.copy(os.path.join(SITE, f), out)
    for f in PYTHON:
        _mpy(os.path.join(SITE, f), os.path.join(out, f[:-3] + ".mpy"))
    for f in ("micropython.mjs", "micropython.wasm"):
        shutil.copy(os.path.join(MICROPYTHON, f), out)
    for i, name in enumerate(MODELS):
        _deploy(name, out, i > 0, records.get(name))
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import samples
    samples.write(os.path.join(out, "samples"))
    try:
        if not gpu:
            raise ImportError("not asked for")
        import wgpu  # noqa: F401
    except ImportError as e:  # wgpu is optional: the page then offers the CPU path only, and says why
        print("web: no GPU plans (%s): the page will say so" % e)
    else:
        plan = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu_plan.py")
        for name, (path, cls, record, shape, _) in MODELS.items():
            subprocess.run([sys.executable, plan, path, cls, records.get(name, record), ",".join(map(str, shape)),
                            os.path.join(out, name + "_gpu.json")], check=True)
    files = {}
    for folder, _, names in os.walk(out):
        for f in names:
            p = os.path.join(folder, f)
            files[os.path.relpath(p, out)] = os.path.getsize(p)
    with open(os.path.join(out, "files.json"), "w") as f:
        json.dump(files, f, indent=0, sort_keys=True)
    return files


def main():
    out = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "web"))
    files = build(out)
    print("web: built %s: %d files, %.1f KB" % (os.path.relpath(out, ROOT), len(files), sum(files.values()) / 1024))


if __name__ == "__main__":
    main()
