"""ember.record against the real safetensors library (numpy and torch), plus a fuzz of hostile files.

- Files written by ember load with ``safetensors`` (numpy and torch, bf16 included) with the same
  names, dtypes, shapes, bytes and metadata; files written by ``safetensors`` load with ember.
- A hypothesis fuzz over mutated valid files (bit flips, byte edits, truncations, insertions, header
  JSON edits, length-field edits): ember either reads the file or raises ``RecordError``; nothing else,
  and each input finishes within the deadline. Every file safetensors itself accepts, ember reads
  with the same values, except where ember is deliberately stricter (listed in ``_STRICTER``).
- The pure-Python JSON parser used on MicroPython agrees with CPython's ``json`` on fuzzed headers.
"""
import os
import random
import shutil
import struct
import tempfile

import numpy as np
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from safetensors.numpy import load_file as np_load, save_file as np_save
from safetensors.torch import load_file as pt_load, save_file as pt_save

import ember
import ember.record
from ember import RecordError
from ember.record import _json

FUZZ_EXAMPLES = 2000
NP_DTYPES = {ember.float32: np.float32, ember.float64: np.float64, ember.float16: np.float16,
             ember.int8: np.int8, ember.uint8: np.uint8, ember.int32: np.int32, ember.int64: np.int64,
             ember.bool: np.bool_}
PT_DTYPES = {ember.float32: torch.float32, ember.float64: torch.float64, ember.float16: torch.float16,
             ember.bfloat16: torch.bfloat16, ember.int8: torch.int8, ember.uint8: torch.uint8,
             ember.int32: torch.int32, ember.int64: torch.int64, ember.bool: torch.bool}


class Scratch:
    def __enter__(self):
        self.dir = tempfile.mkdtemp(prefix="ember-interop-")
        return self

    def path(self, name):
        return os.path.join(self.dir, name)

    def __exit__(self, *exc):
        shutil.rmtree(self.dir, ignore_errors=True)
        return False


def ember_tensors(with_bf16=True):
    """Every dtype, with nan/inf/-0.0, extremes, subnormals, a 0-d and an empty tensor."""
    nan, inf = float("nan"), float("inf")
    g = ember.Generator(7)
    out = [
        ("fc1.weight", ember.randn(5, 3, generator=g)),
        ("fc1.bias", ember.tensor([1.5, -0.0, nan, inf, -inf])),
        ("double", ember.tensor([0.1, -1e300, 5e-324], dtype=ember.float64)),
        ("half", ember.tensor([65504.0, 6e-08, -2.5, nan, -inf], dtype=ember.float16)),
        ("ints8", ember.tensor([-128, 127, 0], dtype=ember.int8)),
        ("ints32", ember.tensor([[-2147483648, 2147483647]], dtype=ember.int32)),
        ("bn.num_batches_tracked", ember.tensor(9223372036854775807, dtype=ember.int64)),
        ("mask", ember.tensor([[True, False, True]])),
        ("empty", ember.zeros(0, 4)),
        ("cube", ember.arange(24, dtype=ember.float32).reshape(2, 3, 4)),
    ]
    if with_bf16:
        out.append(("brain", ember.tensor([1.0, -3.0e38, 9.2e-41, nan, 0.33], dtype=ember.bfloat16)))
    return out


def torch_bytes(t):
    t = t.contiguous().reshape(-1)
    if t.dtype is torch.bool:
        t = t.to(torch.uint8)
    return t.view(torch.uint8).numpy().tobytes() if t.numel() else b""


def put(path, data):
    if os.path.exists(path):
        os.remove(path)  # a new file: rewriting one in place is slow where the disk discards on truncate
    with open(path, "wb") as f:
        f.write(data)


def header_order(path):
    import json
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        pairs = json.loads(f.read(n), object_pairs_hook=lambda kv: kv)
    return [k for k, _ in pairs]


def np_bytes(a):
    return np.ascontiguousarray(a).tobytes()


