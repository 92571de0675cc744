"""Rewrites of a specialised replay (``graph.specialize``): the calls of one plan for fixed input
shapes, whose every value's shape is known. Identity calls alias away; MatMul + bias Add becomes
``F.linear``, the erf GELU ``F.gelu``, torch's exported attention ``F.scaled_dot_product_attention``
(the composites whose fused C paths the Cpu has); runs of Reshape/Transpose/Squeeze/Unsqueeze/
constant-index Gather become one precomputed view program each (no-op reshapes dropped).

A call is the tuple ``(fn, node, device, args, srcs, outs, moves, scoped)`` of ``Replay``; ``names``
holds each call's input names (bound constants included). A value fuses away only when exactly one
call reads it and the graph does not return it. Under a decorating device (Autodiff, an export
trace) no replay runs: the plan runs node by node, so gradients and exports see the ONNX nodes.
"""
import ember
import ember.nn.functional as F
from ember.errors import IndexOutOfRange

from .graph import _identity

def _linear_call(device):
    """MatMul(x, w) + b as ``F.linear`` (one fused C call on the C-backed Cpu, there straight from
    lower_c.py). ``w.T`` is a view made again only when the weight is another tensor (a parameter
    set anew), not every call."""
    held = [None, None]

    def _linear(node, x, w, b):
        if w.dim() == 2 and b.dim() == 1:
            if held[0] is not w:
                held[0], held[1] = w, w.T
            return F.linear(x, held[1], b)
        return ember.matmul(x, w) + b
    from . import lower_c
    return lower_c.linear(False, _linear) if lower_c.applies(device) else _linear


def _gelu(node, x):
    return F.gelu(x)


def _gelu_call(device):
    from . import lower_c
    return lower_c.gelu(_gelu) if lower_c.applies(device) else _gelu


def _scalar(t, want):
    """Whether the bound constant ``t`` is one number within 1e-6 of ``want``."""
    if t is None or not hasattr(t, "numel") or t.numel() != 1 or t.dtype.kind != "f":
        return False
    return abs(float(t.reshape(-1)[0].item()) - want) <= 1e-6 * max(1.0, abs(want))


def _alias_identities(calls, names, protected):
    """Drop the Identity calls (torch's exports alias shared weights through them): their readers
    read the source instead. An Identity whose output the graph returns stays."""
    alias = {}
    keep_c, keep_n = [], []
    for c, ins in zip(calls, names):
        ins = [alias.get(i, i) for i in ins]
        if c[1].op_type == "Identity" and c[0] is not _identity and len(c[5]) == 1 and ins and ins[0] \
                and c[3][0] is None and c[5][0] not in protected and not c[6]:
            alias[c[5][0]] = ins[0]
            continue
        srcs = tuple((k, alias.get(n, n)) for k, n in c[4])
        keep_c.append(c[:4] + (srcs,) + c[5:])
        keep_n.append(ins)
    return keep_c, keep_n


def fuse(calls, names, env, protected):
    """The replay's calls rewritten (see the module's docstring); ``env`` holds every value of the
    specialising run, ``protected`` the graph outputs."""
    calls, names = _alias_identities(calls, names, protected)
    calls, names = _attention(calls, names, env, protected)
    calls, names = _linear_gelu(calls, names, env, protected)
    calls = [_bound(c, ins, env) for c, ins in zip(calls, names)]
    return _movements(calls, names, env, protected)


