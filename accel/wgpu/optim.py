"""The Wgpu device's fused optimizer updates: ``sgd_update`` and ``adam_update`` of a cohort
(float32, or float64 with shader-f64 and shader-int64) as one WGSL dispatch per parameter,
registered as Wgpu's built-in fused paths.

One dispatch per parameter, not per group: a kernel binds each of its arrays as a storage buffer
and adapters allow few per stage (8 by WebGPU's default), so a whole group would first be copied
into packed buffers, a pass as costly as the update; the dispatches of a step are recorded into
one submit anyway. The hyperparameters are read from the cohort's ``hyper`` array (a storage
buffer, refilled by a captured step), switches included, so one pipeline serves every step.

Each operation is the primitive's own WGSL (ops.py's recipe: compute type, expression, rounding to
the storage type), and each result passes through an xor with a parameter word that is always 0
(as compile_wgsl.py's fused kernels do), so the shader compiler folds nothing across operations
and contracts no ``a * b + c``: the values are the op-by-op ones bit for bit. Anything else
(float16, a view it cannot bind, too few bindings) runs the composite's body.
"""
from ember import dtypes
from ember.composite import COMPOSITES, register_fused
from ember.tensor import Tensor

from . import codegen, ops, wgsl_lib
from .arrays import WArray, numel
from .device import Wgpu

_ZERO = 63  # a parameter word left 0: the rounding barrier's


class _Kernel:
    """WGSL of one update: ``arrays`` names the storage bindings in order (each ``b<k>``, element
    offset in word ``k + 1``); ``op`` and ``op1`` give an op's result as the primitive stores it."""

    def __init__(self, dev, dtype, arrays):
        self.rt = dev.rt
        self.dtype = dtype
        self.st = dev.storage[dtype].wgsl
        self.arrays = arrays
        self.libs = set()
        self.lines = []

    def at(self, name):
        k = self.arrays.index(name)
        return "b%d[pw(%du) + i]" % (k, k + 1)

    def h(self, index):
        return "b%d[pw(%du) + %du]" % (self.arrays.index("hyper"), self.arrays.index("hyper") + 1, index)

    def on(self, index):
        return "%s != %s(0)" % (self.h(index), self.st)

    def _opaque(self, expr):
        z = "pw(%du)" % _ZERO
        if self.st == "f32":
            return "bitcast<f32>(bitcast<u32>(%s) ^ %s)" % (expr, z)
        return "bitcast<f64>(bitcast<u64>(%s) ^ u64(%s))" % (expr, z)

    def _stored(self, rec, expr):
        store, libs = ops.store(rec.ct, rec.out, self.st, rec.is_bool_expr)
        self.libs.update(rec.libs)
        self.libs.update(libs)
        return self._opaque(store.format(expr))

    def op(self, name, a, b):
        rec = ops.binary_recipe(name, self.dtype, self.rt.has_f64, self.rt.has_i64)
        load = ops.load(self.st, rec.ct)
        return self._stored(rec, rec.fn(load.format(a), load.format(b)))

    def op1(self, name, a):
        rec = ops.unary_recipe(name, self.dtype, self.rt.has_f64, self.rt.has_i64)
        return self._stored(rec, rec.fn(ops.load(self.st, rec.ct).format(a)))

    def emit(self, line):
        self.lines.append("  " + line + "\n")

    def source(self):
        types = [self.st] * len(self.arrays)
        return "".join([codegen.prelude(types, False), wgsl_lib.lib(self.libs), codegen.ENTRY % codegen.WG,
                        codegen.linear_index()] + self.lines + ["}\n"])


def _builder(dev, dtype, arrays, layout):
    """(kernel, h, on, op): ``h(name)`` reads a hyperparameter, ``on(name)`` tests a switch,
    ``op(name, a, b)`` is a binary op as its primitive computes it."""
    k = _Kernel(dev, dtype, arrays)
    return k, (lambda name: k.h(layout[name])), (lambda name: k.on(layout[name])), k.op


def _sgd_source(dev, dtype, arrays):
    from ember.accel.optim.updates import SGD_AT  # loaded with the optimizers that call this
    k, h, on, op = _builder(dev, dtype, arrays, SGD_AT)
    T = k.st
    k.emit("let x = %s;" % k.at("x"))
    k.emit("var g: %s = %s;" % (T, k.at("g")))
    k.emit("if (%s) { g = %s; }" % (on("maximize"), k.op1("neg", "g")))
    k.emit("if (%s) { g = %s; }" % (on("weight_decay_on"), op("add", "g", op("mul", "x", h("weight_decay")))))
    if "out_buf" in arrays:
        k.emit("if (%s) {" % on("momentum_on"))
        if "buf" in arrays:
            k.emit("  var b: %s = %s;" % (T, op("mul", k.at("buf"), h("momentum"))))
            k.emit("  if (%s) { b = %s; } else { b = %s; }"
                   % (on("damp_on"), op("add", "b", op("mul", "g", h("damp"))), op("add", "b", "g")))
        else:
            k.emit("  let b = g;")
        k.emit("  %s = b;" % k.at("out_buf"))
        nesterov = op("add", "g", op("mul", "b", h("momentum")))
        k.emit("  if (%s) { g = %s; } else { g = b; }" % (on("nesterov"), nesterov))
        k.emit("}")
    k.emit("%s = %s;" % (k.at("out_x"), op("sub", "x", op("mul", "g", h("lr")))))
    return k.source()


