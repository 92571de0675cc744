"""ONNX export: an ember module traced on an example input, written as an ONNX model.

    from ember.accel.onnx.export import export
    export(model, ember.randn(1, 3, 32, 32), "model.onnx")

The forward runs twice on a recording decorator (``Trace``), once on the example and once on it
with one more row in the batch dim; every primitive (and the composites with a direct ONNX
operator: linear, softmax, layer_norm, batch_norm, embedding, ...) becomes a node, and an
``nn.LSTM``/``nn.GRU`` without an initial state one ONNX LSTM/GRU node per layer. Parameters and
buffers are initializers under their ``state_dict`` names. Integers that differ between the two
runs (reshape targets, slice bounds, a zeros(batch, ...)) are written as ``a * batch + c`` of the
input's batch dim, so the file takes any batch size. The ``onnx`` package is needed only here.
"""
import inspect

from ember.backend import PRIMITIVES, Decorator
from ember.composite import COMPOSITES, run, unwrap_args
from ember.errors import ArgumentError, ArgumentTypeError, DeviceError
from ember.tensor import Tensor
import ember.dtypes as dt

MIN_OPSET = 17  # LayerNormalization
DEFAULT_OPSET = 18
_INT64_MAX = 2 ** 63 - 1
_INT64_MIN = -2 ** 63

_ONNX_DTYPE = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10,
               "float64": 11, "bfloat16": 16}
_NUMPY_DTYPE = {"float32": "float32", "uint8": "uint8", "int8": "int8", "int32": "int32", "int64": "int64",
                "bool": "bool", "float16": "float16", "float64": "float64"}


def _fail(what):
    raise ArgumentError("onnx.export: " + what)


# -- the recording decorator ------------------------------------------------------------------------

class TraceArray:
    """Trace's array: the inner array with its shape, dtype and a number unique in the session."""

    __slots__ = ("value", "shape", "dtype", "id")

    def __init__(self, value, shape, dtype, id_):
        self.value = value
        self.shape = tuple(shape)
        self.dtype = dtype
        self.id = id_


class Event:
    """One recorded call: ``op`` (a primitive or ``composite``), its arrays, its plain arguments
    and its result (a TraceArray, or a pair for sort)."""

    __slots__ = ("op", "arrays", "params", "out")

    def __init__(self, op, arrays, params, out):
        self.op, self.arrays, self.params, self.out = op, arrays, params, out


class Trace(Decorator):
    """Runs every primitive on ``inner`` and appends an ``Event`` to ``events``."""

    name = "Trace"

    def __init__(self, inner, opset):
        Decorator.__init__(self, inner)
        self.opset = opset
        self.events = []
        self._next = 0

    def key(self):
        return ("Trace", id(self)) + self.inner.key()

    def _new(self, value, shape, dtype):
        self._next += 1
        return TraceArray(value, shape, dtype, self._next)

    def wrap(self, value, shape, dtype):
        return self._new(value, shape, dtype)

    def unwrap(self, a):
        return a.value

    def random(self, kind, shape, dtype, generator, params):
        _fail("forward draws random numbers (%s); call module.eval() so dropout is off" % (kind,))

    def run_composite(self, name, args, kwargs):
        export = COMPOSITE_EXPORTS.get(name)
        if export is not None:
            bound = inspect.signature(COMPOSITES[name]).bind(*args, **kwargs)
            bound.apply_defaults()
            params = dict(bound.arguments)
            if all(type(v) is not Tensor or v.device is self for v in params.values()) and export[0](params, self.opset):
                inner_args, inner_kwargs = unwrap_args(self, args, kwargs)
                out = run(self.inner, name, inner_args, inner_kwargs)
                if type(out) is Tensor:
                    arr = self._new(out._data, out.shape, out.dtype)
                    arrays = {k: v._data for k, v in params.items() if type(v) is Tensor}
                    plain = {k: v for k, v in params.items() if type(v) is not Tensor}
                    self.events.append(Event("composite", arrays, (name, plain), arr))
                    return Tensor(arr, out.shape, out.dtype, self)
        # the body on this device's primitives, so each records itself (never a fused kernel below,
        # which would run unseen)
        return COMPOSITES[name](*args, **kwargs)


def _unbox(v):
    if type(v) is TraceArray:
        return v.value
    if type(v) in (list, tuple):
        return type(v)(_unbox(x) for x in v)
    return v


def _read(name):
    def primitive(self, *args):
        _fail("forward reads tensor values on the host (%s): a step that depends on the data cannot be "
              "traced into a graph" % (name,))
    return primitive


