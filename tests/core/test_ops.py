"""The op table (ember.ops): the contract's names come from it, and ``infer`` gives the shape and
dtype of every primitive's result as the device computes it."""
import ember
from ember import backend, ops
from ember.errors import ArgumentError
from harness.check import assert_equal, assert_true

PARAMETERS = ("device",)


def test_the_backend_exports_the_tables_names(device):
    assert_true(backend.UNARY_OPS is ops.UNARY_OPS and backend.BINARY_OPS is ops.BINARY_OPS)
    assert_true(backend.PRIMITIVES is ops.PRIMITIVES and len(ops.PRIMITIVES) == 23)
    assert_equal(len(ops.UNARY_OPS), len(ops.UNARY))
    assert_true(ops.COMPARISONS == ("eq", "ne", "lt", "le", "gt", "ge"))
    assert_true(ops.TO_BOOL_UNARY == ("isnan", "isinf", "logical_not"))
    assert_true(ops.ROUNDING == ("floor", "ceil", "round", "trunc"))
    for name in ops.RING_OPS:
        assert_true(name in ops.BINARY_OPS, name)
    for name in ops.UNARY_OPS:
        assert_true(ops.UNARY_TRAIT[name] in ("same", "float", "rounding", "integer", "to_bool"), name)


class _Spec:
    """An array as infer sees it: a shape and a dtype."""

    def __init__(self, shape, dtype=ember.float32):
        self.shape = shape
        self.dtype = dtype


def test_infer_agrees_with_every_primitive(device):
    f32, i64, b = ember.float32, ember.int64, ember.bool_
    x = ember.randn(2, 3, generator=ember.Generator(1), device=device)
    xi = ember.tensor([[1, 2, 3], [4, 5, 6]], device=device)
    idx = ember.tensor([[0, 1], [1, 0]], device=device)
    cond = x > 0
    img = ember.randn(1, 2, 5, 5, generator=ember.Generator(2), device=device)
    w = ember.randn(3, 2, 3, 3, generator=ember.Generator(3), device=device)
    S = _Spec
    cases = [
        ("full", ((2, 2), 1.0, f32), ((2, 2), f32)),
        ("reshape", (S((2, 3)), (3, 2)), ((3, 2), f32)),
        ("permute", (S((2, 3)), (1, 0)), ((3, 2), f32)),
        ("expand", (S((1, 3)), (4, 3)), ((4, 3), f32)),
        ("slice", (S((2, 3)), ((0, 2, 1), (2, -1, -1))), ((2, 3), f32)),
        ("cat", ([S((2, 3)), S((2, 1))], 1), ((2, 4), f32)),
        ("unary", ("isnan", S((2, 3))), ((2, 3), b)),
        ("unary", ("exp", S((2, 3))), ((2, 3), f32)),
        ("binary", ("lt", S((2, 3)), 1.0), ((2, 3), b)),
        ("binary", ("add", 2, S((2,), i64)), ((2,), i64)),
        ("cast", (S((2, 3)), i64), ((2, 3), i64)),
        ("reduce", ("argmax", S((2, 3)), 1), ((2, 1), i64)),
        ("reduce", ("any", S((2, 3)), 0), ((1, 3), b)),
        ("reduce", ("sum", S((2, 3)), 0), ((1, 3), f32)),
        ("scan", ("cumargmax", S((2, 3)), 1), ((2, 3), i64)),
        ("sort", (S((2, 3)), 1, False), ((2, 3), f32)),
        ("matmul", (S((4, 2, 3)), S((4, 3, 5))), ((4, 2, 5), f32)),
        ("conv", (S((1, 2, 5, 5)), S((3, 2, 3, 3)), (2, 2), ((1, 1), (1, 1)), (1, 1), 1), ((1, 3, 3, 3), f32)),
        ("pool", ("max", S((1, 2, 5, 5)), (2, 2), (2, 2), ((0, 0), (0, 0)), (1, 1)), ((1, 2, 2, 2), f32)),
        ("gather", (S((2, 3)), 1, S((2, 2), i64)), ((2, 2), f32)),
        ("scatter", (S((2, 3)), 1, S((2, 2), i64), S((2, 2)), "add"), ((2, 3), f32)),
    ]
    for primitive, args, want in cases:
        got = ops.infer(primitive, *args)
        assert_true(got == want, "%s: %r, expected %r" % (primitive, got, want))
    # the device's own results have the inferred shape (read back through a tensor of that shape)
    for primitive, args, spec in (
            ("reduce", ("argmax", x._data, 1), ops.infer("reduce", "argmax", x, 1)),
            ("binary", ("lt", x._data, 0.5), ops.infer("binary", "lt", x, 0.5)),
            ("where", (cond._data, x._data, x._data), ops.infer("where", cond, x, x)),
            ("gather", (x._data, 1, idx._data), ops.infer("gather", x, 1, idx)),
            ("conv", (img._data, w._data, (1, 1), ((0, 0), (0, 0)), (1, 1), 1),
             ops.infer("conv", img, w, (1, 1), ((0, 0), (0, 0)), (1, 1), 1))):
        flat = device.to_list(getattr(device, primitive)(*args))
        n = 1
        for d in spec[0]:
            n *= d
        assert_true(len(flat) == n, "%s: %d values for shape %s" % (primitive, len(flat), spec[0]))
    assert_true(ops.infer("cast", xi, f32) == ((2, 3), f32))


def test_infer_names_a_bad_primitive(device):
    try:
        ops.infer("nope")
    except ArgumentError as e:
        assert_true("infer" in str(e) and "'nope'" in str(e), str(e))
    else:
        assert_true(False, "infer('nope') should raise")
