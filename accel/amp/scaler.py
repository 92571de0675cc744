"""``GradScaler``: loss scaling for float16 training, PyTorch's ``torch.amp.GradScaler`` rule.

float16's smallest normal value is 6e-5: small gradients of a float16 graph flush to zero. The
scaler multiplies the loss by ``scale`` before backward, divides the gradients by it before the
step, skips a step whose gradients hold an inf or nan (the scale was too large), halves the scale
then (``backoff_factor``) and doubles it after ``growth_interval`` clean steps (``growth_factor``).
"""
import math

from ember.errors import ArgumentError, ArgumentTypeError
from ember.tensor import Tensor


def _positive(value, name, above_one=False):
    if type(value) not in (int, float) or not math.isfinite(value) or value <= 0 or (above_one and value <= 1):
        raise ArgumentError("GradScaler: expected %s %s, found %r" % (name, "> 1" if above_one else "> 0", value))
    return float(value)


class GradScaler:
    """Scale the loss, unscale the gradients, skip steps with inf/nan gradients, adapt the scale.

    >>> scaler = GradScaler()
    >>> with autocast(ember.float16):
    ...     loss = F.cross_entropy(model(x), y)
    >>> grads = scaler.scale(loss).backward()      # ember's loop; or PyTorch's:
    >>> scaler.step(opt, grads)                    # opt.zero_grad(); scaler.scale(loss).backward();
    >>> scaler.update()                            # scaler.step(opt); scaler.update()

    ``step`` returns whether the optimizer stepped. ``enabled=False`` passes everything through.
    """

    def __init__(self, init_scale=65536.0, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000, enabled=True):
        self._scale = _positive(init_scale, "init_scale")
        self.growth_factor = _positive(growth_factor, "growth_factor", above_one=True)
        self.backoff_factor = _positive(backoff_factor, "backoff_factor")
        if self.backoff_factor >= 1:
            raise ArgumentError("GradScaler: expected backoff_factor < 1, found %r" % (backoff_factor,))
        if type(growth_interval) is not int or growth_interval < 1:
            raise ArgumentError("GradScaler: expected growth_interval an int >= 1, found %r" % (growth_interval,))
        self.growth_interval = growth_interval
        self.enabled = bool(enabled)
        self._growth_tracker = 0
        self._found_inf = None  # the last step's verdict, until update()

    def get_scale(self):
        """The current scale (1.0 when disabled)."""
        return self._scale if self.enabled else 1.0

    def scale(self, loss):
        """``loss * scale``, computed in float32 (a float16 loss times 65536 would overflow)."""
        if type(loss) is not Tensor:
            raise ArgumentTypeError("GradScaler.scale: expected a loss tensor, found %s" % type(loss).__name__)
        if not self.enabled:
            return loss
        if loss.dtype.kind != "f":
            raise ArgumentError("GradScaler.scale: expected a float loss, found %s" % loss.dtype.name)
        return loss.float() * self._scale

    def unscale(self, grads):
        """``grads`` (``Gradients`` or ``GradientsParams``) divided by the scale, in float32, and
        whether any of them holds an inf or nan (one read of the device)."""
        if not self.enabled:
            return grads, False
        inv = 1.0 / self._scale
        out = grads.map(lambda g: g.float() * inv if g.dtype.kind == "f" else g)
        bad = None
        for g in out.by_id.values():
            if g.dtype.kind != "f":
                continue
            b = (~g.isfinite()).any()
            bad = b if bad is None else bad | b
        return out, bool(bad.item()) if bad is not None else False

    def step(self, optimizer, grads=None, **kwargs):
        """Unscale ``grads`` (without them: each parameter's ``grad``, PyTorch's loop) and run
        ``optimizer.step`` with them, unless one is inf or nan. Returns whether it stepped."""
        if grads is None:
            from ember.accel.optim import GradientsParams
            grads = GradientsParams({p.id: p.grad for _, p in optimizer.named_parameters() if p.grad is not None})
        elif not hasattr(grads, "by_id"):
            raise ArgumentTypeError("GradScaler.step: expected Gradients or GradientsParams, found %s"
                                    % type(grads).__name__)
        grads, self._found_inf = self.unscale(grads)
        if self._found_inf:
            return False
        optimizer.step(grads, **kwargs)
        return True

    def update(self):
        """Back off after a skipped step; grow after ``growth_interval`` steps in a row without one."""
        if not self.enabled or self._found_inf is None:
            return
        if self._found_inf:
            self._scale *= self.backoff_factor
            self._growth_tracker = 0
        else:
            self._growth_tracker += 1
            if self._growth_tracker == self.growth_interval:
                self._scale *= self.growth_factor
                self._growth_tracker = 0
        self._found_inf = None

    def state_dict(self):
        """The scale and the growth tracker (for a checkpoint)."""
        return {"scale": self._scale, "growth_factor": self.growth_factor, "backoff_factor": self.backoff_factor,
                "growth_interval": self.growth_interval, "_growth_tracker": self._growth_tracker}

    def load_state_dict(self, state):
        """Restore what ``state_dict`` gave."""
        self._scale = _positive(state["scale"], "scale")
        self.growth_factor = _positive(state["growth_factor"], "growth_factor", above_one=True)
        self.backoff_factor = _positive(state["backoff_factor"], "backoff_factor")
        self.growth_interval = int(state["growth_interval"])
        self._growth_tracker = int(state["_growth_tracker"])

    def __repr__(self):
        return "GradScaler(scale=%g, enabled=%s)" % (self._scale, self.enabled)