def _recorded(name):
    from ember.ops import infer

    def primitive(self, *args):
        out = getattr(self.inner, name)(*[_unbox(a) for a in args])
        shape, dtype = infer(name, *args)
        if name == "sort":
            result = (self._new(out[0], shape, dtype), self._new(out[1], shape, dt.int64))
        else:
            result = self._new(out, shape, dtype)
        arrays = [a for a in args if type(a) is TraceArray]
        if name == "cat":
            arrays = list(args[0])
        self.events.append(Event(name, arrays, args, result))
        return result
    return primitive


for _name in PRIMITIVES:
    setattr(Trace, _name, _read(_name) if _name in ("to_list", "to_bytes") else _recorded(_name))


# -- the graph ----------------------------------------------------------------------------------------

class Graph:
    """The ONNX nodes and initializers being written, with the two traces' batch sizes."""

    def __init__(self, onnx, opset, inner, names, batch_input, batch_dim, b1, b2):
        self.onnx, self.opset, self.inner = onnx, opset, inner
        self.names = names  # array id -> value name (parameters, inputs, results so far)
        self.nodes, self.inits = [], []
        self.batch_input, self.batch_dim, self.b1, self.b2 = batch_input, batch_dim, b1, b2
        self._batch = None
        self._n = 0
        self._consts = {}

    def fresh(self, hint="t"):
        self._n += 1
        return "%s%d" % (hint, self._n)

    def node(self, op, inputs, n_out=1, **attrs):
        outs = [self.fresh("v") for _ in range(n_out)]
        self.nodes.append(self.onnx.helper.make_node(op, inputs, outs, name="%s_%d" % (op, len(self.nodes)), **attrs))
        return outs[0] if n_out == 1 else outs

    def name(self, a):
        n = self.names.get(a.id)
        if n is None:  # a tensor of the module that is not in its state_dict: a constant
            n = self.tensor("const", a.dtype, a.shape, self.inner.to_bytes(a.value))
            self.names[a.id] = n
        return n

    def tensor(self, hint, dtype, shape, raw):
        key = (dtype.name, tuple(shape), raw)
        if len(raw) <= 64 and key in self._consts:
            return self._consts[key]
        n = self.fresh(hint)
        self.inits.append(self.onnx.helper.make_tensor(n, _ONNX_DTYPE[dtype.name], list(shape), raw, raw=True))
        if len(raw) <= 64:
            self._consts[key] = n
        return n

    def np_const(self, values, dtype, shape=None):
        import numpy as np
        arr = np.asarray(values, dtype=_NUMPY_DTYPE.get(dtype.name, "float32"))
        n = self.tensor("c", dtype if dtype.name in _NUMPY_DTYPE else dt.float32,
                        arr.shape if shape is None else shape, arr.tobytes())
        if dtype.name not in _NUMPY_DTYPE:
            n = self.node("Cast", [n], to=_ONNX_DTYPE[dtype.name])
        return n

    def transposed(self, w):
        """``w``ᵀ, one Transpose per weight however many calls use it."""
        key = ("T", w.id)
        if key not in self._consts:
            self._consts[key] = self.node("Transpose", [self.name(w)], perm=[1, 0])
        return self._consts[key]

    def batch(self):
        if self._batch is None:
            self._batch = self.node("Shape", [self.batch_input], start=self.batch_dim, end=self.batch_dim + 1)
        return self._batch

    def affine(self, v1, v2, what):
        """(a, c) with v = a * batch + c for both traces."""
        if self.b1 == self.b2:
            return 0, v1
        whole = all(type(v) is int or (type(v) is float and v.is_integer()) for v in (v1, v2))
        a, r = divmod(int(v2 - v1), self.b2 - self.b1) if whole else (0, 1)
        if r:
            _fail("%s depends on the batch size in a way an ONNX graph cannot express: %r at batch %d, "
                  "%r at batch %d" % (what, v1, self.b1, v2, self.b2))
        return a, int(v1) - a * self.b1

    def ints(self, v1, v2, what):
        """An int64 vector input: a constant, or ``a * batch + c`` where the two traces differ."""
        pairs = [self.affine(x, y, what) if x != y else (0, x) for x, y in zip(v1, v2)]
        const = self.np_const([c for _, c in pairs], dt.int64)
        if all(a == 0 for a, _ in pairs):
            return const
        scaled = self.node("Mul", [self.batch(), self.np_const([a for a, _ in pairs], dt.int64)])
        return self.node("Add", [scaled, const])

    def scalar(self, v1, v2, dtype, what):
        if v1 == v2 or self.b1 == self.b2:
            return self.np_const(v1, dtype)
        n = self.ints([v1], [v2], what)
        n = self.node("Reshape", [n, self.np_const([], dt.int64, (0,))])
        return self.node("Cast", [n], to=_ONNX_DTYPE[dtype.name])


# -- primitives as ONNX nodes ---------------------------------------------------------------------------

