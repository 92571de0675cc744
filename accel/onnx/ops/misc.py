"""The rest of the table: einsum, recurrent layers, losses, windows, sequences of numbers."""
import math

import ember
import ember.nn.functional as F

from . import op
from .util import onnx_dtype


@op("Einsum", since=12, attrs="equation")
def einsum(n, *xs):
    return ember.einsum(n.attr("equation").replace(" ", ""), *xs)


def _window(fn):
    def run(n, size):
        N = int(size.reshape(-1)[0].item())
        periodic = n.attr("periodic", 1)
        d = N if periodic else N - 1
        vals = [fn(i, d) for i in range(N)]
        return ember.tensor(vals, dtype=onnx_dtype(n.attr("output_datatype", 1), n), device=n.device)
    return run


op("HannWindow", since=17, attrs="output_datatype periodic", static=(0,))(
    _window(lambda i, d: 0.5 - 0.5 * math.cos(2 * math.pi * i / d)))
op("HammingWindow", since=17, attrs="output_datatype periodic", static=(0,))(
    _window(lambda i, d: 25 / 46 - (1 - 25 / 46) * math.cos(2 * math.pi * i / d)))
op("BlackmanWindow", since=17, attrs="output_datatype periodic", static=(0,))(
    _window(lambda i, d: 0.42 - 0.5 * math.cos(2 * math.pi * i / d) + 0.08 * math.cos(4 * math.pi * i / d)))


def _loss_check(n):
    if n.attr("reduction", "mean") not in ("none", "sum", "mean"):
        return "reduction %r not supported" % n.attr("reduction")
    return None


def _nll(n, logp, target, weight):
    ignore = n.attr("ignore_index")
    t = target.to(ember.int64)
    valid = None
    if ignore is not None:
        valid = t != ignore
        t = ember.where(valid, t, ember.zeros_like(t))
    picked = -logp.gather(1, t.unsqueeze(1)).squeeze(1)
    w = weight.index_select(0, t.reshape(-1)).reshape(*t.shape) if weight is not None else ember.ones_like(picked)
    if valid is not None:
        w = ember.where(valid, w, ember.zeros_like(w))
    loss = picked * w
    r = n.attr("reduction", "mean")
    if r == "none":
        return loss
    if r == "sum":
        return loss.sum()
    return loss.sum() / w.sum()


@op("NegativeLogLikelihoodLoss", since=12, attrs="ignore_index reduction", check=_loss_check)
def nll_loss(n, x, target, weight=None):
    return _nll(n, x, target, weight)


@op("SoftmaxCrossEntropyLoss", since=12, attrs="ignore_index reduction", check=_loss_check)
def softmax_ce(n, x, target, weight=None):
    logp = F.log_softmax(x, 1)
    loss = _nll(n, logp, target, weight)
    return (loss, logp) if len(n.outputs) > 1 else loss


def _rnn_check(n):
    if n.attr("clip") is not None:
        return "clip not supported"
    if n.attr("input_forget", 0):
        return "input_forget not supported"
    return None


_ACT = {"Sigmoid": lambda x: x.sigmoid(), "Tanh": lambda x: x.tanh(), "Relu": lambda x: F.relu(x)}


def _acts(n, default):
    names = n.attr("activations") or default
    for a in names:
        if a not in _ACT:
            n.fail("expected activations among %s, found %r" % (sorted(_ACT), a))
    return [_ACT[a] for a in names]


def _directions(n):
    d = n.attr("direction", "forward")
    return [False, True] if d == "bidirectional" else [d == "reverse"]


def _recurrent(n, x, W, R, B, h0, c0, gates, cell):
    if n.attr("layout", 0):  # batch first: (batch, seq, ...) in, (batch, seq, dirs, hidden) out
        x = x.permute(1, 0, 2)
        h0 = h0.permute(1, 0, 2) if h0 is not None else None
        c0 = c0.permute(1, 0, 2) if c0 is not None else None
        Y, h, c = _recurrent_seq_first(n, x, W, R, B, h0, c0, gates, cell)
        return Y.permute(2, 0, 1, 3), h.permute(1, 0, 2), c.permute(1, 0, 2)
    return _recurrent_seq_first(n, x, W, R, B, h0, c0, gates, cell)


def _recurrent_seq_first(n, x, W, R, B, h0, c0, gates, cell):
    T, batch, _ = x.shape
    H = n.attr("hidden_size")
    ys, hs, cs = [], [], []
    for di, rev in enumerate(_directions(n)):
        w, r = W[di], R[di]
        b = B[di] if B is not None else ember.zeros(2 * gates * H, dtype=x.dtype, device=x.device)
        h = h0[di] if h0 is not None else ember.zeros((batch, H), dtype=x.dtype, device=x.device)
        c = c0[di] if c0 is not None else ember.zeros((batch, H), dtype=x.dtype, device=x.device)
        xw = ember.matmul(x, w.T) + b.narrow(0, 0, gates * H)
        rb = b.narrow(0, gates * H, gates * H)
        out = [None] * T
        for t in (range(T - 1, -1, -1) if rev else range(T)):
            h, c = cell(xw[t], h, c, r, rb, H, di)
            out[t] = h
        ys.append(ember.stack(out))
        hs.append(h)
        cs.append(c)
    Y = ember.stack(ys, dim=1)
    return Y, ember.stack(hs), ember.stack(cs)


