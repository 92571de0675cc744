"""Indexing: ``x[...]`` and ``x[...] = v`` with every index form, gather/scatter and their relatives.

Basic indices (ints, slices with positive steps, None, ...) become one ``slice`` view. Integer and
boolean tensor indices follow PyTorch's advanced-indexing rules (numpy's, except that ints stay
basic indices: docs/architecture.md §5.3); their positions are computed on the host (a sync
point) and applied with ``gather``/``scatter``.
"""
from . import dtypes
from .errors import ArgumentError, ArgumentTypeError, DTypeError, IndexOutOfRange, ShapeError
from .shapes import broadcast_shapes, dim as _dim, numel, row_major_strides
from .tensor import Tensor


class _Slicer:
    def __getitem__(self, index):
        return index


_ALL = _Slicer()[:]  # the slice ``:``; MicroPython cannot call slice() directly


def _slice_indices(s, n):
    # MicroPython's slice may lack .indices(); the same clamping rules for a positive step
    step = 1 if s.step is None else s.step
    start = 0 if s.start is None else s.start
    stop = n if s.stop is None else s.stop
    if start < 0:
        start = max(start + n, 0)
    if stop < 0:
        stop = max(stop + n, 0)
    return min(start, n), min(stop, n), step


def _is_int(item):
    return type(item) is int or (type(item) is Tensor and item.dtype.kind == "i" and not item.shape)


def _is_advanced(item):
    return type(item) in (list, tuple) or (type(item) is Tensor and not _is_int(item))


def _expand_ellipsis(x, index):
    if type(index) is not tuple:
        index = (index,)
    if sum(1 for i in index if i is Ellipsis) > 1:
        raise IndexOutOfRange("index: an index can only have one Ellipsis (...)")
    consumed = 0
    for item in index:
        if item is None or item is Ellipsis:
            continue
        if type(item) is Tensor and item.dtype is dtypes.bool_:
            consumed += max(len(item.shape), 1)
        else:
            consumed += 1
    if consumed > len(x.shape):
        raise IndexOutOfRange("index: too many indices (%d) for a tensor of %d dims" % (consumed, len(x.shape)))
    out = []
    for item in index:
        if item is Ellipsis:
            out.extend([_ALL] * (len(x.shape) - consumed))
        else:
            out.append(item)
    return out


def _basic(x, items):
    """Apply ints, slices and None: (ranges over x's dims, the result shape)."""
    ranges, shape = [], []
    d = 0
    for item in items:
        if item is None:
            shape.append(1)
            continue
        n = x.shape[d]
        if _is_int(item):
            i = int(item)
            if i < -n or i >= n:
                raise IndexOutOfRange("index: %d is out of range for dim %d of size %d" % (i, d, n))
            i %= n
            ranges.append((i, i + 1, 1))
        elif type(item) is slice:
            for v in (item.start, item.stop, item.step):
                if v is not None and not _is_int(v):
                    raise ArgumentTypeError("index: slice bounds must be ints or None, found %r" % (v,))
            if item.step is not None and (type(item.step) is not int or item.step <= 0):
                raise ArgumentError("index: slice steps must be positive ints, found %r (use flip)" % (item.step,))
            start, stop, step = item.indices(n) if hasattr(item, "indices") else _slice_indices(item, n)
            stop = max(stop, start)
            ranges.append((start, stop, step))
            shape.append(len(range(start, stop, step)))
        else:
            raise ArgumentTypeError("index: expected ints, slices, None, ..., or int/bool tensors; found %s"
                                    % type(item).__name__)
        d += 1
    for n in x.shape[d:]:
        ranges.append((0, n, 1))
        shape.append(n)
    return tuple(ranges), tuple(shape)


def _apply_basic(x, ranges, shape):
    dev = x.device
    data = x._data
    if any(r != (0, n, 1) for r, n in zip(ranges, x.shape)):
        data = dev.slice(data, ranges)
    if tuple(len(range(*r)) for r in ranges) != shape:
        data = dev.reshape(data, shape)
    return Tensor(data, shape, x.dtype, dev)


