"""ONNX function ops ember's table lacks, expanded into the ops their ONNX definition is made of.

Some operators (LinearAttention, CausalConvWithState, ...) are defined by ONNX as a function: a
small graph of simpler ops, fixed or built for the node's input types. ``expand`` replaces each
top-level node whose op the table lacks but whose schema has such a body by that body's nodes,
renamed into the graph, before the graph is checked and compiled.
"""


def expand(model, versions, lookup):
    """``model`` with function-defined nodes the table lacks inlined (a copy, or ``model`` itself)."""
    import onnx
    from onnx import defs
    g = model.graph
    todo = [i for i, nd in enumerate(g.node) if _body_wanted(nd, versions, lookup, defs)]
    if not todo:
        return model
    types = _types(model, onnx)
    out = onnx.ModelProto()
    out.CopyFrom(model)
    del out.graph.node[:]
    for i, nd in enumerate(g.node):
        body = _body(nd, versions, types, defs, onnx) if i in todo else None
        if body is None:
            out.graph.node.append(nd)
            continue
        out.graph.node.extend(_inline(nd, body, "%s__%d__" % (nd.op_type, i), onnx))
    return out


def _domain(nd):
    return nd.domain if nd.domain != "ai.onnx" else ""


def _body_wanted(nd, versions, lookup, defs):
    d = _domain(nd)
    opset = versions.get(d, 0)
    if lookup(d, nd.op_type, opset) is not None:
        return False
    try:
        s = defs.get_schema(nd.op_type, opset, d)
    except Exception:  # no schema: the op is reported as unsupported later
        return False
    return s.has_function or s.has_context_dependent_function


def _types(model, onnx):
    try:
        inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False)
    except Exception:
        inferred = model
    g = inferred.graph
    types = {}
    for vi in list(g.input) + list(g.value_info) + list(g.output):
        types[vi.name] = vi.type
    for t in g.initializer:
        tp = onnx.TypeProto()
        tp.tensor_type.elem_type = t.data_type
        for dim in t.dims:
            tp.tensor_type.shape.dim.add().dim_value = dim
        types[t.name] = tp
    return types


def _body(nd, versions, types, defs, onnx):
    d = _domain(nd)
    s = defs.get_schema(nd.op_type, versions.get(d, 0), d)
    f = onnx.FunctionProto()
    try:
        if s.has_function:
            f.CopyFrom(s.function_body)
        else:
            its = [(types.get(i) or onnx.TypeProto()).SerializeToString() for i in nd.input]
            f.ParseFromString(s.get_context_dependent_function(nd.SerializeToString(), its))
    except Exception:  # the body needs types inference could not give: reported as unsupported
        return None
    defaults = {}
    for name, a in s.attributes.items():
        if a.default_value.ListFields():
            defaults[name] = a.default_value
    return f, defaults


def _inline(nd, body, prefix, onnx):
    f, defaults = body
    given = {a.name: a for a in nd.attribute}
    names = {}
    for formal, actual in zip(f.input, nd.input):
        names[formal] = actual
    for formal in list(f.input)[len(nd.input):]:
        names[formal] = ""
    for formal, actual in zip(f.output, nd.output):
        names[formal] = actual

    def rename(n):
        if not n:
            return n
        if n not in names:
            names[n] = prefix + n
        return names[n]

    out = []
    for b in f.node:
        c = onnx.NodeProto()
        c.CopyFrom(b)
        del c.input[:]
        del c.output[:]
        c.input.extend(rename(x) for x in b.input)
        c.output.extend(rename(x) for x in b.output)
        c.name = prefix + (b.name or b.op_type)
        del c.attribute[:]
        for a in b.attribute:
            if a.ref_attr_name:
                src = given.get(a.ref_attr_name) or defaults.get(a.ref_attr_name)
                if src is None:
                    continue
                a2 = onnx.AttributeProto()
                a2.CopyFrom(src)
                a2.name = a.name
                c.attribute.append(a2)
            else:
                c.attribute.append(a)
                if a.HasField("g"):
                    _rename_free(c.attribute[-1].g, names)
        out.append(c)
    return out


def _rename_free(g, names):
    """Point a subgraph's reads of the function's own values at their inlined names."""
    local = set(i.name for i in g.input) | set(t.name for t in g.initializer)
    for nd in g.node:
        for k, x in enumerate(nd.input):
            if x and x not in local and x in names:
                nd.input[k] = names[x]
        for a in nd.attribute:
            if a.HasField("g"):
                _rename_free(a.g, dict((k, v) for k, v in names.items() if k not in local))
        local.update(nd.output)
