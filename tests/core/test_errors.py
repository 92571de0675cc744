"""Errors are part of ember's API: the right class, a message naming the op and expected vs found.

Every check goes through ``expect``: the call must raise an ``EmberError`` of the given class whose
message contains each given fragment. Any other exception escapes and fails the test, because bad
input must never crash with a plain Python error.
"""
import ember
import ember.nn.functional as F
from ember import (ArgumentError, ArgumentTypeError, DeviceError, DTypeError, EmberError, IndexOutOfRange,
                   RecordError, ShapeError)
from harness.check import assert_equal, assert_true

PARAMETERS = ("device",)


def _name(kind):
    # on MicroPython EmberError is a tuple of the error classes (see errors.py)
    return "EmberError" if type(kind) is tuple else kind.__name__


def expect(kind, fn, *fragments):
    """``fn()`` raises ``kind`` (an EmberError) and its message contains every fragment."""
    try:
        fn()
    except EmberError as e:
        text = str(e)
        assert_true(isinstance(e, kind), "expected %s, found %s: %s" % (_name(kind), type(e).__name__, text))
        for f in fragments:
            assert_true(f in text, "%r is not in the %s message %r" % (f, type(e).__name__, text))
        return e
    raise AssertionError("expected %s, nothing was raised" % _name(kind))


class _Index:
    """``IX[:, 0]`` is the index ``x[:, 0]`` receives (MicroPython cannot call ``slice()``)."""

    def __getitem__(self, index):
        return index


IX = _Index()


def mat(device, rows=2, cols=3):
    """A float32 matrix 0, 1, 2, ... of shape (rows, cols)."""
    return ember.arange(rows * cols, dtype=ember.float32, device=device).reshape(rows, cols)


# -- the hierarchy --------------------------------------------------------------------------------

def test_every_error_is_an_ember_error_and_its_builtin(device):
    pairs = [(ShapeError, ValueError), (DTypeError, TypeError), (DeviceError, ValueError),
             (IndexOutOfRange, IndexError), (ArgumentError, ValueError), (ArgumentTypeError, TypeError),
             (RecordError, ValueError)]
    # on MicroPython EmberError is the tuple of the classes (see errors.py): issubclass takes both forms
    if type(EmberError) is not tuple:
        assert_true(issubclass(EmberError, Exception))
    for cls, builtin in pairs:
        assert_true(issubclass(cls, EmberError), "%s is not an EmberError" % cls.__name__)
        assert_true(issubclass(cls, builtin), "%s is not a %s" % (cls.__name__, builtin.__name__))
        assert_true(cls is getattr(ember, cls.__name__), "ember.%s is not exported" % cls.__name__)


def test_a_user_catches_errors_with_the_builtin_class(device):
    x = mat(device)
    caught = []
    try:
        x + ember.zeros(4, device=device)
    except ValueError:
        caught.append("shape")
    try:
        x[10]
    except IndexError:
        caught.append("index")
    try:
        x & x
    except TypeError:
        caught.append("dtype")
    assert_true(caught == ["shape", "index", "dtype"], "caught only %s" % caught)


# -- shapes -----------------------------------------------------------------------------------------

def test_broadcast_mismatch(device):
    x = mat(device)
    y = ember.zeros(4, device=device)
    expect(ShapeError, lambda: x + y, "add", "(2, 3)", "(4,)")
    expect(ShapeError, lambda: x * y, "mul", "(2, 3)", "(4,)")
    expect(ShapeError, lambda: y - x, "sub", "(4,)", "(2, 3)")
    expect(ShapeError, lambda: x < y, "lt", "(2, 3)", "(4,)")
    expect(ShapeError, lambda: ember.where(x > 0, x, y), "where", "(2, 3)", "(4,)")


def test_matmul_inner_dim_mismatch(device):
    a = mat(device, 2, 3)
    b = mat(device, 4, 5)
    expect(ShapeError, lambda: a @ b, "matmul", "(2, 3)", "(4, 5)")
    expect(ShapeError, lambda: ember.zeros(3, device=device) @ ember.zeros(4, device=device), "matmul", "(3,)", "(4,)")
    # batch dims that cannot broadcast
    expect(ShapeError, lambda: ember.zeros(2, 2, 3, device=device) @ ember.zeros(3, 3, 4, device=device),
           "matmul", "(2,)", "(3,)")


def test_matmul_on_zero_dim(device):
    s = ember.tensor(2.0, device=device)
    expect(ShapeError, lambda: s @ mat(device), "matmul", "()", "(2, 3)")
    expect(ShapeError, lambda: mat(device) @ s, "matmul", "()")


