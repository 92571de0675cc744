"""Assertions for ember tests, the same on CPython and MicroPython."""
import math

import ember


def _flat(v):
    if type(v) in (list, tuple):
        out = []
        for x in v:
            out.extend(_flat(x))
        return out
    return [v]


def _shape_of(v):
    shape = []
    while type(v) in (list, tuple):
        shape.append(len(v))
        if not v:
            break
        v = v[0]
    return tuple(shape)


def close(a, b, rtol, atol):
    if type(a) is bool or type(b) is bool:
        return a == b
    a, b = float(a), float(b)
    if a != a or b != b:
        return a != a and b != b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= atol + rtol * abs(b)


def assert_close(actual, expected, rtol=1e-5, atol=1e-6, msg=""):
    """``actual`` (a Tensor, nested lists or a scalar) equals ``expected`` within tolerance.

    Shapes must agree exactly; nan matches nan, inf matches the same inf.
    """
    if isinstance(actual, ember.Tensor):
        a_shape, a_vals = actual.shape, _flat(actual.tolist())
    else:
        a_shape, a_vals = _shape_of(actual), _flat(actual)
    if isinstance(expected, ember.Tensor):
        e_shape, e_vals = expected.shape, _flat(expected.tolist())
    else:
        e_shape, e_vals = _shape_of(expected), _flat(expected)
    if a_shape != e_shape:
        raise AssertionError("%sshape %s != expected %s" % (msg and msg + ": ", a_shape, e_shape))
    bad = [i for i, (x, y) in enumerate(zip(a_vals, e_vals)) if not close(x, y, rtol, atol)]
    if bad:
        i = bad[0]
        raise AssertionError("%s%d of %d values differ; first at flat index %d: %r != expected %r"
                             % (msg and msg + ": ", len(bad), len(e_vals), i, a_vals[i], e_vals[i]))


def assert_equal(actual, expected, msg=""):
    assert_close(actual, expected, rtol=0.0, atol=0.0, msg=msg)


def assert_true(cond, msg="expected a true condition"):
    if not cond:
        raise AssertionError(msg)


class raises:
    """``with raises(ShapeError, "matmul"):`` — the block must raise that type, with that text in it."""

    def __init__(self, kind, contains=""):
        self.kind = kind
        self.contains = contains
        self.value = None

    def __enter__(self):
        return self

    def __exit__(self, etype, value, tb):
        if etype is None:
            raise AssertionError("expected %s, nothing was raised" % self.kind.__name__)
        if not issubclass(etype, self.kind):
            return False  # let the unexpected error propagate with its own traceback
        text = str(value)
        if self.contains and self.contains not in text:
            raise AssertionError("%s raised, but %r is not in its message %r"
                                 % (self.kind.__name__, self.contains, text))
        self.value = value
        return True
