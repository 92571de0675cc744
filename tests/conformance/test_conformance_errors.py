"""Errors are part of the API: each bad call raises ember's error class (also the builtin a Python
user would catch), with a message that starts with the op's name."""
import sys

import ember
import ember.nn.functional as nnf
from harness import check

PARAMETERS = ("device", "case")

# the builtin each error class also is (docs/architecture.md, section 6)
BUILTIN = {
    "ShapeError": ValueError, "DTypeError": TypeError, "DeviceError": ValueError,
    "IndexOutOfRange": IndexError, "ArgumentError": ValueError, "ArgumentTypeError": TypeError,
}


class ErrorCase:
    def __init__(self, name, kind, prefix, fn):
        self.name = name
        self.kind = kind  # the name of an ember error class
        self.prefix = prefix  # what the message starts with
        self.fn = fn  # fn(device) makes the bad call

    def __repr__(self):
        return "ErrorCase(%s)" % self.name


def ones(device, *shape, **kw):
    return ember.ones(*shape, device=device, **kw)


def conv1d(x_shape, w_shape, **kw):
    return lambda d: nnf.conv1d(ones(d, *x_shape), ones(d, *w_shape), **kw)


CASES = [
    ErrorCase("add.broadcast", "ShapeError", "add:", lambda d: ones(d, 2, 3) + ones(d, 4)),
    ErrorCase("mul.broadcast_3d", "ShapeError", "mul:", lambda d: ones(d, 2, 3, 1) * ones(d, 2, 4, 1)),
    ErrorCase("add.str", "DTypeError", "add:", lambda d: ones(d, 2) + "a"),
    ErrorCase("and.float", "DTypeError", "and:", lambda d: ones(d, 2) & ones(d, 2)),
    ErrorCase("where.int_condition", "DTypeError", "where:", lambda d: ember.where(1, ones(d, 2), ones(d, 2))),
    ErrorCase("where.broadcast", "ShapeError", "where:",
              lambda d: ember.where(ones(d, 2, 3, dtype=ember.bool), ones(d, 4), ones(d, 2, 3))),
    ErrorCase("matmul.inner", "ShapeError", "matmul:", lambda d: ones(d, 2, 3) @ ones(d, 4, 5)),
    ErrorCase("matmul.0d", "ShapeError", "matmul:", lambda d: ones(d) @ ones(d, 2)),
    ErrorCase("matmul.batch", "ShapeError", "matmul:", lambda d: ones(d, 2, 2, 3) @ ones(d, 3, 3, 2)),
    ErrorCase("matmul.bool", "DTypeError", "matmul:",
              lambda d: ones(d, 2, 2, dtype=ember.bool) @ ones(d, 2, 2, dtype=ember.bool)),
    ErrorCase("matmul.scalar", "ArgumentTypeError", "matmul:", lambda d: ones(d, 2) @ 2),
    ErrorCase("reshape.count", "ShapeError", "reshape:", lambda d: ones(d, 2, 3).reshape(4)),
    ErrorCase("reshape.two_free", "ShapeError", "reshape:", lambda d: ones(d, 2, 3).reshape(-1, -1)),
    ErrorCase("reshape.infer", "ShapeError", "reshape:", lambda d: ones(d, 2, 3).reshape(4, -1)),
    ErrorCase("permute.repeat", "ShapeError", "permute:", lambda d: ones(d, 2, 3).permute(0, 0)),
    ErrorCase("permute.count", "ShapeError", "permute:", lambda d: ones(d, 2, 3).permute(0)),
    ErrorCase("transpose.dim", "IndexOutOfRange", "transpose:", lambda d: ones(d, 2, 3).transpose(0, 2)),
    ErrorCase("expand.size", "ShapeError", "expand:", lambda d: ones(d, 2, 3).expand(3, 3)),
    ErrorCase("expand.fewer", "ShapeError", "expand:", lambda d: ones(d, 2, 3).expand(3)),
    ErrorCase("flatten.order", "ShapeError", "flatten:", lambda d: ones(d, 2, 3).flatten(1, 0)),
    ErrorCase("squeeze.dim", "IndexOutOfRange", "squeeze:", lambda d: ones(d, 2, 3).squeeze(2)),
    ErrorCase("unsqueeze.dim", "IndexOutOfRange", "unsqueeze:", lambda d: ones(d, 2, 3).unsqueeze(3)),
    ErrorCase("cat.shapes", "ShapeError", "cat:", lambda d: ember.cat([ones(d, 2, 3), ones(d, 2, 2)])),
    ErrorCase("cat.0d", "ShapeError", "cat:", lambda d: ember.cat([ones(d), ones(d)])),
    ErrorCase("cat.dim", "IndexOutOfRange", "cat:", lambda d: ember.cat([ones(d, 2), ones(d, 2)], 1)),
    ErrorCase("stack.shapes", "ShapeError", "stack:", lambda d: ember.stack([ones(d, 2, 3), ones(d, 3, 2)])),
    ErrorCase("getitem.range", "IndexOutOfRange", "index:", lambda d: ones(d, 2, 3)[2]),
    ErrorCase("getitem.negative_range", "IndexOutOfRange", "index:", lambda d: ones(d, 2, 3)[:, -4]),
    ErrorCase("getitem.too_many", "IndexOutOfRange", "index:", lambda d: ones(d, 2, 3)[0, 0, 0]),
    ErrorCase("getitem.two_ellipses", "IndexOutOfRange", "index:", lambda d: ones(d, 2, 3)[..., ...]),
    ErrorCase("getitem.0d_int", "IndexOutOfRange", "index:", lambda d: ones(d)[0]),
    ErrorCase("getitem.float", "ArgumentTypeError", "index:", lambda d: ones(d, 2, 3)[1.0]),
    ErrorCase("setitem.shape", "ShapeError", "setitem:", lambda d: ones(d, 2, 3).__setitem__(0, ones(d, 4))),
    ErrorCase("setitem.range", "IndexOutOfRange", "index:", lambda d: ones(d, 2, 3).__setitem__(5, 1.0)),
    ErrorCase("sum.dim", "IndexOutOfRange", "sum:", lambda d: ones(d, 2, 3).sum(2)),
    ErrorCase("mean.dim", "IndexOutOfRange", "mean:", lambda d: ones(d, 2, 3).mean(-3)),
    ErrorCase("max.empty", "ShapeError", "max:", lambda d: ones(d, 0, 3).max(0)),
    ErrorCase("max.empty_all", "ShapeError", "max:", lambda d: ones(d, 0).max()),
    ErrorCase("argmin.empty", "ShapeError", "argmin:", lambda d: ones(d, 0).argmin()),
    ErrorCase("item.many", "ShapeError", "item:", lambda d: ones(d, 2).item()),
    ErrorCase("bool.many", "ShapeError", "bool:", lambda d: bool(ones(d, 2))),
    ErrorCase("to.unknown", "DTypeError", "to:", lambda d: ones(d, 2).to("float128")),
    ErrorCase("zeros.negative", "ShapeError", "zeros:", lambda d: ember.zeros(-1, device=d)),
    ErrorCase("softmax.dim", "IndexOutOfRange", "softmax:", lambda d: nnf.softmax(ones(d, 2, 3), 2)),
    ErrorCase("gelu.approximate", "ArgumentError", "gelu:", lambda d: nnf.gelu(ones(d, 2), approximate="x")),
    ErrorCase("linear.shape", "ShapeError", "matmul:", lambda d: nnf.linear(ones(d, 2, 3), ones(d, 4, 4))),
    ErrorCase("conv1d.channels", "ShapeError", "conv1d:", conv1d((1, 2, 5), (1, 3, 2))),
    ErrorCase("conv1d.groups", "ShapeError", "conv1d:", conv1d((1, 3, 5), (2, 1, 2), groups=2)),
    ErrorCase("conv1d.same_stride", "ArgumentError", "conv1d:", conv1d((1, 1, 5), (1, 1, 2), stride=2, padding="same")),
    ErrorCase("conv1d.stride0", "ArgumentError", "conv1d:", conv1d((1, 1, 5), (1, 1, 2), stride=0)),
    ErrorCase("conv1d.small", "ShapeError", "conv1d:", conv1d((1, 1, 2), (1, 1, 3))),
    ErrorCase("conv1d.bias", "ShapeError", "conv1d:",
              lambda d: nnf.conv1d(ones(d, 1, 1, 5), ones(d, 2, 1, 2), ones(d, 3))),
    ErrorCase("conv2d.rank", "ShapeError", "conv2d:", lambda d: nnf.conv2d(ones(d, 1, 1, 5), ones(d, 1, 1, 2, 2))),
    ErrorCase("max_pool1d.padding", "ArgumentError", "max_pool1d:",
              lambda d: nnf.max_pool1d(ones(d, 1, 1, 5), 2, padding=2)),
    ErrorCase("max_pool1d.bool", "DTypeError", "max_pool1d:",
              lambda d: nnf.max_pool1d(ones(d, 1, 1, 5, dtype=ember.bool), 2)),
    ErrorCase("avg_pool2d.small", "ShapeError", "avg_pool2d:", lambda d: nnf.avg_pool2d(ones(d, 1, 1, 1, 1), 2)),
    # PyTorch's spellings and the errors it raises (issue 22)
    ErrorCase("avg_pool2d.int", "DTypeError", "avg_pool2d:",
              lambda d: nnf.avg_pool2d(ones(d, 1, 1, 4, 4, dtype=ember.int64), 2)),
    ErrorCase("avg_pool2d.divisor_zero", "ArgumentError", "avg_pool2d:",
              lambda d: nnf.avg_pool2d(ones(d, 1, 1, 4, 4), 2, divisor_override=0)),
    ErrorCase("max_pool2d.ceil_small", "ShapeError", "max_pool2d:",
              lambda d: nnf.max_pool2d(ones(d, 1, 1, 2, 2), 3, ceil_mode=True)),
    ErrorCase("cumsum.0d_dim1", "IndexOutOfRange", "cumsum:", lambda d: ones(d).cumsum(1)),
    ErrorCase("cumprod.0d_dim1", "IndexOutOfRange", "cumprod:", lambda d: ones(d).cumprod(1)),
    ErrorCase("cummax.0d_dim1", "IndexOutOfRange", "cummax:", lambda d: ones(d).cummax(1)),
    ErrorCase("cummin.0d_dim1", "IndexOutOfRange", "cummin:", lambda d: ones(d).cummin(1)),
    ErrorCase("cumsum.no_dim", "ArgumentTypeError", "cumsum:", lambda d: ones(d, 3).cumsum()),
    ErrorCase("squeeze.0d_dim1", "IndexOutOfRange", "squeeze:", lambda d: ones(d).squeeze(1)),
    ErrorCase("sort.0d_dim1", "IndexOutOfRange", "sort:", lambda d: ones(d).sort(1)),
    ErrorCase("sum.dim_and_axis", "ArgumentError", "sum:", lambda d: ones(d, 2, 3).sum(0, axis=1)),
    ErrorCase("sort.dim_and_axis", "ArgumentError", "sort:", lambda d: ones(d, 2, 3).sort(0, axis=1)),
    ErrorCase("cumsum.bool_dtype", "DTypeError", "cumsum:", lambda d: ones(d, 2).cumsum(0, dtype=ember.bool)),
    ErrorCase("mean.int_dtype", "DTypeError", "mean:", lambda d: ones(d, 2).mean(dtype=ember.int64)),
    ErrorCase("max.axis_tuple", "ArgumentTypeError", "max:", lambda d: ones(d, 2, 3).max(axis=(0, 1))),
    ErrorCase("scatter.src_dtype", "DTypeError", "scatter:",
              lambda d: ones(d, 3).half().scatter(0, ember.zeros(1, dtype=ember.int64, device=d), src=ones(d, 1))),
    ErrorCase("scatter_add.src_dtype", "DTypeError", "scatter:",
              lambda d: ones(d, 3).scatter_add(0, ember.zeros(1, dtype=ember.int64, device=d), ones(d, 1, dtype=ember.int32))),
    ErrorCase("scatter.reduce", "ArgumentError", "scatter:",
              lambda d: ones(d, 3).scatter(0, ember.zeros(1, dtype=ember.int64, device=d), ones(d, 1), reduce="max")),
    ErrorCase("scatter.src_and_value", "ArgumentTypeError", "scatter:",
              lambda d: ones(d, 3).scatter(0, ember.zeros(1, dtype=ember.int64, device=d), ones(d, 1), value=2.0)),
    ErrorCase("scatter.value_tensor", "ArgumentTypeError", "scatter:",
              lambda d: ones(d, 3).scatter(0, ember.zeros(1, dtype=ember.int64, device=d), value=ones(d, 1))),
    ErrorCase("scatter.multiply_range", "IndexOutOfRange", "scatter:",
              lambda d: ones(d, 3).scatter(0, ember.tensor([3], device=d), 2.0, reduce="multiply")),
    ErrorCase("linspace.bool", "DTypeError", "linspace:", lambda d: ember.linspace(0, 1, 3, dtype=ember.bool, device=d)),
    ErrorCase("div.rounding_mode", "ArgumentError", "div:", lambda d: ones(d, 2).div(2, rounding_mode="round")),
    ErrorCase("roll.flat_shifts", "ArgumentTypeError", "roll:", lambda d: ones(d, 2, 3).roll((1, 2))),
    ErrorCase("pad.circular_wraps", "ArgumentError", "pad:", lambda d: nnf.pad(ones(d, 1, 2, 3), (4, 0), mode="circular")),
    ErrorCase("pad.crop_too_much", "ArgumentError", "pad:", lambda d: nnf.pad(ones(d, 2, 3), (-2, -2))),
    ErrorCase("interpolate.4d_spatial", "ShapeError", "interpolate:",
              lambda d: nnf.interpolate(ones(d, 1, 1, 2, 2, 2, 2), size=3)),
    ErrorCase("view.dtype_0d", "ShapeError", "view:", lambda d: ones(d).view(ember.float16)),
    ErrorCase("view.dtype_last_dim", "ShapeError", "view:", lambda d: ones(d, 2, 3).half().view(ember.float32)),
    ErrorCase("attention.gqa_heads", "ShapeError", "scaled_dot_product_attention:",
              lambda d: nnf.scaled_dot_product_attention(ones(d, 1, 3, 2, 4), ones(d, 1, 2, 2, 4), ones(d, 1, 2, 2, 4),
                                                         enable_gqa=True)),
]


def test_error(device, case):
    kind = getattr(ember, case.kind)
    with check.raises(kind, case.prefix) as caught:
        case.fn(device)
    error = caught.value
    check.assert_true(isinstance(error, ember.EmberError), "%s is not an ember.EmberError" % case.kind)
    check.assert_true(isinstance(error, BUILTIN[case.kind]),
                      "%s is not a %s" % (case.kind, BUILTIN[case.kind].__name__))
    if case.kind == "ShapeError" and sys.implementation.name != "micropython":
        # PyTorch raises RuntimeError for shape problems; a class cannot have two bases on MicroPython
        check.assert_true(isinstance(error, RuntimeError), "ShapeError is not a RuntimeError")
    text = str(error)
    check.assert_true(text.startswith(case.prefix),
                      "%s: message %r does not start with %r" % (case.name, text, case.prefix))