def _bound(c, ins, env):
    """A call whose op picks its path from shapes, dtypes and attributes, with that path picked once
    (the replay fixes them): a torch Linear's Gemm as ``F.linear``, LayerNormalization as
    ``F.layer_norm`` with its normalized shape and epsilon; a Gather as ``_checked_gather``."""
    node, op = c[1], c[1].op_type
    if c[6] or len(c[5]) != 1 or not all(ins):
        return c
    vals = [env.get(i) for i in ins]
    if any(v is None or not hasattr(v, "dtype") for v in vals):
        return c
    from . import lower_c
    lowered = lower_c.applies(c[2])
    if op == "Gemm" and len(vals) == 3:
        a, b, bias = vals
        if node.attr("transB", 0) and not node.attr("transA", 0) and node.attr("alpha", 1.0) == 1.0 \
                and node.attr("beta", 1.0) == 1.0 and a.dim() == 2 and b.dim() == 2 and bias.dim() == 1 \
                and bias.shape[0] == b.shape[0] and a.dtype == b.dtype == bias.dtype and a.dtype.kind == "f":
            return (lower_c.linear(True, _gemm_linear) if lowered else _gemm_linear,) + c[1:]
    if op == "LayerNormalization" and len(vals) in (2, 3) and vals[0].dtype == ember.float32:
        x = vals[0]
        a = node.attr("axis", -1)
        ns = tuple(x.shape[a + x.dim() if a < 0 else a:])
        if all(tuple(v.shape) == ns for v in vals[1:]):
            fn = _layer_norm_call(ns, node.attr("epsilon", 1e-5))
            if lowered:
                fn = lower_c.layer_norm(_numel(ns), node.attr("epsilon", 1e-5), fn)
            return (fn,) + c[1:]
    if lowered and all(v.dtype == ember.float32 for v in vals) and (
            op in lower_c.UNARY and len(vals) == 1 or op in lower_c.BINARY and len(vals) == 2):
        return ((lower_c.unary if len(vals) == 1 else lower_c.binary)(op, c[0]),) + c[1:]
    return _checked_gather(c, ins, env)


