"""Shape and movement ops: reshape, view, permute, transpose, expand, flatten, squeeze, unsqueeze,
ember.cat, ember.stack. Values only move, so floats compare exactly (signs of zero included)."""
import ember

import conformance_kit as kit
from conformance_kit import EXACT, F, I, B, case

PARAMETERS = ("device", "case")


def move(name, fn, ref, inputs, out="f32"):
    return case(name, fn, ref, inputs, out, EXACT if out in ("f32", "f64", "f16", "bf16") else None)


def _np_expand(np, x, shape):
    lead = len(shape) - x.ndim
    full = tuple(x.shape[i - lead] if s == -1 else s for i, s in enumerate(shape))
    return np.broadcast_to(x, full)


def reshape_cases():
    specs = []
    x = F((2, 3, 4))
    for shape in ((4, 6), (-1,), (2, -1, 2), (24,), (1, 24, 1), (4, 3, 2)):
        label = "_".join(str(s) for s in shape).replace("-1", "m1")
        specs.append(move("reshape.f32.2x3x4.to_" + label, lambda t, s=shape: t.reshape(s),
                          lambda np, t, s=shape: t.reshape(s), [x]))
    specs.append(move("reshape.f32.2x3x4.varargs", lambda t: t.reshape(6, -1),
                      lambda np, t: t.reshape(6, -1), [x]))
    specs.append(move("view.f32.2x3x4", lambda t: t.view(3, 8), lambda np, t: t.reshape(3, 8), [x]))
    for label, spec, shape, out in (("f32.0x3.to_3_0", F((0, 3)), (3, 0), "f32"),
                                    ("f32.0x3.to_m1_3", F((0, 3)), (-1, 3), "f32"),
                                    ("f32.0x3.to_m1", F((0, 3)), (-1,), "f32"),
                                    ("f32.0d.to_1", F(()), (1,), "f32"),
                                    ("f32.1.to_0d", F((1,)), (), "f32"),
                                    ("f32.1x1.to_m1", F((1, 1)), (-1,), "f32"),
                                    ("i64.2x3.to_3_2", I((2, 3)), (3, 2), "i64"),
                                    ("b.2x3.to_6", B((2, 3)), (6,), "b")):
        specs.append(move("reshape." + label, lambda t, s=shape: t.reshape(s),
                          lambda np, t, s=shape: t.reshape(s), [spec], out))
    return specs


def permute_cases():
    specs = []
    x = F((2, 3, 4))
    for dims in ((2, 0, 1), (-1, 0, 1), (0, 1, 2), (1, 2, 0)):
        label = "_".join(str(d) for d in dims).replace("-", "m")
        specs.append(move("permute.f32.2x3x4." + label, lambda t, d=dims: t.permute(*d),
                          lambda np, t, d=dims: np.transpose(t, d), [x]))
    specs.append(move("permute.f32.2x3x4.tuple", lambda t: t.permute((2, 1, 0)),
                      lambda np, t: np.transpose(t, (2, 1, 0)), [x]))
    specs.append(move("permute.f32.0d", lambda t: t.permute(), lambda np, t: t, [F(())]))
    specs.append(move("permute.f32.0x3", lambda t: t.permute(1, 0), lambda np, t: t.T, [F((0, 3))]))
    specs.append(move("permute.f16.2x3", lambda t: t.permute(1, 0), lambda np, t: t.T, [F((2, 3), "f16")], "f16"))
    for a, b in ((0, 2), (-1, -2), (1, 1), (2, 0)):
        label = ("%d_%d" % (a, b)).replace("-", "m")
        specs.append(move("transpose.f32.2x3x4." + label, lambda t, a=a, b=b: t.transpose(a, b),
                          lambda np, t, a=a, b=b: np.swapaxes(t, a, b), [x]))
    specs.append(move("transpose.i32.2x3", lambda t: t.transpose(0, 1), lambda np, t: t.T,
                      [I((2, 3), "i32")], "i32"))
    # a permuted view fed to ops that read it: reshape must copy in the permuted order
    specs.append(move("permute_reshape.f32.2x3x4", lambda t: t.permute(2, 0, 1).reshape(4, 6),
                      lambda np, t: np.transpose(t, (2, 0, 1)).reshape(4, 6), [x]))
    specs.append(case("permute_add.f32.3x4", lambda t: t.transpose(0, 1) + t.transpose(0, 1).reshape(4, 3),
                      lambda np, t: t.T + t.T, [F((3, 4))], "f32", EXACT))
    return specs


def expand_cases():
    specs = []
    for src, shape in (((3, 1), (3, 4)), ((1,), (2, 3, 1)), ((), (2, 3)), ((3, 1), (-1, 4)),
                       ((1, 3), (0, 3)), ((2, 1, 1), (2, 2, 3)), ((1, 3), (2, 1, 3)), ((2, 3), (2, 3))):
        label = "%s.to_%s" % (kit.shape_name(src), "_".join(str(s) for s in shape).replace("-1", "m1"))
        specs.append(move("expand.f32." + label, lambda t, s=shape: t.expand(*s),
                          lambda np, t, s=shape: _np_expand(np, t, s), [F(src)]))
    specs.append(move("expand.f32.3x1.tuple", lambda t: t.expand((3, 2)),
                      lambda np, t: np.broadcast_to(t, (3, 2)), [F((3, 1))]))
    specs.append(move("expand.b.1x3.to_2_3", lambda t: t.expand(2, 3),
                      lambda np, t: np.broadcast_to(t, (2, 3)), [B((1, 3))], "b"))
    # an expanded view fed to ops that read it
    specs.append(case("expand_sum.f32.3x1", lambda t: t.expand(3, 4).sum(0),
                      lambda np, t: np.broadcast_to(t, (3, 4)).sum(0), [F((3, 1))], "f32", (1e-6, 1e-6)))
    specs.append(move("expand_reshape.f32.3x1", lambda t: t.expand(3, 2).reshape(-1),
                      lambda np, t: np.broadcast_to(t, (3, 2)).reshape(-1), [F((3, 1))]))
    return specs


