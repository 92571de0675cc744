"""Scalar kernels with IEEE semantics: where Python's math raises, these return inf, -inf or nan.

Each op has a fast form (a plain function ``map`` can apply) and, where the fast form can raise on
special values, a safe form used only when the fast pass failed.
"""
import math

INF = float("inf")
NAN = float("nan")


try:  # CPython's operator functions are the fastest map arguments; stock MicroPython ports have no
    # operator module at all, and the wasm port's lacks add/mul/...
    import operator as _OPERATOR
except ImportError:
    _OPERATOR = None


def _binop(sym):
    fn = getattr(_OPERATOR, sym, None)
    if fn is not None:
        return fn
    return {
        "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b,
        "truediv": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
        "eq": lambda a, b: a == b, "ne": lambda a, b: a != b, "lt": lambda a, b: a < b,
        "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
        "and_": lambda a, b: a & b, "or_": lambda a, b: a | b, "xor": lambda a, b: a ^ b,
        "neg": lambda a: -a,
    }[sym]


# Where ``operator`` lacks add/mul (MicroPython), ``map`` would call a lambda per element; an
# inline comprehension is about 2.5x faster there. None on CPython, where map(operator.add) wins.
def _inline_kernels():
    if hasattr(_OPERATOR, "add"):
        return None
    return {
        "add": lambda a, b: [x + y for x, y in zip(a, b)],
        "sub": lambda a, b: [x - y for x, y in zip(a, b)],
        "mul": lambda a, b: [x * y for x, y in zip(a, b)],
        "div": lambda a, b: [x / y for x, y in zip(a, b)],
    }


INLINE = _inline_kernels()

add = _binop("add")
sub = _binop("sub")
mul = _binop("mul")
truediv = _binop("truediv")
neg = _binop("neg")


def safe_exp(x):
    try:
        return math.exp(x)
    except (OverflowError, ValueError):
        return INF if x > 0 else 0.0


def safe_log(x):
    if x > 0 or x != x:
        return math.log(x)
    return -INF if x == 0 else NAN


def safe_sqrt(x):
    return math.sqrt(x) if x >= 0 or x != x else NAN


def safe_trig(fn):
    def f(x):
        try:
            return fn(x)
        except ValueError:
            return NAN  # sin/cos of +-inf
    return f


def sigmoid(x):
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    try:
        e = math.exp(x)
    except (OverflowError, ValueError):
        return 0.0
    return e / (1.0 + e)


def safe_sigmoid(x):
    if x != x:
        return x
    if x >= 0:
        return 1.0 / (1.0 + safe_exp(-x))
    e = safe_exp(x)
    return e / (1.0 + e)


def safe_expm1(x):
    try:
        return special("expm1")(x)
    except (OverflowError, ValueError):
        return INF if x > 0 else -1.0


if hasattr(math, "log1p"):
    _log1p = math.log1p
else:
    def _log1p(x):
        # log(1 + x) without losing the digits of a small x
        u = 1.0 + x
        if u == 1.0:
            return x
        return math.log(u) * x / (u - 1.0)


def safe_log1p(x):
    if x > -1.0 or x != x:
        return INF if x == INF else _log1p(x)
    return -INF if x == -1.0 else NAN


def _rounding(fn):
    def f(x):
        if x != x or x == INF or x == -INF:
            return x
        r = float(fn(x))
        return math.copysign(0.0, x) if r == 0 else r  # ceil(-0.3) is -0.0, as IEEE says
    return f


def round_half_even(x):
    return round(x)  # Python rounds half to even, as torch and numpy do


def sign(x):
    if x != x:
        return x
    return (x > 0) - (x < 0)


def fsign(x):
    if x != x:
        return x
    return float((x > 0) - (x < 0))


def reciprocal(x):
    return 1.0 / x


def safe_div(a, b):
    try:
        return a / b
    except ZeroDivisionError:
        if a != a or a == 0:
            return NAN
        return INF if (a > 0) == (math.copysign(1.0, b) > 0) else -INF


def safe_reciprocal(x):
    return safe_div(1.0, x)


def fpow(a, b):
    return math.pow(a, b)


