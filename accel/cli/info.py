"""``ember info``: ember's version, this machine (ISA, cores), and every backend: available here or why
not, with the GPU adapters wgpu sees (``--json`` for a machine-readable report)."""
import json
import platform
import sys


def add(sub):
    p = sub.add_parser("info", help="version, machine, the backends available here and why not",
                       description="What ember can run on here: the C kernels (instruction set, threads), "
                                   "NumPy, and the Wgpu backend with every adapter wgpu sees.")
    p.add_argument("--json", action="store_true", help="one JSON object instead of text")
    p.set_defaults(run=run)
    return p


def _cpu_c():
    from ember.backends.cpu import ckernels
    if not ckernels.available():
        return {"available": False, "why": ckernels.reason(), "fix": "pip install cffi, or a wheel with the kernels"}
    return {"available": True, "isa": ckernels.isa(), "threads": ckernels.num_threads(),
            "default": not ckernels.disabled()}


def _numpy():
    try:
        import numpy
    except ImportError as e:
        return {"available": False, "why": str(e), "fix": "pip install ember[numpy]"}
    return {"available": True, "numpy": numpy.__version__}


def _wgpu():
    try:
        import wgpu
    except ImportError as e:
        return {"available": False, "why": str(e), "fix": "pip install ember[gpu]", "adapters": []}
    from ember.accel.wgpu import runtime
    found = []
    try:
        adapters = wgpu.gpu.enumerate_adapters_sync()
    except Exception as e:  # a broken driver: say so, do not fail the report
        return {"available": False, "why": "wgpu cannot enumerate adapters: %s" % e, "adapters": []}
    for a in adapters:
        found.append({"adapter": runtime.adapter_label(a),
                      "supported": a.info.get("backend_type") in runtime.SUPPORTED_BACKENDS})
    out = {"wgpu": wgpu.__version__, "adapters": found}
    try:
        chosen = runtime.choose_adapter(adapters=adapters)
    except RuntimeError as e:
        out.update(available=False, why=str(e))
        return out
    out.update(available=True, adapter=runtime.adapter_label(chosen),
               features=sorted(f for f in runtime.WANTED_FEATURES if f in chosen.features))
    return out


def report():
    import ember
    return {
        "ember": ember.__version__,
        "python": "%s %s" % (sys.implementation.name, platform.python_version()),
        "platform": "%s %s" % (platform.system(), platform.machine()),
        "backends": {"cpu": {"available": True, "kernels": "python"}, "cpu-c": _cpu_c(), "numpy": _numpy(),
                     "wgpu": _wgpu()},
    }


def _line(name, b):
    if not b["available"]:
        text = "no: %s" % b["why"]
        return "  %-7s %s%s" % (name, text, " (fix: %s)" % b["fix"] if "fix" in b else "")
    details = {"cpu": "the pure-Python reference",
               "cpu-c": "C kernels, %s, %s threads%s" % (b.get("isa"), b.get("threads"),
                                                          "" if b.get("default", True) else
                                                          " (EMBER_NO_C: ember.Cpu() stays pure)"),
               "numpy": "numpy %s" % b.get("numpy"),
               "wgpu": "wgpu %s on %s%s" % (b.get("wgpu"), b.get("adapter"),
                                            ", features " + ", ".join(b["features"]) if b.get("features") else "")}
    return "  %-7s yes: %s" % (name, details[name])


def run(args):
    r = report()
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print("ember %s on %s, %s" % (r["ember"], r["python"], r["platform"]))
    print("backends:")
    for name, b in r["backends"].items():
        print(_line(name, b))
    adapters = r["backends"]["wgpu"].get("adapters") or []
    if adapters:
        print("GPU adapters wgpu sees:")
        for a in adapters:
            print("  %s%s" % (a["adapter"], "" if a["supported"] else "  (its backend is not one ember supports)"))
    return 0
