"""uint8 (PyTorch's byte tensors) on every backend: creation, casts both ways, wrapping arithmetic,
promotion with the other dtypes, comparisons, bitwise ops and shifts, reductions, sorting and
indexing. numpy references in int64, wrapped to 0..255 as the dtype holds them."""
import ember

import conformance_kit as kit
from conformance_kit import EXACT, F, I, V, case

PARAMETERS = ("device", "case")

U = "u8"


def _wrap(np, x):
    return np.asarray(x, dtype=np.int64) % 256


def creation_cases():
    specs = []
    specs.append(case("uint8.tensor", lambda x: x, lambda np, x: x, [V([0, 1, 127, 128, 200, 255], U)], U))
    specs.append(case("uint8.full", lambda x: ember.full((2, 3), 200, dtype=ember.uint8, device=x.device) + x,
                      lambda np, x: _wrap(np, x + 200), [I((2, 3), U, 0, 100)], U))
    specs.append(case("uint8.arange", lambda x: ember.arange(250, 256, dtype=ember.uint8, device=x.device) + x * 0,
                      lambda np, x: np.arange(250, 256), [I((6,), U, 0, 5)], U))
    specs.append(case("uint8.zeros_like", lambda x: ember.zeros_like(x) + 3, lambda np, x: x * 0 + 3, [I((2, 2), U, 0, 9)], U))
    return specs


def cast_cases():
    specs = []
    specs.append(case("uint8.to_f32", lambda x: x.float(), lambda np, x: x, [I((2, 3), U, 0, 256)], "f32", EXACT))
    specs.append(case("uint8.to_i8", lambda x: x.to(ember.int8), lambda np, x: x, [V([0, 127, 128, 255, 5, 200], U)], "i8"))
    specs.append(case("uint8.to_i64", lambda x: x.long(), lambda np, x: x, [I((2, 3), U, 0, 256)], "i64"))
    specs.append(case("uint8.to_bool", lambda x: x.bool(), lambda np, x: x != 0, [V([0, 1, 255, 0, 128], U)], "b"))
    specs.append(case("f32.to_uint8", lambda x: x.to(ember.uint8), lambda np, x: _wrap(np, np.trunc(x)),
                      [V([0.0, 1.9, 254.5, 255.0, 17.25, 100.0])], U))
    specs.append(case("i64.to_uint8", lambda x: x.to(ember.uint8), lambda np, x: _wrap(np, x), [V([-1, 256, 300, 255, 0, -255], "i64")], U))
    specs.append(case("i8.to_uint8", lambda x: x.to(ember.uint8), lambda np, x: _wrap(np, x), [V([-128, -1, 0, 127, 5, -7], "i8")], U))
    specs.append(case("bool.to_uint8", lambda x: x.to(ember.uint8), lambda np, x: x.astype(np.int64), [V([True, False, True], "b")], U))
    return specs


