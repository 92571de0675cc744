"""Attention (opset 23+) and RotaryEmbedding as ember compositions, following ONNX's reference:
masks become an additive bias of 0 / -inf, a fully masked query row gives zeros."""
import ember
import ember.nn.functional as F

from . import op

INF = float("inf")


def _heads(x, h):
    b, s, hidden = x.shape
    return x.reshape(b, s, h, hidden // h).permute(0, 2, 1, 3)


def _allowed_bias(allowed, dtype, device):
    zero = ember.zeros((), dtype=dtype, device=device)
    return ember.where(allowed, zero, ember.full((), -INF, dtype=dtype, device=device))


def _positions(q, kv, offset, device):
    """(query index + offset) - key index, as (q, kv) or (batch, 1, q, kv) for per-batch offsets."""
    i = ember.arange(q, dtype=ember.int64, device=device).reshape(q, 1)
    j = ember.arange(kv, dtype=ember.int64, device=device).reshape(1, kv)
    if isinstance(offset, int):
        return i + offset - j
    return (i.reshape(1, q, 1) + offset.reshape(-1, 1, 1) - j.reshape(1, 1, kv)).unsqueeze(1)


def _softmax_rows(x):
    m = x.max(dim=-1, keepdim=True)[0]
    masked = m.isinf().logical_and(m < 0)
    safe = ember.where(masked, ember.zeros_like(m), m)
    e = (x - safe).exp()
    s = e.sum(dim=-1, keepdim=True)
    return e / ember.where(s == 0, ember.ones_like(s), s)


@op("Attention", since=23, attrs="is_causal kv_num_heads q_num_heads qk_matmul_output_mode scale softcap "
    "softmax_precision left_window_size right_window_size")
def attention(n, Q, K, V, mask=None, past_key=None, past_value=None, nonpad=None):
    rank3 = Q.dim() == 3
    if rank3:
        Q, K, V = _heads(Q, n.attr("q_num_heads")), _heads(K, n.attr("kv_num_heads")), _heads(V, n.attr("kv_num_heads"))
    dt, dev = Q.dtype, Q.device
    scale = n.attr("scale")
    if scale is None:
        scale = 1 / Q.shape[3] ** 0.5
    root = scale ** 0.5
    if past_key is not None:
        K = ember.cat([past_key, K], dim=2)
        V = ember.cat([past_value, V], dim=2)
    present_k, present_v = K, V
    q_len, kv_len = Q.shape[2], K.shape[2]
    bias = ember.zeros((q_len, kv_len), dtype=dt, device=dev)
    if mask is not None and mask.shape[-1] < kv_len:
        pad = [0, kv_len - mask.shape[-1]]
        mask = F.pad(mask.to(dt), pad, value=-INF) if mask.dtype.kind != "b" else \
            F.pad(mask.to(ember.int32), pad, value=0).to(ember.bool)
    if mask is not None:
        bias = bias + (_allowed_bias(mask, dt, dev) if mask.dtype.kind == "b" else mask.to(dt))
    left, right = n.attr("left_window_size", -1), n.attr("right_window_size", -1)
    if past_key is None and nonpad is not None:
        offset = nonpad.reshape(-1).to(ember.int64) - q_len
    else:
        offset = past_key.shape[2] if past_key is not None else 0
    if n.attr("is_causal", 0):
        bias = bias + _allowed_bias(_positions(q_len, kv_len, offset, dev) >= 0, dt, dev)
    if left >= 0 or right >= 0:
        diff = _positions(q_len, kv_len, offset, dev)
        allowed = ember.ones(diff.shape, dtype=ember.bool, device=dev)
        if left >= 0:
            allowed = allowed.logical_and(diff <= left)
        if right >= 0:
            allowed = allowed.logical_and(-diff <= right)
        bias = bias + _allowed_bias(allowed, dt, dev)
    if nonpad is not None:
        keep = ember.arange(kv_len, dtype=ember.int64, device=dev).reshape(1, kv_len) < \
            nonpad.reshape(-1, 1).to(ember.int64)
        bias = bias + _allowed_bias(keep, dt, dev).reshape(-1, 1, 1, kv_len)
    hq, hk = Q.shape[1], K.shape[1]
    if hq != hk and hq % hk == 0:
        K = K.repeat_interleave(hq // hk, dim=1)
        V = V.repeat_interleave(hq // hk, dim=1)
    qk = ember.matmul(Q * root, K.permute(0, 1, 3, 2) * root)
    softcap = n.attr("softcap")
    if softcap is not None and softcap > 0:
        qk = (qk / softcap).tanh() * softcap
    with_bias = qk + bias
    mode = n.attr("qk_matmul_output_mode", 0)
    qk_out = with_bias if mode == 2 else qk
    probs = _softmax_rows(with_bias.to(ember.float32) if n.attr("softmax_precision") == 1 else with_bias)
    bmax = bias.max(dim=-1, keepdim=True)[0]
    dead = bmax.isinf().logical_and(bmax < 0)
    probs = ember.where(dead, ember.zeros((), dtype=probs.dtype, device=dev), probs)
    if mode == 3:
        qk_out = probs
    probs = probs.to(dt)
    out = ember.matmul(probs, V)
    if rank3:
        out = out.permute(0, 2, 1, 3)
        out = out.reshape(out.shape[0], out.shape[1], -1)
    return out, present_k, present_v, qk_out.to(dt)


@op("RotaryEmbedding", since=23, attrs="interleaved num_heads rotary_embedding_dim")
def rotary_embedding(n, x, cos, sin, pos=None):
    shape = x.shape
    if x.dim() == 4:
        x = x.permute(0, 2, 1, 3)
    if x.dim() == 3:
        h = n.attr("num_heads")
        x = x.reshape(shape[0], shape[1], h, shape[2] // h)
    d = n.attr("rotary_embedding_dim", 0) or x.shape[3]
    rot, rest = x.narrow(3, 0, d), x.narrow(3, d, x.shape[3] - d)
    if pos is not None:
        p = pos.to(ember.int64)
        cos = cos.index_select(0, p.reshape(-1)).reshape(*(list(p.shape) + [cos.shape[-1]]))
        sin = sin.index_select(0, p.reshape(-1)).reshape(*(list(p.shape) + [sin.shape[-1]]))
    cos, sin = cos.unsqueeze(2), sin.unsqueeze(2)
    half = d // 2
    if n.attr("interleaved", 0):
        pairs = rot.reshape(*(list(rot.shape[:3]) + [half, 2]))
        x1, x2 = pairs[..., 0], pairs[..., 1]
    else:
        x1, x2 = rot.narrow(3, 0, half), rot.narrow(3, half, half)
    real = cos * x1 - sin * x2
    imag = sin * x1 + cos * x2
    if n.attr("interleaved", 0):
        rot = ember.stack([real, imag], dim=-1).reshape(*rot.shape)
    else:
        rot = ember.cat([real, imag], dim=-1)
    y = ember.cat([rot, rest], dim=-1) if rest.shape[3] else rot
    if len(shape) == 4:
        return y.permute(0, 2, 1, 3)
    return y.reshape(*shape)
