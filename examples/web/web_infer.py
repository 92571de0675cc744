"""The page's Python (MicroPython-wasm): each model from its record with ember.micro, one prediction
per call. The page calls ``load(name)`` once, then ``predict(name, csv)`` (the CPU path) or
``predict_gpu(name, csv)`` (the GPU path: the same input, run by the JS bridge window.emberGpu on
the Wgpu backend's WGSL kernels). Inputs and answers cross as text: comma-separated numbers in, JSON out.
"""
import json
import math

from ember.micro import affine
from ember.micro.tensor import Arena, tensor, use

from preprocess import normalize

affine.LISTS = True  # weight rows as lists: faster, and the page has memory to spare
_MODELS = {}  # name -> (model, arena, input shape)
DIGIT_PIXELS = 64  # 8x8 counts 0..16 of on pixels in each 4x4 block of a 32x32 bitmap


def load(name):
    """Load model ``name`` ('digits' or 'shapes') from ``NAME_cnn.safetensors`` and its arena plan;
    returns its class names as JSON. A bad record raises ember's RecordError with the reason."""
    if name == "digits":
        from digits_cnn import DigitsCNN as cls
        classes = [str(i) for i in range(10)]
    elif name == "shapes":
        from shapes_cnn import CLASSES, ShapesCNN as cls
        classes = list(CLASSES)
    else:
        raise ValueError("load: expected 'digits' or 'shapes', found %r" % (name,))
    with open(name + "_plan.json") as f:
        plan = json.load(f)
    arena = Arena(plan)
    use(arena)
    model = cls().load(name + "_cnn.safetensors")
    _MODELS[name] = (model, arena, tuple(plan["input"]))
    return json.dumps(classes)


def model_input(name, csv):
    """The model's input values (a list of floats) from the page's numbers: 64 digit counts 0..16,
    or 16x16 grey values 0..255 (normalized as in training)."""
    values = [float(v) for v in csv.split(",")] if csv else []
    if name == "digits":
        if len(values) != DIGIT_PIXELS:
            raise ValueError("digits: expected %d pixel counts, found %d" % (DIGIT_PIXELS, len(values)))
        return [v / 16 for v in values]
    return normalize(values)


def softmax_json(logits):
    top = max(logits)
    e = [math.exp(v - top) for v in logits]
    s = sum(e)
    return json.dumps([v / s for v in e])


def predict(name, csv):
    """The CPU path: ember.micro's float32 kernels; the ten (or eight) probabilities as JSON."""
    if name not in _MODELS:
        raise ValueError("predict: model %r is not loaded" % (name,))
    model, arena, shape = _MODELS[name]
    x = tensor(model_input(name, csv), shape)
    use(arena)
    return softmax_json(model(x).tolist()[0])


async def predict_gpu(name, csv):
    """The GPU path: the bridge runs the model's recorded WGSL dispatches on navigator.gpu."""
    import js
    out = await js.emberGpu.run(name, ",".join([repr(v) for v in model_input(name, csv)]))
    return softmax_json([float(v) for v in str(out).split(",")])
