"""Flatten and Identity: layers that only reshape or pass through."""
from . import checks
from .config import Config
from .module import Module


class Flatten(Module):
    """Flattens dims ``start_dim`` to ``end_dim`` into one (defaults keep the batch dim)."""

    def __init__(self, start_dim=1, end_dim=-1):
        super().__init__()
        self.start_dim = start_dim
        self.end_dim = end_dim

    def forward(self, x):
        checks.tensor(x, "Flatten")
        return x.flatten(self.start_dim, self.end_dim)

    def extra_repr(self):
        return "start_dim=%d, end_dim=%d" % (self.start_dim, self.end_dim)


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional)."""

    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, x):
        return x


class FlattenConfig(Config):
    """Builds ``Flatten(start_dim=1, end_dim=-1)``."""

    FIELDS = (("start_dim", 1, "int"), ("end_dim", -1, "int"))
    MODULE = Flatten


class IdentityConfig(Config):
    """Builds ``Identity()``."""

    MODULE = Identity
