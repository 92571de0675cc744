"""The models the training benchmarks step: an MLP 784-128-10 and LeNet-5 (ReLU, max pool).

Both take an ``ember.Generator`` so every benchmark starts from the same weights.
"""
import ember.nn.functional as F
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn.module import Module


class MLP(Module):
    def __init__(self, gen):
        super().__init__()
        self.fc1 = Linear(784, 128, generator=gen)
        self.fc2 = Linear(128, 10, generator=gen)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x)))


class LeNet(Module):
    def __init__(self, gen):
        super().__init__()
        self.conv1 = Conv2d(1, 6, 5, padding=2, generator=gen)
        self.conv2 = Conv2d(6, 16, 5, generator=gen)
        self.fc1 = Linear(400, 120, generator=gen)
        self.fc2 = Linear(120, 84, generator=gen)
        self.fc3 = Linear(84, 10, generator=gen)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x.flatten(1))))))