_UNARY = {"neg": "Neg", "abs": "Abs", "sign": "Sign", "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "sin": "Sin",
          "cos": "Cos", "tan": "Tan", "asin": "Asin", "acos": "Acos", "atan": "Atan", "sinh": "Sinh",
          "cosh": "Cosh", "tanh": "Tanh", "erf": "Erf", "sigmoid": "Sigmoid", "floor": "Floor", "ceil": "Ceil",
          "round": "Round", "reciprocal": "Reciprocal", "bitwise_not": "BitwiseNot", "isnan": "IsNaN",
          "isinf": "IsInf", "logical_not": "Not"}
_BINARY = {"add": "Add", "sub": "Sub", "mul": "Mul", "pow": "Pow", "maximum": "Max", "minimum": "Min",
           "eq": "Equal", "lt": "Less", "le": "LessOrEqual", "gt": "Greater", "ge": "GreaterOrEqual"}
_LOGICAL = {"and": ("And", "BitwiseAnd"), "or": ("Or", "BitwiseOr"), "xor": ("Xor", "BitwiseXor")}
_REDUCE = {"sum": "ReduceSum", "prod": "ReduceProd", "max": "ReduceMax", "min": "ReduceMin"}
# consumers that broadcast like numpy, so the frontend's expand before them can be left out
_BROADCASTING = ("binary", "where", "matmul")


def _unsupported(op, detail=""):
    _fail("the op %s has no ONNX export%s (supported: the primitives of docs/architecture.md §5 except "
          "atan2, lshift, rshift, integer floordiv/div, scans other than cumsum, slice_assign, random)"
          % (op, detail))


def _emit_unary(g, ev, ev2):
    op, x = ev.params[0], g.name(ev.params[1])
    if op in _UNARY:
        return g.node(_UNARY[op], [x])
    one = g.np_const(1, ev.out.dtype)
    if op == "rsqrt":
        return g.node("Reciprocal", [g.node("Sqrt", [x])])
    if op == "expm1":
        return g.node("Sub", [g.node("Exp", [x]), one])
    if op == "log1p":
        return g.node("Log", [g.node("Add", [x, one])])
    if op == "trunc":
        if ev.out.dtype.kind != "f":
            return g.node("Identity", [x])
        neg = g.node("Less", [x, g.np_const(0, ev.out.dtype)])
        return g.node("Where", [neg, g.node("Ceil", [x]), g.node("Floor", [x])])
    _unsupported("'%s' (unary)" % op)


def _operand(g, v, v2, dtype, what):
    return g.name(v) if type(v) is TraceArray else g.scalar(v, v2, dtype, what)


def _emit_binary(g, ev, ev2):
    op = ev.params[0]
    dtype = next(v.dtype for v in ev.params[1:] if type(v) is TraceArray)
    a = _operand(g, ev.params[1], ev2.params[1], dtype, "the scalar of %s" % op)
    b = _operand(g, ev.params[2], ev2.params[2], dtype, "the scalar of %s" % op)
    floating = dtype.kind == "f"
    if op in _BINARY:
        return g.node(_BINARY[op], [a, b])
    if op == "ne":
        return g.node("Not", [g.node("Equal", [a, b])])
    if op in _LOGICAL:
        return g.node(_LOGICAL[op][dtype.kind != "b"], [a, b])
    if op == "div" and floating:
        return g.node("Div", [a, b])
    if op == "floordiv" and floating:
        return g.node("Floor", [g.node("Div", [a, b])])
    if op == "mod":
        if not floating:
            return g.node("Mod", [a, b], fmod=0)
        return g.node("Sub", [a, g.node("Mul", [g.node("Floor", [g.node("Div", [a, b])]), b])])
    _unsupported("'%s' (binary, %s)" % (op, dtype.name))


def _emit_reshape(g, ev, ev2):
    s1, s2 = list(ev.params[1]), list(ev2.params[1])
    differ = [i for i in range(len(s1)) if s1[i] != s2[i]]
    if len(differ) == 1 and 0 not in s1:
        s1[differ[0]] = -1
        shape = g.np_const(s1, dt.int64)
    else:
        shape = g.ints(s1, s2, "a reshape target")
    return g.node("Reshape", [g.name(ev.params[0]), shape])


def _emit_expand(g, ev, ev2):
    x, x2 = ev.params[0], ev2.params[0]
    s1 = [1 if x.shape[i] == s and x2.shape[i] == ev2.params[1][i] else s for i, s in enumerate(ev.params[1])]
    s2 = [1 if x.shape[i] == ev.params[1][i] and x2.shape[i] == s else s for i, s in enumerate(ev2.params[1])]
    return g.node("Expand", [g.name(x), g.ints(s1, s2, "an expand target")])


