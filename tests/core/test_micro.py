"""ember.micro, the deployment runtime: its layers give what ember's own give (float32), int8 math
is exact integer accumulation with round-half-up requantization, and the arena plan reuses
buffers. Runs on every interpreter, MicroPython included."""
from array import array

import ember
import ember.nn.functional as F
from ember.micro import functional as MF
from ember.micro import plan as P
from ember.micro import tensor as T
from ember.micro.affine import Conv2d, Linear
from ember.micro.module import Module
from harness.check import assert_close, assert_true, raises


def _values(n, seed):
    g = ember.Generator(seed)
    return ember.rand(n, generator=g).tolist()


def _micro(values, shape):
    return T.tensor(values, shape)


def _rows(code, values, n):
    """A layer's weight as the record reader gives it: one array per output channel."""
    k = len(values) // n
    return [array(code, values[i * k:(i + 1) * k]) for i in range(n)]


def test_float_conv_pool_linear_match_ember():
    T.use(T.Arena())
    x = [v - 0.5 for v in _values(2 * 3 * 5 * 5, 1)]
    w = [v - 0.5 for v in _values(4 * 3 * 3 * 3, 2)]
    b = _values(4, 3)
    conv = Conv2d(3, 4, 3, padding=1, stride=1)
    conv.weight, conv.bias = _rows("f", w, 4), array("f", b)
    got = MF.max_pool2d(MF.relu(conv(_micro(x, (2, 3, 5, 5)))), 2)
    ref = F.max_pool2d(F.relu(F.conv2d(ember.tensor(x).reshape(2, 3, 5, 5), ember.tensor(w).reshape(4, 3, 3, 3),
                                       ember.tensor(b), padding=1)), 2)
    assert_true(got.shape == ref.shape, "shape %s vs %s" % (got.shape, ref.shape))
    assert_close(got.tolist(), ref.tolist(), rtol=1e-5, atol=1e-5)
    avg = MF.avg_pool2d(_micro(x, (2, 3, 5, 5)), 3, stride=2, padding=1)
    assert_close(avg.tolist(), F.avg_pool2d(ember.tensor(x).reshape(2, 3, 5, 5), 3, 2, 1).tolist(), atol=1e-6)
    fc = Linear(16, 3)
    wl = _values(48, 4)
    fc.weight, fc.bias = _rows("f", wl, 3), array("f", [0.5, -0.5, 0.0])
    flat = got.flatten(1)
    ref_fc = F.linear(ref.flatten(1), ember.tensor(wl).reshape(3, 16), ember.tensor([0.5, -0.5, 0.0]))
    assert_close(fc(flat).tolist(), ref_fc.tolist(), rtol=1e-5, atol=1e-5)


