"""The record fuzzer: structured mutations of valid safetensors files (header fields, JSON text, the
length prefix, the data), each read by ``ember.record.read``. A damaged file may only raise
``RecordError``; an accepted one must hold exactly the bytes and shape its header describes (the
reference: the file itself, decoded by the safetensors layout), so nothing is read wrong silently.
Seeds are fixed: a failure names its seed and input number, which replays it."""
import json
import os
import random
import struct

import ember
from ember import RecordError, record
from ember.record.format import TO_EMBER, WIDENED

from probes import Outcomes, scale

SEEDS = (14, 1401, 271828, 31415, 8086)
INPUTS = scale(5000, 100000)  # over all seeds

DTYPES = ("F64", "F32", "F16", "BF16", "I64", "I32", "I8", "BOOL", "U8", "I16", "U16", "U32")
ODD = ["F8", "f32", "", None, 3, 2.5, True, [], {}, "F32 ", "C64", "U64", "I" * 500]
NUMBERS = [0, 1, -1, 2, 7, 2 ** 31, 2 ** 32 + 1, 2 ** 63 - 1, 2 ** 63, 2 ** 64, -2 ** 63, 10 ** 40, 1.0, 2.5,
           1e300, True, False, None, "3", [3], {"a": 1}]


def _base(rng):
    """A valid record as (header dict, data bytes) with 1-4 tensors of several dtypes and shapes."""
    header, data = {}, b""
    for i in range(rng.randint(1, 4)):
        dt = rng.choice(DTYPES)
        shape = [rng.randint(0, 3) for _ in range(rng.randint(0, 3))]
        n = 1
        for d in shape:
            n *= d
        size = n * {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "U32": 4, "F16": 2, "BF16": 2, "I16": 2,
                    "U16": 2}.get(dt, 1)
        raw = bytes(rng.randrange(256) for _ in range(size))
        if dt == "BOOL":
            raw = bytes(b & 1 for b in raw)
        header["t%d" % i] = {"dtype": dt, "shape": shape, "data_offsets": [len(data), len(data) + size]}
        data += raw
    if rng.random() < 0.5:
        header["__metadata__"] = {"format": "pt", "note": "x" * rng.randint(0, 20)}
    return header, data


def _mutate_entry(rng, entry):
    what = rng.randrange(9)
    if what == 0:
        entry["dtype"] = rng.choice(ODD + list(DTYPES))
    elif what in (1, 2) and entry["shape"]:
        entry["shape"][rng.randrange(len(entry["shape"]))] = rng.choice(NUMBERS)
    elif what == 1 or what == 2:
        entry["shape"] = rng.choice([[0, 2 ** 63], [2 ** 64], [-1], "3", None, [[2]], [0, 2 ** 70, 5], [1] * 65])
    elif what == 3:
        entry["shape"].append(rng.choice([0, 1, 2, 2 ** 63]))
    elif what == 4:
        offs = entry["data_offsets"]
        offs[rng.randrange(2)] = rng.choice(NUMBERS)
    elif what == 5:
        entry["data_offsets"] = rng.choice([[0], [0, 1, 2], "0,1", None, [1, 0], [2 ** 64, 2 ** 64 + 4]])
    elif what == 6:
        del entry[rng.choice(["dtype", "shape", "data_offsets"])]
    elif what == 7:
        entry[rng.choice(["extra", "dtype "])] = rng.choice(NUMBERS)
    else:
        entry["shape"] = list(reversed(entry["shape"]))  # the same count in another layout: still valid
    return entry


def _deep(rng):
    depth = rng.choice([50, 500, 5000, 50000])
    return "[" * depth + "]" * depth


def _text(rng, header):
    """The header's JSON after a structured change to its fields or its text."""
    names = [k for k in header if k != "__metadata__"]
    kind = rng.randrange(12)
    if kind < 5:
        name = rng.choice(names)
        header[name] = _mutate_entry(rng, dict(header[name], shape=list(header[name]["shape"]),
                                               data_offsets=list(header[name]["data_offsets"])))
    elif kind == 5:
        header[rng.choice(names)] = rng.choice(NUMBERS + [_deep(rng)])
    elif kind == 6:
        header["__metadata__"] = rng.choice([{"a": 1}, {"a": [1]}, "x", 3, None, {"ember_format_version": "99"},
                                             {"ember_format_version": "x"}, {"k": "v" * 1000}])
    elif kind == 7:
        header[rng.choice(["", "a" * 300, "t0", "\u00e9\u4e2d", "a.b"])] = header[rng.choice(names)]
    text = json.dumps(header)
    if kind == 8:  # a duplicate name, which json.dumps cannot write
        name = rng.choice(names)
        text = text[:-1] + ', "%s": %s}' % (name, json.dumps(header[name]))
    elif kind == 9:
        at = rng.randrange(len(text))
        text = text[:at] + rng.choice(['"', "{", "]", ",", ":", "\\", "\x00", "9" * 400, _deep(rng),
                                       "\ud800", "NaN", "-", "1e999"]) + text[at:]
    elif kind == 10:
        text = text[:rng.randrange(len(text))]
    elif kind == 11:
        text = rng.choice([_deep(rng), "[]", "null", '"x"', "{}", "{" * 3000, " " * 100 + text])
    return text


