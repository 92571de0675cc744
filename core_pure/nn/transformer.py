"""Transformer encoder layers, with PyTorch's ``nn.TransformerEncoderLayer`` and
``nn.TransformerEncoder`` structure and parameter names."""
from ..errors import ArgumentError
from . import activation as _activation
from .attention import MultiheadAttention
from .config import REQUIRED, Config
from .dropout import Dropout
from .linear import Linear
from .module import Module, ModuleList
from .norm import LayerNorm


class TransformerEncoderLayer(Module):
    """Self-attention then a feed-forward block, each with a residual connection and a LayerNorm:
    after each block (``norm_first=False``, the original Transformer) or before (``norm_first=True``).

    >>> layer = TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, batch_first=True)
    >>> layer(ember.randn(2, 5, 16)).shape
    (2, 5, 16)
    """

    def __init__(self, d_model, nhead, dim_feedforward=2048, dropout=0.1, activation="relu", layer_norm_eps=1e-5,
                 batch_first=False, norm_first=False, bias=True, device=None, generator=None):
        super().__init__()
        self.self_attn = MultiheadAttention(d_model, nhead, dropout, bias, batch_first, device, generator)
        self.linear1 = Linear(d_model, dim_feedforward, bias, device, generator)
        self.dropout = Dropout(dropout, generator)
        self.linear2 = Linear(dim_feedforward, d_model, bias, device, generator)
        self.norm_first = norm_first
        self.norm1 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device)
        self.norm2 = LayerNorm(d_model, layer_norm_eps, bias=bias, device=device)
        self.dropout1 = Dropout(dropout, generator)
        self.dropout2 = Dropout(dropout, generator)
        self.activation = activation
        self._activation = _activation.get(activation) if type(activation) is str else activation

    def forward(self, src, src_mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        if self.norm_first:
            x = x + self._attention(self.norm1(x), src_mask, src_key_padding_mask, is_causal)
            return x + self._feed_forward(self.norm2(x))
        x = self.norm1(x + self._attention(x, src_mask, src_key_padding_mask, is_causal))
        return self.norm2(x + self._feed_forward(x))

    def _attention(self, x, mask, key_padding_mask, is_causal):
        out = self.self_attn(x, x, x, key_padding_mask=key_padding_mask, need_weights=False, attn_mask=mask,
                             is_causal=is_causal)[0]
        return self.dropout1(out)

    def _feed_forward(self, x):
        return self.dropout2(self.linear2(self.dropout(self._activation(self.linear1(x)))))

    def extra_repr(self):
        return "norm_first=%s, activation=%r" % (self.norm_first, self.activation if type(self.activation) is str
                                                 else getattr(self.activation, "__name__", "custom"))


class TransformerEncoder(Module):
    """``num_layers`` copies of ``encoder_layer`` (``layers.0``, ``layers.1``, ... each starting
    from the same weights, as in PyTorch), then an optional final ``norm``."""

    def __init__(self, encoder_layer, num_layers, norm=None):
        super().__init__()
        if type(num_layers) is not int or num_layers < 1:
            raise ArgumentError("TransformerEncoder: num_layers must be an int >= 1, found %r" % (num_layers,))
        self.layers = ModuleList([encoder_layer.deepcopy() for _ in range(num_layers)])
        self.num_layers = num_layers
        self.norm = norm

    def forward(self, src, mask=None, src_key_padding_mask=None, is_causal=False):
        x = src
        for layer in self.layers:
            x = layer(x, src_mask=mask, src_key_padding_mask=src_key_padding_mask, is_causal=is_causal)
        return self.norm(x) if self.norm is not None else x


_LAYER_FIELDS = (("d_model", REQUIRED, "int>0"), ("n_heads", REQUIRED, "int>0"), ("d_ff", 2048, "int>0"),
                 ("dropout", 0.1, "prob"), ("activation", "relu", ("relu", "gelu", "silu", "sigmoid", "tanh")),
                 ("layer_norm_eps", 1e-5, "float>0"), ("batch_first", False, "bool"), ("norm_first", False, "bool"),
                 ("bias", True, "bool"))


class TransformerEncoderLayerConfig(Config):
    """Builds ``TransformerEncoderLayer(d_model, nhead=n_heads, dim_feedforward=d_ff, ...)``."""

    FIELDS = _LAYER_FIELDS

    def validate(self):
        if self.d_model % self.n_heads:
            raise ArgumentError("%s: d_model %d must divide by n_heads %d"
                                % (type(self).__name__, self.d_model, self.n_heads))

    def _layer(self, device, generator):
        return TransformerEncoderLayer(self.d_model, self.n_heads, self.d_ff, self.dropout, self.activation,
                                       self.layer_norm_eps, self.batch_first, self.norm_first, self.bias, device,
                                       generator)

    def build(self, device, generator):
        return self._layer(device, generator)


class TransformerEncoderConfig(TransformerEncoderLayerConfig):
    """Builds a ``TransformerEncoder`` of ``n_layers`` layers, with a final LayerNorm when
    ``final_norm`` (usual with ``norm_first``)."""

    FIELDS = (("d_model", REQUIRED, "int>0"), ("n_heads", REQUIRED, "int>0"), ("n_layers", REQUIRED, "int>0")) + \
        _LAYER_FIELDS[2:] + (("final_norm", False, "bool"),)

    def build(self, device, generator):
        norm = LayerNorm(self.d_model, self.layer_norm_eps, bias=self.bias, device=device) if self.final_norm else None
        return TransformerEncoder(self._layer(device, generator), self.n_layers, norm)
