"""Shape and movement ops: reshape, permute, expand, cat/stack, indexing with ints and slices."""
from . import dtypes
from .errors import ArgumentTypeError, IndexOutOfRange, ShapeError
from .shapes import dim as _dim, numel
from .tensor import Tensor


def _shape_arg(shape):
    if len(shape) == 1 and type(shape[0]) in (tuple, list):
        shape = shape[0]
    return tuple(shape)


def reshape(x, shape):
    """``x`` with the same values in a new shape; one size may be -1 (inferred)."""
    shape = _shape_arg(shape)
    n = x.numel()
    known = 1
    free = -1
    for i, s in enumerate(shape):
        if type(s) is not int:
            raise ArgumentTypeError("reshape: expected int sizes, found %s" % type(s).__name__)
        if s == -1:
            if free >= 0:
                raise ShapeError("reshape: only one size may be -1, found %s" % (shape,))
            free = i
        elif s < 0:
            raise ShapeError("reshape: expected sizes >= 0 or -1, found %s" % (shape,))
        else:
            known *= s
    if free >= 0:
        if known == 0 or n % known:
            raise ShapeError("reshape: cannot infer -1 in %s for %d elements of shape %s" % (shape, n, x.shape))
        shape = shape[:free] + (n // known,) + shape[free + 1:]
    elif known != n:
        raise ShapeError("reshape: shape %s holds %d elements, found %d in shape %s" % (shape, known, n, x.shape))
    if shape == x.shape:
        return x
    return Tensor(x.device.reshape(x._data, shape), shape, x.dtype, x.device)


def permute(x, dims):
    dims = _shape_arg(dims)
    nd = len(x.shape)
    if len(dims) != nd:
        raise ShapeError("permute: expected %d dims for shape %s, found %s" % (nd, x.shape, dims))
    dims = tuple(_dim(d, nd, "permute") for d in dims)
    if len(set(dims)) != nd:
        raise ShapeError("permute: expected each dim once, found %s" % (dims,))
    shape = tuple(x.shape[d] for d in dims)
    return Tensor(x.device.permute(x._data, dims), shape, x.dtype, x.device)


def transpose(x, dim0, dim1):
    nd = len(x.shape)
    a, b = _dim(dim0, nd, "transpose"), _dim(dim1, nd, "transpose")
    order = list(range(nd))
    order[a], order[b] = order[b], order[a]
    return permute(x, order) if a != b else x


def expand(x, shape):
    """A view of ``x`` repeated along size-1 dims (-1 keeps a size); new dims are added in front."""
    shape = _shape_arg(shape)
    nd = len(x.shape)
    if len(shape) < nd:
        raise ShapeError("expand: expected at least %d sizes for shape %s, found %s" % (nd, x.shape, shape))
    lead = len(shape) - nd
    src = (1,) * lead + x.shape
    out = []
    for i, (s, n) in enumerate(zip(src, shape)):
        if n == -1 and i >= lead:
            n = s
        if s != n and s != 1:
            raise ShapeError("expand: cannot expand shape %s to %s (dim %d is %d, not 1)" % (x.shape, shape, i, s))
        if type(n) is not int or n < 0:
            raise ShapeError("expand: expected sizes >= 0, found %s" % (shape,))
        out.append(n)
    out = tuple(out)
    if out == x.shape:
        return x
    data = x._data if not lead else x.device.reshape(x._data, src)
    return Tensor(x.device.expand(data, out), out, x.dtype, x.device)


def flatten(x, start_dim=0, end_dim=-1):
    nd = len(x.shape)
    if nd == 0:
        return reshape(x, (1,))
    a, b = _dim(start_dim, nd, "flatten"), _dim(end_dim, nd, "flatten")
    if a > b:
        raise ShapeError("flatten: start_dim %d comes after end_dim %d" % (start_dim, end_dim))
    return reshape(x, x.shape[:a] + (numel(x.shape[a:b + 1]),) + x.shape[b + 1:])


def squeeze(x, dim=None):
    if dim is None:
        return reshape(x, tuple(s for s in x.shape if s != 1))
    d = _dim(dim, len(x.shape), "squeeze")
    if x.shape[d] != 1:
        return x
    return reshape(x, x.shape[:d] + x.shape[d + 1:])


def unsqueeze(x, dim):
    d = _dim(dim, len(x.shape) + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _same(tensors, op):
    if type(tensors) not in (list, tuple) or not tensors:
        raise ArgumentTypeError("%s: expected a non-empty list of tensors" % op)
    from .elementwise import same_device
    first = tensors[0]
    dtype = first.dtype
    for t in tensors:
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: expected tensors, found %s" % (op, type(t).__name__))
        same_device(first, t, op)
        if t.dtype is not dtype:
            dtype = dtypes.promote(dtype, t.dtype)
    return [t.to(dtype) for t in tensors], dtype


def cat(tensors, dim=0):
    """Join tensors along an existing dim; every other size must agree."""
    tensors, dtype = _same(tensors, "cat")
    first = tensors[0]
    nd = len(first.shape)
    if nd == 0:
        raise ShapeError("cat: zero-dimensional tensors cannot be concatenated; use stack")
    d = _dim(dim, nd, "cat")
    for i, t in enumerate(tensors):
        if len(t.shape) != nd or t.shape[:d] != first.shape[:d] or t.shape[d + 1:] != first.shape[d + 1:]:
            raise ShapeError("cat: tensor %d has shape %s, expected %s except in dim %d"
                             % (i, t.shape, first.shape, d))
    if len(tensors) == 1:
        return first
    shape = first.shape[:d] + (sum(t.shape[d] for t in tensors),) + first.shape[d + 1:]
    out = first.device.cat([t._data for t in tensors], d)
    return Tensor(out, shape, dtype, first.device)


def stack(tensors, dim=0):
    """Join same-shaped tensors along a new dim."""
    tensors, _ = _same(tensors, "stack")
    shape = tensors[0].shape
    for i, t in enumerate(tensors):
        if t.shape != shape:
            raise ShapeError("stack: tensor %d has shape %s, expected %s like tensor 0" % (i, t.shape, shape))
    d = _dim(dim, len(shape) + 1, "stack")
    return cat([unsqueeze(t, d) for t in tensors], d)


# -- indexing ----------------------------------------------------------------------------------

def _parse_index(x, index):
    """(ranges over every dim, the result's shape): ints drop a dim, None adds one."""
    if type(index) is not tuple:
        index = (index,)
    n_real = sum(1 for i in index if i is not None and i is not Ellipsis)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexOutOfRange("index: an index can only have one Ellipsis (...)")
    if n_real > len(x.shape):
        raise IndexOutOfRange("index: too many indices (%d) for a tensor of %d dims" % (n_real, len(x.shape)))
    ranges, out_shape = [], []
    d = 0
    for item in index:
        if item is Ellipsis:
            for _ in range(len(x.shape) - n_real):
                ranges.append((0, x.shape[d], 1))
                out_shape.append(x.shape[d])
                d += 1
        elif item is None:
            out_shape.append(1)
        elif type(item) is int or (type(item) is Tensor and item.dtype.kind == "i" and not item.shape):
            i = int(item)
            n = x.shape[d]
            if i < -n or i >= n:
                raise IndexOutOfRange("index: %d is out of range for dim %d of size %d" % (i, d, n))
            i %= n
            ranges.append((i, i + 1, 1))
            d += 1
        elif type(item) is slice:
            n = x.shape[d]
            if item.step is not None and item.step <= 0:
                raise IndexOutOfRange("index: slice steps must be positive, found %d (use flip)" % item.step)
            start, stop, step = item.indices(n) if hasattr(item, "indices") else _slice_indices(item, n)
            stop = max(stop, start)
            ranges.append((start, stop, step))
            out_shape.append(len(range(start, stop, step)))
            d += 1
        else:
            raise ArgumentTypeError("index: expected ints, slices, None or ..., found %s" % type(item).__name__)
    while d < len(x.shape):
        ranges.append((0, x.shape[d], 1))
        out_shape.append(x.shape[d])
        d += 1
    return tuple(ranges), tuple(out_shape)


def _slice_indices(s, n):
    # MicroPython's slice has no .indices(); the same clamping rules, written out
    step = 1 if s.step is None else s.step
    start = 0 if s.start is None else s.start
    stop = n if s.stop is None else s.stop
    if start < 0:
        start = max(start + n, 0)
    if stop < 0:
        stop = max(stop + n, 0)
    return min(start, n), min(stop, n), step


def getitem(x, index):
    ranges, shape = _parse_index(x, index)
    dev = x.device
    full = True
    for (a, b, s), n in zip(ranges, x.shape):
        if a != 0 or b != n or s != 1:
            full = False
            break
    data = x._data if full else dev.slice(x._data, ranges)
    region = tuple(len(range(a, b, s)) for a, b, s in ranges)
    if region != shape:
        data = dev.reshape(data, shape)
    return Tensor(data, shape, x.dtype, dev)


def setitem(x, index, value):
    """``x[index] = value``: ``x`` gets a new array; tensors that shared the old one keep it."""
    from .creation import full
    from .elementwise import broadcast_to, same_device
    ranges, _ = _parse_index(x, index)
    region = tuple(len(range(a, b, s)) for a, b, s in ranges)
    if type(value) is Tensor:
        same_device(x, value, "setitem")
        value = value.to(x.dtype)
        while len(value.shape) > len(region) and value.shape[0] == 1:
            value = reshape(value, value.shape[1:])
        from .shapes import broadcast_shapes
        if broadcast_shapes(value.shape, region, "setitem") != region:
            raise ShapeError("setitem: value of shape %s does not fit the region %s" % (value.shape, region))
    else:
        value = full((), value, dtype=x.dtype, device=x.device)
    x._data = x.device.slice_assign(x._data, ranges, broadcast_to(value, region))
