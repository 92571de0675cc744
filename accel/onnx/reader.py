"""Reading an ONNX file safely: the protobuf, its tensors and their external-data files.

Every check a hostile or broken file can fail raises a ``RecordError`` that names the file, what
was expected and what was found: a truncated or non-ONNX protobuf, dims that are negative or whose
product passes ``MAX_ELEMENTS``, data whose length does not match its dims, external-data paths
outside the model's folder (absolute, ``..`` or a link that leaves it) or past the end of their file.
"""
import os

from ember.errors import RecordError

MAX_ELEMENTS = 1 << 31  # one tensor; beyond it a file's dims are hostile or a model ember cannot hold


def parse(path_or_bytes):
    """(ModelProto, folder of its external data or None, a name for messages)."""
    import onnx
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        data, folder, where = bytes(path_or_bytes), None, "<bytes>"
    else:
        where = os.fspath(path_or_bytes)
        with open(where, "rb") as f:
            data = f.read()
        folder = os.path.dirname(os.path.abspath(where))
    if not data:
        raise RecordError("onnx.load: %s: expected an ONNX ModelProto, found an empty file" % where)
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise RecordError("onnx.load: %s: expected an ONNX ModelProto, found bytes protobuf cannot parse "
                          "(truncated or not ONNX: %s)" % (where, e))
    if not model.HasField("graph") or (not model.graph.node and not model.graph.output):
        raise RecordError("onnx.load: %s: expected an ONNX model with a graph, found none (%d bytes; "
                          "truncated or not ONNX?)" % (where, len(data)))
    return model, folder, where


def opsets(model, where):
    """{domain: version} of the model's opset imports ('' is the default domain)."""
    out = {}
    for imp in model.opset_import:
        out[imp.domain if imp.domain != "ai.onnx" else ""] = imp.version
    if not out:
        raise RecordError("onnx.load: %s: expected opset imports, found none" % where)
    return out


def check_dims(dims, what, where):
    n = 1
    for d in dims:
        if d < 0:
            raise RecordError("onnx.load: %s: %s: expected dims >= 0, found %s" % (where, what, list(dims)))
        n *= d
        if n > MAX_ELEMENTS:
            raise RecordError("onnx.load: %s: %s: dims %s hold more than %d elements (a hostile or too large "
                              "file)" % (where, what, list(dims), MAX_ELEMENTS))
    return n


def to_numpy(t, folder, where):
    """The numpy array a TensorProto holds, its external data read inside ``folder``."""
    from onnx import numpy_helper, TensorProto
    what = "tensor %r" % t.name
    check_dims(t.dims, what, where)
    if t.data_location == TensorProto.EXTERNAL:
        t = _with_external(t, folder, where)
    try:
        a = numpy_helper.to_array(t)
    except Exception as e:
        raise RecordError("onnx.load: %s: %s (dims %s, type %d): its data does not fit its dims and type (%s)"
                          % (where, what, list(t.dims), t.data_type, e))
    return a if a.flags.c_contiguous else a.copy()  # (ascontiguousarray makes a 0-d array 1-d)


def _with_external(t, folder, where):
    from onnx import TensorProto
    info = {}
    for kv in t.external_data:
        info[kv.key] = kv.value
    loc = info.get("location")
    what = "tensor %r" % t.name
    if folder is None:
        raise RecordError("onnx.load: %s: %s keeps its data in file %r, but the model came as bytes "
                          "(load it from its path)" % (where, what, loc))
    if not loc or os.path.isabs(loc) or ".." in loc.replace("\\", "/").split("/"):
        raise RecordError("onnx.load: %s: %s: expected an external-data path inside the model's folder, "
                          "found %r" % (where, what, loc))
    real_folder = os.path.realpath(folder)
    path = os.path.realpath(os.path.join(folder, loc))
    if os.path.commonpath([real_folder, path]) != real_folder:
        raise RecordError("onnx.load: %s: %s: external-data path %r leads outside the model's folder (to %s)"
                          % (where, what, loc, path))
    if not os.path.isfile(path):
        raise RecordError("onnx.load: %s: %s: external-data file %r not found" % (where, what, loc))
    size = os.path.getsize(path)
    try:
        offset = int(info.get("offset", 0))
        length = int(info["length"]) if "length" in info else size - offset
    except ValueError:
        raise RecordError("onnx.load: %s: %s: expected integer offset/length, found %r" % (where, what, info))
    if offset < 0 or length < 0 or offset + length > size:
        raise RecordError("onnx.load: %s: %s: expected bytes %d..%d of %r, but the file has %d bytes"
                          % (where, what, offset, offset + length, loc, size))
    with open(path, "rb") as f:
        f.seek(offset)
        raw = f.read(length)
    copy = TensorProto()
    copy.CopyFrom(t)
    del copy.external_data[:]
    copy.data_location = TensorProto.DEFAULT
    copy.raw_data = raw
    return copy


def static_shapes(model, ranks=None, types=None):
    """{value name: shape tuple} for every value onnx's shape inference gives fully known dims;
    ``ranks`` and ``types`` (dicts), when given, get each value's rank and ONNX element type where known
    (ember holds int16/uint16 in int32: the ONNX type keeps their range)."""
    import onnx
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:  # inference is a help for folding Shape, never required
        inferred = model
    out = {}
    g = inferred.graph
    if types is not None:
        for t in g.initializer:
            types[t.name] = t.data_type
    for vi in list(g.value_info) + list(g.input) + list(g.output):
        t = vi.type
        if types is not None and t.HasField("tensor_type"):
            types[vi.name] = t.tensor_type.elem_type
        if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            continue
        dims = t.tensor_type.shape.dim
        if ranks is not None:
            ranks[vi.name] = len(dims)
        if all(d.HasField("dim_value") for d in dims):
            out[vi.name] = tuple(d.dim_value for d in dims)
    return out
