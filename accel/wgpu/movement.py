"""Layout arithmetic of the movement primitives: views where strides can express the result."""
from .arrays import contiguous_strides


def reshape_strides(shape, strides, new_shape):
    """Strides that view (``shape``, ``strides``) as ``new_shape`` without a copy, or None.

    Each run of new dims must cover a run of old dims that is itself contiguous (numpy's rule).
    """
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    keep = [n for n in new_shape if n != 1]
    if 0 in shape:
        return contiguous_strides(new_shape)
    out = []
    oi = ni = 0
    while ni < len(keep) and oi < len(old):
        nj, oj = ni + 1, oi + 1
        np_, op = keep[ni], old[oi][0]
        while np_ != op:
            if np_ < op:
                np_ *= keep[nj]
                nj += 1
            else:
                op *= old[oj][0]
                oj += 1
        for k in range(oi, oj - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        run = [0] * (nj - ni)
        run[-1] = old[oj - 1][1]
        for k in range(nj - ni - 1, 0, -1):
            run[k - 1] = run[k] * keep[ni + k]
        out.extend(run)
        ni, oi = nj, oj
    if ni != len(keep) or oi != len(old):
        return None
    it = iter(out)
    return tuple(0 if n == 1 else next(it) for n in new_shape)


def permute_layout(shape, strides, dims):
    return tuple(shape[d] for d in dims), tuple(strides[d] for d in dims)


def expand_layout(shape, strides, new_shape):
    return tuple(new_shape), tuple(0 if n != m else s for n, m, s in zip(shape, new_shape, strides))


def slice_layout(strides, offset, ranges):
    shape, new = [], []
    for (start, stop, step), s in zip(ranges, strides):
        shape.append(len(range(start, stop, step)))
        new.append(s * step)
        offset += start * s
    return tuple(shape), tuple(new), offset
