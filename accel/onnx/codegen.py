"""``ember import-onnx``: an ONNX model as a readable Python file and a safetensors record.

The file holds one ``Module`` subclass: a node that maps onto an ember layer (Conv -> ``nn.Conv2d``,
Gemm and MatMul(+Add) -> ``nn.Linear``, BatchNormalization -> ``nn.BatchNorm2d``, LayerNormalization ->
``nn.LayerNorm``, LSTM -> ``nn.LSTM``) becomes a named layer, every
other parameter a ``Param`` and every large constant a buffer; ``forward`` has one line of plain
ember calls per node that stays after folding, with small constants (reshape targets, axes,
scalars) written as literals. It imports only the ``ember`` core, so it runs on MicroPython.
The record is the module's own ``save``, so ``Model.from_record(path)`` loads it.
"""
import keyword
import re

import ember
from ember.errors import ArgumentError

from . import load_plan
from .ops.util import ints, floats

LITERAL_MAX = 64  # constants up to this many elements are written into the code


def _ident(name, taken):
    base = re.sub(r"[^0-9A-Za-z_]", "_", name) or "v"
    if base[0].isdigit() or keyword.iskeyword(base) or base in ("ember", "nn", "F", "self", "Param"):
        base = "v_" + base
    out, i = base, 1
    while out in taken:
        i += 1
        out = "%s_%d" % (base, i)
    taken.add(out)
    return out


def _dtype_name(t):
    return "ember." + t.dtype.name


def _literal(t):
    vals = t.tolist()
    return repr(vals)


