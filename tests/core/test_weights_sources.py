"""What ``Module.load`` and ``load_state_dict`` take besides ember's own tensors and records, on
every port: the format is told by the file's first bytes (a PyTorch checkpoint is never parsed as
safetensors), and a foreign array is converted through its ``tolist()`` and ``shape``."""
import os

from ember import EmberError, RecordError
from ember.nn.linear import Linear
from harness.check import assert_equal, assert_true
from harness.files import tmp_path

PARAMETERS = ("device",)


def _refused(fn, kind, *fragments):
    try:
        fn()
    except EmberError as e:
        assert_true(isinstance(e, kind), "expected %s, found %s: %s" % (kind.__name__, type(e).__name__, e))
        for f in fragments:
            assert_true(f in str(e), "%r is not in %r" % (f, str(e)))
        return
    raise AssertionError("nothing was raised, expected %s" % kind.__name__)


class Foreign:
    """An array of another library, as the core sees it: only ``tolist()`` and ``shape``."""

    def __init__(self, values, shape):
        self.values, self.shape = values, shape

    def tolist(self):
        return self.values


def test_foreign_arrays_load_by_their_values(device):
    m = Linear(3, 2, device=device)
    report = m.load_state_dict({"weight": Foreign([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], (2, 3)),
                                "bias": Foreign([0.5, -0.5], (2,))})
    assert_true(report.ok)
    assert_equal(m.weight.tolist(), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert_equal(m.bias.tolist(), [0.5, -0.5])


def test_checkpoint_bytes_are_not_read_as_safetensors(device):
    m = Linear(3, 2, device=device)
    for name, head in (("zip.pt", b"PK\x03\x04" + b"\x00" * 40), ("legacy.pth", b"\x80\x02\x8a\x0a" + b"\x00" * 40)):
        path = tmp_path(name)
        with open(path, "wb") as f:
            f.write(head)
        # CPython reads it with ember.accel.pytorch and finds it damaged; a board says it needs CPython
        _refused(lambda: m.load(path), RecordError, path)
        try:
            m.load(path)
        except RecordError as e:
            assert_true("header length" not in str(e), "parsed as safetensors: %s" % e)
        os.remove(path)
    path = tmp_path("m.safetensors")
    m.save(path)
    assert_true(Linear(3, 2, device=device).load(path).ok)  # a record still loads as one
    os.remove(path)