def _emit_slice(g, ev, ev2):
    x, x2 = ev.params[0], ev2.params[0]
    starts, ends, axes, steps = ([], []), ([], []), [], []
    for d, ((b, e, s), (b2, e2, _)) in enumerate(zip(ev.params[1], ev2.params[1])):
        n, n2 = x.shape[d], x2.shape[d]
        if (b, e, s) == (0, n, 1) and (b2, e2) == (0, n2):
            continue
        if s > 0 and e == n and e2 == n2:
            e = e2 = _INT64_MAX
        if s < 0 and e == -1 and e2 == -1:
            e = e2 = _INT64_MIN
        if s < 0 and b == n - 1 and b2 == n2 - 1:
            b = b2 = -1
        starts[0].append(b), starts[1].append(b2), ends[0].append(e), ends[1].append(e2)
        axes.append(d), steps.append(s)
    if not axes:
        return g.node("Identity", [g.name(x)])
    return g.node("Slice", [g.name(x), g.ints(starts[0], starts[1], "a slice start"),
                            g.ints(ends[0], ends[1], "a slice stop"), g.np_const(axes, dt.int64),
                            g.np_const(steps, dt.int64)])


def _emit_full(g, ev, ev2):
    shape, value, dtype = ev.params
    if shape == ev2.params[0] and dtype.name in _NUMPY_DTYPE and _numel(shape) <= 4096:
        import numpy as np
        return g.node("Identity", [g.np_const(np.full(shape, value), dtype)])
    return g.node("Expand", [g.np_const(value, dtype), g.ints(list(shape), list(ev2.params[0]), "a full shape")])


def _emit_constant(g, ev, ev2):
    if tuple(ev.out.shape) != tuple(ev2.out.shape):
        _fail("a tensor made from host values in forward (%s) has a shape that depends on the batch size: "
              "%s at batch %d, %s at batch %d" % (ev.op, ev.out.shape, g.b1, ev2.out.shape, g.b2))
    return g.node("Identity", [g.tensor("const", ev.out.dtype, ev.out.shape, g.inner.to_bytes(ev.out.value))])


def _emit_conv(g, ev, ev2):
    x, w, stride, padding, dilation, groups = ev.params
    return g.node("Conv", [g.name(x), g.name(w)], kernel_shape=list(w.shape[2:]), strides=list(stride),
                  pads=[p[0] for p in padding] + [p[1] for p in padding], dilations=list(dilation), group=groups)


def _emit_pool(g, ev, ev2):
    op, x, kernel, stride, padding, dilation = ev.params
    attrs = dict(kernel_shape=list(kernel), strides=list(stride), pads=[p[0] for p in padding] + [p[1] for p in padding])
    if op == "max":
        return g.node("MaxPool", [g.name(x)], dilations=list(dilation), **attrs)
    if any(d != 1 for d in dilation):
        if g.opset < 19:
            _fail("a dilated average pool needs opset 19 or newer, found opset %d" % g.opset)
        attrs["dilations"] = list(dilation)
    return g.node("AveragePool", [g.name(x)], count_include_pad=1, **attrs)


def _emit_reduce(g, ev, ev2):
    op, x, dim = ev.params
    xn = g.name(x)
    if op in ("argmax", "argmin"):
        return g.node("ArgMax" if op == "argmax" else "ArgMin", [xn], axis=dim, keepdims=1)
    if op in ("any", "all"):
        r = _reduce(g, "ReduceMax" if op == "any" else "ReduceMin", g.node("Cast", [xn], to=_ONNX_DTYPE["int32"]), dim)
        return g.node("Cast", [r], to=_ONNX_DTYPE["bool"])
    return _reduce(g, _REDUCE[op], xn, dim)


def _reduce(g, onnx_op, xn, dim):
    if onnx_op == "ReduceSum" or g.opset >= 18:
        return g.node(onnx_op, [xn, g.np_const([dim], dt.int64)], keepdims=1)
    return g.node(onnx_op, [xn], axes=[dim], keepdims=1)


def _emit_scan(g, ev, ev2):
    op, x, dim = ev.params
    if op != "cumsum":
        _unsupported("'%s' (scan)" % op)
    return g.node("CumSum", [g.name(x), g.np_const(dim, dt.int64)])


def _emit_sort(g, ev, ev2):
    x, dim, descending = ev.params
    k = g.ints([x.shape[dim]], [ev2.params[0].shape[dim]], "a sort length")
    return g.node("TopK", [g.name(x), k], n_out=2, axis=dim, largest=1 if descending else 0, sorted=1)


