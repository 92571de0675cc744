"""The conformance suite's machinery: cases, deterministic inputs, layout variants, expected values.

A case names an ember function, the numpy function that computes the same thing, the inputs
(shape, dtype, value range or explicit values), the result dtype ember promises and a tolerance.
Every case runs on every backend with its inputs contiguous and, where the shapes allow, in three
non-contiguous layouts; all layouts must give the same values.

Expected values: on CPython, numpy computes them in float64 (int64 for integers) from the very
inputs the test feeds ember, rounded to the case's dtype. Without numpy (MicroPython) they come
from ``tests/golden/conformance.json``, which ``tests/golden/make_golden.py`` writes from the same
numpy functions (``EMBER_CONFORMANCE_GOLDEN=1`` makes CPython use that file too, to see what
MicroPython sees). Runs on CPython and MicroPython alike: no numpy at import, no dict-order reliance.
"""
import math
import sys
from array import array

import ember
from harness import backends, check

DTYPES = {"f32": "float32", "f64": "float64", "f16": "float16", "bf16": "bfloat16",
          "i8": "int8", "u8": "uint8", "i32": "int32", "i64": "int64", "b": "bool"}
FLOATS = ("float32", "float64", "float16", "bfloat16")
INTS = ("int8", "uint8", "int32", "int64")

NAN = float("nan")
INF = float("inf")

# (rtol, atol) per result dtype. A float op whose exact result is rounded once (+ - * / sqrt) is
# compared with EXACT: equal values and equal signs of zero. SAME: equal values, zeros of any sign.
EXACT = "exact"
SAME = (0.0, 0.0)
TOLERANCE = {"float32": (1e-6, 1e-7), "float64": (1e-12, 1e-15),
             "float16": (2e-3, 1e-6), "bfloat16": (1.6e-2, 1e-6)}
COMPOSITE = {"float32": (1e-5, 1e-6), "float64": (1e-12, 1e-14),
             "float16": (4e-3, 1e-4), "bfloat16": (3.2e-2, 1e-4)}

GOLDEN_FORMAT = 1
MICROPYTHON = sys.implementation.name == "micropython"


def dtype_name(short):
    return DTYPES.get(short, short)


def shape_name(shape):
    """``(2, 3)`` -> ``"2x3"``, ``()`` -> ``"0d"``: how case names spell shapes."""
    return "x".join(str(s) for s in shape) if shape else "0d"


def numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


_inputs = {}  # base name -> reference_inputs(case)


# -- inputs -----------------------------------------------------------------------------------

class Input:
    """One tensor input: how its values are drawn (``kind`` f/i/b) or given (``values``)."""

    def __init__(self, shape, dtype, kind, lo=None, hi=None, values=None):
        self.shape = tuple(shape)
        self.dtype = dtype_name(dtype)
        self.kind = kind
        self.lo = lo
        self.hi = hi
        self.values = values
        if values is not None and len(values) != numel(self.shape):
            raise ValueError("Input: %d values for shape %s" % (len(values), self.shape))


def F(shape, dtype="f32", lo=-3.0, hi=3.0):
    """Uniform floats in [lo, hi) (24 random bits each: the same on every interpreter)."""
    return Input(shape, dtype, "f", lo, hi)


def I(shape, dtype="i64", lo=-9, hi=10):
    """Uniform ints in [lo, hi); a float ``dtype`` gives integral floats (ties for comparisons)."""
    return Input(shape, dtype, "i", lo, hi)


def B(shape):
    return Input(shape, "b", "b")


def V(values, dtype="f32", shape=None):
    """Explicit values (a flat list, nan and inf included), by default a vector."""
    return Input((len(values),) if shape is None else shape, dtype, "v", values=list(values))


def seed_of(name):
    """A 32-bit FNV-1a hash of the case name: each case's inputs stay put when others change."""
    h = 0x811C9DC5
    for ch in name:
        h = ((h ^ ord(ch)) * 0x01000193) & 0xFFFFFFFF
    return h


def raw_values(spec, seed):
    n = numel(spec.shape)
    if spec.kind == "v":
        return list(spec.values)
    g = ember.Generator(seed)
    if spec.kind == "f":
        return g.uniforms(n, spec.lo, spec.hi)
    if spec.kind == "i":
        return [g.randint(spec.lo, spec.hi) for _ in range(n)]
    return [g.randint(0, 2) == 1 for _ in range(n)]


def reference_inputs(case):
    """[(spec, flat values as the dtype holds them)]: drawn on the reference (pure Cpu) device."""
    if case.base not in _inputs:
        ref = backends.reference()
        out = []
        for i, spec in enumerate(case.inputs):
            raw = raw_values(spec, seed_of(case.base) + i)
            t = ember.tensor(raw, dtype=spec.dtype, device=ref)
            out.append((spec, flatten(t.tolist())))
        _inputs[case.base] = out
    return _inputs[case.base]


