"""ember.accel.amp: mixed-precision training on any device that holds float16 or bfloat16.

    >>> from ember.accel import autocast, GradScaler
    >>> scaler = GradScaler()                      # float16 only; bfloat16 needs no scaling
    >>> with autocast(ember.float16):
    ...     loss = F.cross_entropy(model(x), y)    # linear/conv/matmul in float16, the loss in float32
    >>> grads = scaler.scale(loss).backward()
    >>> scaler.step(opt, grads)                    # unscaled; skipped when a gradient is inf or nan
    >>> scaler.update()

Parameters, gradients and optimizer state stay float32: autocast casts the inputs of the ops in
``policy.LOW`` to the low dtype and of those in ``policy.FLOAT32`` back to float32, inside the op,
so the cast is recorded and the gradient returns to each parameter in its own dtype.
"""
from .policy import FLOAT32, LOW, autocast, current
from .scaler import GradScaler

__all__ = ["autocast", "current", "GradScaler", "LOW", "FLOAT32"]
