"""``ember.accel.Torch(device)``: the contract's primitives over torch tensors (docs/architecture.md §5)."""
import torch

from ember import dtypes
from ember.backend import Backend
from ember.errors import ArgumentTypeError, DeviceError

from . import arrays as _arrays
from . import elementwise as _ew
from . import linalg as _linalg
from . import movement as _mv
from . import reduce as _reduce
from .arrays import TORCH

_KINDS = ("cpu", "cuda", "mps")
_T = torch.Tensor


def _torch_device(device):
    if isinstance(device, torch.device):
        dev = device
    elif isinstance(device, str):
        try:
            dev = torch.device(device)
        except RuntimeError:
            dev = None
        if dev is None or dev.type not in _KINDS:
            raise DeviceError("Torch: expected a device \"cpu\", \"cuda\", \"cuda:N\" or \"mps\", found %r" % (device,))
    else:
        raise ArgumentTypeError("Torch: expected a device name such as \"cuda\", found %s" % type(device).__name__)
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise DeviceError("Torch: device %r needs a CUDA build of torch and a GPU; this torch %s sees none "
                              "(torch.cuda.is_available() is False)" % (device, torch.__version__))
        index = torch.cuda.current_device() if dev.index is None else dev.index
        if index >= torch.cuda.device_count():
            raise DeviceError("Torch: expected a CUDA device index below %d, found %r"
                              % (torch.cuda.device_count(), device))
        dev = torch.device("cuda", index)
    elif dev.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceError("Torch: device 'mps' needs Apple's Metal; torch.backends.mps.is_available() is False")
    return dev


class Torch(Backend):
    """A device on torch tensors: ember's semantics with torch's kernels, on the CPU, CUDA or MPS.

    >>> dev = ember.accel.Torch("cuda")
    >>> x = ember.randn(64, 784, device=dev)
    >>> ember.accel.to_torch(x)       # the same memory as a torch.Tensor, no copy

    matmul and conv go through torch (cuBLAS/cuDNN on CUDA: tensor cores for float16 and bfloat16).
    float32 matmul and conv stay full float32 unless ``tf32=True``. torch's autograd never runs:
    wrap the device in ``ember.accel.Autodiff`` for gradients. Two ``Torch`` devices are the same
    device when they name the same torch device (``Torch("cuda") == Torch("cuda:0")``).
    """

    name = "Torch"

    def __init__(self, device="cpu", tf32=False):
        self.device = _torch_device(device)
        if tf32 not in (True, False):
            raise ArgumentTypeError("Torch: expected tf32=True or False, found %r" % (tf32,))
        self.tf32 = bool(tf32)
        self._key = ("Torch", str(self.device))

    def key(self):
        return self._key

    def __repr__(self):
        return "Torch(%r)" % (str(self.device),) if not self.tf32 else "Torch(%r, tf32=True)" % (str(self.device),)

    def capacity(self):
        """Free bytes of the GPU (CUDA), else the host's free memory."""
        if self.device.type == "cuda":
            return torch.cuda.mem_get_info(self.device)[0]
        return Backend.capacity(self)

    def capacity_source(self):
        if self.device.type == "cuda":
            return "%r (torch.cuda.mem_get_info: the GPU's free memory)" % (self,)
        return Backend.capacity_source(self)

    def synchronize(self):
        """Wait for the GPU's queued kernels (``torch.cuda.synchronize``); nothing on the CPU."""
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)

    # data in and out
    def from_list(self, flat, shape, dtype):
        """The primitive ``from_list``: Python numbers rounded to ``dtype`` as the Cpu rounds them."""
        return _arrays.from_list(flat, shape, dtype, self.device)

    def from_bytes(self, buf, shape, dtype):
        """The primitive ``from_bytes``: little-endian bytes (safetensors' layout), copied."""
        return _arrays.from_bytes(buf, shape, dtype, self.device)

    to_list = staticmethod(_arrays.to_list)
    to_bytes = staticmethod(_arrays.to_bytes)

    def full(self, shape, value, dtype):
        """The primitive ``full``."""
        return _arrays.full(shape, value, dtype, self.device)

    # movement: torch views where torch can (the methods themselves: no Python frame per call)
    reshape = staticmethod(_T.reshape)
    permute = staticmethod(_T.permute)
    expand = staticmethod(_T.expand)
    slice = staticmethod(_mv.slice_)
    slice_assign = staticmethod(_mv.slice_assign)
    cat = staticmethod(_mv.cat)

    # elementwise
    unary = staticmethod(_ew.unary)
    binary = staticmethod(_ew.binary)
    where = staticmethod(torch.where)
    cast = staticmethod(_arrays.cast)

    # reductions, linear algebra, nn, indexing
    reduce = staticmethod(_reduce.reduce)
    scan = staticmethod(_reduce.scan)
    sort = staticmethod(_reduce.sort)

    def matmul(self, a, b):
        """The primitive ``matmul`` through ``torch.matmul`` (tensor cores for float16/bfloat16)."""
        return _linalg.matmul(a, b, self.tf32)

    def conv(self, x, w, stride, padding, dilation, groups):
        """The primitive ``conv`` through ``torch.nn.functional.conv1d``/``conv2d``."""
        return _linalg.conv(x, w, stride, padding, dilation, groups, self.tf32)

    pool = staticmethod(_linalg.pool)
    gather = staticmethod(_mv.gather)
    scatter = staticmethod(_mv.scatter)

    def random(self, kind, shape, dtype, generator, params):
        """ember's Generator stream (the same values as every Cpu for a seed), drawn on the host by
        the C kernels straight into torch memory, then moved to the device."""
        n = 1
        for s in shape:
            n *= s
        out = _c_draw(kind, n, dtype, generator, params)
        if out is None:
            return self.from_list(generator.draw(kind, n, params), shape, dtype)
        out = out.reshape(shape)
        return out if self.device.type == "cpu" else out.to(self.device)


def _c_draw(kind, n, dtype, generator, params):
    """``n`` draws as a host tensor of ``dtype`` through the C kernels, or None without them."""
    from ember.backends.cpu import ckernels
    if ckernels.native()[0] is None or ckernels.disabled():
        return None
    from ember.backends.cpu import cdevice, cstorage
    wide = dtype is dtypes.float16 or dtype is dtypes.bfloat16  # drawn in float64, rounded as the Cpu rounds
    code = cstorage.DT.get(dtypes.float64 if wide else dtype)
    if code is None:
        return None
    dt = torch.float64 if wide else torch.uint8 if dtype is dtypes.bool_ else TORCH[dtype]
    out = torch.empty(n, dtype=dt)
    if not cdevice.draw(kind, n, code, generator, params, out.data_ptr()):
        return None
    if wide:
        return _arrays.round_float(out, TORCH[dtype])
    return out != 0 if dtype is dtypes.bool_ else out