def test_matmul_on_bool(device):
    b = ember.tensor([[True, False]], device=device)
    expect(DTypeError, lambda: b @ b.transpose(0, 1), "matmul", "bool")


def test_matmul_on_a_non_tensor(device):
    expect(ArgumentTypeError, lambda: mat(device) @ [[1.0], [2.0], [3.0]], "matmul", "list")


def test_reshape_to_a_wrong_size(device):
    x = mat(device)
    expect(ShapeError, lambda: x.reshape(4, 2), "reshape", "(4, 2)", "(2, 3)")
    expect(ShapeError, lambda: x.reshape(-1, 4), "reshape", "(-1, 4)", "(2, 3)")
    expect(ShapeError, lambda: x.reshape(-2, -3), "reshape", "(-2, -3)")


def test_reshape_with_two_unknown_sizes(device):
    expect(ShapeError, lambda: mat(device).reshape(-1, -1), "reshape", "(-1, -1)")


def test_permute_repeated_or_missing_dims(device):
    x = mat(device)
    expect(ShapeError, lambda: x.permute(0, 0), "permute", "(0, 0)")
    expect(ShapeError, lambda: x.permute(0), "permute", "(0,)", "(2, 3)")
    expect(ShapeError, lambda: x.permute(0, 1, 2), "permute", "(0, 1, 2)")
    expect(IndexOutOfRange, lambda: x.permute(0, 2), "permute", "2")


def test_expand_to_an_incompatible_shape(device):
    expect(ShapeError, lambda: mat(device).expand(4, 3), "expand", "(2, 3)", "(4, 3)")


def test_dim_out_of_range(device):
    x = mat(device)
    expect(IndexOutOfRange, lambda: x.sum(dim=5), "sum", "5", "-2..1")
    expect(IndexOutOfRange, lambda: x.mean(dim=-3), "mean", "-3")
    expect(IndexOutOfRange, lambda: x.max(dim=2), "max", "2")
    expect(IndexOutOfRange, lambda: x.argmax(dim=2), "argmax", "2")
    expect(IndexOutOfRange, lambda: x.transpose(0, 2), "transpose", "2")
    expect(IndexOutOfRange, lambda: x.unsqueeze(4), "unsqueeze", "4")
    expect(IndexOutOfRange, lambda: ember.cat([x, x], dim=2), "cat", "2")
    expect(IndexOutOfRange, lambda: F.softmax(x, dim=3), "softmax", "3")
    expect(IndexOutOfRange, lambda: x.size(2), "size", "2")


def test_index_out_of_range(device):
    x = mat(device)
    expect(IndexOutOfRange, lambda: x[10], "index", "10", "2")
    expect(IndexOutOfRange, lambda: x[-3], "index", "-3", "2")
    expect(IndexOutOfRange, lambda: x[0, 3], "index", "3", "dim 1")
    expect(IndexOutOfRange, lambda: x.__setitem__(5, 1.0), "index", "5")


def test_too_many_indices(device):
    expect(IndexOutOfRange, lambda: mat(device)[0, 0, 0], "index", "3", "2")
    expect(IndexOutOfRange, lambda: ember.tensor(1.0, device=device)[0], "index", "1", "0")


def test_non_positive_slice_step(device):
    # Python's list, numpy and torch all raise ValueError for these steps
    x = mat(device)
    expect(ArgumentError, lambda: x[::0], "index", "0")
    expect(ArgumentError, lambda: x[::-1], "index", "-1")


def test_wrong_index_type(device):
    x = mat(device)
    expect(ArgumentTypeError, lambda: x["a"], "index", "str")
    expect(ArgumentTypeError, lambda: x[1.5], "index", "float")
    expect(ArgumentTypeError, lambda: x[0, "a"], "index", "str")


def test_float_tensor_as_an_index(device):
    x = mat(device)
    expect(DTypeError, lambda: x[ember.tensor(1.0, device=device)], "index", "float32")
    expect(DTypeError, lambda: x[ember.tensor([0.0, 1.0], device=device)], "index", "float32")


def test_ragged_nested_list(device):
    expect(ShapeError, lambda: ember.tensor([[1, 2], [3]], device=device), "tensor", "2", "1")
    expect(ShapeError, lambda: ember.tensor([[1, 2], 3], device=device), "tensor", "int")
    expect(ShapeError, lambda: ember.tensor([[[1], [2]], [[3], [4], [5]]], device=device), "tensor", "2", "3")
    # a list where a number was expected: ragged too, whichever error names it
    expect(EmberError, lambda: ember.tensor([1, [2, 3]], device=device), "tensor")


