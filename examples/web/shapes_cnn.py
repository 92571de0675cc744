"""The shapes CNN of the web demo's image classifier: one definition for training (CPython) and the page
(ember.micro under MicroPython-wasm).

    (N, 1, 16, 16) -> conv 3x3, 8 channels -> relu -> max pool 2 -> (N, 8, 8, 8)
                   -> conv 3x3, 16 channels -> relu -> max pool 2 -> (N, 16, 4, 4)
                   -> flatten 256 -> linear 8 (logits, one per name in CLASSES)
"""
import ember.nn.functional as F
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn import Module

CLASSES = ("circle", "ring", "square", "diamond", "triangle", "cross", "star", "line")
SIZE = 16


class ShapesCNN(Module):
    def __init__(self, generator=None, device=None):
        super().__init__()
        self.conv1 = Conv2d(1, 8, 3, padding=1, generator=generator, device=device)
        self.conv2 = Conv2d(8, 16, 3, padding=1, generator=generator, device=device)
        self.fc = Linear(16 * 4 * 4, len(CLASSES), generator=generator, device=device)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.flatten(1))
