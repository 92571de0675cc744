"""Scaled dot-product attention, with masks, causal attention and grouped-query heads."""
from ... import dtypes
from ...composite import composite
from ...errors import ArgumentTypeError, ShapeError
from ...tensor import Tensor
from .activation import softmax
from .drop import dropout


@composite
def scaled_dot_product_attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                                 scale=None, enable_gqa=False, generator=None):
    """softmax(q·kᵀ·scale + mask)·v over (..., L, E) queries and (..., S, E) keys.

    A bool ``attn_mask`` marks positions that may attend (True); a float mask is added to the
    scores. ``is_causal`` lets query i see keys j <= i. ``enable_gqa`` lets (..., Hq, L, E)
    queries share (..., Hkv, S, E) keys and values, each kv head serving Hq / Hkv query heads.
    """
    from ...creation import ones
    if enable_gqa:
        key, value = _gqa_heads(query, key, "key"), _gqa_heads(query, value, "value")
    L, S = query.shape[-2], key.shape[-2]
    if query.shape[-1] != key.shape[-1]:
        raise ShapeError("scaled_dot_product_attention: query and key feature sizes differ: %s vs %s"
                         % (query.shape, key.shape))
    scale = 1.0 / (query.shape[-1] ** 0.5) if scale is None else scale
    scores = (query @ key.transpose(-2, -1)) * scale
    if is_causal:
        allowed = ones(L, S, dtype=dtypes.bool_, device=query.device).tril()
        scores = scores.masked_fill(~allowed, float("-inf"))
    if attn_mask is not None:
        from ...shapes import broadcast_shapes
        if type(attn_mask) is not Tensor:
            raise ArgumentTypeError("scaled_dot_product_attention: expected attn_mask as a tensor, found %s"
                                    % type(attn_mask).__name__)
        broadcast_shapes(scores.shape, attn_mask.shape, "scaled_dot_product_attention")
        if attn_mask.dtype is dtypes.bool_:
            scores = scores.where(attn_mask, float("-inf"))
        else:
            scores = scores + attn_mask
    weights = softmax(scores, -1)
    if dropout_p:
        weights = dropout(weights, dropout_p, True, generator)
    return weights @ value


def _gqa_heads(query, t, what):
    """``t``'s heads (dim -3) each repeated Hq / Hkv times in place, as grouped-query attention reads them."""
    if len(query.shape) < 3 or len(t.shape) < 3:
        raise ShapeError("scaled_dot_product_attention: enable_gqa needs (..., heads, L, E) tensors, found %s and %s"
                         % (query.shape, t.shape))
    hq, hk = query.shape[-3], t.shape[-3]
    if hk == 0 or hq % hk:
        raise ShapeError("scaled_dot_product_attention: with enable_gqa the query heads (%d) must be a multiple "
                         "of the %s heads (%d)" % (hq, what, hk))
    if hq == hk:
        return t
    lead = t.shape[:-3]
    spread = t.unsqueeze(-3).expand(lead + (hk, hq // hk) + t.shape[-2:])
    return spread.reshape(lead + (hq,) + t.shape[-2:])
