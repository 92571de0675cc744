"""ember.quant: the int8 arithmetic by hand, quantized layers, quantize with calibration, and the
quantized record with every bad input it must refuse. Tiny shapes: this also runs on MicroPython."""
import json
import struct

import ember
import ember.quant as Q
from ember import ArgumentError, RecordError, ShapeError
from ember.nn import Module, Sequential, init
from ember.nn.activation import ReLU
from ember.nn.conv import Conv2d
from ember.nn.flatten import Flatten
from ember.nn.linear import Linear
from harness.check import assert_close, assert_equal, assert_true, raises
from harness.files import tmp_path

PARAMETERS = ("device",)

NAN = float("nan")
INF = float("inf")


def f32(v):
    return struct.unpack("<f", struct.pack("<f", v))[0]


def q8(v, s):
    """The contract's quantization, written out: float32 division, + 0.5, floor, clamp; nan -> 0."""
    t = f32(f32(v) / f32(s))
    if t != t:
        return 0
    t = t + 0.5
    if t >= 128:
        return 127
    if t < -127:
        return -127
    i = int(t)
    return i - 1 if i > t else i


def hand_linear(device, activations, output):
    """QuantLinear(2 -> 2): q_w [[1, -2], [3, 4]], scales [0.5, 0.25], bias [0.1, -0.2], input 0.5."""
    q = Q.QuantLinear(2, 2, activations=activations, output=output, device=device)
    q.weight = ember.tensor([[1, -2], [3, 4]], dtype=ember.int8, device=device)
    q.weight_scale = ember.tensor([0.5, 0.25], device=device)
    q.bias = ember.tensor([0.1, -0.2], device=device)
    if activations:
        q.input_scale = ember.tensor(0.5, device=device)
    if output:
        q.output_scale = ember.tensor(0.25, device=device)
    return q


def tiny_mlp(device):
    ember.seed(3)
    return Sequential(Linear(4, 3, device=device), ReLU(), Linear(3, 2, device=device))


class TinyCNN(Module):
    def __init__(self, device=None):
        super().__init__()
        self.conv = Conv2d(1, 2, 3, padding=1, device=device)
        self.fc = Linear(2 * 3 * 3, 3, device=device)

    def forward(self, x):
        return self.fc(self.conv(x).relu().flatten(1))


# -- arithmetic ------------------------------------------------------------------------------

def test_quantize_rounds_half_up_and_clamps(device):
    x = ember.tensor([0.25, -0.25, 1.25, -1.25, 0.74, 100.0, -100.0, NAN, INF, -INF], device=device)
    # v / 0.5: 0.5 -> 1, -0.5 -> 0, 2.5 -> 3 (Python's round gives 2), -2.5 -> -2, 1.48 -> 1
    assert_equal(Q.quantize_values(x, 0.5), [1, 0, 3, -2, 1, 127, -127, 0, 127, -127])
    assert_true(Q.quantize_values(x, 0.5).dtype is ember.int8)


def test_scales_are_max_over_127_and_never_zero(device):
    w = ember.tensor([[0.0, 0.0], [1.0, -2.54], [0.5, 0.25]], device=device)
    assert_equal(Q.channel_scales(w), [1.0, f32(f32(2.54) / 127), f32(0.5 / 127)])
    assert_equal(Q.scale_of(ember.zeros(3, device=device)), 1.0)
    q, scale = Q.quantize_weight(w)
    assert_equal(q, [[0, 0], [50, -127], [127, 64]])
    assert_true(q.dtype is ember.int8 and scale.shape == (3,))


def test_linear_by_hand(device):
    x = ember.tensor([[1.0, -0.5]], device=device)
    # weights only: x . q_w = [2, 1]; [2 * 0.5 + 0.1, 1 * 0.25 - 0.2]
    assert_close(hand_linear(device, False, False)(x), [[f32(1.1), f32(0.05)]], rtol=0, atol=1e-7)
    # int8: q_in = [2, -1]; acc = [4, 2]; [4 * 0.25 + 0.1, 2 * 0.125 - 0.2]
    assert_close(hand_linear(device, True, False)(x), [[f32(1.1), f32(0.05)]], rtol=0, atol=1e-7)
    # output on the 0.25 grid: 1.1 / 0.25 = 4.4 -> 4 -> 1.0; 0.05 / 0.25 = 0.2 -> 0 -> 0.0
    assert_equal(hand_linear(device, True, True)(x), [[1.0, 0.0]])
    batched = hand_linear(device, True, True)(ember.tensor([[[1.0, -0.5]], [[0.0, 0.5]]], device=device))
    # [0.0, 0.5]: q_in [0, 1]; acc [-2, 4]; y [-0.4, 0.3] -> grid [-1.6 -> -2, 1.2 -> 1] -> [-0.5, 0.25]
    assert_equal(batched, [[[1.0, 0.0]], [[-0.5, 0.25]]])
    assert_true(batched.shape == (2, 1, 2) and batched.dtype is ember.float32)


