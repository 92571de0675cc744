"""Convolution layers (Conv1d, Conv2d, Conv3d, ConvTranspose2d, ConvTranspose3d) with PyTorch's names, layouts and
initialization: weight and bias uniform on ±1/√fan_in. Inputs are (N, C, *spatial) or, unbatched,
(C, *spatial)."""
import math

from ..errors import ArgumentError
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .module import Module, Param


def _tuple(v, n):
    return (v,) * n if type(v) is int else tuple(v)


def _bias(out_channels, fan_in, generator, device):
    bound = 1 / math.sqrt(fan_in) if fan_in > 0 else 0.0
    return Param(init.uniform((out_channels,), -bound, bound, generator, device))


_LAYOUTS = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)", 3: "(N, C, D, H, W) or (C, D, H, W)"}


class _ConvNd(Module):
    N = 0  # spatial dims
    NAME = ""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                 generator, transposed=False, output_padding=0):
        super().__init__()
        n, op = self.N, self.NAME
        checks.count(in_channels, op, "in_channels", 1)
        checks.count(out_channels, op, "out_channels", 1)
        checks.count(groups, op, "groups", 1)
        kernel_size = checks.counts(kernel_size, n, op, "kernel_size", 1)
        stride = checks.counts(stride, n, op, "stride", 1)
        dilation = checks.counts(dilation, n, op, "dilation", 1)
        if type(padding) is str:
            if transposed or padding not in ("valid", "same"):
                raise ArgumentError("%s: expected padding %san int or %d ints, found %r"
                                    % (op, "" if transposed else "'valid', 'same', ", n, padding))
        else:
            padding = checks.counts(padding, n, op, "padding", 0)
        if in_channels % groups or out_channels % groups:
            raise ArgumentError("%s: in_channels %d and out_channels %d must both divide by groups=%d"
                                % (op, in_channels, out_channels, groups))
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = _tuple(kernel_size, n)
        self.stride = _tuple(stride, n)
        self.padding = padding if type(padding) is str else _tuple(padding, n)
        self.dilation = _tuple(dilation, n)
        self.groups = groups
        if transposed:
            self.output_padding = checks.counts(output_padding, n, op, "output_padding", 0)
            if [i for i in range(n) if self.output_padding[i] >= max(self.stride[i], self.dilation[i])]:
                raise ArgumentError("%s: expected output_padding smaller than stride or dilation, found %s "
                                    "(stride %s, dilation %s)" % (op, self.output_padding, self.stride, self.dilation))
            shape = (in_channels, out_channels // groups) + self.kernel_size
        else:
            shape = (out_channels, in_channels // groups) + self.kernel_size
        self.weight = Param(init.kaiming_uniform(shape, a=math.sqrt(5), generator=generator, device=device))
        self.bias = _bias(out_channels, init.fans(shape)[0], generator, device) if bias else None

    def _batched(self, x):
        layout = _LAYOUTS[self.N]
        checks.ndim(x, self.NAME, (self.N + 1, self.N + 2), layout)
        return x if len(x.shape) == self.N + 2 else x.unsqueeze(0)

    def forward(self, x):
        batched = self._batched(x)
        checks.size_at(batched, self.NAME, 1, self.in_channels, "in_channels")
        y = self._conv(batched)
        return y if batched is x else y.squeeze(0)

    def extra_repr(self):
        s = "%d, %d, kernel_size=%s, stride=%s" % (self.in_channels, self.out_channels, self.kernel_size,
                                                   self.stride)
        if self.padding != (0,) * self.N:
            s += ", padding=%r" % (self.padding,)
        if self.dilation != (1,) * self.N:
            s += ", dilation=%s" % (self.dilation,)
        if getattr(self, "output_padding", (0,) * self.N) != (0,) * self.N:
            s += ", output_padding=%s" % (self.output_padding,)
        if self.groups != 1:
            s += ", groups=%d" % self.groups
        if self.bias is None:
            s += ", bias=False"
        return s


class Conv1d(_ConvNd):
    """1-D convolution over (N, C, L); weight [out, in/groups, k]; padding an int, 'valid' or 'same'."""

    N = 1
    NAME = "Conv1d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, device=None, generator=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                         generator)

    def _conv(self, x):
        return F.conv1d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv2d(_ConvNd):
    """2-D convolution over (N, C, H, W); weight [out, in/groups, kh, kw]; padding an int, a pair,
    'valid' or 'same'.

    >>> Conv2d(1, 6, 5)(ember.randn(2, 1, 28, 28)).shape
    (2, 6, 24, 24)
    """

    N = 2
    NAME = "Conv2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, device=None, generator=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                         generator)

    def _conv(self, x):
        return F.conv2d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose2d(_ConvNd):
    """The transpose (gradient) of Conv2d; weight [in, out/groups, kh, kw], as in PyTorch."""

    N = 2
    NAME = "ConvTranspose2d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, device=None, generator=None):
        if type(padding) is str:
            raise ArgumentError("ConvTranspose2d: padding must be an int or a pair, found %r" % (padding,))
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                         generator, transposed=True, output_padding=output_padding)

    def _conv(self, x):
        return F.conv_transpose2d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


class Conv3d(_ConvNd):
    """3-D convolution over (N, C, D, H, W); weight [out, in/groups, kd, kh, kw]; padding an int,
    three ints, 'valid' or 'same'.

    >>> Conv3d(1, 4, 3)(ember.randn(2, 1, 8, 8, 8)).shape
    (2, 4, 6, 6, 6)
    """

    N = 3
    NAME = "Conv3d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True, device=None, generator=None):
        """PyTorch's arguments; ``generator`` draws the initial weights."""
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                         generator)

    def _conv(self, x):
        """The convolution of a batched input."""
        return F.conv3d(x, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class ConvTranspose3d(_ConvNd):
    """The transpose (gradient) of Conv3d; weight [in, out/groups, kd, kh, kw], as in PyTorch."""

    N = 3
    NAME = "ConvTranspose3d"

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, output_padding=0, groups=1,
                 bias=True, dilation=1, device=None, generator=None):
        """PyTorch's arguments; ``generator`` draws the initial weights."""
        if type(padding) is str:
            raise ArgumentError("ConvTranspose3d: padding must be an int or three ints, found %r" % (padding,))
        super().__init__(in_channels, out_channels, kernel_size, stride, padding, dilation, groups, bias, device,
                         generator, transposed=True, output_padding=output_padding)

    def _conv(self, x):
        """The transposed convolution of a batched input."""
        return F.conv_transpose3d(x, self.weight, self.bias, self.stride, self.padding, self.output_padding,
                                  self.groups, self.dilation)