def test_non_number_element(device):
    expect(ArgumentTypeError, lambda: ember.tensor([1, "a"], device=device), "tensor", "str")
    expect(ArgumentTypeError, lambda: ember.tensor([[1.0], [None]], device=device), "tensor", "NoneType")
    expect(ArgumentTypeError, lambda: ember.tensor(object(), device=device), "tensor", "object")
    expect(ArgumentTypeError, lambda: ember.tensor({"a": 1}, device=device), "tensor", "dict")


def test_bytes_of_the_wrong_length(device):
    expect(ShapeError, lambda: ember.tensor(b"\x00" * 5, dtype=ember.float32, shape=(2,), device=device),
           "tensor", "5", "8", "(2,)", "float32")
    expect(ShapeError, lambda: ember.tensor(b"\x00" * 8, dtype=ember.int64, shape=(2, 1), device=device),
           "tensor", "8", "16", "(2, 1)", "int64")
    expect(ShapeError, lambda: ember.tensor(b"\x00" * 3, dtype=ember.float16, shape=(), device=device),
           "tensor", "3", "2", "float16")


def test_bytes_without_dtype_or_shape(device):
    expect(ArgumentError, lambda: ember.tensor(b"\x00" * 4, device=device), "tensor", "dtype", "shape")
    expect(ArgumentError, lambda: ember.tensor(b"\x00" * 4, dtype=ember.float32, device=device), "tensor", "shape")
    expect(ArgumentError, lambda: ember.tensor(b"\x00" * 4, shape=(1,), device=device), "tensor", "dtype")
    expect(ArgumentError, lambda: ember.tensor([1.0], shape=(1,), device=device), "tensor", "shape", "list")


def test_unknown_dtype_name(device):
    e = expect(DTypeError, lambda: ember.zeros(2, dtype="float128", device=device), "'float128'", "float32")
    assert_true("zeros" in str(e), "the message does not name the op: %r" % str(e))
    expect(DTypeError, lambda: mat(device).to("complex64"), "to", "'complex64'")
    expect(DTypeError, lambda: ember.tensor([1], dtype="uint16", device=device), "tensor", "'uint16'")


def test_logical_ops_on_floats(device):
    x = mat(device)
    expect(DTypeError, lambda: x & x, "and", "float32")
    expect(DTypeError, lambda: x | 1, "or", "float32")
    expect(DTypeError, lambda: x ^ ember.ones(3, dtype=ember.bool_, device=device), "xor", "float32")
    expect(DTypeError, lambda: ~x, "float32")


def test_arithmetic_with_a_non_number(device):
    x = mat(device)
    expect(DTypeError, lambda: x + "a", "add", "str")
    expect(DTypeError, lambda: None * x, "mul", "NoneType")


# -- joining ------------------------------------------------------------------------------------------

def test_cat_of_mismatched_shapes(device):
    x = mat(device)
    expect(ShapeError, lambda: ember.cat([x, ember.zeros(2, 2, device=device)], dim=0), "cat", "(2, 2)", "(2, 3)")
    expect(ShapeError, lambda: ember.cat([x, ember.zeros(3, device=device)]), "cat", "(3,)", "(2, 3)")


def test_cat_of_an_empty_list(device):
    # numpy raises ValueError for an empty list: the type is right, the value is not
    expect(ArgumentError, lambda: ember.cat([]), "cat", "empty")


def test_cat_of_zero_dim_tensors(device):
    s = ember.tensor(1.0, device=device)
    expect(ShapeError, lambda: ember.cat([s, s]), "cat")


def test_stack_of_mismatched_shapes(device):
    x = mat(device)
    expect(ShapeError, lambda: ember.stack([x, ember.zeros(3, 2, device=device)]), "stack", "(3, 2)", "(2, 3)")


def test_cat_and_stack_of_non_tensors(device):
    x = mat(device)
    expect(ArgumentTypeError, lambda: ember.cat([x, 1]), "cat", "int")
    expect(ArgumentTypeError, lambda: ember.cat([1, x]), "cat", "int")
    expect(ArgumentTypeError, lambda: ember.stack([x, [1.0]]), "stack", "list")


# -- convolution and pooling --------------------------------------------------------------------------

