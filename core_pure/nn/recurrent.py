"""Recurrent layers LSTM and GRU, with PyTorch's parameter names (``weight_ih_l0``, ``weight_hh_l0``,
``bias_ih_l0``, ``bias_hh_l0``, ``..._reverse``), gate order and initialization (all uniform on
±1/√hidden_size)."""
import math

from ..creation import zeros
from ..errors import ArgumentError, ShapeError
from ..movement import cat, stack
from . import checks
from . import functional as F
from . import init
from .config import REQUIRED, Config
from .module import Module, Param


class _RNNBase(Module):
    GATES = 0
    NAME = ""

    def __init__(self, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, device=None, generator=None):
        super().__init__()
        if not 0 <= dropout <= 1:
            raise ArgumentError("%s: dropout must be in [0, 1], found %r" % (self.NAME, dropout))
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = dropout
        self.bidirectional = bidirectional
        self.generator = generator
        k = 1 / math.sqrt(hidden_size)
        rows = self.GATES * hidden_size
        directions = 2 if bidirectional else 1
        for layer in range(num_layers):
            width = input_size if layer == 0 else hidden_size * directions
            for suffix in ("", "_reverse")[:directions]:
                shapes = [("weight_ih", (rows, width)), ("weight_hh", (rows, hidden_size))]
                if bias:
                    shapes += [("bias_ih", (rows,)), ("bias_hh", (rows,))]
                for name, shape in shapes:
                    setattr(self, "%s_l%d%s" % (name, layer, suffix),
                            Param(init.uniform(shape, -k, k, generator, device)))

    def _weights(self, layer, suffix):
        get = lambda name: getattr(self, "%s_l%d%s" % (name, layer, suffix))  # noqa: E731
        if self.bias:
            return get("weight_ih"), get("weight_hh"), get("bias_ih"), get("bias_hh")
        return get("weight_ih"), get("weight_hh"), None, None

    def _initial(self, hx, op_shape):
        if hx is None:
            return None
        checks.tensor(hx, self.NAME, "initial state")
        if hx.shape != op_shape:
            raise ShapeError("%s: expected an initial state of shape %s, found %s" % (self.NAME, op_shape, hx.shape))
        return hx

    def _run(self, x, states):
        """x: (L, N, input_size) time-major. states: per (layer, direction) initial state tuples.
        Returns the output (L, N, D·H) and the final states in the same order."""
        directions = 2 if self.bidirectional else 1
        finals = []
        for layer in range(self.num_layers):
            outs = []
            for d in range(directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, "_reverse" if d else "")
                xw = F.linear(x, w_ih, b_ih)  # every step's input projection in one matmul
                state = states[layer * directions + d]
                steps = range(x.shape[0] - 1, -1, -1) if d else range(x.shape[0])
                out = [None] * x.shape[0]
                for t in steps:
                    state = self._cell(xw[t], state, w_hh, b_hh)
                    out[t] = state[0]
                outs.append(stack(out, 0))
                finals.append(state)
            x = cat(outs, -1) if directions == 2 else outs[0]
            if self.dropout and self.training and layer < self.num_layers - 1:
                x = F.dropout(x, self.dropout, True, self.generator)
        return x, finals

    def _prepare(self, x):
        checks.ndim(x, self.NAME, (2, 3), "(L, N, input_size), (N, L, input_size) with batch_first, or (L, input_size)")
        checks.features(x, self.NAME, self.input_size, "input_size")
        batched = len(x.shape) == 3
        if not batched:
            x = x.unsqueeze(1)
        elif self.batch_first:
            x = x.transpose(0, 1)
        return x, batched

    def _finish(self, y, batched):
        if not batched:
            return y.squeeze(1)
        return y.transpose(0, 1) if self.batch_first else y

    def _state_shape(self, n, batched):
        layers = self.num_layers * (2 if self.bidirectional else 1)
        return (layers, n, self.hidden_size) if batched else (layers, self.hidden_size)

    def _zeros(self, x):
        return zeros(x.shape[1], self.hidden_size, dtype=x.dtype, device=x.device)

    def extra_repr(self):
        s = "%d, %d" % (self.input_size, self.hidden_size)
        if self.num_layers != 1:
            s += ", num_layers=%d" % self.num_layers
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout:
            s += ", dropout=%r" % (self.dropout,)
        if self.bidirectional:
            s += ", bidirectional=True"
        return s