def checksum(values):
    """A fingerprint of input values: golden data is only valid for the inputs it came from."""
    total = 0.0
    nans = 0
    for i, v in enumerate(values):
        v = float(v)
        if v != v:
            nans += 1
        elif v in (INF, -INF):
            total += (i + 1) * (1e6 if v > 0 else -1e6)
        else:
            total += (i % 13 + 1) * v
    return [total, nans]


# -- layouts ----------------------------------------------------------------------------------

def flatten(v):
    if type(v) not in (list, tuple):
        return [v]
    out = []
    stack = [v]
    while stack:
        item = stack.pop()
        if type(item) in (list, tuple):
            stack.extend(reversed(item))
        else:
            out.append(item)
    return out


def reversed_dims_flat(flat, shape):
    """``flat`` (row-major in ``shape``) as the row-major contents of its dims-reversed transpose."""
    nd = len(shape)
    strides = [1] * nd
    for d in range(nd - 2, -1, -1):
        strides[d] = strides[d + 1] * shape[d + 1]
    idx = [0]
    for d in range(nd - 1, -1, -1):  # the transpose's dims, outermost first
        idx = [i + k * strides[d] for i in idx for k in range(shape[d])]
    return [flat[i] for i in idx] if numel(shape) else []


def _filler(dtype, v):
    if dtype == "bool":
        return not v
    if dtype in INTS:
        return 77
    return 999.0


def make_tensor(spec, flat, device, layout, expand_to=None):
    """A tensor on ``device`` holding ``flat`` in ``spec.shape``, stored in the given layout."""
    shape, dtype = spec.shape, spec.dtype
    if not shape:
        t = ember.tensor(flat[0], dtype=dtype, device=device)
    elif layout == "permuted" and len(shape) >= 2:
        back = tuple(range(len(shape) - 1, -1, -1))
        rev = tuple(shape[d] for d in back)
        t = ember.tensor(reversed_dims_flat(flat, shape), dtype=dtype, device=device).reshape(rev)
        t = t.permute(back)
    elif layout == "strided":
        wide = []
        for v in flat:
            wide.append(v)
            wide.append(_filler(dtype, v))
        t = ember.tensor(wide, dtype=dtype, device=device).reshape(shape[:-1] + (2 * shape[-1],))
        t = t[..., ::2]
    else:
        t = ember.tensor(flat, dtype=dtype, device=device).reshape(shape)
    if layout == "expanded" and expand_to is not None and expand_to != shape:
        t = t.expand(expand_to)
    return t


def broadcast(*shapes):
    out = ()
    for s in shapes:
        n = max(len(out), len(s))
        a = (1,) * (n - len(out)) + tuple(out)
        b = (1,) * (n - len(s)) + tuple(s)
        out = tuple(x if y == 1 else y for x, y in zip(a, b))
    return out


# -- cases ------------------------------------------------------------------------------------

class Case:
    """One op on fixed inputs, in one layout (``variant``); ``base`` names the layout-free part.

    ``fn(*tensors)`` is the ember call, ``ref(np, *arrays)`` its numpy reference, ``out`` the tuple
    of result dtypes (long names), ``multi`` whether ``fn`` returns several tensors.
    """

    def __init__(self, base, fn, ref, inputs, out, multi, tol, expand, variant="contig"):
        self.base = base
        self.name = base if variant == "contig" else base + "." + variant
        self.fn = fn
        self.ref = ref
        self.inputs = inputs
        self.out = out
        self.multi = multi
        self.tol = tol
        self.expand = expand  # None, or per input the shape the expanded variant expands it to
        self.variant = variant

    def layouts(self):
        """The layouts this case's inputs allow (``contig`` always)."""
        kinds = ["contig"]
        if any(len(s.shape) >= 2 for s in self.inputs):
            kinds.append("permuted")
        if any(len(s.shape) >= 1 for s in self.inputs):
            kinds.append("strided")
        if self.expand is not None:
            kinds.append("expanded")
        return kinds

    def in_layout(self, variant):
        return Case(self.base, self.fn, self.ref, self.inputs, self.out, self.multi, self.tol,
                    self.expand, variant)

    def __repr__(self):
        return "Case(%s)" % self.name


