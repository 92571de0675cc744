"""A small CNN for the deployment tests: conv, relu, max pool, flatten, linear."""
import ember.nn.functional as F
from ember.nn import Module
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear


class Tiny(Module):
    def __init__(self, generator=None):
        super().__init__()
        self.conv = Conv2d(1, 4, 3, padding=1, generator=generator)
        self.fc = Linear(4 * 3 * 3, 3, generator=generator)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc(x.flatten(1))