PRIMITIVE_EXPORTS = {
    "from_list": _emit_constant,
    "from_bytes": _emit_constant,
    "full": _emit_full,
    "reshape": _emit_reshape,
    "permute": lambda g, ev, ev2: g.node("Transpose", [g.name(ev.params[0])], perm=list(ev.params[1])),
    "expand": _emit_expand,
    "slice": _emit_slice,
    "slice_assign": lambda g, ev, ev2: _unsupported("'slice_assign' (an indexed write in forward)"),
    "cat": lambda g, ev, ev2: g.node("Concat", [g.name(a) for a in ev.params[0]], axis=ev.params[1]),
    "unary": _emit_unary,
    "binary": _emit_binary,
    "where": lambda g, ev, ev2: g.node("Where", [
        _operand(g, ev.params[i], ev2.params[i], ev.out.dtype, "the scalar of where") if i else g.name(ev.params[0])
        for i in range(3)]),
    "cast": lambda g, ev, ev2: g.node("Cast", [g.name(ev.params[0])], to=_ONNX_DTYPE[ev.params[1].name]),
    "reduce": _emit_reduce,
    "scan": _emit_scan,
    "sort": _emit_sort,
    "matmul": lambda g, ev, ev2: g.node("MatMul", [g.name(ev.params[0]), g.name(ev.params[1])]),
    "conv": _emit_conv,
    "pool": _emit_pool,
    "gather": lambda g, ev, ev2: g.node("GatherElements", [g.name(ev.params[0]), g.name(ev.params[2])],
                                        axis=ev.params[1]),
    "scatter": lambda g, ev, ev2: g.node(
        "ScatterElements", [g.name(ev.params[0]), g.name(ev.params[2]), g.name(ev.params[3])], axis=ev.params[1],
        reduction="none" if ev.params[4] == "set" else "add"),
}


# -- composites with one ONNX operator ------------------------------------------------------------------

def _floats(*names):
    def accept(p, opset):
        return all(p.get(n) is None or p[n].dtype.name in ("float32", "float64") for n in names)
    return accept


def _unary_composite(onnx_op, **attrs):
    return (_floats("x"), lambda g, ev, p: g.node(onnx_op, [g.name(ev.arrays["x"])], **{
        k: (v(p) if callable(v) else v) for k, v in attrs.items()}))


def _emit_linear(g, ev, p):
    x, w, b = ev.arrays["x"], ev.arrays["weight"], ev.arrays.get("bias")
    if len(x.shape) == 2:
        return g.node("Gemm", [g.name(x), g.name(w)] + ([g.name(b)] if b is not None else []), transB=1)
    y = g.node("MatMul", [g.name(x), g.transposed(w)])
    return g.node("Add", [y, g.name(b)]) if b is not None else y


def _emit_layer_norm(g, ev, p):
    x = ev.arrays["x"]
    ns = (p["normalized_shape"],) if type(p["normalized_shape"]) is int else tuple(p["normalized_shape"])
    scale = ev.arrays.get("weight")
    if scale is None:
        import numpy as np
        scale = g.np_const(np.ones(ns), x.dtype)
    else:
        scale = g.name(scale)
    ins = [g.name(x), scale] + ([g.name(ev.arrays["bias"])] if "bias" in ev.arrays else [])
    return g.node("LayerNormalization", ins, axis=-len(ns), epsilon=float(p["eps"]))


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _emit_batch_norm(g, ev, p):
    x, c = ev.arrays["x"], ev.arrays["x"].shape[1]
    w, b = ev.arrays.get("weight"), ev.arrays.get("bias")
    scale = g.name(w) if w is not None else g.np_const([1.0] * c, x.dtype)
    shift = g.name(b) if b is not None else g.np_const([0.0] * c, x.dtype)
    return g.node("BatchNormalization", [g.name(x), scale, shift, g.name(ev.arrays["running_mean"]),
                                         g.name(ev.arrays["running_var"])], epsilon=float(p["eps"]))


def _clip(lo, hi):
    return (_floats("x"), lambda g, ev, p: g.node("Clip", [g.name(ev.arrays["x"]),
                                                           g.np_const(lo(p), ev.arrays["x"].dtype),
                                                           g.np_const(hi(p), ev.arrays["x"].dtype)]))


def _is_global(p, opset):
    o = p["output_size"]
    return (o == 1 or (type(o) in (tuple, list) and tuple(o) == (1, 1))) and _floats("x")(p, opset)


