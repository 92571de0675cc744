"""More shape ops: swap_dims .T repeat flip roll split chunk narrow tril triu, F.pad (constant,
reflect, replicate); x[...] with integer tensor, list and bool mask indices mixed with slices, None
and Ellipsis; x[...] = v and index_put with those forms (accumulate too)."""
import ember
import ember.nn.functional as nnf

import conformance_kit as kit
from conformance_kit import EXACT, F, I, B, V, case

PARAMETERS = ("device", "case")


class _Index:
    def __getitem__(self, index):
        return index


IX = _Index()


def movement_cases():
    specs = []
    x = F((2, 3, 4))
    specs.append(case("swap_dims.f32.2x3x4.0_2", lambda t: t.swap_dims(0, 2), lambda np, t: np.swapaxes(t, 0, 2), [x], "f32", EXACT))
    specs.append(case("swap_dims.i64.2x3x4.m1_1", lambda t: t.swap_dims(-1, 1), lambda np, t: np.swapaxes(t, -1, 1), [I((2, 3, 4))], "i64"))
    specs.append(case("T.f32.3x4", lambda t: t.T, lambda np, t: t.T, [F((3, 4))], "f32", EXACT))
    specs.append(case("T.f32.5", lambda t: t.T, lambda np, t: t.T, [F((5,))], "f32", EXACT))
    for label, reps in (("2_1", (2, 1)), ("1_3", (1, 3)), ("2_2_2", (2, 2, 2)), ("1_1", (1, 1))):
        specs.append(case("repeat.f32.2x3.%s" % label, lambda t, r=reps: t.repeat(*r), lambda np, t, r=reps: np.tile(t, r),
                          [F((2, 3))], "f32", EXACT))
    specs.append(case("repeat.b.3.tuple", lambda t: t.repeat((2, 2)), lambda np, t: np.tile(t, (2, 2)), [B((3,))], "b"))
    for label, dims in (("d0", (0,)), ("d2", (2,)), ("d0_2", (0, 2)), ("dm1", (-1,))):
        specs.append(case("flip.f32.2x3x4.%s" % label, lambda t, d=dims: t.flip(d), lambda np, t, d=dims: np.flip(t, d),
                          [x], "f32", EXACT))
    specs.append(case("flip.i32.fn", lambda t: ember.flip(t, (1,)), lambda np, t: np.flip(t, 1), [I((2, 3), "i32")], "i32"))
    for label, sh, dims in (("s1.d0", 1, 0), ("sm2.d1", -2, 1), ("s5.d2", 5, 2), ("s2_1.d0_2", (2, 1), (0, 2)),
                            ("s3.flat", 3, None), ("s0.d1", 0, 1)):
        specs.append(case("roll.f32.2x3x4.%s" % label, lambda t, s=sh, d=dims: t.roll(s, d),
                          lambda np, t, s=sh, d=dims: np.roll(t, s, d), [x], "f32", EXACT))
    specs.append(case("roll.i64.fn", lambda t: ember.roll(t, 1, 0), lambda np, t: np.roll(t, 1, 0), [I((4,))], "i64"))
    specs.append(case("narrow.f32.2x3x4.d1", lambda t: t.narrow(1, 1, 2), lambda np, t: t[:, 1:3], [x], "f32", EXACT))
    specs.append(case("narrow.f32.2x3x4.dm1.len0", lambda t: ember.narrow(t, -1, 4, 0), lambda np, t: t[..., 4:4], [x], "f32", EXACT))
    specs.append(case("narrow.f32.2x3x4.neg_start", lambda t: t.narrow(2, -3, 2), lambda np, t: t[:, :, 1:3], [x], "f32", EXACT))
    # split / chunk: several results
    for label, arg, d, cuts in (("size2.d2", 2, 2, [2]), ("size3.d2", 3, 2, [3]), ("sections.d1", [1, 2], 1, [1]),
                                ("size1.d0", 1, 0, [1]), ("sections0.d2", [0, 3, 1], 2, [0, 3])):
        n = len(cuts) + 1
        specs.append(case("split.f32.2x3x4.%s" % label, lambda t, a=arg, d=d: tuple(t.split(a, d)),
                          lambda np, t, c=cuts, d=d: tuple(np.split(t, c, axis=d)), [x], ("f32",) * n, EXACT))
    for label, k, d, cuts in (("c2.d2", 2, 2, [2]), ("c3.d2", 3, 2, [2]), ("c2.d1", 2, 1, [2]), ("c5.d0", 5, 0, [1])):
        n = len(cuts) + 1
        specs.append(case("chunk.f32.2x3x4.%s" % label, lambda t, k=k, d=d: tuple(t.chunk(k, d)),
                          lambda np, t, c=cuts, d=d: tuple(np.split(t, c, axis=d)), [x], ("f32",) * n, EXACT))
    specs.append(case("split.i32.fn", lambda t: tuple(ember.split(t, 2)), lambda np, t: tuple(np.split(t, [2, 4])),
                      [I((5,), "i32")], ("i32", "i32", "i32")))
    specs.append(case("chunk.i32.fn", lambda t: tuple(ember.chunk(t, 2, 1)), lambda np, t: tuple(np.split(t, [2], 1)),
                      [I((2, 3), "i32")], ("i32", "i32")))
    for k in (0, 1, -1, 2, -3):
        specs.append(case("tril.f32.3x4.k%d" % k, lambda t, k=k: t.tril(k), lambda np, t, k=k: np.tril(t, k), [F((3, 4))], "f32", EXACT))
        specs.append(case("triu.f32.3x4.k%d" % k, lambda t, k=k: t.triu(k), lambda np, t, k=k: np.triu(t, k), [F((3, 4))], "f32", EXACT))
    specs.append(case("tril.i32.2x3x3.batch", lambda t: ember.tril(t), lambda np, t: np.tril(t), [I((2, 3, 3), "i32")], "i32"))
    specs.append(case("triu.b.4x2", lambda t: ember.triu(t, 1), lambda np, t: np.triu(t, 1), [B((4, 2))], "b"))
    return specs


