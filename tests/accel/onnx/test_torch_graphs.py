"""Graphs as torch's exporter writes them (shared initializers behind Identity, folded BatchNorm,
dynamic axes, LayerNormalization, LSTM): load() and the generated code against onnxruntime."""
import io
import warnings

import numpy as np
import pytest

import ember
from ember.accel import NumPy
from ember.accel.onnx import load
from ember.accel.onnx.codegen import generate

import torch  # noqa: E402  (a dev dependency: missing it fails, never skips)
tnn = torch.nn


class _Block(tnn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.b1 = tnn.Conv2d(c, c, 3, padding=1, bias=False), tnn.BatchNorm2d(c)
        self.c2, self.b2 = tnn.Conv2d(c, c, 3, padding=1, bias=False), tnn.BatchNorm2d(c)

    def forward(self, x):
        return torch.relu(self.b2(self.c2(torch.relu(self.b1(self.c1(x))))) + x)


class _ResNetish(tnn.Module):
    def __init__(self):
        super().__init__()
        self.stem, self.pool = tnn.Conv2d(3, 8, 7, 2, 3), tnn.MaxPool2d(3, 2, 1)
        self.blocks, self.fc = tnn.Sequential(_Block(8), _Block(8)), tnn.Linear(8, 5)

    def forward(self, x):
        x = self.blocks(self.pool(torch.relu(self.stem(x))))
        return self.fc(torch.flatten(tnn.functional.adaptive_avg_pool2d(x, 1), 1))


class _LSTM(tnn.Module):
    def __init__(self):
        super().__init__()
        self.l = tnn.LSTM(6, 8, batch_first=True)

    def forward(self, x):
        return self.l(x)[0]


def _export(model, x, dynamic=False):
    torch.manual_seed(0)
    model.eval()
    buf = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, (x,), buf, input_names=["x"], dynamo=False,
                          dynamic_axes={"x": {0: "N"}} if dynamic else None)
    return buf.getvalue()


def _ort(data, x):
    import onnxruntime
    s = onnxruntime.InferenceSession(data, providers=["CPUExecutionProvider"])
    return s.run(None, {"x": x})[0]


def _models():
    torch.manual_seed(0)
    enc = tnn.TransformerEncoder(tnn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True), 1)
    return [("resnet_ish", _ResNetish(), (2, 3, 32, 32), True), ("encoder", enc, (2, 5, 16), False),
            ("lstm", _LSTM(), (2, 4, 6), False)]


@pytest.mark.parametrize("name,model,shape,dynamic", _models(), ids=lambda v: v if isinstance(v, str) else "")
def test_torch_export_loads_and_matches_onnxruntime(name, model, shape, dynamic):
    x = torch.randn(*shape)
    data = _export(model, x, dynamic)
    m = load(data, device=NumPy())
    got = m(ember.from_numpy(x.numpy(), device=NumPy())).numpy()
    np.testing.assert_allclose(got, _ort(data, x.numpy()), rtol=1e-4, atol=1e-5)
    if dynamic:
        x3 = np.random.default_rng(0).standard_normal((3,) + shape[1:]).astype(np.float32)
        np.testing.assert_allclose(m(ember.from_numpy(x3, device=NumPy())).numpy(), _ort(data, x3), rtol=1e-4, atol=1e-5)
    source, module = generate(data)
    if name == "encoder":  # the feed-forward's MatMul + Add pairs became named Linear layers
        assert "self.layers_0_linear1 = nn.Linear(16, 32, bias=True)" in source
    if name == "lstm":
        assert "self.l = nn.LSTM(6, 8, batch_first=False, bidirectional=False)" in source
    got = module(ember.from_numpy(x.numpy(), device=ember.Cpu())).numpy()
    np.testing.assert_allclose(got, _ort(data, x.numpy()), rtol=1e-4, atol=1e-5)
