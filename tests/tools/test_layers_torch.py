"""Every ember layer against its torch.nn twin: the same parameter names and shapes (ember's tensors
load into the torch layer with load_state_dict(strict=True)), then the same outputs."""
import torch

import ember
import ember.nn.layers as nn
from harness.check import assert_close

PARAMETERS = ("case",)


def to_torch(t):
    return torch.tensor(t.tolist(), dtype=torch.int64 if t.dtype.kind == "i" else torch.float32)


def outputs(value):
    """Flat list of tensors in a (possibly nested) result."""
    if isinstance(value, (tuple, list)):
        out = []
        for v in value:
            out.extend(outputs(v))
        return out
    return [] if value is None else [value]


class Case:
    def __init__(self, name, ember_layer, torch_layer, inputs, train=False, call=None, atol=1e-5, kwargs=None):
        self.name = name
        self.ember_layer = ember_layer
        self.torch_layer = torch_layer
        self.inputs = inputs  # shapes of standard-normal inputs, or ("int", shape, high)
        self.train = train
        self.kwargs = kwargs or {}
        self.atol = atol


def _inputs(specs, g):
    out = []
    for s in specs:
        if s[0] == "int":
            out.append(ember.randint(0, s[2], s[1], generator=g))
        elif s[0] == "mask":
            out.append(s[1])
        else:
            out.append(ember.randn(*s, generator=g))
    return out


