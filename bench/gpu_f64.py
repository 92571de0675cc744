"""How exact a Wgpu adapter's float64 is where ember relies on it: division, ``fma``, and the
argument reduction of ``sin``/``cos``/``tan``, beside Python's correctly rounded values (a
diagnostic: counts and errors, not a speed).

    python bench/gpu_f64.py [--n N]

Division: how many of N random quotients (and reciprocals) differ from the correctly rounded ones
and by how many ulps at most, for ember's float64 and float32 ``/`` and for four raw-WGSL routes
(plain, and three refined from the reciprocal by ``fma``); ``f64_fma_fused``: whether ``fma``
rounds once. Trig: for a few arguments, the reduced argument r of ``wgsl_lib``'s ``trig_reduce``
against r computed in 80-digit decimal, ``sin``, ``cos``, ``tan`` and their relative errors, and the
same steps behind opaque barriers (``r_barrier``, ``tan_barrier``). On the H200 (runs 18, 19 in
``results/``) division was exact, ``fma`` rounded twice, and only the barriers of a storage load made
the float reduction exact; ember now reduces in integers (run 21: r exact).
The last line is one JSON object.
"""
import argparse
import json
import math
import random
import struct
import sys



def _ulps(got, want):
    if got == want or (math.isnan(got) and math.isnan(want)):
        return 0.0
    if math.isinf(want) or math.isinf(got) or want == 0.0:
        return float("inf")
    return abs(got - want) / math.ulp(want)


def _f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def measure(n=1 << 18, seed=0):
    import ember
    from ember.accel import Wgpu
    dev = Wgpu()
    rng = random.Random(seed)

    def draw():
        return math.ldexp(rng.uniform(1.0, 2.0), rng.randint(-60, 60)) * rng.choice((1, -1))
    a = [draw() for _ in range(n)]
    b = [draw() for _ in range(n)]
    a32 = [_f32(v) for v in a]
    b32 = [_f32(v) for v in b]
    a[0], b[0] = 0.2533806916318404, -0.013110491813386245  # tan(123456.789)'s sin and cos, near
    ta = ember.tensor(a, dtype=ember.float64, device=dev)
    tb = ember.tensor(b, dtype=ember.float64, device=dev)
    out = {"adapter": dev.rt.label, "n": n}
    want = [x / y for x, y in zip(a, b)]
    got = (ta / tb).tolist()
    errs = [_ulps(g, w) for g, w in zip(got, want)]
    out["div_f64_mismatches"] = sum(e > 0 for e in errs)
    out["div_f64_max_ulps"] = max(errs)
    got = (1.0 / tb).tolist()
    errs = [_ulps(g, 1.0 / y) for g, y in zip(got, b)]
    out["recip_f64_mismatches"] = sum(e > 0 for e in errs)
    out["recip_f64_max_ulps"] = max(errs)
    t32a = ember.tensor(a32, dtype=ember.float32, device=dev)
    t32b = ember.tensor(b32, dtype=ember.float32, device=dev)
    got = (t32a / t32b).tolist()
    want32 = [_f32(x / y) for x, y in zip(a32, b32)]
    errs = [_ulps(g, w) for g, w in zip(got, want32)]
    out["div_f32_mismatches"] = sum(e > 0 for e in errs)
    out["div_f32_max_ulps"] = max(errs)
    x = ember.tensor([123456.789], dtype=ember.float64, device=dev)
    out["tan_123456.789_rel_err"] = abs(x.tan().item() - math.tan(123456.789)) / abs(math.tan(123456.789))
    out.update(_formulas(dev.rt.device, a, b))
    out.update(_trig(dev.rt.device))
    return out


# candidate routes, each ``fn q(a, b) -> f64``; the probe runs them as raw WGSL
_FORMULAS = {
    "plain": "return a / b;",
    "one_correction": """let y = 1.0lf / b; let q = a * y;
  if (!fin(q) || q == 0.0lf) { return a / b; }
  return fma(fma(-q, b, a), y, q);""",
    "newton2_correction": """var y = 1.0lf / b;
  y = fma(fma(-b, y, 1.0lf), y, y); y = fma(fma(-b, y, 1.0lf), y, y);
  let q = a * y;
  if (!fin(q) || q == 0.0lf || !fin(y)) { return a / b; }
  return fma(fma(-q, b, a), y, q);""",
    "plain_correction": """let q = a / b;
  if (!fin(q) || q == 0.0lf) { return q; }
  var y = 1.0lf / b; y = fma(fma(-b, y, 1.0lf), y, y);
  return fma(fma(-q, b, a), y, q);""",
}