def test_conv2d_channel_mismatch(device):
    x = ember.zeros(1, 3, 5, 5, device=device)
    w = ember.zeros(2, 2, 3, 3, device=device)
    expect(ShapeError, lambda: F.conv2d(x, w), "conv2d", "2", "3")


def test_conv2d_groups_mismatch(device):
    x = ember.zeros(1, 4, 5, 5, device=device)
    expect(ShapeError, lambda: F.conv2d(x, ember.zeros(3, 2, 3, 3, device=device), groups=2), "conv2d", "3", "groups=2")
    expect(ShapeError, lambda: F.conv2d(x, ember.zeros(4, 1, 3, 3, device=device), groups=2), "conv2d", "4")
    expect(ArgumentError, lambda: F.conv2d(x, ember.zeros(4, 4, 3, 3, device=device), groups=0), "conv2d", "groups")


def test_conv_wrong_input_rank(device):
    w = ember.zeros(2, 3, 3, 3, device=device)
    expect(ShapeError, lambda: F.conv2d(ember.zeros(3, 5, 5, device=device), w), "conv2d", "(3, 5, 5)")
    expect(ShapeError, lambda: F.conv2d(ember.zeros(1, 3, 5, 5, device=device), ember.zeros(2, 3, 3, device=device)),
           "conv2d", "(2, 3, 3)")
    expect(ShapeError, lambda: F.conv1d(ember.zeros(1, 1, 5, 5, device=device), ember.zeros(1, 1, 3, device=device)),
           "conv1d", "(1, 1, 5, 5)")
    expect(ShapeError, lambda: F.max_pool2d(ember.zeros(4, 4, device=device), 2), "max_pool2d", "(4, 4)")


def test_kernel_larger_than_input(device):
    x = ember.zeros(1, 1, 2, 2, device=device)
    expect(ShapeError, lambda: F.conv2d(x, ember.zeros(1, 1, 3, 3, device=device)), "conv2d", "(1, 1, 2, 2)", "(3, 3)")
    expect(ShapeError, lambda: F.max_pool2d(x, 3), "max_pool2d", "(1, 1, 2, 2)", "(3, 3)")


def test_bad_padding_string(device):
    x = ember.zeros(1, 1, 5, 5, device=device)
    w = ember.zeros(1, 1, 3, 3, device=device)
    # torch: ValueError "Invalid padding string 'full', should be one of {'valid', 'same'}"
    expect(ArgumentError, lambda: F.conv2d(x, w, padding="full"), "conv2d", "'full'", "same")
    expect(ArgumentError, lambda: F.conv2d(x, w, padding="same", stride=2), "conv2d", "same", "stride")


def test_negative_padding_and_zero_stride(device):
    x = ember.zeros(1, 1, 5, 5, device=device)
    w = ember.zeros(1, 1, 3, 3, device=device)
    expect(ArgumentError, lambda: F.conv2d(x, w, padding=-1), "conv2d", "padding", "-1")
    expect(ArgumentError, lambda: F.conv2d(x, w, stride=0), "conv2d", "stride", "0")
    expect(ArgumentError, lambda: F.conv2d(x, w, dilation=(1, 0)), "conv2d", "dilation", "0")
    expect(ArgumentError, lambda: F.max_pool2d(x, 2, stride=0), "max_pool2d", "stride", "0")
    expect(ArgumentTypeError, lambda: F.conv2d(x, w, stride=(1, 1, 1)), "conv2d", "stride", "(1, 1, 1)")


def test_pooling_padding_above_half_the_kernel(device):
    x = ember.zeros(1, 1, 5, 5, device=device)
    expect(ArgumentError, lambda: F.max_pool2d(x, 2, padding=2), "max_pool2d", "padding", "(2, 2)")
    expect(ArgumentError, lambda: F.avg_pool2d(x, 3, padding=2), "avg_pool2d", "padding", "(3, 3)")
    expect(ArgumentError, lambda: F.max_pool1d(ember.zeros(1, 1, 5, device=device), 3, padding=-1), "max_pool1d", "-1")


def test_conv_bias_of_the_wrong_shape(device):
    x = ember.zeros(1, 1, 5, 5, device=device)
    w = ember.zeros(2, 1, 3, 3, device=device)
    expect(ShapeError, lambda: F.conv2d(x, w, bias=ember.zeros(3, device=device)), "conv2d", "(2,)", "(3,)")


# -- reductions and reading --------------------------------------------------------------------------