def _split_states(hx, batched, count):
    if hx is None:
        return [None] * count
    if not batched:
        hx = hx.unsqueeze(1)
    return [hx[i] for i in range(count)]


class LSTM(_RNNBase):
    """Long short-term memory, gates in PyTorch's order (input, forget, cell, output).

    ``forward(x, hx=None)`` returns ``(output, (h_n, c_n))``: output (L, N, D·H) (batch first with
    ``batch_first``), h_n and c_n (D·num_layers, N, H); ``hx`` is ``(h_0, c_0)`` or None for zeros.
    """

    GATES = 4
    NAME = "LSTM"

    def forward(self, x, hx=None):
        x, batched = self._prepare(x)
        count = self.num_layers * (2 if self.bidirectional else 1)
        shape = self._state_shape(x.shape[1], batched)
        if hx is None:
            h0 = c0 = [None] * count
        else:
            if type(hx) not in (tuple, list) or len(hx) != 2:
                raise ArgumentError("LSTM: hx must be a pair (h_0, c_0), found %r" % (type(hx).__name__,))
            h0 = _split_states(self._initial(hx[0], shape), batched, count)
            c0 = _split_states(self._initial(hx[1], shape), batched, count)
        states = [(h if h is not None else self._zeros(x), c if c is not None else self._zeros(x))
                  for h, c in zip(h0, c0)]
        y, finals = self._run(x, states)
        h_n = stack([s[0] for s in finals], 0)
        c_n = stack([s[1] for s in finals], 0)
        if not batched:
            h_n, c_n = h_n.squeeze(1), c_n.squeeze(1)
        return self._finish(y, batched), (h_n, c_n)

    def _cell(self, xw, state, w_hh, b_hh):
        h, c = state
        gates = xw + F.linear(h, w_hh, b_hh)
        n = self.hidden_size
        i = gates.narrow(-1, 0, n).sigmoid()
        f = gates.narrow(-1, n, n).sigmoid()
        g = gates.narrow(-1, 2 * n, n).tanh()
        o = gates.narrow(-1, 3 * n, n).sigmoid()
        c = f * c + i * g
        return o * c.tanh(), c


class GRU(_RNNBase):
    """Gated recurrent unit, gates in PyTorch's order (reset, update, new):
    n = tanh(W_in x + b_in + r · (W_hn h + b_hn)), h' = (1 - z) · n + z · h.

    ``forward(x, hx=None)`` returns ``(output, h_n)``.
    """

    GATES = 3
    NAME = "GRU"

    def forward(self, x, hx=None):
        x, batched = self._prepare(x)
        count = self.num_layers * (2 if self.bidirectional else 1)
        shape = self._state_shape(x.shape[1], batched)
        h0 = _split_states(self._initial(hx, shape), batched, count)
        states = [(h if h is not None else self._zeros(x),) for h in h0]
        y, finals = self._run(x, states)
        h_n = stack([s[0] for s in finals], 0)
        return self._finish(y, batched), (h_n if batched else h_n.squeeze(1))

    def _cell(self, xw, state, w_hh, b_hh):
        h = state[0]
        hw = F.linear(h, w_hh, b_hh)
        n = self.hidden_size
        r = (xw.narrow(-1, 0, n) + hw.narrow(-1, 0, n)).sigmoid()
        z = (xw.narrow(-1, n, n) + hw.narrow(-1, n, n)).sigmoid()
        new = (xw.narrow(-1, 2 * n, n) + r * hw.narrow(-1, 2 * n, n)).tanh()
        return (new + z * (h - new),)


_RNN_FIELDS = (("d_input", REQUIRED, "int>0"), ("d_hidden", REQUIRED, "int>0"), ("n_layers", 1, "int>0"),
               ("bias", True, "bool"), ("batch_first", False, "bool"), ("dropout", 0.0, "prob"),
               ("bidirectional", False, "bool"))


class LSTMConfig(Config):
    """Builds ``LSTM(d_input, d_hidden, num_layers=n_layers, ...)``."""

    FIELDS = _RNN_FIELDS
    MODULE = LSTM

    def build(self, device, generator):
        return self.MODULE(*self.values(), device=device, generator=generator)


class GRUConfig(LSTMConfig):
    """Builds ``GRU(d_input, d_hidden, num_layers=n_layers, ...)``."""

    MODULE = GRU