def safe_fpow(a, b):
    try:
        return math.pow(a, b)
    except OverflowError:
        return INF if a > 0 or float(b) % 2.0 == 0.0 else -INF
    except (ValueError, ZeroDivisionError):
        if a == 0:
            # 0 ** negative: +inf, or -inf for -0 ** odd integer
            odd = b == int(b) and int(b) % 2 == 1 if b == b and b not in (INF, -INF) else False
            return -INF if odd and math.copysign(1.0, a) < 0 else INF
        if a > 0 or (b == b and b not in (INF, -INF) and b == int(b)):
            # no domain error: MicroPython's math.pow reports an overflow (2.0 ** 1e20) as one
            mag = 1.0 if abs(a) == 1 else INF if (abs(a) > 1) == (b > 0) else 0.0
            return -mag if a < 0 and int(b) % 2 == 1 else mag
        return NAN  # negative base, fractional exponent


def ipow(bits):
    # integer power, wrapped as the dtype holds it; exponents below zero truncate like C (1/a**n)
    m = 1 << bits

    def f(a, b):
        if b == 0:
            return 1  # MicroPython's pow(0, 0, m) gives 0
        if b < 0:
            if a == 1:
                return 1
            if a == -1:
                return -1 if b % 2 else 1
            return 0
        return pow(a, b, m)
    return f


def ffloordiv(a, b):
    # Python's float // and % follow the same rules as numpy (and torch) for every b != 0
    return a // b


def safe_ffloordiv(a, b):
    return safe_div(a, b) if b == 0 else a // b


def fmod(a, b):
    # the sign follows the divisor, as Python, torch.remainder and numpy do
    return a % b


def safe_fmod(a, b):
    return NAN if b == 0 else a % b


def ifloordiv(a, b):
    return a // b


def safe_ifloordiv(a, b):
    return a // b if b else 0


def imod(a, b):
    return a % b


def safe_imod(a, b):
    return a % b if b else 0


def maximum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a >= b else b


def minimum(a, b):
    if a != a:
        return a
    if b != b:
        return b
    return a if a <= b else b


def isnan(x):
    return x != x


def isinf(x):
    return x == INF or x == -INF


def logical_not(x):
    return not x


def safe_domain(fn):
    # asin/acos outside [-1, 1], tan of inf: nan
    def f(x):
        try:
            return fn(x)
        except ValueError:
            return NAN
    return f


def safe_hyperbolic(fn, odd):
    def f(x):
        try:
            return fn(x)
        except (OverflowError, ValueError):
            return -INF if odd and x < 0 else INF
    return f


def rsqrt(x):
    return 1.0 / math.sqrt(x)


def safe_rsqrt(x):
    if x != x or x < 0:
        return NAN
    if x == 0:
        return math.copysign(INF, x)
    return 1.0 / math.sqrt(x)


def bitwise_not(x):
    return ~x


def lshift(a, b):
    return a << b if 0 <= b < 64 else 0


def rshift(a, b):
    if 0 <= b < 64:
        return a >> b
    return -1 if a < 0 else 0


# -- math's special functions, for ports built without them -----------------------------------------
# MicroPython gates tanh, sinh, cosh, erf and expm1 behind MICROPY_PY_MATH_SPECIAL_FUNCTIONS (on at
# EXTRA_FEATURES only): a BASIC_FEATURES board (samd21) has exp but not these. The formulas below
# serve there; they are as exact as the board's single-precision floats need.

def _tanh(x):
    if x != x:
        return x
    if abs(x) > 20.0:
        return 1.0 if x > 0 else -1.0
    if abs(x) < 1e-4:
        return x - x * x * x / 3.0
    e = math.exp(2.0 * x)
    return (e - 1.0) / (e + 1.0)


def _sinh(x):
    if abs(x) < 1e-4:
        return x + x * x * x / 6.0
    return (math.exp(x) - math.exp(-x)) / 2.0


def _cosh(x):
    return (math.exp(x) + math.exp(-x)) / 2.0


def _expm1(x):
    if abs(x) < 1e-5:
        return x + x * x / 2.0 + x * x * x / 6.0
    return math.exp(x) - 1.0


def _erf(x):
    # Abramowitz and Stegun 7.1.26: absolute error below 1.5e-7
    if x != x:
        return x
    t = 1.0 / (1.0 + 0.3275911 * abs(x))
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * math.exp(-x * x)
    return y if x >= 0 else -y


FALLBACKS = {"tanh": _tanh, "sinh": _sinh, "cosh": _cosh, "expm1": _expm1, "erf": _erf}


def special(name):
    """``math.<name>``, or its formula here on a port without math's special functions."""
    return getattr(math, name, None) or FALLBACKS[name]
