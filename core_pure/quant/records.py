"""Quantized records: ``save`` writes a quantized model, ``load`` rebuilds one from a float model.

The layout is a contract (docs/architecture.md, "Quantized records"): per quantized layer at path
``p``, ``p.weight`` I8 in PyTorch's layout, ``p.weight_scale`` F32 ``[out]``, ``p.bias`` F32 when
the layer has one, ``p.input_scale`` and ``p.output_scale`` F32 ``[]`` when present; the metadata
holds ``ember_precision: "int8"`` and ``ember_quantization``, a JSON object naming the scheme and
the layers.
"""
import json

from .. import record
from ..errors import ArgumentError, ArgumentTypeError
from ..nn.module import Module
from ..record import format as fmt
from . import arith
from .convert import quant_class, replace
from .layers import QuantConv2d, QuantLinear

QUANTIZATION_KEY = "ember_quantization"
PRECISION = "int8"
SCHEME = "symmetric"
WEIGHTS = "int8-per-channel"
ACTIVATIONS = ("int8", "float")


def quantized_layers(model):
    """[(name, layer)] of the quantized layers of ``model``, in module order."""
    return [(n, m) for n, m in model.named_modules() if type(m) in (QuantLinear, QuantConv2d)]


def describe(model, op="quant.save"):
    """The ``ember_quantization`` JSON text for a quantized model (keys in a fixed order: dicts have
    none on MicroPython)."""
    layers = quantized_layers(model)
    if not layers:
        raise ArgumentError("%s: %s has no quantized layer (make one with ember.quant.quantize)"
                            % (op, type(model).__name__))
    with_scales = [n for n, m in layers if m.activations]
    if with_scales and len(with_scales) != len(layers):
        raise ArgumentError("%s: activations are quantized in %s but not in %s; a record holds one or the other"
                            % (op, ", ".join(with_scales), ", ".join([n for n, m in layers if not m.activations])))
    return '{"scheme": "%s", "weights": "%s", "activations": "%s", "layers": [%s]}' % (
        SCHEME, WEIGHTS, "int8" if with_scales else "float", ", ".join([fmt.json_string(n) for n, _ in layers]))


def save(model, path):
    """Write a quantized model (from ``quantize`` or ``load``) to a safetensors record at ``path``.

    >>> ember.quant.save(qmodel, "digits-int8.safetensors")
    """
    if not isinstance(model, Module):
        raise ArgumentTypeError("quant.save: expected a Module, found %s" % type(model).__name__)
    metadata = {"ember_module": type(model).__name__, QUANTIZATION_KEY: describe(model)}
    config = model.__dict__.get("_config")
    if config is not None:
        metadata["ember_config"] = config.to_json()
    record.write(path, model.named_tensors(), metadata=metadata, precision=PRECISION)


def parse(text, path, op="quant.load"):
    """``(activations, [layer names])`` from the ``ember_quantization`` text, or a RecordError."""
    if text is None:
        raise fmt.error(op, path, "no %r in the metadata: not a record written by ember.quant.save" % QUANTIZATION_KEY)
    try:
        info = json.loads(text)
    except ValueError as e:
        raise fmt.error(op, path, "%r is not valid JSON (%s): %r" % (QUANTIZATION_KEY, e, text[:80]))
    if type(info) is not dict:
        raise fmt.error(op, path, "%r is not a JSON object: %r" % (QUANTIZATION_KEY, text[:80]))
    for key, want in (("scheme", (SCHEME,)), ("weights", (WEIGHTS,)), ("activations", ACTIVATIONS)):
        if info.get(key) not in want:
            raise fmt.error(op, path, "%s %r of %r is not one this ember reads (%s)"
                            % (key, info.get(key), QUANTIZATION_KEY, " or ".join(["%r" % w for w in want])))
    layers = info.get("layers")
    if type(layers) is not list or not layers or [n for n in layers if type(n) is not str]:
        raise fmt.error(op, path, "'layers' of %r must be a non-empty list of module names, found %r"
                        % (QUANTIZATION_KEY, layers))
    if len(set(layers)) != len(layers):
        raise fmt.error(op, path, "'layers' of %r names a layer twice: %r" % (QUANTIZATION_KEY, layers))
    return info["activations"], layers


