"""Structural ops against PyTorch (float64 on CPython; golden values under MicroPython): einsum,
diag/diagonal, repeat_interleave, unflatten, view_as, Tensor.unfold, meshgrid, logcumsumexp,
std_mean/var_mean, scatter_reduce, conv3d, conv_transpose3d, max/avg_pool3d, max_unpool2d and
F.unfold (im2col)."""
import ember
import ember.nn.functional as nnf

import conformance_kit as kit
from conformance_kit import EXACT, F, I, V, case

PARAMETERS = ("device", "case")
INF = float("inf")


def torch_ref(fn):
    """A reference that runs ``fn(torch, *tensors)`` on the numpy inputs (torch is imported only
    when expected values are computed: on CPython, never under MicroPython)."""
    def ref(np, *arrays):
        import warnings

        import torch
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # conv3d: "padding='same' with even kernel lengths"
            out = fn(torch, *[torch.from_numpy(np.ascontiguousarray(a)) for a in arrays])
        if type(out) in (tuple, list):
            return tuple(o.numpy() for o in out)
        return out.numpy()
    return ref


EINSUM = (
    ("bmm", "bij,bjk->bik", ((2, 3, 4), (2, 4, 5))),
    ("bmm_implicit", "bij,bjk", ((2, 3, 4), (2, 4, 5))),
    ("trace", "ii", ((3, 3),)),
    ("diag", "ii->i", ((3, 3),)),
    ("transpose", "ij->ji", ((3, 4),)),
    ("ellipsis_t", "...ij->...ji", ((2, 3, 4),)),
    ("outer", "i,j->ij", ((4,), (3,))),
    ("dot", "i,i->", ((5,), (5,))),
    ("sum_all", "bij->", ((2, 3, 4),)),
    ("bik", "bij,bkj->bik", ((2, 3, 4), (2, 5, 4))),
    ("chain3", "ij,jk,kl->il", ((2, 3), (3, 4), (4, 2))),
    ("batch_diag", "bii->bi", ((2, 3, 3),)),
    ("ellipsis_vec", "...j,j", ((2, 3, 4), (4,))),
    ("hadamard", "ij,ij->ij", ((3, 4), (3, 4))),
    ("bcast_batch", "bij,ij->bj", ((2, 3, 4), (3, 4))),
    ("ellipsis_mid", "a...b,...b->a...", ((2, 3, 4), (3, 4))),
    ("size1_bcast", "ij,ij->i", ((3, 1), (3, 4))),
    ("spaces", "b i j , b j k -> b k i", ((2, 3, 4), (2, 4, 2))),
)


def einsum_cases():
    specs = []
    for label, eq, shapes in EINSUM:
        specs.append(case("einsum.f32.%s" % label, lambda *ts, e=eq: ember.einsum(e, *ts),
                          torch_ref(lambda torch, *ts, e=eq: torch.einsum(e, *ts)), [F(s) for s in shapes], "f32",
                          "composite"))
    specs.append(case("einsum.f32.list", lambda a, b: ember.einsum("ij,jk->ik", [a, b]),
                      torch_ref(lambda torch, a, b: torch.einsum("ij,jk->ik", [a, b])), [F((2, 3)), F((3, 2))], "f32",
                      "composite"))
    specs.append(case("einsum.i64.mm", lambda a, b: ember.einsum("ij,jk", a, b),
                      torch_ref(lambda torch, a, b: torch.einsum("ij,jk", a, b)), [I((2, 3)), I((3, 4))], "i64"))
    return specs


def diag_cases():
    specs = []
    for k in (0, 1, -2):
        specs.append(case("diag.f32.5.k%d" % k, lambda t, k=k: t.diag(k), torch_ref(lambda torch, t, k=k: torch.diag(t, k)),
                          [F((5,))], "f32", EXACT))
    for k in (0, 2, -1, 6):
        specs.append(case("diag.f32.3x5.k%d" % k, lambda t, k=k: ember.diag(t, k),
                          torch_ref(lambda torch, t, k=k: torch.diag(t, k)), [F((3, 5))], "f32", EXACT))
    specs.append(case("diag.i32.4", lambda t: ember.diag(t), torch_ref(lambda torch, t: torch.diag(t)),
                      [I((4,), "i32")], "i32"))
    for label, args in (("0_0_1", (0, 0, 1)), ("1_1_2", (1, 1, 2)), ("m1_2_0", (-1, 2, 0)), ("2_m1_m2", (2, -1, -2)),
                        ("m5_0_1", (-5, 0, 1))):
        specs.append(case("diagonal.f32.2x3x4.%s" % label, lambda t, a=args: t.diagonal(*a),
                          torch_ref(lambda torch, t, a=args: torch.diagonal(t, *a)), [F((2, 3, 4))], "f32", EXACT))
    specs.append(case("diagonal.b.3x3.fn", lambda t: ember.diagonal(t, 1), torch_ref(lambda torch, t: torch.diagonal(t, 1)),
                      [kit.B((3, 3))], "b"))
    return specs


