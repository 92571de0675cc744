"""ember.record: safetensors files read and written in pure Python, on CPython and MicroPython.

Round trips for every dtype, metadata and precision casts; the exact header layout; atomic writes
(a failure mid-write leaves the old file and no temporary file); and hostile files built by hand,
each of which must raise a RecordError naming the file and the key, never another exception.
"""
import gc
import os

import ember
import ember.record
from ember import ArgumentError, ArgumentTypeError, EmberError, RecordError
from ember.record import _json
from harness.check import assert_equal, assert_true

PARAMETERS = ("device",)

NAN = float("nan")
INF = float("inf")

# -- scratch folders (CPython: tempfile; MicroPython: tmp/ in the runner's cwd, its staging) -----

_made = [0]


class Scratch:
    """A fresh folder for one test, removed with everything in it on exit."""

    def __enter__(self):
        try:
            import tempfile
            self.dir = tempfile.mkdtemp(prefix="ember-record-")
        except ImportError:
            _made[0] += 1
            self.dir = "tmp/ember-record-%d" % _made[0]
            try:
                os.mkdir("tmp")
            except OSError:
                pass
            try:
                os.mkdir(self.dir)
            except OSError:
                pass
        return self

    def path(self, name):
        return self.dir + "/" + name

    def files(self):
        return sorted(os.listdir(self.dir))

    def __exit__(self, *exc):
        for name in os.listdir(self.dir):
            try:
                os.remove(self.dir + "/" + name)
            except OSError:
                pass
        try:
            os.rmdir(self.dir)
        except OSError:
            pass
        return False


def put(path, data):
    try:
        os.remove(path)  # a new file: rewriting one in place is slow where the disk discards on truncate
    except OSError:
        pass
    with open(path, "wb") as f:
        f.write(data)


def get(path):
    with open(path, "rb") as f:
        return f.read()


def raw_file(header, data=b"", n=None):
    """Bytes of a safetensors file from a header text (not padded) and data; ``n`` overrides the length."""
    hb = header.encode("utf-8") if type(header) is str else header
    if n is None:
        n = len(hb)
    return n.to_bytes(8, "little") + hb + data


def expect_record_error(path, data, *fragments):
    """Reading ``data`` as the file ``path`` raises RecordError naming the file and every fragment."""
    put(path, data)
    for action in ("open", "inspect", "read"):
        try:
            if action == "open":
                ember.record.open(path).close()
            elif action == "inspect":
                ember.record.inspect(path)
            else:
                ember.record.read(path)
        except RecordError as e:
            text = str(e)
            assert_true(path in text, "the message %r does not name the file %r" % (text, path))
            for f in fragments:
                assert_true(f in text, "%r is not in the message %r" % (f, text))
            continue
        raise AssertionError("%s: expected RecordError (%s), nothing was raised" % (action, fragments))
    return text


def eq(actual, expected, msg=""):
    """Plain ``==`` for names, dicts and offsets (assert_equal compares numbers and tensors)."""
    if not actual == expected:
        raise AssertionError("%s%r != expected %r" % (msg and msg + ": ", actual, expected))


def samples(device):
    """One tensor of every dtype, with the values that are hard to keep: nan, inf, -0.0, extremes."""
    return [
        ("f32", ember.tensor([[1.5, -0.0, NAN], [INF, -INF, 3.4028234663852886e38]], dtype=ember.float32,
                             device=device)),
        ("f64", ember.tensor([0.1, -1e300, 5e-324, NAN], dtype=ember.float64, device=device)),
        ("f16", ember.tensor([65504.0, -6.103515625e-05, 5.960464477539063e-08, INF, NAN, -0.0],
                             dtype=ember.float16, device=device)),
        ("bf16", ember.tensor([3.3895313892515355e38, 1.0, -2.5, NAN, -INF, 9.183549615799121e-41],
                              dtype=ember.bfloat16, device=device)),
        ("i8", ember.tensor([-128, 127, 0, -1], dtype=ember.int8, device=device)),
        ("i32", ember.tensor([[-2147483648], [2147483647]], dtype=ember.int32, device=device)),
        ("i64", ember.tensor([-9223372036854775808, 9223372036854775807, 0], dtype=ember.int64, device=device)),
        ("bool", ember.tensor([[True, False], [False, True]], device=device)),
        ("scalar", ember.tensor(2.5, device=device)),
        ("empty", ember.zeros(0, 3, device=device)),
        ("cube", ember.arange(24, dtype=ember.float32, device=device).reshape(2, 3, 4)),
    ]


