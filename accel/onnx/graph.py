"""An ONNX graph as a plan of ember calls: nodes sorted, checked, constants folded.

``compile_graph`` walks the nodes in dependency order (a cycle or a missing input is a
``RecordError``), looks every node up in the op table (every unsupported op or attribute, subgraphs
included, is gathered into ONE ``ArgumentError``), and runs at load each node whose inputs are all
known: Constant, shape arithmetic, Shape of a value whose dims shape inference fixed, an ``If``
whose condition is known (its branch is inlined). What stays is a list of ``Step``s that
``run_plan`` executes with ember ops on the inputs' device.
"""
import sys

import ember
from ember.errors import ArgumentError, EmberError, RecordError

from . import ops
from .reader import to_numpy

NONDETERMINISTIC = frozenset(("RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike",
                              "Bernoulli", "Multinomial", "Dropout"))


class Node:
    """One ONNX node: names, attributes as Python values, the opset it runs at."""

    def __init__(self, proto, opset, convert):
        from onnx import helper, AttributeProto
        self.name = proto.name
        self.op_type = proto.op_type
        self.domain = proto.domain if proto.domain != "ai.onnx" else ""
        self.opset = opset
        self.inputs = list(proto.input)
        self.outputs = list(proto.output)
        self.attrs = {}
        self.graphs = {}
        for a in proto.attribute:
            if a.type == AttributeProto.GRAPH:
                self.graphs[a.name] = a.g
                continue
            v = helper.get_attribute_value(a)
            if a.type == AttributeProto.TENSOR:
                v = convert(v)
            elif a.type == AttributeProto.STRING:
                v = v.decode("utf-8", "replace")
            elif a.type == AttributeProto.STRINGS:
                v = [s.decode("utf-8", "replace") for s in v]
            self.attrs[a.name] = v
        self.device = None

    def attr(self, name, default=None):
        return self.attrs.get(name, default)

    def label(self):
        return "%s (%s, opset %d)" % (self.name or "<unnamed>", self.op_type, self.opset)

    def fail(self, what):
        raise ArgumentError("onnx: node %s: %s" % (self.label(), what))


class Step:
    __slots__ = ("fn", "node", "inputs", "outputs", "static")

    def __init__(self, fn, node, inputs, outputs):
        self.fn, self.node, self.inputs, self.outputs = fn, node, inputs, outputs
        found = ops.lookup(node.domain, node.op_type, node.opset)
        self.static = found[2] if found else ()  # input slots read as numbers: they stay on the host


def topo_order(nodes, known, where):
    """``nodes`` in an order where each runs after the nodes producing its inputs."""
    producer = {}
    for i, n in enumerate(nodes):
        for o in n.outputs:
            if o:
                producer[o] = i
    outer = _outer_names(nodes)
    need = []
    for i, n in enumerate(nodes):
        deps = set()
        for name in n.inputs + outer[i]:
            if not name or name in known:
                continue
            if name not in producer:
                if name in outer[i]:
                    continue  # a name of the scope above, checked when the subgraph compiles
                raise RecordError("onnx.load: %s: node %s reads %r, which no node, input or initializer "
                                  "produces" % (where, n.label(), name))
            deps.add(producer[name])
        need.append(deps)
    order, state = [], [0] * len(nodes)  # 0 new, 1 on the stack, 2 done
    for start in range(len(nodes)):
        if state[start]:
            continue
        stack = [(start, iter(sorted(need[start])))]
        state[start] = 1
        while stack:
            i, it = stack[-1]
            nxt = next(it, None)
            if nxt is None:
                stack.pop()
                state[i] = 2
                order.append(nodes[i])
            elif state[nxt] == 1:
                cycle = [nodes[j].label() for j, _ in stack[[j for j, _ in stack].index(nxt):]]
                raise RecordError("onnx.load: %s: expected an acyclic graph, found the cycle %s"
                                  % (where, " -> ".join(cycle + [nodes[nxt].label()])))
            elif state[nxt] == 0:
                state[nxt] = 1
                stack.append((nxt, iter(sorted(need[nxt]))))
    return order


