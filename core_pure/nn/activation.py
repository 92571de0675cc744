"""Activations as modules (``ReLU()``, ``GELU(approximate="tanh")``, ...), each a thin layer over
its ``ember.nn.functional`` op, with PyTorch's names and arguments."""
from ..errors import ArgumentError
from . import checks
from . import functional as F
from .config import Config
from .module import Module


class _Activation(Module):
    FN = None  # the functional op, stored as a staticmethod by each subclass

    def forward(self, x):
        """The activation of ``x``, elementwise."""
        checks.tensor(x, type(self).__name__)
        return self.FN(x)


class ReLU(_Activation):
    """max(x, 0), elementwise (``F.relu``)."""

    FN = staticmethod(F.relu)


class SiLU(_Activation):
    """x · sigmoid(x), elementwise (``F.silu``)."""

    FN = staticmethod(F.silu)


class Sigmoid(_Activation):
    """1 / (1 + exp(-x)), elementwise (``F.sigmoid``)."""

    FN = staticmethod(F.sigmoid)


class Tanh(_Activation):
    """tanh(x), elementwise (``F.tanh``)."""

    FN = staticmethod(F.tanh)


class Mish(_Activation):
    """x · tanh(softplus(x)), elementwise (``F.mish``)."""

    FN = staticmethod(F.mish)


class Hardswish(_Activation):
    """x · relu6(x + 3) / 6, elementwise (``F.hardswish``)."""

    FN = staticmethod(F.hardswish)


class Hardsigmoid(_Activation):
    """relu6(x + 3) / 6, elementwise (``F.hardsigmoid``)."""

    FN = staticmethod(F.hardsigmoid)


class Softsign(_Activation):
    """x / (1 + |x|)."""
    FN = staticmethod(F.softsign)


class SELU(_Activation):
    """scale · elu(x, alpha) with PyTorch's fixed alpha and scale."""
    FN = staticmethod(F.selu)


class ReLU6(_Activation):
    """min(max(0, x), 6)."""
    FN = staticmethod(F.relu6)


class LogSigmoid(_Activation):
    """log(sigmoid(x)), computed without overflow."""
    FN = staticmethod(F.logsigmoid)


class CELU(Module):
    """max(0, x) + min(0, alpha · (exp(x / alpha) - 1))."""

    def __init__(self, alpha=1.0):
        super().__init__()
        if alpha == 0:
            raise ArgumentError("CELU: alpha must not be 0, found %r" % (alpha,))
        self.alpha = alpha

    def forward(self, x):
        checks.tensor(x, "CELU")
        return F.celu(x, self.alpha)

    def extra_repr(self):
        return "alpha=%r" % (self.alpha,)


class Hardtanh(Module):
    """x clamped to [min_val, max_val]."""

    def __init__(self, min_val=-1.0, max_val=1.0):
        super().__init__()
        if not min_val <= max_val:
            raise ArgumentError("Hardtanh: expected min_val <= max_val, found %r and %r" % (min_val, max_val))
        self.min_val = min_val
        self.max_val = max_val

    def forward(self, x):
        checks.tensor(x, "Hardtanh")
        return F.hardtanh(x, self.min_val, self.max_val)

    def extra_repr(self):
        return "min_val=%r, max_val=%r" % (self.min_val, self.max_val)


class GELU(Module):
    """x · Φ(x); ``approximate="tanh"`` uses the tanh formula."""

    def __init__(self, approximate="none"):
        super().__init__()
        if approximate not in ("none", "tanh"):
            raise ArgumentError("GELU: approximate must be 'none' or 'tanh', found %r" % (approximate,))
        self.approximate = approximate

    def forward(self, x):
        checks.tensor(x, "GELU")
        return F.gelu(x, self.approximate)

    def extra_repr(self):
        return "approximate=%r" % self.approximate if self.approximate != "none" else ""


class LeakyReLU(Module):
    """x where x >= 0, else ``negative_slope`` · x (``F.leaky_relu``)."""

    def __init__(self, negative_slope=0.01):
        super().__init__()
        self.negative_slope = negative_slope

    def forward(self, x):
        checks.tensor(x, "LeakyReLU")
        return F.leaky_relu(x, self.negative_slope)

    def extra_repr(self):
        return "negative_slope=%r" % (self.negative_slope,)


class ELU(Module):
    """x where x > 0, else ``alpha`` · (exp(x) - 1) (``F.elu``)."""

    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        checks.tensor(x, "ELU")
        return F.elu(x, self.alpha)

    def extra_repr(self):
        return "alpha=%r" % (self.alpha,)