def _numel(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _gemm_linear(node, a, b, c):
    return F.linear(a, b, c)


def _layer_norm_call(ns, eps):
    def _layer_norm(node, x, weight, bias=None):
        return F.layer_norm(x, ns, weight, bias, eps)
    return _layer_norm


def _checked_gather(c, ins, env):
    """A Gather of a computed index on the Cpu, whose ``index_select`` raises at once for an index
    outside [0, d): the index as given first, the ONNX op (negatives wrapped, ``where`` and all)
    only where that raises. On a device that reports a bad index later (Wgpu) the op stays."""
    fn, node, dev = c[0], c[1], c[2]
    if node.op_type != "Gather" or len(ins) != 2 or c[3][1] is not None or c[6] or not isinstance(dev, ember.Cpu):
        return c
    x, idx, y = env.get(ins[0]), env.get(ins[1]), env.get(c[5][0])
    if x is None or idx is None or y is None or idx.dim() < 1 or idx.dtype is not ember.int64 or not x.dim():
        return c
    a = node.attr("axis", 0)
    a = a + x.dim() if a < 0 else a
    shape = tuple(y.shape)

    def _gather(node, x, idx):
        try:
            return x.index_select(a, idx.reshape(-1)).reshape(shape)
        except IndexOutOfRange:
            return fn(node, x, idx)
    from . import lower_c
    return (lower_c.gather(a, _gather) if lower_c.applies(dev) else _gather,) + c[1:]


def _uses(names, protected):
    """value -> how many calls read it (a graph output counts twice: it never fuses away)."""
    uses = {}
    for ins in names:
        for i in ins:
            if i:
                uses[i] = uses.get(i, 0) + 1
    for o in protected:
        uses[o] = uses.get(o, 0) + 2
    return uses


def _linear_gelu(calls, names, env, protected):
    """MatMul by a 2-d weight then Add of a 1-d bias (``F.linear``), and the erf GELU
    ``x * (erf(x / sqrt 2) + 1) * 0.5`` (``F.gelu``)."""
    uses = _uses(names, protected)
    op = [c[1].op_type for c in calls]
    outs = [c[5] for c in calls]
    single = _single(names, uses)
    dead = set()
    replaced = {}
    for k, c in enumerate(calls):
        if k in dead or len(outs[k]) != 1 or c[6]:
            continue
        out = outs[k][0]
        nxt = single.get(out)
        if nxt is None:
            continue
        if op[k] == "MatMul" and op[nxt] == "Add" and len(names[k]) == 2 and names[k][0] and names[k][1]:
            w = env.get(names[k][1])
            b_name = [i for i in names[nxt] if i != out]
            if len(b_name) != 1 or w is None or w.dim() != 2 or names[nxt].count(out) != 1:
                continue
            b = env.get(b_name[0])
            x = env.get(names[k][0])
            if b is None or x is None or b.dim() != 1 or b.shape[0] != w.shape[1] or x.dim() < 1 \
                    or x.dtype != w.dtype or b.dtype != w.dtype or w.dtype.kind != "f":
                continue
            nb = calls[nxt]
            if nb[6]:
                continue
            args = [c[3][0], c[3][1], nb[3][names[nxt].index(b_name[0])]]
            srcs = tuple((j, n) for j, n in ((0, names[k][0]), (1, names[k][1]), (2, b_name[0]))
                         if args[j] is None)
            replaced[nxt] = ((_linear_call(nb[2]), nb[1], nb[2], args, srcs, nb[5], (), False),
                             [names[k][0], names[k][1], b_name[0]])
            dead.add(k)
        elif op[k] == "Div" and _scalar(c[3][1], 2.0 ** 0.5) and names[k][0]:
            x_name = names[k][0]
            chain = [k]
            e = nxt
            if op[e] != "Erf" or len(outs[e]) != 1:
                continue
            a = single.get(outs[e][0])
            if a is None or op[a] != "Add" or len(outs[a]) != 1:
                continue
            other = 1 - names[a].index(outs[e][0])
            if not _scalar(calls[a][3][other], 1.0):
                continue
            m = single.get(outs[a][0])
            if m is None or op[m] != "Mul" or sorted(names[m]) != sorted([x_name, outs[a][0]]) or len(outs[m]) != 1:
                continue
            h = single.get(outs[m][0])
            if h is None or op[h] != "Mul":
                continue
            other = 1 - names[h].index(outs[m][0])
            if not _scalar(calls[h][3][other], 0.5):
                continue
            chain += [e, a, m]
            x = env.get(x_name)
            if x is None or x.dtype.kind != "f":
                continue
            nh = calls[h]
            bound = [c[3][0]]
            srcs = ((0, x_name),) if bound[0] is None else ()
            replaced[h] = ((_gelu_call(nh[2]), nh[1], nh[2], bound, srcs, nh[5], (), False), [x_name])
            dead.update(chain)
    return _keep(calls, names, replaced, dead)


def _keep(calls, names, replaced, dead):
    """(calls, names) without the ``dead`` indices, ``replaced`` ones (index -> (call, names)) swapped in."""
    out_c, out_n = [], []
    for k, c in enumerate(calls):
        if k in dead:
            continue
        got = replaced.get(k)
        out_c.append(got[0] if got else c)
        out_n.append(got[1] if got else names[k])
    return out_c, out_n


def _single(names, uses):
    """value -> the index of the call that reads it, where exactly one call does."""
    single = {}
    for k, ins in enumerate(names):
        for i in ins:
            if i and uses.get(i) == 1:
                single[i] = k
    return single


def _number(t):
    """The bound constant ``t`` as a float where it is one floating number, else None."""
    if t is None or not hasattr(t, "numel") or t.numel() != 1 or t.dtype.kind != "f":
        return None
    return float(t.reshape(-1)[0].item())


def _sdpa(scale, masked, device):
    from . import lower_c
    if not masked and lower_c.applies(device):
        return lower_c.attention(scale, _sdpa(scale, False, None))
    if masked:
        def _attention(node, q, k, v, mask):
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)
    else:
        def _attention(node, q, k, v):
            return F.scaled_dot_product_attention(q, k, v, scale=scale)
    return _attention


def _attention(calls, names, env, protected):
    """torch's exported attention, ``Softmax(MatMul(q·a, Transpose(k)·b) [·c or /c] [+ mask]) @ v``
    with a, b, c numbers (each optional) and the Transpose swapping the last two dims, as one
    ``F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=a·b·c)``. A mask added before
    the scaling, a Softmax over another axis or a scale that is not one number is left alone."""
    g = _Calls(calls, names, protected)
    dead, replaced = set(), {}
    for k, c in enumerate(calls):
        if c[1].op_type == "Softmax" and k not in dead:
            found = _match_attention(g, env, k)
            if found is not None and not (found[1] & dead):
                replaced[found[0]] = found[2]
                dead.update(found[1])
    return _keep(calls, names, replaced, dead)


