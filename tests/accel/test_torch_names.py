"""Every Tensor method that PyTorch also offers as ``torch.X`` is ``ember.X`` too (issue 22), found
by comparing the lists, so a method added later without its top-level form fails here; and
``import ember`` does not load the forms' module."""
import subprocess
import sys

import torch

import ember

# names both have that are not functions in PyTorch: dtypes (torch.float is float32) and classes
NOT_FUNCTIONS = {"bool", "double", "float", "half", "int", "long", "device", "dtype"}


def _shared_names():
    methods = {n for n in dir(ember.Tensor) if not n.startswith("_")}
    return sorted((methods & set(dir(torch))) - NOT_FUNCTIONS)


def test_every_shared_method_has_a_top_level_form():
    names = _shared_names()
    assert len(names) > 100
    missing = [n for n in names if not callable(getattr(ember, n, None))]
    assert not missing, "Tensor methods that torch.X offers but ember.X lacks: %s" % missing


def test_the_top_level_forms_have_docstrings():
    import ember.functional as forms
    bare = [n for n in dir(forms) if not n.startswith("_") and callable(getattr(forms, n))
            and getattr(forms, n).__module__ == forms.__name__ and not getattr(forms, n).__doc__]
    assert not bare, bare


def test_top_level_forms_agree_with_pytorch():
    x = [[-1.5, 0.25, 2.0], [3.0, -0.5, 0.75]]
    y = [[0.5, -1.0, 2.5], [1.0, 2.0, -3.0]]
    e, t = ember.tensor(x, dtype=ember.float64), torch.tensor(x, dtype=torch.float64)
    e2, t2 = ember.tensor(y, dtype=ember.float64), torch.tensor(y, dtype=torch.float64)
    def same(got, want, name):
        assert torch.allclose(torch.tensor(got, dtype=torch.float64), torch.tensor(want, dtype=torch.float64),
                              rtol=1e-12, atol=1e-14), name
    for name in ("abs", "exp", "sigmoid", "sign", "asinh", "exp2", "atan", "erf"):
        same(getattr(ember, name)(e).tolist(), getattr(torch, name)(t).tolist(), name)
    for name in ("isnan", "logical_not"):
        assert getattr(ember, name)(e).tolist() == getattr(torch, name)(t).tolist(), name
    for name in ("add", "sub", "mul", "maximum", "minimum", "copysign", "fmod", "remainder", "logaddexp", "atan2"):
        same(getattr(ember, name)(e, e2).tolist(), getattr(torch, name)(t, t2).tolist(), name)
    assert ember.add(e, e2, alpha=2).tolist() == torch.add(t, t2, alpha=2).tolist()
    assert ember.max(e, 1).values.tolist() == torch.max(t, 1).values.tolist()
    assert ember.max(e, e2).tolist() == torch.max(t, t2).tolist()
    assert ember.cummax(e, 1).indices.tolist() == torch.cummax(t, 1).indices.tolist()
    assert ember.flatten(e).tolist() == torch.flatten(t).tolist()
    assert ember.isclose(e, e2 * 0 + e + 1e-9).tolist() == torch.isclose(t, t + 1e-9).tolist()
    assert ember.lerp(e, e2, 0.7).allclose(ember.tensor(torch.lerp(t, t2, 0.7).tolist(), dtype=ember.float64))


def test_import_ember_does_not_load_the_forms():
    code = "import sys, ember; print('ember.functional' in sys.modules, 'ember.special' in sys.modules); ember.abs"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "False"]
