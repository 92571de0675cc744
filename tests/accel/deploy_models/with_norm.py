"""A model with a layer the deployment path lacks (BatchNorm2d)."""
from ember.nn import Module
from ember.nn.conv import Conv2d
from ember.nn.layers import BatchNorm2d


class WithNorm(Module):
    def __init__(self):
        super().__init__()
        self.conv = Conv2d(1, 2, 3)
        self.bn = BatchNorm2d(2)

    def forward(self, x):
        return self.bn(self.conv(x))
