"""A custom op from tensor ops: GELU written by hand, beside ember's built-in ``F.gelu``.

GELU(x) = x * Phi(x), where Phi is the normal CDF: x * (erf(x / sqrt(2)) + 1) / 2.
PyTorch's tanh approximation replaces erf with tanh(sqrt(2/pi) * (x + 0.044715 x^3)).
Then it registers the hand-written version as the Cpu backend's GELU (the override hook that
lets a backend, or a user, swap in a faster kernel for any composite op).

On CPython the last part runs ``my_gelu`` through ``ember.accel.Fusion``: the five ops become one
generated kernel. It prints that kernel's source and times it beside the same ops run unfused.

Runs unchanged on CPython and on MicroPython (which skips the fusion part: ember.accel is CPython's).
"""
import math
import sys

import ember
import ember.nn.functional as F


def my_gelu(x):
    """Exact GELU from tensor ops."""
    return x * ((x / math.sqrt(2)).erf() + 1) / 2


def my_gelu_tanh(x):
    """PyTorch's tanh approximation of GELU."""
    inner = (x + x * x * x * 0.044715) * math.sqrt(2 / math.pi)
    return x * (inner.tanh() + 1) / 2


def max_abs_diff(a, b):
    return (a - b).abs().max().item()


x = ember.arange(-3.0, 3.01, 0.5)  # 13 float32 values from -3 to 3
mine = my_gelu(x)
builtin = F.gelu(x)
mine_tanh = my_gelu_tanh(x)
builtin_tanh = F.gelu(x, approximate="tanh")

print("GELU on %d points (float32, %s)" % (x.numel(), x.device))
print()
print("%6s  %11s  %11s  %11s" % ("x", "my_gelu", "F.gelu", "tanh approx"))
for xi, a, b, c in zip(x.tolist(), mine.tolist(), builtin.tolist(), builtin_tanh.tolist()):
    print("%6.2f  %11.6f  %11.6f  %11.6f" % (xi, a, b, c))
print()

d_exact = max_abs_diff(mine, builtin)
d_tanh = max_abs_diff(mine_tanh, builtin_tanh)
d_approx = max_abs_diff(builtin, builtin_tanh)
print("max |my_gelu - F.gelu|                          = %.3g" % d_exact)
print("max |my_gelu_tanh - F.gelu(approximate='tanh')| = %.3g" % d_tanh)
print("max |exact - tanh approximation|                = %.3g  (the approximation's own error)" % d_approx)
reference = [v * (math.erf(v / math.sqrt(2)) + 1) / 2 for v in x.tolist()]  # Python floats (double)
d_ref = max(abs(a - b) for a, b in zip(builtin.tolist(), reference))
print("max |F.gelu - math.erf in double precision|     = %.3g  (float32 rounding)" % d_ref)

# The hand-written versions, the built-ins and the double-precision reference agree to float32 rounding.
assert d_exact < 1e-6 and d_tanh < 1e-6 and d_ref < 1e-6, (d_exact, d_tanh, d_ref)

# The override hook: from now on F.gelu on Cpu tensors runs my_gelu.
calls = []


def counted_gelu(x, approximate="none"):
    calls.append(approximate)
    return my_gelu(x) if approximate == "none" else my_gelu_tanh(x)


ember.Cpu.override("gelu", counted_gelu)
y = F.gelu(x)
ember.Cpu.override("gelu", None)  # restore the built-in composite
print()
print("with Cpu.override('gelu', ...): F.gelu ran the custom op %d time(s), max diff %.3g"
      % (len(calls), max_abs_diff(y, builtin)))
assert len(calls) == 1


def fused_demo():
    import time

    from ember.accel import Fusion
    from ember.accel.fusion import explain

    dev = ember.Cpu()
    fused = Fusion(dev)
    n = 1 << 20
    ember.seed(0)
    xs = ember.randn(n, device=dev)
    xf = xs.to(fused)
    print()
    print("my_gelu through Fusion(%r):" % dev)
    explain(my_gelu, ember.randn(8, device=fused))

    def best(fn, reps=7):
        times = []
        for _ in range(reps):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
        return sorted(times)[len(times) // 2]
    unfused = best(lambda: my_gelu(xs))
    one_kernel = best(lambda: (my_gelu(xf), fused.synchronize()))
    diff = max_abs_diff(my_gelu(xf).to(dev), my_gelu(xs))
    print("over %d floats: unfused (5 kernels) %.2f ms, fused (1 kernel) %.2f ms, %.1fx; max diff %.3g"
          % (n, unfused * 1e3, one_kernel * 1e3, unfused / one_kernel, diff))
    assert diff < 1e-6


if sys.implementation.name != "micropython":
    fused_demo()
print("ok")
