"""``quantize``: a float model's Linear and Conv2d layers replaced by int8 ones, optionally calibrated."""
from .. import dtypes
from ..elementwise import isfinite
from ..errors import ArgumentError, ArgumentTypeError, EmberError
from ..nn.conv import Conv2d
from ..nn.linear import Linear
from ..nn.module import Module, ModuleDict, Sequential
from ..tensor import Tensor
from . import arith
from .layers import QuantConv2d, QuantLinear

OP = "quant.quantize"
FLOAT_LAYERS = ((Linear, QuantLinear), (Conv2d, QuantConv2d))


def quant_class(layer):
    """The quantized class for a float layer (or a quantized one's own class), else None."""
    for float_cls, q_cls in FLOAT_LAYERS:
        if type(layer) is float_cls or type(layer) is q_cls:
            return q_cls
    return None


def targets(model, layers, op):
    """[(name, layer)] to quantize: every Linear and Conv2d, or those named in ``layers``."""
    found = [(n, m) for n, m in model.named_modules() if n and quant_class(m) is not None]
    if layers is None:
        if not found:
            raise ArgumentError("%s: %s has no Linear or Conv2d layer to quantize" % (op, type(model).__name__))
        return found
    if type(layers) is str or type(layers) not in (list, tuple):
        raise ArgumentTypeError("%s: layers must be a list of module names, found %r" % (op, layers))
    by_name = {}
    for n, m in model.named_modules():
        by_name[n] = m
    out = []
    for n in layers:
        m = by_name.get(n)
        if m is None:
            raise ArgumentError("%s: %s has no layer %r (its Linear and Conv2d layers: %s)"
                                % (op, type(model).__name__, n, ", ".join([f for f, _ in found]) or "none"))
        if quant_class(m) is None:
            raise ArgumentError("%s: layer %r is a %s; only Linear and Conv2d are quantized"
                                % (op, n, type(m).__name__))
        out.append((n, m))
    if not out:
        raise ArgumentError("%s: layers is empty: name at least one Linear or Conv2d" % op)
    return out


class _Observer:
    """Wraps one layer's forward during calibration: the running max|input| and max|output|."""

    def __init__(self, layer):
        self.layer = layer
        self.inputs = None
        self.outputs = None
        self.last = None
        self.is_model_output = False
        self.forward = layer.forward
        self.own = layer.__dict__.get("forward")  # a forward set on the instance, put back afterwards

    def __call__(self, x, *args, **kwargs):
        y = self.forward(x, *args, **kwargs)
        self.inputs = _running_max(self.inputs, x)
        self.outputs = _running_max(self.outputs, y)
        self.last = y
        return y


def _running_max(current, t):
    m = t.to(dtypes.float32).abs().max()
    return m if current is None else current.maximum(m)


def _batches(calibration):
    try:
        return iter(calibration)
    except TypeError:
        raise ArgumentTypeError("%s: calibration must be an iterable of input tensors, found %s"
                                % (OP, type(calibration).__name__))


def calibrate(model, named_layers, calibration):
    """Run ``calibration`` through ``model`` (eval mode): an observer per layer, with its input and
    output maxima and whether its output was the model's output."""
    observers = [(n, _Observer(m)) for n, m in named_layers]
    for _, o in observers:
        object.__setattr__(o.layer, "forward", o)  # an instance attribute shadows the method
    count = 0
    try:
        for i, batch in enumerate(_batches(calibration)):
            args = tuple(batch) if type(batch) in (tuple, list) else (batch,)
            for a in args:
                if type(a) is not Tensor:
                    raise ArgumentTypeError("%s: calibration batch %d holds a %s, expected tensors"
                                            % (OP, i, type(a).__name__))
            try:
                out = model(*args)
            except EmberError as e:
                raise type(e)("%s: calibration batch %d (input shape %s) does not fit %s: %s"
                              % (OP, i, ", ".join([str(a.shape) for a in args]), type(model).__name__, e))
            returned = out if type(out) in (tuple, list) else (out,)
            for _, o in observers:
                for r in returned:
                    if o.last is not None and r is o.last:
                        o.is_model_output = True
                o.last = None
            count += 1
    finally:
        for _, o in observers:
            if o.own is None:
                object.__delattr__(o.layer, "forward")
            else:
                object.__setattr__(o.layer, "forward", o.own)
    if not count:
        raise ArgumentError("%s: calibration gave no batches" % OP)
    for n, o in observers:
        if o.inputs is None:
            raise ArgumentError("%s: layer %r never ran during calibration (is it used in forward?)" % (OP, n))
        for what, m in (("input", o.inputs), ("output", o.outputs)):
            v = m.item()
            if not v < float("inf"):
                raise ArgumentError("%s: layer %r saw a non-finite %s (max|%s| = %r) during calibration"
                                    % (OP, n, what, what, v))
    return observers