def _adam_source(dev, dtype, arrays):
    from ember.accel.optim.updates import ADAM_AT
    k, h, on, op = _builder(dev, dtype, arrays, ADAM_AT)
    T = k.st
    k.emit("var x: %s = %s;" % (T, k.at("x")))
    k.emit("var g: %s = %s;" % (T, k.at("g")))
    k.emit("let m = %s;" % k.at("m"))
    k.emit("if (%s) { g = %s; }" % (on("maximize"), k.op1("neg", "g")))
    k.emit("if (%s) {" % on("weight_decay_on"))
    k.emit("  if (%s) { x = %s; } else { g = %s; }"
           % (on("decoupled"), op("mul", "x", h("decay")), op("add", "g", op("mul", "x", h("weight_decay")))))
    k.emit("}")
    k.emit("let dw = %s;" % op("mul", op("sub", "g", "m"), h("lerp_weight")))
    k.emit("var mn: %s;" % T)
    k.emit("if (%s) { mn = %s; } else { mn = %s; }" % (on("lerp_high"), op("sub", "g", "dw"), op("add", "m", "dw")))
    k.emit("let vn = %s;" % op("add", op("mul", k.at("v"), h("beta2")),
                                op("mul", op("mul", "g", h("one_minus_beta2")), "g")))
    k.emit("%s = mn;" % k.at("out_m"))
    k.emit("%s = vn;" % k.at("out_v"))
    top = "vn"
    if "vmax" in arrays:
        k.emit("let top = %s;" % op("maximum", k.at("vmax"), "vn"))
        k.emit("%s = top;" % k.at("out_vmax"))
        top = "top"
    k.emit("let den = %s;" % op("add", op("div", k.op1("sqrt", top), h("bc2_sqrt")), h("eps")))
    k.emit("%s = %s;" % (k.at("out_x"), op("add", "x", op("mul", op("div", "mn", "den"), h("neg_step_size")))))
    return k.source()


def _device(hyper, lists):
    """The Wgpu device when every tensor is a WArray of it in a dtype this module fuses, else None."""
    dev = hyper.device
    if type(dev) is not Wgpu or type(hyper._data) is not WArray:
        return None
    dtype = hyper.dtype
    rt = dev.rt
    if not (dtype is dtypes.float32 or dtype is dtypes.float64 and rt.has_f64 and rt.has_i64):
        return None
    for ts in lists:
        for t in ts:
            if t is not None and (type(t) is not Tensor or type(t._data) is not WArray or t.dtype is not dtype
                                  or t.device != dev):
                return None
    return dev


def _run(dev, rule, dtype, named, size):
    """Dispatch the update over ``size`` elements; ``named``: [(binding name, WArray)] in order."""
    arrays = tuple(n for n, _ in named)
    rt = dev.rt
    key = ("optim", rule, dtype.name, arrays)
    entry = rt._pipelines.get(key)
    if entry is None:
        make = _sgd_source if rule == "sgd" else _adam_source
        entry = rt.pipeline(key, lambda: make(dev, dtype, arrays), len(arrays))
    words = [0] * 64
    words[0] = size
    for k, (_, a) in enumerate(named):
        words[k + 1] = dev._base(a)
    rt.dispatch(entry, [a.block.buffer for _, a in named], words, (size + codegen.WG - 1) // codegen.WG)


def _bindings_fit(dev, n):
    return dev.rt.device.limits.get("max-storage-buffers-per-shader-stage", 8) >= n


def _tensor(a, like):
    return Tensor(a, like.shape, like.dtype, like.device)


def _sgd_update(hyper, values, params, grads, momentum_buffers):
    dev = _device(hyper, (params, grads, momentum_buffers))
    if dev is None or not _bindings_fit(dev, 6):
        return COMPOSITES["sgd_update"](hyper, values, params, grads, momentum_buffers)
    from ember.accel.optim.updates import SGD_AT
    momentum = values[SGD_AT["momentum_on"]] != 0
    dtype = hyper.dtype
    h = dev._contiguous(hyper._data)
    new_x, new_b = [], []
    for x, g, buf in zip(params, grads, momentum_buffers):
        ox = dev._alloc(x.shape, dtype)
        named = [("x", dev._contiguous(x._data)), ("g", dev._contiguous(g._data))]
        if momentum and buf is not None:
            named.append(("buf", dev._contiguous(buf._data)))
        named += [("hyper", h), ("out_x", ox)]
        ob = None
        if momentum:
            ob = dev._alloc(x.shape, dtype)
            named.append(("out_buf", ob))
        n = numel(x.shape)
        if n:
            _run(dev, "sgd", dtype, named, n)
        new_x.append(_tensor(ox, x))
        new_b.append(_tensor(ob, x) if ob is not None else None)
    return new_x, new_b


def _adam_update(hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
    from ember.accel.optim.updates import ADAM_AT
    amsgrad = values[ADAM_AT["amsgrad"]] != 0
    dev = _device(hyper, (params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs))
    if dev is None or not _bindings_fit(dev, 10 if amsgrad else 8) or (
            amsgrad and any(t is None for t in max_exp_avg_sqs)):
        return COMPOSITES["adam_update"](hyper, values, params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs)
    dtype = hyper.dtype
    h = dev._contiguous(hyper._data)
    out = ([], [], [], [])
    for x, g, m, v, vmax in zip(params, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs):
        named = [("x", x), ("g", g), ("m", m), ("v", v)] + ([("vmax", vmax)] if amsgrad else [])
        named = [(n, dev._contiguous(t._data)) for n, t in named] + [("hyper", h)]
        news = [dev._alloc(x.shape, dtype) for _ in range(4 if amsgrad else 3)]
        named += list(zip(("out_x", "out_m", "out_v", "out_vmax"), news))
        n = numel(x.shape)
        if n:
            _run(dev, "adam", dtype, named, n)
        for lst, a in zip(out, news + [None]):
            lst.append(_tensor(a, x) if a is not None else None)
    return out


register_fused(Wgpu, {"sgd_update": _sgd_update, "adam_update": _adam_update})
