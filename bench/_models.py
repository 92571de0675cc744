"""The models the training benchmarks step: an MLP 784-128-10, LeNet-5 (ReLU, max pool) and the CNN
of PyTorch's MNIST example; and PyTorch's own step taken as one CUDA graph, the reference mark.

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


def torch_graph_step(torch, tm, topt, tx, ty):
    """PyTorch's training step of ``tm`` (cross entropy, ``topt``) captured whole into a
    torch.cuda.CUDAGraph (warm-up on a side stream): a function replaying it and returning the loss
    tensor; ``.graph`` is the graph."""
    sx, sy = tx.clone(), ty.clone()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            topt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(tm(sx), sy).backward()
            topt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    topt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        loss = torch.nn.functional.cross_entropy(tm(sx), sy)
        loss.backward()
        topt.step()

    def step(static=(sx, sy)):  # the graph reads sx and sy: they live as long as the step
        graph.replay()
        return loss
    step.graph = graph
    return step
