"""Step capture: record a training or inference step once, replay it without the Python above the device.

``ember.accel.compile(step)`` (compiled.py says how and what falls back); ``feed`` and ``host``
declare host values a captured step must recompute on every replay.
"""
from .compiled import CaptureWarning, Compiled, compile  # noqa: F401
from .trace import current


def active():
    """Whether a step is being recorded now."""
    return current() is not None


def feed(fn, dtype, device):
    """A tensor of ``fn()`` (a number: 0-d; a list: 1-d) on ``device``; when a step is recorded, each
    replay evaluates ``fn`` again (a learning rate a scheduler changes, a bias correction from a step count)."""
    import ember
    v = fn()
    if type(v) in (list, tuple):
        t = ember.tensor(list(v), dtype=dtype, device=device)
    else:
        t = ember.full((), v, dtype=dtype, device=device)
    trace = current()
    if trace is not None:
        trace.add_feed(t, fn)
    return t


def host(fn):
    """Run ``fn()`` now, and again at the start of every replay of the step being recorded."""
    fn()
    trace = current()
    if trace is not None:
        trace.add_hook(fn)