class _Writer:
    def __init__(self, plan, class_name):
        self.plan, self.class_name = plan, class_name
        self.params = dict(plan.params)
        # an Identity of a parameter (torch's exporter shares equal initializers so) is the parameter
        self.alias = {}
        self.steps = []
        for s in plan.steps:
            src = self.alias.get(s.inputs[0], s.inputs[0]) if s.inputs else None
            if s.node.op_type == "Identity" and src in self.params:
                self.alias[s.outputs[0]] = src
            else:
                self.steps.append(s)
        self.uses = {}
        self.consumers = {}
        for s in self.steps:
            for i in s.inputs:
                i = self.alias.get(i, i)
                self.uses[i] = self.uses.get(i, 0) + 1
                self.consumers.setdefault(i, []).append(s)
        self.skip = set()  # steps a layer took in (the Add after a MatMul that became a Linear)
        self.helpers = []  # module-level functions the forward lines call
        self.locals = {}
        self.taken = set()
        self.attr_names = set()
        self.init = []          # lines of __init__
        self.lines = []         # lines of forward
        self.assign = []        # (attribute path in the module, onnx tensor) for the record
        self.absorbed = set()
        self.problems = []

    # -- names ---------------------------------------------------------------------------------
    def local(self, name):
        v = self.locals.get(name)
        if v is None:  # torch's exporter names values /block/Conv_output_0: keep the readable part
            short = name.strip("/").replace("/", "_")
            if short.endswith("_output_0"):
                short = short[:-len("_output_0")]
            v = self.locals[name] = _ident(short or name, self.taken)
        return v

    def attr(self, name):
        return _ident(name, self.attr_names)

    def value(self, name, scalar_ok=False):
        """The expression for ONNX value ``name`` inside forward."""
        if not name:
            return "None"
        name = self.alias.get(name, name)
        if name in self.locals:
            return self.locals[name]
        if name in self.params:
            a = self.attr(name)
            t = self.param(name)
            self.init.append("self.%s = Param(ember.zeros(%r, dtype=%s))" % (a, tuple(t.shape), _dtype_name(t)))
            self.assign.append((a, t))
            self.locals[name] = "self." + a
            return self.locals[name]
        if name in self.plan.consts:
            t = self.plan.consts[name]
            if scalar_ok and t.numel() == 1:
                return repr(t.reshape(-1).tolist()[0])
            if t.numel() <= LITERAL_MAX:
                return "ember.tensor(%s, dtype=%s)" % (_literal(t), _dtype_name(t))
            a = self.attr(name)
            self.init.append("self.register_buffer(%r, ember.zeros(%r, dtype=%s))" % (a, tuple(t.shape), _dtype_name(t)))
            self.assign.append((a, t))
            self.locals[name] = "self." + a
            return self.locals[name]
        raise ArgumentError("import-onnx: value %r has no producer" % name)

    def const(self, name):
        return self.plan.consts.get(name) if name else None

    def param(self, name):
        return self.params.get(self.alias.get(name, name)) if name else None

    def is_param(self, name, single_use=True):
        name = self.alias.get(name, name)
        return name in self.params and (not single_use or self.uses.get(name, 0) == 1)

    # -- layers --------------------------------------------------------------------------------
    def layer(self, node, kind):
        """A layer's attribute name from its node's name: ``/blocks/blocks.0/c1/Conv`` -> ``blocks_0_c1``."""
        parts = [p for p in (node.name or "").split("/") if p]
        if len(parts) > 1 and parts[-1].split("_")[0] == node.op_type:
            parts = parts[:-1]
        dedup = []
        for p in parts:
            for q in p.split("."):
                if not dedup or dedup[-1] != q:
                    dedup.append(q)
        return self.attr("_".join(dedup) or kind)

    def try_layer(self, s):
        n = s.node
        i = s.inputs
        if n.op_type == "Conv" and self.is_param(i[1]) and len(self.param(i[1]).shape) == 4 and \
                (len(i) < 3 or not i[2] or self.is_param(i[2])) and n.attr("auto_pad", "NOTSET") in ("NOTSET", "VALID"):
            pads = n.attr("pads", [0, 0, 0, 0]) if n.attr("auto_pad", "NOTSET") == "NOTSET" else [0, 0, 0, 0]
            if pads[:2] != pads[2:]:
                return None
            w = self.param(i[1])
            g = n.attr("group", 1)
            has_bias = len(i) > 2 and bool(i[2])
            a = self.layer(n, "conv")
            self.init.append("self.%s = nn.Conv2d(%d, %d, %r, stride=%r, padding=%r, dilation=%r, groups=%d, bias=%r)"
                             % (a, w.shape[1] * g, w.shape[0], tuple(w.shape[2:]), tuple(n.attr("strides", [1, 1])),
                                tuple(pads[:2]), tuple(n.attr("dilations", [1, 1])), g, has_bias))
            self.assign.append((a + ".weight", w))
            if has_bias:
                self.assign.append((a + ".bias", self.param(i[2])))
            return "self.%s(%s)" % (a, self.value(i[0]))
        if n.op_type == "Gemm" and self.is_param(i[1]) and len(self.param(i[1]).shape) == 2 and \
                n.attr("alpha", 1.0) == 1.0 and n.attr("beta", 1.0) == 1.0 and not n.attr("transA", 0) and \
                (len(i) < 3 or not i[2] or (self.is_param(i[2]) and len(self.param(i[2]).shape) == 1)):
            w = self.param(i[1])
            if not n.attr("transB", 0):
                w = w.T
            has_bias = len(i) > 2 and bool(i[2])
            a = self.layer(n, "linear")
            self.init.append("self.%s = nn.Linear(%d, %d, bias=%r)" % (a, w.shape[1], w.shape[0], has_bias))
            self.assign.append((a + ".weight", w))
            if has_bias:
                self.assign.append((a + ".bias", self.param(i[2])))
            return "self.%s(%s)" % (a, self.value(i[0]))
        if n.op_type == "MatMul" and self.is_param(i[1]) and len(self.param(i[1]).shape) == 2:
            return self._matmul_linear(s)
        if n.op_type == "LSTM":
            return self._lstm(s)
        if n.op_type == "BatchNormalization" and all(self.is_param(x) for x in i[1:5]) and \
                self.plan.ranks.get(i[0]) == 4 and not n.attr("training_mode", 0):
            c = self.param(i[1]).shape[0]
            a = self.layer(n, "bn")
            self.init.append("self.%s = nn.BatchNorm2d(%d, eps=%r)" % (a, c, n.attr("epsilon", 1e-5)))
            for part, name in zip(("weight", "bias", "running_mean", "running_var"), i[1:5]):
                self.assign.append((a + "." + part, self.param(name)))
            return "self.%s(%s)" % (a, self.value(i[0]))
        if n.op_type == "LayerNormalization" and self.is_param(i[1]) and (len(i) < 3 or not i[2] or self.is_param(i[2])) \
                and n.attr("axis", -1) in (-1, self.plan.ranks.get(i[0], 0) - 1) and len([o for o in s.outputs if o]) == 1:
            shape = tuple(self.param(i[1]).shape)
            has_bias = len(i) > 2 and bool(i[2])
            a = self.layer(n, "norm")
            self.init.append("self.%s = nn.LayerNorm(%r, eps=%r%s)" % (a, shape, n.attr("epsilon", 1e-5),
                                                                       "" if has_bias else ", bias=False"))
            self.assign.append((a + ".weight", self.param(i[1])))
            if has_bias:
                self.assign.append((a + ".bias", self.param(i[2])))
            return "self.%s(%s)" % (a, self.value(i[0]))
        return None

    def _matmul_linear(self, s):
        """MatMul by a weight (and an Add of a bias right after it, when that is its only use) -> Linear."""
        w = self.param(s.inputs[1])
        bias, out = None, s.outputs[0]
        after = self.consumers.get(out, [])
        if len(after) == 1 and after[0].node.op_type == "Add" and out not in self.plan.outputs:
            other = [x for x in after[0].inputs if x != out]
            if len(other) == 1 and self.is_param(other[0]) and tuple(self.param(other[0]).shape) == (w.shape[1],):
                bias = self.param(other[0])
                self.skip.add(id(after[0]))
                out = after[0].outputs[0]
        a = self.layer(s.node, "linear")
        self.init.append("self.%s = nn.Linear(%d, %d, bias=%r)" % (a, w.shape[0], w.shape[1], bias is not None))
        self.assign.append((a + ".weight", w.T))
        if bias is not None:
            self.assign.append((a + ".bias", bias))
        return "self.%s(%s)" % (a, self.value(s.inputs[0])), [out]

    def _lstm(self, s):
        """An LSTM with ONNX's defaults (no peepholes, clip or sequence lengths) -> nn.LSTM; its
        outputs reshaped to ONNX's (seq, directions, batch, hidden) by a helper in the file."""
        n, i = s.node, s.inputs + [""] * (8 - len(s.inputs))
        if not (self.is_param(i[1]) and self.is_param(i[2]) and (not i[3] or self.is_param(i[3]))) or i[4] or i[7] \
                or bool(i[5]) != bool(i[6]) or (i[5] and n.attr("layout", 0)) \
                or n.attr("activations") or n.attr("clip") is not None or n.attr("input_forget", 0):
            return None
        W, R = self.param(i[1]), self.param(i[2])
        dirs, H = W.shape[0], n.attr("hidden_size")
        bidir = n.attr("direction", "forward") == "bidirectional"
        if n.attr("direction", "forward") == "reverse":
            return None
        first = bool(n.attr("layout", 0))
        a = self.layer(n, "lstm")
        self.init.append("self.%s = nn.LSTM(%d, %d, batch_first=%r, bidirectional=%r)" % (a, W.shape[2], H, first, bidir))
        for d in range(dirs):
            suffix = "_l0" + ("_reverse" if d else "")
            self.assign.append((a + ".weight_ih" + suffix, _ifgo(W[d], H)))
            self.assign.append((a + ".weight_hh" + suffix, _ifgo(R[d], H)))
            b = self.param(i[3])[d] if i[3] else ember.zeros(8 * H, dtype=W.dtype, device=W.device)
            self.assign.append((a + ".bias_ih" + suffix, _ifgo(b.narrow(0, 0, 4 * H), H)))
            self.assign.append((a + ".bias_hh" + suffix, _ifgo(b.narrow(0, 4 * H, 4 * H), H)))
        if _LSTM_HELPER not in self.helpers:
            self.helpers.append(_LSTM_HELPER)
        state = ", (%s, %s)" % (self.value(i[5]), self.value(i[6])) if i[5] else ""
        return "_lstm_outputs(self.%s(%s%s), %d, %r)" % (a, self.value(i[0]), state, dirs, first), s.outputs

    # -- forward lines -------------------------------------------------------------------------
    def step(self, s):
        n = s.node
        if id(s) in self.skip:
            return
        expr = self.try_layer(s)
        outputs = s.outputs
        if type(expr) is tuple:
            expr, outputs = expr
        if expr is None:
            emit = EMITTERS.get(n.op_type)
            if emit is None or n.graphs:
                self.problems.append("%s: no code generation for this op" % n.label())
            else:
                try:
                    expr = emit(self, n, s.inputs)
                except _NoCode as e:
                    self.problems.append("%s: %s" % (n.label(), e))
        if expr is None:  # (the outputs get names anyway, so one error lists every such node)
            for o in s.outputs:
                if o:
                    self.local(o)
            return
        outs = [self.local(o) if o else "_" for o in outputs]
        if len(outs) > 1 and n.op_type not in _MULTI:
            outs = outs[:1]
        if n.op_type == "LSTM":
            outs = (outs + ["_"] * 3)[:3]
        self.lines.append("%s = %s" % (", ".join(outs), expr))

    def write(self):
        for name in self.plan.inputs:
            self.local(name)
        for s in self.steps:
            self.step(s)
        if self.problems:
            raise ArgumentError("import-onnx: %s: %d node(s) have no code generation:\n  %s"
                                % (self.plan.where, len(self.problems), "\n  ".join(self.problems)))
        outs = [self.value(o) for o in self.plan.outputs]
        args = ", ".join(self.locals[i] for i in self.plan.inputs)
        body = ["class %s(nn.Module):" % self.class_name,
                '    """Generated by ember import-onnx from %s."""' % self.plan.where.replace("\\", "/").split("/")[-1],
                "",
                "    def __init__(self):",
                "        super().__init__()"]
        body += ["        " + line for line in self.init]
        body += ["        self.eval()  # an imported graph is an inference graph: BatchNorm uses its running stats"]
        body += ["", "    def forward(self, %s):" % args]
        body += ["        " + line for line in self.lines]
        body += ["        return %s" % (outs[0] if len(outs) == 1 else "(%s)" % ", ".join(outs))]
        head = ['"""%s: generated by ember import-onnx; plain ember calls, runs on MicroPython too."""'
                % self.class_name, "import ember", "import ember.nn as nn", "import ember.nn.functional as F",
                "from ember.nn import Param", "", ""]
        for h in self.helpers:
            head += h.strip("\n").split("\n") + ["", ""]
        return "\n".join(head + body) + "\n"


