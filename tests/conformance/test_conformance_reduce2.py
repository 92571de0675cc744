"""More reductions and scans: prod var std (unbiased / correction) logsumexp argmin, cumsum cumprod
cummax cummin, sort argsort topk, nonzero masked_select unique. References in float64, per lane."""
import ember

import conformance_kit as kit
from conformance_kit import F, I, B, V, case

PARAMETERS = ("device", "case")

NAN, INF = kit.NAN, kit.INF


def _axis(x, dim):
    if x.ndim == 0 or dim is None:
        return None
    return tuple(dim) if type(dim) in (list, tuple) else dim


def _count(x, dim):
    ax = _axis(x, dim)
    if ax is None:
        return x.size
    ax = ax if type(ax) is tuple else (ax,)
    n = 1
    for a in ax:
        n *= x.shape[a]
    return n


def np_var(np, x, dim, correction, keepdim, sqrt=False):
    x = np.asarray(x, dtype=np.float64)
    ax = _axis(x, dim)
    mean = np.mean(x, axis=ax, keepdims=True)
    total = np.sum((x - mean) ** 2, axis=ax, keepdims=keepdim)
    out = total / max(_count(x, dim) - correction, 0)
    return np.sqrt(out) if sqrt else out


def np_logsumexp(np, x, dim, keepdim):
    x = np.asarray(x, dtype=np.float64)
    ax = _axis(x, dim)
    if x.ndim == 0:
        return x
    m = np.max(x, axis=ax, keepdims=True)
    m = np.where(np.isinf(m), 0.0, m)
    out = np.log(np.sum(np.exp(x - m), axis=ax, keepdims=True)) + m
    return out if keepdim else np.squeeze(out, axis=ax)


def _lanes(np, x, dim, fn, n_out):
    """Apply ``fn(list) -> n_out lists`` along ``dim`` of ``x``; returns n_out arrays."""
    x = np.asarray(x)
    moved = np.moveaxis(x, dim, -1)
    flat = moved.reshape(-1, moved.shape[-1]) if moved.size else moved.reshape(0, moved.shape[-1])
    outs = [[] for _ in range(n_out)]
    for row in flat.tolist():
        res = fn(row)
        for k in range(n_out):
            outs[k].append(res[k])
    arrays = []
    for k in range(n_out):
        width = len(outs[k][0]) if outs[k] else 0
        a = np.array(outs[k], dtype=np.float64 if k == 0 and x.dtype.kind == "f" else np.int64)
        a = a.reshape(moved.shape[:-1] + (width,))
        arrays.append(np.moveaxis(a, -1, dim))
    return arrays


def _scan_extreme(row, larger):
    vals, idxs, best, at = [], [], None, 0
    for i, v in enumerate(row):
        if best is None or (best == best and (v != v or v == best or (v > best if larger else v < best))):
            best, at = v, i  # ties move to the latest index; a nan, once seen, stays (torch)
        vals.append(best)
        idxs.append(at)
    return vals, idxs


def _sort_row(row, descending):
    """Stable; nan last ascending, first descending."""
    idx = list(range(len(row)))
    nan = [i for i in idx if row[i] != row[i]]
    num = [i for i in idx if row[i] == row[i]]
    num.sort(key=lambda i: -row[i] if descending else row[i])
    order = nan + num if descending else num + nan
    return [row[i] for i in order], order


def np_sort(np, x, dim, descending, k=None):
    if np.asarray(x).ndim == 0:
        return x, np.zeros((), dtype=np.int64)

    def fn(row):
        v, i = _sort_row(row, descending)
        return (v, i) if k is None else (v[:k], i[:k])
    return _lanes(np, x, dim, fn, 2)