_CONV_FIELDS = (("in_channels", REQUIRED, "int>0"), ("out_channels", REQUIRED, "int>0"),
                ("kernel_size", REQUIRED, "size"), ("stride", 1, "size"), ("padding", 0, "padding"),
                ("dilation", 1, "size"), ("groups", 1, "int>0"), ("bias", True, "bool"))


class _ConvConfig(Config):
    FIELDS = _CONV_FIELDS

    def validate(self):
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ArgumentError("%s: in_channels %d and out_channels %d must both divide by groups=%d"
                                % (type(self).__name__, self.in_channels, self.out_channels, self.groups))

    def build(self, device, generator):
        return self.MODULE(*self.values(), device=device, generator=generator)


class Conv1dConfig(_ConvConfig):
    """Builds ``Conv1d``; fields as its arguments."""

    MODULE = Conv1d


class Conv2dConfig(_ConvConfig):
    """Builds ``Conv2d``; fields as its arguments."""

    MODULE = Conv2d


class Conv3dConfig(_ConvConfig):
    """Builds ``Conv3d``; fields as its arguments."""

    MODULE = Conv3d


_TRANSPOSED_FIELDS = (("in_channels", REQUIRED, "int>0"), ("out_channels", REQUIRED, "int>0"),
                      ("kernel_size", REQUIRED, "size"), ("stride", 1, "size"), ("padding", 0, "size>=0"),
                      ("output_padding", 0, "size>=0"), ("groups", 1, "int>0"), ("bias", True, "bool"),
                      ("dilation", 1, "size"))


class ConvTranspose2dConfig(_ConvConfig):
    """Builds ``ConvTranspose2d``; fields as its arguments."""

    FIELDS = _TRANSPOSED_FIELDS
    MODULE = ConvTranspose2d


class ConvTranspose3dConfig(_ConvConfig):
    """Builds ``ConvTranspose3d``; fields as its arguments."""

    FIELDS = _TRANSPOSED_FIELDS
    MODULE = ConvTranspose3d