_LSTM_HELPER = '''
def _lstm_outputs(result, directions, batch_first):
    """An nn.LSTM's (out, (h, c)) as ONNX's Y, Y_h, Y_c."""
    out, (h, c) = result
    y = out.reshape(out.shape[0], out.shape[1], directions, -1)
    if batch_first:
        return y, h.permute(1, 0, 2), c.permute(1, 0, 2)
    return y.permute(0, 2, 1, 3), h, c
'''


def _ifgo(t, H):
    """ONNX's gate order (input, output, forget, cell) as PyTorch's and ember's (input, forget, cell, output)."""
    gi, go, gf, gc = (t.narrow(0, k * H, H) for k in range(4))
    return ember.cat([gi, gf, gc, go], dim=0)


class _NoCode(Exception):
    pass


_MULTI = frozenset(("Split", "TopK", "LSTM"))


def _static(w, name, what):
    t = w.const(name)
    if t is None:
        raise _NoCode("%s must be known at import (found a value computed at run time)" % what)
    return t


def _bin(symbol):
    return lambda w, n, i: "%s %s %s" % (w.value(i[0], True), symbol, w.value(i[1], True))


def _method(name, *fixed):
    return lambda w, n, i: "%s.%s(%s)" % (w.value(i[0]), name, ", ".join(fixed))