def _outer_names(nodes):
    """Per node, the names its subgraphs read from outside themselves."""
    out = []
    for n in nodes:
        names = []
        for g in n.graphs.values():
            names.extend(_free_names(g))
        out.append(names)
    return out


def _free_names(g):
    inner = set(i.name for i in g.input) | set(t.name for t in g.initializer)
    free = []
    for nd in g.node:
        for i in nd.input:
            if i and i not in inner:
                free.append(i)
        for a in nd.attribute:
            if a.HasField("g"):
                free.extend(x for x in _free_names(a.g) if x not in inner)
        inner.update(nd.output)
    return free


class Context:
    """What compiling a graph needs: the device, opsets, constants, static shapes, problems found."""

    def __init__(self, device, opsets, folder, where, shapes):
        self.device, self.opsets, self.folder, self.where, self.shapes = device, opsets, folder, where, shapes
        self.unsupported = []
        self.types = {}  # value name -> ONNX element type, where shape inference knows it

    def tensor(self, proto):
        a = to_numpy(proto, self.folder, self.where)
        return numpy_to_ember(a, self.device, "%s: tensor %r" % (self.where, proto.name))

    def node(self, proto):
        domain = proto.domain if proto.domain != "ai.onnx" else ""
        opset = self.opsets.get(domain)
        n = Node(proto, opset if opset is not None else 0, self.tensor)
        n.device = self.device
        n.input_types = [self.types.get(i) for i in n.inputs]
        return n


def numpy_to_ember(a, device, what):
    import numpy as np
    import ember
    from ember.accel.numpy import from_numpy
    kind = a.dtype
    if kind.name == "bfloat16":  # ml_dtypes' type, which numpy calls kind "V"
        return numpy_to_ember(a.astype(np.float32), device, what).to(ember.bfloat16)
    if kind in (np.int16, np.uint16):
        a = a.astype(np.int32)
    elif kind in (np.uint32, np.uint64):
        a = a.astype(np.int64)
    elif kind.kind not in "biuf" or kind.itemsize > 8:
        raise ArgumentError("onnx: %s: ember has no dtype for ONNX element type %s" % (what, kind))
    try:
        return from_numpy(a if a.flags.c_contiguous else a.copy(), device=device)
    except Exception as e:
        raise ArgumentError("onnx: %s: ember cannot hold dtype %s (%s)" % (what, kind, e))


def check_supported(ctx, graph_proto):
    """Gather every node of ``graph_proto`` (and its subgraphs) the op table cannot run."""
    for proto in graph_proto.node:
        domain = proto.domain if proto.domain != "ai.onnx" else ""
        opset = ctx.opsets.get(domain, 0)
        label = "%s (%s, opset %d)" % (proto.name or "<unnamed>", proto.op_type, opset)
        found = ops.lookup(domain, proto.op_type, opset)
        if found is None:
            ctx.unsupported.append("%s: op not supported%s" % (label, " in domain %r" % domain if domain else ""))
            continue
        _, attrs, _, check = found
        bad = [a.name for a in proto.attribute if a.name not in attrs]
        if bad:
            ctx.unsupported.append("%s: attribute(s) %s not supported" % (label, ", ".join(sorted(bad))))
            continue
        if check is not None:
            problem = check(ctx.node(proto))
            if problem:
                ctx.unsupported.append("%s: %s" % (label, problem))
                continue
        for a in proto.attribute:
            if a.HasField("g"):
                check_supported(ctx, a.g)


def raise_unsupported(ctx):
    if ctx.unsupported:
        raise ArgumentError("onnx.load: %s: %d node(s) ember cannot import:\n  %s"
                            % (ctx.where, len(ctx.unsupported), "\n  ".join(ctx.unsupported)))