# -- ember -> safetensors --------------------------------------------------------------------------

def test_ember_file_loads_with_safetensors_numpy():
    ts = ember_tensors(with_bf16=False)  # numpy has no bfloat16
    with Scratch() as s:
        p = s.path("e.safetensors")
        ember.record.write(p, ts, metadata={"module": "MLP", "config": '{"hidden": 5}'})
        loaded = np_load(p)
        assert sorted(loaded) == sorted(n for n, _ in ts)
        for name, t in ts:
            a = loaded[name]
            assert a.dtype == NP_DTYPES[t.dtype], (name, a.dtype)
            assert a.shape == t.shape, (name, a.shape)
            assert np_bytes(a) == ember_bytes(t), name
        with safe_open(p, framework="np") as f:
            meta = f.metadata()
            assert list(f.keys()) == sorted(n for n, _ in ts)
        assert meta == {"module": "MLP", "config": '{"hidden": 5}', "ember_format_version": "1", "format": "pt"}


def ember_bytes(t):
    return t.to(ember.int8).to_bytes() if t.dtype is ember.bool else t.to_bytes()


def test_ember_file_loads_with_safetensors_torch_bf16_included():
    ts = ember_tensors()
    with Scratch() as s:
        p = s.path("e.safetensors")
        ember.record.write(p, ts)
        loaded = pt_load(p)
        for name, t in ts:
            x = loaded[name]
            assert x.dtype == PT_DTYPES[t.dtype], (name, x.dtype)
            assert tuple(x.shape) == t.shape, (name, x.shape)
            assert torch_bytes(x) == ember_bytes(t), name
        # values, not only bytes: bf16 decoded by torch equals ember's bf16 values
        brain = dict(ts)["brain"]
        assert torch.equal(torch.isnan(loaded["brain"]), torch.tensor([False, False, False, True, False]))
        got = [v for v in loaded["brain"].float().tolist() if v == v]
        assert got == [v for v in brain.tolist() if v == v]
        with safe_open(p, framework="pt") as f:
            assert f.get_tensor("fc1.weight").tolist() == dict(ts)["fc1.weight"].tolist()


def test_ember_precision_files_load_with_torch():
    ts = [("w", ember.randn(4, 3, generator=ember.Generator(1))), ("d", ember.tensor([0.1], dtype=ember.float64)),
          ("n", ember.tensor([3], dtype=ember.int64))]
    with Scratch() as s:
        p = s.path("p.safetensors")
        for prec, dt in (("f16", torch.float16), ("bf16", torch.bfloat16), ("f32", torch.float32)):
            ember.record.write(p, ts, precision=prec)
            loaded = pt_load(p)
            assert loaded["w"].dtype == dt and loaded["d"].dtype == dt and loaded["n"].dtype == torch.int64
            # ember's cast rounds to nearest even exactly as torch's does
            ref = torch.tensor(dict(ts)["w"].tolist(), dtype=torch.float32).to(dt)
            assert torch.equal(loaded["w"], ref), prec
            with safe_open(p, framework="pt") as f:
                assert f.metadata()["ember_precision"] == prec


# -- safetensors -> ember --------------------------------------------------------------------------

