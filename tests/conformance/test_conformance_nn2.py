"""More ember.nn.functional: activations (leaky_relu silu softplus hardswish hardsigmoid elu mish),
dropout, embedding, layer/group/batch/rms norm, conv with dilation and groups, conv_transpose2d,
adaptive_avg_pool2d, interpolate, scaled_dot_product_attention, losses. numpy references in float64."""
import ember
import ember.nn.functional as nnf

import conformance_kit as kit
from conformance_kit import F, I, B, V, case as kcase
from test_conformance_nn import np_conv

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF
C = "composite"
LOOSE = {"float32": (1e-5, 1e-5), "float64": (1e-12, 1e-12)}


def case(name, *args):
    return kcase("F." + name, *args)


def _f(np, x):
    return np.asarray(x, dtype=np.float64)


def np_softplus(np, x, beta=1.0, threshold=20.0):
    x = _f(np, x)
    bx = x * beta
    return np.where(bx > threshold, x, np.log1p(np.exp(np.minimum(bx, threshold))) / beta)


ACTS = [
    ("leaky_relu", lambda x: nnf.leaky_relu(x), lambda np, x: np.where(x >= 0, x, x * 0.01)),
    ("leaky_relu.slope0.2", lambda x: nnf.leaky_relu(x, 0.2), lambda np, x: np.where(x >= 0, x, x * 0.2)),
    ("silu", lambda x: nnf.silu(x), lambda np, x: x / (1.0 + np.exp(-x))),
    ("softplus", lambda x: nnf.softplus(x), lambda np, x: np_softplus(np, x)),
    ("softplus.beta2.thr3", lambda x: nnf.softplus(x, beta=2.0, threshold=3.0), lambda np, x: np_softplus(np, x, 2.0, 3.0)),
    ("hardswish", lambda x: nnf.hardswish(x), lambda np, x: x * np.clip(x + 3.0, 0.0, 6.0) / 6.0),
    ("hardsigmoid", lambda x: nnf.hardsigmoid(x), lambda np, x: np.clip(x / 6.0 + 0.5, 0.0, 1.0)),
    ("elu", lambda x: nnf.elu(x), lambda np, x: np.where(x > 0, x, np.expm1(x))),
    ("elu.alpha0.5", lambda x: nnf.elu(x, 0.5), lambda np, x: np.where(x > 0, x, 0.5 * np.expm1(x))),
    ("mish", lambda x: nnf.mish(x), lambda np, x: x * np.tanh(np_softplus(np, x))),
    ("gelu_tanh", lambda x: nnf.gelu(x, approximate="tanh"),
     lambda np, x: 0.5 * x * (1.0 + np.tanh(0.7978845608028654 * (x + 0.044715 * x ** 3)))),
]


def activation_cases():
    specs = []
    for name, fn, ref in ACTS:
        for dt in ("f32", "f64", "f16", "bf16"):
            specs.append(case("%s.%s.2x4" % (name, dt), fn, ref, [F((2, 4), dt, -6.0, 6.0)], dt, C))
        specs.append(case("%s.f32.specials" % name, fn, ref, [V([NAN, INF, -INF, 0.0, -3.0, 3.0, 25.0, -25.0])], "f32", C))
    return specs


def _uniforms(n, seed):
    g = ember.Generator(seed)
    return [(g.next_u32() >> 8) * 5.9604644775390625e-08 for _ in range(n)]


def dropout_cases():
    specs = []
    x = F((3, 4))
    specs.append(case("dropout.eval.identity", lambda t: nnf.dropout(t, 0.5, training=False), lambda np, t: t, [x], "f32", kit.EXACT))
    specs.append(case("dropout.p0.identity", lambda t: nnf.dropout(t, 0.0), lambda np, t: t, [x], "f32", kit.EXACT))
    specs.append(case("dropout.p1.zeros", lambda t: nnf.dropout(t, 1.0), lambda np, t: t * 0.0, [x], "f32", kit.SAME))
    for p in (0.25, 0.5):
        def fn(t, p=p):
            return nnf.dropout(t, p, training=True, generator=ember.Generator(99))

        def ref(np, t, p=p):
            keep = np.array(_uniforms(t.size, 99)).reshape(t.shape) >= p
            return t * keep / (1.0 - p)
        specs.append(case("dropout.train.p%s.3x4" % p, fn, ref, [x], "f32", C))
    return specs


