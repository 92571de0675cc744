"""Control flow: an ``If`` whose condition folds is inlined at load (graph.py), else its condition
picks a branch each run; ``Loop`` runs its body once per iteration, up to its trip count."""
import ember

from . import op

@op("If", attrs="then_branch else_branch")
def if_(n, cond):
    """An If whose condition did not fold: the condition is read (a sync) and its branch runs."""
    from ..graph import run_plan
    steps, _, outputs = n.plans["then_branch" if bool(cond.reshape(-1)[0].item()) else "else_branch"]
    env = run_plan(steps, dict(n.scope), n.device)
    return tuple(env[o] for o in outputs)


@op("Loop", attrs="body", static=(0,))
def loop(n, trips=None, cond=None, *carried):
    from ..graph import run_plan
    steps, inputs, outputs = n.plans["body"]
    if trips is None:
        n.fail("expected a trip count M that folds at load, found none")
    m = int(trips.reshape(-1)[0].item())
    go = True if cond is None else bool(cond.reshape(-1)[0].item())
    state = list(carried)
    k = len(carried)
    scans = [[] for _ in range(len(outputs) - 1 - k)]
    i = 0
    while i < m and go:
        env = dict(n.scope)
        env[inputs[0]] = ember.tensor(i, dtype=ember.int64, device=n.device)
        env[inputs[1]] = ember.tensor(go, dtype=ember.bool, device=n.device)
        for name, v in zip(inputs[2:], state):
            env[name] = v
        run_plan(steps, env, n.device)
        go = bool(env[outputs[0]].reshape(-1)[0].item())
        state = [env[o] for o in outputs[1:1 + k]]
        for j, o in enumerate(outputs[1 + k:]):
            scans[j].append(env[o])
        i += 1
    stacked = [ember.stack(s) if s else ember.zeros(0, device=n.device) for s in scans]
    return tuple(state + stacked)


@op("Scan", since=9, attrs="body num_scan_inputs scan_input_axes scan_input_directions scan_output_axes "
    "scan_output_directions")
def scan(n, *values):
    """Runs the body once per position along each scan input's axis, carrying the states."""
    from ..graph import run_plan
    steps, inputs, outputs = n.plans["body"]
    m = n.attr("num_scan_inputs")
    states, xs = list(values[:len(values) - m]), list(values[len(values) - m:])
    k = len(states)
    in_axes = n.attr("scan_input_axes", [0] * m)
    in_dirs = n.attr("scan_input_directions", [0] * m)
    xs = [x.swap_dims(0, a + x.dim() if a < 0 else a) if a else x for x, a in zip(xs, in_axes)]
    T = xs[0].shape[0] if xs else 0
    outs = [[] for _ in range(len(outputs) - k)]
    for t in range(T):
        env = dict(n.scope)
        for name, v in zip(inputs[:k], states):
            env[name] = v
        for name, x, d in zip(inputs[k:], xs, in_dirs):
            env[name] = x[T - 1 - t] if d else x[t]
        run_plan(steps, env, n.device)
        states = [env[o] for o in outputs[:k]]
        for j, o in enumerate(outputs[k:]):
            outs[j].append(env[o])
    out_axes = n.attr("scan_output_axes", [0] * len(outs))
    out_dirs = n.attr("scan_output_directions", [0] * len(outs))
    stacked = []
    for seq, a, d in zip(outs, out_axes, out_dirs):
        y = ember.stack(seq[::-1] if d else seq)
        a = a + y.dim() if a < 0 else a
        stacked.append(y.permute(*([i for i in range(1, a + 1)] + [0] + list(range(a + 1, y.dim())))) if a else y)
    return tuple(states + stacked)