def compile_graph(ctx, g, consts, dynamic):
    """Steps for graph ``g``: ``consts`` maps names to known tensors (filled as nodes fold),
    ``dynamic`` is the set of names known only when the graph runs."""
    nodes = [ctx.node(p) for p in g.node]
    known = set(consts) | set(dynamic)
    steps = []
    for n in topo_order(nodes, known, ctx.where):
        steps.extend(_compile_node(ctx, n, consts, dynamic))
    return steps


def _compile_node(ctx, n, consts, dynamic):
    fn = ops.lookup(n.domain, n.op_type, n.opset)[0]
    if n.op_type == "If":
        return _compile_if(ctx, n, consts, dynamic)
    if n.op_type in ("Shape", "Size") and n.inputs[0] not in consts:
        shape = ctx.shapes.get(n.inputs[0])
        if shape is not None:
            consts[n.outputs[0]] = fn(n, _ShapeOnly(shape))
            return []
    inputs = [i for i in n.inputs if i]
    if not n.graphs and n.op_type not in NONDETERMINISTIC and all(i in consts for i in inputs):
        outs = _run(n, fn, [consts[i] if i else None for i in n.inputs])
        for name, v in zip(n.outputs, outs):
            if name:
                consts[name] = v
        return []
    for o in n.outputs:
        if o:
            dynamic.add(o)
    if n.graphs:
        n.plans = {}
        for key, sub in n.graphs.items():
            inner_dynamic = set(dynamic) | set(i.name for i in sub.input)
            n.plans[key] = (compile_graph(ctx, sub, consts, inner_dynamic), [i.name for i in sub.input],
                            [o.name for o in sub.output])
    return [Step(fn, n, list(n.inputs), list(n.outputs))]


def _compile_if(ctx, n, consts, dynamic):
    cond = n.inputs[0]
    if cond not in consts:  # both branches compiled; the condition picks one each run
        for o in n.outputs:
            if o:
                dynamic.add(o)
        n.plans = {}
        for key in ("then_branch", "else_branch"):
            sub = n.graphs[key]
            n.plans[key] = (compile_graph(ctx, sub, consts, set(dynamic)), [], [o.name for o in sub.output])
        return [Step(ops.lookup("", "If", n.opset)[0], n, list(n.inputs), list(n.outputs))]
    branch = n.graphs["then_branch" if bool(consts[cond].reshape(-1)[0].item()) else "else_branch"]
    steps = compile_graph(ctx, branch, consts, dynamic)
    outs = [o.name for o in branch.output]
    for name, inner in zip(n.outputs, outs):
        if inner in consts:
            consts[name] = consts[inner]
        else:
            dynamic.add(name)
            steps.append(Step(_identity, n, [inner], [name]))
    return steps


def _identity(n, x):
    return x


class _ShapeOnly:
    """Stands in for a tensor whose dims are known but whose values are not."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        out = 1
        for d in self.shape:
            out *= d
        return out


def _run(n, fn, args):
    try:
        out = fn(n, *args)
    except EmberError as e:
        _relabel(n, e)
    return out if isinstance(out, (tuple, list)) else (out,)


def _relabel(n, e):
    """Raise ``e`` again, naming node ``n`` unless an onnx message already names one."""
    text = str(e)
    if text.startswith("onnx") or n is None:
        raise e
    raise type(e)("onnx: node %s: %s" % (n.label(), text)) from e


_HOST = []


def host():
    """The pure Cpu that shape arithmetic runs on: a Reshape target computed from a Shape is read
    on the host, never from the model's device (no GPU round trip, nothing an export trace sees)."""
    if not _HOST:
        import ember
        _HOST.append(ember.Cpu(kernels="python"))
    return _HOST[0]