def same_tensors(got, expected):
    eq([n for n, _ in got], [n for n, _ in expected], "names")
    for (name, a), (_, b) in zip(got, expected):
        assert_true(a.dtype is b.dtype, "%s: dtype %r != %r" % (name, a.dtype, b.dtype))
        assert_true(a.shape == b.shape, "%s: shape %s != %s" % (name, a.shape, b.shape))
        assert_equal(a, b, name)


# -- round trips ---------------------------------------------------------------------------------

def test_round_trip_every_dtype(device):
    with Scratch() as s:
        p = s.path("all.safetensors")
        ts = samples(device)
        ember.record.write(p, ts)
        got = ember.record.read(p, device=device)
        same_tensors(got, ts)
        for _, t in got:
            assert_true(t.device == device)
        eq(s.files(), ["all.safetensors"])


def test_header_layout_matches_safetensors(device):
    with Scratch() as s:
        p = s.path("h.safetensors")
        ts = samples(device)
        ember.record.write(p, ts)
        raw = get(p)
        n = int.from_bytes(raw[:8], "little")
        assert_true((8 + n) % 8 == 0, "header length %d is not padded to 8" % n)
        header = raw[8:8 + n]
        text = header.decode("utf-8")
        assert_true(text.startswith('{"__metadata__":'), text[:40])
        stripped = text.rstrip(" ")
        assert_true(stripped.endswith("}") and len(text) - len(stripped) < 8)
        value, order = _json.parse(text)
        eq(order, ["__metadata__"] + [name for name, _ in ts])  # the caller's order
        spans = []
        for name, t in ts:
            info = value[name]
            start, end = info["data_offsets"]
            size = {"F64": 8, "I64": 8, "F32": 4, "I32": 4, "F16": 2, "BF16": 2, "I8": 1, "BOOL": 1}[info["dtype"]]
            assert_true(start % size == 0, "%s starts at %d, not aligned to %d" % (name, start, size))
            eq(info["shape"], list(t.shape))
            spans.append((start, end))
        spans.sort()
        pos = 0
        for a, b in spans:
            assert_equal(a, pos)
            pos = b
        assert_equal(pos, len(raw) - 8 - n)
        with ember.record.open(p) as r:
            eq(r.names(), [name for name, _ in ts])
            assert_equal(r.data_start, 8 + n)


def test_metadata_round_trip_and_ember_fields(device):
    with Scratch() as s:
        p = s.path("m.safetensors")
        meta = {"module": "ember.nn.Linear", "config": '{"in": 3, "out": 2}', "odd": 'quote " back \\ nl\n\x01 \u00e9\u4e2d'}
        ember.record.write(p, [("w", ember.ones(2, device=device))], metadata=meta)
        with ember.record.open(p) as r:
            m = r.metadata
        for k in meta:
            eq(m[k], meta[k], k)
        eq(m["ember_format_version"], "1")
        eq(m["format"], "pt")
        assert_true("ember_precision" not in m)
        # ember's own keys win over the caller's; the caller may set "format"
        ember.record.write(p, [("w", ember.ones(2, device=device))],
                           metadata={"ember_precision": "f16", "ember_format_version": "7", "format": "ember"})
        m = ember.record.inspect(p).metadata
        eq(sorted(m), ["ember_format_version", "format"])
        eq(m["ember_format_version"], "1")
        eq(m["format"], "ember")


def test_precision_casts_floats_only(device):
    vals = [0.1, -3.14159, 65519.0, 1e-6, 70000.0, NAN]
    x = ember.tensor(vals, device=device)
    d = ember.tensor([0.1, 2.0], dtype=ember.float64, device=device)
    i = ember.tensor([1, -2, 3], dtype=ember.int32, device=device)
    b = ember.tensor([True, False], device=device)
    with Scratch() as s:
        p = s.path("p.safetensors")
        for prec, dt in (("f16", ember.float16), ("bf16", ember.bfloat16), ("f32", ember.float32),
                         (ember.float16, ember.float16)):
            ember.record.write(p, [("x", x), ("d", d), ("i", i), ("b", b)], precision=prec)
            with ember.record.open(p) as r:
                name = prec if type(prec) is str else "f16"
                eq(r.metadata["ember_precision"], name)
                xs = r.read("x", device=device)
                ds = r.read("d", device=device)
                assert_true(xs.dtype is dt and ds.dtype is dt, "%r %r" % (xs.dtype, ds.dtype))
                assert_equal(xs, x.to(dt), "x as %s" % dt.name)  # the same values as ember's own cast
                assert_equal(ds, d.to(dt), "d as %s" % dt.name)
                assert_true(r.read("i", device=device).dtype is ember.int32)
                assert_true(r.read("b", device=device).dtype is ember.bool)
                assert_equal(r.read("i", device=device), i)
                assert_equal(r.read("x", device=device, dtype=ember.float32), x.to(dt).to(ember.float32))
        # cast data lengths: f16 takes 2 bytes an element
        ember.record.write(p, [("x", x)], precision="f16")
        assert_equal(ember.record.inspect(p).entries[0].nbytes, 2 * len(vals))


