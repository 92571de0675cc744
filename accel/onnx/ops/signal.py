"""Fourier transforms as matrix products with cosine and sine tables, and a determinant by
Gaussian elimination with partial pivoting (row ops on the whole batch at once)."""
import math

import ember

from . import op
from .util import axis as _axis


def _tables(n_in, n_out, inverse, device):
    sign = 1.0 if inverse else -1.0
    cos = [[math.cos(2 * math.pi * k * j / n_in) for k in range(n_out)] for j in range(n_in)]
    sin = [[sign * math.sin(2 * math.pi * k * j / n_in) for k in range(n_out)] for j in range(n_in)]
    return (ember.tensor(cos, dtype=ember.float64, device=device),
            ember.tensor(sin, dtype=ember.float64, device=device))


def dft(x, a, length, onesided, inverse):
    """The DFT of ``x`` (last dim 1: real, 2: complex) along axis ``a``; last dim 2 out."""
    dt = x.dtype
    xs = x.to(ember.float64)
    re = xs.narrow(-1, 0, 1).squeeze(-1)
    im = xs.narrow(-1, 1, 1).squeeze(-1) if x.shape[-1] == 2 else None
    last = re.dim() - 1
    if a != last:
        re = re.swap_dims(a, last)
        im = im.swap_dims(a, last) if im is not None else None
    n = re.shape[-1]
    if inverse and onesided:  # an inverse real FFT: the other half of the bins is the conjugate mirror
        return _irfft(re, im, a, last, length or 2 * (n - 1), dt)
    N = length or n
    if N != n:  # zero-pad or truncate to the DFT length
        re = _fit(re, N)
        im = _fit(im, N) if im is not None else None
    bins = N // 2 + 1 if onesided else N
    cos, sin = _tables(N, bins, inverse, x.device)
    yr = ember.matmul(re, cos)
    yi = ember.matmul(re, sin)
    if im is not None:
        yr = yr - ember.matmul(im, sin)
        yi = yi + ember.matmul(im, cos)
    if inverse:
        yr, yi = yr / N, yi / N
    if a != last:
        yr, yi = yr.swap_dims(a, last), yi.swap_dims(a, last)
    return ember.stack([yr, yi], dim=-1).to(dt)


def _irfft(re, im, a, last, N, dt):
    n = re.shape[-1]
    tail = N - n
    if tail > 0:
        re = ember.cat([re, re.narrow(-1, 1, tail).flip(-1)], dim=-1)
        im = ember.cat([im, -im.narrow(-1, 1, tail).flip(-1)], dim=-1) if im is not None else None
    else:
        re = re.narrow(-1, 0, N)
        im = im.narrow(-1, 0, N) if im is not None else None
    cos, sin = _tables(N, N, True, re.device)
    y = ember.matmul(re, cos)
    if im is not None:
        y = y - ember.matmul(im, sin)
    y = y / N
    if a != last:
        y = y.swap_dims(a, last)
    return y.unsqueeze(-1).to(dt)


def _fit(t, N):
    n = t.shape[-1]
    if N < n:
        return t.narrow(-1, 0, N)
    shape = list(t.shape)
    shape[-1] = N - n
    return ember.cat([t, ember.zeros(shape, dtype=t.dtype, device=t.device)], dim=-1)


@op("DFT", since=17, attrs="axis inverse onesided", static=(1,))
def dft_17(n, x, length=None):
    a = _axis(n.attr("axis", 1), x.dim(), n)
    L = int(length.reshape(-1)[0].item()) if length is not None else None
    return dft(x, a, L, n.attr("onesided", 0), n.attr("inverse", 0))


@op("DFT", since=20, attrs="inverse onesided", static=(1, 2))
def dft_20(n, x, length=None, ax=None):
    a = int(ax.reshape(-1)[0].item()) if ax is not None else -2
    a = _axis(a, x.dim(), n)
    L = int(length.reshape(-1)[0].item()) if length is not None and length.numel() else None
    return dft(x, a, L, n.attr("onesided", 0), n.attr("inverse", 0))


@op("STFT", since=17, attrs="onesided", static=(1, 3))
def stft(n, signal, step, window=None, frame_length=None):
    hop = int(step.reshape(-1)[0].item())
    L = int(frame_length.reshape(-1)[0].item()) if frame_length is not None else window.shape[0]
    length = signal.shape[1]
    frames = 1 + (length - L) // hop
    idx = ember.tensor([[f * hop + j for j in range(L)] for f in range(frames)], dtype=ember.int64,
                       device=signal.device)
    framed = signal.index_select(1, idx.reshape(-1)).reshape(signal.shape[0], frames, L, signal.shape[2])
    if window is not None:
        framed = framed * window.reshape(1, 1, L, 1).to(signal.dtype)
    return dft(framed, 2, None, n.attr("onesided", 1), 0)


@op("Det")
def det(n, x):
    shape = x.shape
    k = shape[-1]
    a = x.to(ember.float64).reshape(-1, k, k)
    B = a.shape[0]
    sign = ember.ones(B, dtype=ember.float64, device=x.device)
    out = ember.ones(B, dtype=ember.float64, device=x.device)
    rows = ember.arange(k, dtype=ember.int64, device=x.device)
    for c in range(k):
        col = a[:, c:, c].abs()
        p = col.argmax(dim=1) + c  # the pivot row of each matrix
        perm = rows.reshape(1, k).expand(B, k)
        swap_c = (perm == c)
        swap_p = (perm == p.reshape(B, 1))
        perm = ember.where(swap_c, p.reshape(B, 1).expand(B, k), ember.where(swap_p, ember.full((), c, dtype=ember.int64, device=x.device), perm))
        a = a.gather(1, perm.unsqueeze(-1).expand(B, k, k))
        sign = ember.where(p != c, -sign, sign)
        piv = a[:, c, c]
        out = out * piv
        safe = ember.where(piv == 0, ember.ones_like(piv), piv)
        factors = a[:, :, c] / safe.reshape(B, 1)
        below = (rows > c).to(ember.float64).reshape(1, k)
        a = a - (factors * below).unsqueeze(-1) * a[:, c:c + 1, :]
    return (out * sign).reshape(*shape[:-2]).to(x.dtype)


@op("MelWeightMatrix", since=17, attrs="output_datatype", static=(0, 1, 2, 3, 4))
def mel_weight_matrix(n, bins, dft_length, rate, low, high):
    from .util import onnx_dtype
    m, L, sr = int(bins.item()), int(dft_length.item()), int(rate.item())
    lo_mel = 2595 * math.log1p(float(low.item()) / 700) / math.log(10)
    hi_mel = 2595 * math.log1p(float(high.item()) / 700) / math.log(10)
    step = (hi_mel - lo_mel) / (m + 2)
    edges = [int(((L + 1) * (700 * math.expm1((i * step + lo_mel) / 2595 * math.log(10)))) // sr)
             for i in range(m + 2)]
    out = [[0.0] * m for _ in range(L // 2 + 1)]
    for i in range(m):
        left, center, right = edges[i], edges[i + 1], edges[i + 2]
        if center == left:
            out[center][i] = 1.0
        else:
            for j in range(left, center + 1):
                out[j][i] = (j - left) / (center - left)
        if right > center:
            for j in range(center, right):
                out[j][i] = (right - j) / (right - center)
    return ember.tensor(out, dtype=onnx_dtype(n.attr("output_datatype", 1), n), device=n.device)
