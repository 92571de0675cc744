"""Max, mean and adaptive pooling over one or two spatial dims, by the backend's ``pool`` primitive."""
from ... import dtypes
from ...composite import composite
from ...errors import ArgumentError, ArgumentTypeError, DTypeError, ShapeError
from ...tensor import Tensor
from .args import _check_positive, _floating, _tuple


def _pool_out(size, k, s, p, d, ceil_mode):
    """PyTorch's output length of a pooling window: with ``ceil_mode`` a last partial window that
    starts inside the input or its left padding counts too."""
    span = size + 2 * p - d * (k - 1) - 1
    if span < 0:
        return 0
    if not ceil_mode:
        return span // s + 1
    out = -(-span // s) + 1
    return out - 1 if (out - 1) * s >= size + p else out


def _pool_geometry(x, kernel_size, stride, padding, dilation, ceil_mode, n, name):
    """(kernel, stride, padding, dilation, pads, spatial): ``pads`` per dim is (before, after), the
    after side widened to cover ``ceil_mode``'s last window; ``spatial`` the output sizes."""
    if type(x) is not Tensor:
        raise ArgumentTypeError("%s: expected a tensor, found %s" % (name, type(x).__name__))
    if len(x.shape) != n + 2:
        raise ShapeError("%s: expected input of %d dims (N, C, spatial...), found shape %s" % (name, n + 2, x.shape))
    kernel = _tuple(kernel_size, n, "kernel_size", name)
    stride = kernel if stride is None else _tuple(stride, n, "stride", name)
    pad = _tuple(padding, n, "padding", name)
    dilation = _tuple(dilation, n, "dilation", name)
    _check_positive(kernel, "kernel_size", name)
    _check_positive(stride, "stride", name)
    _check_positive(dilation, "dilation", name)
    for k, p in zip(kernel, pad):
        if p < 0 or p > k // 2:
            raise ArgumentError("%s: padding must be between 0 and kernel_size // 2, found %s for kernel %s"
                                % (name, pad, kernel))
    spatial, pads = [], []
    for i in range(n):
        size, k, s, p, d = x.shape[2 + i], kernel[i], stride[i], pad[i], dilation[i]
        out = _pool_out(size, k, s, p, d, ceil_mode)
        if out < 1:
            raise ShapeError("%s: input of shape %s is smaller than the kernel %s" % (name, x.shape, kernel))
        spatial.append(out)
        pads.append((p, max(p, (out - 1) * s + d * (k - 1) + 1 - size - p)))
    return kernel, stride, pad, dilation, tuple(pads), tuple(spatial)


def _grid(lists):
    """Row-major sums over the grid of per-dim lists (one list of ints or floats per dim)."""
    out = [0]
    for values in lists:
        out = [a + b for a in out for b in values]
    return out


def _window_max(x, kernel, stride, before, dilation, pads, spatial, values):
    """The max pool's indices (and, with ``values``, its values) from the window's taps stacked on a
    new last dim: ``argmax`` picks the first maximum (the first nan, as ember's argmax does) and a
    table maps each tap to its flat position in the input plane. A pad tap maps to the window's
    first input element, which is what wins when every input equals the pad (PyTorch's pick).
    Serves ``return_indices`` and integer inputs (no -inf to pad them with)."""
    from ...creation import tensor
    from ...movement import stack
    from .resample import pad
    n = len(kernel)
    sizes = x.shape[2:]
    plane = [1] * n
    for i in range(n - 2, -1, -1):
        plane[i] = plane[i + 1] * sizes[i + 1]
    low = float("-inf") if x.dtype.kind == "f" else -(1 << (x.dtype.bits - 1))
    flat_pads = []
    for i in range(n - 1, -1, -1):
        flat_pads += [pads[i][0], pads[i][1]]
    xp = pad(x, flat_pads, value=low)
    out_shape = x.shape[:2] + spatial
    taps = [[]]
    for k in kernel:
        taps = [t + [o] for t in taps for o in range(k)]
    # per dim and output position: the first tap inside the input, then each tap's coordinate
    firsts, coords = [], []
    for i in range(n):
        f, c = [], []
        for j in range(spatial[i]):
            start = j * stride[i] - before[i]
            first = start
            while first < 0:
                first += dilation[i]
            f.append(first)
            c.append([start + o * dilation[i] for o in range(kernel[i])])
        firsts.append(f)
        coords.append(c)
    table = []
    grid = [[]]
    for i in range(n):
        grid = [g + [j] for g in grid for j in range(spatial[i])]
    for pos in grid:
        first = 0
        for i in range(n):
            first += firsts[i][pos[i]] * plane[i]
        for tap in taps:
            at, inside = 0, True
            for i in range(n):
                c = coords[i][pos[i]][tap[i]]
                inside = inside and 0 <= c < sizes[i]
                at += c * plane[i]
            table.append(at if inside else first)
    parts = []
    for tap in taps:
        ranges = ((0, x.shape[0], 1), (0, x.shape[1], 1)) + tuple(
            (o * dilation[i], o * dilation[i] + (spatial[i] - 1) * stride[i] + 1, stride[i]) for i, o in enumerate(tap))
        parts.append(Tensor(x.device.slice(xp._data, ranges), out_shape, x.dtype, x.device))
    stacked = stack(parts, 2)  # (N, C, taps, *spatial): the C reduction runs along whole rows
    pick = stacked.argmax(2, keepdim=True)
    where = tensor(table, dtype=dtypes.int64, device=x.device).reshape(spatial + (len(taps),))
    where = where.permute((n,) + tuple(range(n))).unsqueeze(0).unsqueeze(0)
    indices = where.expand(x.shape[:2] + (len(taps),) + spatial).gather(2, pick).squeeze(2)
    if not values:
        return indices
    return stacked.gather(2, pick).squeeze(2), indices


def _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, n, name):
    kernel, stride, pad_, dilation, pads, spatial = _pool_geometry(x, kernel_size, stride, padding, dilation,
                                                                   ceil_mode, n, name)
    if x.dtype is dtypes.bool_:
        raise DTypeError("%s: expected a float or integer tensor, found bool" % name)
    if x.dtype.kind == "f":
        values = Tensor(x.device.pool("max", x._data, kernel, stride, pads, dilation), x.shape[:2] + spatial,
                        x.dtype, x.device)
        if not return_indices:
            return values
        return values, _window_max(x, kernel, stride, pad_, dilation, pads, spatial, False)
    values, indices = _window_max(x, kernel, stride, pad_, dilation, pads, spatial, True)
    return (values, indices) if return_indices else values