def test_reader_api(device):
    with Scratch() as s:
        p = s.path("r.safetensors")
        a = ember.arange(6, dtype=ember.float32, device=device).reshape(2, 3)
        b = ember.tensor([7, 8], dtype=ember.int64, device=device)
        ember.record.write(p, [("layer.a", a), ("layer.b", b)])
        r = ember.record.open(p)
        eq(r.path, p)
        eq(r.names(), ["layer.a", "layer.b"])
        assert_true("layer.a" in r and "nope" not in r and len(r) == 2)
        e = r.entry("layer.a")
        name, dt, shape, start, end = e
        assert_true(name == "layer.a" and dt is ember.float32 and shape == (2, 3) and end - start == 24)
        assert_equal(e.nbytes, 24)
        eq(e.file_dtype, "F32")
        assert_true(r.entries[0] == e and r.entries[1] != e)
        assert_equal(r.read("layer.b", device=device), b)
        assert_equal(r.read("layer.a", device=device, dtype="int32"), [[0, 1, 2], [3, 4, 5]])
        assert_true(r.read("layer.a", device=device, dtype=ember.float64).dtype is ember.float64)
        all_ = r.read_all(device=device)
        eq([n for n, _ in all_], ["layer.a", "layer.b"])
        try:
            r.read("missing")
            raise AssertionError("no error for a missing name")
        except RecordError as err:
            assert_true("'missing'" in str(err) and p in str(err), str(err))
        r.close()
        assert_true(r.closed)
        try:
            r.read("layer.a")
            raise AssertionError("no error for a closed reader")
        except RecordError as err:
            assert_true("closed" in str(err), str(err))
        r.close()  # twice is fine
        with ember.record.open(p) as r2:
            assert_equal(r2.read("layer.a", device=device), a)
        assert_true(r2.closed)


def test_inspect_reads_no_data(device):
    with Scratch() as s:
        p = s.path("i.safetensors")
        ember.record.write(p, [("conv.weight", ember.zeros(4, 1, 3, 3, device=device)),
                               ("conv.bias", ember.zeros(4, device=device, dtype=ember.float16))],
                           metadata={"note": "x" * 100})
        info = ember.record.inspect(p)
        eq(info.names(), ["conv.weight", "conv.bias"])
        d = info.as_dict()
        eq(d["tensors"][0]["shape"], [4, 1, 3, 3])
        eq(d["tensors"][0]["dtype"], "float32")
        assert_equal(d["tensors"][1]["nbytes"], 8)
        eq(d["metadata"]["note"], "x" * 100)
        text = str(info)
        for frag in ("conv.weight", "F32", "[4, 1, 3, 3]", "144", "conv.bias", "F16", "note: xxx", "..."):
            assert_true(frag in text, "%r not in\n%s" % (frag, text))
        # inspect never touches the data: a file whose data was overwritten with garbage still inspects
        raw = get(p)
        n = int.from_bytes(raw[:8], "little")
        put(p, raw[:8 + n] + b"\xff" * (len(raw) - 8 - n))
        eq(ember.record.inspect(p).names(), ["conv.weight", "conv.bias"])


