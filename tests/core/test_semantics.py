"""What a user can rely on: value semantics, the override hook, and float32 arithmetic.

Value semantics, as ember/tensor.py promises them: a tensor made from another one, view or not,
never sees a later ``setitem`` on its source, and the other way round.
"""
import struct

import ember
import ember.nn.functional as F
from harness.check import assert_close, assert_equal, assert_true

PARAMETERS = ("device",)


def _grid(device):
    return ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device=device)


def _f32_bits(v):
    return struct.unpack("<I", struct.pack("<f", v))[0]


# -- value semantics ----------------------------------------------------------------------------------

def test_an_indexed_row_keeps_its_values(device):
    x = _grid(device)
    y = x[0]
    x[0] = 5.0
    assert_equal(y.tolist(), [1.0, 2.0, 3.0])
    assert_equal(x.tolist(), [[5.0, 5.0, 5.0], [4.0, 5.0, 6.0]])


def test_views_never_see_a_later_setitem_on_the_source(device):
    makers = (
        ("reshape", lambda t: t.reshape(3, 2)),
        ("reshape(-1)", lambda t: t.reshape(-1)),
        ("view", lambda t: t.view(6)),
        ("permute", lambda t: t.permute(1, 0)),
        ("transpose", lambda t: t.transpose(0, 1)),
        ("expand", lambda t: t[0:1].expand(4, 3)),
        ("slice", lambda t: t[:, 1:]),
        ("step slice", lambda t: t[:, ::2]),
        ("int index", lambda t: t[1]),
        ("full slice", lambda t: t[:]),
        ("unsqueeze", lambda t: t.unsqueeze(0)),
        ("flatten", lambda t: t.flatten()),
        ("astype", lambda t: t.to(ember.float64)),
    )
    changed = []
    for name, make in makers:
        x = _grid(device)
        v = make(x)
        before = v.tolist()
        x[0, 0] = 100.0
        x[1] = -1.0
        if v.tolist() != before:
            changed.append(name)
    assert_true(not changed, "these saw a later setitem on their source: %s" % ", ".join(changed))


def test_same_shape_views_are_separate_tensors_too(device):
    # a reshape/expand/squeeze that keeps the shape is still a new tensor to the user
    makers = (
        ("reshape to the same shape", lambda t: t.reshape(2, 3)),
        ("view to the same shape", lambda t: t.view(2, 3)),
        ("expand to the same shape", lambda t: t.expand(2, 3)),
        ("squeeze() with no size-1 dim", lambda t: t.squeeze()),
        ("squeeze(0) of a size-2 dim", lambda t: t.squeeze(0)),
        ("transpose(0, 0)", lambda t: t.transpose(0, 0)),
        ("flatten(0, 0)", lambda t: t.flatten(0, 0)),
        ("cat of one tensor", lambda t: ember.cat([t])),
        ("ember.tensor(t)", lambda t: ember.tensor(t)),
        ("ember.tensor(t, dtype=t.dtype)", lambda t: ember.tensor(t, dtype=ember.float32)),
    )
    changed = []
    for name, make in makers:
        x = _grid(device)
        v = make(x)
        before = v.tolist()
        x[0, 0] = 100.0
        if v.tolist() != before:
            changed.append(name)
    assert_true(not changed, "these saw a later setitem on their source: %s" % ", ".join(changed))


def test_setitem_on_a_view_leaves_the_source_alone(device):
    for name, make in (("reshape", lambda t: t.reshape(6)), ("row", lambda t: t[0]),
                       ("transpose", lambda t: t.transpose(0, 1)), ("slice", lambda t: t[:, 1:])):
        x = _grid(device)
        v = make(x)
        v[0] = 42.0
        assert_equal(x.tolist(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], "setitem on a %s view changed its source" % name)