def embedding_cases():
    specs = []
    specs.append(case("embedding.2x3.w5x4", lambda i, w: nnf.embedding(i, w), lambda np, i, w: w[i],
                      [I((2, 3), "i64", 0, 5), F((5, 4))], "f32", kit.EXACT))
    specs.append(case("embedding.4.w3x2.f64", lambda i, w: nnf.embedding(i, w), lambda np, i, w: w[i],
                      [V([2, 0, 2, 1], "i64"), F((3, 2), "f64")], "f64", kit.EXACT))
    return specs


def np_norm(np, x, axes, eps):
    x = _f(np, x)
    m = x.mean(axis=axes, keepdims=True)
    v = ((x - m) ** 2).mean(axis=axes, keepdims=True)
    return (x - m) / np.sqrt(v + eps)


def _ch(np, t, nd):
    return _f(np, t).reshape((1, -1) + (1,) * (nd - 2))


def norm_cases():
    specs = []
    specs.append(case("layer_norm.f32.2x3x4.last", lambda x: nnf.layer_norm(x, 4), lambda np, x: np_norm(np, x, (-1,), 1e-5),
                      [F((2, 3, 4))], "f32", C))
    specs.append(case("layer_norm.f32.2x3x4.last2.affine", lambda x, w, b: nnf.layer_norm(x, (3, 4), w, b, eps=1e-3),
                      lambda np, x, w, b: np_norm(np, x, (-2, -1), 1e-3) * w + b, [F((2, 3, 4)), F((3, 4)), F((3, 4))], "f32", C))
    specs.append(case("layer_norm.f16.2x4", lambda x, w: nnf.layer_norm(x, (4,), w), lambda np, x, w: np_norm(np, x, (-1,), 1e-5) * w,
                      [F((2, 4), "f16"), F((4,), "f16")], "f16", C))
    specs.append(case("layer_norm.f64.3x5", lambda x: nnf.layer_norm(x, [5]), lambda np, x: np_norm(np, x, (-1,), 1e-5),
                      [F((3, 5), "f64")], "f64", C))

    def np_group(np, x, g, eps, w=None, b=None):
        n = x.shape[0]
        out = np_norm(np, _f(np, x).reshape(n, g, -1), (2,), eps).reshape(x.shape)
        if w is not None:
            out = out * _ch(np, w, x.ndim)
        if b is not None:
            out = out + _ch(np, b, x.ndim)
        return out
    specs.append(case("group_norm.f32.2x4x3.g2", lambda x: nnf.group_norm(x, 2), lambda np, x: np_group(np, x, 2, 1e-5),
                      [F((2, 4, 3))], "f32", C))
    specs.append(case("group_norm.f32.2x6x2x2.g3.affine", lambda x, w, b: nnf.group_norm(x, 3, w, b),
                      lambda np, x, w, b: np_group(np, x, 3, 1e-5, w, b), [F((2, 6, 2, 2)), F((6,)), F((6,))], "f32", C))
    specs.append(case("group_norm.f32.1x4x5.g4", lambda x: nnf.group_norm(x, 4, eps=0.1), lambda np, x: np_group(np, x, 4, 0.1),
                      [F((1, 4, 5))], "f32", C))

    def np_rms(np, x, axes, eps, w=None):
        x = _f(np, x)
        out = x / np.sqrt((x * x).mean(axis=axes, keepdims=True) + eps)
        return out * w if w is not None else out
    specs.append(case("rms_norm.f32.2x3x4", lambda x: nnf.rms_norm(x, 4), lambda np, x: np_rms(np, x, (-1,), 1.1920928955078125e-07),
                      [F((2, 3, 4))], "f32", C))
    specs.append(case("rms_norm.f32.2x3x4.last2.w.eps", lambda x, w: nnf.rms_norm(x, (3, 4), w, eps=1e-2),
                      lambda np, x, w: np_rms(np, x, (-2, -1), 1e-2, w), [F((2, 3, 4)), F((3, 4))], "f32", C))
    specs.append(case("rms_norm.bf16.2x4", lambda x: nnf.rms_norm(x, 4), lambda np, x: np_rms(np, x, (-1,), 1.1920928955078125e-07),
                      [F((2, 4), "bf16")], "bf16", C))

    # batch_norm: eval with running stats; training with batch stats and the running-stat update
    def np_bn_eval(np, x, rm, rv, w, b, eps=1e-5):
        nd = x.ndim
        return (_f(np, x) - _ch(np, rm, nd)) / np.sqrt(_ch(np, rv, nd) + eps) * _ch(np, w, nd) + _ch(np, b, nd)
    specs.append(case("batch_norm.eval.f32.2x3x4", lambda x, rm, rv, w, b: nnf.batch_norm(x, rm, rv, w, b),
                      np_bn_eval, [F((2, 3, 4)), F((3,)), F((3,), "f32", 0.5, 2.0), F((3,)), F((3,))], "f32", C))
    specs.append(case("batch_norm.eval.f32.2x2x2x2.noaffine", lambda x, rm, rv: nnf.batch_norm(x, rm, rv, eps=0.1),
                      lambda np, x, rm, rv: (x - _ch(np, rm, 4)) / np.sqrt(_ch(np, rv, 4) + 0.1),
                      [F((2, 2, 2, 2)), F((2,)), F((2,), "f32", 0.5, 2.0)], "f32", C))

    def np_bn_train(np, x, rm, rv, w, b, momentum=0.1, eps=1e-5):
        x = _f(np, x)
        axes = (0,) + tuple(range(2, x.ndim))
        count = x.size // x.shape[1]
        mean = x.mean(axis=axes)
        var = x.var(axis=axes)
        out = (x - _ch(np, mean, x.ndim)) / np.sqrt(_ch(np, var, x.ndim) + eps) * _ch(np, w, x.ndim) + _ch(np, b, x.ndim)
        return out, rm * (1 - momentum) + mean * momentum, rv * (1 - momentum) + var * count / (count - 1) * momentum

    def bn_train(x, rm, rv, w, b, momentum=0.1):
        out = nnf.batch_norm(x, rm, rv, w, b, training=True, momentum=momentum)
        return out, rm, rv
    specs.append(case("batch_norm.train.f32.4x3", bn_train, np_bn_train,
                      [F((4, 3)), F((3,)), F((3,), "f32", 0.5, 2.0), F((3,)), F((3,))], ("f32", "f32", "f32"), C))
    specs.append(case("batch_norm.train.f32.2x3x2x2.m0.3", lambda x, rm, rv, w, b: bn_train(x, rm, rv, w, b, 0.3),
                      lambda np, x, rm, rv, w, b: np_bn_train(np, x, rm, rv, w, b, 0.3),
                      [F((2, 3, 2, 2)), F((3,)), F((3,), "f32", 0.5, 2.0), F((3,)), F((3,))], ("f32", "f32", "f32"), C))
    specs.append(case("batch_norm.train.f32.3x2x4.no_running",
                      lambda x, w, b: nnf.batch_norm(x, None, None, w, b, training=True),
                      lambda np, x, w, b: np_bn_train(np, x, np.zeros(2), np.zeros(2), w, b)[0],
                      [F((3, 2, 4)), F((2,)), F((2,))], "f32", C))
    return specs