def test_widened_dtypes(device):
    # safetensors dtypes ember has no twin for are read widened, exactly: I16, U16 -> int32, U32 -> int64
    import struct
    cases = [("I16", "h", [-32768, 32767, 1], ember.int32),
             ("U16", "H", [0, 65535, 9], ember.int32), ("U32", "I", [0, 4294967295, 5], ember.int64)]
    with Scratch() as s:
        p = s.path("w.safetensors")
        for name, code, vals, dt in cases:
            data = struct.pack("<3" + code, *vals)
            put(p, raw_file('{"t":{"dtype":"%s","shape":[3],"data_offsets":[0,%d]}}' % (name, len(data)), data))
            with ember.record.open(p) as r:
                e = r.entry("t")
                assert_true(e.dtype is dt and e.file_dtype == name)
                t = r.read("t", device=device)
                assert_true(t.dtype is dt)
                assert_equal(t, vals)
            assert_true(("%s (read as %s)" % (name, dt.name)) in str(ember.record.inspect(p)))


def test_uint8_is_written_and_read_as_U8(device):
    import struct
    t = ember.tensor([0, 255, 7, 128], dtype=ember.uint8, device=device)
    with Scratch() as s:
        p = s.path("u8.safetensors")
        ember.record.write(p, [("t", t)])
        with ember.record.open(p) as r:
            e = r.entry("t")
            assert_true(e.dtype is ember.uint8 and e.file_dtype == "U8")
            back = r.read("t", device=device)
        assert_true(back.dtype is ember.uint8)
        assert_equal(back, [0, 255, 7, 128])
        data = struct.pack("<3B", 0, 255, 9)
        put(p, raw_file('{"t":{"dtype":"U8","shape":[3],"data_offsets":[0,3]}}', data))
        assert_equal(ember.record.read(p, device=device)[0][1], [0, 255, 9])


def test_read_accepts_other_writers_choices(device):
    # no __metadata__, metadata null, keys in another order, extra keys, escapes, odd whitespace
    import struct
    data = struct.pack("<2f", 1.0, 2.0) + b"\x01\x00"
    header = ('\n{ "b\\u00e9" : {"data_offsets":[8,10], "shape":[2], "dtype":"BOOL", "x": {"y": [1, 2.5e3]}},'
              ' "__metadata__": null,\t"a": {"dtype":"F32","shape":[2],"data_offsets":[0,8]} }  ')
    with Scratch() as s:
        p = s.path("o.safetensors")
        put(p, raw_file(header, data))
        with ember.record.open(p) as r:
            eq(r.names(), ["b\u00e9", "a"])
            eq(r.metadata, {})
            assert_equal(r.read("a", device=device), [1.0, 2.0])
            assert_equal(r.read("b\u00e9", device=device), [True, False])
        # a file with no tensors at all
        put(p, raw_file('{"__metadata__":{"k":"v"}}'))
        eq(ember.record.read(p), [])
        put(p, raw_file("{}"))
        eq(ember.record.inspect(p).names(), [])
        # a bool byte other than 0/1 reads as True (as numpy does)
        put(p, raw_file('{"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}}', b"\x00\x02\xff"))
        assert_equal(ember.record.read(p, device=device)[0][1], [False, True, True])


def test_write_empty_and_unicode_names(device):
    with Scratch() as s:
        p = s.path("u.safetensors")
        names = ["\u00e9t\u00e9", 'we"ird\\name', "tab\tnl\n", "\u4e2d\u6587.weight", "x" * 300]
        ts = [(n, ember.full((2,), float(i), device=device)) for i, n in enumerate(names)]
        ember.record.write(p, ts)
        same_tensors(ember.record.read(p, device=device), ts)
        ember.record.write(p, [])
        eq(ember.record.read(p), [])


def test_write_rejects_bad_arguments(device):
    t = ember.ones(2, device=device)
    bad = [
        (ArgumentTypeError, [(1, t)], "name of type int"),
        (ArgumentError, [("", t)], "empty name"),
        (ArgumentError, [("a", t), ("b", t), ("a", t)], "'a' appears twice"),
        (ArgumentError, [("__metadata__", t)], "reserved"),
        (ArgumentTypeError, [("a", [1.0, 2.0])], "expected an ember.Tensor"),
        (ArgumentTypeError, [("a", t, 1)], "pair"),
        (ArgumentTypeError, {"a": t}, "dict"),
        (ArgumentTypeError, 5, "list of (name, tensor) pairs"),
    ]
    with Scratch() as s:
        p = s.path("bad.safetensors")
        for kind, arg, frag in bad:
            try:
                ember.record.write(p, arg)
            except EmberError as e:
                assert_true(isinstance(e, kind), "%r: %s %s" % (arg, type(e).__name__, e))
                assert_true(frag in str(e), "%r not in %r" % (frag, str(e)))
            else:
                raise AssertionError("no error for %r" % (arg,))
        for meta, frag in (({"a": 1}, "key 'a'"), ({1: "a"}, "key of type int"), ("x", "dict")):
            try:
                ember.record.write(p, [("a", t)], metadata=meta)
                raise AssertionError("no error for metadata %r" % (meta,))
            except ArgumentTypeError as e:
                assert_true(frag in str(e), str(e))
        for prec in ("f64", "int8", 16, ember.int8):
            try:
                ember.record.write(p, [("a", t)], precision=prec)
                raise AssertionError("no error for precision %r" % (prec,))
            except ArgumentError as e:
                assert_true("precision" in str(e), str(e))
        eq(s.files(), [])  # nothing was created


