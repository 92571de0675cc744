"""``ember inspect RECORD``: a record's tensors (names, dtypes, shapes, bytes), its metadata and the
parameter count, in total and per top-level module; reads no tensor data."""
import json

from ember.errors import RecordError
from ember.shapes import numel

from . import formats


def add(sub):
    p = sub.add_parser("inspect", help="tensors, dtypes, shapes, metadata and parameter count of a record",
                       description="Show what a safetensors record holds without reading its tensors.")
    p.add_argument("record", help="a safetensors file")
    p.add_argument("--json", action="store_true", help="one JSON object instead of tables")
    p.set_defaults(run=run)
    return p


def summary(path):
    from ember import record
    kind = formats.sniff(path)  # by content: a .pt named .safetensors is still a .pt
    if kind != formats.SAFETENSORS:
        raise RecordError("inspect: %s is not a safetensors record (found: %s)%s" % (
            path, kind, " (ember convert turns it into one)" if kind == formats.NUMPY_ZIP else ""))
    info = record.inspect(path)
    out = info.as_dict()
    groups = {}
    for t in out["tensors"]:
        t["numel"] = numel(t["shape"])
        top = t["name"].split(".", 1)[0] if "." in t["name"] else "(top level)"
        groups[top] = groups.get(top, 0) + t["numel"]
    out["parameters"] = sum(t["numel"] for t in out["tensors"])
    out["parameters_by_module"] = groups
    return info, out


def run(args):
    info, out = summary(args.record)
    if args.json:
        print(json.dumps(out, indent=2))
        return 0
    print(info)
    print("parameters: %s" % format(out["parameters"], ","))
    if len(out["parameters_by_module"]) > 1:
        width = max(len(k) for k in out["parameters_by_module"])
        for name, n in out["parameters_by_module"].items():
            print("  %-*s %12s" % (width, name, format(n, ",")))
    return 0