CASES = [
    Case("linear", lambda: nn.Linear(5, 3), lambda: torch.nn.Linear(5, 3), [(4, 5)]),
    Case("linear-nobias-3d", lambda: nn.Linear(5, 3, bias=False), lambda: torch.nn.Linear(5, 3, bias=False),
         [(2, 4, 5)]),
    Case("bilinear", lambda: nn.Bilinear(3, 4, 2), lambda: torch.nn.Bilinear(3, 4, 2), [(5, 3), (5, 4)]),
    Case("conv1d", lambda: nn.Conv1d(2, 4, 3, stride=2, padding=1),
         lambda: torch.nn.Conv1d(2, 4, 3, stride=2, padding=1), [(2, 2, 9)]),
    Case("conv1d-same-dilated", lambda: nn.Conv1d(2, 2, 3, padding="same", dilation=2),
         lambda: torch.nn.Conv1d(2, 2, 3, padding="same", dilation=2), [(1, 2, 7)]),
    Case("conv2d", lambda: nn.Conv2d(3, 4, 3), lambda: torch.nn.Conv2d(3, 4, 3), [(2, 3, 6, 5)]),
    Case("conv2d-groups-stride-pad", lambda: nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2),
         lambda: torch.nn.Conv2d(4, 6, (3, 2), stride=(2, 1), padding=(1, 0), groups=2), [(1, 4, 7, 6)]),
    Case("conv2d-same", lambda: nn.Conv2d(2, 3, 4, padding="same", bias=False),
         lambda: torch.nn.Conv2d(2, 3, 4, padding="same", bias=False), [(1, 2, 5, 5)]),
    Case("conv2d-valid-dilation", lambda: nn.Conv2d(2, 2, 3, padding="valid", dilation=2),
         lambda: torch.nn.Conv2d(2, 2, 3, padding="valid", dilation=2), [(1, 2, 7, 8)]),
    Case("conv2d-unbatched", lambda: nn.Conv2d(2, 3, 3, padding=1), lambda: torch.nn.Conv2d(2, 3, 3, padding=1),
         [(2, 5, 4)]),
    Case("conv_transpose2d", lambda: nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1),
         lambda: torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1, output_padding=1), [(2, 3, 4, 3)]),
    Case("conv_transpose2d-groups", lambda: nn.ConvTranspose2d(4, 6, 2, groups=2),
         lambda: torch.nn.ConvTranspose2d(4, 6, 2, groups=2), [(1, 4, 3, 3)]),
    Case("maxpool1d", lambda: nn.MaxPool1d(3, stride=2, padding=1), lambda: torch.nn.MaxPool1d(3, stride=2, padding=1),
         [(2, 3, 8)]),
    Case("maxpool2d", lambda: nn.MaxPool2d(2), lambda: torch.nn.MaxPool2d(2), [(2, 3, 6, 5)]),
    Case("maxpool2d-dilation", lambda: nn.MaxPool2d(3, stride=1, padding=1, dilation=2),
         lambda: torch.nn.MaxPool2d(3, stride=1, padding=1, dilation=2), [(1, 2, 7, 7)]),
    Case("avgpool1d", lambda: nn.AvgPool1d(2), lambda: torch.nn.AvgPool1d(2), [(2, 3, 7)]),
    Case("avgpool2d", lambda: nn.AvgPool2d(3, stride=2, padding=1), lambda: torch.nn.AvgPool2d(3, stride=2, padding=1),
         [(2, 2, 6, 7)]),
    Case("adaptive_avgpool2d", lambda: nn.AdaptiveAvgPool2d((2, 3)), lambda: torch.nn.AdaptiveAvgPool2d((2, 3)),
         [(2, 2, 5, 7)]),
    Case("conv3d", lambda: nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=1),
         lambda: torch.nn.Conv3d(2, 3, (2, 3, 2), stride=(1, 2, 1), padding=1), [(2, 2, 4, 5, 4)]),
    Case("conv3d-groups-same", lambda: nn.Conv3d(4, 2, 2, padding="same", groups=2, bias=False),
         lambda: torch.nn.Conv3d(4, 2, 2, padding="same", groups=2, bias=False), [(1, 4, 3, 4, 3)]),
    Case("conv_transpose3d", lambda: nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1),
         lambda: torch.nn.ConvTranspose3d(2, 3, 2, stride=2, padding=1, output_padding=1), [(1, 2, 3, 2, 3)]),
    Case("maxpool3d", lambda: nn.MaxPool3d(2, stride=1, padding=1), lambda: torch.nn.MaxPool3d(2, stride=1, padding=1),
         [(2, 2, 3, 4, 3)]),
    Case("avgpool3d", lambda: nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False),
         lambda: torch.nn.AvgPool3d(3, stride=2, padding=1, count_include_pad=False), [(1, 2, 5, 4, 5)]),
    Case("batchnorm1d-eval", lambda: _with_stats(nn.BatchNorm1d(3)), lambda: torch.nn.BatchNorm1d(3), [(4, 3)]),
    Case("batchnorm1d-train-3d", lambda: nn.BatchNorm1d(3), lambda: torch.nn.BatchNorm1d(3), [(4, 3, 5)], train=True),
    Case("batchnorm2d-eval", lambda: _with_stats(nn.BatchNorm2d(2)), lambda: torch.nn.BatchNorm2d(2), [(2, 2, 3, 3)]),
    Case("batchnorm2d-train", lambda: nn.BatchNorm2d(2, momentum=0.3), lambda: torch.nn.BatchNorm2d(2, momentum=0.3),
         [(2, 2, 3, 3)], train=True),
    Case("layernorm", lambda: _perturbed(nn.LayerNorm(6)), lambda: torch.nn.LayerNorm(6), [(2, 3, 6)]),
    Case("layernorm-2d-shape", lambda: _perturbed(nn.LayerNorm((2, 3), eps=1e-3)),
         lambda: torch.nn.LayerNorm((2, 3), eps=1e-3), [(4, 2, 3)]),
    Case("groupnorm", lambda: _perturbed(nn.GroupNorm(2, 4)), lambda: torch.nn.GroupNorm(2, 4), [(2, 4, 3, 2)]),
    Case("rmsnorm", lambda: _perturbed(nn.RMSNorm(5)), lambda: torch.nn.RMSNorm(5), [(3, 5)]),
    Case("dropout-eval", lambda: nn.Dropout(0.5), lambda: torch.nn.Dropout(0.5), [(3, 4)]),
    Case("embedding", lambda: nn.Embedding(7, 3, padding_idx=2), lambda: torch.nn.Embedding(7, 3, padding_idx=2),
         [("int", (2, 4), 7)]),
    Case("flatten", lambda: nn.Flatten(), lambda: torch.nn.Flatten(), [(2, 3, 2, 2)]),
    Case("identity", lambda: nn.Identity(), lambda: torch.nn.Identity(), [(2, 3)]),
    Case("relu", nn.ReLU, torch.nn.ReLU, [(3, 4)]),
    Case("gelu", nn.GELU, torch.nn.GELU, [(3, 4)]),
    Case("gelu-tanh", lambda: nn.GELU("tanh"), lambda: torch.nn.GELU("tanh"), [(3, 4)]),
    Case("silu", nn.SiLU, torch.nn.SiLU, [(3, 4)]),
    Case("sigmoid", nn.Sigmoid, torch.nn.Sigmoid, [(3, 4)]),
    Case("tanh", nn.Tanh, torch.nn.Tanh, [(3, 4)]),
    Case("leaky_relu", lambda: nn.LeakyReLU(0.2), lambda: torch.nn.LeakyReLU(0.2), [(3, 4)]),
    Case("softmax", lambda: nn.Softmax(dim=0), lambda: torch.nn.Softmax(dim=0), [(3, 4)]),
    Case("log_softmax", lambda: nn.LogSoftmax(dim=-1), lambda: torch.nn.LogSoftmax(dim=-1), [(3, 4)]),
    Case("elu", lambda: nn.ELU(0.7), lambda: torch.nn.ELU(0.7), [(3, 4)]),
    Case("softplus", lambda: nn.Softplus(2.0, 1.0), lambda: torch.nn.Softplus(2.0, 1.0), [(3, 4)]),
    Case("mish", nn.Mish, torch.nn.Mish, [(3, 4)]),
    Case("hardswish", nn.Hardswish, torch.nn.Hardswish, [(3, 4)]),
    Case("hardsigmoid", nn.Hardsigmoid, torch.nn.Hardsigmoid, [(3, 4)]),
    Case("mha", lambda: _perturbed(nn.MultiheadAttention(8, 2)), lambda: torch.nn.MultiheadAttention(8, 2),
         [(5, 2, 8), (4, 2, 8), (4, 2, 8)]),
    Case("mha-batch-first-masks", lambda: _perturbed(nn.MultiheadAttention(6, 3, batch_first=True)),
         lambda: torch.nn.MultiheadAttention(6, 3, batch_first=True), [(2, 4, 6), (2, 4, 6), (2, 4, 6)],
         kwargs={"attn_mask": "causal-at-dim-1", "key_padding_mask": "pad-last"}),
    Case("mha-float-mask-per-head", lambda: _perturbed(nn.MultiheadAttention(4, 2, bias=False)),
         lambda: torch.nn.MultiheadAttention(4, 2, bias=False), [(3, 2, 4), (3, 2, 4), (3, 2, 4)],
         kwargs={"attn_mask": "float-per-head", "average_attn_weights": False}),
    Case("mha-unbatched", lambda: _perturbed(nn.MultiheadAttention(4, 1)), lambda: torch.nn.MultiheadAttention(4, 1),
         [(3, 4), (3, 4), (3, 4)]),
    Case("encoder-layer-post-norm", lambda: _perturbed(nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0)),
         lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0), [(5, 2, 8)]),
    Case("encoder-layer-pre-norm-gelu", lambda: _perturbed(nn.TransformerEncoderLayer(
        8, 4, 12, dropout=0.0, activation="gelu", norm_first=True, batch_first=True)),
        lambda: torch.nn.TransformerEncoderLayer(8, 4, 12, dropout=0.0, activation="gelu", norm_first=True,
                                                 batch_first=True), [(2, 5, 8)],
        kwargs={"src_mask": "causal-at-dim-1"}),
    Case("encoder-2-layers-final-norm", lambda: _perturbed(nn.TransformerEncoder(
        nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True), 2, nn.LayerNorm(8))),
        lambda: torch.nn.TransformerEncoder(torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True),
                                            2, torch.nn.LayerNorm(8), enable_nested_tensor=False), [(2, 4, 8)]),
    Case("lstm", lambda: nn.LSTM(3, 4), lambda: torch.nn.LSTM(3, 4), [(5, 2, 3)]),
    Case("lstm-2-layers-batch-first", lambda: nn.LSTM(3, 4, num_layers=2, batch_first=True),
         lambda: torch.nn.LSTM(3, 4, num_layers=2, batch_first=True), [(2, 5, 3)]),
    Case("lstm-bidirectional-nobias", lambda: nn.LSTM(3, 2, num_layers=2, bias=False, bidirectional=True),
         lambda: torch.nn.LSTM(3, 2, num_layers=2, bias=False, bidirectional=True), [(4, 2, 3)]),
    Case("lstm-unbatched-initial-state", lambda: nn.LSTM(3, 4), lambda: torch.nn.LSTM(3, 4), [(5, 3), (1, 4), (1, 4)]),
    Case("gru", lambda: nn.GRU(3, 4), lambda: torch.nn.GRU(3, 4), [(5, 2, 3)]),
    Case("gru-2-layers-bidirectional-batch-first",
         lambda: nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True),
         lambda: torch.nn.GRU(3, 4, num_layers=2, batch_first=True, bidirectional=True), [(2, 5, 3)]),
    Case("gru-initial-state", lambda: nn.GRU(2, 3), lambda: torch.nn.GRU(2, 3), [(4, 2, 2), (1, 2, 3)]),
]