def scan_cases():
    specs = []
    for dt, out in (("f32", "f32"), ("f64", "f64"), ("i32", "i64"), ("b", "i64")):
        spec = B((2, 3, 4)) if dt == "b" else (I((2, 3, 4), dt, -5, 6) if dt == "i32" else F((2, 3, 4), dt))
        for d in (0, -1):
            specs.append(case("cumsum.%s.2x3x4.d%d" % (dt, d), lambda x, d=d: x.cumsum(d),
                              lambda np, x, d=d: np.cumsum(x.astype(np.int64) if x.dtype.kind in "bi" else x, axis=d),
                              [spec], out, "composite"))
    specs.append(case("cumsum.f32.fn.5", lambda x: ember.cumsum(x, 0), lambda np, x: np.cumsum(x), [F((5,))], "f32", "composite"))
    specs.append(case("cumsum.f32.0d", lambda x: x.cumsum(0), lambda np, x: x, [F(())], "f32"))
    specs.append(case("cumsum.f32.specials", lambda x: x.cumsum(0), lambda np, x: np.cumsum(x),
                      [V([1.0, INF, -INF, 2.0, NAN, 3.0])], "f32"))
    specs.append(case("cumsum.i8.wrap", lambda x: x.cumsum(0), lambda np, x: np.cumsum(x),
                      [V([100, 100, 100, -128], "i8")], "i64"))
    for dt in ("f32", "f64", "i64"):
        spec = I((3, 4), dt, -3, 4) if dt == "i64" else F((3, 4), dt, -2.0, 2.0)
        out = "i64" if dt == "i64" else dt
        specs.append(case("cumprod.%s.3x4.d1" % dt, lambda x: x.cumprod(1), lambda np, x: np.cumprod(x, axis=1),
                          [spec], out, "composite"))
        specs.append(case("cumprod.%s.3x4.d0" % dt, lambda x: x.cumprod(0), lambda np, x: np.cumprod(x, axis=0),
                          [spec], out, "composite"))
    specs.append(case("cumprod.f32.fn", lambda x: ember.cumprod(x, -1), lambda np, x: np.cumprod(x, axis=-1),
                      [F((2, 3))], "f32", "composite"))
    for op, larger in (("cummax", True), ("cummin", False)):
        for label, spec, dt in (("f32.3x5", F((3, 5)), "f32"), ("i32.3x5", I((3, 5), "i32", -3, 3), "i32"),
                                ("f32.ties", V([1.0, 1.0, 0.0, 2.0, 2.0, -1.0, 2.0], "f32"), "f32"),
                                ("f32.nan", V([1.0, NAN, 3.0, -1.0, NAN], "f32"), "f32"),
                                ("f64.2x3x2", F((2, 3, 2), "f64"), "f64")):
            for d in ((0, 1) if len(spec.shape) > 1 else (0,)):
                specs.append(case("%s.%s.d%d" % (op, label, d), lambda x, o=op, d=d: getattr(x, o)(d),
                                  lambda np, x, d=d, lg=larger: _lanes(np, x, d, lambda r: _scan_extreme(r, lg), 2),
                                  [spec], (dt, "i64")))
    return specs