def _np_pad(np, x, pad, mode, value):
    widths = [(0, 0)] * x.ndim
    for i in range(len(pad) // 2):
        widths[x.ndim - 1 - i] = (pad[2 * i], pad[2 * i + 1])
    if mode == "constant":
        # negative amounts crop
        crop = tuple(slice(-min(b, 0), x.shape[d] + min(a, 0)) for d, (b, a) in enumerate(widths))
        x = x[crop]
        widths = [(max(b, 0), max(a, 0)) for b, a in widths]
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode={"reflect": "reflect", "replicate": "edge"}[mode])


def pad_cases():
    specs = []
    table = [("constant", (1, 2), 0.0), ("constant", (1, 0, 2, 1), 0.0), ("constant", (2, 1), -1.5),
             ("constant", (-1, 1, 1, -1), 0.0), ("constant", (1, 1, 0, 0, 1, 0), 0.0),
             ("reflect", (2, 1), 0.0), ("reflect", (1, 2, 2, 0), 0.0), ("replicate", (3, 1), 0.0),
             ("replicate", (1, 2, 2, 1), 0.0)]
    for mode, pad, value in table:
        label = "%s.%s%s" % (mode, "_".join(str(p) for p in pad), ".v" if value else "")
        specs.append(case("F.pad.f32.2x3x4.%s" % label.replace("-", "m"),
                          lambda t, p=pad, m=mode, v=value: nnf.pad(t, p, mode=m, value=v),
                          lambda np, t, p=pad, m=mode, v=value: _np_pad(np, t, p, m, v), [F((2, 3, 4))], "f32", EXACT))
    specs.append(case("F.pad.i64.constant.3", lambda t: nnf.pad(t, (1, 2), value=7), lambda np, t: _np_pad(np, t, (1, 2), "constant", 7),
                      [I((3,))], "i64"))
    specs.append(case("F.pad.f32.reflect.1x2x3x3", lambda t: nnf.pad(t, (2, 2, 1, 1), mode="reflect"),
                      lambda np, t: _np_pad(np, t, (2, 2, 1, 1), "reflect", 0), [F((1, 2, 3, 3))], "f32", EXACT))
    return specs


