"""PyTorch's top-level forms (``ember.abs(x)``, ``ember.add(a, b, alpha=2)``, ``ember.max(a, b)``):
each gives what its Tensor method gives, and ``import ember`` loads them only on first use."""
import ember
from harness.check import assert_equal, assert_true, raises

PARAMETERS = ("device",)


def test_unary_forms_match_their_methods(device):
    x = ember.tensor([[-1.5, 0.25, 2.0], [3.0, -0.5, 0.75]], device=device)
    for name in ("abs", "neg", "exp", "log1p", "sin", "cos", "tanh", "sigmoid", "floor", "ceil", "round",
                 "trunc", "sign", "erf", "atan", "asinh", "exp2", "isnan", "isinf", "logical_not", "clone"):
        assert_equal(getattr(ember, name)(x), getattr(x, name)(), name)
    p = x.abs() + 1
    for name in ("log", "sqrt", "rsqrt", "reciprocal", "log2", "log10", "acosh"):
        assert_equal(getattr(ember, name)(p), getattr(p, name)(), name)


def test_binary_and_argument_forms(device):
    a = ember.tensor([[1.0, -2.0, 3.0], [4.0, 5.0, -6.0]], device=device)
    b = ember.tensor([2.0, 2.0, -1.0], device=device)
    assert_equal(ember.add(a, b), a + b)
    assert_equal(ember.add(a, b, alpha=3), a + b * 3)
    assert_equal(ember.sub(a, 1.0, alpha=2), a - 2.0)
    assert_equal(ember.mul(a, b), a * b)
    assert_equal(ember.div(a, b), a / b)
    assert_equal(ember.pow(a, 2), a ** 2)
    assert_equal(ember.pow(2, a), 2 ** a)
    assert_equal(ember.maximum(a, b), a.maximum(b))
    assert_equal(ember.max(a, b), a.maximum(b))
    assert_equal(ember.min(a, b), a.minimum(b))
    assert_equal(ember.max(a), a.max())
    assert_equal(ember.max(a, 1).values, a.max(1).values)
    assert_equal(ember.max(a, dim=0, keepdim=True).indices, a.max(0, keepdim=True).indices)
    assert_equal(ember.sum(a, 1), a.sum(1))
    assert_equal(ember.mean(a, (0, 1)), a.mean((0, 1)))
    assert_equal(ember.std(a, 0), a.std(0))
    assert_equal(ember.argmax(a, 1), a.argmax(1))
    assert_equal(ember.all(a > -10), ember.tensor(True, device=device))
    assert_equal(ember.eq(a, b), a == b)
    assert_equal(ember.remainder(a, b), a % b)
    assert_equal(ember.fmod(a, b), a.fmod(b))
    assert_equal(ember.flatten(a), a.reshape(6))
    assert_equal(ember.reshape(a, (3, 2)), a.reshape(3, 2))
    assert_equal(ember.transpose(a, 0, 1), a.T)
    assert_equal(ember.permute(a, (1, 0)), a.T)
    assert_equal(ember.unsqueeze(b, 0), b.reshape(1, 3))
    assert_equal(ember.squeeze(ember.unsqueeze(b, 0)), b)
    assert_equal(ember.cummax(a, 1).values, a.cummax(1).values)
    assert_equal(ember.cummin(a, 1).indices, a.cummin(1).indices)
    assert_equal(ember.clip(a, -1.0, 1.0), a.clamp(-1.0, 1.0))
    assert_equal(ember.softmax(a, 1), a.softmax(1))
    assert_equal(ember.log_softmax(a, 0), a.log_softmax(0))
    assert_true(ember.numel(a) == 6)
    assert_true(ember.allclose(a, a + 1e-9))
    i = ember.tensor([1, 2, 3], device=device)
    assert_equal(ember.bitwise_left_shift(i, 2), i << 2)
    assert_equal(ember.bitwise_and(i, 6), i & 6)
    assert_equal(ember.logical_and(i, i > 1), ember.tensor([False, True, True], device=device))


def test_dtype_aliases_are_pytorchs(device):
    assert_true(ember.float is ember.float32 and ember.double is ember.float64 and ember.half is ember.float16)
    assert_true(ember.int is ember.int32 and ember.long is ember.int64 and ember.bool is ember.bool_)


def test_a_form_given_no_tensor_or_an_unknown_name_raises(device):
    with raises(ember.ArgumentTypeError, "abs: expected a tensor"):
        ember.abs([1.0])
    with raises(AttributeError, "no_such_op"):
        ember.no_such_op