def stat_cases():
    specs = []
    dims = [None, 0, 1, -1, (0, 2), (1,)]
    x = F((2, 3, 4))
    for op in ("var", "std"):
        sq = op == "std"
        for dim in dims:
            for keep in (False, True):
                label = "all" if dim is None else ("t" + "_".join(str(d) for d in dim) if type(dim) is tuple else "d%d" % dim)
                label += ".keep" if keep else ""
                if dim is None:
                    fn = lambda t, o=op, k=keep: getattr(t, o)(keepdim=k)  # noqa: E731
                else:
                    fn = lambda t, o=op, d=dim, k=keep: getattr(t, o)(d, keepdim=k)  # noqa: E731
                specs.append(case("%s.f32.2x3x4.%s" % (op, label), fn,
                                  lambda np, t, d=dim, k=keep, s=sq: np_var(np, t, d, 1, k, s), [x], "f32", "composite"))
        specs.append(case("%s.f32.2x3x4.d1.biased" % op, lambda t, o=op: getattr(t, o)(1, unbiased=False),
                          lambda np, t, s=sq: np_var(np, t, 1, 0, False, s), [x], "f32", "composite"))
        for c in (0, 2, 3):
            specs.append(case("%s.f32.2x3.d1.correction%d" % (op, c), lambda t, o=op, c=c: getattr(t, o)(1, correction=c),
                              lambda np, t, c=c, s=sq: np_var(np, t, 1, c, False, s), [F((2, 3))], "f32", "composite"))
        specs.append(case("%s.f64.3x4.d0" % op, lambda t, o=op: getattr(t, o)(0),
                          lambda np, t, s=sq: np_var(np, t, 0, 1, False, s), [F((3, 4), "f64")], "f64", "composite"))
        specs.append(case("%s.f16.3x4.d1" % op, lambda t, o=op: getattr(t, o)(1),
                          lambda np, t, s=sq: np_var(np, t, 1, 1, False, s), [F((3, 4), "f16")], "f16", "composite"))
        specs.append(case("%s.i32.3x4.all" % op, lambda t, o=op: getattr(t, o)(),
                          lambda np, t, s=sq: np_var(np, t, None, 1, False, s), [I((3, 4), "i32")], "f32", "composite"))
        specs.append(case("%s.f32.1.single" % op, lambda t, o=op: getattr(t, o)(),
                          lambda np, t, s=sq: np_var(np, t, None, 1, False, s), [F((1,))], "f32"))
        specs.append(case("%s.f32.nan" % op, lambda t, o=op: getattr(t, o)(0),
                          lambda np, t, s=sq: np_var(np, t, 0, 1, False, s), [V([1.0, NAN, 2.0])], "f32"))
    for dim, keep, label in ((None, False, "all"), (1, False, "d1"), (-1, True, "dm1.keep"), ((0, 1), False, "d0_1")):
        fn = (lambda t: t.logsumexp()) if dim is None else (lambda t, d=dim, k=keep: t.logsumexp(d, keepdim=k))
        specs.append(case("logsumexp.f32.2x3x2.%s" % label, fn, lambda np, t, d=dim, k=keep: np_logsumexp(np, t, d, k),
                          [F((2, 3, 2), "f32", -5.0, 5.0)], "f32", "composite"))
    specs.append(case("logsumexp.f32.large", lambda t: ember.logsumexp(t, 1),
                      lambda np, t: np_logsumexp(np, t, 1, False),
                      [V([1000.0, 999.0, -INF, -INF, -INF, -INF, INF, 0.0, 1.0], "f32", (3, 3))], "f32", "composite"))
    specs.append(case("logsumexp.f64.2x3.d0", lambda t: t.logsumexp(0), lambda np, t: np_logsumexp(np, t, 0, False),
                      [F((2, 3), "f64")], "f64", "composite"))
    specs.append(case("logsumexp.i32.2x3.d1", lambda t: t.logsumexp(1), lambda np, t: np_logsumexp(np, t, 1, False),
                      [I((2, 3), "i32", -3, 4)], "f32", "composite"))
    specs.append(case("prod.f32.2x3x2.d0_2.keep", lambda t: t.prod((0, 2), keepdim=True),
                      lambda np, t: np.prod(t, axis=(0, 2), keepdims=True), [F((2, 3, 2), "f32", -2.0, 2.0)], "f32", "composite"))
    specs.append(case("prod.i8.wrap", lambda t: t.prod(), lambda np, t: np.prod(t.astype(np.int64)),
                      [V([100, 100, 100, -3], "i8")], "i64"))
    specs.append(case("prod.f16.2x3.d1", lambda t: t.prod(1), lambda np, t: np.prod(t, axis=1),
                      [F((2, 3), "f16")], "f16", "composite"))
    specs.append(case("argmin.f32.3x4.d1.keep", lambda t: t.argmin(1, keepdim=True),
                      lambda np, t: np.argmin(t, axis=1)[:, None], [F((3, 4))], "i64"))
    specs.append(case("argmin.i32.ties", lambda t: t.argmin(0), lambda np, t: np.argmin(t, axis=0),
                      [V([3, 1, 2, 1, 5, 1], "i32", (3, 2))], "i64"))
    specs.append(case("argmin.f32.nan", lambda t: t.argmin(), lambda np, t: np.argmin(t),
                      [V([3.0, NAN, -1.0, NAN])], "i64"))
    return specs


def sort_cases():
    specs = []
    for desc in (False, True):
        tag = ".desc" if desc else ""
        for label, spec, dt, dims in (("f32.3x5", F((3, 5)), "f32", (-1, 0)),
                                      ("i32.ties.2x6", I((2, 6), "i32", 0, 3), "i32", (1,)),
                                      ("f32.specials", V([2.0, NAN, -INF, 1.0, INF, -0.0, NAN, 1.0]), "f32", (0,)),
                                      ("f64.2x3x2", F((2, 3, 2), "f64"), "f64", (1,)),
                                      ("b.6", B((6,)), "b", (0,))):
            for d in dims:
                specs.append(case("sort.%s.d%d%s" % (label, d, tag), lambda x, d=d, s=desc: x.sort(d, descending=s),
                                  lambda np, x, d=d, s=desc: np_sort(np, x, d, s), [spec], (dt, "i64"), kit.SAME))
        specs.append(case("argsort.f32.3x4%s" % tag, lambda x, s=desc: x.argsort(descending=s),
                          lambda np, x, s=desc: np_sort(np, x, -1, s)[1], [F((3, 4))], "i64"))
        specs.append(case("argsort.i64.ties%s" % tag, lambda x, s=desc: ember.argsort(x, 0, descending=s),
                          lambda np, x, s=desc: np_sort(np, x, 0, s)[1], [V([2, 1, 2, 0, 1, 2], "i64")], "i64"))
    specs.append(case("sort.f32.fn", lambda x: ember.sort(x), lambda np, x: np_sort(np, x, -1, False),
                      [F((2, 4))], ("f32", "i64")))
    specs.append(case("sort.f32.0d", lambda x: x.sort(), lambda np, x: np_sort(np, x, -1, False), [F(())], ("f32", "i64")))
    for k, largest, d in ((2, True, -1), (3, False, -1), (1, True, 0), (0, True, -1), (5, True, -1)):
        specs.append(case("topk.f32.3x5.k%d.%s.d%d" % (k, "largest" if largest else "smallest", d),
                          lambda x, k=k, lg=largest, d=d: x.topk(k, d, largest=lg),
                          lambda np, x, k=k, lg=largest, d=d: np_sort(np, x, d, lg, k), [F((3, 5))], ("f32", "i64")))
    specs.append(case("topk.i32.ties.k3", lambda x: ember.topk(x, 3), lambda np, x: np_sort(np, x, -1, True, 3),
                      [V([1, 3, 3, 0, 3, 1], "i32")], ("i32", "i64")))
    specs.append(case("topk.f32.nan.k2", lambda x: x.topk(2), lambda np, x: np_sort(np, x, -1, True, 2),
                      [V([1.0, NAN, 5.0, 2.0])], ("f32", "i64")))
    return specs