def test_fake_quant_output_is_the_int_math(device):
    g = ember.Generator(5)
    x = ember.randn(3, 4, generator=g, device=device)
    w = ember.randn(2, 4, generator=g, device=device)
    b = ember.randn(2, generator=g, device=device)
    s_in, s_out = ember.tensor(0.021, device=device), ember.tensor(0.013, device=device)
    layer = Linear(4, 2, device=device)
    layer.weight, layer.bias = w, b
    q = Q.QuantLinear.from_float(layer, s_in, s_out)
    qw, ws, bias = q.weight.tolist(), q.weight_scale.tolist(), b.tolist()
    expected = []
    for row in x.tolist():
        qx = [q8(v, 0.021) for v in row]
        out = []
        for o in range(2):
            acc = sum([a * c for a, c in zip(qx, qw[o])])
            y = f32(f32(acc * f32(ws[o] * f32(0.021))) + bias[o])
            out.append(f32(q8(y, 0.013) * f32(0.013)))
        expected.append(out)
    assert_equal(q(x), expected)


def reference_conv(x, w, stride, pads, dilation, groups):
    """int sums of conv2d over nested lists: the definition, loop by loop."""
    n, c, h, wd = len(x), len(x[0]), len(x[0][0]), len(x[0][0][0])
    o, cg, kh, kw = len(w), len(w[0]), len(w[0][0]), len(w[0][0][0])
    oh = (h + pads[0][0] + pads[0][1] - dilation[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + pads[1][0] + pads[1][1] - dilation[1] * (kw - 1) - 1) // stride[1] + 1
    og = o // groups
    out = []
    for b in range(n):
        planes = []
        for f in range(o):
            g = f // og
            rows = []
            for oy in range(oh):
                row = []
                for ox in range(ow):
                    s = 0
                    for ci in range(cg):
                        for ky in range(kh):
                            for kx in range(kw):
                                yy = oy * stride[0] - pads[0][0] + ky * dilation[0]
                                xx = ox * stride[1] - pads[1][0] + kx * dilation[1]
                                if 0 <= yy < h and 0 <= xx < wd:
                                    s += x[b][g * cg + ci][yy][xx] * w[f][ci][ky][kx]
                    row.append(s)
                rows.append(row)
            planes.append(rows)
        out.append(planes)
    return out


def test_int8_conv_sums(device):
    g = ember.Generator(2)
    x = ember.randint(-127, 128, (2, 4, 5, 4), generator=g, device=device).to(ember.int8)
    w = ember.randint(-127, 128, (4, 2, 3, 2), generator=g, device=device).to(ember.int8)
    for stride, pads, dilation in (((1, 1), ((0, 0), (0, 0)), (1, 1)), ((2, 1), ((1, 2), (0, 1)), (1, 2))):
        acc = Q.int8_conv2d(x, w, stride, pads, dilation, 2)
        assert_true(acc.dtype is ember.int32)
        assert_equal(acc, reference_conv(x.tolist(), w.tolist(), stride, pads, dilation, 2))
    one = ember.tensor([[[[1, 2], [3, 4]]]], dtype=ember.int8, device=device)
    kernel = ember.tensor([[[[1, -1], [2, 0]]]], dtype=ember.int8, device=device)
    assert_equal(Q.int8_conv2d(one, kernel, (1, 1), ((0, 0), (0, 0)), (1, 1), 1), [[[[5]]]])  # 1 - 2 + 6


def test_int8_products_refuse_what_does_not_fit(device):
    x = ember.zeros(1, 4, 3, 3, dtype=ember.int8, device=device)
    with raises(ember.DTypeError, "expected an int8 weight tensor, found int32"):
        Q.int8_conv2d(x, ember.zeros(2, 4, 3, 3, dtype=ember.int32, device=device), (1, 1), ((0, 0), (0, 0)),
                      (1, 1), 1)
    with raises(ShapeError, "does not fit input"):
        Q.int8_conv2d(x, ember.zeros(2, 3, 3, 3, dtype=ember.int8, device=device), (1, 1), ((0, 0), (0, 0)),
                      (1, 1), 1)
    with raises(ShapeError, "smaller than the dilated kernel"):
        Q.int8_conv2d(x, ember.zeros(2, 4, 3, 3, dtype=ember.int8, device=device), (1, 1), ((0, 0), (0, 0)),
                      (2, 2), 1)
    with raises(ShapeError, "expected input of shape (..., 3)"):
        Q.int8_linear(ember.zeros(2, 4, dtype=ember.int8, device=device), ember.zeros(5, 3, dtype=ember.int8,
                                                                                       device=device))


def test_int8_linear_sums(device):
    qx = ember.tensor([[[1, -2, 3]], [[127, -127, 0]]], dtype=ember.int8, device=device)
    qw = ember.tensor([[2, 1, 0], [-1, -1, 1]], dtype=ember.int8, device=device)
    acc = Q.int8_linear(qx, qw)
    assert_true(acc.dtype is ember.int32 and acc.shape == (2, 1, 2))
    assert_equal(acc, [[[0, 4]], [[127, 0]]])


# -- layers and quantize --------------------------------------------------------------------------

def test_conv_layer_against_float(device):
    ember.seed(4)
    conv = Conv2d(4, 2, 3, stride=2, padding=1, dilation=1, groups=2, device=device)
    x = ember.randn(2, 4, 5, 5, device=device)
    for q in (Q.QuantConv2d.from_float(conv), Q.QuantConv2d.from_float(conv, Q.scale_of(x))):
        y = q(x)
        assert_true(y.shape == (2, 2, 3, 3) and y.dtype is ember.float32)
        assert_close(y, conv(x), rtol=0, atol=0.05)
    unbatched = Q.QuantConv2d.from_float(conv, Q.scale_of(x))(x[0])
    assert_equal(unbatched, Q.QuantConv2d.from_float(conv, Q.scale_of(x))(x)[0])


def test_quantize_with_and_without_calibration(device):
    model = tiny_mlp(device)
    x = ember.randn(6, 4, device=device)
    weights_only = Q.quantize(model)
    assert_true(type(weights_only[0]) is Q.QuantLinear and not weights_only[0].activations)
    assert_true(type(model[0]) is Linear, "the float model stays as it was")
    full = Q.quantize(model, calibration=[x[:3], x[3:]])
    first, last = full[0], full[2]
    assert_true(first.activations and first.output_scale is not None)
    assert_true(last.activations and last.output_scale is None, "the model's output is not re-quantized")
    assert_equal(first.input_scale, Q.scale_of(x))
    # the calibration runs the layer on two half batches, the check on the whole: the C kernels may
    # block the two differently by the machine's vector width, so the scales may differ in an ulp
    assert_close(first.output_scale, Q.scale_of(model[0](x)), rtol=2.0 ** -23, atol=0)
    assert_close(full(x), model(x), rtol=0, atol=0.05)
    only = Q.quantize(model, layers=["2"])
    assert_true(type(only[0]) is Linear and type(only[2]) is Q.QuantLinear)


def test_quantize_refuses(device):
    with raises(ArgumentError, "no Linear or Conv2d layer to quantize"):
        Q.quantize(Sequential(ReLU(), Flatten()))
    model = tiny_mlp(device)
    with raises(ArgumentError, "has no layer 'fc'"):
        Q.quantize(model, layers=["fc"])
    with raises(ArgumentError, "is a ReLU"):
        Q.quantize(model, layers=["1"])
    with raises(ShapeError, "calibration batch 1 (input shape (2, 5))"):
        Q.quantize(model, calibration=[ember.randn(2, 4, device=device), ember.randn(2, 5, device=device)])
    with raises(ArgumentError, "calibration gave no batches"):
        Q.quantize(model, calibration=[])
    assert_true(not hasattr(model[0], "__dict__") or "forward" not in model[0].__dict__,
                "calibration leaves no wrapper behind")


# -- records ------------------------------------------------------------------------------------

def saved_cnn(device):
    ember.seed(6)
    model = TinyCNN(device)
    x = ember.randn(2, 1, 3, 3, device=device)
    qmodel = Q.quantize(model, calibration=[x])
    path = tmp_path("tiny-int8.safetensors")
    Q.save(qmodel, path)
    return qmodel, x, path


def test_record_round_trip_and_layout(device):
    qmodel, x, path = saved_cnn(device)
    info = ember.record.inspect(path)
    layout = [(e.name, e.file_dtype, e.shape) for e in info.entries]
    assert_true(layout == [("conv.weight", "I8", (2, 1, 3, 3)), ("conv.bias", "F32", (2,)),
                           ("conv.weight_scale", "F32", (2,)), ("conv.input_scale", "F32", ()),
                           ("conv.output_scale", "F32", ()), ("fc.weight", "I8", (3, 18)), ("fc.bias", "F32", (3,)),
                           ("fc.weight_scale", "F32", (3,)), ("fc.input_scale", "F32", ())], layout)
    assert_true(info.metadata["ember_precision"] == "int8")
    assert_true(json.loads(info.metadata["ember_quantization"]) == {
        "scheme": "symmetric", "weights": "int8-per-channel", "activations": "int8", "layers": ["conv", "fc"]})
    with init.skip():
        loaded = Q.load(TinyCNN(device), path)
    assert_true(type(loaded.conv) is Q.QuantConv2d and loaded.fc.output_scale is None)
    assert_equal(loaded(x), qmodel(x))


def rewrite(path, tensors, metadata):
    out = tmp_path("bad.safetensors")
    ember.record.write(out, tensors, metadata=metadata, precision="int8" if metadata is not None else None)
    return out


def test_record_errors(device):
    qmodel, x, path = saved_cnn(device)
    with ember.record.open(path) as r:
        good, meta = r.read_all(device), dict(r.metadata)

    def edited(name, value):
        return [(n, value if n == name else t) for n, t in good if not (n == name and value is None)]

    def fresh():
        with init.skip():
            return TinyCNN(device)

    float_path = tmp_path("float.safetensors")
    TinyCNN(device).save(float_path)
    with raises(RecordError, "not an int8 record"):
        Q.load(fresh(), float_path)
    with raises(RecordError, "ember.quant.load(model, path)"):
        fresh().load(path)
    cases = [
        (edited("fc.weight_scale", None), meta, "missing fc.weight_scale"),
        (edited("fc.weight_scale", ember.ones(2, device=device)), meta, "fc.weight_scale is F32 [2], expected F32 [3]"),
        (edited("conv.weight_scale", ember.tensor([0.1, 0.0], device=device)), meta, "holds 0.0"),
        (edited("conv.input_scale", ember.tensor(-1.0, device=device)), meta, "holds -1.0"),
        (edited("fc.weight_scale", ember.tensor([0.1, NAN, 0.1], device=device)), meta, "holds nan"),
        (edited("fc.weight", ember.zeros(3, 17, dtype=ember.int8, device=device)), meta,
         "fc.weight is I8 [3, 17], expected I8 [3, 18]"),
        (edited("fc.weight", ember.zeros(3, 18, device=device)), meta, "fc.weight is F32 [3, 18], expected I8"),
    ]
    for text, message in (('{"scheme": "symmetric", "layers": [', "is not valid JSON"),
                          ('{"scheme": "symmetric", "weights": "int8-per-channel", "activations": "int4", '
                           '"layers": ["conv", "fc"]}', "activations 'int4'"),
                          ('{"scheme": "symmetric", "weights": "int8-per-channel", "activations": "int8", '
                           '"layers": ["conv"]}', "does not list layer 'fc'"),
                          ('{"scheme": "symmetric", "weights": "int8-per-channel", "activations": "int8", '
                           '"layers": ["conv", "fc", "head"]}', "has no such module there")):
        broken = dict(meta)
        broken["ember_quantization"] = text
        cases.append((good, broken, message))
    for tensors, metadata, message in cases:
        model = fresh()
        with raises(RecordError, message):
            Q.load(model, rewrite(path, tensors, metadata))
        assert_true(type(model.fc) is Linear, "a failed load leaves the model as it was")
    with raises(ember.ArgumentError, "no tensor is int8"):
        ember.record.write(tmp_path("x.safetensors"), [("a", ember.ones(1))], precision="int8")