class _Calls:
    """The replay's calls with who makes and who reads each value, for pattern matching."""

    def __init__(self, calls, names, protected):
        self.calls, self.names = calls, names
        self.single = _single(names, _uses(names, protected))
        self.made = {}
        for k, c in enumerate(calls):
            for o in c[5]:
                if o:
                    self.made[o] = k

    def op(self, k):
        return self.calls[k][1].op_type

    def fed(self, k, j):
        """The call making input j of call k, where only call k reads it (else None)."""
        name = self.names[k][j] if j < len(self.names[k]) else None
        p = self.made.get(name)
        if p is None or self.single.get(name) != k or len(self.calls[p][5]) != 1 or self.calls[p][6] \
                or self.calls[p][7]:
            return None
        return p

    def arg(self, k, j):
        """(name, bound constant or None) of input j of call k."""
        return self.names[k][j], self.calls[k][3][j]

    def past_scale(self, p, target, chain):
        """(call, factor): ``p`` itself where it is a ``target`` call (factor 1), else the call
        feeding ``p`` where ``p`` is a Mul or Div by one number (added to ``chain``); or None."""
        if p is None or self.op(p) == target:
            return p, 1.0
        got = self.scaled(p)
        if got is None:
            return None
        chain.append(p)
        return self.fed(p, got[1]), got[0]

    def scaled(self, k):
        """(number, index of the other input) where call k is a Mul or Div by one bound number."""
        op = self.op(k)
        if op not in ("Mul", "Div") or len(self.names[k]) != 2:
            return None
        for j in ((0, 1) if op == "Mul" else (1,)):
            v = _number(self.calls[k][3][j])
            if v is not None and self.calls[k][3][1 - j] is None and (op == "Mul" or v):
                return (v if op == "Mul" else 1.0 / v), 1 - j
        return None


def _match_attention(g, env, s):
    """(index of the second MatMul, indices fused away, (call, names)) for the Softmax at ``s``, or None."""
    sm = g.calls[s]
    x = env.get(g.names[s][0]) if g.names[s] else None
    if x is None or x.dtype.kind != "f" or x.dim() < 2 or sm[6] or len(sm[5]) != 1:
        return None
    a = sm[1].attr("axis", -1 if sm[1].opset >= 13 else 1)
    if (a + x.dim() if a < 0 else a) != x.dim() - 1:
        return None
    m2 = g.single.get(sm[5][0])
    if m2 is None or g.op(m2) != "MatMul" or g.names[m2][0] != sm[5][0] or g.names[m2][1] == sm[5][0] \
            or g.calls[m2][6] or len(g.calls[m2][5]) != 1:
        return None
    p = g.fed(s, 0)
    if p is not None and g.op(p) == "Add" and len(g.names[p]) == 2:
        for j in (0, 1):  # either side may be the scores, the other the mask
            found = _scores(g, env, x, m2, [s, p], g.arg(p, 1 - j), g.fed(p, j))
            if found is not None:
                return found
        return None
    return _scores(g, env, x, m2, [s], None, p)


def _scores(g, env, x, m2, chain, mask, p):
    """The rest of ``_match_attention`` from ``p``, the call making the (scaled) scores ``x``."""
    got = g.past_scale(p, "MatMul", chain)
    if got is None or got[0] is None or g.op(got[0]) != "MatMul":
        return None
    m1, scale = got
    chain.append(m1)
    q = g.arg(m1, 0)
    pq = g.fed(m1, 0)
    got = g.scaled(pq) if pq is not None else None
    if got is not None:
        scale *= got[0]
        q = g.arg(pq, got[1])
        chain.append(pq)
    got = g.past_scale(g.fed(m1, 1), "Transpose", chain)
    if got is None or got[0] is None or g.op(got[0]) != "Transpose":
        return None
    pk, factor = got
    scale *= factor
    chain.append(pk)
    k, v = g.arg(pk, 0), g.arg(m2, 1)
    qt, kt, vt = (env.get(t[0]) for t in (q, k, v))
    if qt is None or kt is None or vt is None:
        return None
    r = qt.dim()
    perm = g.calls[pk][1].attr("perm", list(range(r))[::-1])
    if list(perm) != list(range(r - 2)) + [r - 1, r - 2] or kt.dim() != r or vt.dim() != r or x.dim() != r:
        return None
    if qt.shape[:-2] != kt.shape[:-2] or kt.shape[:-2] != vt.shape[:-2] or qt.shape[-1] != kt.shape[-1] \
            or kt.shape[-2] != vt.shape[-2] or not (qt.dtype == kt.dtype == vt.dtype == x.dtype):
        return None
    if mask is not None:
        mt = env.get(mask[0])
        if mt is None or mt.dtype != x.dtype:
            return None
    ins = [q, k, v] + ([mask] if mask is not None else [])
    srcs = tuple((j, nm) for j, (nm, b) in enumerate(ins) if b is None)
    c2 = g.calls[m2]
    call = (_sdpa(scale, mask is not None, c2[2]), c2[1], c2[2], [b for _, b in ins], srcs, c2[5], (), False)
    return m2, set(chain), (call, [nm for nm, _ in ins])