def getitem(x, index):
    items = _expand_ellipsis(x, index)
    if not any(_is_advanced(i) for i in items):
        ranges, shape = _basic(x, items)
        return _apply_basic(x, ranges, shape)
    positions = _advanced_positions(x, items)
    flat = x.reshape(-1)
    return take_along(flat, positions)


def take_along(flat, positions):
    """``flat[positions]`` for a 1-D ``flat`` and an int64 tensor of positions of any shape."""
    dev = flat.device
    data = dev.gather(flat._data, 0, dev.reshape(positions._data, (positions.numel(),)))
    return Tensor(dev.reshape(data, positions.shape), positions.shape, flat.dtype, dev)


def _advanced_positions(x, items):
    """For an index with tensor parts, the flat position in ``x`` of every result element.

    The trick: index a tensor of positions (``arange(numel).reshape(shape)``) on the host with the
    same rules, so one code path serves both reading and writing.
    """
    from .creation import arange
    host = arange(x.numel(), device=_host()).reshape(x.shape)
    return _advanced_host(host, items).to(x.device)


def _host():
    from .backends.cpu import Cpu
    return Cpu()


def _as_int_lists(item, n, d):
    """An int or int-tensor index as (shape, flat list) with negatives wrapped and bounds checked."""
    if type(item) in (list, tuple):
        from .creation import tensor
        item = tensor(list(item), dtype=dtypes.int64)
    if _is_int(item):
        shape, flat = (), [int(item)]
    elif item.dtype.kind != "i":
        raise DTypeError("index: tensor indices must be int or bool, found %s" % item.dtype.name)
    else:
        shape, flat = item.shape, item.device.to_list(item._data)
    out = []
    for i in flat:
        if i < -n or i >= n:
            raise IndexOutOfRange("index: %d is out of range for dim %d of size %d" % (i, d, n))
        out.append(i % n)
    return shape, out


def _offsets(shape, strides, dims):
    """Row-major offsets of the sub-grid spanned by ``dims``."""
    offs = [0]
    for k in dims:
        st = strides[k]
        offs = [o + j * st for o in offs for j in range(shape[k])]
    return offs


def _advanced_host(host, items):
    items = _masks_to_ints(items, host.shape)
    x = host
    for k, item in enumerate(items):
        if item is None:  # a new size-1 dim, then indexed by a full slice
            x = x.unsqueeze(k)
    items = [_ALL if i is None else i for i in items]
    items += [_ALL] * (len(x.shape) - len(items))
    # PyTorch's rule: ints are basic indices; they drop their dims before the tensor indices apply
    ranges, shape = _basic(x, [i if type(i) is slice or _is_int(i) else _ALL for i in items])
    x = _apply_basic(x, ranges, shape)
    items = [i for i in items if not _is_int(i)]
    adv = [k for k, i in enumerate(items) if type(i) is not slice]
    parts = [_as_int_lists(items[k], x.shape[k], k) for k in adv]
    bshape = ()
    for s, _ in parts:
        bshape = broadcast_shapes(bshape, s, "index")
    strides = row_major_strides(x.shape)
    offs = [0] * numel(bshape)
    for k, (s, flat) in zip(adv, parts):
        st = strides[k]
        offs = [o + v * st for o, v in zip(offs, _broadcast_list(flat, s, bshape))]
    rest = [k for k in range(len(x.shape)) if k not in adv]
    xv = x.device.to_list(x._data)
    if adv == list(range(adv[0], adv[-1] + 1)):
        # consecutive advanced dims: their result dims replace them in place
        lead = [k for k in rest if k < adv[0]]
        tail = [k for k in rest if k > adv[-1]]
        lo, to = _offsets(x.shape, strides, lead), _offsets(x.shape, strides, tail)
        out = [xv[a + b + c] for a in lo for b in offs for c in to]
        shape = tuple(x.shape[k] for k in lead) + bshape + tuple(x.shape[k] for k in tail)
    else:  # separated by a slice: numpy puts the broadcast dims first
        ro = _offsets(x.shape, strides, rest)
        out = [xv[b + r] for b in offs for r in ro]
        shape = bshape + tuple(x.shape[k] for k in rest)
    return Tensor(x.device.from_list(out, shape, dtypes.int64), shape, dtypes.int64, x.device)


