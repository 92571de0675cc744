"""Indexing: x[...] with ints, negative ints, slices with steps, None and Ellipsis; x[...] = v with
value semantics (tensors that shared x's data keep their values)."""
import ember

import conformance_kit as kit
from conformance_kit import EXACT, F, I, B, case

PARAMETERS = ("device", "case")


class _Index:
    """``IX[1::2, None]`` is the index object itself (MicroPython cannot call ``slice()``)."""

    def __getitem__(self, index):
        return index


IX = _Index()


def get(name, index, spec, out="f32"):
    tol = EXACT if out in ("f32", "f64", "f16", "bf16") else None
    return case(name, lambda t: t[index], lambda np, t: t[index], [spec], out, tol)


GETS = [
    ("i1", IX[1]), ("im1", IX[-1]), ("i1_2", IX[1, 2]), ("im1_m2_m3", IX[-1, -2, -3]),
    ("s0_2", IX[0:2]), ("s_step2", IX[::2]), ("s1_step2.s_step3", IX[1::2, ::3]),
    ("all.i1", IX[:, 1]), ("ell.i1", IX[..., 1]), ("ell.step2", IX[..., ::2]), ("none", IX[None]),
    ("all.none.i1", IX[:, None, 1]), ("i1.ell.none", IX[1, ..., None]), ("ell.none", IX[..., None]),
    ("empty", IX[2:1]), ("clamp", IX[-100:100]), ("all.all.last2", IX[:, :, -2:]), ("ell", IX[...]),
    ("none.ell.none", IX[None, ..., None]), ("s0_0", IX[0:0]), ("all.s4_", IX[:, 4:]),
    ("im2.s_m1.step2", IX[-2, :-1, ::2]), ("s1_m1.ell.i0", IX[1:-1, ..., 0]), ("s_step5", IX[::5]),
    ("all.s1_4_step2.im1", IX[:, 1:4:2, -1]),
]


def getitem_cases():
    specs = []
    for label, index in GETS:
        specs.append(get("getitem.f32.3x4x5." + label, index, F((3, 4, 5))))
    for label, index in (("ell", IX[...]), ("none", IX[None]), ("none.none", IX[None, None])):
        specs.append(get("getitem.f32.0d." + label, index, F(())))
    specs.append(get("getitem.i64.2x3.im1", IX[-1], I((2, 3)), "i64"))
    specs.append(get("getitem.b.2x3.all.step2", IX[:, ::2], B((2, 3)), "b"))
    specs.append(get("getitem.f16.4.s1_", IX[1:], F((4,), "f16"), "f16"))
    specs.append(get("getitem.f32.0x3.all.i1", IX[:, 1], F((0, 3))))
    specs.append(get("getitem.f32.2x0.i1", IX[1], F((2, 0))))
    specs.append(case("getitem.f32.3x4.chained", lambda t: t[1][2], lambda np, t: t[1][2], [F((3, 4))], "f32", EXACT))
    specs.append(case("getitem.f32.3x4.tensor_index", lambda t: t[ember.tensor(2, device=t.device)],
                      lambda np, t: t[2], [F((3, 4))], "f32", EXACT))
    specs.append(case("getitem.f32.3x4.slice_of_slice", lambda t: t[1:, ::2][::-1 + 2, 1],
                      lambda np, t: t[1:, ::2][::1, 1], [F((3, 4))], "f32", EXACT))
    return specs


def _np_set(index, value):
    def ref(np, x, *v):
        x = x.copy()
        x[index] = v[0] if v else value
        return x
    return ref


def put(name, index, specs, value=None, out="f32"):
    """``x[index] = value`` (a scalar) or ``= the second input``; returns the updated ``x``."""
    def fn(x, *v):
        x[index] = v[0] if v else value
        return x
    tol = EXACT if out in ("f32", "f64", "f16", "bf16") else None
    return case(name, fn, _np_set(index, value), specs, out, tol)


def setitem_cases():
    specs = []
    x = F((3, 4))
    specs.append(put("setitem.f32.3x4.i1.scalar", IX[1], [x], 5.0))
    specs.append(put("setitem.f32.3x4.all_i1.tensor", IX[:, 1], [x, F((3,))]))
    specs.append(put("setitem.f32.3x4.i0_step2.tensor", IX[0, ::2], [x, F((2,))]))
    specs.append(put("setitem.f32.3x4.s1_.s1_3.broadcast", IX[1:, 1:3], [x, F((1, 2))]))
    specs.append(put("setitem.f32.3x4.row_broadcast", IX[1:], [x, F((4,))]))
    specs.append(put("setitem.f32.3x4.ell.int", IX[...], [x], 0))
    specs.append(put("setitem.f32.3x4.im1_im1.nan", IX[-1, -1], [x], kit.NAN))
    specs.append(put("setitem.f32.3x4.i1.lead1", IX[1], [x, F((1, 4))]))
    specs.append(put("setitem.f32.3x4.empty", IX[2:1], [x], 9.0))
    specs.append(put("setitem.f32.3x4.none_i0", IX[None, 0], [x, F((4,))]))
    specs.append(put("setitem.i32.3x4.i1.float", IX[1], [I((3, 4), "i32")], 2.7, "i32"))
    specs.append(put("setitem.i32.3x4.i1.float_tensor", IX[1], [I((3, 4), "i32"), F((4,))], None, "i32"))
    specs.append(put("setitem.i8.4.edge", IX[0], [I((4,), "i8")], -128, "i8"))  # 200 raises (bounds)
    specs.append(put("setitem.b.2x3.i0", IX[0], [B((2, 3))], True, "b"))
    specs.append(put("setitem.f16.4.s1_", IX[1:], [F((4,), "f16"), F((3,), "f32")], None, "f16"))
    specs.append(put("setitem.f32.0d.ell", IX[...], [F(())], 2.5))

    def aliases(x):
        flat = x.reshape(-1)  # shares x's data on the Cpu backend
        row = x[1]  # a view of one row
        x[1] = 7.0
        return x, flat, row

    def aliases_ref(np, x):
        flat, row = x.reshape(-1).copy(), x[1].copy()
        x = x.copy()
        x[1] = 7.0
        return x, flat, row

    specs.append(case("setitem.f32.3x4.value_semantics", aliases, aliases_ref, [x], ("f32", "f32", "f32"), EXACT))

    def self_assign(x):
        x[0] = x[2]
        x[:, 0] = x[:, 1]
        return x

    def self_assign_ref(np, x):
        x = x.copy()
        x[0] = x[2]
        x[:, 0] = x[:, 1]
        return x

    specs.append(case("setitem.f32.3x4.from_itself", self_assign, self_assign_ref, [x], "f32", EXACT))

    def view_write(x):
        v = x.transpose(0, 1)
        v[0] = -1.0  # writes v only
        return x, v

    def view_write_ref(np, x):
        v = x.T.copy()
        v[0] = -1.0
        return x, v

    specs.append(case("setitem.f32.3x4.write_view", view_write, view_write_ref, [x], ("f32", "f32"), EXACT))
    return specs


SPECS = getitem_cases() + setitem_cases()
CASES = kit.variants(SPECS)


def test_index(device, case):
    kit.run(device, case)
