"""The models the training benchmarks step: an MLP 784-128-10, LeNet-5 (ReLU, max pool) and the CNN
of PyTorch's MNIST example.

Both take an ``ember.Generator`` so every benchmark starts from the same weights.
"""
import ember.nn.functional as F
from ember.nn.conv import Conv2d
from ember.nn.dropout import Dropout
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


class MnistCNN(Module):
    """The CNN of PyTorch's MNIST example (``pytorch/examples`` ``mnist/main.py``): conv 32, conv 64,
    max pool, dropout 0.25, fc 128, dropout 0.5, fc 10 (its log-softmax is in the cross entropy)."""

    def __init__(self, gen):
        super().__init__()
        self.conv1 = Conv2d(1, 32, 3, generator=gen)
        self.conv2 = Conv2d(32, 64, 3, generator=gen)
        self.drop1 = Dropout(0.25)
        self.drop2 = Dropout(0.5)
        self.fc1 = Linear(9216, 128, generator=gen)
        self.fc2 = Linear(128, 10, generator=gen)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv2(F.relu(self.conv1(x)))), 2)
        x = F.relu(self.fc1(self.drop1(x).flatten(1)))
        return self.fc2(self.drop2(x))
