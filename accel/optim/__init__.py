"""``ember.accel.optim``: gradients by parameter, optimizers and learning-rate schedulers.

>>> from ember.accel.autodiff import Autodiff
>>> from ember.accel.optim import Adam, GradientsParams, lr
>>> model.to(Autodiff(ember.Cpu()))
>>> opt = Adam(model, lr=1e-3)              # makes each parameter a leaf keyed by its Param.id
>>> sched = lr.CosineAnnealingLR(1e-3, T_max=1000)
>>> for x, y in batches:
...     grads = GradientsParams.from_grads(F.cross_entropy(model(x), y).backward(), model)
...     opt.step(grads.clip_by_norm(1.0), lr=sched.step())
>>> opt.save("optim.safetensors")          # state by parameter name, step counts in metadata

PyTorch's loop works too (``opt.zero_grad(); loss.backward(); opt.step()``, gradients collected on
``Param.grad``; ``optimizer.py`` says how the two coexist), and every scheduler also takes an
optimizer (``lr.StepLR(opt, step_size=1, gamma=0.7)``; ``ember.optim.lr_scheduler`` has the same
names). docs/pytorch_style.md shows both.

Optimizers follow ``torch.optim``'s formulas and defaults; parameters are replaced by new leaf
tensors (same id, same device) at each step and are never touched by backward.
"""
from .grads import GradientsParams, track
from .optimizer import Optimizer
from .optimizers import SGD, Adam, AdamW, RMSprop, Adagrad, Adadelta
from . import lr
from . import fused_c  # noqa: F401  (the C Cpu's fused updates, where the kernels load)

__all__ = ["GradientsParams", "track", "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Adadelta", "lr"]