class Softplus(Module):
    """log(1 + exp(beta·x)) / beta, linear where beta·x > threshold."""

    def __init__(self, beta=1.0, threshold=20.0):
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, x):
        checks.tensor(x, "Softplus")
        return F.softplus(x, self.beta, self.threshold)

    def extra_repr(self):
        return "beta=%r, threshold=%r" % (self.beta, self.threshold)


class Softmax(Module):
    """Softmax along ``dim`` (the last dim by default)."""

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        checks.tensor(x, "Softmax")
        return F.softmax(x, self.dim)

    def extra_repr(self):
        return "dim=%d" % self.dim


class LogSoftmax(Softmax):
    """log(softmax(x)) along ``dim``, computed stably."""

    def forward(self, x):
        checks.tensor(x, "LogSoftmax")
        return F.log_softmax(x, self.dim)


class Softmin(Softmax):
    """softmax(-x) along ``dim``."""

    def forward(self, x):
        checks.tensor(x, "Softmin")
        return F.softmin(x, self.dim)


_BY_NAME = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu, "sigmoid": F.sigmoid, "tanh": F.tanh}


def get(name):
    """The functional activation for a name used by configs ("relu", "gelu", "silu", ...)."""
    fn = _BY_NAME.get(name)
    if fn is None:
        raise ArgumentError("activation: expected one of %s, found %r" % (", ".join(sorted(_BY_NAME)), name))
    return fn


class ReLUConfig(Config):
    """Builds ``ReLU()``."""

    MODULE = ReLU


class SiLUConfig(Config):
    """Builds ``SiLU()``."""

    MODULE = SiLU


class SigmoidConfig(Config):
    """Builds ``Sigmoid()``."""

    MODULE = Sigmoid


class TanhConfig(Config):
    """Builds ``Tanh()``."""

    MODULE = Tanh


class MishConfig(Config):
    """Builds ``Mish()``."""

    MODULE = Mish


class HardswishConfig(Config):
    """Builds ``Hardswish()``."""

    MODULE = Hardswish


class HardsigmoidConfig(Config):
    """Builds ``Hardsigmoid()``."""

    MODULE = Hardsigmoid


class GELUConfig(Config):
    """Builds ``GELU(approximate='none')``."""

    FIELDS = (("approximate", "none", ("none", "tanh")),)
    MODULE = GELU


class LeakyReLUConfig(Config):
    """Builds ``LeakyReLU(negative_slope=0.01)``."""

    FIELDS = (("negative_slope", 0.01, "float"),)
    MODULE = LeakyReLU


class ELUConfig(Config):
    """Builds ``ELU(alpha=1.0)``."""

    FIELDS = (("alpha", 1.0, "float"),)
    MODULE = ELU


class SoftplusConfig(Config):
    """Builds ``Softplus(beta=1.0, threshold=20.0)``."""

    FIELDS = (("beta", 1.0, "float>0"), ("threshold", 20.0, "float"))
    MODULE = Softplus


class SoftmaxConfig(Config):
    """Builds ``Softmax(dim=-1)``."""

    FIELDS = (("dim", -1, "int"),)
    MODULE = Softmax


class LogSoftmaxConfig(Config):
    """Builds ``LogSoftmax(dim=-1)``."""

    FIELDS = (("dim", -1, "int"),)
    MODULE = LogSoftmax


class SoftsignConfig(Config):
    """Builds ``Softsign()``."""

    MODULE = Softsign


class SELUConfig(Config):
    """Builds ``SELU()``."""

    MODULE = SELU


class ReLU6Config(Config):
    """Builds ``ReLU6()``."""

    MODULE = ReLU6


class LogSigmoidConfig(Config):
    """Builds ``LogSigmoid()``."""

    MODULE = LogSigmoid


class CELUConfig(Config):
    """Builds ``CELU(alpha)``."""

    FIELDS = (("alpha", 1.0, "float"),)
    MODULE = CELU


class HardtanhConfig(Config):
    """Builds ``Hardtanh(min_val, max_val)``."""

    FIELDS = (("min_val", -1.0, "float"), ("max_val", 1.0, "float"))
    MODULE = Hardtanh


class SoftminConfig(Config):
    """Builds ``Softmin(dim)``."""

    FIELDS = (("dim", -1, "int"),)
    MODULE = Softmin