def getitem_cases():
    specs = []
    x = F((4, 3, 5))
    idx = I((3,), "i64", -4, 4)  # negative indices too
    idx2 = I((2, 2), "i64", 0, 3)
    forms = [
        ("t", lambda t, i: t[i], lambda np, t, i: t[i]),
        ("t.s1_", lambda t, i: t[i, 1:], lambda np, t, i: t[i, 1:]),
        ("all.t", lambda t, i: t[:, i % 3], lambda np, t, i: t[:, i % 3]),
        ("ell.t", lambda t, i: t[..., i], lambda np, t, i: t[..., i]),
        ("none.t.i1", lambda t, i: t[None, i, 1], lambda np, t, i: t[None, i, 1]),
        ("t.all.t", lambda t, i: t[i, :, i], lambda np, t, i: t[i, :, i]),
        ("t.t", lambda t, i: t[i, i % 3], lambda np, t, i: t[i, i % 3]),
        ("i1.t.step2", lambda t, i: t[1, i % 3, ::2], lambda np, t, i: t[1, i % 3, ::2]),
    ]
    for label, fn, ref in forms:
        specs.append(case("getitem.f32.4x3x5.%s" % label, fn, ref, [x, idx], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.t2d", lambda t, i: t[i], lambda np, t, i: t[i], [x, idx2], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.all.t2d.i0", lambda t, i: t[:, i, 0], lambda np, t, i: t[:, i, 0], [x, idx2], "f32", EXACT))
    for label, lst in (("list", [0, 2, -1]), ("list_rep", [1, 1, 3, 0])):
        specs.append(case("getitem.f32.4x3x5.%s" % label, lambda t, l=lst: t[l], lambda np, t, l=lst: t[l], [x], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.all.list", lambda t: t[:, [2, 0]], lambda np, t: t[:, [2, 0]], [x], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.list.list", lambda t: t[[0, 3], [1, 2]], lambda np, t: t[[0, 3], [1, 2]], [x], "f32", EXACT))
    # bool masks
    specs.append(case("getitem.f32.4x3x5.mask_full", lambda t, m: t[m], lambda np, t, m: t[m], [x, B((4, 3, 5))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.mask_d0", lambda t, m: t[m], lambda np, t, m: t[m], [x, B((4,))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.mask_d0.s1_", lambda t, m: t[m, 1:], lambda np, t, m: t[m, 1:], [x, B((4,))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.all.mask_d1_2", lambda t, m: t[:, m], lambda np, t, m: t[:, m], [x, B((3, 5))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.ell.mask_d2", lambda t, m: t[..., m], lambda np, t, m: t[..., m], [x, B((5,))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.mask_d0_1", lambda t, m: t[m], lambda np, t, m: t[m], [x, B((4, 3))], "f32", EXACT))
    specs.append(case("getitem.f32.4x3x5.cmp_mask", lambda t: t[t > 0.5], lambda np, t: t[t > 0.5], [x], "f32", EXACT))
    specs.append(case("getitem.i32.6.t", lambda t, i: t[i], lambda np, t, i: t[i], [I((6,), "i32"), I((4,), "i64", 0, 6)], "i32"))
    specs.append(case("getitem.b.6.mask", lambda t, m: t[m], lambda np, t, m: t[m], [B((6,)), B((6,))], "b"))
    specs.append(case("getitem.f32.4x3.i32_index", lambda t, i: t[i], lambda np, t, i: t[i], [F((4, 3)), I((3,), "i32", 0, 4)], "f32", EXACT))
    return specs


def _np_set(fn):
    def ref(np, x, *rest):
        x = x.copy()
        fn(np, x, *rest)
        return x
    return ref


def setitem_cases():
    specs = []
    x = F((4, 3))
    perm = V([2, 0, 3], "i64")  # distinct: a set with repeated indices has no single answer

    def s1(t, i, v):
        t[i] = v
        return t
    specs.append(case("setitem.f32.4x3.t.rows", s1, _np_set(lambda np, t, i, v: t.__setitem__(i, v)),
                      [x, perm, F((3, 3))], "f32", EXACT))

    def s2(t, i):
        t[i] = 9.0
        return t
    specs.append(case("setitem.f32.4x3.t.scalar", s2, _np_set(lambda np, t, i: t.__setitem__(i, 9.0)), [x, perm], "f32", EXACT))

    def s3(t, i, v):
        t[:, i % 3] = v
        return t
    specs.append(case("setitem.f32.4x3.all.t.bcast", s3, _np_set(lambda np, t, i, v: t.__setitem__((slice(None), i % 3), v)),
                      [x, perm, F((4, 1))], "f32", EXACT))

    def s4(t, m):
        t[m] = -1.0
        return t
    specs.append(case("setitem.f32.4x3.mask.scalar", s4, _np_set(lambda np, t, m: t.__setitem__(m, -1.0)), [x, B((4, 3))], "f32", EXACT))

    def s5(t, m, v):
        t[m] = v
        return t
    specs.append(case("setitem.f32.4x3.mask_d0.row", s5, _np_set(lambda np, t, m, v: t.__setitem__(m, v)),
                      [x, B((4,)), F((3,))], "f32", EXACT))

    def s6(t):
        t[[0, 2], 1:] = 5.0
        return t
    specs.append(case("setitem.f32.4x3.list.s1_", s6, _np_set(lambda np, t: t.__setitem__(([0, 2], slice(1, None)), 5.0)),
                      [x], "f32", EXACT))

    def s7(t):
        t[t < 0] = 0.0
        return t
    specs.append(case("setitem.f32.4x3.cmp_mask", s7, _np_set(lambda np, t: t.__setitem__(t < 0, 0.0)), [x], "f32", EXACT))

    def s8(t, i, j, v):
        t[i, j] = v
        return t
    specs.append(case("setitem.i32.4x3.t.t", s8, _np_set(lambda np, t, i, j, v: t.__setitem__((i, j), v)),
                      [I((4, 3), "i32"), perm, V([1, 1, 2], "i64"), I((3,), "i32")], "i32"))

    # index_put
    def ip(acc):
        def fn(t, i, j, v):
            return t.index_put((i, j), v, accumulate=acc)
        return fn

    def ip_ref(acc):
        def ref(np, t, i, j, v):
            t = t.copy()
            if acc:
                np.add.at(t, (i, j), v)
            else:
                t[i, j] = v
            return t
        return ref
    specs.append(case("index_put.f32.4x3.set", ip(False), ip_ref(False), [x, perm, V([0, 2, 1], "i64"), F((3,))], "f32", EXACT))
    dup_i, dup_j = V([1, 1, 3, 1], "i64"), V([0, 0, 2, 0], "i64")
    specs.append(case("index_put.f32.4x3.accumulate", ip(True), ip_ref(True), [x, dup_i, dup_j, F((4,))], "f32", "composite"))
    specs.append(case("index_put.i64.4x3.accumulate", ip(True), ip_ref(True), [I((4, 3)), dup_i, dup_j, I((4,))], "i64"))
    specs.append(case("index_put.f32.4x3.accumulate.scalar_value", lambda t, i, j: t.index_put((i, j), ember.tensor(1.5, device=t.device), accumulate=True),
                      lambda np, t, i, j: ip_ref(True)(np, t, i, j, np.float64(1.5)), [x, dup_i, dup_j], "f32", "composite"))
    specs.append(case("index_put.f32.4x3.rows", lambda t, i, v: t.index_put((i,), v),
                      lambda np, t, i, v: _np_set(lambda np, t, i, v: t.__setitem__(i, v))(np, t, i, v), [x, perm, F((3,))], "f32", EXACT))
    specs.append(case("index_put.f32.4x3.mask", lambda t, m: t.index_put((m,), ember.tensor(2.0, device=t.device)),
                      _np_set(lambda np, t, m: t.__setitem__(m, 2.0)), [x, B((4, 3))], "f32", EXACT))
    return specs


SPECS = movement_cases() + pad_cases() + getitem_cases() + setitem_cases()
CASES = kit.variants(SPECS)


def test_shape2(device, case):
    kit.run(device, case)
