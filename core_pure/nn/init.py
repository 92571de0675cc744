"""Parameter initializers, with PyTorch's names and formulas (``torch.nn.init``).

Each returns a new Tensor of ``shape`` (ember's values are never changed in place), drawn from
``generator`` (ember's default generator when None), so one seed gives the same weights on CPython
and MicroPython.

>>> w = init.kaiming_uniform((128, 784), a=math.sqrt(5))   # nn.Linear's default weight

``with init.skip():`` builds layers with zero parameters and draws nothing: the fast way to make a
model whose weights ``load`` will replace (on a board, drawing them costs seconds). Each parameter
is then one value seen through zero strides, so the model costs (nearly) no memory until ``load``
fills it; ``Module.from_record(path)`` does both.
"""
import math

from ..creation import full, random
from ..distributions import Normal, Uniform
from ..errors import ArgumentError
from ..shapes import numel, size_args


_skipping = [0]


class skip:
    """Inside ``with init.skip():`` every random initializer returns zeros (no draw, no time), and
    every initializer returns one value broadcast to its shape (no memory until ``load`` replaces it).

    >>> with init.skip():
    ...     model = LeNet()
    >>> model.load("lenet.safetensors")
    """

    def __enter__(self):
        _skipping[0] += 1
        return self

    def __exit__(self, *exc):
        _skipping[0] -= 1
        return False


def calculate_gain(nonlinearity, param=None):
    """The recommended gain for a nonlinearity (PyTorch's table)."""
    if nonlinearity in ("linear", "identity", "sigmoid", "conv1d", "conv2d", "conv3d",
                        "conv_transpose1d", "conv_transpose2d", "conv_transpose3d"):
        return 1.0
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        slope = 0.01 if param is None else param
        return math.sqrt(2.0 / (1 + slope * slope))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ArgumentError("calculate_gain: unknown nonlinearity %r" % (nonlinearity,))


def fans(shape):
    """(fan_in, fan_out) of a weight: dims 1 and 0 times the kernel size (PyTorch's rule)."""
    shape = size_args((shape,), "fans")
    if len(shape) < 2:
        raise ArgumentError("fans: need a weight of 2 or more dims, found shape %s" % (shape,))
    receptive = numel(shape[2:])
    return shape[1] * receptive, shape[0] * receptive


def _fan(shape, mode, op):
    fan_in, fan_out = fans(shape)
    if mode == "fan_in":
        return fan_in
    if mode == "fan_out":
        return fan_out
    raise ArgumentError("%s: mode must be 'fan_in' or 'fan_out', found %r" % (op, mode))


def zeros(shape, device=None, dtype=None):
    """A tensor of zeros of ``shape`` (float32 unless ``dtype`` is given)."""
    return constant(shape, 0.0, device, dtype)


def ones(shape, device=None, dtype=None):
    """A tensor of ones of ``shape`` (float32 unless ``dtype`` is given)."""
    return constant(shape, 1.0, device, dtype)


def constant(shape, value, device=None, dtype=None):
    """A tensor of ``shape`` filled with ``value`` (float32 unless ``dtype`` is given)."""
    shape = size_args((shape,), "init")
    if _skipping[0] and shape:
        # one stored value with zero strides: a placeholder for the values load() will bring
        return full((1,) * len(shape), value, dtype or "float32", device).expand(shape)
    return full(shape, value, dtype or "float32", device)


def uniform(shape, low=0.0, high=1.0, generator=None, device=None, dtype=None):
    """Uniform on [low, high)."""
    if _skipping[0]:
        return constant(shape, 0.0, device, dtype)
    if low == high:
        return constant(shape, low, device, dtype)
    return random(shape, Uniform(low, high), generator, dtype, device)


def normal(shape, mean=0.0, std=1.0, generator=None, device=None, dtype=None):
    """Normal with mean ``mean`` and standard deviation ``std``."""
    if _skipping[0]:
        return constant(shape, 0.0, device, dtype)
    return random(shape, Normal(mean, std), generator, dtype, device)


def kaiming_uniform(shape, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None, device=None,
                    dtype=None):
    """Uniform on ±gain·√(3/fan) (He et al.); ``a=math.sqrt(5)`` is nn.Linear's and nn.Conv's default."""
    fan = _fan(shape, mode, "kaiming_uniform")
    bound = calculate_gain(nonlinearity, a) * math.sqrt(3.0 / fan) if fan else 0.0
    return uniform(shape, -bound, bound, generator, device, dtype)


def kaiming_normal(shape, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None, device=None,
                   dtype=None):
    """Normal with std gain/√fan (He et al.)."""
    fan = _fan(shape, mode, "kaiming_normal")
    std = calculate_gain(nonlinearity, a) / math.sqrt(fan) if fan else 0.0
    return normal(shape, 0.0, std, generator, device, dtype)