# -- movement programs --------------------------------------------------------------------------------
_RESHAPE, _PERMUTE, _NARROW = 0, 1, 2
_MOVES = frozenset(("Reshape", "Squeeze", "Unsqueeze", "Flatten", "Transpose", "Gather", "Slice"))


def _program(c, ins, env):
    """The view steps of one movement call whose every input but the first is a bound constant:
    ``(_RESHAPE, shape)``, ``(_PERMUTE, dims)``, ``(_NARROW, dim, start, length)``; or None."""
    node = c[1]
    if node.op_type not in _MOVES or c[6] or c[7] or len(c[5]) != 1 or not ins or not ins[0] \
            or c[3][0] is not None or any(nm and c[3][j] is None for j, nm in enumerate(ins) if j):
        return None
    x, y = env.get(ins[0]), env.get(c[5][0])
    if not hasattr(x, "shape") or not hasattr(y, "shape") or x.dtype != y.dtype:
        return None
    op = node.op_type
    if op == "Transpose":
        perm = node.attr("perm", list(range(x.dim()))[::-1])
        return [(_PERMUTE, tuple(perm))]
    if op == "Gather":
        idx = c[3][1] if len(c[3]) > 1 else None
        if idx is None or idx.dim() != 0 or idx.dtype.kind != "i":
            return None
        a = node.attr("axis", 0)
        a = a + x.dim() if a < 0 else a
        i = int(idx.item())
        i = i + x.shape[a] if i < 0 else i
        return [(_NARROW, a, i, 1), (_RESHAPE, tuple(y.shape))]
    if op == "Slice":
        return _slice_program(node, c[3], x.shape, y.shape)
    return [(_RESHAPE, tuple(y.shape))]


def _slice_program(node, bound, shape, want):
    """A Slice of constant bounds and unit steps as narrows (ONNX's clamping), or None."""
    from .ops.util import ints
    if node.opset >= 10:
        starts, ends = ints(bound[1]), ints(bound[2])
        axes = ints(bound[3]) if len(bound) > 3 else None
        steps = ints(bound[4]) if len(bound) > 4 else None
    else:
        starts, ends, axes, steps = node.attr("starts"), node.attr("ends"), node.attr("axes"), None
    if starts is None or ends is None or len(starts) != len(ends) or steps is not None and any(st != 1 for st in steps):
        return None
    axes = list(range(len(starts))) if axes is None else axes
    shape, out = list(shape), []
    for s, e, a in zip(starts, ends, axes):
        a = a + len(shape) if a < 0 else a
        if not 0 <= a < len(shape):
            return None
        lo, hi, _ = slice(max(min(s, 2 ** 62), -2 ** 62), max(min(e, 2 ** 62), -2 ** 62), 1).indices(shape[a])
        if hi <= lo:
            return None
        out.append((_NARROW, a, lo, hi - lo))
        shape[a] = hi - lo
    return out if tuple(shape) == tuple(want) else None


def _after(shape, st):
    if st[0] == _RESHAPE:
        return st[1]
    if st[0] == _PERMUTE:
        return tuple(shape[d] for d in st[1])
    return shape[:st[1]] + (st[3],) + shape[st[1] + 1:]