class Exploding(ember.Tensor):
    """A tensor whose bytes cannot be produced: a backend failing mid-write."""
    __slots__ = ()

    def to_bytes(self):
        raise OSError(28, "No space left on device (simulated)")


def test_write_is_atomic(device):
    with Scratch() as s:
        p = s.path("model.safetensors")
        old = [("w", ember.tensor([1.0, 2.0], device=device))]
        ember.record.write(p, old)
        before = get(p)
        good = ember.arange(1000, dtype=ember.float32, device=device)
        bad = Exploding(good._data, good.shape, good.dtype, good.device)
        try:
            ember.record.write(p, [("first", good), ("boom", bad), ("last", good)])
            raise AssertionError("the failing tensor did not stop the write")
        except OSError as e:
            assert_true("simulated" in str(e), str(e))
        assert_true(get(p) == before, "the old file changed")
        eq(s.files(), ["model.safetensors"])  # the temporary file is gone
        same_tensors(ember.record.read(p, device=device), old)
        # a failure with no previous file leaves nothing at all
        q = s.path("fresh.safetensors")
        try:
            ember.record.write(q, [("boom", bad)])
        except OSError:
            pass
        eq(s.files(), ["model.safetensors"])
        # a successful write replaces the old file completely
        new = [("v", ember.tensor([5, 6, 7], dtype=ember.int8, device=device))]
        ember.record.write(p, new)
        same_tensors(ember.record.read(p, device=device), new)
        eq(s.files(), ["model.safetensors"])


