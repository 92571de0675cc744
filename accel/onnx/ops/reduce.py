"""ONNX reductions, arg-reductions, scans, softmax family and TopK."""
import ember
import ember.nn.functional as F

from . import op
from .util import axis, int64, ints


def _axes(n, x, axes):
    if axes is None or (len(axes) == 0):
        if n.attr("noop_with_empty_axes", 0):
            return None
        return list(range(x.dim()))
    return sorted(set(axis(a, x.dim(), n) for a in axes))


def _reduce(fn):
    def run(n, x, axes):
        keep = bool(n.attr("keepdims", 1))
        axes = _axes(n, x, axes)
        if axes is None:
            return fn(x, None, True, identity=True)
        if not axes:
            return fn(x, None, True, identity=True)
        return fn(x, axes, keep)
    return run


def _sum(x, axes, keep, identity=False):
    if identity:
        return x
    return x.sum(dim=tuple(axes), keepdim=keep, dtype=x.dtype) if x.dtype.kind == "i" else \
        x.sum(dim=tuple(axes), keepdim=keep)


def _each(method):
    def fn(x, axes, keep, identity=False):
        if identity:
            return x
        for a in sorted(axes, reverse=True):
            x = getattr(x, method)(dim=a, keepdim=True)
            if not isinstance(x, ember.Tensor):  # max/min with a dim give (values, indices)
                x = x[0]
        if not keep:
            x = x.reshape(*[d for i, d in enumerate(x.shape) if i not in axes])
        return x
    return fn


def _empty_extreme(method):
    base = _each(method)

    def fn(x, axes, keep, identity=False):
        if identity or x.numel():
            return base(x, axes, keep, identity)
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)]
        if not keep:
            shape = [d for i, d in enumerate(x.shape) if i not in axes]
        fill = float("-inf") if method == "max" else float("inf")
        if x.dtype.kind == "b":
            fill = method != "max"
        elif x.dtype.kind == "i":
            info = {8: 127, 32: 2**31 - 1, 64: 2**63 - 1}[x.dtype.bits]
            fill = -info - 1 if method == "max" else info
        return ember.full(shape, fill, dtype=x.dtype, device=x.device)
    return fn


def _mean(x, axes, keep, identity=False):
    return x if identity else x.mean(dim=tuple(axes), keepdim=keep)


def _prod_(x, axes, keep, identity=False):
    return x if identity else _each("prod")(x, axes, keep)


REDUCERS = {
    "ReduceSum": _sum, "ReduceMean": _mean, "ReduceMax": _empty_extreme("max"), "ReduceMin": _empty_extreme("min"),
    "ReduceProd": _prod_,
    "ReduceL1": lambda x, a, k, identity=False: x.abs() if identity else _sum(x.abs(), a, k),
    "ReduceL2": lambda x, a, k, identity=False: (x * x).sqrt() if identity else
    _sum(x * x, a, k).to(ember.float64).sqrt().to(x.dtype),
    "ReduceSumSquare": lambda x, a, k, identity=False: x * x if identity else _sum(x * x, a, k),
    "ReduceLogSum": lambda x, a, k, identity=False: x.log() if identity else _sum(x, a, k).log(),
    "ReduceLogSumExp": lambda x, a, k, identity=False: x if identity else _logsumexp(x, a, k),
}


def _logsumexp(x, axes, keep):
    if not x.numel():
        shape = [1 if i in axes else d for i, d in enumerate(x.shape)] if keep else \
            [d for i, d in enumerate(x.shape) if i not in axes]
        return ember.full(shape, float("-inf"), dtype=x.dtype, device=x.device)
    y = x.to(ember.float64) if x.dtype.kind == "i" else x
    m = _each("max")(y, axes, True)
    out = _sum((y - m).exp(), axes, True).log() + m
    if not keep:
        out = out.reshape(*[d for i, d in enumerate(x.shape) if i not in axes])
    return out.to(x.dtype)


for _name, _fn in REDUCERS.items():
    _since = 13 if _name == "ReduceSum" else 18
    op(_name, attrs="axes keepdims")((lambda f: lambda n, x: _reduce(f)(n, x, n.attr("axes")))(_fn))
    op(_name, since=_since, attrs="keepdims noop_with_empty_axes", static=(1,))(
        (lambda f: lambda n, x, axes=None: _reduce(f)(n, x, ints(axes)))(_fn))


