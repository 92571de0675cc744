"""ember.quant's C kernels (ext_c/quant.c) against the pure-Python Cpu: the same integers, exactly.

int32 sums of int8 linear and conv2d (strides, asymmetric padding, dilation, groups, batch dims,
the extremes -127/127 at the largest fan-in whose sums fit int32); then whole quantized layers and
models, whose float32 outputs must agree bit for bit, since everything after the sums is the same
float32 ops on both devices. No timing here.
"""
import pytest

import ember
import ember.quant as Q
from ember.backends.cpu import ckernels
from ember.nn.conv import Conv2d
from ember.nn.linear import Linear
from ember.quant import kernels
from harness.check import assert_close

PURE = ember.Cpu(kernels="python")
C = ember.Cpu(kernels="c") if ckernels.available() else None

pytestmark = pytest.mark.skipif(C is None, reason="C kernels unavailable: %s" % ckernels.reason())


def int8(shape, seed, device):
    g = ember.Generator(seed)
    return ember.randint(-127, 128, shape, generator=g, device=device).to(ember.int8)


def test_the_c_path_is_taken():
    lib, _ = kernels._c(C)
    assert lib is not None and hasattr(lib, "emb_q8_conv2d")
    assert kernels._c(PURE) == (None, None)


# odd rows, columns not a multiple of 4, empty sides; (5, 2000) x 70 splits the weight rows into cache
# blocks of 32 with a remainder
@pytest.mark.parametrize("x_shape,out", [((1, 1), 1), ((3, 7), 5), ((2, 3, 17), 9), ((64, 33), 4), ((0, 5), 3),
                                         ((4, 5), 0), ((5, 2000), 70)])
def test_linear_sums(x_shape, out):
    k = x_shape[-1]
    got = [Q.int8_linear(int8(x_shape, 1, d), int8((out, k), 2, d)) for d in (PURE, C)]
    assert got[1].dtype is ember.int32 and got[1].shape == x_shape[:-1] + (out,)
    assert got[0].tolist() == got[1].tolist()


def test_linear_sums_at_the_int32_limit():
    k = Q.arith.MAX_FAN_IN
    for d in (PURE, C):
        x = ember.full((1, k), 127, dtype=ember.int8, device=d)
        w = ember.tensor([[127] * k, [-127] * k], dtype=ember.int8, device=d)
        assert Q.int8_linear(x, w).tolist() == [[127 * 127 * k, -127 * 127 * k]]


CONVS = [
    # (x shape, weight shape, stride, pads, dilation, groups)
    ((1, 1, 5, 5), (1, 1, 3, 3), (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
    ((2, 3, 8, 7), (4, 3, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((2, 4, 9, 8), (6, 2, 3, 2), (2, 1), ((1, 2), (0, 1)), (1, 2), 2),
    ((1, 6, 7, 7), (6, 1, 3, 3), (2, 2), ((2, 2), (2, 2)), (2, 2), 6),
    ((3, 16, 4, 4), (32, 16, 3, 3), (1, 1), ((1, 1), (1, 1)), (1, 1), 1),
    ((1, 2, 3, 3), (3, 2, 1, 1), (3, 3), ((0, 0), (0, 0)), (1, 1), 1),
]


@pytest.mark.parametrize("case", CONVS, ids=[str(i) for i in range(len(CONVS))])
def test_conv_sums(case):
    x_shape, w_shape, stride, pads, dilation, groups = case
    got = [Q.int8_conv2d(int8(x_shape, 3, d), int8(w_shape, 4, d), stride, pads, dilation, groups)
           for d in (PURE, C)]
    assert got[0].shape == got[1].shape
    assert got[0].tolist() == got[1].tolist()


def test_non_contiguous_inputs():
    got = []
    for d in (PURE, C):
        x = int8((6, 4, 5), 5, d).permute(2, 1, 0)[:, ::2]  # (5, 2, 6), strided
        got.append(Q.int8_linear(x, int8((3, 6), 6, d)).tolist())
    assert got[0] == got[1]


def same_bits(a, b):
    assert a.shape == b.shape and a.dtype is b.dtype
    assert a.to_bytes() == b.to_bytes()


def on_both(build):
    """``build(device)`` on the pure and on the C-backed Cpu, each from the same seed (the two Cpu
    devices are equal, so ``.to`` would not move a tensor from one to the other)."""
    out = []
    for d in (PURE, C):
        ember.seed(11)
        out.append(build(d))
    return out


def float_layer(kind, d):
    if kind == "linear":
        return Linear(40, 12, device=d), ember.randn(3, 2, 40, device=d)
    return Conv2d(4, 8, 3, stride=2, padding=1, groups=2, device=d), ember.randn(2, 4, 9, 9, device=d)


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_int8_layers_agree_bit_for_bit(kind):
    ember.seed(11)
    layer, x = float_layer(kind, PURE)
    # the scales from the pure device's float layer, for both: C's float32 products round otherwise
    scales = (Q.scale_of(x).item(), Q.scale_of(layer(x)).item())

    def build(d):
        layer, x = float_layer(kind, d)
        q = (Q.QuantLinear if kind == "linear" else Q.QuantConv2d).from_float(
            layer, ember.tensor(scales[0], device=d), ember.tensor(scales[1], device=d))
        assert q.weight.device.kernels == d.kernels
        return q(x)
    same_bits(*on_both(build))


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_weights_only_layers_agree(kind):
    # float32 sums in any order (the contract allows it): equal up to float32 rounding
    def build(d):
        layer, x = float_layer(kind, d)
        return (Q.QuantLinear if kind == "linear" else Q.QuantConv2d).from_float(layer)(x)
    pure, c = on_both(build)
    assert_close(c, pure, rtol=1e-5, atol=1e-6)


def test_a_calibrated_model_agrees_bit_for_bit(tmp_path):
    from ember.nn.activation import ReLU
    from ember.nn.flatten import Flatten
    from ember.nn import init

    def model(d):
        return ember.nn.Sequential(Conv2d(1, 4, 3, padding=1, device=d), ReLU(), Flatten(),
                                   Linear(4 * 6 * 6, 5, device=d))
    ember.seed(12)
    x = ember.randn(8, 1, 6, 6, device=PURE)
    pure = Q.quantize(model(PURE), calibration=[x[:4], x[4:]])
    path = str(tmp_path / "int8.safetensors")
    Q.save(pure, path)
    with init.skip():
        c = Q.load(model(C), path)
    assert c[0].weight.device.kernels == "c"
    same_bits(pure(x), c(ember.tensor(x.to_bytes(), dtype=x.dtype, shape=x.shape, device=C)))
