"""Quantized records (ember.quant.save) read by the safetensors library and PyTorch, and the int8
arithmetic re-done in PyTorch from the record alone: what a separate runtime would do.

The PyTorch side follows docs/architecture.md ("Quantized records") and nothing of ember: float32
``floor(x / s + 0.5)`` clamped to ±127, exact integer sums (float64 conv of integers), then
``float32(acc) * float32(input_scale * weight_scale) + bias`` and the output grid. The two must agree
bit for bit.
"""
import json
import shutil
import tempfile

import numpy as np
import torch
import torch.nn.functional as TF
from safetensors import safe_open
from safetensors.torch import load_file

import ember
import ember.quant as Q
from ember.nn import Module
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear


class Net(Module):
    def __init__(self):
        super().__init__()
        self.conv = Conv2d(2, 4, 3, stride=1, padding=1)
        self.fc = Linear(4 * 5 * 5, 3)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


def saved(tmp):
    ember.seed(21)
    model = Net()
    x = ember.randn(6, 2, 5, 5)
    qmodel = Q.quantize(model, calibration=[x[:3], x[3:]])
    path = tmp + "/net-int8.safetensors"
    Q.save(qmodel, path)
    return qmodel, x, path


def test_safetensors_reads_the_layout():
    tmp = tempfile.mkdtemp()
    try:
        qmodel, _, path = saved(tmp)
        with safe_open(path, framework="np") as f:
            meta = f.metadata()
            arrays = {k: f.get_tensor(k) for k in f.keys()}
        assert meta["ember_precision"] == "int8" and meta["format"] == "pt"
        assert json.loads(meta["ember_quantization"])["layers"] == ["conv", "fc"]
        assert arrays["conv.weight"].dtype == np.int8 and arrays["conv.weight"].shape == (4, 2, 3, 3)
        assert arrays["fc.weight_scale"].dtype == np.float32 and arrays["fc.weight_scale"].shape == (3,)
        assert arrays["conv.input_scale"].shape == () and "fc.output_scale" not in arrays
        for name, t in qmodel.named_tensors():
            assert arrays[name].tobytes() == t.to_bytes(), name
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def fake_quant(t, s):
    q = torch.clamp(torch.floor(t / s + 0.5), -127, 127)
    return torch.nan_to_num(q, nan=0.0)


def torch_forward(r, x):
    """The quantized Net from its record ``r`` (PyTorch tensors), by the contract."""
    def layer(p, t, product):
        s_in = r[p + ".input_scale"]
        acc = product(fake_quant(t, s_in).double(), r[p + ".weight"].double())
        scale = (r[p + ".weight_scale"] * s_in)
        shape = (1, -1) + (1,) * (acc.dim() - 2)
        y = acc.float() * scale.reshape(shape) + r[p + ".bias"].reshape(shape)
        if p + ".output_scale" in r:
            y = fake_quant(y, r[p + ".output_scale"]) * r[p + ".output_scale"]
        return y

    h = layer("conv", x, lambda a, w: TF.conv2d(a, w, padding=1))
    return layer("fc", torch.relu(h).flatten(1), lambda a, w: a @ w.T)


def test_pytorch_computes_the_same_numbers():
    tmp = tempfile.mkdtemp()
    try:
        qmodel, x, path = saved(tmp)
        r = load_file(path)
        assert r["fc.weight"].dtype == torch.int8
        ours = np.frombuffer(qmodel(x).to_bytes(), dtype=np.float32)
        x_torch = torch.from_numpy(np.frombuffer(x.to_bytes(), dtype=np.float32).reshape(x.shape).copy())
        theirs = torch_forward(r, x_torch)
        assert np.array_equal(ours, theirs.numpy().ravel())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