def test_safetensors_numpy_file_loads_in_ember():
    rng = np.random.default_rng(0)
    arrays = {
        "a.f32": rng.standard_normal((3, 4)).astype(np.float32),
        "a.f64": np.array([np.pi, -0.0, np.inf, 5e-324]),
        "a.f16": np.array([65504, 6e-8, np.nan, -1.5], dtype=np.float16),
        "a.i8": np.array([-128, 127], dtype=np.int8),
        "a.i32": np.arange(-3, 3, dtype=np.int32).reshape(2, 3),
        "a.i64": np.array([2 ** 63 - 1, -2 ** 63], dtype=np.int64),
        "a.bool": np.array([[True], [False]]),
        "a.scalar": np.array(2.5, dtype=np.float32),
        "a.empty": np.zeros((2, 0), dtype=np.float32),
        "a.u8": np.array([0, 255, 17], dtype=np.uint8),
        "w.i16": np.array([-32768, 32767], dtype=np.int16),
        "w.u16": np.array([65535, 1], dtype=np.uint16),
        "w.u32": np.array([4294967295, 0], dtype=np.uint32),
    }
    widened = {"w.i16": ember.int32, "w.u16": ember.int32, "w.u32": ember.int64}
    with Scratch() as s:
        p = s.path("np.safetensors")
        np_save(arrays, p, metadata={"source": "numpy"})
        with ember.record.open(p) as r:
            assert r.metadata == {"source": "numpy"}
            # the header's order (the library writes its keys sorted by dtype size, then name)
            assert r.names() == [k for k in header_order(p) if k != "__metadata__"]
            for name, a in arrays.items():
                t = r.read(name)
                assert t.shape == a.shape, name
                if name in widened:
                    assert t.dtype is widened[name]
                    assert t.tolist() == a.tolist(), name
                else:
                    assert NP_DTYPES[t.dtype] == a.dtype.type, name
                    assert ember_bytes(t) == np_bytes(a.astype(np.int8) if a.dtype == np.bool_ else a), name


def test_safetensors_torch_file_loads_in_ember_bf16_included():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    state["half"] = torch.randn(5).half()
    state["brain"] = torch.tensor([1.0, -3e38, 9.2e-41, float("nan"), 0.33]).bfloat16()
    state["mask"] = torch.tensor([True, False])
    state["ids"] = torch.tensor([[1, 2]], dtype=torch.int32)
    state["tiny"] = torch.tensor([-5, 5], dtype=torch.int8)
    with Scratch() as s:
        p = s.path("pt.safetensors")
        pt_save(state, p, metadata={"format": "pt"})
        got = ember.record.read(p)
        assert sorted(n for n, _ in got) == sorted(state)
        for name, t in got:
            x = state[name]
            assert PT_DTYPES[t.dtype] == x.dtype, name
            assert t.shape == tuple(x.shape), name
            assert ember_bytes(t) == torch_bytes(x), name
        brain = dict(got)["brain"].tolist()
        ref = state["brain"].float().tolist()
        assert [v for v in brain if v == v] == [v for v in ref if v == v]
        # a bf16 torch file read as float32 gives torch's float32 values
        with ember.record.open(p) as r:
            assert r.read("0.weight", dtype=ember.float32).tolist() == state["0.weight"].tolist()


def test_round_trip_through_both_libraries():
    ts = ember_tensors()
    with Scratch() as s:
        a, b = s.path("a.safetensors"), s.path("b.safetensors")
        ember.record.write(a, ts)
        pt_save(pt_load(a), b)
        back = dict(ember.record.read(b))
        for name, t in ts:
            assert back[name].dtype is t.dtype and back[name].shape == t.shape
            assert ember_bytes(back[name]) == ember_bytes(t), name


# -- fuzz: mutated valid files ---------------------------------------------------------------------

def _seed_files():
    """Valid files to mutate: written by ember (with metadata and a precision) and by safetensors."""
    with Scratch() as s:
        out = []
        p = s.path("x.safetensors")
        ember.record.write(p, [("w", ember.tensor([[1.0, -2.0], [0.5, 3.0]])), ("b", ember.tensor([1, 2], dtype=ember.int8)),
                               ("m", ember.tensor([True, False])), ("e", ember.zeros(0))], metadata={"k": "v"})
        out.append(_read(p))
        ember.record.write(p, [("h", ember.tensor([1.0, 2.0])), ("i", ember.tensor([7]))], precision="bf16")
        out.append(_read(p))
        np_save({"u": np.array([1, 2, 3], dtype=np.uint8), "d": np.array([0.5]), "s": np.array([-1], np.int16)}, p)
        out.append(_read(p))
        pt_save({"t": torch.tensor([1.5, 2.5]).half(), "z": torch.tensor([[1, 2]], dtype=torch.int64)}, p,
                metadata={"format": "pt"})
        out.append(_read(p))
        return out


