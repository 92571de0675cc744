"""Creating tensors: from Python data or bytes, constants, ranges and random draws."""
import math

from . import dtypes, rng
from .capacity import reserve
from .device import resolve
from .errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from .shapes import numel, size_args
from .tensor import Tensor

_ARRAY_CODES = {"f": "float32", "d": "float64", "b": "int8", "B": "int32", "h": "int32", "H": "int32",
                "i": "int32", "I": "int64", "l": "int64", "L": "int64", "q": "int64", "Q": "int64"}
_SCALARS = (bool, int, float)


def tensor(data, dtype=None, device=None, shape=None):
    """A tensor from nested lists/tuples, a Python scalar, an ``array.array``, bytes, or a tensor.

    >>> ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> ember.tensor(b"\\x00\\x00\\x80?", dtype=ember.float32, shape=(1,))
    """
    dev = resolve(device, "tensor")
    if type(data) is Tensor:  # a copy, as torch.tensor(t) makes
        out = data.to(dev)
        return (out.to(dtypes.get(dtype, "tensor")) if dtype is not None else out).clone()
    if type(data) in (bytes, bytearray, memoryview):
        return _from_bytes(data, dtype, shape, dev)
    if shape is not None:
        raise ArgumentError("tensor: shape= is only for bytes; found data of type %s" % type(data).__name__)
    if type(data) in _SCALARS:
        flat, shp = [data], ()
    elif type(data) in (list, tuple):
        flat, shp = _flatten(data)
    elif _is_array(data):
        flat, shp = list(data), (len(data),)
        if dtype is None:
            dtype = _array_dtype(data, flat)
    else:
        raise ArgumentTypeError("tensor: expected nested lists, a scalar, an array.array, bytes or a tensor; "
                                "found %s" % type(data).__name__)
    dt = dtypes.get(dtype, "tensor") if dtype is not None else _infer(flat)
    dtypes.check_ints(flat, dt, "tensor")
    try:
        data = dev.from_list(flat, shp, dt)
    except OverflowError:  # an int beyond any float, for a float dtype
        data = dev.from_list([dtypes.int_as_float(v) if type(v) is int else v for v in flat], shp, dt)
    return Tensor(data, shp, dt, dev)


def _array_dtype(data, flat):
    if hasattr(data, "typecode"):
        return _ARRAY_CODES.get(data.typecode)
    # MicroPython's array has no typecode: its item size and element type tell the same
    if not flat:
        return None
    size = len(bytes(data)) // len(flat)
    if type(flat[0]) is float:
        return "float64" if size == 8 else "float32"
    if size == 1 and max(flat) < 128:
        return "int8"  # 'b', or a 'B' whose values fit
    return "int64" if size == 8 else "int32"


def _is_array(data):
    from array import array
    return isinstance(data, array)


def _flatten(data):
    """(flat values, shape) of nested sequences; ragged nesting is a ShapeError."""
    shape = []
    probe = data
    while type(probe) in (list, tuple):
        shape.append(len(probe))
        if not probe:
            break
        probe = probe[0]
    level = [data]
    for depth, n in enumerate(shape):
        nxt = []
        for item in level:
            if type(item) not in (list, tuple) or len(item) != n:
                found = len(item) if type(item) in (list, tuple) else type(item).__name__
                raise ShapeError("tensor: ragged nested data: expected %d items at depth %d, found %s"
                                 % (n, depth, found))
            nxt.extend(item)
        level = nxt
    for v in level:
        if type(v) not in _SCALARS:
            raise ArgumentTypeError("tensor: expected bool, int or float elements, found %s" % type(v).__name__)
    return level, tuple(shape)


def _infer(flat):
    dt = dtypes.bool_
    for v in flat:
        t = type(v)
        if t is float:
            return dtypes.default_float
        if t is int:
            dt = dtypes.default_int
    return dt if flat else dtypes.default_float


