"""The parameter-free layers (``ReLU``, ``MaxPool2d``, ``AvgPool2d``, ``Flatten``, ``Identity``,
``Dropout``), shipped only to models that use them."""
from . import functional as F
from .module import Module


class ReLU(Module):
    def __init__(self, inplace=False):
        pass

    def forward(self, x):
        return F.relu(x)


class _Pool(Module):
    def __init__(self, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
        self.kernel_size, self.stride, self.padding, self.dilation = kernel_size, stride, padding, dilation
        self.ceil_mode = ceil_mode


class MaxPool2d(_Pool):
    def forward(self, x):
        return F.max_pool2d(x, self.kernel_size, self.stride, self.padding, self.dilation, self.ceil_mode)


class AvgPool2d(_Pool):
    def __init__(self, kernel_size, stride=None, padding=0, ceil_mode=False, count_include_pad=True):
        _Pool.__init__(self, kernel_size, stride, padding, 1, ceil_mode)
        self.count_include_pad = count_include_pad

    def forward(self, x):
        return F.avg_pool2d(x, self.kernel_size, self.stride, self.padding, self.ceil_mode, self.count_include_pad)


class Flatten(Module):
    def __init__(self, start_dim=1, end_dim=-1):
        self.start_dim, self.end_dim = start_dim, end_dim

    def forward(self, x):
        return x.flatten(self.start_dim, self.end_dim)


class Identity(Module):
    def forward(self, x):
        return x


class Dropout(Identity):
    def __init__(self, p=0.5, generator=None, inplace=False):  # ember.nn.Dropout's (p, generator)
        pass