# name -> (accept(params, opset): record as one node?, emit(graph, event, plain params) -> value name)
COMPOSITE_EXPORTS = {
    "relu": _unary_composite("Relu"),
    "sigmoid": _unary_composite("Sigmoid"),
    "tanh": _unary_composite("Tanh"),
    "gelu": (lambda p, opset: opset >= 20 and _floats("x")(p, opset),
             lambda g, ev, p: g.node("Gelu", [g.name(ev.arrays["x"])], approximate=p["approximate"])),
    "softmax": (lambda p, opset: p["dtype"] is None and len(p["x"].shape) > 0 and _floats("x")(p, opset),
                lambda g, ev, p: g.node("Softmax", [g.name(ev.arrays["x"])], axis=p["dim"])),
    "log_softmax": (lambda p, opset: p["dtype"] is None and len(p["x"].shape) > 0 and _floats("x")(p, opset),
                    lambda g, ev, p: g.node("LogSoftmax", [g.name(ev.arrays["x"])], axis=p["dim"])),
    "linear": (lambda p, opset: len(p["weight"].shape) == 2 and len(p["x"].shape) >= 1 and _floats("x", "weight")(p, opset),
               _emit_linear),
    "layer_norm": (_floats("x", "weight", "bias"), _emit_layer_norm),
    "batch_norm": (lambda p, opset: not p["training"] and len(p["x"].shape) >= 2 and p["running_mean"] is not None
                   and p["running_var"] is not None and _floats("x", "weight", "bias")(p, opset), _emit_batch_norm),
    "embedding": (lambda p, opset: True,
                  lambda g, ev, p: g.node("Gather", [g.name(ev.arrays["weight"]), g.name(ev.arrays["index"])], axis=0)),
    "adaptive_avg_pool2d": (_is_global, lambda g, ev, p: g.node("GlobalAveragePool", [g.name(ev.arrays["x"])])),
    "leaky_relu": _unary_composite("LeakyRelu", alpha=lambda p: float(p["negative_slope"])),
    "elu": _unary_composite("Elu", alpha=lambda p: float(p["alpha"])),
    "hardsigmoid": _unary_composite("HardSigmoid", alpha=1.0 / 6, beta=0.5),
    "hardswish": _unary_composite("HardSwish"),
    "relu6": _clip(lambda p: 0.0, lambda p: 6.0),
    "hardtanh": _clip(lambda p: p["min_val"], lambda p: p["max_val"]),
}


# -- recurrent layers as one ONNX LSTM/GRU node -------------------------------------------------------

# PyTorch's gate blocks in ONNX's order: LSTM i f g o -> i o f c, GRU r z n -> z r h
_GATE_ORDER = {"LSTM": (0, 3, 1, 2), "GRU": (1, 0, 2)}


def _hook_recurrent(model, trace):
    """Make each LSTM/GRU of ``model`` record one ``module`` event (the ops of its unrolled
    forward are run for their values and dropped) where ONNX's operator says the same."""
    from ember.nn.recurrent import GRU, LSTM
    for m in model.modules():
        if type(m) in (LSTM, GRU):
            object.__setattr__(m, "forward", _recurrent_forward(m, type(m).forward, trace))


def _recurrent_forward(m, forward, trace):
    def hooked(x, hx=None):
        start = len(trace.events)
        out = forward(m, x, hx)
        if hx is not None or len(x.shape) != 3 or x.device is not trace or x.dtype.name != "float32":
            return out
        del trace.events[start:]
        flat = _flat_outputs(out)
        arrays = {"x": x._data}
        for n, p in m.named_parameters():
            arrays[n] = p.value._data
        trace.events.append(Event("module", arrays, (m.NAME, m.num_layers, m.hidden_size, m.bidirectional,
                                                     m.batch_first, m.bias), [t._data for t in flat]))
        return out
    return hooked


def _gates(g, w, kind, hidden):
    """``w`` ([G·H, ...] in PyTorch's gate order) in ONNX's order."""
    order = _GATE_ORDER[kind]
    parts = g.node("Split", [g.name(w), g.np_const([hidden] * len(order), dt.int64)], n_out=len(order), axis=0)
    return g.node("Concat", [parts[i] for i in order], axis=0)