def replace(model, old, new):
    """Put ``new`` wherever ``model``'s tree holds ``old`` (every name a shared layer has)."""
    for _, m in model._walk(unique=False):
        for name, child in m._items():
            if child is old:
                _set_child(m, name, new)


def _set_child(m, name, new):
    if isinstance(m, Sequential) and name.isdigit():
        m[int(name)] = new
    elif isinstance(m, ModuleDict) and name in m:
        m[name] = new
    elif "." in name:  # an item of a list, tuple or dict attribute ("blocks.0")
        attr, key = name.split(".", 1)
        container = getattr(m, attr)
        if type(container) is dict:
            for k in list(container):
                if str(k) == key:
                    container[k] = new
        elif type(container) is list:
            container[int(key)] = new
        else:
            items = list(container)
            items[int(key)] = new
            setattr(m, attr, tuple(items))
    else:
        setattr(m, name, new)


def quantize(model, calibration=None, layers=None):
    """A quantized copy of ``model``: every ``Linear`` and ``Conv2d`` (or those named in ``layers``)
    becomes a ``QuantLinear``/``QuantConv2d`` with int8 weights, symmetric per output channel.

    Without ``calibration`` the weights alone are int8 (activations stay float). With it (an
    iterable of input tensors, or of tuples of the model's inputs; ~200 training samples), the float
    model runs them in eval mode and each layer gets a static ``input_scale`` (max|input| / 127) and,
    unless its output is what the model returns, an ``output_scale``. ``model`` itself is not
    changed: it stays the float reference to compare with.

    >>> qmodel = ember.quant.quantize(model, calibration=[x[:100], x[100:200]])
    >>> ember.quant.save(qmodel, "model-int8.safetensors")
    """
    if not isinstance(model, Module):
        raise ArgumentTypeError("%s: expected a Module, found %s" % (OP, type(model).__name__))
    named = targets(model, layers, OP)
    for n, m in named:
        if type(m) in (QuantLinear, QuantConv2d):
            raise ArgumentError("%s: layer %r is already quantized" % (OP, n))
        for name in ("weight", "bias"):
            t = getattr(m, name)
            if t is not None and t.dtype.kind != "f":
                raise ArgumentError("%s: %s.%s is %s, expected a float tensor" % (OP, n, name, t.dtype.name))
            if t is not None and not isfinite(t).all().item():
                raise ArgumentError("%s: %s.%s holds nan or inf; int8 scales need finite weights" % (OP, n, name))
    scales = {}
    if calibration is not None:
        was_training = model.training
        model.eval()
        try:
            for n, o in calibrate(model, named, calibration):
                out = None if o.is_model_output else arith.scale_from_max(o.outputs)
                scales[n] = (arith.scale_from_max(o.inputs), out)
        finally:
            model.train(was_training)
    qmodel = model.deepcopy()
    copies = dict(qmodel.named_modules())
    for n, _ in named:
        layer = copies[n]
        input_scale, output_scale = scales.get(n, (None, None))
        replace(qmodel, layer, quant_class(layer).from_float(layer, input_scale, output_scale))
    return qmodel