def _perturbed(module):
    """Nonzero biases and non-unit norm weights, so a swapped name or layout cannot hide."""
    g = ember.Generator(99)
    for _, p in module.named_parameters():
        p.value = p.value + ember.randn(*p.shape, generator=g) * 0.1
    return module


def _with_stats(bn):
    g = ember.Generator(7)
    n = bn.num_features
    bn.running_mean = ember.randn(n, generator=g)
    bn.running_var = ember.rand(n, generator=g) + 0.5
    bn.weight = ember.randn(n, generator=g)
    bn.bias = ember.randn(n, generator=g)
    return bn


def _masks(case, inputs):
    """Build the mask keyword arguments a case names, as (ember kwargs, torch kwargs)."""
    ek, tk = {}, {}
    for key, spec in case.kwargs.items():
        if type(spec) is not str:
            ek[key], tk[key] = spec, spec
            continue
        if spec.startswith("causal-at-dim-"):  # True above the diagonal: the future is hidden
            length = inputs[0].shape[int(spec[-1])]
            m = ember.ones(length, length, dtype=ember.bool).triu(1)
        elif spec == "pad-last":
            n, s = inputs[1].shape[0], inputs[1].shape[1]
            m = ember.tensor([[False] * (s - 1) + [True]] * n)
        else:  # float-per-head: (N * heads, L, S) for 2 heads
            q = inputs[0]
            m = ember.randn(q.shape[1] * 2, q.shape[0], q.shape[0], generator=ember.Generator(3))
        ek[key] = m
        tk[key] = torch.tensor(m.tolist(), dtype=torch.bool if m.dtype is ember.bool else torch.float32)
    return ek, tk


