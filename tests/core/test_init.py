"""ember.nn.init: PyTorch's formulas, drawn from ember's generator (the same values on every
interpreter), and the default initialization of the layers."""
import math

import ember
from ember.nn import init
from ember.nn.attention import MultiheadAttention
from ember.nn.conv import Conv2d, ConvTranspose2d
from ember.nn.embedding import Embedding
from ember.nn.linear import Linear
from ember.nn.norm import BatchNorm2d
from ember.nn.recurrent import LSTM
from harness.check import assert_close, assert_equal, assert_true, raises

PARAMETERS = ("device",)


def flat(t):
    return t.flatten().tolist()


def test_gains_and_fans(device):
    assert_close([init.calculate_gain(n) for n in ("linear", "sigmoid", "tanh", "relu", "selu")],
                 [1.0, 1.0, 5.0 / 3, math.sqrt(2.0), 0.75])
    assert_close(init.calculate_gain("leaky_relu", math.sqrt(5)), math.sqrt(1 / 3))
    assert_true(init.fans((8, 3, 5, 5)) == (75, 200))
    assert_true(init.fans((4, 6)) == (6, 4))
    with raises(ember.ArgumentError, "unknown nonlinearity"):
        init.calculate_gain("swishy")
    with raises(ember.ArgumentError, "2 or more dims"):
        init.fans((5,))


def test_constants(device):
    assert_equal(init.zeros((2, 2), device), [[0.0, 0.0], [0.0, 0.0]])
    assert_equal(init.ones((3,), device), [1.0, 1.0, 1.0])
    t = init.constant((2,), 0.25, device)
    assert_true(t.device == device and t.dtype is ember.float32)
    assert_equal(t, [0.25, 0.25])


def test_values_are_the_same_on_every_interpreter(device):
    # uniforms are exact 24-bit fractions; normals agree to the host libm's last bit
    got = init.kaiming_uniform((2, 3), generator=ember.Generator(0), device=device)
    assert_close(got, [[1.369354009628296, 1.123464584350586, -0.322607159614563],
                       [-0.007609866559505463, -0.33188703656196594, -0.9616727232933044]], rtol=0, atol=1e-7)
    got = init.xavier_normal((2, 2), generator=ember.Generator(1), device=device)
    assert_close(got, [[0.45715802907943726, -0.29854023456573486], [-0.6422806978225708, -1.5335396528244019]],
                 rtol=0, atol=1e-6)


def test_bounds_and_spread(device):
    g = ember.Generator(3)
    w = flat(init.kaiming_uniform((30, 40), a=math.sqrt(5), generator=g, device=device))
    bound = 1 / math.sqrt(40)
    assert_true(max(abs(v) for v in w) <= bound)
    assert_true(abs(sum(v * v for v in w) / len(w) - bound * bound / 3) < 0.1 * bound * bound / 3)
    w = flat(init.kaiming_normal((30, 40), mode="fan_out", nonlinearity="relu", generator=g, device=device))
    std = math.sqrt(2.0) / math.sqrt(30)
    assert_true(abs(math.sqrt(sum(v * v for v in w) / len(w)) / std - 1) < 0.1)
    w = flat(init.xavier_uniform((30, 40), gain=2.0, generator=g, device=device))
    assert_true(max(abs(v) for v in w) <= 2.0 * math.sqrt(6 / 70))
    w = flat(init.uniform((100,), -0.5, 0.25, g, device))
    assert_true(min(w) >= -0.5 and max(w) < 0.25)
    w = flat(init.normal((400,), 3.0, 0.5, g, device))
    assert_true(abs(sum(w) / len(w) - 3.0) < 0.1)
    with raises(ember.ArgumentError, "mode"):
        init.kaiming_uniform((2, 2), mode="fan_middle")


def _gram(rows):
    return [[sum(a * b for a, b in zip(r, s)) for s in rows] for r in rows]


def _identity(n):
    return [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]


def test_orthogonal(device):
    wide = init.orthogonal((2, 3), generator=ember.Generator(0), device=device)
    # numpy.linalg.qr of the same normals with R's diagonal made positive (torch's orthogonal_ rule)
    assert_close(wide, [[0.10263863, -0.07736147, -0.99170586], [0.22227051, 0.97354667, -0.05294056]],
                 rtol=0, atol=1e-6)
    assert_close(_gram(wide.tolist()), _identity(2), atol=1e-6)
    tall = init.orthogonal((4, 3), gain=2.0, generator=ember.Generator(0), device=device).tolist()
    columns = [[row[j] / 2.0 for row in tall] for j in range(3)]
    assert_close(_gram(columns), _identity(3), atol=1e-6)
    conv = init.orthogonal((3, 2, 2, 2), generator=ember.Generator(4), device=device)
    assert_true(conv.shape == (3, 2, 2, 2))
    assert_close(_gram(conv.reshape(3, 8).tolist()), _identity(3), atol=1e-6)


