"""Position information for sequence models: sinusoidal PositionalEncoding and RotaryEncoding (RoPE).

Both take inputs (..., seq, d_model). Their tables are computed on first use, for the positions
used so far (a board never holds rows it does not need), and kept as buffers that are not saved."""
import math

from ..creation import tensor
from ..errors import ArgumentError, ShapeError
from ..movement import cat
from . import checks
from .config import REQUIRED, Config
from .module import Module


def _even(d_model, op):
    if type(d_model) is not int or d_model < 2 or d_model % 2:
        raise ArgumentError("%s: d_model must be an even int >= 2, found %r" % (op, d_model))


def _check_seq(x, op, d_model, limit, start=0):
    checks.features(x, op, d_model, "d_model")
    if len(x.shape) < 2 or start + x.shape[-2] > limit:
        raise ShapeError("%s: expected input (..., seq, %d) with start + seq <= %d, found shape %s (start %d)"
                         % (op, d_model, limit, x.shape, start))


class PositionalEncoding(Module):
    """Adds the sinusoids of "Attention Is All You Need": for position p and even feature i,
    sin(p / max_timescale^(i/d_model)) at i and the cosine of the same angle at i + 1."""

    def __init__(self, d_model, max_sequence_size=5000, max_timescale=10000.0):
        super().__init__()
        _even(d_model, "PositionalEncoding")
        self.d_model = d_model
        self.max_sequence_size = max_sequence_size
        self.max_timescale = max_timescale
        self.pe = None

    def _table(self, length, device):
        if self.pe is None or self.pe.shape[0] < length or self.pe.device != device:
            values = []
            for p in range(length):
                for i in range(0, self.d_model, 2):
                    angle = p / math.pow(self.max_timescale, i / self.d_model)
                    values.append(math.sin(angle))
                    values.append(math.cos(angle))
            self.register_buffer("pe", tensor(values, device=device).reshape(length, self.d_model), persistent=False)
        return self.pe

    def forward(self, x):
        _check_seq(x, "PositionalEncoding", self.d_model, self.max_sequence_size)
        seq = x.shape[-2]
        return x + self._table(seq, x.device).narrow(0, 0, seq)

    def extra_repr(self):
        return "d_model=%d, max_sequence_size=%d" % (self.d_model, self.max_sequence_size)


class RotaryEncoding(Module):
    """Rotary position embedding (RoFormer, LLaMA): each pair of features (2i, 2i + 1) at position p
    is rotated by the angle p · theta^(-2i/d_model). ``forward(x, start=0)`` takes positions
    ``start, start + 1, ...`` (``start`` > 0 when decoding with a cache)."""

    def __init__(self, d_model, max_sequence_length=4096, theta=10000.0):
        super().__init__()
        _even(d_model, "RotaryEncoding")
        self.d_model = d_model
        self.max_sequence_length = max_sequence_length
        self.theta = theta
        self.cos = self.sin = None

    def _tables(self, length, device):
        if self.cos is None or self.cos.shape[0] < length or self.cos.device != device:
            half = self.d_model // 2
            freqs = [math.pow(self.theta, -2.0 * i / self.d_model) for i in range(half)]
            cos, sin = [], []
            for p in range(length):
                for f in freqs:
                    cos.append(math.cos(p * f))
                    sin.append(math.sin(p * f))
            self.register_buffer("cos", tensor(cos, device=device).reshape(length, half, 1), persistent=False)
            self.register_buffer("sin", tensor(sin, device=device).reshape(length, half, 1), persistent=False)
        return self.cos, self.sin

    def forward(self, x, start=0):
        _check_seq(x, "RotaryEncoding", self.d_model, self.max_sequence_length, start)
        seq = x.shape[-2]
        pairs = x.reshape(x.shape[:-1] + (self.d_model // 2, 2))
        a, b = pairs.narrow(-1, 0, 1), pairs.narrow(-1, 1, 1)
        cos, sin = self._tables(start + seq, x.device)
        cos, sin = cos.narrow(0, start, seq), sin.narrow(0, start, seq)
        return cat([a * cos - b * sin, a * sin + b * cos], -1).reshape(x.shape)

    def extra_repr(self):
        return "d_model=%d, max_sequence_length=%d, theta=%r" % (self.d_model, self.max_sequence_length, self.theta)


class PositionalEncodingConfig(Config):
    """Builds ``PositionalEncoding(d_model, max_sequence_size, max_timescale)``."""

    FIELDS = (("d_model", REQUIRED, "int>0"), ("max_sequence_size", 5000, "int>0"),
              ("max_timescale", 10000.0, "float>0"))

    def build(self, device, generator):
        return PositionalEncoding(self.d_model, self.max_sequence_size, self.max_timescale)


class RotaryEncodingConfig(Config):
    """Builds ``RotaryEncoding(d_model, max_sequence_length, theta)``."""

    FIELDS = (("d_model", REQUIRED, "int>0"), ("max_sequence_length", 4096, "int>0"),
              ("theta", 10000.0, "float>0"))

    def build(self, device, generator):
        return RotaryEncoding(self.d_model, self.max_sequence_length, self.theta)