def test_max_over_an_empty_dim(device):
    x = ember.zeros(2, 0, device=device)
    expect(ShapeError, lambda: x.max(dim=1), "max", "0", "(2, 0)")
    expect(ShapeError, lambda: x.min(dim=1), "min", "(2, 0)")
    expect(ShapeError, lambda: x.argmax(dim=1), "argmax", "(2, 0)")
    expect(ShapeError, lambda: ember.zeros(0, device=device).max(), "max", "(0,)")
    expect(ShapeError, lambda: ember.zeros(0, device=device).argmin(), "argmin", "(0,)")


def test_item_of_many_elements(device):
    expect(ShapeError, lambda: mat(device).item(), "item", "(2, 3)")
    expect(ShapeError, lambda: ember.zeros(0, device=device).item(), "item", "(0,)")


def test_bool_of_many_elements(device):
    expect(ShapeError, lambda: bool(mat(device)), "bool", "6")
    expect(ShapeError, lambda: bool(ember.zeros(0, device=device)), "bool", "0")


def test_len_of_zero_dim(device):
    expect(ArgumentTypeError, lambda: len(ember.tensor(1.0, device=device)), "len")


# -- creation ---------------------------------------------------------------------------------------

def test_arange_step_zero(device):
    expect(ArgumentError, lambda: ember.arange(0, 5, 0, device=device), "arange", "step", "0")
    expect(ArgumentError, lambda: ember.arange(0.0, 1.0, 0.0, device=device), "arange", "step")
    expect(ArgumentTypeError, lambda: ember.arange("5", device=device), "arange", "str")


def test_rand_with_an_int_dtype(device):
    # errors.py: DTypeError is "a dtype an op does not accept"
    expect(DTypeError, lambda: ember.rand(2, dtype=ember.int32, device=device), "rand", "int32")
    expect(DTypeError, lambda: ember.randn(2, dtype="bool", device=device), "randn", "bool")


def test_negative_or_non_int_sizes(device):
    expect(ShapeError, lambda: ember.zeros(2, -1, device=device), "zeros", "(2, -1)")
    expect(ArgumentTypeError, lambda: ember.ones(2.0, device=device), "ones", "float")
    expect(ArgumentTypeError, lambda: mat(device).reshape(2.0, 3), "reshape", "float")


def test_set_default_device_with_a_non_device(device):
    before = ember.default_device()
    try:
        expect(ArgumentTypeError, lambda: ember.set_default_device("cpu"), "set_default_device", "'cpu'")
        expect(ArgumentTypeError, lambda: ember.set_default_device(None), "set_default_device", "None")
        assert_true(ember.default_device() is before, "a refused device still replaced the default")
    finally:
        if ember.default_device() is not before:
            ember.set_default_device(before)


def test_creation_with_a_non_device(device):
    e = expect(ArgumentTypeError, lambda: ember.zeros(2, device=3), "found 3")
    assert_true("zeros" in str(e), "the message does not name the op: %r" % str(e))
    e = expect(ember.DeviceError, lambda: ember.zeros(2, device="tpu"), "'tpu'", "cpu, numpy")  # names: device.named
    assert_true("zeros" in str(e), "the message does not name the op: %r" % str(e))


def test_override_of_an_unknown_op(device):
    expect(ArgumentError, lambda: ember.Cpu.override("nope", lambda x: x), "override", "'nope'", "gelu")
    expect(ArgumentError, lambda: ember.Backend.override("matmul", None), "override", "'matmul'")


# -- devices ----------------------------------------------------------------------------------------

class OtherCpu(ember.Cpu):
    """A second device: computes like Cpu, but its key differs, so it never meets Cpu in one op."""

    name = "OtherCpu"


def test_device_mismatch_names_both_devices(device):
    other = OtherCpu()
    assert_true(other != device and device != other, "the fake device compares equal to %r" % (device,))
    a = ember.ones(2, 2, device=device)
    b = ember.ones(2, 2, device=other)
    mine, theirs = repr(device), repr(other)
    expect(DeviceError, lambda: a + b, "add", mine, theirs)
    expect(DeviceError, lambda: b * a, "mul", mine, theirs)
    expect(DeviceError, lambda: a @ b, "matmul", mine, theirs)
    expect(DeviceError, lambda: a == b, "eq", mine, theirs)
    expect(DeviceError, lambda: ember.cat([a, b]), "cat", mine, theirs)
    expect(DeviceError, lambda: ember.stack([b, a]), "stack", mine, theirs)
    expect(DeviceError, lambda: ember.where(a > 0, a, b), "where", mine, theirs)
    expect(DeviceError, lambda: a.__setitem__(0, b[0]), "setitem", mine, theirs)
    expect(DeviceError, lambda: F.linear(a, b), "matmul", mine, theirs)
    expect(DeviceError, lambda: F.conv1d(a.reshape(1, 1, 4), b.reshape(1, 1, 4)), "conv1d", mine, theirs)