def test_layer_defaults_follow_pytorch(device):
    g = ember.Generator(0)
    lin = Linear(40, 30, device=device, generator=g)
    assert_true(max(abs(v) for v in flat(lin.weight)) <= 1 / math.sqrt(40))
    assert_true(max(abs(v) for v in flat(lin.bias)) <= 1 / math.sqrt(40))
    conv = Conv2d(4, 6, 3, groups=2, device=device, generator=g)
    assert_true(max(abs(v) for v in flat(conv.weight)) <= 1 / math.sqrt(2 * 9))
    tconv = ConvTranspose2d(4, 6, 2, device=device, generator=g)  # fan_in is weight dim 1 (out) x kernel
    assert_true(max(abs(v) for v in flat(tconv.weight)) <= 1 / math.sqrt(6 * 4))
    mha = MultiheadAttention(8, 2, device=device, generator=g)
    assert_true(max(abs(v) for v in flat(mha.in_proj_weight)) <= math.sqrt(6 / (8 + 24)))
    assert_equal(mha.in_proj_bias, [0.0] * 24)
    assert_equal(mha.out_proj.bias, [0.0] * 8)
    lstm = LSTM(3, 16, device=device, generator=g)
    assert_true(max(abs(v) for v in flat(lstm.weight_hh_l0)) <= 0.25)
    bn = BatchNorm2d(3, device=device)
    assert_equal(bn.weight, [1.0] * 3)
    assert_equal(bn.running_var, [1.0] * 3)
    assert_true(bn.num_batches_tracked.dtype is ember.int64 and bn.num_batches_tracked.shape == ())
    emb = Embedding(50, 8, padding_idx=0, device=device, generator=g)
    vals = flat(emb.weight)
    assert_equal(emb.weight[0], [0.0] * 8)
    mean = sum(vals) / len(vals)
    assert_true(abs(mean) < 0.15 and abs(sum((v - mean) ** 2 for v in vals) / len(vals) - 1) < 0.2)


def test_same_seed_same_model(device):
    a = Linear(3, 2, device=device, generator=ember.Generator(11))
    b = Linear(3, 2, device=device, generator=ember.Generator(11))
    assert_equal(a.weight, b.weight)
    assert_equal(a.bias, b.bias)


def test_skip_draws_nothing(device):
    g = ember.Generator(8)
    state = g.get_state()
    with init.skip():
        layer = Linear(4, 3, device=device, generator=g)
        lstm = LSTM(2, 2, device=device, generator=g)
        q = init.orthogonal((2, 2), generator=g, device=device)
    assert_true(g.get_state() == state)
    assert_equal(layer.weight, [[0.0] * 4] * 3)
    assert_equal(layer.bias, [0.0] * 3)
    assert_equal(lstm.weight_ih_l0, [[0.0] * 2] * 8)
    assert_equal(q, [[0.0, 0.0], [0.0, 0.0]])
    try:
        with init.skip():
            raise KeyError("inside")
    except KeyError:
        pass
    assert_true(abs(Linear(4, 3, device=device, generator=g).weight).sum().item() > 0)


def test_skip_builds_parameters_that_hold_one_value(device):
    with init.skip():
        net = Conv2d(16, 32, 3, device=device)
        norm = BatchNorm2d(32, device=device)
    assert_equal(net.weight[0, 0], [[0.0] * 3] * 3)
    assert_equal(norm.weight, [1.0] * 32)
    assert_equal(norm.running_var, [1.0] * 32)
    assert_true(net.weight.shape == (32, 16, 3, 3) and net.weight.dtype is ember.float32)
    assert_equal((net.weight + 1).sum(), 32 * 16 * 9)
    if isinstance(device, ember.Cpu):  # one stored value seen through zero strides
        for p in net.parameters() + norm.parameters():
            assert_true(len(p.value._data.data) == 1, "%s holds %d values" % (p, len(p.value._data.data)))


def test_skip_costs_no_memory_for_parameters(device):
    import gc
    if not hasattr(gc, "mem_alloc") or not isinstance(device, ember.Cpu):
        return  # MicroPython's heap counter measures it; elsewhere the test above stands for it
    gc.collect()
    before = gc.mem_alloc()
    with init.skip():
        layer = Linear(128, 256, device=device)  # 33,024 parameters: 129 KB as float32
    gc.collect()
    used = gc.mem_alloc() - before
    assert_true(used < 8000, "a skip-built Linear(128, 256) holds %d bytes" % used)
    assert_true(layer.weight.shape == (256, 128))