def _broadcast_list(values, shape, target):
    """``values`` (row-major, of ``shape``) repeated to ``target`` by broadcasting, row-major."""
    if shape == target:
        return values
    from .creation import tensor
    t = tensor(values, dtype=dtypes.int64, device=_host()).reshape(shape)
    return t.expand(target).reshape(-1).tolist()


def _masks_to_ints(items, shape):
    """A k-dim bool mask becomes k int index lists, one per dim it covers; its shape must be
    exactly the shape of those dims (numpy and PyTorch raise IndexError too)."""
    from .creation import tensor
    out = []
    d = 0  # the dim of ``shape`` the next item indexes
    for item in items:
        if type(item) in (list, tuple) and item and all(type(v) is bool for v in item):
            item = tensor(list(item), dtype=dtypes.bool_, device=_host())  # a mask, as numpy reads it
        if type(item) is Tensor and item.dtype is dtypes.bool_:
            if not item.shape:
                raise IndexOutOfRange("index: a 0-d bool index is not supported; use a 1-element mask")
            covered = tuple(shape[d:d + len(item.shape)])
            if item.shape != covered:
                raise IndexOutOfRange("index: expected a bool mask of shape %s for dims %d..%d of a tensor of "
                                      "shape %s, found a mask of shape %s"
                                      % (covered, d, d + len(item.shape) - 1, tuple(shape), item.shape))
            d += len(item.shape)
            out.extend(tensor(c, dtype=dtypes.int64, device=_host()) for c in nonzero_lists(item))
        else:
            if item is not None:
                d += 1
            out.append(item)
    return out


def nonzero_lists(x):
    """Per dim, the coordinates of every nonzero element (row-major order)."""
    flat = x.device.to_list(x._data)
    shape = x.shape
    coords = [[] for _ in shape]
    for p, v in enumerate(flat):
        if v:
            rem = p
            for d in range(len(shape) - 1, -1, -1):
                coords[d].append(rem % shape[d])
                rem //= shape[d]
    return coords


def setitem(x, index, value):
    """``x[index] = value``: ``x`` gets a new array; tensors that shared the old one keep it."""
    from .elementwise import broadcast_to
    items = _expand_ellipsis(x, index)
    advanced = any(_is_advanced(i) for i in items)
    if advanced:
        positions = _advanced_positions(x, items)
        region = positions.shape
    else:
        # the value broadcasts to what x[index] would return (ints drop dims, None adds them)
        ranges, region = _basic(x, items)
    value = _value_for(x, value, region, "setitem")
    if advanced:
        flat = x.reshape(-1)
        out = _scatter_flat(flat, positions, value, "set")
        x._data = x.device.reshape(out._data, x.shape)
    else:
        selected = tuple(len(range(*r)) for r in ranges)
        fitted = broadcast_to(value, region)
        if selected != region:
            fitted = x.device.reshape(fitted, selected)
        x._data = x.device.slice_assign(x._data, ranges, fitted)