def _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, n, name):
    """The mean over each window; the divisor is PyTorch's: the window's size clipped to the padded
    input (``ceil_mode``'s last window is shorter), or only its input elements without
    ``count_include_pad``, or ``divisor_override``."""
    kernel, stride, pad_, _, pads, spatial = _pool_geometry(x, kernel_size, stride, padding, 1, ceil_mode, n, name)
    if x.dtype.kind != "f":
        raise DTypeError("%s: expected a float tensor, found %s" % (name, x.dtype.name))
    ones = (1,) * n
    out = Tensor(x.device.pool("avg", x._data, kernel, stride, pads, ones), x.shape[:2] + spatial, x.dtype, x.device)
    size = 1
    for k in kernel:
        size *= k
    if divisor_override is not None:
        if type(divisor_override) is not int or divisor_override == 0:
            raise ArgumentError("%s: divisor_override must be a nonzero int, found %r" % (name, divisor_override))
        return out * (size / divisor_override)
    counts = []
    for i in range(n):
        lengths = []
        for j in range(spatial[i]):
            start = j * stride[i] - pad_[i]
            end = min(start + kernel[i], x.shape[2 + i] + pad_[i])
            if not count_include_pad:
                start, end = max(start, 0), min(end, x.shape[2 + i])
            lengths.append(end - start)
        counts.append(lengths)
    if all(c == k for lengths, k in zip(counts, kernel) for c in lengths):
        return out
    from ...creation import tensor
    grid = [1]
    for lengths in counts:
        grid = [a * b for a in grid for b in lengths]
    ratio = tensor([size / c for c in grid], dtype=x.dtype, device=x.device).reshape(spatial)
    return out * ratio


@composite
def max_pool2d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``; pads count as -inf.
    ``return_indices`` also gives each max's flat position in its input plane (int64)."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 2, "max_pool2d")


@composite
def max_pool1d(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False, return_indices=False):
    """Max over windows of (N, C, L); ``stride`` defaults to ``kernel_size``; pads count as -inf."""
    return _max_pool(x, kernel_size, stride, padding, dilation, ceil_mode, return_indices, 1, "max_pool1d")


@composite
def avg_pool2d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
               divisor_override=None):
    """Mean over windows of (N, C, H, W); zero padding counts in the mean unless not
    ``count_include_pad``; ``divisor_override`` replaces the window size (PyTorch's arguments)."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override, 2, "avg_pool2d")


@composite
def avg_pool1d(x, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
    """Mean over windows of (N, C, L); zero padding counts in the mean unless not ``count_include_pad``."""
    return _avg_pool(x, kernel_size, stride, padding, ceil_mode, count_include_pad, None, 1, "avg_pool1d")


@composite
def adaptive_avg_pool2d(x, output_size):
    """Average pooling of (N, C, H, W) to ``output_size``; window i spans [⌊iH/o⌋, ⌈(i+1)H/o⌉)."""
    from ...movement import cat
    if len(x.shape) != 4:
        raise ShapeError("adaptive_avg_pool2d: expected (N, C, H, W), found shape %s" % (x.shape,))
    out = _tuple(output_size, 2, "output_size", "adaptive_avg_pool2d")
    x = _floating(x, "adaptive_avg_pool2d")
    for i, o in enumerate(out):
        d = 2 + i
        n = x.shape[d]
        if o <= 0 or n == 0:
            raise ShapeError("adaptive_avg_pool2d: sizes must be > 0, found input %s, output %s" % (x.shape, out))
        parts = []
        for j in range(o):
            start, stop = (j * n) // o, -(-((j + 1) * n) // o)
            parts.append(x.narrow(d, start, stop - start).mean(d, keepdim=True))
        x = cat(parts, d)
    return x