def flatten_cases():
    specs = []
    x = F((2, 3, 4))
    for args in ((), (1,), (0, 1), (-2, -1), (1, 1), (0, -1)):
        a = args + (0, -1)[len(args):]
        label = "_".join(str(v) for v in args).replace("-", "m") or "default"
        shape = (2, 3, 4)
        new = shape[:a[0] % 3] + (kit.numel(shape[a[0] % 3:a[1] % 3 + 1]),) + shape[a[1] % 3 + 1:]
        specs.append(move("flatten.f32.2x3x4." + label, lambda t, args=args: t.flatten(*args),
                          lambda np, t, new=new: t.reshape(new), [x]))
    specs.append(move("flatten.f32.0d", lambda t: t.flatten(), lambda np, t: t.reshape(1), [F(())]))
    specs.append(move("flatten.f32.2x0x3", lambda t: t.flatten(1), lambda np, t: t.reshape(2, 0), [F((2, 0, 3))]))
    return specs


def squeeze_cases():
    specs = []
    x = F((1, 3, 1))
    specs.append(move("squeeze.f32.1x3x1.all", lambda t: t.squeeze(), lambda np, t: np.squeeze(t), [x]))
    for d in (0, -1, 2):
        specs.append(move(("squeeze.f32.1x3x1.d%d" % d).replace("-", "m"), lambda t, d=d: t.squeeze(d),
                          lambda np, t, d=d: np.squeeze(t, axis=d), [x]))
    specs.append(move("squeeze.f32.1x3x1.d1_noop", lambda t: t.squeeze(1), lambda np, t: t, [x]))
    specs.append(move("squeeze.f32.0d", lambda t: t.squeeze(), lambda np, t: t, [F(())]))
    specs.append(move("squeeze.f32.1x0", lambda t: t.squeeze(), lambda np, t: t.reshape(0), [F((1, 0))]))
    for d in (0, -1, 1, 2, -3):
        specs.append(move(("unsqueeze.f32.2x3.d%d" % d).replace("-", "m"), lambda t, d=d: t.unsqueeze(d),
                          lambda np, t, d=d: np.expand_dims(t, d), [F((2, 3))]))
    specs.append(move("unsqueeze.f32.0d.d0", lambda t: t.unsqueeze(0), lambda np, t: t.reshape(1), [F(())]))
    specs.append(move("unsqueeze.f32.0d.dm1", lambda t: t.unsqueeze(-1), lambda np, t: t.reshape(1), [F(())]))
    specs.append(move("unsqueeze.i32.3.d1", lambda t: t.unsqueeze(1), lambda np, t: t.reshape(3, 1),
                      [I((3,), "i32")], "i32"))
    return specs


def _cat(dim):
    return lambda *ts: ember.cat(list(ts), dim)


def _stack(dim):
    return lambda *ts: ember.stack(list(ts), dim)


def cat_cases():
    specs = []
    for shapes, dim in ((((2, 3), (1, 3)), 0), (((2, 3), (2, 2)), -1), (((2, 3), (0, 3), (1, 3)), 0),
                        (((2, 1, 2), (2, 3, 2), (2, 1, 2)), 1), (((3,),), 0), (((0, 2), (0, 2)), 0),
                        (((2, 2), (2, 2)), 1)):
        label = "+".join(kit.shape_name(s) for s in shapes) + (".d%d" % dim).replace("-", "m")
        specs.append(move("cat.f32." + label, _cat(dim),
                          lambda np, *ts, d=dim: np.concatenate(ts, axis=d), [F(s) for s in shapes]))
    specs.append(move("cat.i32+f32.2x2", _cat(0), lambda np, *ts: np.concatenate(ts, axis=0),
                      [I((1, 2), "i32"), F((2, 2))]))
    specs.append(move("cat.b+i64.3", _cat(0), lambda np, *ts: np.concatenate([t.astype(np.int64) for t in ts]),
                      [B((3,)), I((2,), "i64")], "i64"))
    specs.append(move("cat.f16+bf16.2", _cat(0), lambda np, *ts: np.concatenate(ts),
                      [F((2,), "f16"), F((2,), "bf16")], "f32"))
    for shapes, dim in ((((2, 3), (2, 3)), 0), (((2, 3), (2, 3), (2, 3)), -1), (((2, 3), (2, 3)), 1),
                        (((), (), ()), 0), (((0, 2), (0, 2)), 1), (((3,), (3,)), -2)):
        label = "+".join(kit.shape_name(s) for s in shapes) + (".d%d" % dim).replace("-", "m")
        specs.append(move("stack.f32." + label, _stack(dim),
                          lambda np, *ts, d=dim: np.stack(ts, axis=d), [F(s) for s in shapes]))
    specs.append(move("stack.i32+i64.2", _stack(0), lambda np, *ts: np.stack(ts),
                      [I((2,), "i32"), I((2,), "i64")], "i64"))
    specs.append(move("stack.b.2x2", _stack(1), lambda np, *ts: np.stack(ts, axis=1),
                      [B((2, 2)), B((2, 2))], "b"))
    return specs


SPECS = reshape_cases() + permute_cases() + expand_cases() + flatten_cases() + squeeze_cases() + cat_cases()
CASES = kit.variants(SPECS)


def test_shape(device, case):
    kit.run(device, case)
