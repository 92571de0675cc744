"""The digits CNN: one model definition for training (CPython) and for deployment (MicroPython).

    (N, 1, 8, 8) -> conv 3x3, 16 channels -> relu -> max pool 2 -> (N, 16, 4, 4)
                 -> conv 3x3, 32 channels -> relu -> max pool 2 -> (N, 32, 2, 2)
                 -> flatten 128 -> linear 10 (logits)

6,090 parameters, PyTorch's names and layouts (conv1.weight is [16, 1, 3, 3]).
"""
import ember.nn.functional as F
from ember.nn import Module
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear


class DigitsCNN(Module):
    def __init__(self, generator=None, device=None):
        super().__init__()
        self.conv1 = Conv2d(1, 16, 3, padding=1, generator=generator, device=device)
        self.conv2 = Conv2d(16, 32, 3, padding=1, generator=generator, device=device)
        self.fc = Linear(32 * 2 * 2, 10, generator=generator, device=device)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))