def movement_cases():
    specs = []
    x = F((2, 3, 4))
    specs.append(case("repeat_interleave.f32.2x3x4.r2.d1", lambda t: t.repeat_interleave(2, 1),
                      torch_ref(lambda torch, t: t.repeat_interleave(2, 1)), [x], "f32", EXACT))
    specs.append(case("repeat_interleave.f32.2x3x4.r3.flat", lambda t: t.repeat_interleave(3),
                      torch_ref(lambda torch, t: t.repeat_interleave(3)), [x], "f32", EXACT))
    specs.append(case("repeat_interleave.f32.2x3x4.tensor.d1", lambda t, r: t.repeat_interleave(r, 1),
                      torch_ref(lambda torch, t, r: t.repeat_interleave(r, 1)), [x, V([1, 0, 2], "i64")], "f32", EXACT))
    specs.append(case("repeat_interleave.i64.fn.one_count", lambda t, r: ember.repeat_interleave(t, r, dim=0),
                      torch_ref(lambda torch, t, r: torch.repeat_interleave(t, r, dim=0)),
                      [I((3, 2)), V([2], "i64")], "i64"))
    specs.append(case("repeat_interleave.i64.counts", lambda r: ember.repeat_interleave(r),
                      torch_ref(lambda torch, r: torch.repeat_interleave(r)), [V([2, 0, 3, 1], "i64")], "i64"))
    for label, d, sizes in (("d1", 1, (3, 1)), ("dm1", -1, (2, -1)), ("d0", 0, (1, 2))):
        specs.append(case("unflatten.f32.2x3x4.%s" % label, lambda t, d=d, s=sizes: t.unflatten(d, s),
                          torch_ref(lambda torch, t, d=d, s=sizes: t.unflatten(d, s)), [x], "f32", EXACT))
    specs.append(case("unflatten.i32.fn", lambda t: ember.unflatten(t, 0, (2, 3)),
                      torch_ref(lambda torch, t: torch.unflatten(t, 0, (2, 3))), [I((6,), "i32")], "i32"))
    specs.append(case("view_as.f32.2x3x4.to_6x4", lambda t, o: t.view_as(o),
                      torch_ref(lambda torch, t, o: t.reshape(o.shape)), [x, F((6, 4))], "f32", EXACT))
    for label, args in (("d2_s2_1", (2, 2, 1)), ("d2_s3_2", (2, 3, 2)), ("d0_s1_1", (0, 1, 1)), ("d1_s3_1", (1, 3, 1)),
                        ("dm1_s4_3", (-1, 4, 3)), ("d1_s2_5", (1, 2, 5))):
        specs.append(case("unfold.f32.2x3x4.%s" % label, lambda t, a=args: t.unfold(*a),
                          torch_ref(lambda torch, t, a=args: t.unfold(*a)), [x], "f32", EXACT))
    specs.append(case("meshgrid.f32.ij", lambda a, b, c: ember.meshgrid(a, b, c, indexing="ij"),
                      torch_ref(lambda torch, a, b, c: torch.meshgrid(a, b, c, indexing="ij")),
                      [F((4,)), F((3,)), F((2,))], ("f32", "f32", "f32"), EXACT))
    specs.append(case("meshgrid.i64.xy.list", lambda a, b: ember.meshgrid([a, b], indexing="xy"),
                      torch_ref(lambda torch, a, b: torch.meshgrid([a, b], indexing="xy")),
                      [I((4,)), I((3,))], ("i64", "i64")))
    return specs


