"""The Wgpu device's ``random`` primitive, in one of two modes (``Wgpu(random=...)``).

``"stream"`` (the default): the values of every Cpu device, ember's Generator stream, drawn on the
host (by the C kernels where they load) and uploaded: conformance holds, a seed gives the same
tensor on every device.

``"philox"``: drawn on the GPU by Philox4x32-10, a counter-based generator (Salmon et al., "Parallel
random numbers: as easy as 1, 2, 3", SC 2011); nothing crosses from the host but the key. Thread
``t`` of a dispatch encrypts the counter (t, 0, 0, 0) under a 64-bit key into four 32-bit words. The
key is two words drawn from the host ``Generator`` (``dispatch_key``), so a seed still fixes every
value and the host stream advances by exactly two words per call, whatever the size. This is NOT
the stream of the Cpu and NumPy devices (docs/architecture.md §4): the same seed gives other values.
From each thread's four words:

- uniform (low, high): four floats ``low + u * (high - low)`` in float32, ``u = (w >> 8) * 2^-24``;
- normal (mean, std): two Box-Muller pairs in float32 (``u1 = ((w >> 8) + 1) * 2^-24`` in (0, 1]);
- bernoulli (p,): four draws, True where ``w >> 8 < ceil(p * 2^24)`` (the host's ``u < p`` exactly);
- randint (low, high): two ints ``low + floor(x * span / 2^64)`` of the 64-bit word pair ``x``
  (bias below span / 2^64, no rejection loop).

Values are computed in float32 and stored in the output's type (float64 outputs hold float32
values). Where the kernel does not serve a case (bfloat16; float16 without the shader-f16
feature; randint beyond int32 values, spans of 2^32, or to bool), the stream mode draws instead.
"""
import struct

from ember import dtypes
from ember.backends.cpu.device import Cpu

from . import codegen

M32 = 0xFFFFFFFF
_I32_LO, _I32_HI = -(1 << 31), (1 << 31) - 1
_PER_THREAD = {"uniform": 4, "normal": 4, "bernoulli": 4, "randint": 2}

PHILOX = """
const PHILOX_M0: u32 = 0xD2511F53u;
const PHILOX_M1: u32 = 0xCD9E8D57u;
fn mulhi(a: u32, b: u32) -> u32 {
  let a0 = a & 0xffffu; let a1 = a >> 16u; let b0 = b & 0xffffu; let b1 = b >> 16u;
  let t = a1 * b0 + ((a0 * b0) >> 16u);
  let w = a0 * b1 + (t & 0xffffu);
  return a1 * b1 + (t >> 16u) + (w >> 16u);
}
fn philox(counter: vec4<u32>, key: vec2<u32>) -> vec4<u32> {
  var c = counter;
  var k = key;
  for (var r = 0u; r < 10u; r = r + 1u) {
    let hi0 = mulhi(PHILOX_M0, c.x); let lo0 = PHILOX_M0 * c.x;
    let hi1 = mulhi(PHILOX_M1, c.z); let lo1 = PHILOX_M1 * c.z;
    c = vec4<u32>(hi1 ^ c.y ^ k.x, lo1, hi0 ^ c.w ^ k.y, lo0);
    k = k + vec2<u32>(0x9E3779B9u, 0xBB67AE85u);
  }
  return c;
}
"""

# per kind: (compute type, WGSL filling ``v`` from the words ``w``); parameters in words 50-51
_BODIES = {
    "uniform": ("f32", "  let lo = bitcast<f32>(pw(50u)); let span = bitcast<f32>(pw(51u));\n"
                       "  for (var j = 0u; j < 4u; j = j + 1u) {\n"
                       "    v[j] = lo + f32(w[j] >> 8u) * 5.9604644775390625e-08 * span;\n  }\n"),
    "normal": ("f32", "  let mean = bitcast<f32>(pw(50u)); let sd = bitcast<f32>(pw(51u));\n"
                      "  for (var j = 0u; j < 4u; j = j + 2u) {\n"
                      "    let u1 = f32((w[j] >> 8u) + 1u) * 5.9604644775390625e-08;\n"
                      "    let a = f32(w[j + 1u] >> 8u) * 5.9604644775390625e-08 * 6.2831853 - 3.1415927;\n"
                      "    let r = sqrt(-2.0 * log(u1));\n"
                      "    v[j] = mean - sd * r * cos(a); v[j + 1u] = mean - sd * r * sin(a);\n  }\n"),
    "bernoulli": ("i32", "  for (var j = 0u; j < 4u; j = j + 1u) { v[j] = select(0, 1, (w[j] >> 8u) < pw(50u)); }\n"),
    # floor(x * span / 2^64) for x = w0 * 2^32 + w1: the high word of the 96-bit product
    "randint": ("i32", "  let lo = bitcast<i32>(pw(50u)); let span = pw(51u);\n"
                       "  for (var j = 0u; j < 2u; j = j + 1u) {\n"
                       "    let a = w[2u * j]; let b = w[2u * j + 1u];\n"
                       "    let mid = a * span; let carry = select(0u, 1u, mid + mulhi(b, span) < mid);\n"
                       "    v[j] = lo + bitcast<i32>(mulhi(a, span) + carry);\n  }\n"),
}


