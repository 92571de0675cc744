"""The static memory plan: where each op's output lives in the arena, found by running the model
once with a recording arena (``ember deploy`` does this on the desktop).

A buffer lives from the op that writes it to the last op that reads it (the model's output to the
end). Each new buffer takes the lowest offset that overlaps no live buffer of its typecode; an op
that may work in place (relu) reuses its input's buffer when nothing reads that input later.
"""
from .tensor import Arena, use


def trace(model, x):
    """Run ``model(x)`` once with a recording arena; (its trace, the output tensor)."""
    arena = use(Arena())
    y = model(x)
    return arena.trace, y


def make(trace, output_buf):
    """The plan for ``trace`` (``Arena.trace``) whose result is buffer ``output_buf``."""
    n_ops = len(trace)
    last = list(range(n_ops))
    for j in range(n_ops):
        for b in trace[j][2]:
            if b >= 0:
                last[b] = max(last[b], j)
    if output_buf >= 0:
        last[output_buf] = n_ops
    root = list(range(n_ops))  # the op whose buffer each op's output shares
    for j in range(n_ops):
        b = trace[j][3]
        if b >= 0 and last[root[b]] == j and trace[b][0] == trace[j][0]:
            root[j] = root[b]
            last[root[j]] = max(last[root[j]], last[j])
    offsets, sizes, ops = {}, {"f": 0, "b": 0}, []
    for j in range(n_ops):
        code, n = trace[j][0], trace[j][1]
        if root[j] != j:
            off = offsets[root[j]]
        else:
            busy = sorted((offsets[i], offsets[i] + trace[i][1]) for i in offsets
                          if root[i] == i and trace[i][0] == code and last[i] >= j)
            off = 0
            for lo, hi in busy:
                if off + n <= lo:
                    break
                off = max(off, hi)
            offsets[j] = off
            sizes[code] = max(sizes[code], off + n)
        ops.append([code, off, n])
    return {"f": sizes["f"], "b": sizes["b"], "ops": ops}