def test_layer_matches_torch(case):
    ember.seed(0)
    mine = case.ember_layer()
    theirs = case.torch_layer()
    state = {n: to_torch(t) for n, t in mine.named_tensors()}
    theirs.load_state_dict(state, strict=True)
    assert [n for n, _ in mine.named_parameters()] == [n for n, _ in theirs.named_parameters()]
    mine.train(case.train)
    theirs.train(case.train)
    xs = _inputs(case.inputs, ember.Generator(1))
    ek, tk = _masks(case, xs)
    if len(xs) == 3 and isinstance(mine, (nn.LSTM,)):
        got = mine(xs[0], (xs[1], xs[2]))
        with torch.no_grad():
            want = theirs(to_torch(xs[0]), (to_torch(xs[1]), to_torch(xs[2])))
    elif len(xs) == 2 and isinstance(mine, nn.GRU):
        got = mine(xs[0], xs[1])
        with torch.no_grad():
            want = theirs(to_torch(xs[0]), to_torch(xs[1]))
    else:
        got = mine(*xs, **ek)
        with torch.no_grad():
            want = theirs(*[to_torch(x) for x in xs], **tk)
    got, want = outputs(got), outputs(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert_close(g, w.tolist(), rtol=1e-4, atol=case.atol)
    if case.train:  # running statistics updated as torch updates them
        for (n, t), (tn, tt) in zip(mine.named_buffers(), theirs.named_buffers()):
            assert n == tn
            assert_close(t, tt.tolist(), rtol=1e-5, atol=1e-6, msg=n)

