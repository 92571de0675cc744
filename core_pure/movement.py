"""Shape and movement ops: reshape, permute, expand, flatten/squeeze, cat/stack, split/chunk/narrow,
flip/roll, repeat, tril/triu (indexing lives in indexing.py)."""
from . import dtypes
from .errors import ArgumentError, ArgumentTypeError, IndexOutOfRange, ShapeError
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
        return x.clone()
    return Tensor(x.device.reshape(x._data, shape), shape, x.dtype, x.device)


def view_dtype(x, dtype):
    """The bytes of ``x`` read as ``dtype`` (PyTorch's ``x.view(dtype)``): the same shape for the same
    item size; else the last dim grows or shrinks by the size ratio. Reads the bytes (a sync point)."""
    old, new = x.dtype.itemsize, dtype.itemsize
    shape = x.shape
    if old != new:
        if not shape:
            raise ShapeError("view: a 0-d tensor cannot be viewed as %s (item size %d, %s has %d)"
                             % (dtype.name, new, x.dtype.name, old))
        if (shape[-1] * old) % new:
            raise ShapeError("view: the last dim (%d) of %s times %d bytes must divide by %d to view %s as %s"
                             % (shape[-1], shape, old, new, x.dtype.name, dtype.name))
        shape = shape[:-1] + (shape[-1] * old // new,)
    return Tensor(x.device.from_bytes(x.device.to_bytes(x._data), shape, dtype), shape, dtype, x.device)


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
    return permute(x, order) if a != b else x.clone()


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
        return x.clone()
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
    if not x.shape or x.shape[d] != 1:  # a 0-d tensor takes dim 0 or -1 and stays as it is
        return x.clone()
    return reshape(x, x.shape[:d] + x.shape[d + 1:])


def unsqueeze(x, dim):
    d = _dim(dim, len(x.shape) + 1, "unsqueeze")
    return reshape(x, x.shape[:d] + (1,) + x.shape[d:])


def _same(tensors, op):
    if type(tensors) not in (list, tuple):
        raise ArgumentTypeError("%s: expected a list of tensors, found %s" % (op, type(tensors).__name__))
    if not tensors:
        raise ArgumentError("%s: expected a non-empty list of tensors" % op)
    for t in tensors:
        if type(t) is not Tensor:
            raise ArgumentTypeError("%s: expected tensors, found %s" % (op, type(t).__name__))
    from .elementwise import same_device
    first = tensors[0]
    dtype = first.dtype
    for t in tensors:
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
        return first.clone()
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


def narrow(x, dim, start, length):
    """``length`` entries of ``x`` along ``dim`` from ``start`` (a view)."""
    d = _dim(dim, len(x.shape), "narrow")
    n = x.shape[d]
    if type(start) is not int or type(length) is not int:
        raise ArgumentTypeError("narrow: expected int start and length")
    if start < 0:
        start += n
    if start < 0 or length < 0 or start + length > n:
        raise IndexOutOfRange("narrow: start %d and length %d do not fit dim %d of size %d" % (start, length, d, n))
    return _slice_dim(x, d, start, start + length, 1)


def _slice_dim(x, d, start, stop, step):
    if (start, stop, step) == (0, x.shape[d], 1):
        return x.clone()
    ranges = tuple((start, stop, step) if k == d else (0, n, 1) for k, n in enumerate(x.shape))
    shape = x.shape[:d] + (len(range(start, stop, step)),) + x.shape[d + 1:]
    return Tensor(x.device.slice(x._data, ranges), shape, x.dtype, x.device)


def flip(x, dims):
    """``x`` reversed along each of ``dims``."""
    from .shapes import dims as _dims
    out = x.clone()
    for d in _dims(dims, len(x.shape), "flip"):
        n = x.shape[d]
        if n > 1:
            out = _slice_dim(out, d, n - 1, -1, -1)
    return out


def roll(x, shifts, dims=None):
    """Elements shifted along ``dims`` (or the flattened tensor), wrapping around."""
    if dims is None:
        if type(shifts) in (tuple, list) and len(shifts) == 1:
            shifts = shifts[0]
        if type(shifts) is not int:
            raise ArgumentTypeError("roll: without dims, shifts must be one int, found %r" % (shifts,))
        return roll(x.reshape(-1), shifts, 0).reshape(x.shape)
    shifts = (shifts,) if type(shifts) is int else tuple(shifts)
    dims = (dims,) if type(dims) is int else tuple(dims)
    if len(shifts) != len(dims):
        raise ShapeError("roll: expected as many shifts as dims, found %d and %d" % (len(shifts), len(dims)))
    x = x.clone()
    for s, d in zip(shifts, dims):
        d = _dim(d, len(x.shape), "roll")
        n = x.shape[d]
        if n == 0:
            continue
        s %= n
        if s:
            x = cat([narrow(x, d, n - s, s), narrow(x, d, 0, n - s)], d)
    return x


def repeat(x, sizes):
    """``x`` tiled ``sizes[i]`` times along dim i (PyTorch's ``Tensor.repeat``)."""
    sizes = _shape_arg(sizes)
    if len(sizes) < len(x.shape):
        raise ShapeError("repeat: expected at least %d sizes for shape %s, found %s" % (len(x.shape), x.shape, sizes))
    if any(type(r) is not int or r < 0 for r in sizes):
        raise ShapeError("repeat: expected sizes >= 0, found %s" % (sizes,))
    shape = (1,) * (len(sizes) - len(x.shape)) + x.shape
    inter = []
    for s in shape:
        inter += [1, s]
    big = []
    for r, s in zip(sizes, shape):
        big += [r, s]
    out = expand(reshape(x, tuple(inter)), tuple(big))
    return reshape(out, tuple(r * s for r, s in zip(sizes, shape)))


def split(x, split_size_or_sections, dim=0):
    """Pieces along ``dim``: each of ``split_size`` (the last may be smaller), or the given sizes."""
    d = _dim(dim, len(x.shape), "split")
    n = x.shape[d]
    if type(split_size_or_sections) is int:
        size = split_size_or_sections
        if size <= 0:
            raise ArgumentError("split: split_size must be > 0, found %d" % size)
        sizes = [min(size, n - s) for s in range(0, n, size)] or [0]
    else:
        sizes = list(split_size_or_sections)
        if sum(sizes) != n or any(type(s) is not int or s < 0 for s in sizes):
            raise ShapeError("split: sections %s must be ints >= 0 summing to %d" % (sizes, n))
    out, start = [], 0
    for s in sizes:
        out.append(narrow(x, d, start, s))
        start += s
    return tuple(out)


def chunk(x, chunks, dim=0):
    """At most ``chunks`` pieces of equal size (the last smaller) along ``dim``."""
    if type(chunks) is not int or chunks <= 0:
        raise ArgumentError("chunk: chunks must be an int > 0, found %r" % (chunks,))
    n = x.shape[_dim(dim, len(x.shape), "chunk")]
    return split(x, max(-(-n // chunks), 1), dim)


def _triangle(x, diagonal, lower, op):
    from .creation import arange
    from .elementwise import where
    if len(x.shape) < 2:
        raise ShapeError("%s: expected at least 2 dims, found shape %s" % (op, x.shape))
    m, n = x.shape[-2:]
    offset = arange(n, device=x.device).reshape(1, n) - arange(m, device=x.device).reshape(m, 1)
    keep = offset <= diagonal if lower else offset >= diagonal
    return where(keep, x, 0).to(x.dtype)


def tril(x, diagonal=0):
    """The lower triangle of the last two dims (``j - i <= diagonal``); the rest is 0."""
    return _triangle(x, diagonal, True, "tril")


def triu(x, diagonal=0):
    """The upper triangle of the last two dims (``j - i >= diagonal``); the rest is 0."""
    return _triangle(x, diagonal, False, "triu")


def unflatten(x, dim, sizes):
    """``x`` with ``dim`` split into ``sizes`` (one may be -1): ``unflatten(ones(2, 6), 1, (2, 3))``."""
    nd = len(x.shape)
    d = _dim(dim, max(nd, 1), "unflatten")
    if type(sizes) not in (tuple, list) or not sizes:
        raise ArgumentTypeError("unflatten: expected sizes as a non-empty tuple of ints, found %r" % (sizes,))
    n = x.shape[d] if nd else 1
    sizes = tuple(sizes)
    known = numel([s for s in sizes if s != -1])
    if any(type(s) is not int or s < -1 for s in sizes) or sizes.count(-1) > 1 or \
            (-1 not in sizes and known != n) or (-1 in sizes and (known == 0 or n % known)):
        raise ShapeError("unflatten: sizes %s do not split dim %d of size %d" % (sizes, d, n))
    return reshape(x, x.shape[:d] + sizes + x.shape[d + 1:])


def view_as(x, other):
    """``x`` in ``other``'s shape (same element count)."""
    if type(other) is not Tensor:
        raise ArgumentTypeError("view_as: expected a tensor, found %s" % type(other).__name__)
    return reshape(x, other.shape)


def unfold(x, dim, size, step):
    """Every window of ``size`` along ``dim``, ``step`` apart, as a new last dim (``Tensor.unfold``)."""
    from .creation import tensor
    nd = len(x.shape)
    d = _dim(dim, max(nd, 1), "unfold")
    n = x.shape[d] if nd else 1
    if type(size) is not int or type(step) is not int:
        raise ArgumentTypeError("unfold: expected int size and step, found %r and %r" % (size, step))
    if size < 0 or size > n:
        raise ShapeError("unfold: size %d must be in [0, %d] for dim %d of shape %s" % (size, n, d, x.shape))
    if step < 1:
        raise ArgumentError("unfold: step must be >= 1, found %d" % step)
    if not nd:
        return reshape(x, (size,))
    count = (n - size) // step + 1
    idx = [w * step + j for w in range(count) for j in range(size)]
    picked = x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))
    picked = reshape(picked, x.shape[:d] + (count, size) + x.shape[d + 1:])
    order = tuple(range(d + 1)) + tuple(range(d + 2, nd + 1)) + (d + 1,)
    return permute(picked, order)


def _repeat_counts(x, repeats, n, op):
    """``repeats`` (an int, or a 1-D int tensor of 1 or ``n`` counts) as a list of ``n`` ints."""
    if type(repeats) is int:
        counts = [repeats] * n
    elif type(repeats) is Tensor:
        if repeats.dtype.kind != "i":
            from .errors import DTypeError
            raise DTypeError("%s: expected integer repeats, found %s" % (op, repeats.dtype.name))
        if len(repeats.shape) > 1:
            raise ShapeError("%s: expected 0-d or 1-D repeats, found shape %s" % (op, repeats.shape))
        counts = repeats.reshape(-1).tolist()  # the output's size depends on the counts: a sync
        if len(counts) == 1:
            counts = counts * n
        elif len(counts) != n:
            raise ShapeError("%s: expected 1 or %d repeats, found %d" % (op, n, len(counts)))
    else:
        raise ArgumentTypeError("%s: expected repeats as an int or an int tensor, found %s"
                                % (op, type(repeats).__name__))
    for c in counts:
        if c < 0:
            raise ArgumentError("%s: repeats must be >= 0, found %d" % (op, c))
    return counts


def repeat_interleave(x, repeats=None, dim=None, output_size=None):
    """Each element repeated ``repeats`` times along ``dim`` (the flattened tensor when None):
    ``repeat_interleave(tensor([1, 2]), 2)`` is ``[1, 1, 2, 2]``; per-element counts as a tensor.
    ``repeat_interleave(counts)`` alone gives ``[0]*counts[0] + [1]*counts[1] + ...``."""
    from .creation import arange, tensor
    if repeats is None:
        if type(x) is not Tensor or x.dtype.kind != "i" or len(x.shape) > 1:
            raise ArgumentError("repeat_interleave: with no repeats, expected a 1-D int tensor of counts")
        return repeat_interleave(arange(x.numel(), device=x.device), x, 0)
    if dim is None:
        x, d = reshape(x, (-1,)), 0
    else:
        d = _dim(dim, max(len(x.shape), 1), "repeat_interleave")
        if not x.shape:
            x = reshape(x, (1,))
    n = x.shape[d]
    counts = _repeat_counts(x, repeats, n, "repeat_interleave")
    total = 0
    for c in counts:
        total += c
    if output_size is not None and output_size != total:
        raise ShapeError("repeat_interleave: output_size %d differs from the %d repeats" % (output_size, total))
    if type(repeats) is int:  # one count: a broadcast view, no index
        r = repeats
        wide = expand(unsqueeze(x, d + 1), x.shape[:d + 1] + (r,) + x.shape[d + 1:])
        return reshape(wide, x.shape[:d] + (n * r,) + x.shape[d + 1:])
    idx = [i for i in range(n) for _ in range(counts[i])]
    return x.index_select(d, tensor(idx, dtype=dtypes.int64, device=x.device))


def meshgrid(*tensors, indexing=None):
    """Coordinate grids from 1-D tensors: output i varies along dim i (``indexing="ij"``, the
    default as in PyTorch; ``"xy"`` swaps the first two dims, as numpy's default does)."""
    if len(tensors) == 1 and type(tensors[0]) in (tuple, list):
        tensors = tuple(tensors[0])
    if indexing is None:
        indexing = "ij"
    if indexing not in ("ij", "xy"):
        raise ArgumentError("meshgrid: indexing must be 'ij' or 'xy', found %r" % (indexing,))
    if not tensors:
        raise ArgumentError("meshgrid: expected at least one tensor")
    for k, t in enumerate(tensors):
        if type(t) is not Tensor:
            raise ArgumentTypeError("meshgrid: argument %d is a %s, expected a tensor" % (k, type(t).__name__))
        if len(t.shape) > 1:
            raise ShapeError("meshgrid: expected 0-d or 1-D tensors, found shape %s for argument %d" % (t.shape, k))
    from .elementwise import same_device
    for t in tensors:
        same_device(tensors[0], t, "meshgrid")
    sizes = [t.numel() for t in tensors]
    order = list(range(len(tensors)))
    if indexing == "xy" and len(tensors) > 1:
        order[0], order[1] = 1, 0
    shape = tuple(sizes[i] for i in order)
    out = []
    for k, t in enumerate(tensors):
        at = order.index(k)
        view = reshape(t, (1,) * at + (sizes[k],) + (1,) * (len(tensors) - at - 1))
        out.append(expand(view, shape))
    return tuple(out)