def _fn(name):
    return lambda w, n, i: "%s(%s)" % (name, w.value(i[0]))


def _reshape(w, n, i):
    x = w.value(i[0])
    if w.const(i[1]) is None:  # a target computed from shapes at run time (a dynamic batch)
        return "%s.reshape(*%s.tolist())" % (x, w.value(i[1]))
    target = ints(w.const(i[1]))
    if not n.attr("allowzero", 0) and 0 in target:
        parts = ["%s.shape[%d]" % (x, k) if d == 0 else str(d) for k, d in enumerate(target)]
        return "%s.reshape(%s)" % (x, ", ".join(parts))
    return "%s.reshape(%s)" % (x, ", ".join(str(d) for d in target))


def _flatten(w, n, i):
    a = n.attr("axis", 1)
    x = w.value(i[0])
    if a == 0:
        return "%s.reshape(1, -1)" % x
    if a == 1:
        return "%s.reshape(%s.shape[0], -1)" % (x, x)
    raise _NoCode("Flatten axis %d" % a)


def _axes_arg(w, n, i, slot, attr):
    if n.opset >= 13 and len(i) > slot and i[slot]:
        return ints(_static(w, i[slot], "the axes"))
    return n.attr(attr)


def _squeeze(w, n, i):
    axes = _axes_arg(w, n, i, 1, "axes")
    x = w.value(i[0])
    if axes is None:
        return "%s.squeeze()" % x
    out = x
    for a in sorted(axes, reverse=True):
        out = "%s.squeeze(%d)" % (out, a)
    return out