def test_moving_to_the_other_device_makes_ops_meet(device):
    other = OtherCpu()
    b = ember.tensor([1.0, 2.0], device=other)
    a = ember.tensor([3.0, 4.0], device=device)
    assert_equal((a + b.to(device)).tolist(), [4.0, 6.0])
    assert_true((a.to(other) + b).device == other)


# -- setitem ----------------------------------------------------------------------------------------

def test_setitem_value_that_does_not_fit(device):
    x = mat(device)
    expect(ShapeError, lambda: x.__setitem__(0, ember.zeros(4, device=device)), "setitem", "(4,)")
    expect(ShapeError, lambda: x.__setitem__(IX[:, 0], ember.zeros(3, device=device)), "setitem", "(3,)")
    expect(ShapeError, lambda: x.__setitem__(0, ember.zeros(2, 3, device=device)), "setitem", "(2, 3)")
    assert_equal(x.tolist(), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])  # a refused setitem changes nothing


def test_setitem_value_with_more_dims_than_the_region(device):
    # x[:, 0] has shape (2,); numpy and torch refuse a (2, 1) value for it
    x = mat(device)
    expect(ShapeError, lambda: x.__setitem__(IX[:, 0], ember.zeros(2, 1, device=device)), "setitem", "(2, 1)")


def test_setitem_with_a_non_number(device):
    x = mat(device)
    expect(ArgumentTypeError, lambda: x.__setitem__(0, "a"), "setitem", "str")
    expect(ArgumentTypeError, lambda: x.__setitem__(0, None), "setitem", "NoneType")
    expect(ArgumentTypeError, lambda: x.__setitem__(0, [1.0, "a", 3.0]), "setitem")
    assert_equal(x.tolist(), [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]])


# -- no plain Python error leaks out -----------------------------------------------------------------

def test_bad_arguments_raise_ember_errors_only(device):
    x = mat(device)
    g = ember.Generator(0)
    calls = [
        ("sum(dim=1.5)", lambda: x.sum(dim=1.5)),
        ("mean(dim='a')", lambda: x.mean(dim="a")),
        ("x['a':]", lambda: x["a":]),
        ("x[::'a']", lambda: x[::"a"]),
        ("arange(nan)", lambda: ember.arange(float("nan"), device=device)),
        ("arange(0, inf)", lambda: ember.arange(0.0, float("inf"), device=device)),
        ("randn(generator='a')", lambda: ember.randn(2, generator="a", device=device)),
        ("rand(generator=1)", lambda: ember.rand(2, generator=1, device=device)),
        ("cat([1, x])", lambda: ember.cat([1, x])),
        ("cat(x)", lambda: ember.cat(x)),
        ("set_state([1])", lambda: (g.set_state([1]), g.next_u32())),
        ("Generator(1.5)", lambda: ember.Generator(1.5)),
        ("full((2,), 'a')", lambda: ember.full((2,), "a", device=device)),
        ("tensor(range(3))", lambda: ember.tensor(range(3), device=device)),
        ("x.to(3)", lambda: x.to(3)),
        ("x.expand('a')", lambda: x.expand("a")),
        ("F.gelu(x, approximate='x')", lambda: F.gelu(x, approximate="x")),
        ("F.softmax([1.0])", lambda: F.softmax([1.0])),
        ("F.relu('a')", lambda: F.relu("a")),
        ("F.gelu(None)", lambda: F.gelu(None)),
        ("F.linear(x, 'a')", lambda: F.linear(x, "a")),
        ("Generator.randint(0, 'a')", lambda: g.randint(0, "a")),
        ("Generator.randint(0, 2.5)", lambda: g.randint(0, 2.5)),  # returns a float today
        ("Cpu.override([0], None)", lambda: ember.Cpu.override([0], None)),
    ]
    leaks = []
    for name, fn in calls:
        try:
            fn()
            leaks.append("%s: nothing raised" % name)
        except EmberError:
            pass
        except Exception as e:  # noqa: B902 - what this test looks for
            leaks.append("%s: %s: %s" % (name, type(e).__name__, e))
    assert_true(not leaks, "bad input escaped as a plain Python error:\n  " + "\n  ".join(leaks))
