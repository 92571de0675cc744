"""Dropout: zeroes elements (``Dropout``) or whole channels (``Dropout1d/2d/3d``) with probability
``p`` while training, scaling the rest by 1/(1-p)."""
from ..errors import ArgumentError
from . import checks
from . import functional as F
from .config import Config
from .module import Module


class Dropout(Module):
    """Identity in eval mode; in training mode each element is zeroed with probability ``p``
    (drawn from ``generator``, ember's default when None)."""

    def __init__(self, p=0.5, generator=None):
        super().__init__()
        if not (type(p) in (int, float) and 0 <= p <= 1):
            raise ArgumentError("Dropout: p must be a probability in [0, 1], found %r" % (p,))
        self.p = p
        self.generator = generator

    def forward(self, x):
        checks.tensor(x, "Dropout")
        return F.dropout(x, self.p, self.training, self.generator)

    def extra_repr(self):
        return "p=%r" % (self.p,)


class Dropout1d(Dropout):
    """Each channel of (N, C, L) zeroed with probability ``p`` in training (``F.dropout1d``)."""

    def forward(self, x):
        checks.tensor(x, type(self).__name__)
        return F.dropout1d(x, self.p, self.training, self.generator)


class Dropout2d(Dropout):
    """Each channel of (N, C, H, W) zeroed with probability ``p`` in training (``F.dropout2d``)."""

    def forward(self, x):
        checks.tensor(x, type(self).__name__)
        return F.dropout2d(x, self.p, self.training, self.generator)


class Dropout3d(Dropout):
    """Each channel of (N, C, D, H, W) zeroed with probability ``p`` in training (``F.dropout3d``)."""

    def forward(self, x):
        checks.tensor(x, type(self).__name__)
        return F.dropout3d(x, self.p, self.training, self.generator)


class DropoutConfig(Config):
    """Builds ``Dropout(p)``, drawing from the generator given to ``init``."""

    FIELDS = (("p", 0.5, "prob"),)

    def build(self, device, generator):
        return Dropout(self.p, generator)