def _unsqueeze(w, n, i):
    axes = _axes_arg(w, n, i, 1, "axes")
    out = w.value(i[0])
    for a in sorted(axes):
        out = "%s.unsqueeze(%d)" % (out, a)
    return out


def _softmax(name):
    def emit(w, n, i):
        if n.opset < 13 and n.attr("axis", 1) != -1:
            raise _NoCode("Softmax before opset 13 flattens from its axis")
        return "F.%s(%s, %d)" % (name, w.value(i[0]), n.attr("axis", -1))
    return emit


def _pool(kind):
    def emit(w, n, i):
        kernel = tuple(n.attr("kernel_shape"))
        pads = n.attr("pads", [0] * 2 * len(kernel))
        if len(kernel) != 2 or pads[:2] != pads[2:] or n.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID") \
                or any(p > k // 2 for p, k in zip(pads, kernel)):
            raise _NoCode("a pool ember's 2-D pools do not take")
        strides = tuple(n.attr("strides", [1, 1]))
        ceil = bool(n.attr("ceil_mode", 0))
        x = w.value(i[0])
        if kind == "max":
            return "F.max_pool2d(%s, %r, %r, %r, %r, %r)" % (x, kernel, strides, tuple(pads[:2]),
                                                           tuple(n.attr("dilations", [1, 1])), ceil)
        return "F.avg_pool2d(%s, %r, %r, %r, %r, %r)" % (x, kernel, strides, tuple(pads[:2]), ceil,
                                                       bool(n.attr("count_include_pad", 0)))
    return emit


def _gemm(w, n, i):
    a, b = w.value(i[0]), w.value(i[1])
    if n.attr("transA", 0):
        a += ".T"
    if n.attr("transB", 0):
        b += ".T"
    out = "ember.matmul(%s, %s)" % (a, b)
    if n.attr("alpha", 1.0) != 1.0:
        out = "%s * %r" % (out, n.attr("alpha"))
    if len(i) > 2 and i[2]:
        c = w.value(i[2])
        out = "%s + %s" % (out, c if n.attr("beta", 1.0) == 1.0 else "%s * %r" % (c, n.attr("beta")))
    return out


