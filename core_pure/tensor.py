"""``ember.Tensor``: the one tensor type users see. Its methods are the API's front door.

A tensor holds its device's array, its shape (a tuple of ints), its dtype and its device. Users
see value semantics: no op, ``t[i] = v`` included, changes another tensor.
"""
import sys

from . import dtypes, interop
from .backend import Backend, grad_device, in_chain, unwrap_to, wrap_from
from .errors import ArgumentTypeError, ShapeError

# MicroPython converts the right operand of ``2.0 * t`` with __float__ before trying __rmul__,
# so there a tensor must not define __float__ (float(t.item()) does the same job).
_FLOAT_PROTOCOL = sys.implementation.name != "micropython"


class Tensor:
    __slots__ = ("_data", "shape", "dtype", "device")
    __array_ufunc__ = None  # numpy defers ``ndarray + tensor`` to Tensor.__radd__ instead of swallowing it

    def __init__(self, data, shape, dtype, device):
        self._data = data
        self.shape = shape
        self.dtype = dtype
        self.device = device

    # -- facts --------------------------------------------------------------------------------
    @property
    def ndim(self):
        return len(self.shape)

    def dim(self):
        return len(self.shape)

    def numel(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, dim=None):
        if dim is None:
            return self.shape
        from .shapes import dim as _dim
        return self.shape[_dim(dim, len(self.shape), "size")]

    # -- reading data (the only points that wait for a device) --------------------------------
    def tolist(self):
        """Nested Python lists (or a scalar for a 0-d tensor)."""
        flat = self.device.to_list(self._data)
        return _nest(flat, self.shape)

    def item(self):
        if self.numel() != 1:
            raise ShapeError("item: expected a tensor with one element, found shape %s" % (self.shape,))
        return self.device.to_list(self._data)[0]

    def to_bytes(self):
        """The values, row-major, little-endian, in this tensor's dtype (safetensors' layout)."""
        return self.device.to_bytes(self._data)

    # -- gradients (on ember.accel.Autodiff devices, found anywhere in the device's chain) ------------
    def requires_grad_(self, requires_grad=True):
        """Mark this tensor as a leaf whose gradient ``backward`` computes (in place); returns it."""
        dev, a = self._grad_level("requires_grad_")
        a = dev.require_grad(a) if requires_grad else dev.detach(a)
        self._data = wrap_from(self.device, dev, a, self.shape, self.dtype)
        return self

    def require_grad(self, id=None):
        """A leaf copy of this tensor that requires grad (Burn's name); ``id`` keys its gradient."""
        dev, a = self._grad_level("require_grad")
        a = wrap_from(self.device, dev, dev.require_grad(a, id), self.shape, self.dtype)
        return Tensor(a, self.shape, self.dtype, self.device)

    @property
    def requires_grad(self):
        return grad_node(self) is not None

    def detach(self):
        """The same values, cut from the graph (a no-op on devices that record none)."""
        dev = grad_device(self.device)
        if dev is None:
            return self.clone()
        a = dev.detach(unwrap_to(self.device, self._data, dev))
        return Tensor(wrap_from(self.device, dev, a, self.shape, self.dtype), self.shape, self.dtype, self.device)

    def backward(self, grad=None, retain_graph=False):
        """Differentiate this tensor: returns the ``Gradients`` of every leaf it depends on."""
        dev, a = self._grad_level("backward")
        return dev.backward(a, grad, retain_graph)

    def grad(self, grads):
        """This leaf's gradient in ``grads`` (what ``backward`` returned), on the inner device."""
        return grads.get(self)

    def _grad_level(self, op):
        """(the decorator of this tensor's chain that records gradients, this tensor's array there)."""
        dev = grad_device(self.device)
        if dev is None:
            from .errors import ArgumentError
            raise ArgumentError("%s: %r records no graph; create tensors on ember.accel.Autodiff(%r) "
                                "to compute gradients" % (op, self.device, self.device))
        return dev, unwrap_to(self.device, self._data, dev)

    # -- exchange with numpy, PyTorch and DLPack (CPython only, through the ember.interop hook) -----
    def numpy(self):
        """The values as a numpy array: shared with this tensor on the NumPy device, a copy elsewhere."""
        return interop.hook("numpy")(self)

    def __array__(self, dtype=None, copy=None):
        return interop.hook("array")(self, dtype, copy)

    def __dlpack__(self, stream=None, **kwargs):
        return interop.hook("dlpack")(self, stream, **kwargs)

    def __dlpack_device__(self):
        return interop.hook("dlpack_device")(self)

    def __repr__(self):
        from .printing import tensor_repr
        return tensor_repr(self)

    def __len__(self):
        if not self.shape:
            raise ArgumentTypeError("len: expected a tensor of at least 1 dim, found a 0-d tensor (use item())")
        return self.shape[0]

    def __iter__(self):
        if not self.shape:
            raise ArgumentTypeError("iter: expected a tensor of at least 1 dim, found a 0-d tensor (use item())")
        return (self[i] for i in range(self.shape[0]))

    def __bool__(self):
        if self.numel() != 1:
            raise ShapeError("bool: the truth of a tensor with %d elements is ambiguous; use any() or all()"
                             % self.numel())
        return bool(self.item())

    if _FLOAT_PROTOCOL:
        def __float__(self):
            return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self.dtype.kind == "f":
            raise ArgumentTypeError("index: expected an integer tensor, found %s" % self.dtype.name)
        return int(self.item())

    def __hash__(self):
        return id(self)

    # -- dtype and device -----------------------------------------------------------------------
    def to(self, target):
        """A copy on another device (``t.to(ember.Cpu())``) or in another dtype (``t.to(ember.int32)``).

        Into or out of decorators over this tensor's device (``t.to(Autodiff(t.device))``) it wraps
        or unwraps level by level, without a copy.
        """
        if isinstance(target, Backend):
            dev = self.device
            if target == dev:
                return self
            if in_chain(target, dev):  # into decorators over this device: wrap, no copy
                data = wrap_from(target, dev, self._data, self.shape, self.dtype)
                return Tensor(data, self.shape, self.dtype, target)
            if in_chain(dev, target):  # out of decorators: unwrap, no copy
                return Tensor(unwrap_to(dev, self._data, target), self.shape, self.dtype, target)
            flat = dev.to_list(self._data)
            return Tensor(target.from_list(flat, self.shape, self.dtype), self.shape, self.dtype, target)
        dtype = dtypes.get(target, "to")
        if dtype is self.dtype:
            return self
        return Tensor(self.device.cast(self._data, dtype), self.shape, dtype, self.device)

    def float(self):
        return self.to(dtypes.float32)

    def double(self):
        return self.to(dtypes.float64)

    def half(self):
        return self.to(dtypes.float16)

    def int(self):
        return self.to(dtypes.int32)

    def long(self):
        return self.to(dtypes.int64)

    def bool(self):
        return self.to(dtypes.bool_)

    # -- arithmetic -----------------------------------------------------------------------------
    def __add__(self, o):
        return binary("add", self, o)

    def __radd__(self, o):
        return binary("add", o, self)

    def __sub__(self, o):
        return binary("sub", self, o)

    def __rsub__(self, o):
        return binary("sub", o, self)

    def __mul__(self, o):
        return binary("mul", self, o)

    def __rmul__(self, o):
        return binary("mul", o, self)

    def __truediv__(self, o):
        return binary("div", self, o)

    def __rtruediv__(self, o):
        return binary("div", o, self)

    def __floordiv__(self, o):
        return binary("floordiv", self, o)

    def __rfloordiv__(self, o):
        return binary("floordiv", o, self)

    def __mod__(self, o):
        return binary("mod", self, o)

    def __rmod__(self, o):
        return binary("mod", o, self)

    def __pow__(self, o):
        return binary("pow", self, o)

    def __rpow__(self, o):
        return binary("pow", o, self)

    def __matmul__(self, o):
        return matmul(self, o)

    def __rmatmul__(self, o):
        return matmul(o, self)

    def __neg__(self):
        return unary("neg", self)

    def __pos__(self):
        return self.clone()

    def __abs__(self):
        return unary("abs", self)

    def __and__(self, o):
        return binary("and", self, o)

    def __rand__(self, o):
        return binary("and", o, self)

    def __or__(self, o):
        return binary("or", self, o)

    def __ror__(self, o):
        return binary("or", o, self)

    def __xor__(self, o):
        return binary("xor", self, o)

    def __rxor__(self, o):
        return binary("xor", o, self)

    def __invert__(self):
        return self.bitwise_not()

    def __lshift__(self, o):
        return binary("lshift", self, o)

    def __rlshift__(self, o):
        return binary("lshift", o, self)

    def __rshift__(self, o):
        return binary("rshift", self, o)

    def __rrshift__(self, o):
        return binary("rshift", o, self)

    # -- comparisons (bool tensors) ---------------------------------------------------------------
    def __eq__(self, o):
        return binary("eq", self, o)

    def __ne__(self, o):
        return binary("ne", self, o)

    def __lt__(self, o):
        return binary("lt", self, o)

    def __le__(self, o):
        return binary("le", self, o)

    def __gt__(self, o):
        return binary("gt", self, o)

    def __ge__(self, o):
        return binary("ge", self, o)

    def eq(self, o):
        return binary("eq", self, o)

    def ne(self, o):
        return binary("ne", self, o)

    def lt(self, o):
        return binary("lt", self, o)

    def le(self, o):
        return binary("le", self, o)

    def gt(self, o):
        return binary("gt", self, o)

    def ge(self, o):
        return binary("ge", self, o)

    # -- named elementwise ----------------------------------------------------------------------
    def add(self, o):
        return binary("add", self, o)

    def sub(self, o):
        return binary("sub", self, o)

    def mul(self, o):
        return binary("mul", self, o)

    def div(self, o):
        return binary("div", self, o)

    def pow(self, o):
        return binary("pow", self, o)

    def maximum(self, o):
        return binary("maximum", self, o)

    def minimum(self, o):
        return binary("minimum", self, o)

    def neg(self):
        return unary("neg", self)

    def abs(self):
        return unary("abs", self)

    def exp(self):
        return unary("exp", self)

    def log(self):
        return unary("log", self)

    def sqrt(self):
        return unary("sqrt", self)

    def tanh(self):
        return unary("tanh", self)

    def erf(self):
        return unary("erf", self)

    def sigmoid(self):
        return unary("sigmoid", self)

    def sin(self):
        return unary("sin", self)

    def cos(self):
        return unary("cos", self)

    def rsqrt(self):
        return unary("rsqrt", self)

    def tan(self):
        return unary("tan", self)

    def asin(self):
        return unary("asin", self)

    def acos(self):
        return unary("acos", self)

    def atan(self):
        return unary("atan", self)

    def sinh(self):
        return unary("sinh", self)

    def cosh(self):
        return unary("cosh", self)

    def atan2(self, o):
        return binary("atan2", self, o)

    def log1p(self):
        return unary("log1p", self)

    def expm1(self):
        return unary("expm1", self)

    def floor(self):
        return unary("floor", self)

    def ceil(self):
        return unary("ceil", self)

    def round(self):
        return unary("round", self)

    def trunc(self):
        return unary("trunc", self)

    def sign(self):
        return unary("sign", self)

    def reciprocal(self):
        return unary("reciprocal", self)

    def floor_divide(self, o):
        return binary("floordiv", self, o)

    def remainder(self, o):
        return binary("mod", self, o)

    def clamp(self, min=None, max=None):
        """Each element limited to [min, max] (either may be None, a number or a tensor)."""
        return elementwise.clamp(self, min, max)

    def clip(self, min=None, max=None):
        return elementwise.clamp(self, min, max)

    def relu(self):
        return elementwise.relu(self)

    def isfinite(self):
        return elementwise.isfinite(self)

    def logical_not(self):
        return unary("logical_not", self)

    def logical_and(self, o):
        return elementwise.logical("and", self, o)

    def logical_or(self, o):
        return elementwise.logical("or", self, o)

    def logical_xor(self, o):
        return elementwise.logical("xor", self, o)

    def bitwise_and(self, o):
        return elementwise.bitwise("and", self, o)

    def bitwise_or(self, o):
        return elementwise.bitwise("or", self, o)

    def bitwise_xor(self, o):
        return elementwise.bitwise("xor", self, o)

    def bitwise_not(self):
        return elementwise.bitwise_not(self)

    def where(self, condition, other):
        """``self`` where ``condition`` holds, else ``other`` (PyTorch's ``Tensor.where``)."""
        return elementwise.where(condition, self, other)

    def isnan(self):
        return unary("isnan", self)

    def isinf(self):
        return unary("isinf", self)

    # -- reductions -----------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False):
        return reduction.sum(self, dim, keepdim)

    def mean(self, dim=None, keepdim=False):
        return reduction.mean(self, dim, keepdim)

    def prod(self, dim=None, keepdim=False):
        return reduction.prod(self, dim, keepdim)

    def max(self, dim=None, keepdim=False):
        """The largest element; with ``dim``, ``(values, indices)`` along it."""
        return reduction.extreme("max", self, dim, keepdim)

    def min(self, dim=None, keepdim=False):
        return reduction.extreme("min", self, dim, keepdim)

    def argmax(self, dim=None, keepdim=False):
        return reduction.arg("argmax", self, dim, keepdim)

    def argmin(self, dim=None, keepdim=False):
        return reduction.arg("argmin", self, dim, keepdim)

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None):
        return reduction.var(self, dim, unbiased, keepdim, correction)

    def std(self, dim=None, unbiased=True, keepdim=False, correction=None):
        return reduction.std(self, dim, unbiased, keepdim, correction)

    def logsumexp(self, dim=None, keepdim=False):
        return reduction.logsumexp(self, dim, keepdim)

    def cumsum(self, dim):
        return reduction.cumsum(self, dim)

    def cumprod(self, dim):
        return reduction.cumprod(self, dim)

    def cummax(self, dim):
        return reduction.cumextreme("cummax", self, dim)

    def cummin(self, dim):
        return reduction.cumextreme("cummin", self, dim)

    def sort(self, dim=-1, descending=False):
        return reduction.sort(self, dim, descending)

    def argsort(self, dim=-1, descending=False):
        return reduction.argsort(self, dim, descending)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        return reduction.topk(self, k, dim, largest, sorted)

    def unique(self, sorted=True, return_inverse=False, return_counts=False):
        return reduction.unique(self, sorted, return_inverse, return_counts)

    def nonzero(self, as_tuple=False):
        return indexing.nonzero(self, as_tuple)

    def any(self, dim=None, keepdim=False):
        return reduction.logical("any", self, dim, keepdim)

    def all(self, dim=None, keepdim=False):
        return reduction.logical("all", self, dim, keepdim)

    # -- shape and movement ---------------------------------------------------------------------
    def reshape(self, *shape):
        return movement.reshape(self, shape)

    def view(self, *shape):
        return movement.reshape(self, shape)

    def permute(self, *dims):
        return movement.permute(self, dims)

    def transpose(self, dim0, dim1):
        return movement.transpose(self, dim0, dim1)

    def swap_dims(self, dim0, dim1):
        return movement.transpose(self, dim0, dim1)

    @property
    def T(self):
        """The dims reversed (the matrix transpose for 2-D tensors)."""
        return movement.permute(self, tuple(range(len(self.shape) - 1, -1, -1)))

    def expand(self, *shape):
        return movement.expand(self, shape)

    def flatten(self, start_dim=0, end_dim=-1):
        return movement.flatten(self, start_dim, end_dim)

    def squeeze(self, dim=None):
        return movement.squeeze(self, dim)

    def unsqueeze(self, dim):
        return movement.unsqueeze(self, dim)

    def narrow(self, dim, start, length):
        return movement.narrow(self, dim, start, length)

    def flip(self, dims):
        return movement.flip(self, dims)

    def roll(self, shifts, dims=None):
        return movement.roll(self, shifts, dims)

    def repeat(self, *sizes):
        return movement.repeat(self, sizes)

    def split(self, split_size_or_sections, dim=0):
        return movement.split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        return movement.chunk(self, chunks, dim)

    def tril(self, diagonal=0):
        return movement.tril(self, diagonal)

    def triu(self, diagonal=0):
        return movement.triu(self, diagonal)

    def gather(self, dim, index):
        return indexing.gather(self, dim, index)

    def scatter(self, dim, index, src, reduce=None):
        return indexing.scatter(self, dim, index, src, reduce)

    def scatter_add(self, dim, index, src):
        return indexing.scatter(self, dim, index, src, "add")

    def index_select(self, dim, index):
        return indexing.index_select(self, dim, index)

    def index_put(self, indices, values, accumulate=False):
        return indexing.index_put(self, indices, values, accumulate)

    def masked_fill(self, mask, value):
        return indexing.masked_fill(self, mask, value)

    def masked_select(self, mask):
        return indexing.masked_select(self, mask)

    def take(self, index):
        return indexing.take(self, index)

    def clone(self):
        """A tensor with the same values; writes to either never reach the other."""
        return Tensor(self._data, self.shape, self.dtype, self.device)

    def contiguous(self):
        return self.clone()  # layout is the backend's business; values are what a user sees

    def __getitem__(self, index):
        return indexing.getitem(self, index)

    def __setitem__(self, index, value):
        indexing.setitem(self, index, value)

    def matmul(self, o):
        return matmul(self, o)


def grad_node(t):
    """The tape node that produced tensor ``t`` (``id``, ``is_leaf``), or None when nothing records it."""
    dev = grad_device(t.device)
    if dev is None:
        return None
    return dev.grad_node(unwrap_to(t.device, t._data, dev))


def _nest(flat, shape):
    if not shape:
        return flat[0]
    if 0 in shape:
        return _nest_empty(shape)
    for n in reversed(shape[1:]):
        flat = [flat[i:i + n] for i in range(0, len(flat), n)]
    return flat


def _nest_empty(shape):
    if len(shape) == 1:
        return []
    return [_nest_empty(shape[1:]) for _ in range(shape[0])]


# The op modules import Tensor from this module, so they are imported once it exists.
from .elementwise import binary, unary  # noqa: E402
from .linalg import matmul  # noqa: E402
from . import elementwise, indexing, movement, reduction  # noqa: E402