def _read(p):
    with open(p, "rb") as f:
        return f.read()


SEEDS = _seed_files()
_TOKENS = [b'"F32"', b'"F64"', b'"I8"', b'"BOOL"', b'"U64"', b'"F8_E4M3"', b'"x"', b'""', b"-1", b"0", b"1", b"7",
           b"4294967296", b"18446744073709551616", b"99999999999999999999999999", b"1e308", b"-0", b"2.0", b"null",
           b"true", b"[]", b"{}", b"[0,0]", b"[1,2,3]", b'"__metadata__"', b'{"a":"b"}', b"\\u0000", b"\\ud800",
           b",", b":", b"[", b"]", b"{", b"}", b'"', b"\\", b" ", b"\xff", b"\xc3"]


def _header_span(data):
    n = int.from_bytes(data[:8], "little")
    return 8, min(8 + n, len(data))


_VALUES = st.one_of(st.sampled_from([-1, 0, 1, 2, 3, 4, 8, 16, 2 ** 31, 2 ** 62, 2 ** 64, 10 ** 30, 1.5, True, None,
                                     "2", "F32", "BF16", "U64", "", [], {}, [0], [0, 8], [2, 3], {"a": "b"}]),
                    st.integers(-2 ** 70, 2 ** 70))


def _edit_header(draw, data):
    """A structural edit of the parsed header (a field changed, removed or copied), re-serialized."""
    import json
    start, end = _header_span(data)
    try:
        header = json.loads(bytes(data[start:end]))
    except ValueError:
        return data
    if type(header) is not dict or not header:
        return data
    name = draw(st.sampled_from(sorted(header)))
    entry = header[name]
    kind = draw(st.sampled_from(["field", "drop", "copy", "replace", "rename"]))
    if kind == "field" and type(entry) is dict and entry:
        key = draw(st.sampled_from(sorted(entry) + ["extra"]))
        if key == "data_offsets" and type(entry[key]) is list and len(entry[key]) == 2 and draw(st.booleans()):
            entry[key] = [v + draw(st.integers(-8, 8)) if type(v) is int else v for v in entry[key]]
        elif key == "shape" and type(entry[key]) is list and draw(st.booleans()):
            entry[key] = entry[key] + [draw(st.sampled_from([0, 1, 2, -1, 2 ** 40]))]
        else:
            entry[key] = draw(_VALUES)
    elif kind == "drop" and type(entry) is dict and entry:
        del entry[draw(st.sampled_from(sorted(entry)))]
    elif kind == "copy":
        header[name + draw(st.sampled_from(["x", "", "\u0000"]))] = entry
    elif kind == "replace":
        header[name] = draw(_VALUES)
    else:
        header[draw(st.sampled_from(["__metadata__", "w", "", "h"]))] = header.pop(name)
    text = json.dumps(header).encode()
    pad = (8 - len(text) % 8) % 8
    return bytearray(len(text + b" " * pad).to_bytes(8, "little")) + text + b" " * pad + data[end:]


