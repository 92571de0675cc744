"""Running a deployed bundle: load the record and the plan, then classify inputs read one at a time
from a record of ``inputs`` (float32, (N, ...)) and optional ``labels`` (int32, (N,)).

A bundle's ``main.py`` is three lines over this module::

    from digits_cnn import DigitsCNN
    from ember.micro import run
    run.main(DigitsCNN())

Output, one line each: ``y INDEX PREDICTION LOGITS...`` per input, then ``heap ...``, ``time ...``
and ``correct ...`` (what ``ember deploy --check`` compares with CPython's run).
"""
import gc
import sys
import time

from .tensor import Arena, RecordError, scratch, tensor, use


def load(model, weights="model.safetensors", plan="plan.json"):
    """``model`` with its tensors from ``weights`` and the arena of ``plan``; returns the model."""
    import json
    with open(plan) as f:
        p = json.load(f)
    model.input_shape = tuple(p["input"])
    # an arena larger than a few weight blocks is taken first, while the heap is in one piece; a
    # small one after the weights, where it fits a hole their loading left (measured: bench/boards.py)
    early = 4 * p["f"] + p["b"] > 4096
    if early:
        use(Arena(p))
    model.load(weights)
    if not early:
        use(Arena(p))
    return model


def forget_loader():
    """Free the record reader's code: a board needs it only at start-up."""
    package = __name__.rsplit(".", 1)[0]
    if package + ".record" in sys.modules:
        del sys.modules[package + ".record"]
    parent = sys.modules.get(package)
    if parent is not None and "record" in parent.__dict__:
        delattr(parent, "record")  # importing a submodule also made it an attribute of its package
    gc.collect()


class Inputs:
    """A record of ``inputs`` (float32, (N, ...)) and optional ``labels`` (int32, (N,)), read one
    input at a time into ``x`` (a (1, ...) tensor)."""

    def __init__(self, path):
        f = self.file = open(path, "rb")
        try:
            self._open(f, path)
        except Exception:
            f.close()
            raise

    def _open(self, f, path):
        from .record import check, header, read
        f.seek(0, 2)
        size = f.tell()
        f.seek(0)
        h, base = header(f, path, size)
        e = h.get("inputs")
        if type(e) is not dict or e.get("dtype") != "F32" or type(e.get("shape")) is not list or not e["shape"]:
            raise RecordError("%s: expected a float32 tensor 'inputs' (N, ...)" % path)
        # shape and offsets checked against the file's size before the input buffer is made
        _, _, shape, count, self.start = check(path, "inputs", e, base, size)
        self.count = shape[0]
        self.size = count // self.count if self.count else 0
        self.labels = None
        if "labels" in h:
            self.labels, got = read(f, path, "labels", h["labels"], base, size)
            if got != (self.count,) or h["labels"]["dtype"] != "I32":
                raise RecordError("%s: 'labels' must be int32 of shape (%d,), found %s %s"
                                  % (path, self.count, h["labels"]["dtype"], got))
        self.x = tensor(scratch("f", self.size), (1,) + tuple(shape[1:]))

    def read(self, i):
        self.file.seek(self.start + 4 * self.size * i)
        self.file.readinto(self.x.data)
        return self.x

    def close(self):
        self.file.close()


def _now_us():
    if hasattr(time, "ticks_us"):
        return time.ticks_us()
    return int(time.perf_counter() * 1000000)


def _since_us(t0):
    if hasattr(time, "ticks_diff"):
        return time.ticks_diff(time.ticks_us(), t0)
    return _now_us() - t0


def _heap():
    gc.collect()
    return gc.mem_alloc() if hasattr(gc, "mem_alloc") else 0


def classify(model, data, out=print):
    """Run ``model`` on every input of ``data`` (``Inputs``); a line per input; (correct, total)."""
    correct, peak, spent, labels = 0, 0, 0, data.labels
    for i in range(data.count):
        x = data.read(i)
        t0 = _now_us()
        y = model(x)
        spent += _since_us(t0)
        logits = y.tolist()[0] if len(y.shape) > 1 else y.tolist()
        pred = y.argmax()
        out("y %d %d %s" % (i, pred, " ".join(["%.7g" % v for v in logits])))
        if labels is not None and labels[i] == pred:
            correct += 1
        peak = max(peak, _heap())
    out("heap %d bytes live after an image (peak)" % peak)
    out("time %.3f ms per image" % (spent / 1000 / max(data.count, 1)))
    if labels is not None:
        out("correct %d/%d" % (correct, data.count))
    return correct, data.count


def _beside(model, name):
    """``name`` next to the model's module when it is there (a ROMFS image mounted at /rom holds
    the weights and plan with the code), else as given (the current folder)."""
    path = getattr(sys.modules.get(type(model).__module__), "__file__", "")
    if "/" in path:
        candidate = path.rsplit("/", 1)[0] + "/" + name
        try:
            open(candidate, "rb").close()
            return candidate
        except OSError:
            pass
    return name


def main(model, weights="model.safetensors", plan="plan.json", data="data.safetensors"):
    """What a bundle's ``main.py`` calls: load, report the heap, classify ``data`` if present."""
    impl = sys.implementation
    print("ember-micro on %s %s" % (impl.name, ".".join([str(v) for v in impl.version[:3]])))
    print("ember from %s" % getattr(sys.modules.get("ember"), "__file__", "?"))
    print("heap %d bytes live after import" % _heap())
    load(model, _beside(model, weights), _beside(model, plan))
    try:
        inputs = Inputs(data)
    except OSError:
        inputs = None
    forget_loader()
    print("heap %d bytes live after load" % _heap())
    if inputs is not None:
        try:
            classify(model, inputs)
        finally:
            inputs.close()
    return model