def _emit_recurrent(g, ev):
    kind, layers, hidden, bidirectional, batch_first, bias = ev.params
    dirs = ("", "_reverse") if bidirectional else ("",)
    x = g.name(ev.arrays["x"])
    if batch_first:
        x = g.node("Transpose", [x], perm=[1, 0, 2])
    zero = g.np_const([0], dt.int64)
    finals = []
    for layer in range(layers):
        ws, rs, bs = [], [], []
        for d in dirs:
            arr = lambda n: ev.arrays["%s_l%d%s" % (n, layer, d)]  # noqa: E731
            ws.append(g.node("Unsqueeze", [_gates(g, arr("weight_ih"), kind, hidden), zero]))
            rs.append(g.node("Unsqueeze", [_gates(g, arr("weight_hh"), kind, hidden), zero]))
            if bias:
                both = g.node("Concat", [_gates(g, arr("bias_ih"), kind, hidden),
                                         _gates(g, arr("bias_hh"), kind, hidden)], axis=0)
                bs.append(g.node("Unsqueeze", [both, zero]))
        stack = lambda vs: vs[0] if len(vs) == 1 else g.node("Concat", vs, axis=0)  # noqa: E731
        ins = [x, stack(ws), stack(rs)] + ([stack(bs)] if bias else [])
        attrs = dict(hidden_size=hidden, direction="bidirectional" if bidirectional else "forward")
        if kind == "GRU":
            attrs["linear_before_reset"] = 1
        outs = g.node(kind, ins, n_out=3 if kind == "LSTM" else 2, **attrs)
        y = g.node("Transpose", [outs[0]], perm=[0, 2, 1, 3])  # (L, D, N, H) -> (L, N, D, H)
        x = g.node("Reshape", [y, g.np_const([0, 0, -1], dt.int64)])
        finals.append(outs[1:])
    y = g.node("Transpose", [x], perm=[1, 0, 2]) if batch_first else x
    results = [y] + [g.node("Concat", [f[i] for f in finals], axis=0) if layers > 1 else finals[0][i]
                     for i in range(len(finals[0]))]
    return results


# -- export -------------------------------------------------------------------------------------------

def _flat_outputs(out):
    if type(out) is Tensor:
        return [out]
    if type(out) in (tuple, list):
        flat = []
        for o in out:
            flat.extend(_flat_outputs(o))
        return flat
    raise ArgumentTypeError("onnx.export: expected forward to return tensors (or tuples of them), found %s"
                            % type(out).__name__)


def _inputs(example_input):
    xs = list(example_input) if type(example_input) in (tuple, list) else [example_input]
    for x in xs:
        if type(x) is not Tensor:
            raise ArgumentTypeError("onnx.export: expected example_input to be a Tensor or a tuple of Tensors, "
                                    "found %s" % type(x).__name__)
    if not xs:
        _fail("expected at least one example input, found none")
    return xs


def _trace(model, device, xs, opset):
    trace = Trace(device, opset)
    _hook_recurrent(model, trace)
    model.to(trace)
    from ember.device import set_default_device
    default = set_default_device(trace)  # tensors forward makes without device= are traced constants
    try:
        ins = [x.to(device).to(trace) for x in xs]
        try:
            out = model(*ins)
        except DeviceError as e:
            _fail("forward met a tensor that is not on the module's device (%s); make tensors in forward "
                  "with device=x.device so the trace sees them" % (e,))
        outs = _flat_outputs(out)
        named = {}
        for n, t in model.named_tensors():
            named.setdefault(t._data.id, n)
        leaves = {t._data.id: t._data for _, t in model.named_tensors()}
        return trace, [t._data for t in ins], [t._data for t in outs], named, leaves
    finally:
        set_default_device(default)
        model.to(device)


def _grow_batch(x, batch_dim):
    from ember.movement import cat
    return cat([x, x.narrow(batch_dim, 0, 1)], batch_dim)


def _module_device(model):
    for _, t in model.named_tensors():
        return t.device
    import ember
    return ember.Cpu()