@st.composite
def mutated_files(draw):
    data = bytearray(draw(st.sampled_from(SEEDS)))
    steps = draw(st.integers(1, 3))
    for _ in range(steps):
        kind = draw(st.sampled_from(["flip", "byte", "truncate", "insert", "delete", "token", "length", "dup",
                                     "edit", "edit", "edit", "edit"]))
        if kind == "edit":
            data = _edit_header(draw, data)
            continue
        size = len(data)
        if kind == "length":
            choice = draw(st.sampled_from(["small", "huge", "random"]))
            n = int.from_bytes(bytes(data[:8]).ljust(8, b"\0"), "little")
            if choice == "small":
                n = min(2 ** 64 - 1, max(0, n + draw(st.integers(-16, 16))))
            elif choice == "huge":
                n = draw(st.sampled_from([2 ** 64 - 1, 2 ** 63, 10 ** 8, 10 ** 8 + 1, 2 ** 32]))
            else:
                n = draw(st.integers(0, 2 ** 64 - 1))
            data[:8] = n.to_bytes(8, "little")
            continue
        if size == 0:
            break
        # most edits land in the header, where the structure is
        lo, hi = _header_span(bytes(data)) if draw(st.integers(0, 3)) else (0, size)
        if hi <= lo:
            lo, hi = 0, size
        pos = draw(st.integers(lo, hi - 1))
        if kind == "flip":  # mostly ASCII-preserving flips, so that more edits reach the JSON checks
            data[pos] ^= 1 << draw(st.sampled_from([0, 1, 2, 3, 4, 5, 6, 0, 1, 2, 3, 4, 5, 7]))
        elif kind == "byte":
            data[pos] = draw(st.one_of(st.integers(32, 126), st.integers(0, 255)))
        elif kind == "truncate":
            del data[pos:]
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos:pos + draw(st.integers(1, 16))]
        elif kind == "token":
            end = min(size, pos + draw(st.integers(0, 12)))
            data[pos:end] = draw(st.sampled_from(_TOKENS))
        elif kind == "dup":
            end = min(size, pos + draw(st.integers(1, 64)))
            data[pos:pos] = data[pos:end]
    if draw(st.integers(0, 3)):
        # keep the length field consistent with the edited header, so edits reach the JSON checks
        start, _ = _header_span(bytes(data))
        text_end = bytes(data).rfind(b"}", 8) + 1
        if text_end > 8:
            pad = (8 - text_end % 8) % 8
            data = bytearray((text_end - 8 + pad).to_bytes(8, "little")) + data[8:text_end] + b" " * pad + data[text_end:]
    return bytes(data)


# ember may refuse what safetensors 0.8 accepts only for these reasons (each a deliberate choice)
_STRICTER = (
    "duplicate key",  # serde_json keeps the last value silently
    "lone", "surrogate",  # ember refuses a name that cannot be encoded back to UTF-8
    "ember_format_version",  # a file that claims a newer or malformed ember format
    "not one ember reads",  # dtypes without an exact ember twin (U64, F8_*, ...)
    "number longer than",  # 64-character literals
)

_stats = {"ran": 0, "read": 0, "record_error": 0, "both_read": 0, "ember_stricter": 0}


def _safetensors_reads(path):
    """{name: (safetensors dtype, shape, values as numpy)} as the library reads the file, or None."""
    try:
        with safe_open(path, framework="pt") as f:
            out = {}
            for k in f.keys():
                x = f.get_tensor(k)
                dt = f.get_slice(k).get_dtype()
                out[k] = (dt, tuple(x.shape), (x.float() if dt == "BF16" else x).numpy())
            return out
    except Exception:
        return None


