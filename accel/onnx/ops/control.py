"""Control flow: an ``If`` whose condition folds is inlined at load (graph.py), else its condition
picks a branch each run; ``Loop`` runs its body once per iteration, up to its trip count."""
import ember

from . import op

@op("If", attrs="then_branch else_branch")
def if_(n, cond):
    """An If whose condition did not fold: the condition is read (a sync) and its branch runs."""
    from ..graph import run_plan
    steps, _, outputs = n.plans["then_branch" if bool(cond.reshape(-1)[0].item()) else "else_branch"]
    env = run_plan(steps, dict(n.scope))
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
        run_plan(steps, env)
        go = bool(env[outputs[0]].reshape(-1)[0].item())
        state = [env[o] for o in outputs[1:1 + k]]
        for j, o in enumerate(outputs[1 + k:]):
            scans[j].append(env[o])
        i += 1
    stacked = [ember.stack(s) if s else ember.zeros(0, device=n.device) for s in scans]
    return tuple(state + stacked)