@op("LSTM", since=7, attrs="activation_alpha activation_beta activations clip direction hidden_size input_forget layout",
    check=_rnn_check)
def lstm(n, x, W, R, B=None, seq_lens=None, h0=None, c0=None, P=None):
    acts = _acts(n, ["Sigmoid", "Tanh", "Tanh"] * 2)

    def cell(xw, h, c, r, rb, H, di):
        f_, g_, h_ = acts[3 * di: 3 * di + 3]
        z = xw + ember.matmul(h, r.T) + rb
        i, o, f, cc = (z.narrow(1, k * H, H) for k in range(4))
        if P is not None:
            p = P[di]
            i = i + p.narrow(0, 0, H) * c
            f = f + p.narrow(0, 2 * H, H) * c
        i, f = f_(i), f_(f)
        c = f * c + i * g_(cc)
        if P is not None:
            o = o + P[di].narrow(0, H, H) * c
        return f_(o) * h_(c), c

    Y, h, c = _recurrent(n, x, W, R, B, h0, c0, 4, cell)
    return (Y, h, c)[:max(1, len(n.outputs))]


@op("GRU", since=7, attrs="activation_alpha activation_beta activations clip direction hidden_size "
    "linear_before_reset layout", check=_rnn_check)
def gru(n, x, W, R, B=None, seq_lens=None, h0=None):
    acts = _acts(n, ["Sigmoid", "Tanh"] * 2)
    lbr = n.attr("linear_before_reset", 0)

    def cell(xw, h, c, r, rb, H, di):
        f_, g_ = acts[2 * di: 2 * di + 2]
        xz, xr, xh = (xw.narrow(1, k * H, H) for k in range(3))
        rz, rr, rh = (r.narrow(0, k * H, H) for k in range(3))
        bz, br, bh = (rb.narrow(0, k * H, H) for k in range(3))
        z = f_(xz + ember.matmul(h, rz.T) + bz)
        rg = f_(xr + ember.matmul(h, rr.T) + br)
        if lbr:
            hh = g_(xh + rg * (ember.matmul(h, rh.T) + bh))
        else:
            hh = g_(xh + ember.matmul(rg * h, rh.T) + bh)
        return (1 - z) * hh + z * h, c

    Y, h, _ = _recurrent(n, x, W, R, B, h0, None, 3, cell)
    return (Y, h)[:max(1, len(n.outputs))]


@op("RNN", since=7, attrs="activation_alpha activation_beta activations clip direction hidden_size layout",
    check=_rnn_check)
def rnn(n, x, W, R, B=None, seq_lens=None, h0=None):
    acts = _acts(n, ["Tanh", "Tanh"])

    def cell(xw, h, c, r, rb, H, di):
        return acts[di](xw + ember.matmul(h, r.T) + rb), c

    Y, h, _ = _recurrent(n, x, W, R, B, h0, None, 1, cell)
    return (Y, h)[:max(1, len(n.outputs))]


def _distinct(items, sort):
    """Unique's tables for ``items`` (values or row tuples): the distinct ones (sorted, or in order of
    first appearance), each one's first index, each one's position among them, and their counts."""
    firsts = {}
    for i, v in enumerate(items):
        firsts.setdefault(v, i)
    keys = sorted(firsts) if sort else list(firsts)
    pos = {}
    for j, k in enumerate(keys):
        pos[k] = j
    counts = [0] * len(keys)
    for v in items:
        counts[pos[v]] += 1
    return keys, firsts, pos, counts


@op("Unique", since=11, attrs="axis sorted")
def unique(n, x):
    a = n.attr("axis")
    if a is not None:
        return _unique_axis(n, x, a)
    flat = x.reshape(-1).tolist()
    vals, firsts, pos, counts = _distinct(flat, n.attr("sorted", 1))
    dev = x.device
    return (ember.tensor(vals, dtype=x.dtype, device=dev), ember.tensor([firsts[v] for v in vals], dtype=ember.int64, device=dev),
            ember.tensor([pos[v] for v in flat], dtype=ember.int64, device=dev),
            ember.tensor(counts, dtype=ember.int64, device=dev))


def _unique_axis(n, x, a):
    """Unique slices along ``a``: each slice compared as a whole (its values as a tuple)."""
    from .util import axis as _axis
    a = _axis(a, x.dim(), n)
    moved = x.swap_dims(0, a) if a else x
    rows = [tuple(r) for r in moved.reshape(moved.shape[0], -1).tolist()]
    keys, firsts, pos, counts = _distinct(rows, n.attr("sorted", 1))
    dev = x.device
    picked = ember.tensor([firsts[k] for k in keys], dtype=ember.int64, device=dev)
    return (x.index_select(a, picked), picked, ember.tensor([pos[r] for r in rows], dtype=ember.int64, device=dev),
            ember.tensor(counts, dtype=ember.int64, device=dev))
