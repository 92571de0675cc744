"""The embedded proof: a LeNet-5 record made on CPython loads and runs under MicroPython and
predicts the same classes.

``tests/golden/lenet.safetensors`` holds LeNet-5 (1x28x28 inputs, 61,706 parameters, saved at f16)
trained on a synthetic task: class k is prototype image k (drawn from
``ember.Generator(PROTOTYPE_SEED)``) plus noise. ``tests/golden/lenet.json`` holds the classes and
logits CPython computed for a batch of noisy prototypes of ``LABELS`` (noise from
``ember.Generator(INPUT_SEED)``). ``tests/golden/lenet_golden.py`` wrote both.

Under MicroPython (``node tests/mpy/run.mjs -k embedded``) the heap test prints the bytes
``gc.mem_alloc()`` grows by while ember is imported afresh, the model built and loaded, and one
inference runs. The WebAssembly port collects garbage only between calls into the interpreter, not
during a test run, so these are bytes allocated, garbage included: upper bounds. The unix port
(``python tests/mpy/run_unix.py -k embedded``) collects whenever its fixed heap is full.
``node tests/golden/lenet_heap.mjs`` measures the live heap, one step per call.
"""
import gc
import json
import sys

import ember
from harness.check import assert_close, assert_true

PROTOTYPE_SEED = 10
INPUT_SEED = 1
LABELS = (3, 8, 0, 5)
# the modules a board imports to run LeNet from a record
LENET_MODULES = ("ember.nn", "ember.nn.init", "ember.nn.conv", "ember.nn.pool", "ember.nn.activation",
                 "ember.nn.flatten", "ember.nn.linear", "ember.record")


def golden(name):
    here = __file__.replace("\\", "/").rsplit("/", 1)[0]  # .../tests/core
    return here.rsplit("/", 1)[0] + "/golden/" + name


def _import_all(names):
    for name in names:
        __import__(name)
    return sys.modules["ember"]


def lenet(em):
    """LeNet-5 as a Sequential (PyTorch's names: 0.weight, 3.weight, 7.weight, ...), built from the
    ember package ``em`` (the heap test passes a fresh import)."""
    _import_all(LENET_MODULES)
    nn = em.nn
    conv, pool, act, flat, lin = nn.conv, nn.pool, nn.activation, nn.flatten, nn.linear
    return nn.Sequential(
        conv.Conv2d(1, 6, 5, padding=2), act.ReLU(), pool.MaxPool2d(2),
        conv.Conv2d(6, 16, 5), act.ReLU(), pool.MaxPool2d(2),
        flat.Flatten(),
        lin.Linear(16 * 5 * 5, 120), act.ReLU(),
        lin.Linear(120, 84), act.ReLU(),
        lin.Linear(84, 10),
    )


def load_lenet(em):
    """The board's way: build without drawing weights, then read them from the record."""
    _import_all(LENET_MODULES)
    with em.nn.init.skip():
        model = lenet(em)
    report = model.load(golden("lenet.safetensors"))
    return model.eval(), report


def prototypes(em):
    return em.randn(10, 1, 28, 28, generator=em.Generator(PROTOTYPE_SEED))


def images(em):
    """Noisy examples of LABELS: the fixed test batch."""
    protos = prototypes(em)
    noise = em.randn(len(LABELS), 1, 28, 28, generator=em.Generator(INPUT_SEED))
    return em.stack([protos[k] for k in LABELS], 0) + noise


def expected():
    with open(golden("lenet.json")) as f:
        return json.load(f)


def test_lenet_record_predicts_the_golden_classes():
    want = expected()
    _import_all(LENET_MODULES)
    model, report = load_lenet(ember)
    assert_true(report.ok, repr(report))
    with ember.record.open(golden("lenet.safetensors")) as r:
        assert_true(r.metadata.get("ember_precision") == "f16" and r.entry("0.weight").dtype is ember.float16)
    assert_true(model[0].weight.dtype is ember.float32)
    logits = model(images(ember))
    classes = logits.argmax(1).tolist()
    assert_true(classes == want["classes"], "classes %s != %s" % (classes, want["classes"]))
    assert_true(classes == list(LABELS), "the trained model should recognize its prototypes: %s" % classes)
    assert_close(logits.tolist(), want["logits"], rtol=0, atol=1e-4)


def test_lenet_heap_on_a_board():
    if not hasattr(gc, "mem_alloc"):
        print("embedded LeNet: heap figures come from MicroPython's gc.mem_alloc (node tests/mpy/run.mjs -k embedded)")
        return
    lines, classes = _measure()
    for line in lines:
        print("embedded LeNet: " + line)
    assert_true(classes == expected()["classes"], "classes %s" % classes)


# what the figures mean depends on when the port collects garbage
_HEAP_NOTE = {
    "webassembly": "(bytes allocated, garbage included: this port collects only between calls; "
                   "node tests/golden/lenet_heap.mjs measures the live heap)",
    "fixed": "(growth of gc.mem_alloc(), net of the collections this port runs whenever its fixed heap "
             "is full: they depend on the heap size)",
}


def _measure():
    """Heap growth from a fresh import of ember (this run's ember modules are put back after)."""
    saved = {}
    for k in list(sys.modules):
        if k == "ember" or k.startswith("ember."):
            saved[k] = sys.modules.pop(k)
    try:
        gc.collect()
        base = gc.mem_alloc()
        em = _import_all(("ember",))
        core = gc.mem_alloc()
        _import_all(LENET_MODULES)
        modules = gc.mem_alloc()
        model, _ = load_lenet(em)
        loaded = gc.mem_alloc()
        x = images(em)
        before = gc.mem_alloc()
        peak, logits = _peak_during(em.default_device(), lambda: model(x))
        after = gc.mem_alloc()
        lines = [
            "allocated by import ember: %d bytes" % (core - base),
            "allocated by import %s: %d bytes" % (", ".join(LENET_MODULES[:-1]) + " and " + LENET_MODULES[-1],
                                                   modules - core),
            "allocated building and loading the model (%d parameters): %d bytes" % (model.num_params(),
                                                                                  loaded - modules),
            "allocated by one inference of %d images: %d bytes (largest primitive result: %d bytes)"
            % (len(LABELS), after - before, peak),
            _HEAP_NOTE.get(sys.platform, _HEAP_NOTE["fixed"]),
        ]
        return lines, logits.argmax(1).tolist()
    finally:
        for k in list(sys.modules):
            if k == "ember" or k.startswith("ember."):
                del sys.modules[k]
        for k in saved:
            sys.modules[k] = saved[k]


def _peak_during(device, fn):
    """(the largest heap growth of one backend primitive call, fn's result)."""
    names = sys.modules["ember.backend"].PRIMITIVES
    peak = [0]

    def sampled(primitive):
        def call(*args):
            start = gc.mem_alloc()
            out = primitive(*args)
            grew = gc.mem_alloc() - start
            if grew > peak[0]:
                peak[0] = grew
            return out
        return call

    for name in names:
        setattr(device, name, sampled(getattr(device, name)))
    try:
        result = fn()
    finally:
        for name in names:
            delattr(device, name)
    return peak[0], result
