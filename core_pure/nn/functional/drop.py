"""Dropout: elementwise and whole channels, with fresh masks from the generator."""
from ...composite import composite
from ...errors import ArgumentError, ShapeError


@composite
def dropout(x, p=0.5, training=True, generator=None):
    """Zero each element with probability ``p`` and scale the rest by 1/(1-p); identity when not training."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError("dropout: p must be in [0, 1], found %r" % (p,))
    if not training or p == 0.0:
        return x.clone()
    if p == 1.0:
        return x * 0
    from ...creation import draw
    # keep = (uniform >= p) = 1 - (uniform < p), drawn on the device, in x's dtype
    dropped = draw("bernoulli", x.shape, (p,), generator, x.dtype if x.dtype.kind == "f" else None, x.device,
                   "dropout")
    return x * (1 - dropped) / (1.0 - p)


def _channel_dropout(x, p, training, generator, n, op):
    """Zero whole channels: one draw per (batch, channel) of an input with ``n`` spatial dims."""
    if not 0.0 <= p <= 1.0:
        raise ArgumentError("%s: p must be in [0, 1], found %r" % (op, p))
    if x.ndim not in (n + 1, n + 2):
        raise ShapeError("%s: expected a %d-D (C, *spatial) or %d-D (N, C, *spatial) input, found shape %s"
                         % (op, n + 1, n + 2, x.shape))
    if not training or p == 0.0:
        return x.clone()
    if p == 1.0:
        return x * 0
    from ...creation import draw
    mask = x.shape[:x.ndim - n] + (1,) * n
    dropped = draw("bernoulli", mask, (p,), generator, x.dtype if x.dtype.kind == "f" else None, x.device, op)
    return x * (1 - dropped) / (1.0 - p)


@composite
def dropout1d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, L) or (C, L) with probability ``p``, scale the rest by 1/(1-p)."""
    return _channel_dropout(x, p, training, generator, 1, "dropout1d")


@composite
def dropout2d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, H, W) or (C, H, W) with probability ``p``, scale the rest by 1/(1-p)."""
    return _channel_dropout(x, p, training, generator, 2, "dropout2d")


@composite
def dropout3d(x, p=0.5, training=True, generator=None):
    """Zero each channel of (N, C, D, H, W) or (C, D, H, W) with probability ``p``, scale the rest."""
    return _channel_dropout(x, p, training, generator, 3, "dropout3d")