def _bytes(rng, header, data):
    text = _text(rng, header).encode("utf-8", "surrogatepass")
    if rng.random() < 0.3:
        text += b" " * rng.randrange(8)  # padding spaces, allowed by the format
    frame = rng.randrange(10)
    prefix = struct.pack("<Q", len(text))
    if frame == 0:
        prefix = struct.pack("<Q", rng.choice([0, 1, len(text) + 1, len(text) - 1, 2 ** 40, 2 ** 64 - 1]))
    elif frame == 1:
        prefix = prefix[:rng.randrange(8)]
    body = prefix + text + data
    if frame == 2:
        body = body[:rng.randrange(len(body) + 1)]
    elif frame == 3:
        body += bytes(rng.randrange(256) for _ in range(rng.randint(1, 9)))
    elif frame == 4 and data:
        flip = bytearray(body)
        at = len(prefix) + len(text) + rng.randrange(len(data))
        flip[at] ^= 1 << rng.randrange(8)
        body = bytes(flip)
    return body


def _reference(body):
    """{name: (dtype, shape, raw bytes)} as the safetensors layout defines them, for a body ember read."""
    n = struct.unpack("<Q", body[:8])[0]
    header = json.loads(body[8:8 + n].decode("utf-8"))
    base = 8 + n
    out = {}
    for name, e in header.items():
        if name != "__metadata__":
            start, end = e["data_offsets"]
            out[name] = (e["dtype"], tuple(e["shape"]), body[base + start:base + end])
    return out


def _same(t, dtype, shape, raw):
    if t.shape != shape:
        return "shape %s, the header says %s" % (t.shape, shape)
    if dtype in WIDENED:
        size, code, _ = WIDENED[dtype]
        expect = list(struct.unpack("<%d%s" % (len(raw) // size, code), raw))
        return None if t.reshape(-1).tolist() == expect else "values differ"
    if t.dtype is not TO_EMBER[dtype]:
        return "dtype %s for %s" % (t.dtype.name, dtype)
    got = t.to_bytes()
    if dtype == "BOOL":
        raw = bytes(1 if b else 0 for b in raw)
    if got == raw:
        return None
    if dtype in NAN_BITS:  # a NaN may come back with another payload: the same value
        size, code, exp, frac = NAN_BITS[dtype]
        n = len(raw) // size
        for a, b in zip(struct.unpack("<%d%s" % (n, code), raw), struct.unpack("<%d%s" % (n, code), got)):
            if a != b and not (a & exp == exp and a & frac and b & exp == exp and b & frac):
                return "bits %x read as %x" % (a, b)
        return None
    return "bytes differ"


# (bytes, struct code, exponent mask, fraction mask) of each float format: NaN is all exponent bits and
# a nonzero fraction
NAN_BITS = {"F16": (2, "H", 0x7C00, 0x03FF), "BF16": (2, "H", 0x7F80, 0x007F),
            "F32": (4, "I", 0x7F800000, 0x007FFFFF), "F64": (8, "Q", 0x7FF0000000000000, 0x000FFFFFFFFFFFFF)}


def test_record_fuzz(tmp_path):
    # one small file rewritten per input: in memory where the system has a RAM disk (far faster to open)
    folder = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else str(tmp_path)
    path = os.path.join(folder, "ember-fuzz-%d.safetensors" % os.getpid())
    dev = ember.Cpu()
    out = Outcomes("record_fuzz", RecordError)
    per_seed = INPUTS // len(SEEDS)
    for seed in SEEDS:
        rng = random.Random(seed)
        for i in range(per_seed):
            header, data = _base(rng)
            body = _bytes(rng, header, data)
            with open(path, "wb") as f:
                f.write(body)
            label = "seed %d input %d" % (seed, i)
            got = out.run(label, lambda: dict(record.read(path, device=dev)))
            if got is not None:
                ref = _reference(body)
                if sorted(got) != sorted(ref):
                    out.wrong(label, "names %s, the header holds %s" % (sorted(got), sorted(ref)))
                    continue
                for name, (dtype, shape, raw) in ref.items():
                    why = _same(got[name], dtype, shape, raw)
                    if why:
                        out.wrong(label, "%s: %s" % (name, why))
    os.remove(path)
    assert out.inputs >= INPUTS - len(SEEDS) and out.rejected > out.inputs // 4 and out.accepted > 100
    out.check()
