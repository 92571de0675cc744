"""``ember.optim.lr_scheduler``: ``torch.optim.lr_scheduler``'s names for the schedulers of
``ember.accel.optim.lr``, which take an optimizer as PyTorch's do (or a rate, ember's form).

>>> from ember.optim.lr_scheduler import StepLR
>>> sched = StepLR(opt, step_size=1, gamma=0.7)
"""
from . import _accel


def __getattr__(name):
    if name[:1] == "_":
        raise AttributeError("module 'ember.optim.lr_scheduler' has no attribute %r" % (name,))
    value = _accel("optim.lr", name, "ember.optim.lr_scheduler")
    globals()[name] = value
    return value
