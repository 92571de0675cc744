"""``ember.optim``: ``torch.optim``'s names for ember's optimizers, which live in ``ember.accel.optim``
(CPython: they need autodiff). A name loads them on first use (a module ``__getattr__``), so
``import ember.optim`` costs nothing on a board, where reading a name says what is missing.

>>> import ember.optim as optim
>>> opt = optim.Adadelta(model.parameters(), lr=1.0)
>>> sched = optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.7)
"""


def _accel(module, name, here):
    try:
        found = __import__("ember.accel." + module, None, None, [name])
    except ImportError as e:
        raise AttributeError("%s.%s needs ember.accel (CPython), which is not available here: %s" % (here, name, e))
    try:
        return getattr(found, name)
    except AttributeError:
        raise AttributeError("module %r has no attribute %r" % (here, name))


def __getattr__(name):
    if name[:1] == "_":
        raise AttributeError("module 'ember.optim' has no attribute %r" % (name,))
    if name == "lr_scheduler":
        value = __import__("ember.optim.lr_scheduler", None, None, ["StepLR"])
    else:
        value = _accel("optim", name, "ember.optim")
    globals()[name] = value  # later reads skip this function
    return value