def reduction_cases():
    specs = []
    for d in (0, 1, -1):
        specs.append(case("logcumsumexp.f32.3x7.d%d" % d, lambda t, d=d: t.logcumsumexp(d),
                          torch_ref(lambda torch, t, d=d: t.logcumsumexp(d)), [F((3, 7), lo=-30.0, hi=30.0)], "f32",
                          "composite"))
    specs.append(case("logcumsumexp.f32.inf", lambda t: ember.logcumsumexp(t, 0),
                      torch_ref(lambda torch, t: torch.logcumsumexp(t, 0)),
                      [V([-INF, -INF, -1000.0, 2.0, -INF, 80.0, 100.0, -3.0])], "f32", "composite"))
    specs.append(case("logcumsumexp.i32.5", lambda t: t.logcumsumexp(0),
                      torch_ref(lambda torch, t: t.double().logcumsumexp(0)), [I((5,), "i32")], "f32", "composite"))
    for name in ("std_mean", "var_mean"):
        for label, args, kw in (("all", (), {}), ("d1", (1,), {}), ("d0_2.keep", ((0, 2),), {"keepdim": True}),
                                ("d1.c0", (1,), {"correction": 0})):
            specs.append(case("%s.f32.3x4x5.%s" % (name, label),
                              lambda t, n=name, a=args, k=kw: getattr(ember, n)(t, *a, **k),
                              torch_ref(lambda torch, t, n=name, a=args, k=kw: getattr(torch, n)(t, *a, **k)),
                              [F((3, 4, 5))], ("f32", "f32"), "composite"))
    return specs


def scatter_cases():
    specs = []
    for reduce in ("sum", "prod", "mean", "amax", "amin"):
        for inc in (True, False):
            tag = "self" if inc else "noself"
            specs.append(case("scatter_reduce.f32.4x5.d0.%s.%s" % (reduce, tag),
                              lambda x, i, s, r=reduce, inc=inc: x.scatter_reduce(0, i, s, r, include_self=inc),
                              torch_ref(lambda torch, x, i, s, r=reduce, inc=inc: x.scatter_reduce(0, i, s, r,
                                                                                                  include_self=inc)),
                              [F((4, 5)), I((3, 5), "i64", 0, 4), F((3, 5))], "f32", "composite"))
        specs.append(case("scatter_reduce.f32.3x6.d1.part.%s" % reduce,
                          lambda x, i, s, r=reduce: ember.scatter_reduce(x, 1, i, s, r),
                          torch_ref(lambda torch, x, i, s, r=reduce: torch.scatter_reduce(x, 1, i, s, r)),
                          [F((3, 6)), I((2, 4), "i64", 0, 6), F((3, 5))], "f32", "composite"))
        specs.append(case("scatter_reduce.i32.4x3.d0.%s" % reduce,
                          lambda x, i, s, r=reduce: x.scatter_reduce(0, i, s, r, include_self=False),
                          torch_ref(lambda torch, x, i, s, r=reduce: x.scatter_reduce(0, i, s, r, include_self=False)),
                          [I((4, 3), "i32"), I((5, 3), "i64", 0, 4), I((5, 3), "i32", -4, 5)], "i32"))
    return specs