CONV = [
    ("conv1d.dil3.groups2", nnf.conv1d, (1, 4, 10), (4, 2, 3), {"dilation": 3, "groups": 2}),
    ("conv2d.dil2x1.groups2", nnf.conv2d, (1, 4, 5, 4), (2, 2, 2, 2), {"dilation": (2, 1), "groups": 2}),
    ("conv2d.dil2.depthwise.pad2", nnf.conv2d, (2, 3, 4, 4), (6, 1, 2, 2), {"dilation": 2, "groups": 3, "padding": 2}),
]


def np_conv_transpose2d(np, x, w, b, stride, padding, output_padding, groups, dilation):
    x, w = _f(np, x), _f(np, w)
    n, cin, h, wd = x.shape
    cout_g, kh, kw = w.shape[1], w.shape[2], w.shape[3]
    (sh, sw), (ph, pw), (oph, opw), (dh, dw) = stride, padding, output_padding, dilation
    hout = (h - 1) * sh - 2 * ph + dh * (kh - 1) + oph + 1
    wout = (wd - 1) * sw - 2 * pw + dw * (kw - 1) + opw + 1
    full = np.zeros((n, cout_g * groups, hout + 2 * ph, wout + 2 * pw))
    cin_g = cin // groups
    for bi in range(n):
        for ci in range(cin):
            g = ci // cin_g
            for i in range(h):
                for j in range(wd):
                    for oc in range(cout_g):
                        for a in range(kh):
                            for c in range(kw):
                                full[bi, g * cout_g + oc, i * sh + a * dh, j * sw + c * dw] += x[bi, ci, i, j] * w[ci, oc, a, c]
    out = full[:, :, ph:ph + hout, pw:pw + wout]
    if b is not None:
        out = out + _f(np, b).reshape(1, -1, 1, 1)
    return out