ARITH = [
    ("add", lambda a, b: a + b, lambda np, a, b: a + b),
    ("sub", lambda a, b: a - b, lambda np, a, b: a - b),
    ("mul", lambda a, b: a * b, lambda np, a, b: a * b),
    ("floordiv", lambda a, b: a // b, lambda np, a, b: a // b),
    ("mod", lambda a, b: a % b, lambda np, a, b: a % b),
    ("maximum", lambda a, b: a.maximum(b), lambda np, a, b: np.maximum(a, b)),
    ("and", lambda a, b: a & b, lambda np, a, b: a & b),
    ("or", lambda a, b: a | b, lambda np, a, b: a | b),
    ("xor", lambda a, b: a ^ b, lambda np, a, b: a ^ b),
]


def arith_cases():
    specs = []
    for name, fn, ref in ARITH:
        lo = 1 if name in ("floordiv", "mod") else 0
        specs.append(case("uint8.%s.2x3" % name, fn, lambda np, a, b, r=ref: _wrap(np, r(np, a, b)),
                          [I((2, 3), U, 0, 256), I((2, 3), U, lo, 256)], U))
    specs.append(case("uint8.add.bcast", lambda a, b: a + b, lambda np, a, b: _wrap(np, a + b),
                      [I((2, 3), U, 0, 256), I((3,), U, 0, 256)], U, None, "auto"))
    specs.append(case("uint8.add.scalar_wraps", lambda a: a + 10, lambda np, a: _wrap(np, a + 10), [V([250, 0, 245, 100], U)], U))
    specs.append(case("uint8.sub.scalar_wraps", lambda a: a - 1, lambda np, a: _wrap(np, a - 1), [V([0, 1, 255], U)], U))
    specs.append(case("uint8.neg", lambda a: -a, lambda np, a: _wrap(np, -a), [V([0, 1, 128, 255], U)], U))
    specs.append(case("uint8.abs", lambda a: a.abs(), lambda np, a: a, [V([0, 1, 128, 255], U)], U))
    specs.append(case("uint8.bitwise_not", lambda a: ~a, lambda np, a: 255 - a, [V([0, 1, 128, 255], U)], U))
    specs.append(case("uint8.lshift", lambda a, b: a << b, lambda np, a, b: _wrap(np, a << b), [I((2, 3), U, 0, 256), I((2, 3), U, 0, 8)], U))
    specs.append(case("uint8.rshift", lambda a, b: a >> b, lambda np, a, b: a >> b, [I((2, 3), U, 0, 256), I((2, 3), U, 0, 8)], U))
    specs.append(case("uint8.pow.scalar", lambda a: a ** 2, lambda np, a: _wrap(np, a * a), [I((2, 3), U, 0, 256)], U))
    specs.append(case("uint8.div", lambda a, b: a / b, lambda np, a, b: a / b, [I((2, 3), U, 0, 256), I((2, 3), U, 1, 256)], "f32"))
    specs.append(case("uint8.exp", lambda a: a.exp(), lambda np, a: np.exp(a), [I((2, 3), U, 0, 5)], "f32"))
    return specs


def promotion_cases():
    specs = []
    specs.append(case("uint8+int8.is_int32", lambda a, b: a + b, lambda np, a, b: a + b, [I((4,), U, 0, 256), I((4,), "i8", -128, 128)], "i32"))
    specs.append(case("uint8+int32.is_int32", lambda a, b: a + b, lambda np, a, b: a + b, [I((4,), U, 0, 256), I((4,), "i32")], "i32"))
    specs.append(case("uint8+int64.is_int64", lambda a, b: a * b, lambda np, a, b: a * b, [I((4,), U, 0, 256), I((4,), "i64")], "i64"))
    specs.append(case("uint8+bool.is_uint8", lambda a, b: a + b, lambda np, a, b: a + b, [I((4,), U, 0, 255), V([True, False, True, True], "b")], U))
    specs.append(case("uint8+f16.is_f16", lambda a, b: a + b, lambda np, a, b: a + b, [I((4,), U, 0, 256), F((4,), "f16")], "f16"))
    specs.append(case("uint8+2.5.is_f32", lambda a: a + 2.5, lambda np, a: a + 2.5, [I((4,), U, 0, 256)], "f32"))
    return specs


def np_scatter_add(np, a, s):
    out = np.array(a)
    for j, row in enumerate([1, 0, 1]):
        out[row, j] += s[0, j]
    return _wrap(np, out)


def compare_reduce_index_cases():
    specs = []
    specs.append(case("uint8.gt", lambda a, b: a > b, lambda np, a, b: a > b, [I((2, 3), U, 0, 256), I((2, 3), U, 0, 256)], "b"))
    specs.append(case("uint8.eq.scalar", lambda a: a == 255, lambda np, a: a == 255, [V([255, 0, 1, 255], U)], "b"))
    specs.append(case("uint8.sum", lambda a: a.sum(), lambda np, a: a.sum(), [I((3, 4), U, 200, 256)], "i64"))
    specs.append(case("uint8.sum.dim", lambda a: a.sum(1), lambda np, a: a.sum(1), [I((3, 4), U, 0, 256)], "i64"))
    specs.append(case("uint8.max", lambda a: a.max(1).values, lambda np, a: a.max(1), [I((3, 4), U, 0, 256)], U))
    specs.append(case("uint8.argmin", lambda a: a.argmin(0), lambda np, a: a.argmin(0), [I((3, 4), U, 0, 256)], "i64"))
    specs.append(case("uint8.cumsum", lambda a: a.cumsum(1), lambda np, a: np.cumsum(a, 1), [I((2, 4), U, 0, 256)], "i64"))
    specs.append(case("uint8.sort", lambda a: a.sort(1).values, lambda np, a: np.sort(a, 1), [I((2, 5), U, 0, 256)], U))
    specs.append(case("uint8.gather", lambda a, i: a.gather(1, i), lambda np, a, i: np.take_along_axis(a, i, 1),
                      [I((2, 4), U, 0, 256), I((2, 3), "i64", 0, 4)], U))
    specs.append(case("uint8.getitem", lambda a: a[1:, ::2], lambda np, a: a[1:, ::2], [I((3, 4), U, 0, 256)], U))
    specs.append(case("uint8.where", lambda c, a: ember.where(c, a, 7), lambda np, c, a: np.where(c, a, 7),
                      [kit.B((2, 3)), I((2, 3), U, 0, 256)], U))
    specs.append(case("uint8.cat", lambda a, b: ember.cat([a, b], 0), lambda np, a, b: np.concatenate([a, b], 0),
                      [I((1, 3), U, 0, 256), I((2, 3), U, 0, 256)], U))
    specs.append(case("uint8.scatter_add", lambda a, s: a.scatter_add(0, ember.tensor([[1, 0, 1]], device=a.device), s),
                      np_scatter_add, [I((2, 3), U, 0, 256), I((1, 3), U, 0, 256)], U))
    specs.append(case("uint8.bytes_roundtrip", lambda a: ember.Tensor(a.device.from_bytes(a.to_bytes(), a.shape, a.dtype), a.shape,
                                                                     a.dtype, a.device),
                      lambda np, a: a, [V([0, 1, 128, 255, 77, 200], U)], U))
    return specs


SPECS = creation_cases() + cast_cases() + arith_cases() + promotion_cases() + compare_reduce_index_cases()
CASES = kit.variants(SPECS)


def test_uint8(device, case):
    kit.run(device, case)
