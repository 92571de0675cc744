"""Linear and Bilinear layers, with PyTorch's parameter names, layouts and initialization."""
import math

from ..errors import ShapeError
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .module import Module, Param


class Linear(Module):
    """``y = x @ weight.T + bias`` with ``weight`` [out_features, in_features] (PyTorch's layout) and
    PyTorch's initialization: both uniform on ±1/√in_features.

    >>> layer = Linear(784, 128)
    >>> layer(ember.randn(4, 784)).shape
    (4, 128)
    """

    def __init__(self, in_features, out_features, bias=True, device=None, generator=None):
        super().__init__()
        self.in_features = checks.count(in_features, "Linear", "in_features")
        self.out_features = checks.count(out_features, "Linear", "out_features")
        self.weight = Param(init.kaiming_uniform((out_features, in_features), a=math.sqrt(5),
                                                 generator=generator, device=device))
        if bias:
            bound = 1 / math.sqrt(in_features) if in_features > 0 else 0.0
            self.bias = Param(init.uniform((out_features,), -bound, bound, generator, device))
        else:
            self.bias = None

    def forward(self, x):
        checks.features(x, "Linear", self.in_features, "in_features")
        return F.linear(x, self.weight, self.bias)

    def extra_repr(self):
        return "in_features=%d, out_features=%d, bias=%s" % (self.in_features, self.out_features,
                                                             self.bias is not None)


class LinearConfig(Config):
    """Builds ``Linear(d_input, d_output, bias)``."""

    FIELDS = (("d_input", REQUIRED, "int>0"), ("d_output", REQUIRED, "int>0"), ("bias", True, "bool"))

    def build(self, device, generator):
        return Linear(self.d_input, self.d_output, self.bias, device, generator)


class Bilinear(Module):
    """``y[n, o] = x1[n] @ weight[o] @ x2[n] + bias[o]`` with ``weight`` [out, in1, in2] (PyTorch's
    ``nn.Bilinear``): weight and bias uniform on ±1/√in1_features."""

    def __init__(self, in1_features, in2_features, out_features, bias=True, device=None, generator=None):
        super().__init__()
        self.in1_features = checks.count(in1_features, "Bilinear", "in1_features", 1)
        self.in2_features = checks.count(in2_features, "Bilinear", "in2_features")
        self.out_features = checks.count(out_features, "Bilinear", "out_features")
        bound = 1 / math.sqrt(in1_features)
        self.weight = Param(init.uniform((out_features, in1_features, in2_features), -bound, bound, generator,
                                         device))
        self.bias = Param(init.uniform((out_features,), -bound, bound, generator, device)) if bias else None

    def forward(self, x1, x2):
        checks.features(x1, "Bilinear", self.in1_features, "in1_features")
        checks.features(x2, "Bilinear", self.in2_features, "in2_features")
        if x1.shape[:-1] != x2.shape[:-1]:
            raise ShapeError("Bilinear: inputs must agree except in the last dim, found %s and %s"
                             % (x1.shape, x2.shape))
        o, i1, i2 = self.weight.shape
        # x1 @ W as one matmul: (..., i1) @ (i1, o * i2) -> (..., o, i2), then the dot with x2
        w = self.weight.permute(1, 0, 2).reshape(i1, o * i2)
        t = (x1 @ w).reshape(x1.shape[:-1] + (o, i2))
        y = (t * x2.unsqueeze(-2)).sum(-1)
        return y + self.bias if self.bias is not None else y

    def extra_repr(self):
        return "in1_features=%d, in2_features=%d, out_features=%d, bias=%s" % (
            self.in1_features, self.in2_features, self.out_features, self.bias is not None)


class BilinearConfig(Config):
    """Builds ``Bilinear(d_input1, d_input2, d_output, bias)``."""

    FIELDS = (("d_input1", REQUIRED, "int>0"), ("d_input2", REQUIRED, "int>0"), ("d_output", REQUIRED, "int>0"),
              ("bias", True, "bool"))

    def build(self, device, generator):
        return Bilinear(self.d_input1, self.d_input2, self.d_output, self.bias, device, generator)