def export(module, example_input, path, opset=DEFAULT_OPSET, dynamic_batch=True, batch_dim=0,
           input_names=None, output_names=None):
    """Trace ``module`` on ``example_input`` (a Tensor or a tuple of them) and write an ONNX model to
    ``path``; returns the ``onnx.ModelProto``.

    Parameters and buffers become initializers named as in ``state_dict()``. With ``dynamic_batch``
    dim ``batch_dim`` of every input (and what follows from it) is the symbolic ``batch``. The module
    runs in evaluation mode on a copy (``fork``), so ``module`` itself is untouched. An op with no
    ONNX form is an ``ArgumentError`` naming it.

        export(nn.Sequential(nn.Linear(4, 2), nn.ReLU()), ember.randn(1, 4), "mlp.onnx")
    """
    try:
        import onnx
    except ImportError:
        raise ImportError("onnx.export: the onnx package is missing; install it with pip install ember[onnx]")
    from ember.nn import Module
    if not isinstance(module, Module):
        raise ArgumentTypeError("onnx.export: expected an ember.nn.Module, found %s" % type(module).__name__)
    newest = onnx.defs.onnx_opset_version()
    if type(opset) is not int or not MIN_OPSET <= opset <= newest:
        _fail("expected opset an int from %d to %d (what the installed onnx knows), found %r"
              % (MIN_OPSET, newest, opset))
    xs = _inputs(example_input)
    if dynamic_batch:
        for x in xs:
            if not 0 <= batch_dim < len(x.shape):
                _fail("expected batch_dim in 0..%d for an input of shape %s, found %r"
                      % (len(x.shape) - 1, x.shape, batch_dim))
            if x.shape[batch_dim] != xs[0].shape[batch_dim]:
                _fail("expected every input to have the same batch size in dim %d, found shapes %s"
                      % (batch_dim, [x.shape for x in xs]))
    model = module.fork().eval()
    device = _module_device(model)
    t1, ins1, outs1, named, leaves = _trace(model, device, xs, opset)
    if dynamic_batch:
        t2, ins2, outs2, _, _ = _trace(model, device, [_grow_batch(x.to(device), batch_dim) for x in xs], opset)
    else:
        t2, ins2, outs2 = t1, ins1, outs1
    _same_stream(t1, t2)

    in_names = list(input_names) if input_names else (["input"] if len(xs) == 1 else ["input_%d" % i for i in range(len(xs))])
    out_names = list(output_names) if output_names else (["output"] if len(outs1) == 1 else ["output_%d" % i for i in range(len(outs1))])
    if len(in_names) != len(xs) or len(out_names) != len(outs1):
        _fail("expected %d input names and %d output names, found %d and %d"
              % (len(xs), len(outs1), len(in_names), len(out_names)))
    names = dict(named)
    for a, n in zip(ins1, in_names):
        names[a.id] = n
    b1 = xs[0].shape[batch_dim] if dynamic_batch else 0
    g = Graph(onnx, opset, device, names, in_names[0], batch_dim, b1, b1 + 1 if dynamic_batch else b1)
    used = set()
    for ev in t1.events:
        for a in _arrays_of(ev):
            used.add(a.id)
    for a in outs1:
        used.add(a.id)
    inits = []
    for aid, n in named.items():
        if aid in used:
            inits.append(onnx.helper.make_tensor(n, _ONNX_DTYPE[leaves[aid].dtype.name], list(leaves[aid].shape),
                                                 device.to_bytes(leaves[aid].value), raw=True))
    _emit(g, t1, t2, set(a.id for a in outs1))

    outputs = []
    for a1, a2, n in zip(outs1, outs2, out_names):
        src = g.name(a1) if a1.id in g.names else _fail("forward returned a tensor the trace did not see")
        g.nodes.append(onnx.helper.make_node("Identity", [src], [n], name="output_%s" % n))
        outputs.append(_value_info(onnx, n, a1, a2, g))
    inputs = [_value_info(onnx, n, a1, a2, g) for a1, a2, n in zip(ins1, ins2, in_names)]
    graph = onnx.helper.make_graph(g.nodes, "ember", inputs, outputs, inits + g.inits)
    model_proto = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                         producer_name="ember")
    model_proto.ir_version = min(model_proto.ir_version, 10)
    onnx.checker.check_model(model_proto)
    onnx.save(model_proto, path)
    return model_proto


def _arrays_of(ev):
    return list(ev.arrays.values()) if type(ev.arrays) is dict else ev.arrays


def _value_info(onnx, name, a1, a2, g):
    dims = []
    for s1, s2 in zip(a1.shape, a2.shape):
        if s1 == s2 or g.b1 == g.b2:
            dims.append(s1)
        elif s1 == g.b1 and s2 == g.b2:
            dims.append("batch")
        else:
            dims.append(None)
    return onnx.helper.make_tensor_value_info(name, _ONNX_DTYPE[a1.dtype.name], dims)


def _same_stream(t1, t2):
    if len(t1.events) != len(t2.events) or any(
            e1.op != e2.op or (e1.op in ("composite", "module") and e1.params[0] != e2.params[0])
            or (e1.op in ("unary", "binary", "reduce", "scan", "pool") and e1.params[0] != e2.params[0])
            for e1, e2 in zip(t1.events, t2.events)):
        _fail("forward ran different ops for batch sizes that differ by one; export needs a forward whose "
              "ops do not depend on the batch size (or dynamic_batch=False)")


def _emit(g, t1, t2, outputs):
    consumers = {}
    for ev in t1.events:
        for a in _arrays_of(ev):
            consumers.setdefault(a.id, set()).add(ev.op)
    for ev, ev2 in zip(t1.events, t2.events):
        if ev.op == "expand" and ev.out.id not in outputs and consumers.get(ev.out.id, {"x"}) <= set(_BROADCASTING):
            g.names[ev.out.id] = g.name(ev.params[0])
            continue
        if ev.op == "module":
            for a, n in zip(ev.out, _emit_recurrent(g, ev)):
                g.names[a.id] = n
            continue
        if ev.op == "composite":
            name, plain = ev.params
            out = COMPOSITE_EXPORTS[name][1](g, ev, plain)
        else:
            out = PRIMITIVE_EXPORTS[ev.op](g, ev, ev2)
        if ev.op == "sort":
            g.names[ev.out[0].id], g.names[ev.out[1].id] = out
        else:
            g.names[ev.out.id] = out