def test_reading_holds_one_tensor_at_a_time(device):
    # reading a small tensor from a large file allocates about that tensor, not the file
    with Scratch() as s:
        p = s.path("big.safetensors")
        big = ember.zeros(20000, device=device)  # 80 kB
        ember.record.write(p, [("big", big), ("small", ember.ones(4, device=device))])
        size = len(get(p))
        with ember.record.open(p) as r:
            used = _allocated(lambda: r.read("small", device=device))
        assert_true(used < size // 8, "reading 16 bytes allocated %d bytes of a %d-byte file" % (used, size))


def _allocated(fn):
    """Bytes allocated while ``fn`` runs: tracemalloc's peak on CPython, the heap growth with the
    collector off on MicroPython (nothing is freed, so it bounds the peak)."""
    try:
        import tracemalloc
    except ImportError:
        gc.collect()
        gc.disable()
        try:
            before = gc.mem_alloc()
            fn()
            return gc.mem_alloc() - before
        finally:
            gc.enable()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# -- hostile files: each a RecordError naming the file and the key ------------------------------

GOOD = '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}'
DATA8 = b"\x00\x00\x80?\x00\x00\x00@"


def test_hostile_truncated(device):
    with Scratch() as s:
        p = s.path("t.safetensors")
        whole = raw_file(GOOD, DATA8)
        expect_record_error(p, b"", "truncated", "8-byte")
        expect_record_error(p, whole[:7], "truncated")
        for cut in (9, 8 + len(GOOD) - 1):  # inside the header
            expect_record_error(p, whole[:cut], "truncated", "runs past the end")
        for cut in (8 + len(GOOD), len(whole) - 1):  # inside the data
            expect_record_error(p, whole[:cut], "'a'", "outside")
        expect_record_error(p, whole + b"\x00", "1 bytes of data follow the last tensor", "'a'")


def test_hostile_header_length(device):
    with Scratch() as s:
        p = s.path("n.safetensors")
        for n in (2 ** 64 - 1, 2 ** 63, 10 ** 9, 100000001):
            expect_record_error(p, raw_file(GOOD, DATA8, n=n), "larger than the 100000000-byte limit")
        expect_record_error(p, raw_file(GOOD, DATA8, n=len(GOOD) + 9), "runs past the end")
        expect_record_error(p, raw_file(GOOD, DATA8, n=0), "too small")
        expect_record_error(p, raw_file(GOOD, DATA8, n=1), "too small")
        # a length that ends inside the JSON: the rest reads as data, the JSON is cut short
        expect_record_error(p, raw_file(GOOD, DATA8, n=len(GOOD) - 3), "not valid JSON")


def test_hostile_invalid_json(device):
    with Scratch() as s:
        p = s.path("j.safetensors")
        for text in ('{"a":', "{'a': 1}", '{"a" 1}', '{"a":1,}', '{"a":1} x', '{"a":NaN}', '{1: 2}', '{,}',
                     '{"a":[1 2]}', '{"a":01}', '{"a":"\x01"}', '{"a":tru}', '{"a":"\\x"}', '{"a":-}',
                     '{"a":"\\ud800"}', '{"\\udc00":1}', "[" * 1000 + "]" * 1000, '{"a":' * 500 + "1" + "}" * 500,
                     '{"a":1' + "0" * 100 + "}", "\ufeff{}", '{"a":"b":1}', "{}\x00", '{"a":1 "b":2}'):
            expect_record_error(p, raw_file(text), "not valid JSON")
        expect_record_error(p, raw_file(b'{"\xff\xfe":1}'), "not valid UTF-8")
        expect_record_error(p, raw_file(b'{"a":"\xc3"}  '), "not valid UTF-8")


def test_hostile_header_not_an_object(device):
    with Scratch() as s:
        p = s.path("o.safetensors")
        for text, kind in (("[]", "an array"), ('"x"', "a string"), ("12", "a number"), ("null", "null"),
                           ("true", "a boolean")):
            expect_record_error(p, raw_file(text), "the header is %s, expected a JSON object" % kind)


def test_hostile_duplicate_keys(device):
    with Scratch() as s:
        p = s.path("d.safetensors")
        e = '{"dtype":"F32","shape":[1],"data_offsets":[0,4]}'
        expect_record_error(p, raw_file('{"a":%s,"a":%s}' % (e, e), DATA8[:4]), "duplicate key 'a'")
        expect_record_error(p, raw_file('{"a":%s,"\\u0061":%s}' % (e, e), DATA8[:4]), "duplicate key 'a'")
        expect_record_error(p, raw_file('{"a":{"dtype":"F32","dtype":"I32","shape":[1],"data_offsets":[0,4]}}',
                                        DATA8[:4]), "duplicate key 'dtype'")
        expect_record_error(p, raw_file('{"__metadata__":{"k":"1","k":"2"}}'), "duplicate key 'k'")
        expect_record_error(p, raw_file('{"__metadata__":{},"__metadata__":{}}'), "duplicate key '__metadata__'")


def test_hostile_entries(device):
    with Scratch() as s:
        p = s.path("e.safetensors")

        def entry(body, data=DATA8, name="w"):
            return raw_file('{"%s":%s}' % (name, body), data)

        expect_record_error(p, entry('[1, 2]'), "tensor 'w' is an array, expected an object")
        expect_record_error(p, entry('"F32"'), "tensor 'w' is a string")
        expect_record_error(p, entry('{"shape":[2],"data_offsets":[0,8]}'), "tensor 'w' has no 'dtype'")
        expect_record_error(p, entry('{"dtype":"F32","data_offsets":[0,8]}'), "tensor 'w' has no 'shape'")
        expect_record_error(p, entry('{"dtype":"F32","shape":[2]}'), "tensor 'w' has no 'data_offsets'")
        for dt in ('"F8_E4M3"', '"XYZ"', '"U64"', '"f32"', '""'):
            expect_record_error(p, entry('{"dtype":%s,"shape":[2],"data_offsets":[0,8]}' % dt),
                                "tensor 'w': dtype %s is not one ember reads" % dt.replace('"', "'"))
        for dt, kind in (("5", "a number"), ("null", "null"), ('["F32"]', "an array")):
            expect_record_error(p, entry('{"dtype":%s,"shape":[2],"data_offsets":[0,8]}' % dt),
                                "tensor 'w': dtype %s is not one ember reads" % kind)
        for shape, frag in (('"2"', "shape is a string"), ("2", "shape is a number"), ("{}", "shape is an object"),
                            ('[2, "1"]', "holds a string"), ("[true, 2]", "holds a boolean"),
                            ("[-1, -8]", "holds -1"), ("[2.0]", "holds a number"), ("[null]", "holds null"),
                            ("[" + ",".join(["1"] * 65) + "]", "65 dims, more than 64")):
            expect_record_error(p, entry('{"dtype":"F32","shape":%s,"data_offsets":[0,8]}' % shape),
                                "tensor 'w': shape", frag)
        for offs, frag in (('[0]', "data_offsets is [0]"), ("[0, 4, 8]", "data_offsets is [0, 4, 8]"),
                           ('"0:8"', "data_offsets is a string"), ('["0", 8]', "expected [begin, end]"),
                           ("[0, 8.0]", "expected [begin, end]"), ("[false, 8]", "expected [begin, end]"),
                           ("[8, 0]", "data_offsets [8, 0] are outside"), ("[-8, 0]", "[-8, 0] are outside"),
                           ("[0, 16]", "[0, 16] are outside the 8 bytes"),
                           ("[0, 18446744073709551616]", "are outside")):
            expect_record_error(p, entry('{"dtype":"F32","shape":[2],"data_offsets":%s}' % offs),
                                "tensor 'w'", frag)


def test_hostile_sizes(device):
    with Scratch() as s:
        p = s.path("s.safetensors")

        def entry(shape, offs="[0,8]", dt="F32"):
            return raw_file('{"w":{"dtype":"%s","shape":%s,"data_offsets":%s}}' % (dt, shape, offs), DATA8)

        expect_record_error(p, entry("[3]"), "tensor 'w': shape [3] of F32 needs 12 bytes, data_offsets [0, 8] hold 8")
        expect_record_error(p, entry("[1]"), "needs 4 bytes")
        expect_record_error(p, entry("[4]", dt="F64"), "needs 32 bytes")
        # absurd shapes fail on arithmetic alone, before anything is allocated
        for shape in ("[4611686018427387904, 4611686018427387904]", "[1000000000000]",
                      "[" + ",".join(["65536"] * 60) + "]", "[18446744073709551615, 0, 3]"):
            expect_record_error(p, entry(shape), "tensor 'w': shape")
        expect_record_error(p, entry("[0, 1000000000000]", offs="[0,0]"), "8 bytes of data follow the last tensor")


def test_hostile_tiling(device):
    with Scratch() as s:
        p = s.path("g.safetensors")

        def two(a, b, data=DATA8):
            return raw_file('{"x":{"dtype":"F32","shape":[1],"data_offsets":%s},'
                            '"y":{"dtype":"F32","shape":[1],"data_offsets":%s}}' % (a, b), data)

        expect_record_error(p, two("[0,4]", "[0,4]"), "overlaps", "'x'", "'y'")
        expect_record_error(p, two("[0,4]", "[2,6]", DATA8[:6]), "overlaps")
        expect_record_error(p, two("[4,8]", "[4,8]"), "gap of 4 bytes before tensor")
        expect_record_error(p, two("[0,4]", "[8,12]", DATA8 + b"1234"), "gap of 4 bytes before tensor 'y'",
                            "after tensor 'x'")
        expect_record_error(p, raw_file("{}", DATA8), "8 bytes of data follow the last tensor")
        expect_record_error(p, raw_file('{"__metadata__":{}}', b"x"), "1 bytes of data follow")
        # tensors listed out of data order are fine
        put(p, two("[4,8]", "[0,4]"))
        got = ember.record.read(p, device=device)
        eq([n for n, _ in got], ["x", "y"])
        assert_equal(got[0][1], [2.0])
        assert_equal(got[1][1], [1.0])


def test_hostile_metadata(device):
    with Scratch() as s:
        p = s.path("m.safetensors")
        for meta, frag in (('[]', "'__metadata__' is an array"), ('"a=b"', "'__metadata__' is a string"),
                           ('{"k":1}', "'__metadata__' key 'k' is a number, expected a string"),
                           ('{"k":null}', "key 'k' is null"), ('{"k":{"a":"b"}}', "key 'k' is an object"),
                           ('{"k":["a"]}', "key 'k' is an array"), ('{"k":true}', "key 'k' is a boolean"),
                           ('{"ember_format_version":"2"}', "written by a newer ember"),
                           ('{"ember_format_version":"x1"}', "'ember_format_version' is 'x1'"),
                           ('{"ember_format_version":""}', "expected a decimal integer")):
            expect_record_error(p, raw_file('{"__metadata__":%s}' % meta), frag)


def test_hostile_file_changed_after_open(device):
    with Scratch() as s:
        p = s.path("c.safetensors")
        # large enough that a buffered reader has not read the tensors ahead with the header
        ember.record.write(p, [("a", ember.ones(5000, device=device)), ("b", ember.ones(5000, device=device))])
        raw = get(p)
        with ember.record.open(p) as r:
            with open(p, "wb") as f:  # another program truncates the file in place
                f.write(raw[:len(raw) - 50])
            try:
                r.read("b", device=device)
                r.read("a", device=device)
                raise AssertionError("no error for a file truncated after open")
            except RecordError as e:
                assert_true("truncated" in str(e) and p in str(e), str(e))


def test_hostile_no_other_exception_on_mutations(device):
    # a small deterministic fuzz that also runs on MicroPython: every byte of a valid file set to a
    # few values, and every truncation; each read either succeeds or raises RecordError
    with Scratch() as s:
        p = s.path("f.safetensors")
        ember.record.write(p, [("w", ember.tensor([[1.0, -2.0]], device=device)),
                               ("i", ember.tensor([3], dtype=ember.int8, device=device)),
                               ("b", ember.tensor([True], device=device))], metadata={"k": "v"})
        good = get(p)
        runs = 0
        variants = [good[:k] for k in range(len(good))]
        for k in range(len(good)):
            for v in (0x00, 0x22, 0x39, 0x7D, 0xFF):
                if good[k] != v:
                    variants.append(good[:k] + bytes([v]) + good[k + 1:])
        for data in variants:
            put(p, data)
            try:
                ember.record.read(p, device=device)
            except RecordError as e:
                assert_true(p in str(e), str(e))
            runs += 1
        assert_true(runs > 1000, "ran %d variants" % runs)


# -- the MicroPython JSON parser, checked on both interpreters ------------------------------------

def test_json_parser(device):
    ok = [
        ("{}", {}, []),
        ('  {"b": 1, "a": [1, -2, 3.5, 1e2, -0.5E-1, true, false, null], "c": {"d": "e"}}\n ',
         {"b": 1, "a": [1, -2, 3.5, 100.0, -0.05, True, False, None], "c": {"d": "e"}}, ["b", "a", "c"]),
        ('{"\\u00e9\\n\\"\\\\\\/\\b\\f\\r\\t": "\\ud83d\\ude00x"}', {"\u00e9\n\"\\/\b\f\r\t": "\U0001F600x"},
         ["\u00e9\n\"\\/\b\f\r\t"]),
        ('{"": ""}', {"": ""}, [""]),
        ('[{"a": []}, [], [[]]]', [{"a": []}, [], [[]]], None),
        ('"s"', "s", None),
        ("-0", 0, None),
        ('{"n": 18446744073709551615}', {"n": 18446744073709551615}, ["n"]),
        ("[" * 64 + "]" * 64, None, None),
    ]
    for text, value, order in ok:
        for fn in (_json.parse, _json.loads):
            got, keys = fn(text)
            if value is not None:
                assert_true(got == value, "%r parsed as %r" % (text, got))
            assert_true(keys == order, "%r: keys %r" % (text, keys))
    bad = ['{"a":1,"a":2}', '{"a":', '{"a" 1}', "{'a':1}", '{"a":1,}', "[1,]", "[1 2]", '{"a":1}}', "{} {}",
           '{"a":01}', '{"a":1.}', '{"a":.5}', '{"a":1e}', '{"a":+1}', '{"a":NaN}', '{"a":Infinity}',
           '{"a":-Infinity}', '{"a":"\\u12"}', '{"a":"\\u12G4"}', '{"a":"\\ud800"}', '{"a":"\\udc00"}',
           '{"a":"\\ud800\\u0041"}', '{"a":"x\ny"}', '{"a":"\\q"}', "", "   ", "tru", "nul", "{1:2}", '{"a"}',
           "[" * 65 + "]" * 65, '{"a":' + "9" * 65 + "}", '{"a":"unterminated}', '"\\', '{"a":[}', "[1}"]
    for text in bad:
        for fn in (_json.parse, _json.loads):
            try:
                fn(text)
            except _json.JsonError:
                continue
            raise AssertionError("%s accepted %r" % (fn.__name__, text))
