"""Conv3d, ConvTranspose3d, MaxPool3d, AvgPool3d and MaxUnpool2d: built from their configs, they
compute what their functional ops compute, take unbatched inputs, and save and load as records."""
import os

import ember
import ember.nn.functional as F
from ember.nn import conv, pool
from harness.check import assert_close, assert_true, raises

PARAMETERS = ("device",)


def _input(device, shape, seed=3):
    g = ember.Generator(seed)
    n = 1
    for s in shape:
        n *= s
    return ember.tensor(g.uniforms(n, -1.0, 1.0), device=device).reshape(shape)


def _path(name):
    try:
        import tempfile
        return tempfile.mkdtemp() + "/" + name
    except ImportError:  # MicroPython: relative to the runner's cwd, a folder it discards after the run
        return name


LAYERS = [
    (conv.Conv3dConfig(2, 4, (2, 3, 2), stride=(1, 2, 1), padding=1, groups=2),
     lambda m, x: F.conv3d(x, m.weight, m.bias, (1, 2, 1), (1, 1, 1), 1, 2), (1, 2, 4, 5, 4)),
    (conv.ConvTranspose3dConfig(2, 3, 2, stride=2, output_padding=1, bias=False),
     lambda m, x: F.conv_transpose3d(x, m.weight, None, 2, 0, 1), (2, 2, 3, 2, 2)),
    (pool.MaxPool3dConfig(2, stride=1, padding=1), lambda m, x: F.max_pool3d(x, 2, 1, 1), (1, 2, 3, 4, 3)),
    (pool.AvgPool3dConfig((2, 2, 1), count_include_pad=False, padding=(1, 0, 0)),
     lambda m, x: F.avg_pool3d(x, (2, 2, 1), None, (1, 0, 0), False, False), (2, 1, 3, 4, 2)),
]


def test_layers_compute_their_functional_op(device):
    for cfg, fn, shape in LAYERS:
        m = cfg.init(device, ember.Generator(0))
        x = _input(device, shape)
        want = fn(m, x)
        assert_close(m(x).tolist(), want.tolist(), rtol=0, atol=0, msg=repr(cfg))
        assert_close(m(x[0]).tolist(), want[0].tolist(), rtol=0, atol=0, msg="unbatched " + repr(cfg))
        assert_true(type(cfg).from_json(cfg.to_json()) == cfg, repr(cfg))


def test_conv_layers_save_and_load_as_records(device):
    for cfg, _, shape in LAYERS[:2]:
        m = cfg.init(device, ember.Generator(0))
        path = _path("struct_layer.safetensors")
        m.save(path)
        other = cfg.init(device, ember.Generator(7))
        other.load(path)
        os.remove(path)
        x = _input(device, shape)
        assert_close(other(x).tolist(), m(x).tolist(), rtol=0, atol=0, msg=repr(cfg))


def test_max_unpool2d_layer(device):
    unpool = pool.MaxUnpool2dConfig(2).init(device)
    x = _input(device, (1, 1, 2, 2))
    idx = ember.tensor([[[[1, 6], [8, 15]]]], device=device)
    out = unpool(x, idx)
    assert_true(out.shape == (1, 1, 4, 4))
    flat = out.reshape(-1).tolist()
    vals = x.reshape(-1).tolist()
    assert_true([flat[1], flat[6], flat[8], flat[15]] == vals and sum(1 for v in flat if v != 0) == 4)
    assert_true(unpool(x, idx, output_size=(5, 5)).shape == (1, 1, 5, 5))


def test_layer_errors(device):
    with raises(ember.ShapeError, "Conv3d: expected"):
        conv.Conv3d(1, 1, 2, device=device)(_input(device, (1, 4, 4)))
    with raises(ember.ArgumentError, "ConvTranspose3d: padding must be an int or three ints"):
        conv.ConvTranspose3d(1, 1, 2, padding="same", device=device)
    with raises(ember.ArgumentError, "AvgPool3dConfig: divisor_override must be an int > 0, found 0"):
        pool.AvgPool3dConfig(2, divisor_override=0)
    with raises(ember.ShapeError, "MaxPool3d: expected"):
        pool.MaxPool3d(2)(_input(device, (2, 4, 4)))
