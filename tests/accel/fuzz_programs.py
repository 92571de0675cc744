"""Random programs for the fuzz tests (test_fusion_fuzz.py, test_capture_fuzz.py).

A program is a list of steps over a growing list of values: new inputs (some holding 0, -0, inf
and nan), unary and binary ops with broadcasting, Python scalars on either side, comparisons and
``where``, casts, reductions with and without ``keepdim`` (and row patterns that read a reduction
back along its dim, as softmax does), matmuls, views (reshape, permute, expand), slices, reads of
a value halfway (``tolist``), and drops (a value nobody holds any more). ``generate`` makes one
from a seed while it runs on a device, so it only holds ops that device accepts; ``apply`` runs
a step; ``mismatch`` compares two runs' values, to the bit except where ``approximate`` says a
value may move in its last bits.
"""
import math
import random
import struct

import ember

EXACT_UNARY = ("neg", "abs", "sqrt", "relu", "reciprocal", "floor", "ceil", "round", "sign", "tanh",
               "sigmoid", "log", "sin")
APPROX_UNARY = ("exp", "erf")
BINARY = ("add", "sub", "mul", "div", "maximum", "minimum", "pow")
COMPARE = ("lt", "le", "gt", "ge", "eq", "ne")
REDUCE = ("sum", "max", "min", "mean")
SCALARS = (0.5, -2.0, 3.0, 0.0, -0.0, 1e-3, 2, -1)
SPECIALS = (0.0, -0.0, float("inf"), float("-inf"), float("nan"), 1e-40, 3e38)
DIMS = (1, 2, 3, 5, 8)


# -- the steps ---------------------------------------------------------------------------------