def case(name, fn, ref, inputs, out, tol=None, expand=None):
    """A contiguous case: ``fn(*tensors)`` against ``ref(np, *arrays)``; ``out`` is the result
    dtype (a short name like ``"f32"``, or a tuple of them when ``fn`` returns several tensors).

    ``tol``: None (by dtype), ``EXACT``, ``SAME``, ``"composite"`` or an ``(rtol, atol)`` pair.
    ``expand``: ``"auto"`` (a broadcasting op: the expanded variant expands every input to the
    common shape) or a list with a target shape (or None) per input.
    """
    outs = out if type(out) is tuple else (out,)
    inputs = list(inputs)
    return Case(name, fn, ref, inputs, tuple(dtype_name(o) for o in outs), type(out) is tuple, tol,
                _expand_targets(inputs, expand))


def _expand_targets(inputs, expand):
    if expand is None:
        return None
    if expand == "auto":
        common = broadcast(*[s.shape for s in inputs])
        targets = [common] * len(inputs)
    else:
        targets = list(expand)
    if all(t is None or tuple(t) == s.shape for t, s in zip(targets, inputs)):
        return None  # nothing would expand
    return [None if t is None else tuple(t) for t in targets]


def variants(specs):
    """Every case in its contiguous layout and in each non-contiguous layout its inputs allow."""
    cases = []
    names = set()
    for spec in specs:
        if spec.base in names:
            raise ValueError("conformance case %r is defined twice" % spec.base)
        names.add(spec.base)
        for kind in spec.layouts():
            cases.append(spec if kind == "contig" else spec.in_layout(kind))
    return cases


def tolerance(case, dtype):
    if case.tol is None:
        return TOLERANCE.get(dtype, SAME)
    if case.tol == "composite":
        return COMPOSITE.get(dtype, SAME)
    return case.tol


# -- expected values ---------------------------------------------------------------------------

_numpy = []
_expected = {}
_golden = {}


def numpy_module():
    """numpy, or None where it cannot be imported (MicroPython) or golden data is forced."""
    if not _numpy:
        np = None
        try:
            import os
            forced = os.environ.get("EMBER_CONFORMANCE_GOLDEN", "") not in ("", "0")
        except (ImportError, AttributeError):
            forced = False
        if not forced:
            try:
                import numpy as np
            except ImportError:
                np = None
        _numpy.append(np)
    return _numpy[0]


def _bf16_round(np, a32):
    bits = a32.view(np.uint32).astype(np.uint64)
    nan = np.isnan(a32)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    out = (rounded & 0xFFFFFFFF).astype(np.uint32).view(np.float32)
    return np.where(nan, np.float32(np.nan), out)


def round_numpy(np, value, dtype):
    """A numpy result as flat Python values of ember ``dtype`` (floats rounded, ints wrapped)."""
    a = np.asarray(value)
    if dtype == "bool":
        return a.astype(bool), [bool(v) for v in a.astype(bool).reshape(-1).tolist()]
    if dtype in INTS:
        a = a.astype(np.int64).astype({"int8": np.int8, "uint8": np.uint8, "int32": np.int32, "int64": np.int64}[dtype])
        return a, [int(v) for v in a.reshape(-1).tolist()]
    a = a.astype(np.float64)
    if dtype != "float64":
        a32 = a.astype(np.float32)
        if dtype == "float16":
            a32 = a32.astype(np.float16).astype(np.float32)
        elif dtype == "bfloat16":
            a32 = _bf16_round(np, a32)
        a = a32.astype(np.float64)
    return a, [float(v) for v in a.reshape(-1).tolist()]


def numpy_inputs(np, pairs):
    arrays = []
    for spec, flat in pairs:
        if spec.dtype == "bool":
            arr = np.array(flat, dtype=bool)
        elif spec.dtype in INTS:
            arr = np.array(flat, dtype=np.int64)
        else:
            arr = np.array(flat, dtype=np.float64)
        arrays.append(arr.reshape(spec.shape))
    return arrays


def numpy_expected(np, case, pairs):
    """[(shape, flat values)] per output, from ``case.ref`` in float64/int64."""
    import warnings

    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # "mean of empty slice": nan is expected
        result = case.ref(np, *numpy_inputs(np, pairs))
        results = list(result) if case.multi else [result]
        if len(results) != len(case.out):
            raise AssertionError("%s: numpy reference gave %d results, the case declares %d"
                                 % (case.base, len(results), len(case.out)))
        out = []
        for value, dtype in zip(results, case.out):
            a, flat = round_numpy(np, value, dtype)
            out.append((tuple(a.shape), flat))
    return out


def golden_path():
    here = __file__.replace("\\", "/")
    folder = here.rsplit("/", 1)[0] if "/" in here else "."
    return folder + "/../golden/conformance.json"


def golden_cases():
    if not _golden:
        import json
        with open(golden_path()) as f:
            data = json.load(f)
        if data.get("format") != GOLDEN_FORMAT:
            raise AssertionError("golden file %s has format %r, expected %d"
                                 % (golden_path(), data.get("format"), GOLDEN_FORMAT))
        _golden["cases"] = data["cases"]
    return _golden["cases"]