def _from_bytes(buf, dtype, shape, dev):
    if dtype is None or shape is None:
        raise ArgumentError("tensor: bytes need dtype= and shape=")
    dt = dtypes.get(dtype, "tensor")
    shp = size_args((shape,), "tensor")
    expected = numel(shp) * dt.itemsize
    if len(buf) != expected:
        raise ShapeError("tensor: %d bytes do not hold shape %s of %s (expected %d bytes)"
                         % (len(buf), shp, dt.name, expected))
    return Tensor(dev.from_bytes(bytes(buf), shp, dt), shp, dt, dev)


def _full(shape, value, dtype, device, op):
    dev = resolve(device, op)
    if dtypes.scalar_kind(value) is None:
        raise ArgumentTypeError("%s: expected a bool, int or float fill value, found %s" % (op, type(value).__name__))
    dt = dtypes.get(dtype, op) if dtype is not None else dtypes.of_value(value)
    dtypes.check_int(value, dt, op)
    if type(value) is int and dt.kind == "f":
        value = dtypes.int_as_float(value)
    reserve(dev, numel(shape), dt, op)
    return Tensor(dev.full(shape, value, dt), shape, dt, dev)


def full(size, fill_value, dtype=None, device=None):
    """A tensor of ``size`` filled with ``fill_value`` (dtype inferred from it when not given)."""
    return _full(size_args((size,), "full"), fill_value, dtype, device, "full")


def zeros(*size, dtype=None, device=None):
    """A tensor of zeros: ``zeros(2, 3)`` or ``zeros((2, 3))``; float32 unless ``dtype`` is given."""
    return _full(size_args(size, "zeros"), 0, dtype or dtypes.default_float, device, "zeros")


def ones(*size, dtype=None, device=None):
    """A tensor of ones: ``ones(2, 3)`` or ``ones((2, 3))``; float32 unless ``dtype`` is given."""
    return _full(size_args(size, "ones"), 1, dtype or dtypes.default_float, device, "ones")


def _like(x, op):
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (op, type(x).__name__))


def zeros_like(x, dtype=None, device=None):
    """Zeros with ``x``'s shape, and its dtype and device unless given."""
    _like(x, "zeros_like")
    return _full(x.shape, 0, dtype or x.dtype, device or x.device, "zeros_like")


def ones_like(x, dtype=None, device=None):
    """Ones with ``x``'s shape, and its dtype and device unless given."""
    _like(x, "ones_like")
    return _full(x.shape, 1, dtype or x.dtype, device or x.device, "ones_like")


def full_like(x, fill_value, dtype=None, device=None):
    """``fill_value`` with ``x``'s shape, and its dtype and device unless given."""
    _like(x, "full_like")
    return _full(x.shape, fill_value, dtype or x.dtype, device or x.device, "full_like")