def _input(shape, seed, special, values, dev):
    rng = random.Random(seed * 7919 + values)
    n = 1
    for d in shape:
        n *= d
    flat = [rng.gauss(0, 2) for _ in range(n)]
    if special:
        for _ in range(max(1, n // 4)):
            flat[rng.randrange(n)] = rng.choice(SPECIALS)
    t = ember.tensor(flat, dtype=ember.float32, device=dev).reshape(*shape)
    return t.detach().requires_grad_() if getattr(dev, "records_grad", False) else t


def apply(step, env, dev, values):
    """Run one step; returns the new value or None."""
    kind = step[0]
    if kind == "input":
        return _input(step[1], step[2], step[3], values, dev)
    if kind == "unary":
        x = env[step[2]]
        op = step[1]
        return x.relu() if op == "relu" else getattr(x, op)()
    if kind == "binary":
        a, b = env[step[2]], env[step[3]]
        return getattr(a, step[1])(b) if step[1] in ("maximum", "minimum") else _OPS[step[1]](a, b)
    if kind == "scalar":
        x, c = env[step[2]], step[3]
        return _OPS[step[1]](c, x) if step[4] else _OPS[step[1]](x, c)
    if kind == "where":
        a, b = env[step[2]], env[step[3]]
        return ember.where(_OPS[step[1]](a, b), a, b)
    if kind == "cast":
        return env[step[1]].to(step[2])
    if kind == "reduce":
        x = env[step[2]]
        r = getattr(x, step[1])(step[3], keepdim=step[4])
        return r[0] if step[1] in ("max", "min") else r
    if kind == "rows":  # x op x.reduce(dim, keepdim=True): a reduction read back along its dim
        x = env[step[2]]
        r = getattr(x, step[3])(step[4], keepdim=True)
        r = r[0] if step[3] in ("max", "min") else r
        return _OPS[step[1]](x, r)
    if kind == "matmul":
        return env[step[1]] @ env[step[2]]
    if kind == "reshape":
        return env[step[1]].reshape(*step[2])
    if kind == "permute":
        return env[step[1]].permute(*step[2])
    if kind == "expand":
        return env[step[1]].expand(*step[2])
    if kind == "slice":
        x = env[step[1]]
        index = [slice(None)] * x.ndim
        index[step[2]] = slice(step[3], step[4])
        return x[tuple(index)]
    if kind == "read":
        env[step[1]].tolist()
        return None
    if kind == "drop":
        env[step[1]] = None
        return None
    raise AssertionError(kind)


_OPS = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "div": lambda a, b: a / b, "pow": lambda a, b: a ** b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b}


def _broadcasts(s, t):
    for a, b in zip(reversed(s), reversed(t)):
        if a != b and a != 1 and b != 1:
            return False
    return True


def _shape(rng, like=None):
    """A random shape, or one that broadcasts with ``like`` (some dims 1, or fewer dims)."""
    if like is None:
        return tuple(rng.choice(DIMS) for _ in range(rng.randint(1, 3)))
    shape = list(like[rng.randint(0, len(like) - 1):] if rng.random() < 0.3 else like)
    for k in range(len(shape)):
        if rng.random() < 0.3:
            shape[k] = 1
    return tuple(shape) or (1,)


def is_float(t):
    return t is not None and t.dtype in (ember.float32, ember.float64)


def generate(seed, dev, length=24, reads=True):
    """(steps, values): a program of about ``length`` steps made while running on ``dev``, and
    the values it left (its env). ``reads``: whether it reads values halfway (``tolist``)."""
    rng = random.Random(seed)
    steps, env = [], []

    def run(step):
        v = apply(step, env, dev, 0)
        steps.append(step)
        env.append(v)
        return len(env) - 1

    def pick():
        live = [i for i, v in enumerate(env) if is_float(v) and v.ndim]
        return rng.choice(live) if live else run(("input", _shape(rng), seed * 100 + len(steps),
                                                   rng.random() < 0.3))

    def partner(i):
        shape = env[i].shape
        live = [j for j, v in enumerate(env) if is_float(v) and v.dtype is env[i].dtype
                and _broadcasts(shape, v.shape)]
        if live and rng.random() < 0.7:
            return rng.choice(live)
        j = run(("input", _shape(rng, shape), seed * 100 + len(steps), rng.random() < 0.3))
        return j if env[i].dtype is ember.float32 else run(("cast", j, env[i].dtype))

    pick()
    while len(steps) < length:
        r = rng.random()
        i = pick()
        x = env[i]
        if r < 0.16:
            ops = EXACT_UNARY + (APPROX_UNARY if rng.random() < 0.3 else ())
            run(("unary", rng.choice(ops), i))
        elif r < 0.34:
            run(("binary", rng.choice(BINARY), i, partner(i)))
        elif r < 0.44:
            run(("scalar", rng.choice(("add", "sub", "mul", "div", "pow")), i,
                 rng.choice(SCALARS), rng.random() < 0.3))
        elif r < 0.50:
            run(("where", rng.choice(COMPARE), i, partner(i)))
        elif r < 0.58:
            run(("reduce", rng.choice(REDUCE), i, rng.randrange(x.ndim), rng.random() < 0.5, x.dtype.name))
        elif r < 0.64:
            run(("rows", rng.choice(("sub", "div", "mul")), i, rng.choice(REDUCE), rng.randrange(x.ndim),
                 x.dtype.name))
        elif r < 0.69 and x.ndim == 2:
            m, k = x.shape
            j = run(("input", (k, rng.choice(DIMS)), seed * 100 + len(steps), False))
            if x.dtype is not ember.float32:
                j = run(("cast", j, x.dtype))
            run(("matmul", i, j))
        elif r < 0.74:
            shape = list(x.shape)
            if rng.random() < 0.5 or 1 not in shape:
                shape.insert(rng.randint(0, len(shape)), 1)
            else:
                shape.remove(1)
            run(("reshape", i, tuple(shape) or (1,)))
        elif r < 0.78 and x.ndim > 1:
            dims = list(range(x.ndim))
            rng.shuffle(dims)
            run(("permute", i, tuple(dims)))
        elif r < 0.81 and 1 in x.shape:
            run(("expand", i, tuple(rng.choice((2, 3)) if d == 1 else d for d in x.shape)))
        elif r < 0.84:
            d = rng.randrange(x.ndim)
            n = x.shape[d]
            lo = rng.randrange(n)
            run(("slice", i, d, lo, rng.randint(lo + 1, n)))
        elif r < 0.88:
            run(("cast", i, ember.float64 if x.dtype is ember.float32 else ember.float32))
        elif r < 0.93 and reads:
            run(("read", i))
        else:
            run(("drop", i))
    return steps, env


# -- comparing ---------------------------------------------------------------------------------

# which of a step's arguments are values (positions in the env)
REFS = {"input": (), "unary": (2,), "binary": (2, 3), "scalar": (2,), "where": (2, 3), "cast": (1,),
        "reduce": (2,), "rows": (2,), "matmul": (1, 2), "reshape": (1,), "permute": (1,),
        "expand": (1,), "slice": (1,), "read": (), "drop": ()}


def inexact(step):
    """Whether a step's value may differ in its last bits, within the conformance tolerance: an exp
    or erf (approximations when fused), or a float64 sum (no wider type to accumulate in, so its
    order shows, and a fused row is summed in another order than the primitive's)."""
    if step[0] == "unary":
        return step[1] in APPROX_UNARY
    if step[0] in ("reduce", "rows"):
        return step[-1] == "float64" and (step[1] if step[0] == "reduce" else step[3]) in ("sum", "mean")
    return False


def approximate(steps):
    """The positions whose value depends on an inexact step (compared within a tolerance)."""
    out = set()
    for k, s in enumerate(steps):
        if inexact(s) or any(s[a] in out for a in REFS[s[0]]):
            out.add(k)
    return out


def signs_kept(dev):
    """Whether ``dev`` keeps the sign of zero the pure Cpu gives (a CPU device does; WGSL does not
    promise it, and NVIDIA's compiler makes a compare-and-select a min, which takes -0 over 0)."""
    from ember.backend import Decorator
    base = dev.base() if isinstance(dev, Decorator) else dev
    return type(base).__name__ != "Wgpu"


def _same(u, v, tol, signed_zero=True):
    if u != u or v != v:
        return u != u and v != v
    if not signed_zero and u == 0 and v == 0:
        return True
    if tol is None or type(u) is bool:
        return struct.pack("<d", float(u)) == struct.pack("<d", float(v))
    if math.isinf(u) or math.isinf(v):
        return u == v
    return abs(u - v) <= tol * (1 + abs(v))


def _flat(v):
    out = v.tolist()
    while type(out) is list and out and type(out[0]) is list:
        out = [x for row in out for x in row]
    return out if type(out) is list else [out]


def mismatch(steps, want, got, approx=None, tol=1e-4, signed_zero=True):
    """The first value of ``got`` unlike ``want``'s, as a message; None when all agree. Those at
    the positions in ``approx`` (default: those depending on an exp or erf) are compared within
    ``tol``; ``signed_zero=False`` takes 0 and -0 as one value (WGSL does not promise the sign
    of zero: a GPU's compiler may make a compare-and-select a min)."""
    approx = approximate(steps) if approx is None else approx
    for k, (w, g) in enumerate(zip(want, got)):
        if (w is None) != (g is None):
            return "value %d: held on one side only" % k
        if w is None:
            continue
        if w.shape != g.shape or w.dtype is not g.dtype:
            return "value %d: %s %s against %s %s" % (k, g.shape, g.dtype, w.shape, w.dtype)
        fw, fg = _flat(w), _flat(g)
        for e, (u, v) in enumerate(zip(fg, fw)):
            if not _same(u, v, tol if k in approx else None, signed_zero):
                return "value %d (%s), element %d: %r against %r" % (k, steps[k], e, u, v)
    return None


# -- the devices the fuzz tests run on (each skips the test where it is missing) ---------------

def c_device():
    import pytest
    try:
        return ember.Cpu(kernels="c")
    except ImportError as e:
        pytest.skip("no C kernels here: %s" % e)


def wgpu_device():
    import pytest
    from harness import backends
    dev = dict(backends.available()).get("wgpu")
    if dev is None:
        pytest.skip("no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))
    return dev
