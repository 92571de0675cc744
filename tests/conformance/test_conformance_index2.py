"""Index ops: gather, scatter (set and add), scatter_add, index_select, masked_fill, one_hot, take."""
import ember
import ember.nn.functional as nnf

import conformance_kit as kit
from conformance_kit import EXACT, F, I, B, V, case

PARAMETERS = ("device", "case")


def np_gather(np, x, d, idx):
    return np.take_along_axis(x, idx, axis=d)


def np_scatter(np, x, d, idx, src, add):
    x = x.copy()
    for pos in np.ndindex(*idx.shape):
        target = list(pos)
        target[d] = idx[pos]
        if add:
            x[tuple(target)] += src[pos]
        else:
            x[tuple(target)] = src[pos]
    return x


# a permutation per column of a 3-row dim: scatter "set" without repeated targets
PERM_3x4 = V([2, 0, 1, 1, 0, 2, 0, 2, 1, 2, 0, 0], "i64", (3, 4))


def gather_cases():
    specs = []
    specs.append(case("gather.f32.3x4.d1", lambda x, i: x.gather(1, i), lambda np, x, i: np_gather(np, x, 1, i),
                      [F((3, 4)), I((3, 2), "i64", 0, 4)], "f32", EXACT))
    specs.append(case("gather.f32.3x4.d0", lambda x, i: ember.gather(x, 0, i), lambda np, x, i: np_gather(np, x, 0, i),
                      [F((3, 4)), I((2, 4), "i64", 0, 3)], "f32", EXACT))
    specs.append(case("gather.f32.2x3x4.dm1", lambda x, i: x.gather(-1, i), lambda np, x, i: np_gather(np, x, -1, i),
                      [F((2, 3, 4)), I((2, 3, 5), "i64", 0, 4)], "f32", EXACT))
    specs.append(case("gather.i32.3x4.d1.smaller", lambda x, i: x.gather(1, i), lambda np, x, i: np_gather(np, x[:2], 1, i),
                      [I((3, 4), "i32"), I((2, 3), "i64", 0, 4)], "i32"))
    specs.append(case("gather.b.3x4.d1", lambda x, i: x.gather(1, i), lambda np, x, i: np_gather(np, x, 1, i),
                      [B((3, 4)), I((3, 4), "i64", 0, 4)], "b"))
    specs.append(case("gather.f32.3x4.d1.i32_index", lambda x, i: x.gather(1, i), lambda np, x, i: np_gather(np, x, 1, i),
                      [F((3, 4)), I((3, 2), "i32", 0, 4)], "f32", EXACT))
    return specs


def scatter_cases():
    specs = []
    x, src = F((3, 4)), F((3, 4))
    specs.append(case("scatter.f32.3x4.d0.set", lambda x, i, s: x.scatter(0, i, s),
                      lambda np, x, i, s: np_scatter(np, x, 0, i, s, False), [x, PERM_3x4, src], "f32", EXACT))
    specs.append(case("scatter.f32.3x4.d0.scalar", lambda x, i: x.scatter(0, i, 7.5),
                      lambda np, x, i: np_scatter(np, x, 0, i, np.full(i.shape, 7.5), False), [x, PERM_3x4], "f32", EXACT))
    specs.append(case("scatter.f32.3x4.d1.set.fn", lambda x, i, s: ember.scatter(x, 1, i, s),
                      lambda np, x, i, s: np_scatter(np, x, 1, i, s, False),
                      [x, V([3, 0, 1, 2, 0, 1], "i64", (3, 2)), F((3, 3))], "f32", EXACT))
    specs.append(case("scatter.f32.3x4.d0.add", lambda x, i, s: x.scatter(0, i, s, reduce="add"),
                      lambda np, x, i, s: np_scatter(np, x, 0, i, s, True), [x, I((3, 4), "i64", 0, 3), src], "f32", "composite"))
    specs.append(case("scatter_add.f32.3x4.d1", lambda x, i, s: x.scatter_add(1, i, s),
                      lambda np, x, i, s: np_scatter(np, x, 1, i, s, True), [x, I((3, 5), "i64", 0, 4), F((3, 5))], "f32", "composite"))
    specs.append(case("scatter_add.i64.2x3x2.d1", lambda x, i, s: x.scatter_add(1, i, s),
                      lambda np, x, i, s: np_scatter(np, x, 1, i, s, True), [I((2, 3, 2)), I((2, 4, 2), "i64", 0, 3), I((2, 4, 2))], "i64"))
    return specs


