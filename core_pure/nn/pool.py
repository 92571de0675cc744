"""Pooling layers: MaxPool1d/2d/3d, AvgPool1d/2d/3d, AdaptiveAvgPool2d, MaxUnpool2d (PyTorch's
arguments; inputs (N, C, *spatial) or, unbatched, (C, *spatial))."""
from . import checks
from . import functional as F
from .config import REQUIRED, Config
from .module import Module


_LAYOUTS = {1: "(N, C, L) or (C, L)", 2: "(N, C, H, W) or (C, H, W)", 3: "(N, C, D, H, W) or (C, D, H, W)"}


class _Pool(Module):
    N = 0
    NAME = ""

    def forward(self, x):
        checks.ndim(x, self.NAME, (self.N + 1, self.N + 2), _LAYOUTS[self.N])
        if len(x.shape) == self.N + 2:
            return self._pool(x)
        out = self._pool(x.unsqueeze(0))
        return tuple(t.squeeze(0) for t in out) if type(out) is tuple else out.squeeze(0)


class _MaxPool(_Pool):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, return_indices=False, ceil_mode=False):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.dilation = dilation
        self.return_indices = return_indices
        self.ceil_mode = ceil_mode

    def extra_repr(self):
        return "kernel_size=%r, stride=%r, padding=%r, dilation=%r, ceil_mode=%r" % (
            self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class MaxPool1d(_MaxPool):
    """Max over windows of (N, C, L); ``stride`` defaults to ``kernel_size``."""

    N = 1
    NAME = "MaxPool1d"

    def _pool(self, x):
        return F.max_pool1d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class MaxPool2d(_MaxPool):
    """Max over windows of (N, C, H, W); ``stride`` defaults to ``kernel_size``."""

    N = 2
    NAME = "MaxPool2d"

    def _pool(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class _AvgPool(_Pool):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding
        self.ceil_mode = ceil_mode
        self.count_include_pad = count_include_pad

    def extra_repr(self):
        return "kernel_size=%r, stride=%r, padding=%r" % (self.kernel_size, self.stride, self.padding)


class AvgPool1d(_AvgPool):
    """Mean over windows of (N, C, L); zero padding counts in the mean (PyTorch's default)."""

    N = 1
    NAME = "AvgPool1d"

    def _pool(self, x):
        return F.avg_pool1d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class AvgPool2d(_AvgPool):
    """Mean over windows of (N, C, H, W); zero padding counts in the mean (PyTorch's default)."""

    N = 2
    NAME = "AvgPool2d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def _pool(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class MaxPool3d(_MaxPool):
    """Max over windows of (N, C, D, H, W); ``stride`` defaults to ``kernel_size``."""

    N = 3
    NAME = "MaxPool3d"

    def _pool(self, x):
        """The pooling of a batched input."""
        return F.max_pool3d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode,
                            self.return_indices)


class AvgPool3d(_AvgPool):
    """Mean over windows of (N, C, D, H, W); zero padding counts in the mean unless
    ``count_include_pad=False``."""

    N = 3
    NAME = "AvgPool3d"

    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
                 divisor_override=None):
        """PyTorch's arguments; ``stride`` defaults to ``kernel_size``."""
        super().__init__(kernel_size, stride, padding, ceil_mode, count_include_pad)
        self.divisor_override = divisor_override

    def _pool(self, x):
        """The pooling of a batched input."""
        return F.avg_pool3d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad,
                            self.divisor_override)


class MaxUnpool2d(Module):
    """The inverse of ``MaxPool2d(..., return_indices=True)``: ``unpool(y, indices)`` writes each value
    at its index in a zero plane (``output_size`` picks among the sizes a pool could have come from)."""

    def __init__(self, kernel_size, stride=None, padding=0):
        """The pool's arguments; ``stride`` defaults to ``kernel_size``."""
        super().__init__()
        self.kernel_size = kernel_size
        self.stride = kernel_size if stride is None else stride
        self.padding = padding

    def forward(self, x, indices, output_size=None):
        """The unpooled (N, C, H_out, W_out) or (C, H_out, W_out) tensor."""
        return F.max_unpool2d(x, indices, self.kernel_size, self.stride, self.padding, output_size)

    def extra_repr(self):
        """The arguments, as repr shows them."""
        return "kernel_size=%r, stride=%r, padding=%r" % (self.kernel_size, self.stride, self.padding)


class AdaptiveAvgPool2d(_Pool):
    """Average pooling of (N, C, H, W) to a fixed ``output_size`` (an int or (h, w))."""

    N = 2
    NAME = "AdaptiveAvgPool2d"

    def __init__(self, output_size):
        super().__init__()
        self.output_size = output_size

    def _pool(self, x):
        return F.adaptive_avg_pool2d(x, self.output_size)

    def extra_repr(self):
        return "output_size=%r" % (self.output_size,)


_MAX_FIELDS = (("kernel_size", REQUIRED, "size"), ("stride", None, "size"), ("padding", 0, "size>=0"),
               ("dilation", 1, "size"), ("return_indices", False, "bool"), ("ceil_mode", False, "bool"))
_AVG_FIELDS = (("kernel_size", REQUIRED, "size"), ("stride", None, "size"), ("padding", 0, "size>=0"),
               ("ceil_mode", False, "bool"), ("count_include_pad", True, "bool"))


class MaxPool1dConfig(Config):
    """Builds ``MaxPool1d(kernel_size, stride=None, padding=0, dilation=1)``."""

    FIELDS = _MAX_FIELDS
    MODULE = MaxPool1d


class MaxPool2dConfig(Config):
    """Builds ``MaxPool2d(kernel_size, stride=None, padding=0, dilation=1)``."""

    FIELDS = _MAX_FIELDS
    MODULE = MaxPool2d


class AvgPool1dConfig(Config):
    """Builds ``AvgPool1d(kernel_size, stride=None, padding=0)``."""

    FIELDS = _AVG_FIELDS
    MODULE = AvgPool1d


class AvgPool2dConfig(Config):
    """Builds ``AvgPool2d(kernel_size, stride=None, padding=0)``."""

    FIELDS = _AVG_FIELDS
    MODULE = AvgPool2d


class MaxPool3dConfig(Config):
    """Builds ``MaxPool3d(kernel_size, stride=None, padding=0, dilation=1)``."""

    FIELDS = _MAX_FIELDS
    MODULE = MaxPool3d


class AvgPool3dConfig(Config):
    """Builds ``AvgPool3d(kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True,
    divisor_override=None)``."""

    FIELDS = _AVG_FIELDS + (("divisor_override", None, "int>0"),)
    MODULE = AvgPool3d


class MaxUnpool2dConfig(Config):
    """Builds ``MaxUnpool2d(kernel_size, stride=None, padding=0)``."""

    FIELDS = (("kernel_size", REQUIRED, "size"), ("stride", None, "size"), ("padding", 0, "size>=0"))
    MODULE = MaxUnpool2d


class AdaptiveAvgPool2dConfig(Config):
    """Builds ``AdaptiveAvgPool2d(output_size)``."""

    FIELDS = (("output_size", REQUIRED, "size"),)
    MODULE = AdaptiveAvgPool2d