def _conv(w, n, i):
    pads = n.attr("pads", [0, 0, 0, 0])
    if n.attr("auto_pad", "NOTSET") not in ("NOTSET", "VALID") or pads[:2] != pads[2:]:
        raise _NoCode("a Conv with uneven or automatic pads")
    return "F.conv2d(%s, %s, %s, %r, %r, %r, %d)" % (w.value(i[0]), w.value(i[1]),
                                                    w.value(i[2]) if len(i) > 2 else "None",
                                                    tuple(n.attr("strides", [1, 1])), tuple(pads[:2]),
                                                    tuple(n.attr("dilations", [1, 1])), n.attr("group", 1))


def _concat(w, n, i):
    return "ember.cat([%s], dim=%d)" % (", ".join(w.value(x) for x in i), n.attr("axis"))


def _transpose(w, n, i):
    perm = n.attr("perm")
    x = w.value(i[0])
    return "%s.permute(%s)" % (x, ", ".join(str(p) for p in perm)) if perm else "%s.T" % x


def _gather(w, n, i):
    idx = w.const(i[1])
    a = n.attr("axis", 0)
    x = w.value(i[0])
    if idx is not None and idx.dim() == 0:
        return "%s.narrow(%d, %d, 1).squeeze(%d)" % (x, a, int(idx.item()), a)
    if idx is not None and idx.dim() == 1:
        return "ember.index_select(%s, %d, %s)" % (x, a, w.value(i[1]))
    raise _NoCode("Gather with a computed or multi-dim index")


def _clip(w, n, i):
    lo = hi = None
    if n.opset >= 11:
        lo = floats(_static(w, i[1], "Clip min"))[0] if len(i) > 1 and i[1] else None
        hi = floats(_static(w, i[2], "Clip max"))[0] if len(i) > 2 and i[2] else None
    else:
        lo, hi = n.attr("min"), n.attr("max")
    return "%s.clamp(%r, %r)" % (w.value(i[0]), lo, hi)


def _reduce_mean(w, n, i):
    axes = _axes_arg(w, n, i, 1, "axes") if n.opset >= 18 else n.attr("axes")
    keep = bool(n.attr("keepdims", 1))
    return "%s.mean(dim=%r, keepdim=%r)" % (w.value(i[0]), tuple(axes) if axes else None, keep)


def _shape(w, n, i):
    if n.attr("start") is not None or n.attr("end") is not None:
        raise _NoCode("Shape with start/end")
    return "ember.tensor(list(%s.shape), dtype=ember.int64)" % w.value(i[0])


def _cast(w, n, i):
    from .ops.util import onnx_dtype
    return "%s.to(%s)" % (w.value(i[0]), "ember." + onnx_dtype(n.attr("to"), n).name)


def _split(w, n, i):
    sizes = ints(w.const(i[1])) if n.opset >= 13 and len(i) > 1 and i[1] else n.attr("split")
    if not sizes:
        raise _NoCode("Split without sizes")
    return "ember.split(%s, %r, dim=%d)" % (w.value(i[0]), list(sizes), n.attr("axis", 0))


def _slice(w, n, i):
    if n.opset < 10:
        raise _NoCode("Slice before opset 10")
    starts, ends = ints(_static(w, i[1], "Slice starts")), ints(_static(w, i[2], "Slice ends"))
    axes = ints(_static(w, i[3], "Slice axes")) if len(i) > 3 and i[3] else list(range(len(starts)))
    steps = ints(_static(w, i[4], "Slice steps")) if len(i) > 4 and i[4] else [1] * len(starts)
    if any(s != 1 for s in steps) or any(a < 0 for a in axes):
        raise _NoCode("Slice with steps or negative axes")
    x = w.value(i[0])
    rank = max(axes) + 1
    parts = [":"] * rank
    for s, e, a in zip(starts, ends, axes):
        parts[a] = "%s:%s" % (s if s else "", e if e < 2 ** 62 else "")
    return "%s[%s]" % (x, ", ".join(parts))


