"""LeNet-5 (61,706 parameters) as a Sequential, PyTorch's layout and names (0.weight, 3.weight,
7.weight, ...): the model of tests/golden/lenet.safetensors, which bench/boards.py deploys.

    (N, 1, 28, 28) -> conv 5x5, 6 channels, pad 2 -> relu -> max pool 2 -> (N, 6, 14, 14)
                   -> conv 5x5, 16 channels -> relu -> max pool 2 -> (N, 16, 5, 5)
                   -> flatten 400 -> linear 120 -> relu -> linear 84 -> relu -> linear 10
"""
from ember.nn import Sequential
from ember.nn.activation import ReLU
from ember.nn.conv import Conv2d
from ember.nn.flatten import Flatten
from ember.nn.linear import Linear
from ember.nn.pool import MaxPool2d


class LeNet5(Sequential):
    def __init__(self):
        super().__init__(
            Conv2d(1, 6, 5, padding=2), ReLU(), MaxPool2d(2),
            Conv2d(6, 16, 5), ReLU(), MaxPool2d(2),
            Flatten(),
            Linear(400, 120), ReLU(),
            Linear(120, 84), ReLU(),
            Linear(84, 10),
        )