def arange(start, end=None, step=1, dtype=None, device=None):
    """``start, start + step, ...`` below ``end``; int64 for int arguments, else float32."""
    if end is None:
        start, end = 0, start
    for v in (start, end, step):
        if type(v) not in (int, float):
            raise ArgumentTypeError("arange: expected int or float bounds, found %s" % type(v).__name__)
        if v != v or v in (float("inf"), float("-inf")):
            raise ArgumentError("arange: expected finite bounds and step, found %r" % (v,))
    if step == 0:
        raise ArgumentError("arange: step must not be 0")
    all_int = type(start) is int and type(end) is int and type(step) is int
    # count = ceil((end - start) / step), as numpy and torch compute it
    n = max(-((start - end) // step) if all_int else math.ceil((end - start) / step), 0)
    if dtype is None:
        dtype = dtypes.default_int if all_int else dtypes.default_float
    dt = dtypes.get(dtype, "arange")
    dev = resolve(device, "arange")
    if n and all_int:
        dtypes.check_int(start, dt, "arange")
        dtypes.check_int(start + (n - 1) * step, dt, "arange")
    reserve(dev, n, dt, "arange", host_list=True)
    flat = [start + i * step for i in range(n)]
    return Tensor(dev.from_list(flat, (n,), dt), (n,), dt, dev)


def rand(*size, generator=None, dtype=None, device=None):
    """Uniform draws in [0, 1) from ``generator`` (ember's seeded default when None)."""
    return draw("uniform", size_args(size, "rand"), (0.0, 1.0), generator, dtype, device, "rand")


def randn(*size, generator=None, dtype=None, device=None):
    """Standard normal draws from ``generator`` (ember's seeded default when None)."""
    return draw("normal", size_args(size, "randn"), (0.0, 1.0), generator, dtype, device, "randn")


def _generator(generator, op):
    if generator is None:
        return rng.default_generator
    if not isinstance(generator, rng.Generator):
        raise ArgumentTypeError("%s: expected an ember.Generator, found %s" % (op, type(generator).__name__))
    return generator


def draw(kind, shape, params, generator, dtype, device, op):
    """A tensor of ``shape`` from the device's ``random`` primitive (``Backend.random``: ``kind``
    and ``params`` as it takes them), after checking the generator and dtype; ``op`` names the
    caller in errors. A float dtype unless ``kind`` is randint."""
    g = _generator(generator, op)
    if kind == "randint":
        dt = dtypes.get(dtype, op) if dtype is not None else dtypes.default_int
    else:
        dt = dtypes.get(dtype, op) if dtype is not None else dtypes.default_float
        if dt.kind != "f":
            raise DTypeError("%s: expected a float dtype, found %s" % (op, dt.name))
    dev = resolve(device, op)
    reserve(dev, numel(shape), dt, op, host_list=_draws_on_host(dev))
    return Tensor(dev.random(kind, shape, dt, g, params), shape, dt, dev)


def _draws_on_host(dev):
    # the default ``Backend.random`` fills a host list before the device stores it
    from .backend import Backend, Decorator
    base = dev.base() if isinstance(dev, Decorator) else dev
    return type(base).random is Backend.random


def empty(*size, dtype=None, device=None):
    """A tensor of ``size``; ember fills it with zeros (no uninitialized memory is ever exposed)."""
    return _full(size_args(size, "empty"), 0, dtype or dtypes.default_float, device, "empty")


def empty_like(x, dtype=None, device=None):
    """A tensor like ``x`` (``zeros_like``: ember never exposes uninitialized memory)."""
    return zeros_like(x, dtype, device)


def linspace(start, end, steps, dtype=None, device=None):
    """``steps`` evenly spaced values from ``start`` to ``end`` inclusive."""
    if type(steps) is not int or steps < 0:
        raise ArgumentError("linspace: steps must be an int >= 0, found %r" % (steps,))
    dt = dtypes.get(dtype, "linspace") if dtype is not None else dtypes.default_float
    if dt is dtypes.bool_:
        raise DTypeError("linspace: expected a numeric dtype, found bool")
    dev = resolve(device, "linspace")
    dtypes.check_int(start, dt, "linspace")
    dtypes.check_int(end, dt, "linspace")
    reserve(dev, steps, dt, "linspace", host_list=True)
    if steps == 1:
        flat = [start]
    else:
        step = (end - start) / (steps - 1) if steps > 1 else 0.0
        half = steps // 2
        # from both ends toward the middle, as torch does, so the last value is exactly ``end``
        flat = [start + i * step if i < half else end - (steps - 1 - i) * step for i in range(steps)]
    return Tensor(dev.from_list(flat, (steps,), dt), (steps,), dt, dev)


def eye(n, m=None, dtype=None, device=None):
    """The n x m identity (ones on the diagonal)."""
    m = n if m is None else m
    shape = size_args((n, m), "eye")
    dt = dtypes.get(dtype, "eye") if dtype is not None else dtypes.default_float
    dev = resolve(device, "eye")
    reserve(dev, n * m, dt, "eye", host_list=True)
    flat = [1 if i == j else 0 for i in range(n) for j in range(m)]
    return Tensor(dev.from_list(flat, shape, dt), shape, dt, dev)


def randint(low, high=None, size=(), generator=None, dtype=None, device=None):
    """Ints drawn uniformly from [low, high) (``randint(high, size)`` starts at 0)."""
    if high is None or type(high) in (tuple, list):
        low, high, size = 0, low, (high if high is not None else size)
    shape = size_args((size,), "randint")
    if type(low) is not int or type(high) is not int or low >= high:
        raise ArgumentError("randint: expected int low < high, found %r and %r" % (low, high))
    dt = dtypes.get(dtype, "randint") if dtype is not None else dtypes.default_int
    dtypes.check_int(low, dt, "randint")
    dtypes.check_int(high - 1, dt, "randint")
    return draw("randint", shape, (low, high), generator, dtype, device, "randint")


def random(shape, distribution=None, generator=None, dtype=None, device=None):
    """A tensor of ``shape`` drawn from ``distribution`` (``Uniform()`` when None).

    >>> ember.random((2, 3), ember.Normal(0.0, 0.5))
    """
    from .distributions import Distribution, Uniform
    shape = size_args((shape,), "random")
    distribution = Uniform() if distribution is None else distribution
    if not isinstance(distribution, Distribution):
        raise ArgumentTypeError("random: expected a Distribution such as ember.Normal(0, 1), found %r"
                                % (distribution,))
    if distribution.kind is not None:
        return draw(distribution.kind, shape, distribution.params, generator, dtype, device, "random")
    g = _generator(generator, "random")
    reserve(resolve(device, "random"), numel(shape), dtypes.get(dtype or dtypes.default_float, "random"), "random",
            host_list=True)
    return _floats(distribution.sample(g, numel(shape)), shape, dtype, device, "random")


def _floats(flat, shape, dtype, device, op):
    dt = dtypes.get(dtype, op) if dtype is not None else dtypes.default_float
    if dt.kind != "f":
        raise DTypeError("%s: expected a float dtype, found %s" % (op, dt.name))
    dev = resolve(device, op)
    return Tensor(dev.from_list(flat, shape, dt), shape, dt, dev)


def multinomial(input, num_samples, replacement=False, generator=None):
    """Indices drawn from the categories of each row of ``input`` (1-D or 2-D weights, >= 0, not
    all zero), ``num_samples`` per row, int64, as ``torch.multinomial``; without replacement each
    category at most once. Draws uniforms from ``generator`` (ember's default when None), on the
    host; ``num_samples`` of them per row.

    >>> ember.multinomial(ember.tensor([0.1, 0.0, 0.9]), 4, replacement=True)
    """
    op = "multinomial"
    if type(input) is not Tensor:
        raise ArgumentTypeError("%s: expected a Tensor of weights, found %s" % (op, type(input).__name__))
    if input.ndim not in (1, 2):
        raise ArgumentError("%s: expected 1-D or 2-D weights, found shape %s" % (op, input.shape))
    if input.dtype.kind != "f":
        raise ArgumentError("%s: expected float weights, found %s" % (op, input.dtype.name))
    if type(num_samples) is not int or num_samples < 1:
        raise ArgumentError("%s: num_samples must be an int >= 1, found %r" % (op, num_samples))
    rows = input.tolist() if input.ndim == 2 else [input.tolist()]
    n = len(rows[0])
    if not replacement and num_samples > n:
        raise ArgumentError("%s: cannot draw %d samples from %d categories without replacement"
                            % (op, num_samples, n))
    gen = _generator(generator, op)
    out = []
    for r, w in enumerate(rows):
        total = 0.0
        for v in w:
            if not v >= 0.0 or v == float("inf"):
                raise ArgumentError("%s: weights must be finite and >= 0, found %r in row %d" % (op, v, r))
            total += v
        if total <= 0.0:
            raise ArgumentError("%s: the weights of row %d sum to 0" % (op, r))
        w = list(w)
        u = gen.draw("uniform", num_samples, (0.0, 1.0))
        for k in range(num_samples):
            if total <= 0.0:
                raise ArgumentError("%s: row %d has fewer than %d categories with weight > 0, needed "
                                    "without replacement" % (op, r, num_samples))
            target = u[k] * total
            acc, pick = 0.0, -1
            for i in range(n):
                if w[i] > 0.0:
                    acc += w[i]
                    pick = i
                    if target < acc:
                        break
            out.append(pick)
            if not replacement:
                total -= w[pick]
                w[pick] = 0.0
    shape = (len(rows), num_samples) if input.ndim == 2 else (num_samples,)
    return tensor(out, dtype=dtypes.int64, device=input.device).reshape(shape)
