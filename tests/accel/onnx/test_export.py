"""ember.accel.onnx.export (accel/onnx/writer.py): ember modules traced into ONNX files that onnx.checker accepts and
onnxruntime runs to ember's outputs (within 1e-4), at the example's batch size and another one."""
import numpy as np
import pytest

import ember
import ember.nn as nn
import ember.nn.functional as F
from ember.errors import ArgumentError, ArgumentTypeError

onnx = pytest.importorskip("onnx", reason="ONNX export tests need the onnx package (pip install ember[dev])")
ort = pytest.importorskip("onnxruntime", reason="ONNX export tests need onnxruntime (pip install ember[dev])")

from ember.accel.onnx import export  # noqa: E402


class Ops(nn.Module):
    """Movement, reductions and elementwise ops that no layer covers alone."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(6, 6)

    def forward(self, x):
        y = self.fc(x.reshape(x.shape[0], 2, 3).permute(0, 2, 1).flatten(1))
        z = ember.cat([y[:, :3], y[:, 3:].flip(1) * 2.0, y[:, ::2]], 1)
        m = z.max(1, keepdim=True).values - z.mean(1, keepdim=True) + z.sum(1, keepdim=True) / x.shape[0]
        w = ember.where(z > 0, z.exp(), (z * 0.5).tanh()) + z.abs().sqrt().log1p() + z.cumsum(1)
        v = w.sort(1, descending=True).values + F.log_softmax(w, 1) + w.argmax(1, keepdim=True).float()
        return v + m + z.unsqueeze(2).transpose(1, 2).squeeze(1).softmax(-1) + ember.zeros(x.shape[0], 1, device=x.device)


class Tied(nn.Module):
    """A model returning a tuple, with a buffer and a GELU (tanh form) and a clamp."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.norm = nn.LayerNorm(8)
        self.register_buffer("offset", ember.linspace(-1, 1, 8))

    def forward(self, ids):
        h = self.norm(self.emb(ids)) + self.offset
        return F.gelu(h, approximate="tanh"), h.clamp(-0.5, 0.5).mean(1)


