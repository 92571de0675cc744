"""Distributions for ``ember.random(shape, distribution)``: what a random tensor is drawn from.

The built-in ones name a kind of the device's ``random`` primitive (``kind`` and ``params``), so
their tensors are drawn where the device draws; a user's subclass implements ``sample`` instead and
its values are drawn on the host.
"""
from .errors import ArgumentError, ArgumentTypeError


def _number(v, name, op):
    if type(v) not in (int, float):
        raise ArgumentTypeError("%s: expected an int or float %s, found %s" % (op, name, type(v).__name__))
    if v != v or v in (float("inf"), float("-inf")):
        raise ArgumentError("%s: expected a finite %s, found %r" % (op, name, v))
    return float(v)


class Distribution:
    """Draws ``n`` Python numbers from a ``Generator``: a built-in one names the ``random`` primitive's
    ``kind`` and ``params``; a subclass without a kind overrides ``sample``."""

    kind = None
    params = ()

    def sample(self, generator, n):
        """``n`` draws from ``generator`` as a list of Python numbers."""
        if self.kind is None:
            raise NotImplementedError("%s.sample" % type(self).__name__)
        return generator.draw(self.kind, n, self.params)


class Uniform(Distribution):
    """Uniform on [low, high); ``Uniform()`` is [0, 1)."""

    kind = "uniform"

    def __init__(self, low=0.0, high=1.0):
        low, high = _number(low, "low", "Uniform"), _number(high, "high", "Uniform")
        if not high > low:
            raise ArgumentError("Uniform: expected low < high, found %r >= %r" % (low, high))
        self.low, self.high = low, high
        self.params = (low, high)

    def __repr__(self):
        return "Uniform(%r, %r)" % (self.low, self.high)


class Normal(Distribution):
    """Normal with ``mean`` and standard deviation ``std``."""

    kind = "normal"

    def __init__(self, mean=0.0, std=1.0):
        mean, std = _number(mean, "mean", "Normal"), _number(std, "std", "Normal")
        if not std >= 0:
            raise ArgumentError("Normal: expected std >= 0, found %r" % (std,))
        self.mean, self.std = mean, std
        self.params = (mean, std)

    def __repr__(self):
        return "Normal(%r, %r)" % (self.mean, self.std)


class Bernoulli(Distribution):
    """1 with probability ``p``, else 0 (a uniform draw below ``p``)."""

    kind = "bernoulli"

    def __init__(self, p=0.5):
        p = _number(p, "p", "Bernoulli")
        if not 0.0 <= p <= 1.0:
            raise ArgumentError("Bernoulli: expected 0 <= p <= 1, found %r" % (p,))
        self.p = p
        self.params = (p,)

    def __repr__(self):
        return "Bernoulli(%r)" % (self.p,)
