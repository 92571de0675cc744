"""Batched matmul, convolution and pooling of the Torch device, through torch's own kernels.

matmul and conv run in the inputs' dtype, so float16 and bfloat16 reach the GPU's tensor cores
(cuBLAS and cuDNN accumulate in float32 and round once). float32 runs in full float32 unless the
device allows TF32 (``Torch("cuda", tf32=True)``): ``precision`` sets torch's switches for the one
call and puts them back, so torch code elsewhere in the process keeps its own setting. Integer
matmul wraps; CUDA has no integer GEMM, so there it runs on the host.
"""
import torch
import torch.nn.functional as F

from .arrays import F32, F64, round_float


class precision:
    """TF32 on or off for float32 matmul and conv inside the block, and with ``deterministic``
    cuDNN's deterministic algorithms only (CUDA only; a no-op elsewhere). Convolutions ask for
    them: some of cuDNN's weight-gradient algorithms add with atomics, so the same step gave other
    bits on each run, which a captured step's check refuses (and ember's other devices never do)."""

    __slots__ = ("tf32", "deterministic", "saved")

    def __init__(self, tf32, deterministic=False):
        self.tf32 = tf32
        self.deterministic = deterministic
        self.saved = None

    def __enter__(self):
        m, c = torch.backends.cuda.matmul, torch.backends.cudnn
        saved = (m.allow_tf32, c.allow_tf32, c.deterministic)
        want = (self.tf32, self.tf32, self.deterministic or saved[2])
        if saved != want:
            self.saved = saved
            m.allow_tf32, c.allow_tf32, c.deterministic = want
        return self

    def __exit__(self, *exc):
        if self.saved is not None:
            m, c = torch.backends.cuda.matmul, torch.backends.cudnn
            m.allow_tf32, c.allow_tf32, c.deterministic = self.saved
            self.saved = None


def matmul(a, b, tf32=False):
    """The primitive ``matmul``: ``torch.matmul`` (float and integer; equal batch dims)."""
    if a.is_floating_point():
        if a.dtype is F32 and a.is_cuda:
            with precision(tf32):
                return torch.matmul(a, b)
        return torch.matmul(a, b)
    if a.device.type != "cpu":
        return torch.matmul(a.cpu(), b.cpu()).to(a.device)
    return torch.matmul(a, b)


def _pad_pairs(padding):
    """ember's ((before, after), ...) per dim as F.pad's (last dim first) flat tuple."""
    flat = []
    for before, after in reversed(padding):
        flat += [before, after]
    return flat


def conv(x, w, stride, padding, dilation, groups, tf32=False):
    """x (N, C, [H,] W) with w (O, C/groups, [kh,] kw), no bias; padding per dim (before, after)."""
    sym = all(p[0] == p[1] for p in padding)
    if not sym:
        x = F.pad(x, _pad_pairs(padding))
        pads = [0] * len(padding)
    else:
        pads = [p[0] for p in padding]
    fn = F.conv1d if x.dim() == 3 else F.conv2d
    if x.is_cuda:
        with precision(tf32 and x.dtype is F32, deterministic=True):
            return fn(x, w, None, stride, pads, dilation, groups)
    return fn(x, w, None, stride, pads, dilation, groups)


def pool(op, x, kernel, stride, padding, dilation):
    """``max`` (pads are -inf; nan propagates) or ``avg`` (pads count as 0; sums in float64)."""
    one_d = x.dim() == 3
    if one_d:
        x = x.unsqueeze(2)
        kernel, stride, padding, dilation = ((1,) + tuple(kernel), (1,) + tuple(stride),
                                             ((0, 0),) + tuple(padding), (1,) + tuple(dilation))
    if op == "max":
        out = _max_pool(x, kernel, stride, padding, dilation)
    else:
        out = _avg_pool(x, kernel, stride, padding, dilation)
    return out.squeeze(2) if one_d else out


def _max_pool(x, kernel, stride, padding, dilation):
    if x.is_floating_point():
        x = F.pad(x, _pad_pairs(padding), value=float("-inf"))
        return F.max_pool2d(x, kernel, stride, 0, dilation)
    low = torch.iinfo(x.dtype).min if x.dtype is not torch.bool else False
    x = F.pad(x.to(torch.int64) if x.dtype is torch.bool else x, _pad_pairs(padding), value=low)
    out = None
    for win in _windows(x, kernel, stride, dilation):
        out = win.clone() if out is None else torch.maximum(out, win)
    return out.to(torch.bool) if low is False else out


def _avg_pool(x, kernel, stride, padding, dilation):
    dt = x.dtype
    wide = F.pad(x.to(F64), _pad_pairs(padding))
    if tuple(dilation) == (1, 1):
        out = F.avg_pool2d(wide, kernel, stride, 0)
    else:
        out = None
        for win in _windows(wide, kernel, stride, dilation):
            out = win.clone() if out is None else out.add_(win)
        out = out / float(kernel[0] * kernel[1])
    return round_float(out, dt)


def _windows(x, kernel, stride, dilation):
    """Each kernel tap's strided view of the padded input: out = fold(taps)."""
    h, w = x.shape[2], x.shape[3]
    (kh, kw), (sh, sw), (dh, dw) = kernel, stride, dilation
    oh = (h - dh * (kh - 1) - 1) // sh + 1
    ow = (w - dw * (kw - 1) - 1) // sw + 1
    for i in range(kh):
        for j in range(kw):
            y0, x0 = i * dh, j * dw
            yield x[:, :, y0:y0 + (oh - 1) * sh + 1:sh, x0:x0 + (ow - 1) * sw + 1:sw]
