"""ONNX coverage: every official node test of the installed onnx, run by ember.

    python tools/onnx_coverage.py [--device numpy|cpu] [--filter SUBSTRING] [--failures]

Prints one line per operator (its node tests passing / its node tests) and ends with ONE JSON
line: ``operators_passing`` (operators with at least one passing node test, tinygrad's and Burn's
sense of an operator ember runs), ``operators_passing_all`` (operators whose every node test
passes), ``node_tests_passing`` and the totals. Tests of expanded functions (several ops) are
counted as node tests, not as operators.
"""
import argparse
import json
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def op_of(folder):
    import onnx
    m = onnx.load(os.path.join(folder, "model.onnx"), load_external_data=False)
    types = [n.op_type for n in m.graph.node]
    return types[0] if len(set(types)) == 1 else "+".join(sorted(set(types)))


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="numpy", choices=("numpy", "cpu"))
    p.add_argument("--filter", default="")
    p.add_argument("--failures", action="store_true", help="print each failing test and why")
    p.add_argument("--write-passing", metavar="FILE", help="write the names of the passing tests to FILE "
                   "(tests/accel/onnx/node_tests_passing.txt is the list make test checks)")
    args = p.parse_args(argv)
    warnings.simplefilter("ignore")
    import ember
    from ember.accel.onnx.backend import run_node_test
    from ember.accel.onnx.nodetests import cases
    device = ember.accel.NumPy() if args.device == "numpy" else ember.Cpu()
    per_op = {}
    passed = total = 0
    passing = []
    t0 = time.time()
    for name, folder in cases():
        if args.filter not in name:
            continue
        op = op_of(folder)
        if "+" in op:  # a test of several ops (an expanded function): counted under its name's op
            op = "(expanded) " + name.split("_")[1]
        ok, why = run_node_test(folder, device)
        row = per_op.setdefault(op, [0, 0, []])
        row[1] += 1
        total += 1
        if ok:
            row[0] += 1
            passed += 1
            passing.append(name)
        else:
            row[2].append((name, why))
    if args.write_passing:
        with open(args.write_passing, "w") as f:
            f.write("".join(n + "\n" for n in passing))
    ops_total = [o for o in per_op if not o.startswith("(expanded)")]
    ops_passing = [o for o in ops_total if per_op[o][0] == per_op[o][1]]
    ops_some = [o for o in ops_total if per_op[o][0]]
    for op in sorted(per_op):
        ok, n, fails = per_op[op]
        print("%-34s %3d/%-3d %s" % (op, ok, n, "" if ok == n else ("FAIL " + fails[0][1][:110])))
        if args.failures:
            for name, why in fails:
                print("    %s: %s" % (name, why[:200]))
    quant = ["QuantizeLinear", "DequantizeLinear", "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger"]
    print(json.dumps({"device": args.device, "operators_passing": len(ops_some),
                      "operators_passing_all": len(ops_passing), "operators_total": len(ops_total),
                      "node_tests_passing": passed, "node_tests_total": total,
                      "quantized_ops_passing": [q for q in quant if q in ops_some],
                      "quantized_ops_passing_all": [q for q in quant if q in ops_passing],
                      "seconds": round(time.time() - t0, 1)}))


if __name__ == "__main__":
    main()