def run_plan(steps, env, device):
    """Run ``steps`` on ``env`` (name -> tensor) on ``device``, adding each output; returns env.
    A step whose inputs are all on the host (shapes, small int constants) runs there; a host
    value that meets the device's tensors moves to the device."""
    h = host()
    for s in steps:
        args = [env[i] if i else None for i in s.inputs]
        present = [a for a in args if a is not None and hasattr(a, "device")]
        if s.node.op_type in ("Shape", "Size") or (present and all(a.device == h for a in present)):
            s.node.device = h
        else:
            s.node.device = device  # what the ops that create tensors (Range, ConstantOfShape, ...) create them on
            if device != h:
                args = [a.to(device) if a is not None and k not in s.static and hasattr(a, "device") and a.device == h
                        else a for k, a in enumerate(args)]
        if s.node.graphs:
            s.node.scope = env  # a Loop body reads names of the scope around it
            s.node.device = device
        outs = _run(s.node, s.fn, args)
        for name, v in zip(s.outputs, outs):
            if name:
                env[name] = v
    return env


# -- specialised replay -------------------------------------------------------------------------------
# With a dynamic dimension (torch's exported batch), the shape arithmetic (Shape -> Gather -> Concat
# -> Reshape) cannot fold at load and runs node by node every call. ``specialize`` runs the plan once
# for given input shapes, folds every value that depends only on those shapes and on constants, and
# returns a ``Replay``: the remaining device steps as a flat list with their constant arguments bound
# (and already moved to the device). A value's shape counts as fixed by the input shapes only through
# ops whose output shape follows from their inputs' shapes and attributes (``SHAPE_ONLY``) or from
# those and known values of their later inputs (``SHAPE_FROM_KNOWN``); a Shape of anything else
# (NonZero, Loop, a Reshape to a computed-from-data shape, ...) is never folded.

SHAPE_ONLY = frozenset((
    "Abs", "Acos", "Acosh", "Add", "And", "Asin", "Asinh", "Atan", "Atanh", "AveragePool", "BatchNormalization",
    "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Cast", "CastLike", "Ceil", "Celu", "Clip",
    "Concat", "Conv", "ConvTranspose", "Cos", "Cosh", "CumSum", "DepthToSpace", "Div", "Einsum", "Elu", "Equal",
    "Erf", "Exp", "Flatten", "Floor", "Gather", "GatherElements", "GatherND", "Gelu", "Gemm", "GlobalAveragePool",
    "GlobalLpPool", "GlobalMaxPool", "Greater", "GreaterOrEqual", "GroupNormalization", "HardSigmoid",
    "HardSwish", "Hardmax", "Identity", "InstanceNormalization", "IsInf", "IsNaN", "LRN", "LayerNormalization",
    "LeakyRelu", "Less", "LessOrEqual", "Log", "LogSoftmax", "LpNormalization", "LpPool", "MatMul", "Max",
    "MaxPool", "Mean", "MeanVarianceNormalization", "Min", "Mish", "Mod", "Mul", "Neg", "Not", "Or", "PRelu",
    "Pow", "RMSNormalization", "Reciprocal", "Relu", "Round", "Selu", "Shrink", "Sigmoid", "Sign", "Sin", "Sinh",
    "Softmax", "Softplus", "Softsign", "SpaceToDepth", "Sqrt", "Sub", "Sum", "Swish", "Tan", "Tanh",
    "ThresholdedRelu", "Transpose", "Where", "Xor"))
SHAPE_FROM_KNOWN = frozenset((
    "ArgMax", "ArgMin", "Expand", "Pad", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax",
    "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "Reshape", "Resize", "Slice",
    "Split", "Squeeze", "Tile", "TopK", "Unsqueeze", "Upsample"))


