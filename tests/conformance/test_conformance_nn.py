"""ember.nn.functional: relu, gelu, softmax, log_softmax, linear, conv1d/conv2d, max/avg pooling.
The numpy references are written out here in float64 (convolution and pooling as explicit loops)."""
import ember.nn.functional as nnf

import conformance_kit as kit
import conformance_rules as rules
from conformance_kit import F, I, V

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF


def case(name, *args):
    """Case names here start with ``F.`` (as in ``import ember.nn.functional as F``)."""
    return kit.case("F." + name, *args)


# -- numpy references -----------------------------------------------------------------------------

def np_gelu(np, x, approximate):
    x = np.asarray(x, dtype=np.float64)
    if approximate == "tanh":
        return 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))
    return 0.5 * x * (1.0 + rules.np_erf(np, x / np.sqrt(2.0)))


def np_softmax(np, x, dim, log):
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 0:
        return x - x if log else x - x + 1.0
    shifted = x - np.max(x, axis=dim, keepdims=True)
    total = np.sum(np.exp(shifted), axis=dim, keepdims=True)
    return shifted - np.log(total) if log else np.exp(shifted) / total


def np_pads(padding, kernel, dilation, n):
    if padding == "valid":
        return [(0, 0)] * n
    if padding == "same":
        out = []
        for k, d in zip(kernel, dilation):
            total = d * (k - 1)
            out.append((total // 2, total - total // 2))
        return out
    p = (padding,) * n if type(padding) is int else tuple(padding)
    return [(v, v) for v in p]


def _tuple(v, n):
    return (v,) * n if type(v) is int else tuple(v)


def np_conv(np, x, w, b, stride, padding, dilation, groups):
    n = x.ndim - 2
    x = x.astype(np.float64)
    w = w.astype(np.float64)
    stride, dilation = _tuple(stride, n), _tuple(dilation, n)
    kernel = w.shape[2:]
    xp = np.pad(x, [(0, 0), (0, 0)] + np_pads(padding, kernel, dilation, n))
    spatial = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    batch, channels, out_channels = x.shape[0], x.shape[1], w.shape[0]
    cg, og = channels // groups, out_channels // groups
    out = np.zeros([batch, out_channels] + spatial)
    for pos in np.ndindex(*spatial):
        window = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (kernel[i] - 1) + 1,
                             dilation[i]) for i in range(n))
        for o in range(out_channels):
            g = o // og
            patch = xp[(slice(None), slice(g * cg, (g + 1) * cg)) + window]
            out[(slice(None), o) + pos] = np.sum(patch * w[o], axis=tuple(range(1, n + 2)))
    if b is not None:
        out = out + b.astype(np.float64).reshape((1, out_channels) + (1,) * n)
    return out