def misc_cases():
    specs = []
    x = F((3, 4))
    for d, n in ((0, 3), (1, 4), (-1, 4)):
        specs.append(case("index_select.f32.3x4.d%d" % d, lambda x, i, d=d: x.index_select(d, i),
                          lambda np, x, i, d=d: np.take(x, i, axis=d), [x, I((5,), "i64", 0, n)], "f32", EXACT))
    specs.append(case("index_select.i32.fn.empty", lambda x, i: ember.index_select(x, 0, i),
                      lambda np, x, i: np.take(x, i, axis=0), [I((3, 2), "i32"), V([], "i64")], "i32"))
    specs.append(case("index_select.b.2x3.d1", lambda x, i: x.index_select(1, i), lambda np, x, i: np.take(x, i, axis=1),
                      [B((2, 3)), V([2, 2, 0], "i64")], "b"))
    specs.append(case("masked_fill.f32.3x4.scalar", lambda x, m: x.masked_fill(m, -2.5), lambda np, x, m: np.where(m, -2.5, x),
                      [x, B((3, 4))], "f32", EXACT))
    specs.append(case("masked_fill.f32.3x4.bcast", lambda x, m: ember.masked_fill(x, m, float("-inf")),
                      lambda np, x, m: np.where(m, -np.inf, x), [x, B((4,))], "f32", EXACT, [None, (3, 4)]))
    specs.append(case("masked_fill.f32.3x4.tensor_value", lambda x, m: x.masked_fill(m, ember.tensor(3, device=x.device)),
                      lambda np, x, m: np.where(m, 3.0, x), [x, B((3, 1))], "f32", EXACT))
    specs.append(case("masked_fill.i32.3x4.float_value", lambda x, m: x.masked_fill(m, 2.7),
                      lambda np, x, m: np.where(m, 2, x), [I((3, 4), "i32"), B((3, 4))], "i32"))
    specs.append(case("masked_fill.b.2x3", lambda x, m: x.masked_fill(m, True), lambda np, x, m: np.where(m, True, x),
                      [B((2, 3)), B((2, 3))], "b"))
    oh = lambda np, i, n: (i[..., None] == np.arange(n)).astype(np.int64)  # noqa: E731
    specs.append(case("one_hot.i64.5.n6", lambda i: nnf.one_hot(i, 6), lambda np, i: oh(np, i, 6), [I((5,), "i64", 0, 6)], "i64"))
    specs.append(case("one_hot.i64.2x3.auto", lambda i: nnf.one_hot(i), lambda np, i: oh(np, i, int(i.max()) + 1),
                      [I((2, 3), "i64", 0, 4)], "i64"))
    specs.append(case("one_hot.i32.0d.n3", lambda i: nnf.one_hot(i, 3), lambda np, i: oh(np, i, 3), [I((), "i32", 0, 3)], "i64"))
    specs.append(case("take.f32.3x4", lambda x, i: x.take(i), lambda np, x, i: np.take(x, i), [x, I((2, 3), "i64", -12, 12)], "f32", EXACT))
    specs.append(case("take.i32.fn.0d_index", lambda x, i: ember.take(x, i), lambda np, x, i: np.take(x, i),
                      [I((2, 3), "i32"), I((), "i64", -6, 6)], "i32"))
    return specs


SPECS = gather_cases() + scatter_cases() + misc_cases()
CASES = kit.variants(SPECS)


def test_index2(device, case):
    kit.run(device, case)
