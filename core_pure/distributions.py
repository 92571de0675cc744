"""Distributions for ``ember.random(shape, distribution)``: what a random tensor is drawn from."""
from .errors import ArgumentError


class Distribution:
    """Draws ``n`` Python numbers from a ``Generator``."""

    def sample(self, generator, n):
        raise NotImplementedError("%s.sample" % type(self).__name__)


class Uniform(Distribution):
    """Uniform on [low, high); ``Uniform()`` is [0, 1)."""

    def __init__(self, low=0.0, high=1.0):
        if not high > low:
            raise ArgumentError("Uniform: expected low < high, found %r >= %r" % (low, high))
        self.low, self.high = low, high

    def sample(self, generator, n):
        return generator.uniforms(n, self.low, self.high)

    def __repr__(self):
        return "Uniform(%r, %r)" % (self.low, self.high)


class Normal(Distribution):
    """Normal with ``mean`` and standard deviation ``std``."""

    def __init__(self, mean=0.0, std=1.0):
        if not std >= 0:
            raise ArgumentError("Normal: expected std >= 0, found %r" % (std,))
        self.mean, self.std = mean, std

    def sample(self, generator, n):
        return generator.normals(n, self.mean, self.std)

    def __repr__(self):
        return "Normal(%r, %r)" % (self.mean, self.std)


class Bernoulli(Distribution):
    """1 with probability ``p``, else 0."""

    def __init__(self, p=0.5):
        if not 0.0 <= p <= 1.0:
            raise ArgumentError("Bernoulli: expected 0 <= p <= 1, found %r" % (p,))
        self.p = p

    def sample(self, generator, n):
        p = self.p
        return [1.0 if u < p else 0.0 for u in generator.uniforms(n)]

    def __repr__(self):
        return "Bernoulli(%r)" % (self.p,)