def _value_for(x, value, region, op):
    from .creation import full
    from .elementwise import same_device
    if type(value) is Tensor:
        same_device(x, value, op)
        value = value.to(x.dtype)
        while len(value.shape) > len(region) and value.shape[0] == 1:
            value = value.reshape(value.shape[1:])
        if broadcast_shapes(value.shape, region, op) != region:
            raise ShapeError("%s: value of shape %s does not fit the indexed region %s" % (op, value.shape, region))
        return value
    if type(value) in (list, tuple):  # nested lists, as numpy accepts them
        from .creation import tensor
        try:
            value = tensor(value, dtype=x.dtype, device=x.device)
        except (ArgumentTypeError, ShapeError) as e:
            raise type(e)("%s: the value is not a tensor's worth of numbers (%s)" % (op, e))
        except ArgumentError as e:  # a Python int the dtype cannot hold
            raise ArgumentError("%s:%s" % (op, str(e)[len("tensor:"):]))
        return _value_for(x, value, region, op)
    if dtypes.scalar_kind(value) is None:
        raise ArgumentTypeError("%s: expected a tensor, nested lists or a number, found %s" % (op, type(value).__name__))
    dtypes.check_int(value, x.dtype, op)
    return full((), value, dtype=x.dtype, device=x.device)


def _scatter_flat(flat, positions, value, mode):
    from .elementwise import broadcast_to
    dev = flat.device
    n = positions.numel()
    pos = dev.reshape(positions._data, (n,))
    src = dev.reshape(broadcast_to(value, positions.shape), (n,)) if positions.shape else \
        dev.reshape(broadcast_to(value, ()), (1,))
    return Tensor(dev.scatter(flat._data, 0, pos, src, mode), flat.shape, flat.dtype, dev)


def index_put(x, indices, values, accumulate=False):
    """A copy of ``x`` with ``x[indices] = values`` (``+=`` with ``accumulate``, duplicates summed)."""
    if type(indices) is not tuple:
        raise ArgumentTypeError("index_put: expected a tuple of index tensors, found %s" % type(indices).__name__)
    items = _expand_ellipsis(x, indices)
    positions = _advanced_positions(x, items)
    value = _value_for(x, values, positions.shape, "index_put")
    out = _scatter_flat(x.reshape(-1), positions, value, "add" if accumulate else "set")
    return out.reshape(x.shape)


# -- gather / scatter and their relatives --------------------------------------------------------

def _index_tensor(index, op):
    if type(index) is not Tensor:
        raise ArgumentTypeError("%s: expected an int tensor index, found %s" % (op, type(index).__name__))
    if index.dtype.kind != "i":
        raise DTypeError("%s: expected an int64 index, found %s" % (op, index.dtype.name))
    return index.to(dtypes.int64)


def gather(x, dim, index):
    """``out[i][j] = x[index[i][j]][j]`` for dim 0 (and so on): ``index`` has x's rank."""
    from .elementwise import same_device
    index = _index_tensor(index, "gather")
    same_device(x, index, "gather")
    d = _dim(dim, max(len(x.shape), 1), "gather")
    if len(index.shape) != len(x.shape):
        raise ShapeError("gather: expected an index with %d dims like the input, found shape %s"
                         % (len(x.shape), index.shape))
    for k, (a, b) in enumerate(zip(index.shape, x.shape)):
        if k != d and a > b:
            raise ShapeError("gather: index shape %s exceeds input shape %s in dim %d" % (index.shape, x.shape, k))
    if not x.shape:
        return take_along(x.reshape(1), index.reshape(1)).reshape(())
    return Tensor(x.device.gather(x._data, d, index._data), index.shape, x.dtype, x.device)