class StatefulLSTM(nn.Module):
    """An LSTM given its initial state: traced step by step instead of as one ONNX LSTM."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 6, bias=False)
        self.h0 = nn.Linear(4, 6)

    def forward(self, x):
        x = x.transpose(0, 1)
        h0 = self.h0(x[0]).unsqueeze(0)
        return self.lstm(x, (h0, h0 * 0.5))


def _cases():
    return {
        "mlp": (lambda: nn.Sequential(nn.Linear(10, 16), nn.ReLU(), nn.Linear(16, 4), nn.Softmax(dim=-1)),
                lambda b: ember.randn(b, 10)),
        "conv2d": (lambda: nn.Sequential(
            nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.BatchNorm2d(8), nn.ReLU6(), nn.MaxPool2d(2, ceil_mode=True),
            nn.Conv2d(8, 8, 3, padding=1, groups=4, dilation=1), nn.Hardswish(), nn.AvgPool2d(2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 3)), lambda b: ember.randn(b, 3, 17, 17)),
        "conv1d": (lambda: nn.Sequential(
            nn.Conv1d(4, 6, 5, padding=2, dilation=1), nn.BatchNorm1d(6), nn.LeakyReLU(0.1), nn.MaxPool1d(2),
            nn.Conv1d(6, 6, 3, stride=2), nn.ELU(), nn.AvgPool1d(2), nn.GELU(), nn.Sigmoid(), nn.Tanh(), nn.Flatten()),
            lambda b: ember.randn(b, 4, 32)),
        "encoder": (lambda: nn.TransformerEncoder(nn.TransformerEncoderLayer(
            16, 4, 32, dropout=0.1, activation="gelu", batch_first=True), 2), lambda b: ember.randn(b, 7, 16)),
        "attention": (lambda: nn.MultiheadAttention(16, 2, batch_first=True),
                      lambda b: (ember.randn(b, 5, 16), ember.randn(b, 6, 16), ember.randn(b, 6, 16))),
        "lstm": (lambda: nn.LSTM(6, 10, num_layers=2, batch_first=True), lambda b: ember.randn(b, 5, 6)),
        "gru": (lambda: nn.GRU(6, 10, batch_first=True), lambda b: ember.randn(b, 5, 6)),
        "gru_bidirectional": (lambda: nn.GRU(6, 8, num_layers=2, bidirectional=True, batch_first=True),
                              lambda b: ember.randn(b, 4, 6)),
        "lstm_bidirectional": (lambda: nn.LSTM(6, 8, bidirectional=True, batch_first=True),
                               lambda b: ember.randn(b, 4, 6)),
        "lstm_state": (StatefulLSTM, lambda b: ember.randn(b, 3, 4)),
        "ops": (Ops, lambda b: ember.randn(b, 6)),
        "embedding": (Tied, lambda b: ember.randint(0, 11, (b, 9))),
    }


CASES = sorted(_cases())


def _flat(out):
    if isinstance(out, (tuple, list)):
        return [t for o in out for t in _flat(o)]
    return [out]


@pytest.mark.parametrize("case", CASES)
def test_export_runs_in_onnxruntime(case, tmp_path):
    ember.seed(1)
    build, make_input = _cases()[case]
    model = build()
    example = make_input(2)
    path = str(tmp_path / (case + ".onnx"))
    proto = export(model, example, path)
    onnx.checker.check_model(path, full_check=True)
    inits = set(t.name for t in proto.graph.initializer)
    assert set(n for n, _ in model.named_parameters()) <= inits
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    model.eval()
    for batch in (2, 5):
        xs = make_input(batch)
        xs = xs if isinstance(xs, tuple) else (xs,)
        got = session.run(None, {i.name: x.numpy() for i, x in zip(session.get_inputs(), xs)})
        want = _flat(model(*xs))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert g.shape == tuple(w.shape)
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-4, atol=1e-4)


def test_layers_become_single_onnx_operators(tmp_path):
    model = nn.Sequential(nn.Conv2d(1, 2, 3), nn.BatchNorm2d(2), nn.ReLU(), nn.Flatten(), nn.Linear(8, 2),
                          nn.LayerNorm(2), nn.Softmax(dim=1))
    proto = export(model, ember.randn(1, 1, 4, 4), str(tmp_path / "m.onnx"))
    ops = [n.op_type for n in proto.graph.node]
    for op in ("Conv", "BatchNormalization", "Relu", "Gemm", "LayerNormalization", "Softmax"):
        assert ops.count(op) == 1, (op, ops)
    assert "Expand" not in ops  # broadcasting expands before Add are left to ONNX broadcasting
    dims = proto.graph.input[0].type.tensor_type.shape.dim
    assert dims[0].dim_param == "batch" and [d.dim_value for d in dims[1:]] == [1, 4, 4]


def test_recurrent_layers_become_onnx_lstm_and_gru(tmp_path):
    model = nn.Sequential(nn.LSTM(3, 4, num_layers=2, batch_first=True))
    ops = [n.op_type for n in export(model, ember.randn(1, 5, 3), str(tmp_path / "l.onnx")).graph.node]
    assert ops.count("LSTM") == 2 and "Sigmoid" not in ops
    ops = [n.op_type for n in export(nn.GRU(3, 4), ember.randn(1, 5, 3), str(tmp_path / "g.onnx"),
                                     batch_dim=1).graph.node]
    assert ops.count("GRU") == 1 and "Sigmoid" not in ops


def test_opset_20_writes_gelu(tmp_path):
    proto = export(nn.Sequential(nn.Linear(3, 3), nn.GELU()), ember.randn(1, 3), str(tmp_path / "g.onnx"), opset=20)
    assert "Gelu" in [n.op_type for n in proto.graph.node] and proto.opset_import[0].version == 20


def test_static_batch_and_module_untouched(tmp_path):
    model = nn.Sequential(nn.Linear(3, 2), nn.Dropout(0.5))
    before = model.state_dict()["0.weight"].tolist()
    proto = export(model, ember.randn(4, 3), str(tmp_path / "s.onnx"), dynamic_batch=False)
    assert proto.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 4
    assert model.training and model.state_dict()["0.weight"].tolist() == before
    assert model.state_dict()["0.weight"].device == ember.Cpu()


class Atan2(nn.Module):
    def forward(self, x):
        return ember.atan2(x, x + 1)


class Noise(nn.Module):
    def forward(self, x):
        return x + ember.rand(*x.shape, device=x.device)


class Reads(nn.Module):
    def forward(self, x):
        return x * x.sum().item()


class Indexed(nn.Module):
    def forward(self, x):
        x = x * 1
        x[:, 0] = 0.0
        return x


def test_unsupported_ops_are_named(tmp_path):
    path = str(tmp_path / "bad.onnx")
    x = ember.randn(2, 3)
    with pytest.raises(ArgumentError, match="the op 'atan2' \\(binary, float32\\) has no ONNX export"):
        export(Atan2(), x, path)
    with pytest.raises(ArgumentError, match="forward draws random numbers"):
        export(Noise(), x, path)
    with pytest.raises(ArgumentError, match="reads tensor values on the host"):
        export(Reads(), x, path)
    with pytest.raises(ArgumentError, match="'slice_assign'"):
        export(Indexed(), x, path)


def test_bad_arguments(tmp_path):
    path = str(tmp_path / "bad.onnx")
    model = nn.Linear(3, 2)
    with pytest.raises(ArgumentError, match="expected opset an int from 17 to .*, found 7"):
        export(model, ember.randn(2, 3), path, opset=7)
    with pytest.raises(ArgumentTypeError, match="expected an ember.nn.Module, found function"):
        export(lambda x: x, ember.randn(2, 3), path)
    with pytest.raises(ArgumentTypeError, match="expected example_input to be a Tensor .* found list"):
        export(model, [[1.0, 2.0, 3.0]], path)
    with pytest.raises(ArgumentError, match="expected batch_dim in 0..1 for an input of shape \\(2, 3\\), found 2"):
        export(model, ember.randn(2, 3), path, batch_dim=2)


class MadeInForward(nn.Module):
    def forward(self, x):
        return x + ember.ones(*x.shape) + ember.tensor([1.0, 2.0, 3.0])


class OffDevice(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = [ember.ones(3)]  # not a buffer: Module.to does not move it

    def forward(self, x):
        return x + self.hidden[0]


def test_tensors_made_in_forward_are_constants(tmp_path):
    path = str(tmp_path / "c.onnx")
    export(MadeInForward(), ember.randn(2, 3), path)
    x = ember.randn(4, 3)
    got = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"input": x.numpy()})[0]
    np.testing.assert_allclose(got, MadeInForward()(x).numpy(), rtol=1e-6)


def test_tensor_off_the_device_is_explained(tmp_path):
    with pytest.raises(ArgumentError, match="not on the module's device .* device=x.device"):
        export(OffDevice(), ember.randn(2, 3), str(tmp_path / "bad.onnx"))