def dispatch_key(generator):
    """The two key words of one dispatch, drawn from ``generator``: the host stream advances by
    exactly these two words per ``random`` call (a replay re-evaluates this function)."""
    return generator.next_u32(), generator.next_u32()


def _f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def _param_words(kind, params):
    if kind == "uniform":
        lo, hi = params
        return _f32_bits(lo), _f32_bits(hi - lo)
    if kind == "normal":
        return _f32_bits(params[0]), _f32_bits(params[1])
    if kind == "bernoulli":
        p = params[0]
        k = int(p * 16777216.0)
        return (k + 1 if k < p * 16777216.0 else k), 0  # ceil(p * 2^24): the count of 24-bit u below p
    lo, hi = params
    return lo & M32, (hi - lo) & M32


def serves(dev, kind, dtype, params):
    """Whether the kernel draws this case (else the host does)."""
    st = dev.storage[dtype].wgsl
    if dtype is dtypes.bfloat16 or (dtype is dtypes.float16 and st != "f16"):
        return False
    if kind == "randint":
        lo, hi = params
        return dtype is not dtypes.bool_ and _I32_LO <= lo and hi - 1 <= _I32_HI and hi - lo <= M32
    return True


def _store(st, dtype, compute):
    """WGSL storing ``v[j]`` (of the compute type) as the output's storage type."""
    if dtype is dtypes.int8:
        return "((v[j] + 128) & 255) - 128"  # values wrap to 8 bits
    if dtype is dtypes.uint8:
        return "v[j] & 255"
    if st == compute:
        return "v[j]"
    return "%s(v[j])" % st


def _source(kind, st, dtype):
    compute, body = _BODIES[kind]
    per = _PER_THREAD[kind]
    src = [codegen.prelude([st], st == "f16"), PHILOX, codegen.ENTRY % codegen.WG,
           "  let t = (wid.y * nwg.x + wid.x) * %du + lid;\n" % codegen.WG,
           "  if (t * %du >= pw(0u)) { return; }\n" % per,
           "  let w = philox(vec4<u32>(t, 0u, 0u, 0u), vec2<u32>(pw(48u), pw(49u)));\n",
           "  var v: array<%s, 4>;\n" % compute, body,
           "  for (var j = 0u; j < %du; j = j + 1u) {\n" % per,
           "    let i = t * %du + j;\n    if (i < pw(0u)) { b0[pw(1u) + i] = %s; }\n  }\n}\n"
           % (per, _store(st, dtype, compute))]
    return "".join(src)


def _stream(dev, kind, shape, dtype, generator, params):
    """The Cpu's values (its C kernels where they load), uploaded as bytes."""
    host = Cpu()
    return dev.from_bytes(host.to_bytes(host.random(kind, shape, dtype, generator, params)), tuple(shape), dtype)


def random(dev, kind, shape, dtype, generator, params):
    """The Wgpu device's ``random``: the Cpu's stream uploaded, or drawn on the GPU (the module doc)."""
    dev._check_dtype(dtype, "random")
    if dev.random_mode != "philox" or not serves(dev, kind, dtype, params):
        return _stream(dev, kind, shape, dtype, generator, params)
    out = dev._alloc(shape, dtype)
    n = 1
    for s in shape:
        n *= s
    key = dispatch_key(generator)
    if n == 0:
        return out
    st = dev.storage[dtype].wgsl
    rt = dev.rt
    pkey = ("random", kind, st, dtype.name)
    entry = rt._pipelines.get(pkey)
    if entry is None:
        entry = rt.pipeline(pkey, lambda: _source(kind, st, dtype), 1)
    words = [0] * 52
    words[0] = n
    words[1] = dev._base(out)
    words[48], words[49] = key
    words[50], words[51] = _param_words(kind, params)
    per = _PER_THREAD[kind]
    threads = (n + per - 1) // per
    rt.dispatch(entry, [out.block.buffer], words, (threads + codegen.WG - 1) // codegen.WG)
    return out
