"""The composed math (ember/special.py) and the new activations: results that are host values
(allclose), type names, and a clear ember error for each bad input."""
import ember
import ember.nn.functional as nnf
import ember.special
from ember.nn import activation as act
from harness import check

PARAMETERS = ("device",)

NAN = float("nan")


def test_allclose_is_a_python_bool(device):
    a = ember.tensor([1.0, 2.0, NAN], device=device)
    b = ember.tensor([1.0, 2.000001, NAN], device=device)
    assert ember.allclose(a, b, equal_nan=True) is True
    assert a.allclose(b) is False
    assert a[:2].allclose(b[:2], rtol=0.0, atol=0.0) is False


def _bad_math(d):
    x = ember.ones(2, 3, device=d)
    i = ember.ones(2, 3, dtype=ember.int64, device=d)
    return [
        ("DTypeError", "lshift:", lambda: x.bitwise_left_shift(1)),
        ("DTypeError", "rshift:", lambda: ember.bitwise_right_shift(i, x)),
        ("ShapeError", "fmod:", lambda: x.fmod(ember.ones(4, device=d))),
        ("ShapeError", "logaddexp:", lambda: x.logaddexp(ember.ones(2, device=d))),
        ("ShapeError", "copysign:", lambda: x.copysign(ember.ones(5, device=d))),
        ("ShapeError", "lerp:", lambda: x.lerp(ember.ones(4, device=d), 0.5)),
        ("DTypeError", "lerp:", lambda: x.lerp(i, 0.5)),
        ("ArgumentTypeError", "lerp:", lambda: x.lerp(x, "a")),
        ("DTypeError", "fmod:", lambda: ember.ones(2, dtype=ember.bool, device=d).fmod(True)),
        ("ArgumentError", "isclose:", lambda: x.isclose(x, rtol=-1.0)),
        ("ArgumentTypeError", "isclose:", lambda: x.isclose("a")),
        ("ArgumentTypeError", "asinh:", lambda: ember.asinh([1.0])),
        ("ArgumentTypeError", "acosh:", lambda: ember.special.acosh(2.0)),
        ("ArgumentTypeError", "atanh:", lambda: ember.special.atanh(None)),
        ("ArgumentTypeError", "log2:", lambda: ember.special.log2("x")),
        ("ArgumentTypeError", "log10:", lambda: ember.special.log10([1])),
        ("ArgumentTypeError", "exp2:", lambda: ember.special.exp2(1.0)),
        ("ShapeError", "logaddexp2:", lambda: x.logaddexp2(ember.ones(3, 2, device=d))),
        ("ArgumentTypeError", "copysign:", lambda: ember.special.copysign(1.0, x)),
        ("ArgumentTypeError", "fmod:", lambda: ember.special.fmod(1.0, x)),
        ("DTypeError", "lshift:", lambda: ember.ones(2, dtype=ember.uint8, device=d) << 1.5),
        ("DTypeError", "and:", lambda: ember.ones(2, dtype=ember.uint8, device=d) & x[0, :2]),
    ]


def test_bad_math_inputs_raise_ember_errors(device):
    for kind, prefix, fn in _bad_math(device):
        with check.raises(getattr(ember, kind), prefix) as caught:
            fn()
        check.assert_true(str(caught.value).startswith(prefix), "%s: message %r" % (prefix, str(caught.value)))


def test_type_names(device):
    names = [(ember.float32, "FloatTensor"), (ember.float64, "DoubleTensor"), (ember.float16, "HalfTensor"),
             (ember.bfloat16, "BFloat16Tensor"), (ember.int8, "CharTensor"), (ember.uint8, "ByteTensor"),
             (ember.int32, "IntTensor"), (ember.int64, "LongTensor"), (ember.bool, "BoolTensor")]
    for dtype, name in names:
        x = ember.zeros(2, dtype=dtype, device=device)
        check.assert_true(x.type() == "ember." + name, "%s: %r" % (dtype, x.type()))
        check.assert_true(x.type("torch." + name).dtype is dtype, name)
    check.assert_true(ember.ones(2, device=device).type(ember.float32).dtype is ember.float32)


def _bad_activations(d):
    x = ember.ones(2, 3, device=d)
    return [
        ("ArgumentError", "hardtanh:", lambda: nnf.hardtanh(x, 2.0, 1.0)),
        ("ArgumentError", "Hardtanh:", lambda: act.Hardtanh(1.0, 0.0)),
        ("ArgumentError", "celu:", lambda: nnf.celu(x, 0.0)),
        ("ArgumentError", "CELU:", lambda: act.CELU(0.0)),
        ("ArgumentError", "normalize:", lambda: nnf.normalize(x, p=0)),
        ("IndexOutOfRange", "normalize:", lambda: nnf.normalize(x, dim=2)),
        ("IndexOutOfRange", "softmin:", lambda: nnf.softmin(x, 3)),
        ("ArgumentTypeError", "softsign:", lambda: nnf.softsign([1.0])),
        ("ArgumentTypeError", "logsigmoid:", lambda: nnf.logsigmoid(2.0)),
        ("ArgumentTypeError", "selu:", lambda: nnf.selu([1.0])),
        ("ArgumentTypeError", "relu6:", lambda: nnf.relu6(1.0)),
        ("ArgumentTypeError", "hardtanh:", lambda: nnf.hardtanh(1.0)),
        ("DTypeError", "softmax:", lambda: nnf.softmax(x, 0, dtype="complex64")),
        ("DTypeError", "log_softmax:", lambda: x.log_softmax(0, dtype="float128")),
        ("DTypeError", "type:", lambda: x.type("torch.ShortTensor")),
        ("DTypeError", "type:", lambda: x.type("complex")),
    ]


