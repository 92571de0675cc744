"""WGSL source for the kernels: the common prelude, strided operand addressing, and the elementwise
("map") kernel every unary, binary, where, cast, fill and copy runs through.

Parameter block (64 u32 words, one per dispatch, read through ``pw(i)``):

====  ==========================================================================
word  meaning
====  ==========================================================================
0     number of output elements
1     number of dims after coalescing (``nd``, at most ``MAXD``)
2-3   a scalar operand's bits (low word first)
4-11  the coalesced shape
12+   one slot of 9 words per strided operand ``k`` (output last): element offset
      at ``12 + 9k``, strides at ``13 + 9k ...``
48-63 kernel-specific values
====  ==========================================================================

A kernel reads each operand at ``offset + sum(coord[d] * stride[d])``; when every operand is
contiguous, coalescing leaves one dim and the address is ``offset + i * stride``.
"""
from . import wgsl_lib

MAXD = 8
WG = 256


def slot(k):
    return 12 + 9 * k


def prelude(types, enable_f16):
    """Header: the parameter block and one read_write storage binding per entry of ``types``."""
    lines = []
    if enable_f16:
        lines.append("enable f16;")
    lines.append("struct Params { w: array<vec4<u32>, 16> }")
    lines.append("@group(0) @binding(0) var<uniform> P: Params;")
    lines.append("fn pw(i: u32) -> u32 { return P.w[i >> 2u][i & 3u]; }")
    lines.append("fn pi(i: u32) -> i32 { return bitcast<i32>(pw(i)); }")
    for k, t in enumerate(types):
        lines.append("@group(0) @binding(%d) var<storage, read_write> b%d: array<%s>;" % (k + 1, k, t))
    return "\n".join(lines) + "\n"


def scalar_expr(ct):
    """WGSL reading the scalar operand (words 2, 3) as compute type ``ct``."""
    if ct == "f32":
        return "bitcast<f32>(pw(2u))"
    if ct == "f64":
        return "bitcast<f64>(u64(pw(2u)) | (u64(pw(3u)) << 32u))"
    if ct == "i64":
        return "bitcast<i64>(u64(pw(2u)) | (u64(pw(3u)) << 32u))"
    if ct == "i32":
        return "bitcast<i32>(pw(2u))"
    if ct == "u32":
        return "pw(2u)"
    if ct == "f16":
        return "f16(bitcast<f32>(pw(2u)))"
    raise ValueError(ct)


ENTRY = ("@compute @workgroup_size(%d)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, "
         "@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n")


def linear_index():
    return "  let i = (wid.y * nwg.x + wid.x) * %du + lid;\n  if (i >= pw(0u)) { return; }\n" % WG


def offsets(nslots):
    """WGSL computing ``o0 .. o{n-1}``: each strided operand's element index for output element ``i``."""
    s = ["  let nd = pw(1u);\n"]
    for k in range(nslots):
        s.append("  var o%d = pi(%du);\n" % (k, slot(k)))
    s.append("  if (nd == 1u) {\n")
    for k in range(nslots):
        s.append("    o%d = o%d + i32(i) * pi(%du);\n" % (k, k, slot(k) + 1))
    s.append("  } else {\n    var rem = i;\n    for (var d = nd; d > 0u; d = d - 1u) {\n")
    s.append("      let n = pw(3u + d);\n      let c = i32(rem % n);\n      rem = rem / n;\n")
    for k in range(nslots):
        s.append("      o%d = o%d + c * pi(%du + d);\n" % (k, k, slot(k)))
    s.append("    }\n  }\n")
    return "".join(s)


def map_source(arrays, scalar_ct, loads, out_type, store, expr, libs, enable_f16, vec=0):
    """An elementwise kernel.

    ``arrays``: storage types of the array operands, in operand order; the output buffer comes
    after them. ``scalar_ct``: the compute type of a scalar operand, or None. ``loads``: per operand
    (arrays first, then the scalar) a template turning the stored value ``{}`` into its compute
    value ``x0, x1, ...``. ``expr`` computes the result from those; ``store`` (a template on ``{}``)
    converts it to the output's storage type.

    ``vec``: 0 for the strided kernel; else every operand is contiguous and 4-aligned, the
    buffers are read as vec4 and each thread handles ``vec`` vec4s, ``WG * 4`` elements apart.
    """
    if vec:
        return _map_vec4(arrays, scalar_ct, loads, out_type, store, expr, libs, enable_f16, vec)
    src = [prelude(list(arrays) + [out_type], enable_f16), wgsl_lib.lib(libs), ENTRY % WG,
           linear_index(), offsets(len(arrays) + 1)]
    k = 0
    for j, t in enumerate(arrays):
        src.append("  let x%d = %s;\n" % (k, loads[k].format("b%d[u32(o%d)]" % (j, j))))
        k += 1
    if scalar_ct is not None:
        src.append("  let x%d = %s;\n" % (k, loads[k].format(scalar_expr(scalar_ct))))
    nout = len(arrays)
    src.append("  b%d[u32(o%d)] = %s;\n}\n" % (nout, nout, store.format(expr)))
    return "".join(src)


def _map_vec4(arrays, scalar_ct, loads, out_type, store, expr, libs, enable_f16, vec):
    types = ["vec4<%s>" % t for t in arrays] + ["vec4<%s>" % out_type]
    src = [prelude(types, enable_f16), wgsl_lib.lib(libs), ENTRY % WG,
           "  let g = (wid.y * nwg.x + wid.x) * %du + lid;\n" % (WG * vec)]
    nout = len(arrays)
    for r in range(vec):
        src.append("  { let i = g + %du; if (i < pw(0u)) {\n" % (r * WG))
        for j in range(nout):
            src.append("    let v%d = b%d[u32(pi(%du)) + i];\n" % (j, j, slot(j)))
        src.append("    var r: vec4<%s>;\n" % out_type)
        for c in range(4):
            src.append("    {\n")
            for j in range(nout):
                src.append("      let x%d = %s;\n" % (j, loads[j].format("v%d[%d]" % (j, c))))
            if scalar_ct is not None:
                src.append("      let x%d = %s;\n" % (nout, loads[nout].format(scalar_expr(scalar_ct))))
            src.append("      r[%d] = %s;\n    }\n" % (c, store.format(expr)))
        src.append("    b%d[u32(pi(%du)) + i] = r;\n  } }\n" % (nout, slot(nout)))
    src.append("}\n")
    return "".join(src)


def strided_source(types, nslots, body, libs=(), enable_f16=False, extra=""):
    """A kernel with one thread per element of the parameters' coalesced shape: ``body`` runs
    after ``o0 .. o{nslots-1}`` hold the operands' element indices. ``extra``: helper functions."""
    return "".join([prelude(types, enable_f16), wgsl_lib.lib(libs), extra, ENTRY % WG, linear_index(),
                    offsets(nslots), body, "}\n"])


def workgroup_source(types, body, libs=(), enable_f16=False, extra="", size=WG):
    """A kernel whose ``body`` sees ``gid`` (the workgroup's index, flattened) and ``lid``."""
    entry = ("@compute @workgroup_size(%d)\nfn main(@builtin(workgroup_id) wid: vec3<u32>, "
             "@builtin(num_workgroups) nwg: vec3<u32>, @builtin(local_invocation_index) lid: u32) {\n"
             "  let gid = wid.y * nwg.x + wid.x;\n" % size)
    return "".join([prelude(types, enable_f16), wgsl_lib.lib(libs), extra, entry, body, "}\n"])