def _check_entries(reader, name, layer, activations, op):
    """Whether the record gives layer ``name`` an output_scale; a RecordError for anything that does
    not fit the float layer's shape or the scheme."""
    path = reader.path
    out = layer.weight.shape[0]
    checks = [("weight", "I8", layer.weight.shape), ("weight_scale", "F32", (out,))]
    if activations == "int8":
        checks.append(("input_scale", "F32", ()))
    elif name + ".input_scale" in reader:
        raise fmt.error(op, path, "%s.input_scale is in the record, but its activations are 'float'" % name)
    has_output = name + ".output_scale" in reader
    if has_output:
        if activations != "int8":
            raise fmt.error(op, path, "%s.output_scale is in the record, but its activations are 'float'" % name)
        checks.append(("output_scale", "F32", ()))
    for suffix, file_dtype, shape in checks:
        key = name + "." + suffix
        if key not in reader:
            raise fmt.error(op, path, "missing %s: a quantized %s needs it" % (key, type(layer).__name__))
        e = reader.entry(key)
        if e.file_dtype != file_dtype or e.shape != tuple(shape):
            raise fmt.error(op, path, "%s is %s %s, expected %s %s" % (key, e.file_dtype, list(e.shape), file_dtype,
                                                                     list(shape)))
        bad = arith.bad_scale(reader.read(key)) if suffix != "weight" else None
        if bad is not None:
            raise fmt.error(op, path, "%s holds %r; a scale must be finite and > 0" % (key, bad))
    return has_output


def _empty_twin(layer, activations, has_output):
    """A zero quantized layer shaped like ``layer`` (float or quantized), on its device."""
    device = layer.weight.device
    bias = layer.bias is not None
    if quant_class(layer) is QuantLinear:
        return QuantLinear(layer.in_features, layer.out_features, bias, activations, has_output, device)
    return QuantConv2d(layer.in_channels, layer.out_channels, layer.kernel_size, layer.stride, layer.padding,
                       layer.dilation, layer.groups, bias, activations, has_output, device)


def load(model, path):
    """``model`` (a float model, ideally built under ``ember.nn.init.skip()``) with the layers a
    quantized record names converted to int8 ones and every tensor loaded from ``path``, strictly.
    Returns ``model``, changed in place; on any RecordError it is left as it was.

    >>> with ember.nn.init.skip():
    ...     model = DigitsCNN()
    >>> qmodel = ember.quant.load(model, "digits-int8.safetensors")
    """
    op = "quant.load"
    if not isinstance(model, Module):
        raise ArgumentTypeError("%s: expected a Module, found %s" % (op, type(model).__name__))
    modules = {}
    for n, m in model.named_modules():
        modules[n] = m
    swaps = []
    with record.open(path) as reader:
        path = reader.path
        precision = reader.metadata.get(fmt.PRECISION_KEY)
        if precision != PRECISION:
            raise fmt.error(op, path, "not an int8 record (%s is %r): load a float record with Module.load, or "
                            "quantize the model with ember.quant.quantize" % (fmt.PRECISION_KEY, precision))
        activations, names = parse(reader.metadata.get(QUANTIZATION_KEY), path, op)
        for key in reader.names():
            if key.endswith(".weight_scale") and key[:-len(".weight_scale")] not in names:
                raise fmt.error(op, path, "%s is in the record, but %r does not list layer %r"
                                % (key, QUANTIZATION_KEY, key[:-len(".weight_scale")]))
        for name in names:
            layer = modules.get(name)
            if layer is None or quant_class(layer) is None:
                found = "no such module" if layer is None else "a %s" % type(layer).__name__
                raise fmt.error(op, path, "the record quantizes layer %r; %s has %s there (expected a Linear or "
                                "Conv2d)" % (name, type(model).__name__, found))
            has_output = _check_entries(reader, name, layer, activations, op)
            swaps.append((layer, _empty_twin(layer, activations == "int8", has_output)))
    for old, new in swaps:
        replace(model, old, new)
    try:
        model.load(path)
    except BaseException:
        for old, new in swaps:
            replace(model, new, old)
        raise
    return model