def _unpool_indices(n, c, h, w, k):
    """Flat indices into (h, w) planes, one inside each k x k window, varied by position."""
    out = []
    for b in range(n * c):
        for i in range(h // k):
            for j in range(w // k):
                a, e = (b + i) % k, (b + 2 * j + 1) % k
                out.append((i * k + a) * w + j * k + e)
    return out


# a 3-D kernel sums up to 72 products: float32 accumulation (BLAS, C, GPU) is allowed (architecture §3)
CONV_TOL = (1e-5, 4e-6)


def U(shape):
    return F(shape, lo=-1.0, hi=1.0)


def spatial_cases():
    specs = []
    x5 = F((2, 4, 5, 6, 5))
    for label, kw, wshape in (("plain", {}, (3, 4, 3, 2, 3)), ("s2", {"stride": 2}, (3, 4, 3, 2, 3)),
                              ("p1_d2", {"padding": (1, 0, 2), "stride": (1, 2, 1), "dilation": (2, 1, 1)},
                               (3, 4, 2, 2, 3)),
                              ("g2", {"groups": 2}, (4, 2, 2, 3, 2)), ("same", {"padding": "same"}, (3, 4, 2, 3, 2))):
        specs.append(case("conv3d.f32.%s" % label, lambda x, w, b, k=kw: nnf.conv3d(x, w, b, **k),
                          torch_ref(lambda torch, x, w, b, k=kw: torch.nn.functional.conv3d(x, w, b, **k)),
                          [U((2, 4, 5, 6, 5)), U(wshape), U((wshape[0],))], "f32", CONV_TOL))
    for label, kw, wshape in (("plain", {}, (4, 3, 2, 2, 2)), ("s2_p1_op1", {"stride": 2, "padding": 1, "output_padding": 1},
                                                              (4, 2, 3, 3, 2)),
                              ("g2_d2", {"groups": 2, "dilation": 2}, (4, 1, 2, 2, 2))):
        specs.append(case("conv_transpose3d.f32.%s" % label, lambda x, w, b, k=kw: nnf.conv_transpose3d(x, w, b, **k),
                          torch_ref(lambda torch, x, w, b, k=kw: torch.nn.functional.conv_transpose3d(x, w, b, **k)),
                          [U((1, 4, 3, 4, 3)), U(wshape), U((wshape[1] * kw.get("groups", 1),))], "f32", CONV_TOL))
    for label, args in (("k2", (2,)), ("k3_s1_p1", (3, 1, 1)), ("k232_s121_p110", ((2, 3, 2), (1, 2, 1), (1, 1, 0)))):
        specs.append(case("max_pool3d.f32.%s" % label, lambda x, a=args: nnf.max_pool3d(x, *a),
                          torch_ref(lambda torch, x, a=args: torch.nn.functional.max_pool3d(x, *a)), [x5], "f32", EXACT))
        specs.append(case("avg_pool3d.f32.%s" % label, lambda x, a=args: nnf.avg_pool3d(x, *a),
                          torch_ref(lambda torch, x, a=args: torch.nn.functional.avg_pool3d(x, *a)), [x5], "f32",
                          "composite"))
    specs.append(case("max_pool3d.f32.dilated", lambda x: nnf.max_pool3d(x, 2, 1, 0, 2),
                      torch_ref(lambda torch, x: torch.nn.functional.max_pool3d(x, 2, 1, 0, 2)), [x5], "f32", EXACT))
    specs.append(case("avg_pool3d.f32.exclude_pad", lambda x: nnf.avg_pool3d(x, 3, 2, 1, count_include_pad=False),
                      torch_ref(lambda torch, x: torch.nn.functional.avg_pool3d(x, 3, 2, 1, count_include_pad=False)),
                      [x5], "f32", "composite"))
    specs.append(case("avg_pool3d.f32.divisor", lambda x: nnf.avg_pool3d(x, 2, divisor_override=3),
                      torch_ref(lambda torch, x: torch.nn.functional.avg_pool3d(x, 2, divisor_override=3)), [x5], "f32",
                      "composite"))
    idx = V(_unpool_indices(2, 3, 6, 8, 2), "i64", (2, 3, 3, 4))
    specs.append(case("max_unpool2d.f32.k2", lambda x, i: nnf.max_unpool2d(x, i, 2),
                      torch_ref(lambda torch, x, i: torch.nn.functional.max_unpool2d(x, i, 2)),
                      [F((2, 3, 3, 4)), idx], "f32", EXACT))
    specs.append(case("max_unpool2d.f32.k2.output_size", lambda x, i: nnf.max_unpool2d(x, i, 2, output_size=(7, 9)),
                      torch_ref(lambda torch, x, i: torch.nn.functional.max_unpool2d(x, i, 2, output_size=(7, 9))),
                      [F((2, 3, 3, 4)), V(_unpool_indices(2, 3, 6, 9, 2), "i64", (2, 3, 3, 4))], "f32", EXACT))
    x4 = F((2, 3, 6, 7))
    for label, kw in (("k2", {"kernel_size": 2}), ("k3_s2_p1", {"kernel_size": 3, "stride": 2, "padding": 1}),
                      ("k23_d21_s12", {"kernel_size": (2, 3), "dilation": (2, 1), "stride": (1, 2)})):
        specs.append(case("F.unfold.f32.%s" % label, lambda x, k=kw: nnf.unfold(x, **k),
                          torch_ref(lambda torch, x, k=kw: torch.nn.functional.unfold(x, **k)), [x4], "f32", EXACT))
    specs.append(case("F.unfold.f32.unbatched", lambda x: nnf.unfold(x, 2),
                      torch_ref(lambda torch, x: torch.nn.functional.unfold(x, 2)), [F((3, 4, 5))], "f32", EXACT))
    return specs


SPECS = einsum_cases() + diag_cases() + movement_cases() + reduction_cases() + scatter_cases() + spatial_cases()
CASES = kit.variants(SPECS)


def test_struct(device, case):
    kit.run(device, case)
