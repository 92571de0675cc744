"""ember.nn.functional's ops live in family modules loaded on first use (nn/functional/__init__.py):
every listed op resolves to its function, on MicroPython too, and a family's name never shadows an op."""
import sys

import ember
import ember.nn.functional as F
from harness.check import assert_close, assert_true, raises

PARAMETERS = ("device",)


def test_every_listed_op_is_a_function_of_its_family(device):
    for family, names in F.FAMILIES.items():
        assert_true(family not in F.__all__, "family %r is also an op name: the module would shadow it" % family)
        for name in names:
            fn = getattr(F, name)
            assert_true(callable(fn) and type(fn) is not type(sys), "F.%s is %r" % (name, fn))
            assert_true(("ember.nn.functional." + family) in sys.modules, "F.%s did not load %s" % (name, family))


def test_from_import_and_attribute_give_the_same_op(device):
    from ember.nn.functional import cross_entropy, linear, max_pool2d
    assert_true(linear is F.linear and cross_entropy is F.cross_entropy and max_pool2d is F.max_pool2d)
    x = ember.tensor([[1.0, -2.0]], device=device)
    w = ember.tensor([[0.5, 0.25]], device=device)
    assert_close(linear(x, w).tolist(), [[0.0]])
    assert_close(F.relu(x).tolist(), [[1.0, 0.0]])


def test_an_unknown_name_is_an_attribute_error(device):
    with raises(AttributeError, "has no attribute 'conv4d'"):
        F.conv4d
