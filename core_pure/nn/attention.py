"""Multi-head attention with PyTorch's ``nn.MultiheadAttention`` layout and mask conventions."""
import math

from .. import dtypes
from ..creation import ones
from ..errors import ArgumentError, ShapeError
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .linear import Linear
from .module import Module, Param


class MultiheadAttention(Module):
    """Attention over ``num_heads`` heads of ``embed_dim // num_heads`` features.

    Parameters as in PyTorch: ``in_proj_weight`` [3·E, E] (query, key and value projections packed,
    xavier-uniform), ``in_proj_bias`` [3·E] (zeros) and ``out_proj`` (a Linear, bias zeros).
    Inputs are (L, N, E), or (N, L, E) with ``batch_first``, or unbatched (L, E). Masks follow
    PyTorch: in a bool ``attn_mask`` ((L, S) or (N·heads, L, S)) or ``key_padding_mask`` ((N, S)),
    True marks a position that may NOT be attended; float masks are added to the scores.
    ``is_causal`` without a mask lets query i see keys j <= i. Returns (output, weights): weights
    (N, L, S) averaged over heads (per head with ``average_attn_weights=False``), or None when
    ``need_weights`` is False.
    """

    def __init__(self, embed_dim, num_heads, dropout=0.0, bias=True, batch_first=False, device=None,
                 generator=None):
        super().__init__()
        if embed_dim % num_heads:
            raise ArgumentError("MultiheadAttention: embed_dim %d must divide by num_heads %d" % (embed_dim, num_heads))
        self.embed_dim = embed_dim
        self.num_heads = num_heads
        self.head_dim = embed_dim // num_heads
        self.dropout = dropout
        self.batch_first = batch_first
        self.generator = generator
        self.in_proj_weight = Param(init.xavier_uniform((3 * embed_dim, embed_dim), generator=generator, device=device))
        self.in_proj_bias = Param(init.zeros((3 * embed_dim,), device)) if bias else None
        self.out_proj = Linear(embed_dim, embed_dim, bias, device, generator)
        if bias:
            self.out_proj.bias = init.zeros((embed_dim,), device)

    def _project(self, x, i):
        e = self.embed_dim
        w = self.in_proj_weight.narrow(0, i * e, e)
        b = self.in_proj_bias.narrow(0, i * e, e) if self.in_proj_bias is not None else None
        n, length = x.shape[0], x.shape[1]
        # (N, L, E) -> (N, heads, L, head_dim)
        return F.linear(x, w, b).reshape(n, length, self.num_heads, self.head_dim).transpose(1, 2)

    def forward(self, query, key, value, key_padding_mask=None, need_weights=True, attn_mask=None,
                average_attn_weights=True, is_causal=False):
        op = "MultiheadAttention"
        for name, t in (("query", query), ("key", key), ("value", value)):
            checks.tensor(t, op, name)
            if len(t.shape) != len(query.shape) or len(t.shape) not in (2, 3) or t.shape[-1] != self.embed_dim:
                raise ShapeError("%s: expected %s of shape %s with E = %d, found %s"
                                 % (op, name, "(N, L, E), or (L, E) unbatched" if self.batch_first else
                                    "(L, N, E), or (L, E) unbatched", self.embed_dim, t.shape))
        batched = len(query.shape) == 3
        if not batched:
            query, key, value = query.unsqueeze(0), key.unsqueeze(0), value.unsqueeze(0)
            if key_padding_mask is not None:
                key_padding_mask = key_padding_mask.unsqueeze(0)
        elif not self.batch_first:
            query, key, value = query.transpose(0, 1), key.transpose(0, 1), value.transpose(0, 1)
        n, length, e = query.shape
        s = key.shape[1]
        if key.shape[0] != n or value.shape[:2] != key.shape[:2]:
            raise ShapeError("%s: query, key and value disagree in batch or key length: %s, %s, %s"
                             % (op, query.shape, key.shape, value.shape))
        q, k, v = self._project(query, 0), self._project(key, 1), self._project(value, 2)
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        if attn_mask is not None:
            scores = _apply_mask(scores, _attn_mask(attn_mask, n, self.num_heads, length, s))
        elif is_causal:
            allowed = ones(length, s, dtype=dtypes.bool_, device=scores.device).tril()
            scores = scores.masked_fill(~allowed, float("-inf"))
        if key_padding_mask is not None:
            if key_padding_mask.shape != (n, s):
                raise ShapeError("%s: expected key_padding_mask of shape %s, found %s"
                                 % (op, (n, s), key_padding_mask.shape))
            scores = _apply_mask(scores, key_padding_mask.reshape(n, 1, 1, s))
        weights = F.softmax(scores, -1)
        if self.dropout and self.training:
            weights = F.dropout(weights, self.dropout, True, self.generator)
        out = (weights @ v).transpose(1, 2).reshape(n, length, e)
        out = self.out_proj(out)
        if not batched:
            out = out.squeeze(0)
        elif not self.batch_first:
            out = out.transpose(0, 1)
        if not need_weights:
            return out, None
        if average_attn_weights:
            weights = weights.mean(1)
        return out, (weights if batched else weights.squeeze(0))

    def extra_repr(self):
        return "embed_dim=%d, num_heads=%d, dropout=%r, batch_first=%s" % (self.embed_dim, self.num_heads,
                                                                           self.dropout, self.batch_first)


MultiHeadAttention = MultiheadAttention


def _attn_mask(mask, n, heads, length, s):
    checks.tensor(mask, "MultiheadAttention", "attn_mask")
    if mask.shape == (length, s):
        return mask
    if mask.shape == (n * heads, length, s):
        return mask.reshape(n, heads, length, s)
    raise ShapeError("MultiheadAttention: expected attn_mask of shape %s or %s, found %s"
                     % ((length, s), (n * heads, length, s), mask.shape))


def _apply_mask(scores, mask):
    """True in a bool mask hides a position; a float mask is added."""
    if mask.dtype is dtypes.bool_:
        return scores.masked_fill(mask, float("-inf"))
    return scores + mask


class MultiheadAttentionConfig(Config):
    """Builds ``MultiheadAttention(d_model, n_heads, dropout, bias, batch_first)``."""

    FIELDS = (("d_model", REQUIRED, "int>0"), ("n_heads", REQUIRED, "int>0"), ("dropout", 0.0, "prob"),
              ("bias", True, "bool"), ("batch_first", False, "bool"))

    def validate(self):
        if self.d_model % self.n_heads:
            raise ArgumentError("MultiheadAttentionConfig: d_model %d must divide by n_heads %d"
                                % (self.d_model, self.n_heads))

    def build(self, device, generator):
        return MultiheadAttention(self.d_model, self.n_heads, self.dropout, self.bias, self.batch_first, device,
                                  generator)


MultiHeadAttentionConfig = MultiheadAttentionConfig