def test_int8_linear_is_integer_math_rounded_half_up():
    T.use(T.Arena())
    fc = Linear(3, 2)
    fc.weight = _rows("b", [1, -2, 3, 127, 0, -127], 2)
    fc.weight_scale = array("f", [0.5, 0.25])
    fc.bias = array("f", [1.0, -1.0])
    fc.input_scale, fc.output_scale, fc.int8 = 0.5, 0.25, True
    x = _micro([1.25, -0.74, 63.6], (1, 3))  # quantized with 0.5: 2.5 -> 3 (half up), -1.48 -> -1, 127.2 -> 127
    q = MF.quantize(x, 0.5)
    assert_true(list(q.data) == [3, -1, 127], "quantized %s" % list(q.data))
    y = fc(x)
    # acc = [3 + 2 + 381, 381 + 0 - 16129]; y = acc * 0.5 * ws + b, then / 0.25, floor(+0.5), clamp
    real = [386 * 0.5 * 0.5 + 1.0, -15748 * 0.5 * 0.25 - 1.0]
    want = [max(-127, min(127, int((v / 0.25 + 0.5) // 1))) for v in real]
    assert_true(list(y.data) == want and y.scale == 0.25, "int8 out %s, want %s" % (list(y.data), want))
    fc.output_scale = None  # the last layer: float logits
    fc._coef = None
    assert_close(fc(x).tolist(), [real], rtol=1e-6)


def test_quantize_rounds_half_up_and_clamps():
    T.use(T.Arena())
    q = MF.quantize(_micro([-0.25, 0.25, -0.75, 1000.0, -1000.0], (5,)), 0.5)
    assert_true(list(q.data) == [0, 1, -1, 127, -127], "got %s" % list(q.data))


def test_plan_reuses_buffers_and_runs_relu_in_place():
    class Net(Module):
        def __init__(self):
            self.a = Linear(4, 8)
            self.b = Linear(8, 4)
            self.c = Linear(4, 2)

        def forward(self, x):
            return self.c(MF.relu(self.b(MF.relu(self.a(x)))))
    net = Net()
    for layer, (o, i) in ((net.a, (8, 4)), (net.b, (4, 8)), (net.c, (2, 4))):
        layer.weight, layer.bias = _rows("f", [0.1] * (o * i), o), array("f", [0.0] * o)
    x = _micro([1.0, 2.0, 3.0, 4.0], (1, 4))
    trace, y = P.trace(net, x)
    plan = P.make(trace, y.buf)
    ops = plan["ops"]
    assert_true(len(ops) == 5, "ops %s" % ops)
    assert_true(ops[1][1] == ops[0][1] and ops[3][1] == ops[2][1], "relu not in place: %s" % ops)
    assert_true(plan["f"] == 8 + 4, "no reuse (26 floats without it): %s" % plan)
    want = y.tolist()
    T.use(T.Arena(plan))
    assert_close(net(x).tolist(), want)
    assert_close(net(x).tolist(), want)  # a second pass starts the plan again


def test_a_forward_that_leaves_its_plan_is_an_error():
    fc = Linear(2, 2)
    fc.weight, fc.bias = _rows("f", [1.0, 0.0, 0.0, 1.0], 2), array("f", [0.0, 0.0])
    T.use(T.Arena({"f": 2, "b": 0, "ops": [["f", 0, 2]]}))
    fc(_micro([1.0, 2.0], (1, 2)))
    with raises(ValueError, "the plan has 2"):
        fc(_micro([1.0, 2.0, 3.0, 4.0], (2, 2)))


def test_reshape_view_flatten_argmax():
    T.use(T.Arena())
    t = _micro([0.0, 5.0, 1.0, 2.0, 9.0, 3.0], (1, 2, 3))
    assert_true(t.flatten(1).shape == (1, 6) and t.view(-1, 3).shape == (2, 3) and t.reshape(6).shape == (6,))
    assert_true(t.flatten(1).argmax() == 4 and t.view(2, 3).argmax(dim=1).tolist() == [1, 1])
    with raises(ValueError, "invalid for 6 elements"):
        t.reshape(4, -1)
    with raises(ValueError, "not in the deployment path"):
        MF.gelu(t)


def test_quantize_nan_is_zero_and_inf_clamps():
    # the contract (docs/architecture.md, "Quantized records"): nan gives 0, +-inf clamps; a float
    # is compared before floor, so no integer beyond int8 is made (32-bit boards, no big ints)
    T.use(T.Arena())
    inf = float("inf")
    q = MF.quantize(_micro([inf, -inf, float("nan"), 3.0e38, -126.6, 126.4], (6,)), 1.0e-30)
    assert_true(list(q.data) == [127, -127, 0, 127, -127, 127], "got %s" % list(q.data))
    q = MF.quantize(_micro([-126.6, -126.4, 126.4, 126.6], (4,)), 1.0)
    assert_true(list(q.data) == [-127, -126, 126, 127], "got %s" % list(q.data))
    fc = Linear(1, 3)
    fc.weight, fc.weight_scale, fc.int8 = _rows("b", [1, 1, 1], 3), array("f", [1.0, 1.0, 1.0]), True
    fc.bias = array("f", [inf, -inf, 3.0e38])
    fc.input_scale, fc.output_scale = 1.0, 1.0e-30
    y = fc(_micro([1.0], (1, 1)))
    assert_true(list(y.data) == [127, -127, 127], "int8 out %s" % list(y.data))


def test_pool_padding_beyond_half_the_kernel_is_an_error():
    T.use(T.Arena())
    x = _micro([1.0] * 16, (1, 1, 4, 4))
    for pool in (MF.max_pool2d, MF.avg_pool2d):
        with raises(ValueError, "padding must be between 0 and kernel_size // 2"):
            pool(x, 2, 1, 2)
        with raises(ValueError, "padding must be between 0 and kernel_size // 2"):
            pool(x, (3, 2), 1, (1, 2))


def test_conv_linear_configurations_match_ember():
    """Strides, dilation, groups, rectangular kernels, padding, batch 2; Linear over 3-D inputs."""
    T.use(T.Arena())
    for n, c, h, w, oc, k, s, p, d, g in ((2, 4, 7, 6, 6, (3, 2), (2, 1), (1, 2), (1, 2), 2),
                                          (1, 4, 7, 7, 4, 3, 2, 0, 2, 4),
                                          (2, 2, 4, 6, 4, (1, 3), 1, (0, 1), 1, 1)):
        kh, kw = k if type(k) is tuple else (k, k)
        x = [v - 0.5 for v in _values(n * c * h * w, 1)]
        wt = [v - 0.5 for v in _values(oc * (c // g) * kh * kw, 2)]
        b = _values(oc, 3)
        conv = Conv2d(c, oc, k, stride=s, padding=p, dilation=d, groups=g)
        conv.weight, conv.bias = _rows("f", wt, oc), array("f", b)
        got = conv(_micro(x, (n, c, h, w)))
        ref = F.conv2d(ember.tensor(x).reshape(n, c, h, w), ember.tensor(wt).reshape(oc, c // g, kh, kw),
                       ember.tensor(b), stride=s, padding=p, dilation=d, groups=g)
        assert_true(got.shape == ref.shape, "shape %s vs %s" % (got.shape, ref.shape))
        assert_close(got.tolist(), ref.tolist(), rtol=1e-5, atol=1e-5)
    x, wl = _values(2 * 3 * 5, 4), _values(4 * 5, 5)
    fc = Linear(5, 4)
    bias = [0.5, -0.5, 0.0, 1.0]
    fc.weight, fc.bias = _rows("f", wl, 4), array("f", bias)
    got = fc(_micro(x, (2, 3, 5)))
    ref = F.linear(ember.tensor(x).reshape(2, 3, 5), ember.tensor(wl).reshape(4, 5), ember.tensor(bias))
    assert_true(got.shape == (2, 3, 4), "shape %s" % (got.shape,))
    assert_close(got.tolist(), ref.tolist(), rtol=1e-5, atol=1e-5)


def test_plan_keeps_a_tensor_live_while_a_view_of_it_is_read():
    """A tensor read again after a relu of it (residual-like), through reshape/flatten views: the
    relu may not run in place and no buffer is reused while live."""
    class Net(Module):
        def __init__(self):
            self.a, self.b = Linear(4, 4), Linear(4, 4)

        def forward(self, x):
            h = self.a(x)
            self.side = self.b(MF.relu(h.reshape(1, 2, 2)).flatten(1))  # relu of a view of h
            return self.b(h.view(1, 4))  # h itself, read again
    net = Net()
    net.a.weight, net.a.bias = _rows("f", [v - 0.5 for v in _values(16, 7)], 4), array("f", [0.1, -0.2, 0.3, -0.4])
    net.b.weight, net.b.bias = _rows("f", [v - 0.5 for v in _values(16, 8)], 4), array("f", [0.0] * 4)
    x = _micro([1.0, -2.0, 3.0, -4.0], (1, 4))
    trace, y = P.trace(net, x)
    plan = P.make(trace, y.buf)
    ops = plan["ops"]
    assert_true(ops[1][1] != ops[0][1], "relu overwrote a tensor read later: %s" % ops)
    want = y.tolist()
    T.use(T.Arena(plan))
    assert_close(net(x).tolist(), want)


def test_sizes_below_their_minimum_are_errors():
    # as ember.nn.functional says it, where a zero stride would divide by zero and a float size
    # would reach range()
    T.use(T.Arena())
    x = _micro([1.0] * 16, (1, 1, 4, 4))
    with raises(ValueError, "stride must be >= 1, found (0, 0)"):
        MF.max_pool2d(x, 2, 0)
    with raises(ValueError, "kernel_size must be >= 1"):
        MF.avg_pool2d(x, (0, 2))
    with raises(ValueError, "dilation must be >= 1"):
        MF.max_pool2d(x, 2, 1, 0, 0)
    with raises(ValueError, "must be an int or a pair, found (2, 2.0)"):
        MF.max_pool2d(x, (2, 2.0))
    with raises(ValueError, "stride must be >= 1"):
        Conv2d(1, 1, 3, stride=0)
    with raises(ValueError, "padding must be >= 0, found (-1, -1)"):
        Conv2d(1, 1, 3, padding=-1)
    with raises(ValueError, "kernel_size must be >= 1"):
        Conv2d(1, 1, (3, 0))


def test_reshape_and_flatten_refuse_what_ember_refuses():
    T.use(T.Arena())
    t = _micro([0.0] * 6, (1, 2, 3))
    with raises(ValueError, "expected sizes >= 0 or -1, found (-2, -3)"):
        t.reshape(-2, -3)  # 6 elements: the product check alone let it through
    with raises(ValueError, "cannot infer -1"):
        _micro([], (0,)).reshape(0, -1)
    with raises(ValueError, "start_dim 2 comes after end_dim 1"):
        t.flatten(2, 1)
    with raises(ValueError, "dim 3 is out of range for a tensor with 3 dims"):
        t.flatten(3)
    with raises(ValueError, "dim -4 is out of range for a tensor with 3 dims"):
        t.flatten(0, -4)
    assert_true(t.flatten(-2).shape == (1, 6) and t.flatten(0, 1).shape == (2, 3))


def test_layers_take_ember_nn_arguments_in_ember_nn_order():
    # ember.nn.Conv2d(in, out, k, stride, padding, dilation, groups, bias, device, generator) and
    # Dropout(p, generator): a model written for ember passes these, by position or by name
    from ember.micro.layers import Dropout
    g = ember.Generator(1)
    conv = Conv2d(1, 2, 3, 1, 1, 1, 1, False, None, g)
    assert_true(conv.padding == (1, 1) and not conv.has_bias, "padding %s" % (conv.padding,))
    Dropout(0.2, generator=g)
    Dropout(0.2, g)


def test_weight_rows_as_lists_and_shared_buffers_give_the_same_values():
    # affine.LISTS (the page's setting) reads each weight row from a list; rows that share one
    # buffer (weight_at, as the record reader packs them) read at their offsets: both exactly equal
    # the per-row arrays, and all match ember
    from ember.micro import affine
    T.use(T.Arena())
    n, c, h, w, oc = 2, 4, 6, 5, 6
    # every third input an exact zero (the conv skips zeros, as ReLU makes them)
    x = [0.0 if i % 3 == 0 else v - 0.5 for i, v in enumerate(_values(n * c * h * w, 7))]
    wt = [v - 0.5 for v in _values(oc * 2 * 3 * 3, 8)]
    b = _values(oc, 9)
    wl = _values(3 * c * h * w, 10)
    ref = F.conv2d(ember.tensor(x).reshape(n, c, h, w), ember.tensor(wt).reshape(oc, 2, 3, 3), ember.tensor(b),
                   padding=1, groups=2).tolist()
    got = []
    for lists in (False, True):
        for shared in (False, True):
            conv = Conv2d(c, oc, 3, padding=1, groups=2)
            conv.weight, conv.bias = _rows("f", wt, oc), array("f", b)
            if shared:
                buf = array("f", wt)
                conv.weight, conv.weight_at = [buf] * oc, [o * 18 for o in range(oc)]
            affine.LISTS = lists
            try:
                got.append(conv(_micro(x, (n, c, h, w))).tolist())
                fc = Linear(c * h * w, 3)
                fc.weight, fc.bias = _rows("f", wl, 3), array("f", [0.5, -0.5, 0.0])
                got.append(fc(_micro(x, (n, c * h * w))).tolist())
            finally:
                affine.LISTS = False
    assert_close(got[0], ref, rtol=1e-5, atol=1e-5)
    ref_fc = F.linear(ember.tensor(x).reshape(n, c * h * w), ember.tensor(wl).reshape(3, c * h * w),
                      ember.tensor([0.5, -0.5, 0.0])).tolist()
    assert_close(got[1], ref_fc, rtol=1e-5, atol=1e-5)
    for i in range(2, len(got)):
        assert_true(got[i] == got[i % 2], "variant %d differs from the per-row arrays" % i)