def np_pool(np, x, op, kernel, stride, padding, dilation):
    n = x.ndim - 2
    kernel = _tuple(kernel, n)
    stride = kernel if stride is None else _tuple(stride, n)
    pad, dilation = _tuple(padding, n), _tuple(dilation, n)
    fill = -np.inf if op == "max" else 0.0
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + [(p, p) for p in pad], constant_values=fill)
    spatial = [(xp.shape[2 + i] - dilation[i] * (kernel[i] - 1) - 1) // stride[i] + 1 for i in range(n)]
    out = np.zeros(list(x.shape[:2]) + spatial)
    for pos in np.ndindex(*spatial):
        window = tuple(slice(pos[i] * stride[i], pos[i] * stride[i] + dilation[i] * (kernel[i] - 1) + 1,
                             dilation[i]) for i in range(n))
        patch = xp[(slice(None), slice(None)) + window]
        axes = tuple(range(2, n + 2))
        if op == "max":
            out[(slice(None), slice(None)) + pos] = np.max(patch, axis=axes)
        else:
            out[(slice(None), slice(None)) + pos] = np.sum(patch, axis=axes) / float(np.prod(kernel))
    return out


# -- cases ------------------------------------------------------------------------------------------

def activation_cases():
    specs = []
    for dt in ("f32", "f64", "f16", "bf16"):
        specs.append(case("relu.%s.2x3" % dt, lambda x: nnf.relu(x),
                          lambda np, x: np.maximum(x, 0.0), [F((2, 3), dt)], dt, kit.SAME if dt == "f32" else None))
        for approx in ("none", "tanh"):
            specs.append(case("gelu.%s.%s.2x3" % (approx, dt), lambda x, a=approx: nnf.gelu(x, approximate=a),
                              lambda np, x, a=approx: np_gelu(np, x, a), [F((2, 3), dt, -5.0, 5.0)], dt, "composite"))
    specs.append(case("relu.i32.2x3", lambda x: nnf.relu(x), lambda np, x: np.maximum(x, 0),
                      [I((2, 3), "i32")], "i32"))
    specs.append(case("relu.f32.specials", lambda x: nnf.relu(x), lambda np, x: np.maximum(x, 0.0),
                      [V([NAN, INF, -INF, -0.0, 0.0, -1.0, 2.0])], "f32", kit.SAME))
    specs.append(case("gelu.f32.default.2x3", lambda x: nnf.gelu(x), lambda np, x: np_gelu(np, x, "none"),
                      [F((2, 3), "f32", -5.0, 5.0)], "f32", "composite"))
    for approx in ("none", "tanh"):
        specs.append(case("gelu.%s.f32.specials" % approx, lambda x, a=approx: nnf.gelu(x, approximate=a),
                          lambda np, x, a=approx: np_gelu(np, x, a),
                          [V([NAN, INF, -INF, 0.0, -10.0, 10.0, 1e-6])], "f32", "composite"))
        specs.append(case("gelu.%s.f32.0d" % approx, lambda x, a=approx: nnf.gelu(x, approximate=a),
                          lambda np, x, a=approx: np_gelu(np, x, a), [F(())], "f32", "composite"))
    return specs


# (label, dim (None: the default), input, result dtype)
SOFTMAX_INPUTS = [
    ("f32.2x3x4.dm1", -1, F((2, 3, 4), "f32", -5.0, 5.0), "f32"),
    ("f32.2x3x4.d0", 0, F((2, 3, 4), "f32", -5.0, 5.0), "f32"),
    ("f32.2x3x4.d1", 1, F((2, 3, 4), "f32", -5.0, 5.0), "f32"),
    ("f32.5.default", None, F((5,)), "f32"),
    ("f32.large", -1, V([1000.0, 999.0, -1000.0, 1000.0, 0.0, -INF], "f32", (2, 3)), "f32"),
    ("f32.0d", 0, F(()), "f32"),
    ("f32.0x3", -1, F((0, 3)), "f32"),
    ("f64.2x3", 1, F((2, 3), "f64"), "f64"),
    ("f16.2x3", 1, F((2, 3), "f16"), "f16"),
    ("i64.2x3", 1, I((2, 3)), "f32"),
]


def softmax_cases():
    specs = []
    for name, fn, log in (("softmax", nnf.softmax, False), ("log_softmax", nnf.log_softmax, True)):
        for label, dim, spec, out in SOFTMAX_INPUTS:
            if dim is None:
                call = lambda x, f=fn: f(x)  # noqa: E731
            else:
                call = lambda x, f=fn, d=dim: f(x, dim=d)  # noqa: E731
            ref = lambda np, x, d=dim, lg=log: np_softmax(np, x, -1 if d is None else d, lg)  # noqa: E731
            specs.append(case("%s.%s" % (name, label), call, ref, [spec], out, "composite"))
    return specs


def linear_cases():
    specs = []
    np_linear = lambda np, x, w, *b: x @ w.T + (b[0] if b else 0.0)  # noqa: E731
    specs.append(case("linear.f32.2x4.w3x4.bias", lambda x, w, b: nnf.linear(x, w, b), np_linear,
                      [F((2, 4)), F((3, 4)), F((3,))], "f32", "composite"))
    specs.append(case("linear.f32.2x4.w3x4", lambda x, w: nnf.linear(x, w), np_linear,
                      [F((2, 4)), F((3, 4))], "f32", "composite"))
    specs.append(case("linear.f32.2x3x4.w2x4.bias", lambda x, w, b: nnf.linear(x, w, b), np_linear,
                      [F((2, 3, 4)), F((2, 4)), F((2,))], "f32", "composite"))
    specs.append(case("linear.f32.4.w3x4.bias", lambda x, w, b: nnf.linear(x, w, b), np_linear,
                      [F((4,)), F((3, 4)), F((3,))], "f32", "composite"))
    specs.append(case("linear.f32.0x4.w3x4.bias", lambda x, w, b: nnf.linear(x, w, b), np_linear,
                      [F((0, 4)), F((3, 4)), F((3,))], "f32", "composite"))
    specs.append(case("linear.f64.2x4.w3x4.bias", lambda x, w, b: nnf.linear(x, w, b), np_linear,
                      [F((2, 4), "f64"), F((3, 4), "f64"), F((3,), "f64")], "f64", "composite"))
    return specs


# (label, x shape, w shape, keyword arguments) for conv1d and conv2d
CONV1D = [
    ("basic", (1, 2, 6), (3, 2, 3), {}),
    ("stride2", (2, 2, 7), (2, 2, 3), {"stride": 2}),
    ("pad1", (1, 1, 5), (2, 1, 3), {"padding": 1}),
    ("same", (1, 2, 6), (2, 2, 4), {"padding": "same"}),
    ("same_dil2", (1, 1, 7), (1, 1, 3), {"padding": "same", "dilation": 2}),
    ("valid", (1, 2, 5), (1, 2, 2), {"padding": "valid"}),
    ("dil2", (1, 2, 8), (2, 2, 3), {"dilation": 2}),
    ("groups2", (1, 4, 5), (4, 2, 3), {"groups": 2}),
    ("depthwise", (1, 3, 5), (3, 1, 2), {"groups": 3}),
    ("k1", (2, 3, 4), (2, 3, 1), {}),
    ("all", (1, 4, 9), (2, 2, 3), {"stride": 2, "padding": 2, "dilation": 2, "groups": 2}),
    ("batch0", (0, 2, 5), (3, 2, 3), {}),
]
CONV2D = [
    ("basic", (1, 2, 4, 4), (2, 2, 3, 3), {}),
    ("stride2", (1, 1, 5, 5), (2, 1, 3, 3), {"stride": 2}),
    ("stride2x1", (1, 1, 5, 4), (1, 1, 2, 2), {"stride": (2, 1)}),
    ("pad1", (1, 1, 3, 3), (1, 1, 3, 3), {"padding": 1}),
    ("pad_1x0", (1, 1, 3, 4), (1, 1, 3, 2), {"padding": (1, 0)}),
    ("same", (1, 2, 4, 4), (1, 2, 2, 3), {"padding": "same"}),
    ("valid", (2, 1, 3, 3), (1, 1, 2, 2), {"padding": "valid"}),
    ("dil2", (1, 1, 5, 5), (1, 1, 2, 2), {"dilation": 2}),
    ("groups2", (1, 4, 3, 3), (2, 2, 2, 2), {"groups": 2}),
    ("all", (1, 2, 6, 6), (2, 1, 2, 2), {"stride": 2, "padding": 1, "dilation": (2, 1), "groups": 2}),
]


def conv_case(name, fn, xs, ws, kw, bias):
    def ember_fn(x, w, *b):
        return fn(x, w, b[0] if b else None, **kw)

    def ref(np, x, w, *b):
        return np_conv(np, x, w, b[0] if b else None, kw.get("stride", 1), kw.get("padding", 0),
                       kw.get("dilation", 1), kw.get("groups", 1))

    inputs = [F(xs), F(ws)] + ([F((ws[0],))] if bias else [])
    return case(name, ember_fn, ref, inputs, "f32", "composite")


def conv_cases():
    specs = []
    for nd, table, fn in ((1, CONV1D, nnf.conv1d), (2, CONV2D, nnf.conv2d)):
        for i, (label, xs, ws, kw) in enumerate(table):
            bias = i % 2 == 0
            name = "conv%dd.f32.%s%s" % (nd, label, ".bias" if bias else "")
            specs.append(conv_case(name, fn, xs, ws, kw, bias))
    specs.append(case("conv2d.f64.basic", lambda x, w: nnf.conv2d(x, w),
                      lambda np, x, w: np_conv(np, x, w, None, 1, 0, 1, 1),
                      [F((1, 1, 3, 3), "f64"), F((1, 1, 2, 2), "f64")], "f64", "composite"))
    specs.append(case("conv1d.f16.basic", lambda x, w: nnf.conv1d(x, w),
                      lambda np, x, w: np_conv(np, x, w, None, 1, 0, 1, 1),
                      [F((1, 2, 4), "f16"), F((1, 2, 2), "f16")], "f16", "composite"))
    specs.append(case("conv1d.i64_weights.basic", lambda x, w: nnf.conv1d(x, w),
                      lambda np, x, w: np_conv(np, x, w, None, 1, 0, 1, 1),
                      [I((1, 1, 4)), I((1, 1, 2))], "f32", "composite"))
    return specs


POOL1D = [
    ("k2", 2, {}),
    ("k3s1", 3, {"stride": 1}),
    ("k3s2p1", 3, {"stride": 2, "padding": 1}),
    ("k2d2", 2, {"dilation": 2, "stride": 1}),
]
POOL2D = [
    ("k2", 2, {}),
    ("k3s1", 3, {"stride": 1}),
    ("k3s2p1", 3, {"stride": 2, "padding": 1}),
    ("k2x3s1x2", (2, 3), {"stride": (1, 2)}),
    ("k2d2", 2, {"dilation": 2, "stride": 1}),
    ("k3p1_0", 3, {"padding": (1, 0), "stride": 1}),
]


def pool_case(name, fn, op, shape, kernel, kw, spec=None):
    def ember_fn(x):
        return fn(x, kernel, **kw)

    def ref(np, x):
        return np_pool(np, x, op, kernel, kw.get("stride"), kw.get("padding", 0), kw.get("dilation", 1))

    return case(name, ember_fn, ref, [spec or F(shape)], "f32", "composite")


def pool_cases():
    specs = []
    for nd, table, shape in ((1, POOL1D, (2, 2, 7)), (2, POOL2D, (1, 2, 5, 5))):
        fns = {"max": (nnf.max_pool1d, nnf.max_pool2d)[nd - 1], "avg": (nnf.avg_pool1d, nnf.avg_pool2d)[nd - 1]}
        for label, kernel, kw in table:
            for op in ("max", "avg"):
                if op == "avg" and "dilation" in kw:
                    continue  # avg pooling has no dilation (PyTorch's signature)
                specs.append(pool_case("%s_pool%dd.f32.%s" % (op, nd, label), fns[op], op, shape, kernel, kw))
    specs.append(pool_case("max_pool2d.f32.batch0", nnf.max_pool2d, "max", (0, 2, 4, 4), 2, {}))
    specs.append(pool_case("avg_pool1d.f32.batch0", nnf.avg_pool1d, "avg", (0, 2, 4), 2, {}))
    nans = V([1.0, NAN, 3.0, -INF, 2.0, 5.0, INF, 0.0], "f32", (1, 1, 8))
    specs.append(pool_case("max_pool1d.f32.nan", nnf.max_pool1d, "max", None, 2, {}, nans))
    specs.append(pool_case("avg_pool1d.f32.nan", nnf.avg_pool1d, "avg", None, 2, {}, nans))
    specs.append(case("max_pool2d.f64.k2", lambda x: nnf.max_pool2d(x, 2),
                      lambda np, x: np_pool(np, x, "max", 2, None, 0, 1), [F((1, 1, 4, 4), "f64")], "f64"))
    specs.append(case("avg_pool2d.f16.k2", lambda x: nnf.avg_pool2d(x, 2),
                      lambda np, x: np_pool(np, x, "avg", 2, None, 0, 1), [F((1, 1, 4, 4), "f16")], "f16", "composite"))
    return specs


SPECS = activation_cases() + softmax_cases() + linear_cases() + conv_cases() + pool_cases()
CASES = kit.variants(SPECS)


def test_nn(device, case):
    kit.run(device, case)