def scatter(x, dim, index, src=None, reduce=None, value=None):
    """A copy of ``x`` with ``src`` (a tensor of ``x``'s dtype, or a number; ``value`` names a number
    too) written at ``index`` along ``dim``; ``reduce="add"`` sums, ``"multiply"`` multiplies."""
    from .creation import full
    from .elementwise import same_device
    index = _index_tensor(index, "scatter")
    same_device(x, index, "scatter")
    mode = {None: "set", "add": "add", "sum": "add", "multiply": "mul", "prod": "mul"}.get(reduce)
    if mode is None:
        raise ArgumentError("scatter: reduce must be None, 'add' or 'multiply', found %r" % (reduce,))
    if (src is None) == (value is None):
        raise ArgumentTypeError("scatter: expected one of src (a tensor or number) and value (a number)")
    if value is not None:
        if type(value) is Tensor or dtypes.scalar_kind(value) is None:
            raise ArgumentTypeError("scatter: value must be a number, found %s" % type(value).__name__)
        src = value
    d = _dim(dim, max(len(x.shape), 1), "scatter")
    if type(src) is not Tensor:
        src = full(index.shape, src, dtype=x.dtype, device=x.device)
    same_device(x, src, "scatter")
    if src.dtype is not x.dtype:
        raise DTypeError("scatter: expected src of the input's dtype %s, found %s" % (x.dtype.name, src.dtype.name))
    if len(index.shape) != len(x.shape) or len(src.shape) != len(x.shape):
        raise ShapeError("scatter: expected index and src with %d dims, found %s and %s"
                         % (len(x.shape), index.shape, src.shape))
    for k in range(len(x.shape)):
        if index.shape[k] > src.shape[k] or (k != d and index.shape[k] > x.shape[k]):
            raise ShapeError("scatter: index shape %s exceeds src %s or input %s in dim %d"
                             % (index.shape, src.shape, x.shape, k))
    if mode == "mul":
        return _scatter_multiply(x, d, index, src)
    return Tensor(x.device.scatter(x._data, d, index._data, src._data, mode), x.shape, x.dtype, x.device)


def _scatter_multiply(x, d, index, src):
    """``scatter(reduce="multiply")`` from the ``set`` and ``add`` primitives: every target is
    multiplied by the product of the ``src`` entries sent to it. The targets are read on the host
    (a sync point, §5.3); each round writes at most one entry per target into a tensor of ones."""
    from .creation import ones, tensor
    if not x.shape:
        x, index, src, d = x.reshape(1), index.reshape(1), src.reshape(1), 0
    picked = src if src.shape == index.shape else src[tuple(_Slicer()[:n] for n in index.shape)]
    strides = row_major_strides(x.shape)
    istrides = row_major_strides(index.shape)
    flat_index = index.device.to_list(index._data)
    seen = {}
    rounds = []  # rounds[r]: ([source positions in picked], [target positions in x])
    for p, i in enumerate(flat_index):
        n = x.shape[d]
        if i < -n or i >= n:
            raise IndexOutOfRange("scatter: index %d is out of range for dim %d of size %d" % (i, d, n))
        target = 0
        rem = p
        for k in range(len(index.shape)):
            c = rem // istrides[k]
            rem -= c * istrides[k]
            target += (i % n if k == d else c) * strides[k]
        r = seen.get(target, 0)
        seen[target] = r + 1
        if r == len(rounds):
            rounds.append(([], []))
        rounds[r][0].append(p)
        rounds[r][1].append(target)
    out = x.reshape(-1)
    flat_src = picked.reshape(-1)
    for sources, targets in rounds:
        where = tensor(targets, dtype=dtypes.int64, device=x.device)
        factors = ones(out.shape[0], dtype=x.dtype, device=x.device).scatter(
            0, where, take_along(flat_src, tensor(sources, dtype=dtypes.int64, device=x.device)))
        out = (out * factors).to(x.dtype)
    return out.reshape(x.shape)


def _as(op, fn, *args):
    """``fn(*args)``; an index the device finds out of range is reported as ``op``'s, the op the user
    called (a GPU reports it at the next read, under the primitive's name)."""
    try:
        return fn(*args)
    except IndexOutOfRange as e:
        text = str(e)
        if text.startswith("gather:"):
            raise IndexOutOfRange(op + text[6:])
        raise


