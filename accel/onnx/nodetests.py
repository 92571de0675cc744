"""The official ONNX backend node tests, on disk in ``onnx``'s layout.

Some ``onnx`` wheels ship ``onnx/backend/test/data/node``; 1.23's does not, so ``node_test_dir``
writes the same files (``NAME/model.onnx``, ``NAME/test_data_set_N/{input,output}_K.pb``) from the
test cases the wheel does ship (``onnx.backend.test.case.node``), once, into a cache folder.
"""
import os

CACHE = os.path.join(os.path.expanduser("~"), ".cache", "ember", "onnx-node-tests")


def _shipped():
    import onnx
    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    return d if os.path.isdir(d) and os.listdir(d) else None


def node_test_dir(cache=None):
    """A folder holding every node test of the installed onnx (written on the first call)."""
    shipped = _shipped()
    if shipped:
        return shipped
    import shutil
    import tempfile
    import onnx
    base = cache or CACHE
    root = os.path.join(base, onnx.__version__)
    if not os.path.exists(os.path.join(root, ".complete")):
        os.makedirs(base, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".writing-", dir=base)  # written aside, then renamed: no reader sees half
        _write(tmp)
        with open(os.path.join(tmp, ".complete"), "w") as f:
            f.write("ok\n")
        if os.path.isdir(root) and not os.path.exists(os.path.join(root, ".complete")):
            shutil.rmtree(root, ignore_errors=True)  # an interrupted older write
        try:
            os.rename(tmp, root)
        except OSError:  # another process finished first
            shutil.rmtree(tmp, ignore_errors=True)
    return root


def _write(root):
    import warnings
    from onnx import numpy_helper
    from onnx.backend.test.case import node
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = node.collect_testcases()
    import shutil
    for case in cases:
        if case.model is None or not case.data_sets:
            continue
        d = os.path.join(root, case.name)
        try:
            _write_case(case, d, numpy_helper)
        except Exception:  # a value numpy_helper cannot serialize (an object array of protos)
            shutil.rmtree(d, ignore_errors=True)


def _write_case(case, d, numpy_helper):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        ds = os.path.join(d, "test_data_set_%d" % i)
        os.makedirs(ds, exist_ok=True)
        for kind, values, infos in (("input", inputs, graph.input), ("output", outputs, graph.output)):
            for j, v in enumerate(values):
                proto = _value_proto(numpy_helper, v, infos[j])
                if proto is None:
                    continue
                with open(os.path.join(ds, "%s_%d.pb" % (kind, j)), "wb") as f:
                    f.write(proto.SerializeToString())


def _value_proto(numpy_helper, v, info):
    t = info.type
    if t.HasField("sequence_type"):
        return numpy_helper.from_list(v, info.name)
    if t.HasField("optional_type"):
        return numpy_helper.from_optional(v, info.name)
    if t.HasField("map_type"):
        return numpy_helper.from_dict(v, info.name)
    import numpy as np
    return numpy_helper.from_array(np.asarray(v), info.name)


def cases(root=None):
    """(name, folder) of every node test, sorted by name."""
    root = root or node_test_dir()
    return [(n, os.path.join(root, n)) for n in sorted(os.listdir(root))
            if os.path.exists(os.path.join(root, n, "model.onnx"))]
