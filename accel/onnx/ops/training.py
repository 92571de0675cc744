"""The optimizer steps of ``ai.onnx.preview.training`` (Adagrad, Momentum, Adam), as tensor algebra."""
from . import op

DOMAIN = "ai.onnx.preview.training"


def _groups(xs, k):
    m = len(xs) // k
    return [xs[i * m:(i + 1) * m] for i in range(k)]


@op("Adagrad", attrs="decay_factor epsilon norm_coefficient", domain=DOMAIN)
def adagrad(n, r, t, *rest):
    X, G, H = _groups(rest, 3)
    rate = r / (t.to(r.dtype) * n.attr("decay_factor", 0.0) + 1)
    xs, hs = [], []
    for x, g, h in zip(X, G, H):
        g = g + x * n.attr("norm_coefficient", 0.0)
        h = h + g * g
        xs.append(x - rate * g / (h.sqrt() + n.attr("epsilon", 0.0)))
        hs.append(h)
    return tuple(xs + hs)


@op("Momentum", attrs="alpha beta mode norm_coefficient", domain=DOMAIN)
def momentum(n, r, t, *rest):
    X, G, V = _groups(rest, 3)
    alpha, beta = n.attr("alpha"), n.attr("beta")
    beta = beta if t.item() > 0 else 1.0
    xs, vs = [], []
    for x, g, v in zip(X, G, V):
        g = g + x * n.attr("norm_coefficient")
        v = v * alpha + g * beta
        if n.attr("mode", "standard") == "nesterov":
            xs.append(x - r * (g + v * alpha))
        else:
            xs.append(x - r * v)
        vs.append(v)
    return tuple(xs + vs)


@op("Adam", attrs="alpha beta epsilon norm_coefficient norm_coefficient_post", domain=DOMAIN)
def adam(n, r, t, *rest):
    X, G, V, H = _groups(rest, 4)
    alpha, beta = n.attr("alpha", 0.9), n.attr("beta", 0.999)
    step = t.item()
    rate = r * ((1 - beta ** step) ** 0.5 / (1 - alpha ** step)) if step > 0 else r
    xs, vs, hs = [], [], []
    for x, g, v, h in zip(X, G, V, H):
        g = g + x * n.attr("norm_coefficient", 0.0)
        v = v * alpha + g * (1 - alpha)
        h = h * beta + g * g * (1 - beta)
        new = x - rate * v / (h.sqrt() + n.attr("epsilon", 1e-6))
        xs.append(new * (1 - n.attr("norm_coefficient_post", 0.0)))
        vs.append(v)
        hs.append(h)
    return tuple(xs + vs + hs)