def _arg(method):
    def run(n, x):
        a = axis(n.attr("axis", 0), x.dim(), n)
        keep = bool(n.attr("keepdims", 1))
        if n.attr("select_last_index", 0):
            d = x.shape[a]
            r = getattr(x.flip(a), method)(dim=a, keepdim=keep)
            return (d - 1) - r
        return getattr(x, method)(dim=a, keepdim=keep)
    return run


op("ArgMax", attrs="axis keepdims select_last_index")(_arg("argmax"))
op("ArgMin", attrs="axis keepdims select_last_index")(_arg("argmin"))


@op("CumSum", since=11, attrs="exclusive reverse", static=(1,))
def cumsum(n, x, ax):
    a = axis(int(ax.reshape(-1)[0].item()), x.dim(), n)
    y = x.flip(a) if n.attr("reverse", 0) else x
    out = y.cumsum(a, dtype=x.dtype) if x.dtype.kind == "i" else y.cumsum(a)
    if n.attr("exclusive", 0):
        out = out - y
    return out.flip(a) if n.attr("reverse", 0) else out


@op("CumProd", since=26, attrs="exclusive reverse", static=(1,))
def cumprod(n, x, ax):
    a = axis(int(ax.reshape(-1)[0].item()), x.dim(), n)
    y = x.flip(a) if n.attr("reverse", 0) else x
    if n.attr("exclusive", 0):
        ones = ember.ones_like(y.narrow(a, 0, 1))
        y = ember.cat([ones, y.narrow(a, 0, y.shape[a] - 1)], dim=a)
    out = y.cumprod(a, dtype=x.dtype) if x.dtype.kind == "i" else y.cumprod(a)
    return out.flip(a) if n.attr("reverse", 0) else out


@op("LpNormalization", attrs="axis p")
def lp_normalization(n, x):
    a = axis(n.attr("axis", -1), x.dim(), n)
    p = n.attr("p", 2)
    norm = x.abs().sum(dim=a, keepdim=True) if p == 1 else (x * x).sum(dim=a, keepdim=True).sqrt()
    zero = norm == 0  # a zero vector stays zero (ONNX's reference), not 0/0
    return ember.where(zero, ember.zeros_like(x), x / ember.where(zero, ember.ones_like(norm), norm))


def _flat2d(fn):
    """Softmax before opset 13: over the dims from ``axis`` on, flattened."""
    def run(n, x):
        a = axis(n.attr("axis", 1), x.dim(), n)
        lead = 1
        for d in x.shape[:a]:
            lead *= d
        return fn(x.reshape(lead, -1), -1).reshape(*x.shape)
    return run


def _hardmax(x, a):
    idx = x.argmax(dim=a, keepdim=True)
    return ember.zeros_like(x).scatter(a, idx, ember.ones_like(idx).to(x.dtype))


for _name, _fn in (("Softmax", lambda x, a: F.softmax(x, a)), ("LogSoftmax", lambda x, a: F.log_softmax(x, a)),
                   ("Hardmax", _hardmax)):
    op(_name, attrs="axis")(_flat2d(_fn))
    op(_name, since=13, attrs="axis")((lambda f: lambda n, x: f(x, axis(n.attr("axis", -1), x.dim(), n)))(_fn))


@op("TopK", since=10, attrs="axis largest sorted", static=(1,))
def topk(n, x, k):
    a = axis(n.attr("axis", -1), x.dim(), n)
    kk = int(k.reshape(-1)[0].item())
    largest = bool(n.attr("largest", 1))
    # ties keep the lower index first, as ONNX asks: a stable sort on the (negated) values
    order = ember.argsort(-x if largest else x, dim=a, stable=True) if x.dtype.kind != "b" else None
    idx = order.narrow(a, 0, kk)
    return x.gather(a, idx), idx.to(ember.int64)


op("TopK", attrs="axis k")(lambda n, x: topk(n, x, int64([n.attr("k")], x.device)))
