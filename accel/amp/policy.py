"""``autocast(dtype)``: which ops run in low precision, which in float32, and the switch for a thread.

The rule is PyTorch's autocast lists cut to ember's ops. The core asks it through one hook
(``ember.composite.CAST_POLICY``), read by every composite call and by ``matmul``: while no
autocast is active anywhere the hook is empty and costs a truth test. The state is per thread, so
one thread's autocast never changes another thread's ops.
"""
import threading

from ember import composite as _composite
from ember import dtypes
from ember.errors import ArgumentError
from ember.tensor import Tensor

# ops whose float32 tensor inputs run in the autocast dtype (tensor cores; float64 is left as is)
LOW = frozenset(["matmul", "linear", "conv1d", "conv2d", "conv_transpose2d", "scaled_dot_product_attention"])
# ops whose float16/bfloat16 tensor inputs run in float32: reductions that need the range or the
# digits (softmax, normalizations, losses)
FLOAT32 = frozenset(["softmax", "log_softmax", "softmin", "cross_entropy", "nll_loss", "mse_loss", "l1_loss",
                     "huber_loss", "smooth_l1_loss", "kl_div", "binary_cross_entropy",
                     "binary_cross_entropy_with_logits", "layer_norm", "group_norm", "batch_norm", "rms_norm",
                     "normalize"])

_state = threading.local()
_active = [0]  # autocast blocks open in all threads: the hook is installed while this is above 0
_lock = threading.Lock()


def current():
    """The dtype autocast runs low-precision ops in on this thread, or None outside autocast."""
    stack = getattr(_state, "stack", None)
    return stack[-1] if stack else None


def _cast(value, source, target):
    if type(value) is Tensor and value.dtype in source:
        return value.to(target)
    return value


def _policy(name, args, kwargs):
    stack = getattr(_state, "stack", None)
    low = stack[-1] if stack else None
    if low is None:
        return args, kwargs
    if name in LOW:
        source, target = (dtypes.float32,), low
    elif name in FLOAT32:
        source, target = (dtypes.float16, dtypes.bfloat16), dtypes.float32
    else:
        return args, kwargs
    args = tuple([_cast(a, source, target) for a in args])
    if kwargs:
        kwargs = {k: _cast(v, source, target) for k, v in kwargs.items()}
    return args, kwargs


class autocast:
    """Run the matmul, linear and conv ops inside the block in ``dtype`` (``ember.float16`` or
    ``ember.bfloat16``) and the losses, softmax and normalizations in float32, on any device.

    >>> with ember.accel.autocast(ember.bfloat16):
    ...     loss = F.cross_entropy(model(x), y)    # logits bfloat16, the loss float32
    >>> grads = loss.backward()                    # float32 gradients for float32 parameters

    ``enabled=False`` makes the block a no-op (one code path for both). Blocks nest; the innermost
    dtype wins; ``autocast(None)`` inside one turns it off for a nested block. The state is per thread.
    float16 needs a loss scaler for training (``GradScaler``): its gradients underflow otherwise.
    """

    def __init__(self, dtype=dtypes.bfloat16, enabled=True):
        if dtype is not None:
            dtype = dtypes.get(dtype, "autocast")
            if dtype is not dtypes.float16 and dtype is not dtypes.bfloat16:
                raise ArgumentError("autocast: expected dtype float16 or bfloat16, found %s" % dtype.name)
        if enabled not in (True, False):
            raise ArgumentError("autocast: expected enabled=True or False, found %r" % (enabled,))
        self.dtype = dtype if enabled else None
        self.enabled = enabled

    def __enter__(self):
        stack = getattr(_state, "stack", None)
        if stack is None:
            stack = _state.stack = []
        stack.append(self.dtype if self.enabled else current())
        with _lock:
            _active[0] += 1
            if not _composite.CAST_POLICY:
                _composite.CAST_POLICY.append(_policy)
        return self

    def __exit__(self, *exc):
        _state.stack.pop()
        with _lock:
            _active[0] -= 1
            if not _active[0]:
                del _composite.CAST_POLICY[:]
        return False

    def __repr__(self):
        return "autocast(%s)" % (self.dtype.name if self.dtype is not None else "None")