def _simplify(shape, steps):
    """``steps`` from ``shape`` with fewer calls: reshapes of reshapes and permutes of permutes
    merged, no-op steps dropped, a permute that moves only size-1 dims made a reshape, and a reshape
    after a permute that only adds or drops size-1 dims folded into the permute (and into the
    reshape before it)."""
    out = []  # (step, shape before it)
    cur = tuple(shape)
    for st in steps:
        if st[0] == _PERMUTE and _keeps_order(cur, st[1]):
            st = (_RESHAPE, _after(cur, st))  # moves only size-1 dims: a reshape (a view where x is dense)
        if st[0] == _RESHAPE and out and out[-1][0][0] == _RESHAPE:
            cur = out.pop()[1]
        elif st[0] == _PERMUTE and out and out[-1][0][0] == _PERMUTE:
            prev, cur = out.pop()
            st = (_PERMUTE, tuple(prev[1][d] for d in st[1]))
        nxt = _after(cur, st)
        if st[0] == _RESHAPE and nxt == cur or st[0] == _PERMUTE and st[1] == tuple(range(len(cur))):
            continue
        if st[0] == _RESHAPE and len(out) >= 2 and out[-1][0][0] == _PERMUTE and out[-2][0][0] == _RESHAPE:
            folded = _fold_units(out[-1][1], out[-1][0][1], nxt)
            if folded is not None:
                out[-2] = ((_RESHAPE, folded[0]), out[-2][1])
                out[-1] = ((_PERMUTE, folded[1]), folded[0])
                cur = nxt
                continue
        out.append((st, cur))
        cur = nxt
    return [st for st, _ in out]


def _keeps_order(shape, perm):
    big = [d for d in perm if shape[d] != 1]
    return big == sorted(big)


def _fold_units(s0, perm, final):
    """(s0', perm') with ``permute(reshape(x, s0'), perm')`` of shape ``final``, where ``final`` is
    ``permute(s0, perm)`` with only size-1 dims added or dropped; else None."""
    s1 = [s0[d] for d in perm]
    if [d for d in s1 if d != 1] != [d for d in final if d != 1]:
        return None
    nz = [d for d in range(len(s0)) if s0[d] != 1]
    rank = dict((d, i) for i, d in enumerate(nz))
    order = iter([rank[d] for d in perm if s0[d] != 1])
    units = iter(range(len(nz), len(nz) + sum(1 for d in final if d == 1)))
    new_perm = tuple(next(units) if d == 1 else next(order) for d in final)
    new_s0 = tuple(s0[d] for d in nz) + (1,) * (len(final) - len(nz))
    return new_s0, new_perm


def _view(steps):
    def _movement(node, x):
        for st in steps:
            if st[0] == _RESHAPE:
                x = x.reshape(st[1])
            elif st[0] == _PERMUTE:
                x = x.permute(st[1])
            else:
                x = x.narrow(st[1], st[2], st[3])
        return x
    _movement.steps = steps  # what the tests read
    return _movement


def _view_call(steps, device):
    """The call running ``steps``: as C kernel calls on the C-backed Cpu (lower_c.py), else ``_view``."""
    from . import lower_c
    generic = _view(steps)
    return lower_c.movement(steps, generic) if lower_c.applies(device) else generic