class Replay:
    """The plan specialised to one set of input shapes: ``run(env)`` executes the device steps.
    ``generic`` holds the same calls with lower_c.py's direct C kernel calls swapped back for the
    frontend calls they replace: those are what a step capture (``ember.accel.compile``) records
    while it traces (the direct calls make arrays outside the device's primitives, which it cannot
    replay)."""
    __slots__ = ("calls", "consts", "generic")

    def __init__(self, calls, consts):
        self.calls, self.consts = calls, consts
        lowered = [c for c in calls if hasattr(c[0], "generic")]
        self.generic = [(getattr(c[0], "generic", c[0]),) + c[1:] for c in calls] if lowered else None

    def run(self, env):
        node = None
        calls = self.calls
        if self.generic is not None:
            trace = sys.modules.get("ember.accel.capture.trace")
            if trace is not None and trace.current() is not None:
                calls = self.generic
        try:  # one handler for the whole loop (a try per call costs more than a small op)
            for fn, node, dev, args, srcs, outs, moves, scoped in calls:
                for k, name in srcs:
                    args[k] = env[name]
                for k in moves:
                    args[k] = args[k].to(dev)
                node.device = dev
                if scoped:
                    node.scope = env
                got = fn(node, *args)
                if type(got) is not tuple and type(got) is not list:
                    env[outs[0]] = got
                else:
                    for name, v in zip(outs, got):
                        if name:
                            env[name] = v
        except EmberError as e:
            _relabel(node, e)
        return env


def specialize(steps, env, dynamic, device, base, protected=()):
    """Run ``steps`` on ``env`` (like ``run_plan``; ``dynamic`` names the inputs and parameters, whose
    values change between calls but whose shapes do not) and return (env, Replay); ``base`` is the
    plan's constants on ``device``, the replay's starting scope; ``protected`` the graph outputs."""
    h = host()
    known = set(k for k in env if k not in dynamic)  # values fixed for these input shapes
    fixed = set(env)  # values whose shape these input shapes fix
    calls, reads = [], []
    for s in steps:
        node = s.node
        op = node.op_type
        args = [env[i] if i else None for i in s.inputs]
        present = [a for a in args if a is not None and hasattr(a, "device")]
        if op in ("Shape", "Size") or (present and all(a.device == h for a in present)):
            dev = h
        else:
            dev = device
        moved = [k for k, a in enumerate(args) if dev != h and a is not None and k not in s.static
                 and hasattr(a, "device") and a.device == h]
        if node.graphs:
            node.scope = env
            dev = device
        node.device = dev
        real = [a for a in args if a is not None]
        call_args = [a.to(dev) if k in moved else a for k, a in enumerate(args)]
        outs = _run(node, s.fn, call_args)
        for name, v in zip(s.outputs, outs):
            if name:
                env[name] = v
        names = [i for i in s.inputs if i]
        if not node.graphs and op not in NONDETERMINISTIC and (
                (op in ("Shape", "Size") and s.inputs[0] in fixed) or (real and all(i in known for i in names))):
            known.update(o for o in s.outputs if o)
            fixed.update(o for o in s.outputs if o)
            continue
        if not node.graphs and all(i in fixed for i in names) and (
                op in SHAPE_ONLY or (op in SHAPE_FROM_KNOWN and all(i in known for i in s.inputs[1:] if i))):
            fixed.update(o for o in s.outputs if o)
        bound = [None] * len(args)
        srcs, moves = [], []
        for k, name in enumerate(s.inputs):
            if not name:
                continue
            if name in known:
                bound[k] = call_args[k]  # a constant for these shapes, moved once
            else:
                srcs.append((k, name))
                if k in moved:
                    moves.append(k)
        if device == h:
            dev = device  # the same device: new tensors are made with the model device's kernels
        calls.append((s.fn, node, dev, bound, tuple(srcs), tuple(s.outputs), tuple(moves), bool(node.graphs)))
        reads.append(list(s.inputs))
    consts = dict(base)
    if any(c[7] for c in calls):
        # a subgraph (Loop, Scan, an If kept) reads names of the scope around it, folded ones too:
        # they stay in the replay's starting scope, and nothing is rewritten
        consts.update((k, env[k]) for k in known if k in env)
    else:
        from .fuse import fuse
        calls = fuse(calls, reads, env, protected)
        # the bound arguments hold the constants: the starting scope needs only what a call reads
        # by name without a call making it, and the graph outputs that folded
        made = set(dynamic)
        for c in calls:
            made.update(c[5])
        need = set(n for c in calls for _, n in c[4] if n not in made) | set(protected)
        consts = dict((k, env[k]) for k in need if k in env and k not in dynamic)
    return env, Replay(calls, consts)