def test_bad_activation_inputs_raise_ember_errors(device):
    for kind, prefix, fn in _bad_activations(device):
        with check.raises(getattr(ember, kind), prefix) as caught:
            fn()
        check.assert_true(str(caught.value).startswith(prefix), "%s: message %r" % (prefix, str(caught.value)))


def test_pow_overflow_is_inf_on_every_interpreter(device):
    # MicroPython's math.pow calls an overflow a domain error; exp2 of a large input meets it
    x = ember.tensor([-2.0, 0.5, -1.0, 1.0, 2.0, -3.0], dtype=ember.float64, device=device)
    check.assert_equal(x ** 1e20, [float("inf"), 0.0, 1.0, 1.0, float("inf"), float("inf")])
    check.assert_equal(x ** -1e20, [0.0, float("inf"), 1.0, 1.0, 0.0, 0.0])
    check.assert_equal(ember.tensor([1e20, -1e20], device=device).exp2(), [float("inf"), 0.0])


def test_uint8_promotes_as_pytorch_does(device):
    # torch.promote_types(torch.uint8, x) for each x; int8 gives int16 in PyTorch, which ember lacks
    u = ember.uint8
    want = [(ember.bool, u), (ember.uint8, u), (ember.int8, ember.int32), (ember.int32, ember.int32),
            (ember.int64, ember.int64), (ember.float16, ember.float16), (ember.bfloat16, ember.bfloat16),
            (ember.float32, ember.float32), (ember.float64, ember.float64)]
    x = ember.ones(2, dtype=u, device=device)
    for other, result in want:
        y = ember.ones(2, dtype=other, device=device)
        check.assert_true((x + y).dtype is result and (y + x).dtype is result, "%s + %s" % (u, other))
    check.assert_true((x + 255).dtype is u and (x + 255).tolist() == [0, 0])  # results wrap
    with check.raises(ember.ArgumentError, "add: the Python int 300 does not fit uint8"):
        x + 300  # §3: a Python int the dtype cannot hold is refused (PyTorch wraps it: 45)
    check.assert_true((x * 2.5).dtype is ember.float32 and (x > 0).dtype is ember.bool)
    check.assert_true(ember.tensor([1, 2], dtype="uint8", device=device).dtype is u)
    check.assert_true(repr(x).endswith("dtype=uint8, device=%r)" % (device,)), repr(x))


def test_activation_configs_build_their_modules(device):
    x = ember.tensor([[-7.0, -0.5, 0.0, 0.5, 7.0]], device=device)
    for cfg, cls, fn in ((act.SoftsignConfig(), act.Softsign, nnf.softsign), (act.SELUConfig(), act.SELU, nnf.selu),
                         (act.ReLU6Config(), act.ReLU6, nnf.relu6), (act.LogSigmoidConfig(), act.LogSigmoid, nnf.logsigmoid),
                         (act.CELUConfig(0.5), act.CELU, lambda t: nnf.celu(t, 0.5)),
                         (act.HardtanhConfig(-2.0, 3.0), act.Hardtanh, lambda t: nnf.hardtanh(t, -2.0, 3.0)),
                         (act.SoftminConfig(0), act.Softmin, lambda t: nnf.softmin(t, 0))):
        m = cfg.init(device)
        check.assert_true(type(m) is cls, "%r built %s" % (cfg, type(m).__name__))
        check.assert_equal(m(x), fn(x), repr(cfg))
    check.assert_true(repr(act.Hardtanh(-2.0, 3.0)) == "Hardtanh(min_val=-2.0, max_val=3.0)", repr(act.Hardtanh(-2.0, 3.0)))


def test_the_new_activations_are_reachable_from_ember_nn(device):
    import ember.nn as nn
    x = ember.tensor([[-7.0, 0.5, 7.0]], device=device)
    for name in ("Softsign", "SELU", "ReLU6", "LogSigmoid", "CELU", "Hardtanh", "Softmin"):
        check.assert_true(getattr(nn, name) is getattr(act, name), name)
        check.assert_true(getattr(nn, name + "Config") is getattr(act, name + "Config"), name)
    check.assert_equal(nn.Hardtanh(-2.0, 3.0)(x), x.clamp(-2.0, 3.0))