def decode(value, dtype):
    """A golden JSON value as the Python value ember's ``dtype`` holds."""
    if type(value) is str:
        value = {"nan": NAN, "inf": INF, "-inf": -INF}[value]
    if dtype in FLOATS:
        value = float(value)
        if dtype != "float64":
            # the file holds the shortest text of the float32 value: rounding makes it exact again
            value = array("f", (value,))[0]
    return value


def golden_expected(case, pairs):
    cases = golden_cases()
    entry = cases.get(case.base)
    if entry is None:
        raise AssertionError("%s: no golden data; run tests/golden/make_golden.py on CPython" % case.base)
    sums = [checksum(flat) for _, flat in pairs]
    for i, (have, want) in enumerate(zip(sums, entry["inputs"])):
        if have[1] != want[1] or abs(have[0] - want[0]) > 1e-9 * (1 + abs(want[0])):
            raise AssertionError("%s: input %d differs from the one the golden data was made from "
                                 "(checksum %r, golden %r): the generator or the case changed"
                                 % (case.base, i, have, want))
    outs = entry["outputs"]
    if [o["dtype"] for o in outs] != list(case.out) or len(entry["inputs"]) != len(pairs):
        raise AssertionError("%s: golden data is stale (dtypes %s, case says %s); rerun make_golden.py"
                             % (case.base, [o["dtype"] for o in outs], list(case.out)))
    return [(tuple(o["shape"]), [decode(v, o["dtype"]) for v in o["values"]]) for o in outs]


def expected(case, pairs):
    """[(shape, flat values)] per output, computed once per base case."""
    if case.base not in _expected:
        np = numpy_module()
        if np is not None:
            _expected[case.base] = numpy_expected(np, case, pairs)
        else:
            _expected[case.base] = golden_expected(case, pairs)
    return _expected[case.base]


# -- running a case -----------------------------------------------------------------------------

_PYTYPE = {"bool": bool, "int8": int, "uint8": int, "int32": int, "int64": int}


def compare(actual, dtype, want_shape, want, tol, what):
    if not isinstance(actual, ember.Tensor):
        raise AssertionError("%s: expected a Tensor, found %s" % (what, type(actual).__name__))
    if actual.dtype.name != dtype:
        raise AssertionError("%s: dtype %s, expected %s" % (what, actual.dtype.name, dtype))
    if tuple(actual.shape) != want_shape:
        raise AssertionError("%s: shape %s, expected %s" % (what, tuple(actual.shape), want_shape))
    got = flatten(actual.tolist())
    if len(got) != len(want):
        raise AssertionError("%s: %d values from tolist(), expected %d" % (what, len(got), len(want)))
    pytype = _PYTYPE.get(dtype, float)
    for i, v in enumerate(got):
        if type(v) is not pytype:
            raise AssertionError("%s: tolist() value %d is a %s, expected %s"
                                 % (what, i, type(v).__name__, pytype.__name__))
    if pytype is not float:
        for i, (a, b) in enumerate(zip(got, want)):
            if a != b:
                bad = sum(1 for x, y in zip(got, want) if x != y)
                raise AssertionError("%s: %d of %d values differ; first at flat index %d: %r != expected %r"
                                     % (what, bad, len(want), i, a, b))
        return
    rtol, atol = (0.0, 0.0) if tol == EXACT else tol
    check.assert_close(got, want, rtol=rtol, atol=atol, msg=what)
    if tol == EXACT:
        for i, (a, b) in enumerate(zip(got, want)):
            if a == 0 and b == 0 and math.copysign(1.0, a) != math.copysign(1.0, b):
                raise AssertionError("%s: sign of zero differs at flat index %d: %r != expected %r"
                                     % (what, i, a, b))


def run(device, case):
    """Build the case's inputs on ``device`` in its layout, run it, compare with the expectation."""
    pairs = reference_inputs(case)
    want = expected(case, pairs)
    tensors = []
    for i, (spec, flat) in enumerate(pairs):
        target = case.expand[i] if case.expand is not None else None
        tensors.append(make_tensor(spec, flat, device, case.variant, target))
    result = case.fn(*tensors)
    results = list(result) if case.multi else [result]
    if len(results) != len(want):
        raise AssertionError("%s: %d results, expected %d" % (case.name, len(results), len(want)))
    for k, (r, dtype, (shape, values)) in enumerate(zip(results, case.out, want)):
        what = case.name if len(want) == 1 else "%s (result %d)" % (case.name, k)
        compare(r, dtype, shape, values, tolerance(case, dtype), what)