def index_select(x, dim, index, op="index_select"):
    """The entries of ``x`` at the 1-D ``index`` along ``dim``."""
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor input, found %s" % (op, type(x).__name__))
    index = _index_tensor(index, op)
    if len(index.shape) > 1:
        raise ShapeError("%s: expected a 1-D index, found shape %s" % (op, index.shape))
    if not x.shape:
        return _as(op, gather, x, 0, index.reshape(()))
    d = _dim(dim, len(x.shape), op)
    index = index.reshape(-1)
    view = (1,) * d + (index.shape[0],) + (1,) * (len(x.shape) - d - 1)
    target = x.shape[:d] + (index.shape[0],) + x.shape[d + 1:]
    return _as(op, gather, x, d, index.reshape(view).expand(target))


def take(x, index):
    """``x`` flattened, read at ``index`` (negative indices count from the end)."""
    index = _index_tensor(index, "take")
    n = x.numel()
    from .elementwise import where
    return _as("take", take_along, x.reshape(-1), where(index < 0, index + n, index))


def masked_fill(x, mask, value):
    """``x`` with ``value`` wherever the bool ``mask`` (broadcast to x) is true."""
    from .elementwise import where
    if type(mask) is not Tensor or mask.dtype is not dtypes.bool_:
        raise DTypeError("masked_fill: expected a bool mask tensor, found %s"
                         % (mask.dtype.name if type(mask) is Tensor else type(mask).__name__))
    if broadcast_shapes(mask.shape, x.shape, "masked_fill") != x.shape:
        raise ShapeError("masked_fill: mask of shape %s does not broadcast to %s" % (mask.shape, x.shape))
    if type(value) is Tensor:
        value = value.to(x.dtype)
    else:
        from .elementwise import _scalar_as
        value = _scalar_as(value, x.dtype, "masked_fill")
    return where(mask, value, x).to(x.dtype)


def masked_select(x, mask):
    """The elements of ``x`` where ``mask`` is true, as a 1-D tensor (a sync point)."""
    if type(mask) is not Tensor or mask.dtype is not dtypes.bool_:
        raise DTypeError("masked_select: expected a bool mask tensor")
    shape = broadcast_shapes(x.shape, mask.shape, "masked_select")
    flat_mask = mask.expand(shape).reshape(-1).tolist()
    picks = [p for p, m in enumerate(flat_mask) if m]
    from .creation import tensor
    pos = tensor(picks, dtype=dtypes.int64, device=x.device) if picks else \
        tensor([], dtype=dtypes.int64, device=x.device)
    return take_along(x.expand(shape).reshape(-1), pos)


def nonzero(x, as_tuple=False):
    """Coordinates of the nonzero elements: (n, ndim) int64, or one 1-D tensor per dim (a sync point)."""
    from .creation import tensor
    if not x.shape:
        count = 1 if x.item() else 0
        if as_tuple:
            return (tensor([0] * count, dtype=dtypes.int64, device=x.device),)
        return Tensor(x.device.from_list([], (count, 0), dtypes.int64), (count, 0), dtypes.int64, x.device)
    coords = nonzero_lists(x)
    if as_tuple:
        return tuple(tensor(c, dtype=dtypes.int64, device=x.device) for c in coords)
    count = len(coords[0])
    rows = [c[i] for i in range(count) for c in coords]
    shape = (count, len(x.shape))
    return Tensor(x.device.from_list(rows, shape, dtypes.int64), shape, dtypes.int64, x.device)


def one_hot(index, num_classes=-1):
    """int64 one-hot vectors along a new last dim (``num_classes`` = max + 1 when -1)."""
    from .creation import arange
    index = _index_tensor(index, "one_hot")
    if num_classes == -1:
        num_classes = (index.max().item() + 1) if index.numel() else 0
    if index.numel() and (index.min().item() < 0 or index.max().item() >= num_classes):
        raise IndexOutOfRange("one_hot: class values must be in [0, %d), found %d..%d"
                              % (num_classes, index.min().item(), index.max().item()))
    classes = arange(num_classes, device=index.device)
    return (index.unsqueeze(-1) == classes).to(dtypes.int64)