def _formulas(device, a, b):
    """{route_mismatches, route_max_ulps} of each of _FORMULAS, and f64_fma_fused."""
    import wgpu
    n = len(a)
    names = sorted(_FORMULAS)
    src = ["@group(0) @binding(0) var<storage, read> A: array<f64>;",
           "@group(0) @binding(1) var<storage, read> B: array<f64>;",
           "@group(0) @binding(2) var<storage, read_write> O: array<f64>;",
           "fn fin(x: f64) -> bool { return abs(x) <= 1.7976931348623157e308lf; }"]
    for k, name in enumerate(names):
        src.append("fn q%d(a: f64, b: f64) -> f64 {\n  %s\n}" % (k, _FORMULAS[name]))
    src.append("@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) {")
    src.append("  let i = g.x; let n = arrayLength(&A); if (i >= n) { return; }")
    for k in range(len(names)):
        src.append("  O[%d * n + i] = q%d(A[i], B[i]);" % (k, k))
    # fma(x, x, -y) with x = 1 + 2^-27, y = 1 + 2^-26: 2^-54 when fused, 0 when rounded twice
    src.append("  if (i == 0u) { O[%d * n] = fma(A[0] * 0.0lf + 1.0000000074505806lf, 1.0000000074505806lf, "
               "-(B[0] * 0.0lf + 1.0000000149011612lf)); }" % len(names))
    src.append("}")
    mod = device.create_shader_module(code="\n".join(src))
    pipe = device.create_compute_pipeline(layout="auto", compute={"module": mod, "entry_point": "main"})
    pack = lambda v: struct.pack("<%dd" % len(v), *v)
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    ba = device.create_buffer_with_data(data=pack(a), usage=usage)
    bb = device.create_buffer_with_data(data=pack(b), usage=usage)
    bo = device.create_buffer(size=8 * (n * len(names) + n), usage=usage)
    bg = device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": buf, "offset": 0, "size": buf.size}} for i, buf in enumerate((ba, bb, bo))])
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipe)
    cp.set_bind_group(0, bg)
    cp.dispatch_workgroups((n + 63) // 64)
    cp.end()
    device.queue.submit([enc.finish()])
    raw = device.queue.read_buffer(bo)
    vals = struct.unpack("<%dd" % (n * len(names) + n), raw)
    want = [x / y for x, y in zip(a, b)]
    out = {}
    for k, name in enumerate(names):
        errs = [_ulps(g, w) for g, w in zip(vals[k * n:(k + 1) * n], want)]
        out["route_%s_mismatches" % name] = sum(e > 0 for e in errs)
        out["route_%s_max_ulps" % name] = max(errs)
    out["f64_fma_fused"] = vals[len(names) * n] == 2.0 ** -54
    return out


_PI = "3.14159265358979323846264338327950288419716939937510582097494459230781640628620899862803"


def _trig(device):
    """Where tan's error comes from: the reduced argument r and the quotient, beside sin and cos."""
    import decimal
    import wgpu
    from ember.accel.wgpu import wgsl_lib
    xs = [123456.789, 1e5 + 0.5, 3.0, 100.0, 7.5e5]
    decimal.getcontext().prec = 80
    src = ["@group(0) @binding(0) var<storage, read> b0: array<f64>;",
           "@group(0) @binding(1) var<storage, read_write> O: array<f64>;", wgsl_lib.lib(["m_trig"]),
           "@compute @workgroup_size(64)\nfn main(@builtin(global_invocation_id) g: vec3<u32>) {",
           "  let i = g.x; let n = arrayLength(&b0); if (i >= n) { return; } let x = b0[i];",
           "  let rq = trig_reduce(x);",
           "  O[i] = rq.x; O[n + i] = m_sin(x); O[2u * n + i] = m_cos(x); O[3u * n + i] = m_tan(x);",
           "  O[4u * n + i] = m_sin(x) / m_cos(x);",
           "  let s = sin_kernel(rq.x); let c = cos_kernel(rq.x); O[5u * n + i] = s; O[6u * n + i] = c;",
           "  O[7u * n + i] = select(s / c, -c / s, (i32(rq.y) & 1) == 1);",
           # the same with each step behind a barrier the compiler cannot see through (an xor with
           # a word read from memory that is 0): no reassociation or contraction across it
           "  let z = bitcast<u64>(b0[n - 1u]);",
           "  let k = round(x * 0.6366197723675814lf);",
           "  let r1 = bitcast<f64>(bitcast<u64>(x - bitcast<f64>(bitcast<u64>(k * 1.5707963267341256lf) ^ z)) ^ z);",
           "  let r2 = bitcast<f64>(bitcast<u64>(r1 - bitcast<f64>(bitcast<u64>(k * 6.077100506303966e-11lf) ^ z)) ^ z);",
           "  let r3 = bitcast<f64>(bitcast<u64>(r2 - bitcast<f64>(bitcast<u64>(k * 2.0222662487111665e-21lf) ^ z)) ^ z);",
           "  O[8u * n + i] = r3;",
           "  let sb = sin_kernel(r3); let cb = cos_kernel(r3);",
           "  O[9u * n + i] = select(sb / cb, -cb / sb, (i32(k - 4.0lf * floor(k * 0.25lf)) & 1) == 1);",
           "  let rb = bitcast<f64>(bitcast<u64>(rq.x) ^ z);",
           "  let sr = sin_kernel(rb); let cr = cos_kernel(rb);",
           "  O[10u * n + i] = select(sr / cr, -cr / sr, (i32(rq.y) & 1) == 1);",
           "}"]
    mod = device.create_shader_module(code="\n".join(src))
    pipe = device.create_compute_pipeline(layout="auto", compute={"module": mod, "entry_point": "main"})
    usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC
    n = len(xs) + 1  # the last is 0.0, the barriers' word
    bx = device.create_buffer_with_data(data=struct.pack("<%dd" % n, *(xs + [0.0])), usage=usage)
    bo = device.create_buffer(size=8 * 11 * n, usage=usage)
    bg = device.create_bind_group(layout=pipe.get_bind_group_layout(0), entries=[
        {"binding": i, "resource": {"buffer": buf, "offset": 0, "size": buf.size}} for i, buf in enumerate((bx, bo))])
    enc = device.create_command_encoder()
    cp = enc.begin_compute_pass()
    cp.set_pipeline(pipe)
    cp.set_bind_group(0, bg)
    cp.dispatch_workgroups(1)
    cp.end()
    device.queue.submit([enc.finish()])
    v = struct.unpack("<%dd" % (11 * n), device.queue.read_buffer(bo))
    half_pi = decimal.Decimal(_PI) / 2
    out = {}
    names = ["r", "sin", "cos", "tan", "sin_over_cos", "sin_kernel", "cos_kernel", "tan_inline",
             "r_barrier", "tan_barrier", "tan_barrier_r"]
    for i, x in enumerate(xs):
        k = (decimal.Decimal(x) / half_pi).to_integral_value(decimal.ROUND_HALF_EVEN)
        r = float(decimal.Decimal(x) - k * half_pi)
        row = {nm: v[j * n + i] for j, nm in enumerate(names)}
        row["r_err"] = row["r"] - r
        row["r_barrier_err"] = row["r_barrier"] - r
        for nm, fn in (("sin", math.sin), ("cos", math.cos), ("tan", math.tan), ("sin_over_cos", math.tan),
                       ("tan_inline", math.tan), ("tan_barrier", math.tan), ("tan_barrier_r", math.tan)):
            row[nm + "_rel_err"] = abs(row[nm] - fn(x)) / abs(fn(x))
        out["trig_%r" % x] = row
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=1 << 18)
    out = measure(p.parse_args().n)
    for k, v in out.items():
        print("%s: %s" % (k, v))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