def np_unique(np, x, inverse, counts):
    flat = np.asarray(x).reshape(-1).tolist()
    keys = sorted(set(v for v in flat if v == v))
    nans = sum(1 for v in flat if v != v)
    values = keys + [float("nan")] * nans
    out = [np.array(values, dtype=np.asarray(x).dtype)]
    if inverse:
        inv, at = [], len(keys)
        for v in flat:
            if v != v:
                inv.append(at)
                at += 1
            else:
                inv.append(keys.index(v))
        out.append(np.array(inv, dtype=np.int64).reshape(np.asarray(x).shape))
    if counts:
        out.append(np.array([flat.count(k) for k in keys] + [1] * nans, dtype=np.int64))
    return out[0] if len(out) == 1 else tuple(out)


def select_cases():
    specs = []
    nz = lambda np, x: np.argwhere(x)  # noqa: E731
    specs.append(case("nonzero.f32.3x4", lambda x: x.nonzero(), nz,
                      [V([0.0, 1.0, 0.0, -2.0, NAN, 0.0, -0.0, 3.0, 0.0, 0.0, 0.0, 1.0], "f32", (3, 4))], "i64"))
    specs.append(case("nonzero.b.2x3x2", lambda x: ember.nonzero(x), nz, [B((2, 3, 2))], "i64"))
    specs.append(case("nonzero.i32.5", lambda x: x.nonzero(), nz, [I((5,), "i32", -1, 2)], "i64"))
    specs.append(case("nonzero.i32.zeros", lambda x: x.nonzero(), nz, [V([0, 0, 0, 0], "i32", (2, 2))], "i64"))
    specs.append(case("nonzero.b.3x3.as_tuple", lambda x: x.nonzero(as_tuple=True),
                      lambda np, x: tuple(np.nonzero(x)), [B((3, 3))], ("i64", "i64")))
    specs.append(case("masked_select.f32.3x4", lambda x, m: x.masked_select(m),
                      lambda np, x, m: x[m], [F((3, 4)), B((3, 4))], "f32", kit.EXACT))
    specs.append(case("masked_select.f32.bcast_mask", lambda x, m: ember.masked_select(x, m),
                      lambda np, x, m: x[np.broadcast_to(m, x.shape)], [F((3, 4)), B((4,))], "f32", kit.EXACT,
                      [None, (3, 4)]))
    specs.append(case("masked_select.i64.bcast_x", lambda x, m: x.masked_select(m),
                      lambda np, x, m: np.broadcast_to(x, m.shape)[m], [I((3,)), B((2, 3))], "i64"))
    for label, spec, dt in (("f32.7", V([3.0, 1.0, 3.0, -0.5, 1.0, 2.0, 3.0]), "f32"),
                            ("i32.3x4", I((3, 4), "i32", -3, 3), "i32"),
                            ("f32.nan", V([2.0, NAN, 1.0, NAN, 2.0]), "f32"),
                            ("b.2x3", B((2, 3)), "b")):
        specs.append(case("unique.%s" % label, lambda x: x.unique(), lambda np, x: np_unique(np, x, False, False),
                          [spec], dt))
        specs.append(case("unique.%s.inverse_counts" % label,
                          lambda x: x.unique(return_inverse=True, return_counts=True),
                          lambda np, x: np_unique(np, x, True, True), [spec], (dt, "i64", "i64")))
    specs.append(case("unique.i64.fn.counts", lambda x: ember.unique(x, return_counts=True),
                      lambda np, x: np_unique(np, x, False, True), [I((8,), "i64", 0, 4)], ("i64", "i64")))
    return specs


SPECS = scan_cases() + stat_cases() + sort_cases() + select_cases()
CASES = kit.variants(SPECS)


def test_reduce2(device, case):
    kit.run(device, case)