CONVT = [
    ("basic", (1, 2, 3, 3), (2, 3, 2, 2), {}),
    ("stride2", (1, 1, 3, 2), (1, 2, 3, 3), {"stride": 2}),
    ("stride2.pad1.outpad1", (1, 2, 2, 3), (2, 1, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ("groups2", (1, 4, 2, 2), (4, 1, 2, 2), {"groups": 2}),
    ("dil2.stride2x1", (2, 1, 2, 3), (1, 2, 2, 2), {"dilation": 2, "stride": (2, 1)}),
    ("all", (1, 2, 3, 3), (2, 2, 3, 2), {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2), "groups": 2, "dilation": (1, 2)}),
]


def _pair(v):
    return (v, v) if type(v) is int else tuple(v)


def conv_cases():
    specs = []
    for i, (label, fn, xs, ws, kw) in enumerate(CONV):
        def efn(x, w, b, f=fn, k=kw):
            return f(x, w, b, **k)

        def ref(np, x, w, b, k=kw):
            return np_conv(np, x, w, b, k.get("stride", 1), k.get("padding", 0), k.get("dilation", 1), k.get("groups", 1))
        specs.append(case("%s.f32" % label, efn, ref, [F(xs), F(ws), F((ws[0],))], "f32", C))
    for i, (label, xs, ws, kw) in enumerate(CONVT):
        bias = i % 2 == 0

        def efn(x, w, *b, k=kw):
            return nnf.conv_transpose2d(x, w, b[0] if b else None, **k)

        def ref(np, x, w, *b, k=kw):
            return np_conv_transpose2d(np, x, w, b[0] if b else None, _pair(k.get("stride", 1)), _pair(k.get("padding", 0)),
                                       _pair(k.get("output_padding", 0)), k.get("groups", 1), _pair(k.get("dilation", 1)))
        groups = kw.get("groups", 1)
        inputs = [F(xs), F(ws)] + ([F((ws[1] * groups,))] if bias else [])
        specs.append(case("conv_transpose2d.f32.%s%s" % (label, ".bias" if bias else ""), efn, ref, inputs, "f32", C))
    return specs


def np_adaptive(np, x, out):
    x = _f(np, x)
    oh, ow = _pair(out)
    h, w = x.shape[2:]
    res = np.zeros(x.shape[:2] + (oh, ow))
    for i in range(oh):
        for j in range(ow):
            r0, r1 = (i * h) // oh, -(-((i + 1) * h) // oh)
            c0, c1 = (j * w) // ow, -(-((j + 1) * w) // ow)
            res[:, :, i, j] = x[:, :, r0:r1, c0:c1].mean(axis=(2, 3))
    return res


def np_interp(np, x, sizes, mode, align):
    x = _f(np, x)
    for i, dst in enumerate(sizes):
        d = 2 + i
        src = x.shape[d]
        ratio = src / dst
        if mode == "nearest":
            idx = [min(int(j * ratio), src - 1) for j in range(dst)]
            x = np.take(x, idx, axis=d)
            continue
        if align:
            pos = [j * (src - 1) / (dst - 1) if dst > 1 else 0.0 for j in range(dst)]
        else:
            pos = [max((j + 0.5) * ratio - 0.5, 0.0) for j in range(dst)]
        lo = [min(int(p), src - 1) for p in pos]
        hi = [min(l + 1, src - 1) for l in lo]
        wt = np.array([p - l for p, l in zip(pos, lo)]).reshape((1,) * d + (dst,) + (1,) * (x.ndim - d - 1))
        a, b = np.take(x, lo, axis=d), np.take(x, hi, axis=d)
        x = a * (1 - wt) + b * wt
    return x


def resize_cases():
    specs = []
    for out, label in (((2, 2), "div"), ((3, 2), "nondiv"), (1, "global"), ((4, 5), "up")):
        specs.append(case("adaptive_avg_pool2d.f32.1x2x4x4.%s" % label, lambda x, o=out: nnf.adaptive_avg_pool2d(x, o),
                          lambda np, x, o=out: np_adaptive(np, x, o), [F((1, 2, 4, 4))], "f32", C))
    specs.append(case("adaptive_avg_pool2d.f32.2x1x5x7.3x3", lambda x: nnf.adaptive_avg_pool2d(x, 3),
                      lambda np, x: np_adaptive(np, x, 3), [F((2, 1, 5, 7))], "f32", C))
    x = F((1, 2, 3, 4))
    for label, kw, sizes, mode, align in (
            ("nearest.size5x6", {"size": (5, 6)}, (5, 6), "nearest", None),
            ("nearest.scale2", {"scale_factor": 2}, (6, 8), "nearest", None),
            ("nearest.down2x3", {"size": (2, 3)}, (2, 3), "nearest", None),
            ("bilinear.size5x6", {"size": (5, 6), "mode": "bilinear"}, (5, 6), "bilinear", False),
            ("bilinear.size5x6.align", {"size": (5, 6), "mode": "bilinear", "align_corners": True}, (5, 6), "bilinear", True),
            ("bilinear.scale2", {"scale_factor": 2, "mode": "bilinear", "align_corners": False}, (6, 8), "bilinear", False),
            ("bilinear.down2x3.align", {"size": (2, 3), "mode": "bilinear", "align_corners": True}, (2, 3), "bilinear", True),
            ("bilinear.down2x3", {"size": (2, 3), "mode": "bilinear"}, (2, 3), "bilinear", False)):
        specs.append(case("interpolate.f32.1x2x3x4.%s" % label, lambda t, k=kw: nnf.interpolate(t, **k),
                          lambda np, t, s=sizes, m=mode, a=align: np_interp(np, t, s, m, a), [x], "f32", C))
    specs.append(case("interpolate.f32.1x1x4.linear.size7", lambda t: nnf.interpolate(t, size=7, mode="linear"),
                      lambda np, t: np_interp(np, t, (7,), "linear", False), [F((1, 1, 4))], "f32", C))
    return specs


def np_sdpa(np, q, k, v, mask=None, causal=False):
    q, k, v = _f(np, q), _f(np, k), _f(np, v)
    s = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    L, S = s.shape[-2], s.shape[-1]
    if causal:
        s = np.where(np.tril(np.ones((L, S), dtype=bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    m = np.max(s, axis=-1, keepdims=True)
    e = np.exp(s - m)
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def attention_cases():
    specs = []
    q, k, v = F((2, 3, 4)), F((2, 5, 4)), F((2, 5, 2))
    sdpa = nnf.scaled_dot_product_attention
    specs.append(case("sdpa.f32.plain", lambda q, k, v: sdpa(q, k, v), np_sdpa, [q, k, v], "f32", C))
    specs.append(case("sdpa.f32.causal", lambda q, k, v: sdpa(q, k, v, is_causal=True),
                      lambda np, q, k, v: np_sdpa(np, q, k, v, causal=True), [F((2, 4, 4)), F((2, 4, 4)), F((2, 4, 3))], "f32", C))
    bool_mask = V([True, False, True, True, False, False, True, False, True, True, True, True, False, False, True], "b", (3, 5))
    specs.append(case("sdpa.f32.bool_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
                      lambda np, q, k, v, m: np_sdpa(np, q, k, v, m), [q, k, v, bool_mask], "f32", C))
    specs.append(case("sdpa.f32.float_mask", lambda q, k, v, m: sdpa(q, k, v, attn_mask=m),
                      lambda np, q, k, v, m: np_sdpa(np, q, k, v, m), [q, k, v, F((3, 5), "f32", -2.0, 2.0)], "f32", C))
    specs.append(case("sdpa.f32.4d.heads.causal", lambda q, k, v: sdpa(q, k, v, is_causal=True),
                      lambda np, q, k, v: np_sdpa(np, q, k, v, causal=True),
                      [F((1, 2, 3, 2)), F((1, 2, 3, 2)), F((1, 2, 3, 2))], "f32", C))
    specs.append(case("sdpa.f64.scale", lambda q, k, v: sdpa(q, k, v, scale=0.3),
                      lambda np, q, k, v: np_sdpa(np, q * (0.3 * 2.0), k, v),
                      [F((3, 4), "f64"), F((2, 4), "f64"), F((2, 3), "f64")], "f64", C))
    return specs


def _reduce(np, loss, reduction):
    if reduction == "sum":
        return loss.sum()
    if reduction == "mean":
        return loss.mean()
    return loss


def np_log_softmax(np, x, axis):
    x = _f(np, x)
    s = x - x.max(axis=axis, keepdims=True)
    return s - np.log(np.exp(s).sum(axis=axis, keepdims=True))


def np_nll(np, logp, t, weight=None, ignore=-100, reduction="mean"):
    logp = _f(np, logp)
    cdim = 1 if logp.ndim > 1 else 0
    safe = np.where(t == ignore, 0, t)
    picked = np.squeeze(np.take_along_axis(logp, np.expand_dims(safe, cdim), axis=cdim), cdim)
    w = (t != ignore).astype(np.float64)
    if weight is not None:
        w = w * _f(np, weight)[safe]
    loss = -picked * w
    if reduction == "mean":
        return loss.sum() / w.sum()
    return _reduce(np, loss, reduction)


def np_ce(np, x, t, weight=None, ignore=-100, reduction="mean", smoothing=0.0):
    cdim = 1 if np.asarray(x).ndim > 1 else 0
    logp = np_log_softmax(np, x, cdim)
    c = logp.shape[cdim]
    wshape = (c,) + (1,) * (logp.ndim - cdim - 1)
    wlogp = logp if weight is None else logp * _f(np, weight).reshape(wshape)
    if t.dtype.kind == "f":
        tt = t * (1 - smoothing) + smoothing / c
        return _reduce(np, -(wlogp * tt).sum(axis=cdim), reduction)
    nll = np_nll(np, logp, t, weight, ignore, "none")
    if smoothing:
        keep = (t != ignore).astype(np.float64)
        nll = nll * (1 - smoothing) + (-wlogp.sum(axis=cdim) * keep) * (smoothing / c)
    if reduction == "mean":
        w = (t != ignore).astype(np.float64)
        if weight is not None:
            w = w * _f(np, weight)[np.where(t == ignore, 0, t)]
        return nll.sum() / w.sum()
    return _reduce(np, nll, reduction)


def loss_cases():
    specs = []
    x, t = F((4, 3)), I((4,), "i64", 0, 3)
    for red in ("mean", "sum", "none"):
        specs.append(case("cross_entropy.f32.4x3.%s" % red, lambda a, b, r=red: nnf.cross_entropy(a, b, reduction=r),
                          lambda np, a, b, r=red: np_ce(np, a, b, reduction=r), [x, t], "f32", C))
        specs.append(case("nll_loss.f32.4x3.%s" % red, lambda a, b, r=red: nnf.nll_loss(a, b, reduction=r),
                          lambda np, a, b, r=red: np_nll(np, a, b, reduction=r), [F((4, 3), "f32", -3.0, 0.0), t], "f32", C))
    tig = V([0, -100, 2, 1], "i64")
    specs.append(case("cross_entropy.f32.4x3.weight.ignore", lambda a, b, w: nnf.cross_entropy(a, b, weight=w),
                      lambda np, a, b, w: np_ce(np, a, b, w), [x, tig, F((3,), "f32", 0.5, 2.0)], "f32", C))
    specs.append(case("cross_entropy.f32.4x3.smoothing", lambda a, b: nnf.cross_entropy(a, b, label_smoothing=0.2),
                      lambda np, a, b: np_ce(np, a, b, smoothing=0.2), [x, tig], "f32", C))
    specs.append(case("cross_entropy.f32.2x3x2.spatial", lambda a, b: nnf.cross_entropy(a, b),
                      lambda np, a, b: np_ce(np, a, b), [F((2, 3, 2)), I((2, 2), "i64", 0, 3)], "f32", C))
    specs.append(case("cross_entropy.f32.4x3.probs", lambda a, b: nnf.cross_entropy(a, b),
                      lambda np, a, b: np_ce(np, a, b), [x, F((4, 3), "f32", 0.0, 1.0)], "f32", C))
    specs.append(case("nll_loss.f32.4x3.weight.ignore", lambda a, b, w: nnf.nll_loss(a, b, weight=w, ignore_index=1),
                      lambda np, a, b, w: np_nll(np, a, b, w, 1), [F((4, 3), "f32", -3.0, 0.0), V([1, 0, 2, 1], "i64"), F((3,), "f32", 0.5, 2.0)], "f32", C))
    a, b = F((3, 4)), F((3, 4))
    p, y = F((3, 4), "f32", 0.02, 0.98), F((3, 4), "f32", 0.0, 1.0)
    pairs = [
        ("mse_loss", lambda r: (lambda a, b: nnf.mse_loss(a, b, reduction=r)), lambda np, a, b, r: _reduce(np, (a - b) ** 2, r), (a, b)),
        ("l1_loss", lambda r: (lambda a, b: nnf.l1_loss(a, b, reduction=r)), lambda np, a, b, r: _reduce(np, np.abs(a - b), r), (a, b)),
        ("huber_loss", lambda r: (lambda a, b: nnf.huber_loss(a, b, reduction=r)),
         lambda np, a, b, r: _reduce(np, np.where(np.abs(a - b) < 1.0, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5), r), (a, b)),
        ("huber_loss.delta2", lambda r: (lambda a, b: nnf.huber_loss(a, b, reduction=r, delta=2.0)),
         lambda np, a, b, r: _reduce(np, np.where(np.abs(a - b) < 2.0, 0.5 * (a - b) ** 2, 2.0 * (np.abs(a - b) - 1.0)), r), (a, b)),
        ("smooth_l1_loss", lambda r: (lambda a, b: nnf.smooth_l1_loss(a, b, reduction=r)),
         lambda np, a, b, r: _reduce(np, np.where(np.abs(a - b) < 1.0, 0.5 * (a - b) ** 2, np.abs(a - b) - 0.5), r), (a, b)),
        ("smooth_l1_loss.beta0.5", lambda r: (lambda a, b: nnf.smooth_l1_loss(a, b, reduction=r, beta=0.5)),
         lambda np, a, b, r: _reduce(np, np.where(np.abs(a - b) < 0.5, (a - b) ** 2, np.abs(a - b) - 0.25), r), (a, b)),
        ("binary_cross_entropy", lambda r: (lambda a, b: nnf.binary_cross_entropy(a, b, reduction=r)),
         lambda np, a, b, r: _reduce(np, -(b * np.log(a) + (1 - b) * np.log(1 - a)), r), (p, y)),
        ("binary_cross_entropy_with_logits", lambda r: (lambda a, b: nnf.binary_cross_entropy_with_logits(a, b, reduction=r)),
         lambda np, a, b, r: _reduce(np, (1 - b) * a + np.logaddexp(0.0, -a), r), (a, y)),
        ("kl_div", lambda r: (lambda a, b: nnf.kl_div(a, b, reduction=r)),
         lambda np, a, b, r: _reduce(np, np.where(b > 0, b * (np.log(np.where(b > 0, b, 1.0)) - a), 0.0), r),
         (F((3, 4), "f32", -3.0, 0.0), V([0.0, 0.1, 0.5, 0.4, 0.2, 0.0, 0.3, 0.5, 0.25, 0.25, 0.25, 0.25], "f32", (3, 4)))),
        ("kl_div.log_target", lambda r: (lambda a, b: nnf.kl_div(a, b, reduction=r, log_target=True)),
         lambda np, a, b, r: _reduce(np, np.exp(b) * (b - a), r), (F((3, 4), "f32", -3.0, 0.0), F((3, 4), "f32", -3.0, 0.0))),
    ]
    for name, mk, ref, (s1, s2) in pairs:
        for red in ("mean", "sum", "none"):
            specs.append(case("%s.f32.3x4.%s" % (name, red), mk(red), lambda np, a, b, f=ref, r=red: f(np, a, b, r),
                              [s1, s2], "f32", C))
    specs.append(case("kl_div.f32.3x4.batchmean", lambda a, b: nnf.kl_div(a, b, reduction="batchmean", log_target=True),
                      lambda np, a, b: (np.exp(b) * (b - a)).sum() / 3.0, [F((3, 4), "f32", -3.0, 0.0), F((3, 4), "f32", -3.0, 0.0)], "f32", C))
    specs.append(case("binary_cross_entropy.f32.clamp_log", lambda a, b: nnf.binary_cross_entropy(a, b, reduction="none"),
                      lambda np, a, b: -(b * np.maximum(np.log(a), -100.0) + (1 - b) * np.maximum(np.log(1 - a), -100.0)),
                      [V([0.0, 1.0, 0.5, 1.0]), V([1.0, 0.0, 1.0, 1.0])], "f32", C))
    specs.append(case("binary_cross_entropy_with_logits.f32.pos_weight.weight",
                      lambda a, b, pw, w: nnf.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw),
                      lambda np, a, b, pw, w: (((1 - b) * a + (1 + (pw - 1) * b) * np.logaddexp(0.0, -a)) * w).mean(),
                      [a, y, F((4,), "f32", 0.5, 3.0), F((4,), "f32", 0.0, 2.0)], "f32", C))
    specs.append(case("mse_loss.f64.3x4.mean", lambda a, b: nnf.mse_loss(a, b), lambda np, a, b: ((a - b) ** 2).mean(),
                      [F((3, 4), "f64"), F((3, 4), "f64")], "f64", C))
    return specs


SPECS = (activation_cases() + dropout_cases() + embedding_cases() + norm_cases() + conv_cases() + resize_cases()
         + attention_cases() + loss_cases())
CASES = kit.variants(SPECS)


def test_nn2(device, case):
    kit.run(device, case)