def xavier_uniform(shape, gain=1.0, generator=None, device=None, dtype=None):
    """Uniform on ±gain·√(6/(fan_in + fan_out)) (Glorot and Bengio)."""
    fan_in, fan_out = fans(shape)
    bound = gain * math.sqrt(6.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return uniform(shape, -bound, bound, generator, device, dtype)


def xavier_normal(shape, gain=1.0, generator=None, device=None, dtype=None):
    """Normal with std gain·√(2/(fan_in + fan_out))."""
    fan_in, fan_out = fans(shape)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out)) if fan_in + fan_out else 0.0
    return normal(shape, 0.0, std, generator, device, dtype)


def orthogonal(shape, gain=1.0, generator=None, device=None, dtype=None):
    """A (semi-)orthogonal matrix, dims after the first flattened (Saxe et al.): the Q of a
    normal matrix's QR with R's diagonal made positive, found by modified Gram-Schmidt."""
    from ..creation import tensor
    from .. import rng
    shape = size_args((shape,), "orthogonal")
    if len(shape) < 2:
        raise ArgumentError("orthogonal: need a weight of 2 or more dims, found shape %s" % (shape,))
    if _skipping[0]:
        return constant(shape, 0.0, device, dtype)
    rows = shape[0]
    cols = numel(shape) // rows if rows else 0
    g = generator or rng.default_generator
    flat = g.normals(rows * cols)
    tall = rows >= cols
    m, n = (rows, cols) if tall else (cols, rows)
    # columns of the m x n matrix (m >= n): column j of A, or row j when A was wide
    columns = [[flat[i * cols + j] for i in range(rows)] for j in range(cols)] if tall else \
        [flat[j * cols:(j + 1) * cols] for j in range(rows)]
    q = []
    for v in columns:
        v = list(v)
        for u in q:
            d = sum(a * b for a, b in zip(u, v))
            v = [a - d * b for a, b in zip(v, u)]
        norm = math.sqrt(sum(a * a for a in v))
        q.append([a / norm for a in v] if norm > 0 else v)
    values = [q[j][i] * gain for i in range(m) for j in range(n)] if tall else \
        [q[i][j] * gain for i in range(n) for j in range(m)]
    return tensor(values, dtype=dtype or "float32", device=device).reshape(shape)


# -- PyTorch's in-place spellings: ``init.normal_(layer.weight, std=0.02)`` --------------------------
# A parameter's value (what ``layer.weight`` reads) stands for its Param, whose value is replaced by
# a new draw of the same shape, dtype and device; the tensor itself never changes (ember's values are
# never written in place), so a tensor that is no parameter's value is an error.

def _refill(t, op, make):
    from ..tensor import Tensor
    from .module import Param, owner
    p = t if type(t) is Param else (owner(t) if type(t) is Tensor else None)
    if p is None:
        raise ArgumentError("init.%s: expected a parameter (module.weight or a Param), found %s; ember "
                            "changes no tensor in place: use init.%s(shape, ...) for a new tensor"
                            % (op, "a tensor that is no parameter's value" if type(t) is Tensor
                               else type(t).__name__, op[:-1]))
    v = p.value
    new = make(v.shape).to(device=v.device, dtype=v.dtype)
    p.value = new
    return p.value


def normal_(tensor, mean=0.0, std=1.0, generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of values drawn from N(mean, std²); returns it."""
    return _refill(tensor, "normal_", lambda s: normal(s, mean, std, generator))


def uniform_(tensor, a=0.0, b=1.0, generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of values drawn from U(a, b); returns it."""
    return _refill(tensor, "uniform_", lambda s: uniform(s, a, b, generator))


def constant_(tensor, val):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of ``val`` everywhere; returns it."""
    return _refill(tensor, "constant_", lambda s: constant(s, val))


def zeros_(tensor):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of zeros; returns it."""
    return _refill(tensor, "zeros_", lambda s: zeros(s))


def ones_(tensor):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of ones; returns it."""
    return _refill(tensor, "ones_", lambda s: ones(s))


def xavier_uniform_(tensor, gain=1.0, generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of Glorot's uniform draw; returns it."""
    return _refill(tensor, "xavier_uniform_", lambda s: xavier_uniform(s, gain, generator))


def xavier_normal_(tensor, gain=1.0, generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of Glorot's normal draw; returns it."""
    return _refill(tensor, "xavier_normal_", lambda s: xavier_normal(s, gain, generator))


def kaiming_uniform_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of He's uniform draw; returns it."""
    return _refill(tensor, "kaiming_uniform_", lambda s: kaiming_uniform(s, a, mode, nonlinearity, generator))


def kaiming_normal_(tensor, a=0.0, mode="fan_in", nonlinearity="leaky_relu", generator=None):
    """PyTorch's in-place spelling: the parameter behind ``tensor`` gets a new value of He's normal draw; returns it."""
    return _refill(tensor, "kaiming_normal_", lambda s: kaiming_normal(s, a, mode, nonlinearity, generator))
