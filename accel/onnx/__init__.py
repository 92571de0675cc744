"""ember.accel.onnx: ONNX models as ember modules (``load``) and as readable Python (``ember import-onnx``).

    >>> from ember.accel import onnx
    >>> model = onnx.load("resnet18.onnx", device=ember.accel.NumPy())
    >>> logits = model(x)                      # any backend; initializers are its parameters

Opsets 7 to the newest the installed ``onnx`` knows (``pip install ember[onnx]``; the package is
used only while loading). Shape arithmetic folds at load; an unsupported op or attribute stops the
load with one ``ArgumentError`` listing every such node; a malformed or hostile file is a
``RecordError``. ``load_plan`` gives the compiled graph that code generation (``codegen``) prints.
``export(module, example_input, path)`` writes an ember module as an ONNX file (``writer.py``: the
op stream of one forward, traced).
"""
from ember.errors import ArgumentError

from .writer import export

__all__ = ["export", "load", "load_plan", "supported_operators"]

MIN_OPSET = 1  # tested from 7 (the range); older files load where their ops still mean the same


def supported_operators():
    """The ONNX op types the table runs (default domain)."""
    from . import ops
    return ops.operator_names()


class Plan:
    """A loaded graph: its steps, constants, parameters (onnx name, tensor), inputs and outputs."""

    def __init__(self, steps, consts, params, inputs, outputs, where, ranks):
        self.steps, self.consts, self.params = steps, consts, params
        self.inputs, self.outputs, self.where, self.ranks = inputs, outputs, where, ranks


def load_plan(path_or_bytes, device=None):
    """The checked, folded graph of an ONNX model (a ``Plan``: steps, constants, parameters, inputs,
    outputs), what ``load`` wraps in a Module and ``ember import-onnx`` prints as Python.

    >>> plan = onnx.load_plan("lenet.onnx")
    >>> [name for name, _ in plan.params][:2]
    """
    import onnx as _onnx
    import ember
    from . import ops
    from .graph import Context, check_supported, compile_graph, raise_unsupported
    from .reader import opsets, parse, static_shapes
    device = device or ember.default_device()
    model, folder, where = parse(path_or_bytes)
    versions = opsets(model, where)
    newest = _onnx.defs.onnx_opset_version()
    if "" in versions and not MIN_OPSET <= versions[""] <= newest:
        raise ArgumentError("onnx.load: %s: expected a default-domain opset in %d..%d, found %d"
                            % (where, MIN_OPSET, newest, versions[""]))
    from .functions import expand
    model = expand(model, versions, ops.lookup)
    g = model.graph
    ranks, types = {}, {}
    ctx = Context(device, versions, folder, where, static_shapes(model, ranks, types))
    ctx.types = types
    if g.sparse_initializer:
        ctx.unsupported.append("graph %r: sparse initializers not supported" % g.name)
    check_supported(ctx, g)
    raise_unsupported(ctx)
    static_only = _static_only(g, versions)
    consts, params = {}, []
    for t in g.initializer:
        value = ctx.tensor(t)
        if value.dtype.kind == "f" and t.name not in static_only:
            params.append((t.name, value))
        else:
            consts[t.name] = value
    init_names = set(t.name for t in g.initializer)
    inputs = [i.name for i in g.input if i.name not in init_names]
    dynamic = set(inputs) | set(name for name, _ in params)
    steps = compile_graph(ctx, g, consts, dynamic)
    raise_unsupported(ctx)
    outputs = [o.name for o in g.output]
    for o in outputs:
        if o not in consts and o not in dynamic:
            raise ArgumentError("onnx.load: %s: graph output %r is produced by no node" % (where, o))
    return Plan(steps, consts, params, inputs, outputs, where, ranks)


def _static_only(g, versions):
    """Initializer names every consumer reads as numbers (a static input slot)."""
    from . import ops
    static, other = set(), set()
    for nd in g.node:
        found = ops.lookup(nd.domain if nd.domain != "ai.onnx" else "", nd.op_type, versions.get(nd.domain, 0))
        slots = found[2] if found else ()
        for i, name in enumerate(nd.input):
            (static if i in slots else other).add(name)
    return static - other


def load(path_or_bytes, device=None):
    """The ONNX model at ``path_or_bytes`` (a path or the file's bytes) as an ember ``Module`` on
    ``device`` (default: ember's default device)."""
    from .module import OnnxModule
    plan = load_plan(path_or_bytes, device)
    return OnnxModule(plan.steps, plan.consts, plan.params, plan.inputs, plan.outputs, device)
