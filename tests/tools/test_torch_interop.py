"""Weights move between ember and PyTorch with no renaming, through safetensors files.

For an MLP, a LeNet CNN, a ResNet basic block with BatchNorm (eval mode), a transformer encoder
layer and an LSTM: (a) a file saved by ``Module.save`` opens with the ``safetensors`` library and
loads into the equivalent torch.nn model with ``load_state_dict(strict=True)``; (b) a torch
state_dict saved with ``safetensors.torch.save_file`` loads into the ember model with
``Module.load`` (strict). In both directions the outputs on standard-normal inputs agree within
1e-4 (the largest difference is printed; run pytest with -s to see it).
"""
import os
import tempfile

import torch
from safetensors import safe_open
from safetensors.torch import load_file, save_file

import ember
from ember.nn import Module, Sequential
from ember.nn.activation import ReLU
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn.norm import BatchNorm2d
from ember.nn.pool import MaxPool2d
from ember.nn.recurrent import LSTM
from ember.nn.transformer import TransformerEncoderLayer

PARAMETERS = ("case",)
TOLERANCE = 1e-4


# -- the ember models -------------------------------------------------------------------------------

def ember_mlp():
    return Sequential(Linear(64, 32), ReLU(), Linear(32, 16), ReLU(), Linear(16, 10))


class LeNet(Module):
    """LeNet-5 for 1x28x28 images."""

    def __init__(self):
        super().__init__()
        self.conv1 = Conv2d(1, 6, 5, padding=2)
        self.conv2 = Conv2d(6, 16, 5)
        self.pool = MaxPool2d(2)
        self.fc1 = Linear(16 * 5 * 5, 120)
        self.fc2 = Linear(120, 84)
        self.fc3 = Linear(84, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        x = x.flatten(1)
        return self.fc3(self.fc2(self.fc1(x).relu()).relu())


class BasicBlock(Module):
    """torchvision's ResNet BasicBlock, with a strided 1x1 downsample."""

    def __init__(self, inplanes, planes, stride):
        super().__init__()
        self.conv1 = Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = BatchNorm2d(planes)
        self.relu = ReLU()
        self.conv2 = Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = BatchNorm2d(planes)
        self.downsample = Sequential(Conv2d(inplanes, planes, 1, stride=stride, bias=False), BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


# -- their torch twins ------------------------------------------------------------------------------

def torch_mlp():
    nn = torch.nn
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 10))


class TorchLeNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.pool = nn.MaxPool2d(2)
        self.fc1 = nn.Linear(16 * 5 * 5, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(self.conv1(x).relu())
        x = self.pool(self.conv2(x).relu())
        x = x.flatten(1)
        return self.fc3(self.fc2(self.fc1(x).relu()).relu())


class TorchBasicBlock(torch.nn.Module):
    def __init__(self, inplanes, planes, stride):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(inplanes, planes, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU()
        self.conv2 = nn.Conv2d(planes, planes, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride=stride, bias=False),
                                        nn.BatchNorm2d(planes))

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + self.downsample(x))


class Case:
    def __init__(self, name, ember_model, torch_model, input_shape):
        self.name = name
        self.ember_model = ember_model
        self.torch_model = torch_model
        self.input_shape = input_shape


CASES = [
    Case("mlp", ember_mlp, torch_mlp, (4, 64)),
    Case("lenet", LeNet, TorchLeNet, (2, 1, 28, 28)),
    Case("resnet-basic-block", lambda: BasicBlock(4, 8, 2), lambda: TorchBasicBlock(4, 8, 2), (2, 4, 8, 8)),
    Case("transformer-encoder-layer",
         lambda: TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True),
         lambda: torch.nn.TransformerEncoderLayer(16, 4, 32, dropout=0.1, batch_first=True), (2, 5, 16)),
    Case("lstm", lambda: LSTM(8, 12, num_layers=2, batch_first=True),
         lambda: torch.nn.LSTM(8, 12, num_layers=2, batch_first=True), (3, 6, 8)),
]


# -- helpers ---------------------------------------------------------------------------------------

def flat_outputs(value):
    """Every tensor of a model's output ((out, (h, c)) for an LSTM), in order."""
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(flat_outputs(v))
        return out
    return [value]


def max_difference(ember_out, torch_out):
    mine, theirs = flat_outputs(ember_out), flat_outputs(torch_out)
    assert len(mine) == len(theirs)
    worst = 0.0
    for a, b in zip(mine, theirs):
        assert tuple(a.shape) == tuple(b.shape)
        diff = (torch.tensor(a.tolist(), dtype=torch.float64) - b.detach().double()).abs().max().item()
        worst = max(worst, diff)
    return worst


def compare(case, mine, theirs, direction):
    mine.eval()
    theirs.eval()
    x = ember.randn(*case.input_shape, generator=ember.Generator(2024))
    with torch.no_grad():
        want = theirs(torch.tensor(x.tolist()))
    diff = max_difference(mine(x), want)
    print("%s %s: max |ember - torch| = %.3g" % (case.name, direction, diff))
    assert diff <= TOLERANCE, "%s %s: outputs differ by %g" % (case.name, direction, diff)


def trained_statistics_for_ember(model):
    """Running statistics away from their initial 0 and 1, so eval mode uses them for real."""
    g = ember.Generator(5)
    for name, m in model.named_modules():
        if isinstance(m, BatchNorm2d):
            n = m.num_features
            m.running_mean = ember.randn(n, generator=g) * 0.5
            m.running_var = ember.rand(n, generator=g) + 0.5
            m.num_batches_tracked = m.num_batches_tracked + 3
            m.weight = ember.randn(n, generator=g)
            m.bias = ember.randn(n, generator=g)


def trained_statistics_for_torch(model):
    """A few training-mode batches through torch, which moves its running statistics."""
    if not any(isinstance(m, torch.nn.BatchNorm2d) for m in model.modules()):
        return
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(4, 4, 8, 8) * 2 + 1)
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.weight.normal_()
                m.bias.normal_()


# -- the tests --------------------------------------------------------------------------------------

def test_ember_file_loads_into_torch(case):
    ember.seed(1)
    mine = case.ember_model()
    trained_statistics_for_ember(mine)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, case.name + ".safetensors")
    mine.save(path)

    with safe_open(path, "pt") as f:  # the safetensors library reads ember's file as it is
        assert list(f.keys()) == sorted(n for n, _ in mine.named_tensors())
        assert f.metadata()["format"] == "pt" and f.metadata()["ember_module"] == type(mine).__name__
        for name, t in mine.named_tensors():
            assert list(f.get_slice(name).get_shape()) == list(t.shape)
    state = load_file(path)

    theirs = case.torch_model()
    theirs.load_state_dict(state, strict=True)  # no renaming, no missing or unexpected key
    for name, t in mine.named_tensors():
        assert state[name].dtype == (torch.int64 if t.dtype is ember.int64 else torch.float32)
        assert state[name].tolist() == t.tolist(), name
    compare(case, mine, theirs, "ember -> torch")


def test_torch_file_loads_into_ember(case):
    torch.manual_seed(7)
    theirs = case.torch_model()
    trained_statistics_for_torch(theirs)
    folder = tempfile.mkdtemp()
    path = os.path.join(folder, case.name + ".safetensors")
    save_file({k: v.contiguous() for k, v in theirs.state_dict().items()}, path)

    mine = case.ember_model()
    report = mine.load(path)  # strict: every name must match
    assert report.ok
    state = theirs.state_dict()
    for name, t in mine.named_tensors():
        assert t.tolist() == state[name].tolist(), name
    compare(case, mine, theirs, "torch -> ember")
