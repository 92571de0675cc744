"""Bad calls of the structural ops: each raises ember's error class (also the builtin a Python user
would catch) with a message that starts with the op's name."""
import ember
import ember.nn.functional as nnf
from test_conformance_errors import ErrorCase, test_error as check_error

PARAMETERS = ("device", "case")


def ones(device, *shape, **kw):
    return ember.ones(*shape, device=device, **kw)


def idx(device, values):
    return ember.tensor(values, dtype=ember.int64, device=device)


E = ErrorCase
CASES = [
    E("einsum.equation_type", "ArgumentTypeError", "einsum:", lambda d: ember.einsum(3, ones(d, 2))),
    E("einsum.operand_count", "ArgumentError", "einsum:", lambda d: ember.einsum("ij,jk", ones(d, 2, 2))),
    E("einsum.rank", "ShapeError", "einsum:", lambda d: ember.einsum("ijk", ones(d, 2, 2))),
    E("einsum.size", "ShapeError", "einsum:", lambda d: ember.einsum("ij,jk", ones(d, 2, 3), ones(d, 4, 2))),
    E("einsum.repeat_size", "ShapeError", "einsum:", lambda d: ember.einsum("ii", ones(d, 2, 3))),
    E("einsum.bad_char", "ArgumentError", "einsum:", lambda d: ember.einsum("i1", ones(d, 2, 3))),
    E("einsum.two_ellipses", "ArgumentError", "einsum:", lambda d: ember.einsum("...i...", ones(d, 2, 3))),
    E("einsum.unknown_output", "ArgumentError", "einsum:", lambda d: ember.einsum("ij->k", ones(d, 2, 3))),
    E("einsum.repeated_output", "ArgumentError", "einsum:", lambda d: ember.einsum("ij->ii", ones(d, 2, 3))),
    E("einsum.not_tensor", "ArgumentTypeError", "einsum:", lambda d: ember.einsum("i,i", ones(d, 2), [1, 2])),
    E("diag.3d", "ShapeError", "diag:", lambda d: ember.diag(ones(d, 2, 2, 2))),
    E("diag.offset_type", "ArgumentTypeError", "diag:", lambda d: ones(d, 3).diag(1.5)),
    E("diagonal.1d", "ShapeError", "diagonal:", lambda d: ones(d, 3).diagonal()),
    E("diagonal.same_dims", "ShapeError", "diagonal:", lambda d: ones(d, 3, 3).diagonal(0, 1, -1)),
    E("diagonal.dim_range", "IndexOutOfRange", "diagonal:", lambda d: ones(d, 3, 3).diagonal(0, 0, 2)),
    E("repeat_interleave.negative", "ArgumentError", "repeat_interleave:",
      lambda d: ones(d, 3).repeat_interleave(-1)),
    E("repeat_interleave.count_length", "ShapeError", "repeat_interleave:",
      lambda d: ones(d, 3).repeat_interleave(idx(d, [1, 2]))),
    E("repeat_interleave.float_counts", "DTypeError", "repeat_interleave:",
      lambda d: ones(d, 3).repeat_interleave(ones(d, 3))),
    E("repeat_interleave.output_size", "ShapeError", "repeat_interleave:",
      lambda d: ones(d, 3).repeat_interleave(2, output_size=5)),
    E("unflatten.sizes", "ShapeError", "unflatten:", lambda d: ones(d, 2, 6).unflatten(1, (4, 2))),
    E("unflatten.two_free", "ShapeError", "unflatten:", lambda d: ones(d, 2, 6).unflatten(1, (-1, -1))),
    E("unflatten.not_tuple", "ArgumentTypeError", "unflatten:", lambda d: ones(d, 2, 6).unflatten(1, 6)),
    E("view_as.not_tensor", "ArgumentTypeError", "view_as:", lambda d: ones(d, 2, 3).view_as((3, 2))),
    E("view_as.count", "ShapeError", "reshape:", lambda d: ones(d, 2, 3).view_as(ones(d, 4))),
    E("unfold.size", "ShapeError", "unfold:", lambda d: ones(d, 2, 3).unfold(1, 4, 1)),
    E("unfold.step", "ArgumentError", "unfold:", lambda d: ones(d, 2, 3).unfold(1, 2, 0)),
    E("meshgrid.2d", "ShapeError", "meshgrid:", lambda d: ember.meshgrid(ones(d, 2), ones(d, 2, 2))),
    E("meshgrid.indexing", "ArgumentError", "meshgrid:", lambda d: ember.meshgrid(ones(d, 2), indexing="ji")),
    E("logcumsumexp.dim", "IndexOutOfRange", "logcumsumexp:", lambda d: ones(d, 2, 3).logcumsumexp(2)),
    E("std_mean.dim", "IndexOutOfRange", "var:", lambda d: ember.std_mean(ones(d, 2, 3), 4)),
    E("scatter_reduce.mode", "ArgumentError", "scatter_reduce:",
      lambda d: ones(d, 3).scatter_reduce(0, idx(d, [0]), ones(d, 1), "max")),
    E("scatter_reduce.rank", "ShapeError", "scatter_reduce:",
      lambda d: ones(d, 3, 2).scatter_reduce(0, idx(d, [0]), ones(d, 1), "sum")),
    E("scatter_reduce.index_range", "IndexOutOfRange", "scatter_reduce:",
      lambda d: ones(d, 3).scatter_reduce(0, idx(d, [3]), ones(d, 1), "amax")),
    E("scatter_reduce.float_index", "DTypeError", "scatter_reduce:",
      lambda d: ones(d, 3).scatter_reduce(0, ones(d, 1), ones(d, 1), "sum")),
    E("scatter_reduce.bool", "DTypeError", "scatter_reduce:",
      lambda d: ones(d, 3, dtype=ember.bool).scatter_reduce(0, idx(d, [0]), ones(d, 1, dtype=ember.bool), "sum")),
    E("conv3d.rank", "ShapeError", "conv3d:", lambda d: nnf.conv3d(ones(d, 1, 1, 4, 4), ones(d, 1, 1, 2, 2, 2))),
    E("conv3d.channels", "ShapeError", "conv3d:",
      lambda d: nnf.conv3d(ones(d, 1, 3, 4, 4, 4), ones(d, 2, 2, 2, 2, 2))),
    E("conv3d.small", "ShapeError", "conv3d:", lambda d: nnf.conv3d(ones(d, 1, 1, 1, 4, 4), ones(d, 1, 1, 2, 2, 2))),
    E("conv3d.bias", "ShapeError", "conv3d:",
      lambda d: nnf.conv3d(ones(d, 1, 1, 3, 3, 3), ones(d, 2, 1, 2, 2, 2), ones(d, 3))),
    E("conv3d.stride", "ArgumentTypeError", "conv3d:",
      lambda d: nnf.conv3d(ones(d, 1, 1, 3, 3, 3), ones(d, 1, 1, 2, 2, 2), stride=(1, 1))),
    E("conv_transpose3d.channels", "ShapeError", "conv_transpose3d:",
      lambda d: nnf.conv_transpose3d(ones(d, 1, 2, 3, 3, 3), ones(d, 3, 1, 2, 2, 2))),
    E("conv_transpose3d.output_padding", "ArgumentError", "conv_transpose3d:",
      lambda d: nnf.conv_transpose3d(ones(d, 1, 1, 3, 3, 3), ones(d, 1, 1, 2, 2, 2), output_padding=1)),
    E("max_pool3d.rank", "ShapeError", "max_pool3d:", lambda d: nnf.max_pool3d(ones(d, 1, 4, 4, 4), 2)),
    E("max_pool3d.int", "DTypeError", "max_pool3d:",
      lambda d: nnf.max_pool3d(ones(d, 1, 1, 4, 4, 4, dtype=ember.int32), 2)),
    E("avg_pool3d.padding", "ArgumentError", "avg_pool3d:", lambda d: nnf.avg_pool3d(ones(d, 1, 1, 4, 4, 4), 2, 1, 2)),
    E("avg_pool3d.small", "ShapeError", "avg_pool3d:", lambda d: nnf.avg_pool3d(ones(d, 1, 1, 1, 4, 4), 2)),
    E("avg_pool3d.divisor", "ArgumentError", "avg_pool3d:",
      lambda d: nnf.avg_pool3d(ones(d, 1, 1, 4, 4, 4), 2, divisor_override=0)),
    E("max_pool3d.ceil_mode", "ArgumentError", "max_pool3d:",
      lambda d: nnf.max_pool3d(ones(d, 1, 1, 4, 4, 4), 3, ceil_mode=True)),
    E("max_pool3d.return_indices", "ArgumentError", "max_pool3d:",
      lambda d: nnf.max_pool3d(ones(d, 1, 1, 4, 4, 4), 2, return_indices=True)),
    E("avg_pool3d.ceil_mode", "ArgumentError", "avg_pool3d:",
      lambda d: nnf.avg_pool3d(ones(d, 1, 1, 4, 4, 4), 3, 2, 0, True)),
    E("max_unpool2d.shape", "ShapeError", "max_unpool2d:",
      lambda d: nnf.max_unpool2d(ones(d, 1, 1, 2, 2), idx(d, [[[[0, 1]]]]), 2)),
    E("max_unpool2d.dtype", "DTypeError", "max_unpool2d:",
      lambda d: nnf.max_unpool2d(ones(d, 1, 1, 1, 2), ones(d, 1, 1, 1, 2), 2)),
    E("max_unpool2d.output_size", "ShapeError", "max_unpool2d:",
      lambda d: nnf.max_unpool2d(ones(d, 1, 1, 1, 2), idx(d, [[[[0, 1]]]]), 2, output_size=(5, 4))),
    E("F.unfold.rank", "ShapeError", "unfold:", lambda d: nnf.unfold(ones(d, 4, 4), 2)),
    E("F.unfold.small", "ShapeError", "unfold:", lambda d: nnf.unfold(ones(d, 1, 1, 2, 2), 3)),
]


def test_struct_error(device, case):
    check_error(device, case)