@settings(max_examples=FUZZ_EXAMPLES, deadline=20000, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(mutated_files())
def _fuzz_one(data):
    path = _FUZZ_PATH[0]
    put(path, data)
    _stats["ran"] += 1
    try:
        got = ember.record.read(path)
    except RecordError as e:
        assert path in str(e), str(e)
        _stats["record_error"] += 1
        reference = _safetensors_reads(path)
        if reference is not None:
            _stats["ember_stricter"] += 1
            assert any(reason in str(e) for reason in _STRICTER), \
                "safetensors reads this file but ember raised: %s\n%r" % (e, data[:300])
        return
    _stats["read"] += 1
    reference = _safetensors_reads(path)
    if reference is not None:  # where both read the file, they agree value for value
        _stats["both_read"] += 1
        assert sorted(n for n, _ in got) == sorted(reference)
        for name, t in got:
            dt, shape, arr = reference[name]
            assert t.shape == shape, name
            if dt == "BF16":
                t = t.to(ember.float32)  # exact; numpy has no bfloat16
            if t.dtype is ember.bool:
                assert t.tolist() == arr.tolist(), name
            elif dt in ("U8", "I16", "U16", "U32"):
                assert t.tolist() == arr.tolist(), name
            elif t.dtype.is_float:
                # NaN payloads are not kept (the Cpu device holds Python floats): compare NaN positions,
                # then every other value bit for bit (the sign of zero included)
                mine = np.asarray(t.tolist(), dtype=arr.dtype).reshape(arr.shape)
                assert np.array_equal(np.isnan(mine), np.isnan(arr)), name
                assert np_bytes(np.where(np.isnan(mine), 0, mine)) == np_bytes(np.where(np.isnan(arr), 0, arr)), name
            else:
                assert ember_bytes(t) == np_bytes(arr), name


_FUZZ_PATH = [None]


def test_fuzz_mutated_files_raise_only_record_error():
    with Scratch() as s:
        _FUZZ_PATH[0] = s.path("fuzz.safetensors")
        for k in _stats:
            _stats[k] = 0
        _fuzz_one()
    print("\nrecord fuzz: %(ran)d inputs; ember read %(read)d (safetensors agreed on %(both_read)d), "
          "RecordError %(record_error)d (of which safetensors read %(ember_stricter)d, each a deliberate "
          "stricter rule)" % _stats)
    assert _stats["ran"] >= FUZZ_EXAMPLES, _stats
    assert _stats["read"] > 0 and _stats["record_error"] > 0, _stats


def test_fuzz_random_bytes_never_crash():
    rnd = random.Random(5)
    with Scratch() as s:
        p = s.path("r.safetensors")
        for _ in range(300):
            n = rnd.choice([0, 1, 7, 8, 9, 16, 64, 300])
            head = rnd.choice([b"", rnd.randrange(0, 400).to_bytes(8, "little")])
            put(p, head + bytes(rnd.randrange(256) for _ in range(n)))
            try:
                ember.record.read(p)
            except RecordError:
                pass


# -- the pure-Python JSON parser (MicroPython's) agrees with CPython's json ------------------------

_JSON_PIECES = ['{', '}', '[', ']', ',', ':', '"a"', '"b"', '"\\u00e9"', '"\\ud83d\\ude00"', '"\\ud800"', '"\\n"',
                '"x\\"y"', '1', '-0', '0.5', '1e3', '-2E-2', '01', '1.', 'true', 'false', 'null', 'NaN', ' ', '\n',
                '"__metadata__"', '"dtype"', '"F32"', '"shape"', '[2,3]', '"data_offsets"', '[0,24]', '"\t"',
                '9' * 70, '"\\q"', "'a'"]


@st.composite
def json_texts(draw):
    if draw(st.booleans()):
        seed = draw(st.sampled_from(SEEDS))
        start, end = _header_span(seed)
        text = seed[start:end].decode("utf-8", "replace")
        for _ in range(draw(st.integers(0, 3))):
            pos = draw(st.integers(0, max(0, len(text) - 1)))
            text = text[:pos] + draw(st.sampled_from(_JSON_PIECES)) + text[pos + draw(st.integers(0, 4)):]
        return text
    return "".join(draw(st.lists(st.sampled_from(_JSON_PIECES), max_size=24)))


@settings(max_examples=1500, deadline=20000, database=None, derandomize=True)
@given(json_texts())
def _parsers_agree(text):
    try:
        expected = _json._loads_c(text)
    except _json.JsonError:
        expected = None
    try:
        got = _json.parse(text)
    except _json.JsonError:
        got = None
    assert (got is None) == (expected is None), (text, got, expected)
    if got is not None:
        assert got == expected, (text, got, expected)
        assert got[1] == expected[1]  # the top-level key order


def test_pure_json_parser_agrees_with_cpython_json():
    _parsers_agree()