def test_setitem_on_an_expanded_view_writes_one_element(device):
    row = ember.tensor([[1.0, 2.0, 3.0]], device=device)
    e = row.expand(3, 3)
    e[1, 1] = 0.0
    assert_equal(e.tolist(), [[1.0, 2.0, 3.0], [1.0, 0.0, 3.0], [1.0, 2.0, 3.0]])
    assert_equal(row.tolist(), [[1.0, 2.0, 3.0]])


def test_siblings_from_one_source_are_independent(device):
    x = _grid(device)
    a = x.reshape(6)
    b = x.reshape(6)
    a[0] = 9.0
    assert_equal(b.tolist(), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    assert_equal(x.tolist(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])


def test_to_dtype_returns_a_new_tensor(device):
    x = _grid(device)
    for dt in (ember.float64, ember.float16, ember.int32, ember.bool_):
        y = x.to(dt)
        assert_true(y is not x and y.dtype is dt and x.dtype is ember.float32)
        before = y.tolist()
        x[0, 0] = 0.0
        assert_true(y.tolist() == before, "x.to(%s) saw a later setitem" % dt.name)
        x[0, 0] = 1.0


def test_results_of_ops_do_not_alias_their_inputs(device):
    x = _grid(device)
    outs = [x + 0, x * 1, -(-x), abs(x), x.maximum(x), x.sum(0), x @ ember.ones(3, device=device), x.max(dim=1).values]
    before = [o.tolist() for o in outs]
    x[0] = 0.0
    assert_true([o.tolist() for o in outs] == before)


def test_setitem_forms(device):
    x = ember.zeros(2, 3, device=device)
    x[0, 1] = 1.0
    x[1] = ember.tensor([4.0, 5.0, 6.0], device=device)
    assert_equal(x.tolist(), [[0.0, 1.0, 0.0], [4.0, 5.0, 6.0]])
    x[:, 1:] = ember.tensor([[1.0, 3.0]], device=device)  # broadcast over the rows
    assert_equal(x.tolist(), [[0.0, 1.0, 3.0], [4.0, 1.0, 3.0]])
    x[-1, -1] = -1.0
    assert_equal(x[1].tolist(), [4.0, 1.0, -1.0])
    x[::2, ::2] = 9.0
    assert_equal(x.tolist(), [[9.0, 1.0, 9.0], [4.0, 1.0, -1.0]])


def test_setitem_with_nested_lists(device):
    # numpy accepts lists as values; ember does too
    x = ember.zeros(2, 3, device=device)
    x[0] = [1.0, 2.0, 3.0]
    x[1, 1:] = [[7, 8]]
    assert_equal(x.tolist(), [[1.0, 2.0, 3.0], [0.0, 7.0, 8.0]])
    assert_true(x.dtype is ember.float32)


def test_ellipsis_index(device):
    x = _grid(device)
    whole = x[...]
    col = x[..., 0]
    x[...] = 2.0
    assert_equal(x.tolist(), [[2.0, 2.0, 2.0], [2.0, 2.0, 2.0]])
    assert_equal(whole.tolist(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert_equal(col.tolist(), [1.0, 4.0])
    x[..., 1] = 0.0
    assert_equal(x.tolist(), [[2.0, 0.0, 2.0], [2.0, 0.0, 2.0]])


def test_setitem_of_a_column(device):
    # x[:, 2] has shape (2,): a (2,) value fits it, as in numpy and torch
    x = ember.zeros(2, 3, device=device)
    x[:, 2] = ember.tensor([7.0, 8.0], device=device)
    assert_equal(x.tolist(), [[0.0, 0.0, 7.0], [0.0, 0.0, 8.0]])
    y = ember.zeros(2, 3, 2, device=device)
    y[:, 1, :] = ember.tensor([[1.0, 2.0], [3.0, 4.0]], device=device)
    assert_equal(y[:, 1].tolist(), [[1.0, 2.0], [3.0, 4.0]])


def test_setitem_converts_to_the_targets_dtype(device):
    i = ember.zeros(3, dtype=ember.int32, device=device)
    i[0] = 2.7
    i[1] = ember.tensor(-3.9, device=device)
    assert_true(i.dtype is ember.int32)
    assert_equal(i.tolist(), [2, -3, 0])
    f = ember.zeros(1, device=device)
    f[0] = 0.1
    assert_true(f.item() == 13421773 * 2.0 ** -27, "stored %r, expected float32(0.1)" % f.item())
    h = ember.zeros(1, dtype=ember.float16, device=device)
    h[0] = 65519.0
    assert_true(h.item() == 65504.0)


# -- the override hook --------------------------------------------------------------------------------

def test_override_replaces_a_composite_on_that_backend(device):
    calls = []

    def my_gelu(x, approximate="none"):
        calls.append(approximate)
        return x * 0 + 7.0

    cls = type(device)
    previous = cls.override("gelu", my_gelu)
    try:
        assert_true(previous is None, "gelu was already overridden")
        x = ember.tensor([0.0, 1.0], device=device)
        assert_equal(F.gelu(x).tolist(), [7.0, 7.0])
        assert_equal(F.gelu(x, approximate="tanh").tolist(), [7.0, 7.0])
        assert_true(calls == ["none", "tanh"], "calls %r" % calls)
    finally:
        restored = cls.override("gelu", None)
    assert_true(restored is my_gelu, "override(name, None) should return the override it removes")
    assert_close(F.gelu(ember.tensor([0.0, 1.0], device=device)), [0.0, 0.8413447460685429], rtol=1e-6)


def test_override_returns_the_previous_override(device):
    def first(x, approximate="none"):
        return x * 0 + 1.0

    def second(x, approximate="none"):
        return x * 0 + 2.0

    cls = type(device)
    try:
        assert_true(cls.override("gelu", first) is None)
        assert_true(cls.override("gelu", second) is first)
        assert_equal(F.gelu(ember.zeros(1, device=device)).tolist(), [2.0])
    finally:
        last = cls.override("gelu", None)
    assert_true(last is second)
    assert_true(cls.override("gelu", None) is None, "restoring twice should find nothing to remove")
    assert_equal(F.gelu(ember.zeros(1, device=device)).tolist(), [0.0])


def test_override_is_per_backend_class(device):
    class Elsewhere(ember.Cpu):
        name = "Elsewhere"

    def shout(x, approximate="none"):
        return x * 0 - 1.0

    Elsewhere.override("gelu", shout)
    try:
        assert_equal(F.gelu(ember.zeros(1, device=device)).tolist(), [0.0])
        assert_equal(F.gelu(ember.zeros(1, device=Elsewhere())).tolist(), [-1.0])
    finally:
        Elsewhere.override("gelu", None)


def test_override_sees_a_tensor_passed_by_keyword(device):
    def marker(x, approximate="none"):
        return x * 0 + 3.0

    cls = type(device)
    cls.override("gelu", marker)
    try:
        assert_equal(F.gelu(x=ember.zeros(1, device=device)).tolist(), [3.0])
    finally:
        cls.override("gelu", None)


def test_override_of_other_composites(device):
    cls = type(device)

    def fake_softmax(x, dim=-1):
        return x * 0

    cls.override("softmax", fake_softmax)
    try:
        assert_equal(F.softmax(ember.ones(3, device=device)).tolist(), [0.0, 0.0, 0.0])
        assert_close(F.relu(ember.tensor([-1.0, 2.0], device=device)), [0.0, 2.0])  # untouched
    finally:
        cls.override("softmax", None)
    assert_close(F.softmax(ember.ones(2, device=device)), [0.5, 0.5])


# -- float32 arithmetic -------------------------------------------------------------------------------

def test_float32_sum_is_rounded_once_per_op(device):
    # numpy: np.float32(0.1) + np.float32(0.2) == np.float32(0.3) == 0.30000001192092896 (bits 0x3E99999A)
    a = ember.tensor([0.1], device=device)
    b = ember.tensor([0.2], device=device)
    s = (a + b).item()
    assert_true(_f32_bits(s) == 0x3E99999A and s == 0.30000001192092896, "0.1 + 0.2 in float32 gave %r" % s)
    assert_true((a + 0.2).item() == s and (0.1 + b).item() == s, "a Python scalar is float32 here too")
    # the float64 answer differs
    d = (ember.tensor([0.1], dtype=ember.float64, device=device) + 0.2).item()
    assert_true(d == 0.1 + 0.2 and d != s)


def test_float32_products_and_quotients(device):
    # numpy float32: 0.1 * 3 -> 0.30000001192092896, 1 / 3 -> 0.3333333432674408,
    # 1e8 + 1 -> 1e8, 2**24 + 1 -> 2**24, sqrt(2) -> 1.4142135381698608, 0.1 - 0.3 -> -0.20000001788139343
    t = lambda v: ember.tensor([v], device=device)  # noqa: E731
    assert_true((t(0.1) * 3).item() == 0.30000001192092896)
    assert_true((t(1.0) / 3).item() == 0.3333333432674408)
    assert_true((t(1e8) + 1).item() == 1e8)
    assert_true((t(16777216.0) + 1).item() == 16777216.0)
    assert_true(t(2.0).sqrt().item() == 1.4142135381698608)
    assert_true((t(0.1) - t(0.3)).item() == -0.20000001788139343)


def test_float32_overflow_and_underflow(device):
    big = ember.tensor([3e38], device=device)
    assert_true((big * 2).item() == float("inf"))
    assert_true((big + big).item() == float("inf"))
    tiny = ember.tensor([2.0 ** -149], device=device)
    assert_true((tiny / 2).item() == 0.0, "half the smallest float32 subnormal is a tie to 0")
    assert_true((tiny * 3 / 2).item() == 2.0 ** -148, "1.5 subnormal steps is a tie to the even 2")


def test_integer_arithmetic_is_exact(device):
    x = ember.tensor([2 ** 53 + 1], device=device)
    assert_equal((x + 1).tolist(), [2 ** 53 + 2])
    assert_true((x * 3).item() == 3 * (2 ** 53 + 1))


def test_repeated_ops_keep_their_promotion_rules(device):
    """The frontend remembers which (op, dtype) pairs run in their operands' own dtype, to skip
    promotion the next time; every other pairing still promotes, the second time as the first."""
    f = ember.tensor([1.5, -2.0], device=device)
    i = ember.tensor([7, -7], dtype=ember.int32, device=device)
    b = ember.tensor([True, False], device=device)
    h = ember.tensor([1.0, 2.0], dtype=ember.float16, device=device)
    for _ in range(2):
        r = 1 - f  # a scalar on the left
        assert_true(r.dtype is ember.float32)
        assert_equal(r.tolist(), [-0.5, 3.0])
        assert_equal((i + 1).tolist(), [8, -6])
        assert_true((i + 1).dtype is ember.int32 and (i + i).dtype is ember.int32)
        assert_true((i / i).dtype is ember.float32 and (i + 0.5).dtype is ember.float32)
        assert_equal((i // 2).tolist(), [3, -4])
        assert_true((b + b).dtype is ember.int64 and (b + 1).dtype is ember.int64)
        assert_equal((b + b).tolist(), [2, 0])
        assert_true((f < f).dtype is ember.bool_ and (i == 7).dtype is ember.bool_)
        assert_equal((i == 7).tolist(), [True, False])
        assert_true((h * 0.1).dtype is ember.float16)
        assert_equal((h * 0.1).tolist(), [0.0999755859375, 0.199951171875])  # 0.1 rounded to float16 first
        assert_true((h + f).dtype is ember.float32)
