"""ember's random numbers: xoshiro128++ on 32-bit words, so CPython and MicroPython give the same stream.

``Generator.draw`` defines what each kind of the ``random`` primitive gives (docs/architecture.md
§4): the pure Cpu draws here on the host, the C-backed Cpu, NumPy and Wgpu give the same values
(from C where it loads); only ``Wgpu(random="philox")`` draws other values, on the GPU, keyed by
two words of this stream. Uniform floats use 24 random bits:
exactly representable in float32.
"""
import math

_M32 = 0xFFFFFFFF
KINDS = ("uniform", "normal", "randint", "bernoulli")  # what the ``random`` primitive draws


def _splitmix32(x):
    # expands one seed into well-mixed state words (a zero state would be a fixed point)
    x = (x + 0x9E3779B9) & _M32
    z = x
    z = ((z ^ (z >> 16)) * 0x85EBCA6B) & _M32
    z = ((z ^ (z >> 13)) * 0xC2B2AE35) & _M32
    return x, z ^ (z >> 16)


class Generator:
    """A seedable random stream: ``g = ember.Generator(0); g.random()``."""

    def __init__(self, seed=0):
        self.seed(seed)

    def seed(self, seed):
        """Restart the stream from the int ``seed`` (the same seed gives the same values on every interpreter)."""
        if type(seed) is not int:
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("seed: expected an int, found %s" % type(seed).__name__)
        x = (seed ^ (seed >> 32)) & _M32
        s = []
        for _ in range(4):
            x, z = _splitmix32(x)
            s.append(z)
        self._s = s
        self._spare = None

    def get_state(self):
        """The state as a list of ints, to save in a checkpoint."""
        return list(self._s) + ([] if self._spare is None else [self._spare])

    def set_state(self, state):
        """Restore a state that ``get_state`` returned."""
        if type(state) not in (list, tuple) or len(state) not in (4, 5) or \
                any(type(v) not in (int, float) for v in state):
            from .errors import ArgumentError
            raise ArgumentError("set_state: expected the 4 or 5 numbers get_state returned, found %r" % (state,))
        self._s = [int(v) & _M32 for v in state[:4]]
        self._spare = state[4] if len(state) > 4 else None

    def next_u32(self):
        """The next 32-bit word of the stream (xoshiro128++), as an int."""
        s = self._s
        s0, s1, s2, s3 = s
        r = s0 + s3
        r = ((((r << 7) | ((r & _M32) >> 25)) & _M32) + s0) & _M32
        t = (s1 << 9) & _M32
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = ((s3 << 11) | (s3 >> 21)) & _M32
        s[0] = s0
        s[1] = s1
        s[2] = s2
        s[3] = s3
        return r

    def random(self):
        """A float in [0, 1) with 24 random bits."""
        return (self.next_u32() >> 8) * 5.9604644775390625e-08

    def uniforms(self, n, lo=0.0, hi=1.0):
        """``n`` floats uniform on [lo, hi), as a list."""
        nxt = self.next_u32
        span = (hi - lo) * 5.9604644775390625e-08
        return [lo + (nxt() >> 8) * span for _ in range(n)]

    def normals(self, n, mean=0.0, std=1.0):
        """``n`` normal draws (Box-Muller; both values of each pair are used)."""
        out = []
        if self._spare is not None and n:
            out.append(mean + std * self._spare)
            self._spare = None
        nxt = self.next_u32
        while len(out) < n:
            u1 = ((nxt() >> 8) + 1) * 5.9604644775390625e-08  # in (0, 1]: log stays finite
            u2 = (nxt() >> 8) * 5.9604644775390625e-08
            r = math.sqrt(-2.0 * math.log(u1))
            a = 6.283185307179586 * u2
            out.append(mean + std * r * math.cos(a))
            if len(out) < n:
                out.append(mean + std * r * math.sin(a))
            else:
                self._spare = r * math.sin(a)
        return out

    def randints(self, n, lo, hi):
        """``n`` ints in [lo, hi): the values of ``n`` calls of ``randint``."""
        randint = self.randint
        return [randint(lo, hi) for _ in range(n)]

    def bernoullis(self, n, p):
        """``n`` bools, each True with probability ``p``: uniform draw < ``p``."""
        return [u < p for u in self.uniforms(n)]

    def draw(self, kind, n, params):
        """``n`` values of ``kind`` (one of ``KINDS``) with ``params``: uniform (low, high), normal
        (mean, std), randint (low, high), bernoulli (p,). The host definition of the ``random``
        primitive: every backend that keeps this stream gives exactly these values.

        >>> ember.Generator(0).draw("uniform", 2, (0.0, 1.0))
        [0.9841397404670715, 0.8972046971321106]
        """
        if kind == "uniform":
            return self.uniforms(n, params[0], params[1])
        if kind == "normal":
            return self.normals(n, params[0], params[1])
        if kind == "randint":
            return self.randints(n, params[0], params[1])
        if kind == "bernoulli":
            return self.bernoullis(n, params[0])
        from .errors import ArgumentError
        raise ArgumentError("random: expected a kind in %s, found %r" % (KINDS, kind))

    def randint(self, lo, hi):
        """An int in [lo, hi), unbiased (rejection sampling)."""
        if type(lo) is not int or type(hi) is not int:
            from .errors import ArgumentTypeError
            raise ArgumentTypeError("randint: expected int bounds, found %s and %s"
                                    % (type(lo).__name__, type(hi).__name__))
        span = hi - lo
        if span <= 0:
            from .errors import ArgumentError
            raise ArgumentError("randint: expected low < high, found %d >= %d" % (lo, hi))
        if span > _M32:  # draw enough 32-bit words, keep the top bits, reject what falls outside
            bits = len(bin(span)) - 2  # int.bit_length is missing on MicroPython
            words = (bits + 31) // 32
            while True:
                v = 0
                for _ in range(words):
                    v = (v << 32) | self.next_u32()
                v >>= words * 32 - bits
                if v < span:
                    return lo + v
        limit = (_M32 + 1) - ((_M32 + 1) % span)
        while True:
            v = self.next_u32()
            if v < limit:
                return lo + v % span

    def shuffle(self, items):
        """Shuffle a list in place (Fisher-Yates)."""
        for i in range(len(items) - 1, 0, -1):
            j = self.randint(0, i + 1)
            items[i], items[j] = items[j], items[i]


default_generator = Generator(0)


def seed(n):
    """Seed the generator every random op uses unless it is given its own."""
    default_generator.seed(n)
