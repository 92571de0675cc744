"""Checkpoints written by ``torch.save`` (torch 2.13) load into ember's own models through
``Module.load`` and ``ember.accel.pytorch``, and the outputs equal PyTorch's from the same file.

The modules suite of tests/tools/test_torch_interop.py (MLP, LeNet, ResNet block, transformer
layer, LSTM) in both torch.save formats, a ResNet-18 written with torch.nn and the GPT of
examples/pytorch_style with its tied embedding."""
import importlib.util
import os

import pytest

import ember
from ember.accel import pytorch
from ember.nn import Module, Sequential
from ember.nn.activation import ReLU
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.nn.norm import BatchNorm2d
from ember.nn.pool import AdaptiveAvgPool2d, MaxPool2d

import torch  # noqa: E402  the dev extra has it: the fixtures are made by torch.save
HERE = os.path.dirname(os.path.abspath(__file__))


def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


suite = _module("pt_suite", os.path.join(HERE, "..", "..", "tools", "test_torch_interop.py"))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
@pytest.mark.parametrize("case", suite.CASES, ids=[c.name for c in suite.CASES])
def test_modules_suite_loads_torch_save(case, legacy, tmp_path):
    torch.manual_seed(7)
    theirs = case.torch_model()
    suite.trained_statistics_for_torch(theirs)
    path = str(tmp_path / (case.name + ".pt"))
    torch.save(theirs.state_dict(), path, _use_new_zipfile_serialization=not legacy)
    mine = case.ember_model()
    assert mine.load(path).ok  # strict, by content
    state = torch.load(path, weights_only=True)
    for name, t in mine.named_tensors():
        assert t.tolist() == state[name].tolist(), name
    suite.compare(case, mine, theirs, "torch.save -> ember")


# -- a ResNet-18 written with torch.nn, and ember's twin under the same names ----------------------------

class TorchBlock(torch.nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = self.bn2(self.conv2(self.bn1(self.conv1(x)).relu()))
        return (out + (x if self.downsample is None else self.downsample(x))).relu()


class TorchResNet18(torch.nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        nn = torch.nn
        self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        widths = [(64, 64, 1), (64, 128, 2), (128, 256, 2), (256, 512, 2)]
        for i, (cin, cout, s) in enumerate(widths):
            setattr(self, "layer%d" % (i + 1), nn.Sequential(TorchBlock(cin, cout, s), TorchBlock(cout, cout, 1)))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.bn1(self.conv1(x)).relu())
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


class Block(Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = BatchNorm2d(cout)
        self.conv2 = Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = BatchNorm2d(cout)
        self.relu = ReLU()
        self.downsample = None
        if stride != 1 or cin != cout:
            self.downsample = Sequential(Conv2d(cin, cout, 1, stride=stride, bias=False), BatchNorm2d(cout))

    def forward(self, x):
        out = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(out + (x if self.downsample is None else self.downsample(x)))


class ResNet18(Module):
    def __init__(self, classes=10):
        super().__init__()
        self.conv1 = Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = BatchNorm2d(64)
        self.relu = ReLU()
        self.maxpool = MaxPool2d(3, stride=2, padding=1)
        self.layer1 = Sequential(Block(64, 64, 1), Block(64, 64, 1))
        self.layer2 = Sequential(Block(64, 128, 2), Block(128, 128, 1))
        self.layer3 = Sequential(Block(128, 256, 2), Block(256, 256, 1))
        self.layer4 = Sequential(Block(256, 512, 2), Block(512, 512, 1))
        self.avgpool = AdaptiveAvgPool2d(1)
        self.fc = Linear(512, classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
        return self.fc(self.avgpool(x).flatten(1))


def test_resnet18_checkpoint_in_a_training_wrapper(tmp_path):
    torch.manual_seed(3)
    theirs = TorchResNet18()
    theirs.train()
    with torch.no_grad():  # running statistics away from 0 and 1
        for _ in range(2):
            theirs(torch.randn(2, 3, 32, 32))
    theirs.eval()
    wrapped = torch.nn.DataParallel(theirs)  # names gain "module."
    path = str(tmp_path / "resnet18.pth")
    torch.save({"epoch": 12, "model": wrapped.state_dict(), "best_acc": 0.91}, path)
    mine = ResNet18()
    with pytorch.open(path) as ck:
        assert ck.extras == {} and ck.obj["epoch"] == 12  # the wrapper was followed down to the tensors
        assert ck.format == "zip" and len(ck.entries) == len(theirs.state_dict())
        assert mine.load(ck).ok
        assert ck.read("fc.bias").tolist() == theirs.fc.bias.tolist()  # the caller's reader stays open
    mine.eval()
    x = ember.randn(1, 3, 32, 32, generator=ember.Generator(11))
    with torch.no_grad():
        want = theirs(torch.tensor(x.tolist()))
    assert suite.max_difference(mine(x), want) <= 1e-4


def test_gpt_with_tied_weights(tmp_path):
    style = os.path.join(HERE, "..", "..", "..", "examples", "pytorch_style", "gpt.py")
    os.environ["EMBER_EXAMPLE_FRAMEWORK"] = "torch"
    try:
        tg = _module("gpt_torch_pt", style)
        os.environ["EMBER_EXAMPLE_FRAMEWORK"] = "ember"
        eg = _module("gpt_ember_pt", style)
    finally:
        del os.environ["EMBER_EXAMPLE_FRAMEWORK"]
    args = ["--batch-size", "2", "--block-size", "16", "--n-embd", "16", "--log-interval", "0"]
    torch.manual_seed(5)
    t_model, _ = tg.build(tg.parse(args))
    t_model.eval()
    path = str(tmp_path / "gpt.pt")
    sd = t_model.state_dict()
    assert sd["transformer.wte.weight"].data_ptr() == sd["lm_head.weight"].data_ptr()  # one storage, two names
    torch.save(sd, path)
    e_model, _ = eg.build(eg.parse(args))
    e_model.eval()
    assert e_model.load(path).ok
    assert e_model.transformer.wte.weight is e_model.lm_head.weight
    idx = [[1, 5, 9, 2, 7, 3], [4, 4, 0, 8, 6, 1]]
    with torch.no_grad():
        want = t_model(torch.tensor(idx))
    got = e_model(ember.tensor(idx, device=e_model.lm_head.weight.device))
    want = want[0] if isinstance(want, tuple) else want
    got = got[0] if isinstance(got, tuple) else got
    assert suite.max_difference(got, want) <= 1e-4
