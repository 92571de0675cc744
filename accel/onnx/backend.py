"""An ``onnx.backend``-style adapter: ``prepare(model)`` gives a rep whose ``run(inputs)`` returns
numpy arrays, and ``run_node_test(folder)`` checks one official node test against ember."""
import glob
import os

from ember.errors import EmberError

RTOL, ATOL = 1e-3, 1e-7  # onnx's own backend tests use these


class EmberRep:
    def __init__(self, module, device):
        self.module, self.device = module, device

    def run(self, inputs):
        from .graph import numpy_to_ember
        xs = [numpy_to_ember(a, self.device, "input %d" % i) for i, a in enumerate(inputs)]
        out = self.module(*xs)
        outs = out if isinstance(out, tuple) else (out,)
        return [o.numpy() for o in outs]


def prepare(model, device=None):
    """A rep running ``model`` (a ModelProto, path or bytes) on ``device``."""
    import ember
    from . import load
    device = device or ember.default_device()
    if hasattr(model, "SerializeToString"):
        model = model.SerializeToString()
    return EmberRep(load(model, device=device), device)


def run(model, inputs, device=None):
    return prepare(model, device).run(inputs)


def _read(path):
    from onnx import TensorProto, numpy_helper
    t = TensorProto()
    with open(path, "rb") as f:
        t.ParseFromString(f.read())
    return numpy_helper.to_array(t)


def run_node_test(folder, device=None):
    """(ok, message): ember's outputs against the expected ones of every data set in ``folder``."""
    import numpy as np
    try:
        rep = prepare(os.path.join(folder, "model.onnx"), device)
    except EmberError as e:
        return False, "load: %s" % str(e).split("\n")[0][:300]
    except Exception as e:  # a crash is a finding, reported, never hidden
        return False, "load crashed: %s: %s" % (type(e).__name__, str(e)[:300])
    sets = sorted(glob.glob(os.path.join(folder, "test_data_set_*")))
    if not sets:
        return False, "no data sets"
    for ds in sets:
        try:
            ins = [_read(p) for p in sorted(glob.glob(os.path.join(ds, "input_*.pb")), key=_index)]
            want = [_read(p) for p in sorted(glob.glob(os.path.join(ds, "output_*.pb")), key=_index)]
        except Exception as e:  # sequences, optionals, maps: values ember has no type for
            return False, "data set holds a value that is not a tensor (%s)" % type(e).__name__
        try:
            got = rep.run(ins)
        except Exception as e:
            return False, "run: %s: %s" % (type(e).__name__, str(e).split("\n")[0][:300])
        if len(got) != len(want):
            return False, "expected %d outputs, found %d" % (len(want), len(got))
        for k, (g, w) in enumerate(zip(got, want)):
            problem = _compare(np, g, w)
            if problem:
                return False, "output %d: %s" % (k, problem)
    return True, ""


def _index(path):
    return int(os.path.basename(path).split("_")[1].split(".")[0])


def _compare(np, got, want):
    got = np.asarray(got)
    if tuple(got.shape) != tuple(want.shape):
        return "expected shape %s, found %s" % (tuple(want.shape), tuple(got.shape))
    if want.dtype.kind in "biu":
        if not np.array_equal(got.astype(np.int64) if got.dtype.kind != "b" else got,
                              want.astype(np.int64) if want.dtype.kind != "b" else want):
            return "integer values differ (first: %s vs %s)" % (got.reshape(-1)[:4], want.reshape(-1)[:4])
        return None
    if want.dtype.name == "bfloat16":
        want = want.astype(np.float32)
    if want.dtype.kind != "f":
        return "expected dtype %s, ember has none" % want.dtype
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.allclose(g, w, rtol=RTOL, atol=ATOL, equal_nan=True):
        bad = np.abs(g - w)
        return "max abs error %.3g (rtol %g, atol %g)" % (np.nanmax(bad) if bad.size else 0, RTOL, ATOL)
    return None
