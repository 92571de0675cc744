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
    """An n-dimensional array on a device, with PyTorch's names and semantics.

    Create one with ``ember.tensor(data)``, ``ember.zeros(2, 3)``, ``ember.randn(...)``; ``shape`` is a
    tuple of ints, ``dtype`` an ``ember.DType``, ``device`` the backend instance holding the values.
    Unlike PyTorch, tensors are values: no op changes another tensor (``x[0][1] = 5`` leaves ``x``
    as it was; write ``x[0, 1] = 5``), and gradients come from ``backward()``'s return value on an
    ``ember.accel.Autodiff`` device.

    >>> x = ember.tensor([[1.0, 2.0], [3.0, 4.0]])
    >>> (x @ x.T).sum().item()
    50.0
    """
    __slots__ = ("_data", "shape", "dtype", "device", "_param")  # _param: see nn.module.Param.value
    __array_ufunc__ = None  # numpy defers ``ndarray + tensor`` to Tensor.__radd__ instead of swallowing it

    def __init__(self, data, shape, dtype, device):
        self._data = data
        self.shape = shape
        self.dtype = dtype
        self.device = device

    # -- facts --------------------------------------------------------------------------------
    @property
    def ndim(self):
        """The number of dims (``len(shape)``)."""
        return len(self.shape)

    def dim(self):
        """The number of dims (``len(shape)``)."""
        return len(self.shape)

    def numel(self):
        """The number of elements (the product of ``shape``)."""
        n = 1
        for s in self.shape:
            n *= s
        return n

    def size(self, dim=None):
        """The shape as a tuple (PyTorch: ``torch.Size``); with ``dim``, that dim's size."""
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
        """The value of a one-element tensor as a Python number (a sync point)."""
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
        """Whether a gradient flows to this tensor (a leaf marked by ``requires_grad_`` or a result of one)."""
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
    def to(self, target=None, dtype=None, device=None, non_blocking=False, copy=False):
        """A copy on another device (``t.to(ember.Cpu())``, ``t.to("cpu")``) or in another dtype
        (``t.to(ember.int32)``), or both: ``t.to(device=..., dtype=...)``, ``t.to("cpu", ember.float16)``;
        ``t.to(other)`` takes ``other``'s device and dtype. A call that changes nothing returns ``t``
        itself (``copy=True``: a copy). Device names are ``ember.device.named``'s ("cpu", "cuda", ...);
        ``non_blocking`` is accepted and changes nothing.

        Into or out of decorators over this tensor's device (``t.to(Autodiff(t.device))``) it wraps
        or unwraps level by level, without a copy.
        """
        if dtype is not None or device is not None or copy or target is None or type(target) is Tensor or \
                _is_device_name(target):
            return _to_spec(self, target, dtype, device, copy)
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

    def multinomial(self, num_samples, replacement=False, generator=None):
        """``ember.multinomial(self, ...)``: category indices drawn by these weights."""
        from .creation import multinomial
        return multinomial(self, num_samples, replacement, generator)

    def float(self):
        """A copy in float32 (``self`` when already float32)."""
        return self.to(dtypes.float32)

    def double(self):
        """A copy in float64 (``self`` when already float64)."""
        return self.to(dtypes.float64)

    def half(self):
        """A copy in float16 (``self`` when already float16)."""
        return self.to(dtypes.float16)

    def int(self):
        """A copy in int32 (floats truncate toward zero; nan and inf become 0)."""
        return self.to(dtypes.int32)

    def long(self):
        """A copy in int64 (floats truncate toward zero; nan and inf become 0)."""
        return self.to(dtypes.int64)

    def bool(self):
        """A copy in bool (nonzero is True)."""
        return self.to(dtypes.bool_)

    def type(self, dtype=None):
        """Without ``dtype`` the type name (``"ember.FloatTensor"``, PyTorch's names); else ``to(dtype)``,
        where ``dtype`` may also be such a name (``"torch.LongTensor"``)."""
        if dtype is None:
            return "ember." + dtypes.tensor_type_name(self.dtype)
        if type(dtype) is str and dtype.endswith("Tensor"):
            dtype = dtypes.from_tensor_type_name(dtype)
        return self.to(dtypes.get(dtype, "type"))

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
        """``self == o`` elementwise, as a bool tensor (``o`` a tensor or a number, broadcast)."""
        return binary("eq", self, o)

    def ne(self, o):
        """``self != o`` elementwise, as a bool tensor."""
        return binary("ne", self, o)

    def lt(self, o):
        """``self < o`` elementwise, as a bool tensor."""
        return binary("lt", self, o)

    def le(self, o):
        """``self <= o`` elementwise, as a bool tensor."""
        return binary("le", self, o)

    def gt(self, o):
        """``self > o`` elementwise, as a bool tensor."""
        return binary("gt", self, o)

    def ge(self, o):
        """``self >= o`` elementwise, as a bool tensor."""
        return binary("ge", self, o)

    # -- named elementwise ----------------------------------------------------------------------
    def add(self, o):
        """``self + o`` (``o`` a tensor or a number; broadcast and promoted as PyTorch does)."""
        return binary("add", self, o)

    def sub(self, o):
        """``self - o``, broadcast and promoted."""
        return binary("sub", self, o)

    def mul(self, o):
        """``self * o``, broadcast and promoted."""
        return binary("mul", self, o)

    def div(self, o, *, rounding_mode=None):
        """``self / o``; ``rounding_mode`` ``"trunc"`` or ``"floor"`` rounds the quotient (ints stay ints)."""
        return elementwise.div(self, o, rounding_mode)

    def pow(self, o):
        """``self ** o``; integer powers wrap on overflow and ``int ** negative`` truncates like C."""
        return binary("pow", self, o)

    def maximum(self, o):
        """The elementwise larger of ``self`` and ``o`` (nan propagates)."""
        return binary("maximum", self, o)

    def minimum(self, o):
        """The elementwise smaller of ``self`` and ``o`` (nan propagates)."""
        return binary("minimum", self, o)

    def neg(self):
        """``-self``."""
        return unary("neg", self)

    def abs(self):
        """``|self|``, elementwise."""
        return unary("abs", self)

    def exp(self):
        """e ** self, elementwise (integers compute in float32)."""
        return unary("exp", self)

    def log(self):
        """The natural logarithm, elementwise (``log(0)`` is -inf; integers compute in float32)."""
        return unary("log", self)

    def sqrt(self):
        """The square root, elementwise (nan below 0)."""
        return unary("sqrt", self)

    def tanh(self):
        """The hyperbolic tangent, elementwise."""
        return unary("tanh", self)

    def erf(self):
        """The error function, elementwise."""
        return unary("erf", self)

    def sigmoid(self):
        """1 / (1 + exp(-self)), elementwise."""
        return unary("sigmoid", self)

    def sin(self):
        """The sine, elementwise."""
        return unary("sin", self)

    def cos(self):
        """The cosine, elementwise."""
        return unary("cos", self)

    def rsqrt(self):
        """1 / sqrt(self), elementwise."""
        return unary("rsqrt", self)

    def tan(self):
        """The tangent, elementwise."""
        return unary("tan", self)

    def asin(self):
        """The arcsine, elementwise (nan outside [-1, 1])."""
        return unary("asin", self)

    def acos(self):
        """The arccosine, elementwise (nan outside [-1, 1])."""
        return unary("acos", self)

    def atan(self):
        """The arctangent, elementwise."""
        return unary("atan", self)

    def sinh(self):
        """The hyperbolic sine, elementwise."""
        return unary("sinh", self)

    def cosh(self):
        """The hyperbolic cosine, elementwise."""
        return unary("cosh", self)

    def atan2(self, o):
        """The angle of the point (o, self): ``atan(self / o)`` in the right quadrant."""
        return binary("atan2", self, o)

    def log1p(self):
        """log(1 + self), accurate near 0."""
        return unary("log1p", self)

    def expm1(self):
        """exp(self) - 1, accurate near 0."""
        return unary("expm1", self)

    def floor(self):
        """Rounded down; integer tensors are returned unchanged."""
        return unary("floor", self)

    def ceil(self):
        """Rounded up; integer tensors are returned unchanged."""
        return unary("ceil", self)

    def round(self):
        """Rounded to the nearest integer, ties to even; integer tensors are returned unchanged."""
        return unary("round", self)

    def trunc(self):
        """Rounded toward zero; integer tensors are returned unchanged."""
        return unary("trunc", self)

    def sign(self):
        """-1, 0 or 1 by the sign of each element (nan stays nan)."""
        return unary("sign", self)

    def reciprocal(self):
        """1 / self, elementwise."""
        return unary("reciprocal", self)

    def floor_divide(self, o):
        """``self // o``: floors, as Python does; integer division by 0 gives 0."""
        return binary("floordiv", self, o)

    def remainder(self, o):
        """``self % o`` with the sign of the divisor (Python's rule); integer ``x % 0`` gives 0."""
        return binary("mod", self, o)

    def clamp(self, min=None, max=None):
        """Each element limited to [min, max] (either may be None, a number or a tensor)."""
        return elementwise.clamp(self, min, max)

    def clip(self, min=None, max=None):
        """Alias of ``clamp``."""
        return elementwise.clamp(self, min, max)

    def relu(self):
        """max(self, 0), elementwise (nan stays nan)."""
        return elementwise.relu(self)

    def isfinite(self):
        """A bool tensor: True where the value is neither inf nor nan."""
        return elementwise.isfinite(self)

    def logical_not(self):
        """A bool tensor: True where the value is zero."""
        return unary("logical_not", self)

    def logical_and(self, o):
        """A bool tensor: both nonzero."""
        return elementwise.logical("and", self, o)

    def logical_or(self, o):
        """A bool tensor: either nonzero."""
        return elementwise.logical("or", self, o)

    def logical_xor(self, o):
        """A bool tensor: exactly one nonzero."""
        return elementwise.logical("xor", self, o)

    def bitwise_and(self, o):
        """``self & o`` for bool or integer tensors."""
        return elementwise.bitwise("and", self, o)

    def bitwise_or(self, o):
        """``self | o`` for bool or integer tensors."""
        return elementwise.bitwise("or", self, o)

    def bitwise_xor(self, o):
        """``self ^ o`` for bool or integer tensors."""
        return elementwise.bitwise("xor", self, o)

    def bitwise_not(self):
        """``~self`` for bool (logical not) or integer tensors."""
        return elementwise.bitwise_not(self)

    def where(self, condition, other):
        """``self`` where ``condition`` holds, else ``other`` (PyTorch's ``Tensor.where``)."""
        return elementwise.where(condition, self, other)

    def isnan(self):
        """A bool tensor: True where the value is nan."""
        return unary("isnan", self)

    # -- composed elementwise functions (ember.special, loaded on first use) ----------------------
    def asinh(self):
        """Inverse hyperbolic sine, elementwise."""
        from . import special
        return special.asinh(self)

    def acosh(self):
        """Inverse hyperbolic cosine, elementwise (nan below 1)."""
        from . import special
        return special.acosh(self)

    def atanh(self):
        """Inverse hyperbolic tangent, elementwise (±inf at ±1, nan beyond)."""
        from . import special
        return special.atanh(self)

    def log2(self):
        """Base-2 logarithm, elementwise."""
        from . import special
        return special.log2(self)

    def log10(self):
        """Base-10 logarithm, elementwise."""
        from . import special
        return special.log10(self)

    def exp2(self):
        """2 to the power of each element."""
        from . import special
        return special.exp2(self)

    def logaddexp(self, other):
        """log(exp(self) + exp(other)), elementwise, without overflow."""
        from . import special
        return special.logaddexp(self, other)

    def logaddexp2(self, other):
        """log2(2**self + 2**other), elementwise, without overflow."""
        from . import special
        return special.logaddexp2(self, other)

    def copysign(self, other):
        """|self| with the sign of ``other``, elementwise (a float result)."""
        from . import special
        return special.copysign(self, other)

    def fmod(self, other):
        """C's remainder: the result has the sign of ``self`` (``remainder`` takes the divisor's)."""
        from . import special
        return special.fmod(self, other)

    def lerp(self, end, weight):
        """self + weight · (end - self); ``weight`` a number or a tensor."""
        from . import special
        return special.lerp(self, end, weight)

    def isclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Where |self - other| <= atol + rtol · |other| (bool)."""
        from . import special
        return special.isclose(self, other, rtol, atol, equal_nan)

    def allclose(self, other, rtol=1e-05, atol=1e-08, equal_nan=False):
        """Whether every element is close to ``other`` (see ``isclose``); a Python bool."""
        from . import special
        return special.allclose(self, other, rtol, atol, equal_nan)

    def bitwise_left_shift(self, other):
        """self << other, elementwise, for bool and integer tensors."""
        return binary("lshift", self, other)

    def bitwise_right_shift(self, other):
        """self >> other (arithmetic), elementwise, for bool and integer tensors."""
        return binary("rshift", self, other)

    def softmax(self, dim, dtype=None):
        """softmax along ``dim``; ``dtype`` casts the input first (PyTorch's ``dtype=``)."""
        from .nn import functional as F
        return F.softmax(self, dim, dtype) if dtype is not None else F.softmax(self, dim)

    def log_softmax(self, dim, dtype=None):
        """log_softmax along ``dim``; ``dtype`` casts the input first."""
        from .nn import functional as F
        return F.log_softmax(self, dim, dtype) if dtype is not None else F.log_softmax(self, dim)

    def isinf(self):
        """A bool tensor: True where the value is +inf or -inf."""
        return unary("isinf", self)

    # -- reductions -----------------------------------------------------------------------------
    def sum(self, dim=None, keepdim=False, *, dtype=None, axis=None):
        """The sum over ``dim`` (an int, a tuple of ints, or None for every element; ``axis`` spells it
        too). bool and integer tensors sum in int64, as PyTorch does, unless ``dtype`` names another:
        ``x.sum(axis=0, dtype=ember.float64)``; ``keepdim`` keeps the reduced dims as 1."""
        return reduction.sum(self, dim, keepdim, dtype, axis)

    def mean(self, dim=None, keepdim=False, *, dtype=None, axis=None):
        """The mean over ``dim`` (or ``axis``); integers average in float32, or in the float ``dtype``."""
        return reduction.mean(self, dim, keepdim, dtype, axis)

    def prod(self, dim=None, keepdim=False, *, dtype=None, axis=None):
        """The product over ``dim`` (or ``axis``), in ``dtype`` when given."""
        return reduction.prod(self, dim, keepdim, dtype, axis)

    def max(self, dim=None, keepdim=False, *, axis=None):
        """The largest element; with ``dim`` (or ``axis``), ``(values, indices)`` along it."""
        return reduction.extreme("max", self, dim, keepdim, axis)

    def min(self, dim=None, keepdim=False, *, axis=None):
        """The smallest element; with ``dim`` (or ``axis``), ``(values, indices)`` along it (nan
        propagates; ties: first index)."""
        return reduction.extreme("min", self, dim, keepdim, axis)

    def argmax(self, dim=None, keepdim=False, *, axis=None):
        """The index of the first largest element along ``dim`` (or ``axis``; flat when None)."""
        return reduction.arg("argmax", self, dim, keepdim, axis)

    def argmin(self, dim=None, keepdim=False, *, axis=None):
        """The index of the first smallest element along ``dim`` (or ``axis``; flat when None)."""
        return reduction.arg("argmin", self, dim, keepdim, axis)

    def var(self, dim=None, unbiased=True, keepdim=False, correction=None, *, axis=None):
        """The variance over ``dim`` (or ``axis``), ``correction`` subtracted from the count."""
        return reduction.var(self, dim, unbiased, keepdim, correction, axis)

    def std(self, dim=None, unbiased=True, keepdim=False, correction=None, *, axis=None):
        """The standard deviation over ``dim`` (or ``axis``), ``correction`` subtracted from the count."""
        return reduction.std(self, dim, unbiased, keepdim, correction, axis)

    def logsumexp(self, dim=None, keepdim=False, *, axis=None):
        """log(sum(exp(x))) over ``dim`` (or ``axis``), computed without overflow."""
        return reduction.logsumexp(self, dim, keepdim, axis)

    def cumsum(self, dim=None, *, dtype=None, axis=None):
        """Running sums along ``dim`` (or ``axis``), in ``dtype`` when given."""
        return reduction.cumsum(self, dim, dtype, axis)

    def cumprod(self, dim=None, *, dtype=None, axis=None):
        """Running products along ``dim`` (or ``axis``), in ``dtype`` when given."""
        return reduction.cumprod(self, dim, dtype, axis)

    def cummax(self, dim=None, *, axis=None):
        """Running ``(values, indices)`` of the maximum along ``dim`` (or ``axis``)."""
        return reduction.cumextreme("cummax", self, dim, axis)

    def cummin(self, dim=None, *, axis=None):
        """Running ``(values, indices)`` of the minimum along ``dim`` (or ``axis``)."""
        return reduction.cumextreme("cummin", self, dim, axis)

    def sort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """``(values, indices)`` sorted along ``dim`` (or ``axis``); always stable."""
        return reduction.sort(self, dim, descending, stable, axis)

    def argsort(self, dim=-1, descending=False, *, stable=False, axis=None):
        """The indices that sort along ``dim`` (or ``axis``); always stable."""
        return reduction.argsort(self, dim, descending, stable, axis)

    def topk(self, k, dim=-1, largest=True, sorted=True):
        """``(values, indices)`` of the ``k`` largest (``largest=False``: smallest) entries along ``dim``."""
        return reduction.topk(self, k, dim, largest, sorted)

    def unique(self, sorted=True, return_inverse=False, return_counts=False):
        """The distinct values, flattened and ascending; optionally the inverse indices and the counts."""
        return reduction.unique(self, sorted, return_inverse, return_counts)

    def nonzero(self, as_tuple=False):
        """The coordinates of the nonzero elements: (n, ndim) int64, or a tuple of 1-D tensors (a sync point)."""
        return indexing.nonzero(self, as_tuple)

    def any(self, dim=None, keepdim=False, *, axis=None):
        """Whether any element along ``dim`` (an int, a tuple or all; or ``axis``) is nonzero."""
        return reduction.logical("any", self, dim, keepdim, axis)

    def all(self, dim=None, keepdim=False, *, axis=None):
        """Whether every element along ``dim`` (an int, a tuple or all; or ``axis``) is nonzero."""
        return reduction.logical("all", self, dim, keepdim, axis)

    # -- shape and movement ---------------------------------------------------------------------
    def reshape(self, *shape):
        """The same values in a new shape (ints or one tuple; one size may be -1)."""
        return movement.reshape(self, shape)

    def view(self, *shape):
        """Same as ``reshape`` (ember needs no contiguous layout, so a view never fails; it may copy);
        ``x.view(ember.int32)`` instead reads the bytes as another dtype (a copy)."""
        if len(shape) == 1 and type(shape[0]) is dtypes.DType:
            return movement.view_dtype(self, shape[0])
        return movement.reshape(self, shape)

    def permute(self, *dims):
        """The dims reordered: ``x.permute(2, 0, 1)``."""
        return movement.permute(self, dims)

    def transpose(self, dim0, dim1):
        """``dim0`` and ``dim1`` swapped."""
        return movement.transpose(self, dim0, dim1)

    def swap_dims(self, dim0, dim1):
        """``dim0`` and ``dim1`` swapped (Burn's name for ``transpose``)."""
        return movement.transpose(self, dim0, dim1)

    @property
    def T(self):
        """The dims reversed (the matrix transpose for 2-D tensors)."""
        return movement.permute(self, tuple(range(len(self.shape) - 1, -1, -1)))

    def expand(self, *shape):
        """A view repeated along size-1 dims to ``shape`` (-1 keeps a size); new dims are added in front."""
        return movement.expand(self, shape)

    def flatten(self, start_dim=0, end_dim=-1):
        """Dims ``start_dim`` through ``end_dim`` merged into one."""
        return movement.flatten(self, start_dim, end_dim)

    def squeeze(self, dim=None):
        """Size-1 dims removed (only ``dim`` when given; a dim of another size stays)."""
        return movement.squeeze(self, dim)

    def unsqueeze(self, dim):
        """A size-1 dim inserted at ``dim``."""
        return movement.unsqueeze(self, dim)

    def narrow(self, dim, start, length):
        """``length`` entries along ``dim`` from ``start`` (a view)."""
        return movement.narrow(self, dim, start, length)

    def flip(self, dims):
        """The values reversed along each of ``dims``."""
        return movement.flip(self, dims)

    def roll(self, shifts, dims=None):
        """The values shifted along ``dims`` (None: the flattened tensor), wrapping around."""
        return movement.roll(self, shifts, dims)

    def repeat(self, *sizes):
        """The tensor tiled ``sizes[i]`` times along dim i (``x.repeat(2, 1)``)."""
        return movement.repeat(self, sizes)

    def split(self, split_size_or_sections, dim=0):
        """A tuple of pieces along ``dim``: each of ``split_size`` (the last may be smaller), or the listed sizes."""
        return movement.split(self, split_size_or_sections, dim)

    def chunk(self, chunks, dim=0):
        """At most ``chunks`` pieces of equal size (the last may be smaller) along ``dim``."""
        return movement.chunk(self, chunks, dim)

    def tril(self, diagonal=0):
        """The lower triangle of the last two dims (``j - i <= diagonal``); the rest is 0."""
        return movement.tril(self, diagonal)

    def triu(self, diagonal=0):
        """The upper triangle of the last two dims (``j - i >= diagonal``); the rest is 0."""
        return movement.triu(self, diagonal)

    def gather(self, dim, index):
        """Values along ``dim`` at ``index`` (same rank as ``self``): ``out[i][j] = self[index[i][j]][j]`` for dim 0."""
        return indexing.gather(self, dim, index)

    def scatter(self, dim, index, src=None, reduce=None, *, value=None):
        """A copy with ``src`` (a tensor or number, or ``value=``) written at ``index`` along ``dim``;
        ``reduce`` ``"add"`` or ``"multiply"`` combines with what is there."""
        return indexing.scatter(self, dim, index, src, reduce, value)

    def scatter_add(self, dim, index, src):
        """A copy with ``src`` added at ``index`` along ``dim`` (duplicates summed)."""
        return indexing.scatter(self, dim, index, src, "add")

    def index_select(self, dim, index):
        """The entries at the 1-D ``index`` along ``dim``."""
        return indexing.index_select(self, dim, index)

    def index_put(self, indices, values, accumulate=False):
        """A copy with ``self[indices] = values`` (``accumulate=True``: ``+=``, duplicates summed)."""
        return indexing.index_put(self, indices, values, accumulate)

    def masked_fill(self, mask, value):
        """A copy with ``value`` wherever the bool ``mask`` (broadcast) is True."""
        return indexing.masked_fill(self, mask, value)

    def masked_select(self, mask):
        """The elements where ``mask`` is True, as a 1-D tensor (a sync point)."""
        return indexing.masked_select(self, mask)

    def take(self, index):
        """The flattened tensor read at ``index`` (negative indices count from the end)."""
        return indexing.take(self, index)

    def clone(self):
        """A tensor with the same values; writes to either never reach the other."""
        return Tensor(self._data, self.shape, self.dtype, self.device)

    def contiguous(self):
        """A tensor with the same values (layout is the backend's business in ember)."""
        return self.clone()  # layout is the backend's business; values are what a user sees

    # -- diagonals, windows, interleaving ----------------------------------------------------------
    def diag(self, diagonal=0):
        """A 1-D tensor as a diagonal matrix, or a 2-D tensor's diagonal (``torch.diag``)."""
        return linalg.diag(self, diagonal)

    def diagonal(self, offset=0, dim1=0, dim2=1):
        """The diagonal over ``dim1`` and ``dim2`` as a new last dim."""
        return linalg.diagonal(self, offset, dim1, dim2)

    def repeat_interleave(self, repeats=None, dim=None, output_size=None):
        """Each element repeated ``repeats`` times along ``dim`` (flattened when None)."""
        return movement.repeat_interleave(self, repeats, dim, output_size)

    def unflatten(self, dim, sizes):
        """``dim`` split into ``sizes``."""
        return movement.unflatten(self, dim, sizes)

    def unfold(self, dimension, size, step):
        """Windows of ``size`` along ``dimension``, ``step`` apart, as a new last dim."""
        return movement.unfold(self, dimension, size, step)

    def view_as(self, other):
        """This tensor in ``other``'s shape."""
        return movement.view_as(self, other)

    def logcumsumexp(self, dim):
        """log(cumsum(exp(x))) along ``dim``, computed stably."""
        return reduction.logcumsumexp(self, dim)

    def scatter_reduce(self, dim, index, src, reduce, include_self=True):
        """``src`` combined into a copy at ``index`` along ``dim`` by sum, prod, mean, amax or amin."""
        from .scatter_reduction import scatter_reduce
        return scatter_reduce(self, dim, index, src, reduce, include_self)

    def __getitem__(self, index):
        return indexing.getitem(self, index)

    def __setitem__(self, index, value):
        indexing.setitem(self, index, value)

    def matmul(self, o):
        """The matrix product ``self @ o``, with PyTorch's rules for 1-D and batched operands."""
        return matmul(self, o)


def grad_node(t):
    """The tape node that produced tensor ``t`` (``id``, ``is_leaf``), or None when nothing records it."""
    dev = grad_device(t.device)
    if dev is None:
        return None
    return dev.grad_node(unwrap_to(t.device, t._data, dev))



def _is_device_name(target):
    """A string that names a device ("cpu", "cuda:0"); any other string is read as a dtype name."""
    if type(target) is not str:
        return False
    from .device import NAMES
    return target.lower().partition(":")[0] in NAMES


def _to_spec(t, target, dtype, device, copy):
    """``Tensor.to`` with keywords, a device name or another tensor (PyTorch's three forms)."""
    from .errors import ArgumentError
    if type(target) is Tensor:
        if dtype is not None or device is not None:
            raise ArgumentError("to: give another tensor or device=/dtype=, not both")
        device, dtype = target.device, target.dtype
    elif _is_device_name(target) or isinstance(target, Backend):
        if device is not None:
            raise ArgumentError("to: the device is given twice (%r and device=%r)" % (target, device))
        device = target
    elif target is not None:
        if dtype is not None:
            raise ArgumentError("to: the dtype is given twice (%r and dtype=%r)" % (target, dtype))
        dtype = target
    if device is None and dtype is None:
        raise ArgumentError("to: expected a device, a dtype or a tensor, found none")
    out = t
    if device is not None:
        from .device import resolve
        out = out.to(resolve(device, "to"))
    if dtype is not None:
        out = out.to(dtypes.get(dtype, "to"))
    if copy and out is t:
        out = t.clone()
    return out


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
from . import elementwise, indexing, linalg, movement, reduction  # noqa: E402
