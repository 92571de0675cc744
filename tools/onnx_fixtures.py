"""The real-model ONNX fixtures of issue 16: five models with random weights, written once with
torch.nn and built from the same code with ember.nn (``build(name, nn, lib)``), exported by
``torch.onnx.export`` into a cache folder with an input and onnxruntime's output.

    python tools/onnx_fixtures.py [OUTDIR]     # default tests/.cache/onnx (not committed)

Each model NAME gives NAME.onnx, NAME.input.npy, NAME.expected.npy (onnxruntime's output) and
NAME.npz (the torch state_dict, to load into the ember twin). ``ensure(outdir)`` regenerates only
what is missing, so tests call it at first use. Needs torch==2.13.0, onnx and onnxruntime.
"""
import os
import sys

CACHE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", ".cache", "onnx")
MODELS = ("lenet5", "resnet18", "mobilenetv2", "encoder", "lstm")
SEED = 16


def _resnet18(nn, lib):
    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU()
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                               if stride != 1 or cin != cout else None)

        def forward(self, x):
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            return self.relu(out + (x if self.downsample is None else self.downsample(x)))

    class ResNet18(nn.Module):
        def __init__(self, classes=1000):
            super().__init__()
            self.conv1 = nn.Conv2d(3, 64, 7, 2, 3, bias=False)
            self.bn1 = nn.BatchNorm2d(64)
            self.relu = nn.ReLU()
            self.maxpool = nn.MaxPool2d(3, 2, 1)
            widths = ((64, 1), (128, 2), (256, 2), (512, 2))
            cin = 64
            for i, (w, stride) in enumerate(widths):
                setattr(self, "layer%d" % (i + 1), nn.Sequential(BasicBlock(cin, w, stride), BasicBlock(w, w, 1)))
                cin = w
            self.avgpool = nn.AdaptiveAvgPool2d(1)
            self.flatten = nn.Flatten()
            self.fc = nn.Linear(512, classes)

        def forward(self, x):
            x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
            x = self.layer4(self.layer3(self.layer2(self.layer1(x))))
            return self.fc(self.flatten(self.avgpool(x)))

    return ResNet18(), (1, 3, 224, 224)


def _mobilenetv2(nn, lib):
    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, expand):
            super().__init__()
            hidden = cin * expand
            self.use_res = stride == 1 and cin == cout
            self.conv = nn.Sequential(
                nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6(),
                nn.Conv2d(hidden, cout, 1, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self, classes=10):
            super().__init__()
            layers = [nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU6()]
            cin = 16
            for cout, stride, expand in ((16, 1, 1), (24, 2, 6), (24, 1, 6), (32, 2, 6), (32, 1, 6), (64, 2, 6)):
                layers.append(InvertedResidual(cin, cout, stride, expand))
                cin = cout
            layers += [nn.Conv2d(cin, 128, 1, bias=False), nn.BatchNorm2d(128), nn.ReLU6()]
            self.features = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.flatten = nn.Flatten()
            self.classifier = nn.Linear(128, classes)

        def forward(self, x):
            return self.classifier(self.flatten(self.pool(self.features(x))))

    return MobileNetV2(), (1, 3, 64, 64)


def _encoder(nn, lib):
    class Encoder(nn.Module):
        """A small BERT: token and position embeddings, LayerNorm, 2 post-norm GELU layers, a pooler."""

        def __init__(self, vocab=1000, d=64, heads=4, ff=256, layers=2, seq=32):
            super().__init__()
            self.tokens = nn.Embedding(vocab, d)
            self.positions = nn.Embedding(seq, d)
            self.norm = nn.LayerNorm(d)
            self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(
                d, heads, ff, dropout=0.0, activation="gelu", batch_first=True), layers)
            self.pooler = nn.Linear(d, d)
            self.tanh = nn.Tanh()

        def forward(self, x):
            h = self.norm(self.tokens(x) + self.positions.weight[: x.shape[1]])
            h = self.encoder(h)
            return self.tanh(self.pooler(h[:, 0]))

    return Encoder(), (1, 32)


def _lstm(nn, lib):
    class Tagger(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(16, 32, num_layers=2, batch_first=True)
            self.head = nn.Linear(32, 5)

        def forward(self, x):
            return self.head(self.lstm(x)[0])

    return Tagger(), (1, 12, 16)


def _lenet5(nn, lib):
    class LeNet5(nn.Module):
        def __init__(self):
            super().__init__()
            self.features = nn.Sequential(
                nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
                nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
            self.classifier = nn.Sequential(nn.Linear(400, 120), nn.ReLU(), nn.Linear(120, 84), nn.ReLU(),
                                            nn.Linear(84, 10))

        def forward(self, x):
            return self.classifier(self.features(x))

    return LeNet5(), (1, 1, 28, 28)


_BUILDERS = {"resnet18": _resnet18, "mobilenetv2": _mobilenetv2, "encoder": _encoder, "lstm": _lstm,
             "lenet5": _lenet5}


def build(name, nn, lib):
    """(module, input shape) of model ``name`` built with ``nn`` (torch.nn or ember.nn); ``lib`` is
    torch or ember."""
    return _BUILDERS[name](nn, lib)


def example_input(name, shape, seed=SEED):
    """The model's input as a numpy array: token ids for the encoder, normal floats otherwise."""
    import numpy as np
    rng = np.random.default_rng(seed)
    if name == "encoder":
        return rng.integers(0, 1000, size=shape).astype(np.int64)
    return rng.standard_normal(shape).astype(np.float32)


def _randomize(model, torch):
    """Random weights everywhere, and batch norm statistics away from 0 and 1 so they matter."""
    with torch.no_grad():
        for n, t in model.state_dict().items():
            if n.endswith("running_var"):
                t.copy_(torch.rand_like(t) + 0.5)
            elif n.endswith("running_mean") or n.endswith("bn2.weight") or n.endswith("bn2.bias"):
                t.copy_(torch.randn_like(t) * 0.1)


def export_one(name, outdir):
    import numpy as np
    import onnxruntime as ort
    import torch
    torch.manual_seed(SEED)
    model, shape = build(name, torch.nn, torch)
    _randomize(model, torch)
    model.eval()
    x = example_input(name, shape)
    path = os.path.join(outdir, name + ".onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), path, input_names=["input"], output_names=["output"],
                      dynamic_axes={"input": {0: "batch"}, "output": {0: "batch"}}, opset_version=17, dynamo=False)
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    expected = session.run(None, {"input": x})[0]
    np.save(os.path.join(outdir, name + ".input.npy"), x)
    np.save(os.path.join(outdir, name + ".expected.npy"), expected)
    np.savez(os.path.join(outdir, name + ".npz"), **{k: v.numpy() for k, v in model.state_dict().items()})
    return path


def ensure(outdir=CACHE, names=MODELS):
    """The fixture folder with every model of ``names`` present (made where missing)."""
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        if not all(os.path.exists(os.path.join(outdir, name + ext))
                   for ext in (".onnx", ".input.npy", ".expected.npy", ".npz")):
            export_one(name, outdir)
    return outdir


if __name__ == "__main__":
    out = ensure(sys.argv[1] if len(sys.argv) > 1 else CACHE)
    print("fixtures in", out)