def _dense(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


def _strided(shape, steps):
    """(shape, strides, offset) of ``steps``' result as a view of a dense ``shape``, reshapes read as
    views where the layout allows; None where one does not."""
    cur, st, off = tuple(shape), _dense(shape), 0
    for step in steps:
        if step[0] == _PERMUTE:
            cur, st = tuple(cur[d] for d in step[1]), tuple(st[d] for d in step[1])
        elif step[0] == _NARROW:
            off += step[2] * st[step[1]]
            cur = _after(cur, step)
        else:
            st = _view_strides(cur, st, step[1])
            if st is None:
                return None
            cur = step[1]
    return cur, st, off


def _view_strides(shape, strides, new):
    """The strides of ``new`` as a view of (shape, strides), or None where it needs a copy."""
    old = [(n, s) for n, s in zip(shape, strides) if n != 1]
    big = [n for n in new if n != 1]
    if 0 in shape or 0 in new:
        return None
    got, i, j = [], 0, 0
    while i < len(old) and j < len(big):
        po, pn, i2, j2 = old[i][0], big[j], i + 1, j + 1
        while po != pn:
            if po < pn:
                po *= old[i2][0]
                i2 += 1
            else:
                pn *= big[j2]
                j2 += 1
        for k in range(i, i2 - 1):
            if old[k][1] != old[k + 1][0] * old[k + 1][1]:
                return None
        acc, inner = old[i2 - 1][1], []
        for k in range(j2 - 1, j - 1, -1):
            inner.append(acc)
            acc *= big[k]
        got.extend(reversed(inner))
        i, j = i2, j2
    it = iter(got)
    return tuple(1 if n == 1 else next(it) for n in new)


def _realize(shape, view):
    """Steps giving the strided ``view`` (shape, strides, offset) of a dense ``shape`` with views
    only: a reshape of the source, narrows, one permute; None where the strides do not nest."""
    final, strides, offset = view
    total = 1
    for n in shape:
        total *= n
    if not total:
        return None
    dims = sorted(((s, n, pos) for pos, (n, s) in enumerate(zip(final, strides)) if n != 1), reverse=True)
    base, cuts, prev = [], [], total
    for s, n, pos in dims:
        if s <= 0 or prev % s:
            return None
        b = prev // s
        start = (offset // s) % b
        if start + n > b:
            return None
        cuts.append((len(base), start, n, b))
        base.append(b)
        prev = s
    rest = offset % prev
    if prev > 1:
        cuts.append((len(base), rest, 1, prev))
        base.append(prev)
    units = sum(1 for n in final if n == 1)
    have = len(base) - len(dims)
    base.extend([1] * max(0, units - have))
    steps = [(_RESHAPE, tuple(base))] if tuple(base) != tuple(shape) else []
    steps += [(_NARROW, d, a, n) for d, a, n, b in cuts if (a, n) != (0, b)]
    spare = iter(range(len(dims), len(base)))
    order = dict((pos, k) for k, (_, _, pos) in enumerate(dims))
    perm = tuple(order[pos] if pos in order else next(spare) for pos in range(len(final)))
    perm += tuple(sorted(set(range(len(base))) - set(perm)))  # spare size-1 dims, dropped below
    if perm != tuple(range(len(base))):
        steps.append((_PERMUTE, perm))
    if len(perm) != len(final):
        steps.append((_RESHAPE, tuple(final)))
    return steps


def _copies(shape, steps):
    """(reshapes that copy, whether the result is dense) for ``steps`` from a dense ``shape``: in
    ember a reshape of a non-dense view copies."""
    dense, copies, cur = True, 0, tuple(shape)
    for st in steps:
        nxt = _after(cur, st)
        if st[0] == _RESHAPE:
            copies += not dense
            dense = True
        elif st[0] == _NARROW:
            dense = dense and all(n == 1 for n in cur[:st[1]])
        elif not _keeps_order(cur, st[1]):
            dense = False
        cur = nxt
    return copies, dense


def _plan(shape, prog):
    """The fewest-copy steps for the movement program ``prog`` from a dense ``shape``."""
    steps = _simplify(shape, prog)
    view = _strided(shape, prog)
    if view is None:
        return steps
    realized = _realize(shape, view)
    if realized is None:
        return steps
    copies, dense = _copies(shape, steps)
    r_copies, r_dense = _copies(shape, realized)
    if dense and copies and not r_dense:
        final = tuple(view[0])
        squeezed = tuple(n for n in final if n != 1)
        if squeezed == final:
            squeezed = final + (1,)
        realized = realized + [(_RESHAPE, squeezed), (_RESHAPE, final)]  # one copy, into a dense result
        r_copies += 1
    if (r_copies, len(realized)) < (copies, len(steps)):
        return realized
    return steps


def _joins(run, out, readers, uses, env):
    """Whether the run producing ``out`` merges into its readers' runs: it has one reader, or
    several that are all movement runs and it copies nothing (each reader repeats its views)."""
    got = readers.get(out, [])
    if uses.get(out) != len(got) or not all(got):
        return False
    return len(got) == 1 or _copies(env[run[0]].shape, _simplify(env[run[0]].shape, run[1]))[0] == 0


def _movements(calls, names, env, protected):
    """Each run of movement calls (Reshape, Squeeze, Unsqueeze, Flatten, Transpose, Gather of one
    constant index; their shapes known) as one call of precomputed view steps; a run that moves
    nothing aliases its output to its input."""
    uses = _uses(names, protected)
    progs = [_program(c, names[k], env) for k, c in enumerate(calls)]
    readers = {}  # value -> [(call index, whether that call is a movement reading it first and only)]
    for k, ins in enumerate(names):
        for j, nm in enumerate(ins):
            if nm:
                readers.setdefault(nm, []).append(progs[k] is not None and j == 0 and ins.count(nm) == 1)
    made = {}
    runs = {}  # call index -> (source name, steps)
    dead = set()
    group = {}  # call index -> the run it repeats, where several readers each repeat one run
    for k, c in enumerate(calls):
        prog = progs[k]
        if prog is not None:
            src = names[k][0]
            p = made.get(src)
            if p in runs and _joins(runs[p], src, readers, uses, env):
                if len(readers[src]) > 1:
                    group[k] = p
                elif p in group:
                    group[k] = group.pop(p)
                src, prog = runs[p][0], runs[p][1] + prog
                dead.add(p)
            runs[k] = (src, prog)
        for o in c[5]:
            if o:
                made[o] = k
    planned = dict((k, tuple(_plan(env[src].shape, prog))) for k, (src, prog) in runs.items() if k not in dead)
    shared, rest = _hoist(group, planned)
    alias, out_c, out_n = {}, [], []
    for k, c in enumerate(calls):
        if k in shared:  # the view steps its readers share, made once
            src = runs[shared[k][0]][0]
            src = alias.get(src, src)
            out_c.append((_view_call(shared[k][1], c[2]), c[1], c[2], [None], ((0, src),), c[5], (), False))
            out_n.append([src])
            continue
        if k in dead:
            continue
        if k in runs:
            src, steps = runs[k][0], planned[k]
            if k in rest:
                src, steps = calls[group[k]][5][0], rest[k]
            src = alias.get(src, src)
            if not steps and c[5][0] not in protected:
                alias[c[5][0]] = src
                continue
            out_c.append((_view_call(steps, c[2]), c[1], c[2], [None], ((0, src),), c[5], (), False))
            out_n.append([src])
            continue
        out_c.append(c[:4] + (tuple((j, alias.get(nm, nm)) for j, nm in c[4]),) + c[5:])
        out_n.append([alias.get(nm, nm) if nm else nm for nm in names[k]])
    return out_c


def _shape_of(steps):
    """(reshape, narrows, permute) where ``steps`` are at most one reshape, then narrows, then at
    most one permute; else None."""
    steps = list(steps)
    head = steps.pop(0) if steps and steps[0][0] == _RESHAPE else None
    tail = steps.pop() if steps and steps[-1][0] == _PERMUTE else None
    if any(st[0] != _NARROW for st in steps):
        return None
    return head, steps, tail


def _hoist(group, planned):
    """({index of a repeated run: (a reader, the steps its readers share)}, {reader: its own steps}).
    Where every reader's steps are the same reshape and permute around its own narrows (torch's
    q/k/v split: one reshape and one permute of the in-projection, then a narrow each), the narrows
    move after the shared permute; else the readers share their longest common first steps."""
    readers = {}
    for k, p in group.items():
        readers.setdefault(p, []).append(k)
    shared, rest = {}, {}
    for p, ks in readers.items():
        forms = [_shape_of(planned[k]) for k in ks]
        if all(f is not None for f in forms) and len(set((f[0], f[2]) for f in forms)) == 1 \
                and (forms[0][0] is not None or forms[0][2] is not None):
            head, _, tail = forms[0]
            shared[p] = (ks[0], tuple(st for st in (head, tail) if st is not None))
            rest.update((k, _narrows_after(planned[k])) for k in ks)
            continue
        common = 0
        while all(len(planned[k]) > common and planned[k][common] == planned[ks[0]][common] for k in ks):
            common += 1
        if common:
            shared[p] = (ks[0], planned[ks[0]][:common])
            rest.update((k, planned[k][common:]) for k in ks)
    return shared, rest


def _narrows_after(steps):
    """A reader's narrows, moved after its permute (the shared steps hold the reshape and permute)."""
    head, narrows, tail = _shape_of(steps)
    perm = tail[1] if tail is not None else None
    return tuple((_NARROW, perm.index(st[1]) if perm else st[1], st[2], st[3]) for st in narrows)