def _layer_norm(w, n, i):
    scale = w.param(i[1])
    scale = scale if scale is not None else w.const(i[1])
    if scale is None or n.attr("axis", -1) != -1 or len([o for o in n.outputs if o]) > 1:
        raise _NoCode("a LayerNormalization over more than the last dim, or with its statistics as outputs")
    return "F.layer_norm(%s, %r, %s, %s, %r)" % (w.value(i[0]), tuple(scale.shape)[-1:], w.value(i[1]),
                                                w.value(i[2]) if len(i) > 2 else "None", n.attr("epsilon", 1e-5))


EMITTERS = {
    "LayerNormalization": _layer_norm,
    "Add": _bin("+"), "Sub": _bin("-"), "Mul": _bin("*"), "Div": _bin("/"),
    "Pow": lambda w, n, i: "%s.pow(%s)" % (w.value(i[0]), w.value(i[1], True)),
    "Relu": _fn("F.relu"), "Sigmoid": _method("sigmoid"), "Tanh": _method("tanh"), "Exp": _method("exp"),
    "Log": _method("log"), "Sqrt": _method("sqrt"), "Neg": lambda w, n, i: "-%s" % w.value(i[0]),
    "Abs": _method("abs"), "Erf": _method("erf"), "Reciprocal": _method("reciprocal"),
    "Identity": lambda w, n, i: w.value(i[0]), "Dropout": lambda w, n, i: w.value(i[0]),
    "LeakyRelu": lambda w, n, i: "F.leaky_relu(%s, %r)" % (w.value(i[0]), n.attr("alpha", 0.01)),
    "Softmax": _softmax("softmax"), "LogSoftmax": _softmax("log_softmax"),
    "MatMul": lambda w, n, i: "ember.matmul(%s, %s)" % (w.value(i[0]), w.value(i[1])),
    "Gemm": _gemm, "Conv": _conv, "Reshape": _reshape, "Flatten": _flatten, "Squeeze": _squeeze,
    "Unsqueeze": _unsqueeze, "Transpose": _transpose, "Concat": _concat, "Gather": _gather,
    "MaxPool": _pool("max"), "AveragePool": _pool("avg"), "Clip": _clip, "ReduceMean": _reduce_mean,
    "GlobalAveragePool": lambda w, n, i: "%s.mean(dim=(2, 3), keepdim=True)" % w.value(i[0]),
    "Shape": _shape, "Cast": _cast, "Split": _split, "Slice": _slice,
}


def generate(path_or_bytes, class_name="Model"):
    """(source text, the module it defines built with the model's weights): ``module.save(path)``
    writes the record the source's ``Model.from_record`` reads."""
    plan = load_plan(path_or_bytes, device=ember.Cpu(kernels="python"))
    writer = _Writer(plan, class_name)
    source = writer.write()
    space = {}
    exec(compile(source, "<import-onnx>", "exec"), space)
    module = space[class_name]()
    for path, t in writer.assign:
        target, name = module, path
        parts = path.split(".")
        for p in parts[:-1]:
            target = getattr(target, p)
        name = parts[-1]
        current = getattr(target, name)
        if tuple(current.shape) != tuple(t.shape):
            raise ArgumentError("import-onnx: %s: expected shape %s, found %s" % (path, current.shape, t.shape))
        setattr(target, name, t.to(current.dtype) if t.dtype != current.dtype else t)
    return source, module


def import_onnx(src, outdir, class_name="Model", module_name=None):
    """Write ``OUTDIR/<module_name>.py`` and ``OUTDIR/<module_name>.safetensors``; returns both paths."""
    import os
    module_name = module_name or re.sub(r"[^0-9A-Za-z_]", "_", os.path.splitext(os.path.basename(src))[0]) or "model"
    if module_name[0].isdigit():
        module_name = "m_" + module_name
    source, module = generate(src, class_name)
    os.makedirs(outdir, exist_ok=True)
    py = os.path.join(outdir, module_name + ".py")
    rec = os.path.join(outdir, module_name + ".safetensors")
    with open(py, "w") as f:
        f.write(source)
    module.save(rec)
    return py, rec
