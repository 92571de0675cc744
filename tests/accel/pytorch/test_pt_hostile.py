"""The hostile corpus: pickles and archives that would run code, import modules, read outside the
file or inflate without bound under a stock unpickler or a careless zip reader. Every one is refused
with a ``RecordError``, and nothing happened: the sentinel file a payload would create does not
exist, and no module was imported."""
import io
import os
import pickle
import struct
import sys
import tracemalloc
import zipfile

import pytest

from ember import RecordError
from ember.accel import pytorch

import torch  # noqa: E402  the dev extra has it: the fixtures are made by torch.save

SENTINEL = os.path.join(os.environ.get("TMPDIR", "/tmp"), "ember-pt-hostile-%d" % os.getpid())
FRESH = ("this", "antigravity", "smtplib", "webbrowser", "xmlrpc.client", "ftplib")  # modules a payload names


def _u(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def _global(module, name):
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


class Reduce:
    """An object whose ``__reduce__`` is the payload (what a malicious checkpoint holds)."""

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return self.fn, self.args


TOUCH = "open(%r, 'w').write('pwned')" % SENTINEL
STORAGE_OK = b"(" + _u("storage") + _global("torch", "FloatStorage") + _u("0") + _u("cpu") + b"K\x02t"


def _tensor_pickle(pid=STORAGE_OK, size=b"K\x02\x85", stride=b"K\x01\x85", offset=b"K\x00"):
    return (b"\x80\x02}(" + _u("w") + _global("torch._utils", "_rebuild_tensor_v2") + b"(" + pid + b"Q" + offset
            + size + stride + b"\x89" + _global("collections", "OrderedDict") + b")RtRu.")


def pickles():
    """(label, data.pkl bytes) that must be refused."""
    import builtins
    out = []
    for proto in range(0, 6):
        out.append(("os.system proto %d" % proto, pickle.dumps(Reduce(os.system, ("touch " + SENTINEL,)), proto)))
        out.append(("eval proto %d" % proto, pickle.dumps(Reduce(builtins.eval, (TOUCH,)), proto)))
        out.append(("exec proto %d" % proto, pickle.dumps(Reduce(builtins.exec, (TOUCH,)), proto)))
    out.append(("gadget inside a state dict", pickle.dumps({"w": 1, "x": Reduce(os.system, ("touch " + SENTINEL,))}, 2)))
    out += [
        ("getattr chain", b"\x80\x02" + _global("builtins", "getattr") + b"(" + _global("builtins", "__import__")
         + b"(" + _u("os") + b"tR" + _u("system") + b"tR(" + _u("touch " + SENTINEL) + b"tR."),
        ("__builtin__ eval", b"\x80\x02" + _global("__builtin__", "eval") + b"(" + _u(TOUCH) + b"tR."),
        ("STACK_GLOBAL eval", b"\x80\x04" + _u("builtins") + _u("eval") + b"\x93(" + _u(TOUCH) + b"tR."),
        ("fresh module import", b"\x80\x02" + _global("this", "s") + b"."),
        ("fresh module 2", b"\x80\x02" + _global("antigravity", "geohash") + b"."),
        ("smtplib", b"\x80\x02" + _global("smtplib", "SMTP") + b")R."),
        ("nested GLOBAL/REDUCE in OrderedDict args", b"\x80\x02" + _global("collections", "OrderedDict") + b"(]("
         + _global("posix", "system") + b"(" + _u("touch " + SENTINEL) + b"tR" + _u("v") + b"\x86atR."),
        ("REDUCE of a non-callable", b"\x80\x02" + _u("os") + b")R."),
        ("REDUCE of a storage type", b"\x80\x02" + _global("torch", "FloatStorage") + b")R."),
        ("INST", b"(" + _u("touch " + SENTINEL) + b"ios\nsystem\n."),
        ("INST of allowed", b"(ccollections\nOrderedDict\n" + b"o."),
        ("OBJ", b"\x80\x02(" + _global("collections", "OrderedDict") + b"o."),
        ("NEWOBJ of posix", b"\x80\x02" + _global("posix", "system") + b")\x81."),
        ("NEWOBJ with args", b"\x80\x02" + _global("collections", "OrderedDict") + b"(K\x01t\x81."),
        ("NEWOBJ_EX", b"\x80\x04" + _global("collections", "OrderedDict") + b")}\x92."),
        ("EXT1", b"\x80\x02\x82\x01."),
        ("EXT4", b"\x80\x02\x84\x01\x00\x00\x00."),
        ("text PERSID", b"Pfoo\n."),
        ("BUILD on a list", b"\x80\x02]}b."),
        ("BUILD on a string", b"\x80\x02" + _u("x") + b"}b."),
        ("NEXT_BUFFER", b"\x80\x05\x97."),
        ("BINPERSID without a tuple", b"\x80\x02" + _u("x") + b"Q."),
        ("BINPERSID of a non-storage", b"\x80\x02(" + _u("module") + _u("os") + _u("0") + _u("cpu") + b"K\x01tQ."),
        ("BINPERSID with a forged type", b"\x80\x02(" + _u("storage") + _global("collections", "OrderedDict") + _u("0")
         + _u("cpu") + b"K\x01tQ."),
        ("BINPERSID key escaping", b"\x80\x02(" + _u("storage") + _global("torch", "FloatStorage")
         + _u("../../etc/passwd") + _u("cpu") + b"K\x01tQ."),
        ("BINPERSID absent member", b"\x80\x02(" + _u("storage") + _global("torch", "FloatStorage") + _u("99")
         + _u("cpu") + b"K\x01tQ."),
        ("BINPERSID size lies", b"\x80\x02(" + _u("storage") + _global("torch", "FloatStorage") + _u("0")
         + _u("cpu") + b"J\x00\x00\x00\x40tQ."),
        ("BINUNICODE claims 4 GiB", b"\x80\x02X\xff\xff\xff\xff."),
        ("BINBYTES8 claims 2**62", b"\x80\x04\x8e" + struct.pack("<Q", 1 << 62) + b"."),
        ("BINUNICODE8 claims 2**63", b"\x80\x04\x8d" + struct.pack("<Q", 1 << 63) + b"."),
        ("BYTEARRAY8", b"\x80\x05\x96" + struct.pack("<Q", 1 << 40) + b"."),
        ("LONG4 of 2 GiB", b"\x80\x02\x8b\xff\xff\xff\x7f."),
        ("LONG of 10**6 digits", b"L" + b"9" * 1000000 + b"L\n."),
        ("unknown opcode", b"\x80\x02\xff."),
        ("truncated", b"\x80\x02}(" + _u("a")),
        ("GET never PUT", b"\x80\x02h\x07."),
        ("unhashable key", b"\x80\x02}]K\x01s."),
        ("tensor past its storage", _tensor_pickle(size=b"K\x09\x85")),
        ("tensor with negative offset", _tensor_pickle(offset=b"J\xff\xff\xff\xff")),
        ("stride-0 tensor of 2**40 elements", _tensor_pickle(size=b"\x8a\x06" + (1 << 40).to_bytes(6, "little") + b"\x85",
                                                                  stride=b"K\x00\x85")),
        ("tensor of a string storage", b"\x80\x02" + _global("torch._utils", "_rebuild_tensor_v2") + b"(" + _u("s")
         + b"K\x00K\x01\x85K\x01\x85\x89}tR."),
        ("deep marks", b"\x80\x02" + b"(" * 200000 + b"."),
    ]
    return out


def _zip(members, compress=zipfile.ZIP_STORED):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def archives(good_zip):
    """(label, file bytes) of damaged or hostile archives around a valid data.pkl."""
    z = zipfile.ZipFile(io.BytesIO(good_zip))
    members = [(i.filename, z.read(i)) for i in z.infolist()]
    pkl = [d for n, d in members if n.endswith("data.pkl")][0]
    bomb = _zip([("a/data.pkl", b"\x80\x02" + b"N0" * (20 << 20) + b"N.")], zipfile.ZIP_DEFLATED)
    escaped = [("../" + n, d) for n, d in members]
    out = [
        ("member escaping with ..", _zip(escaped)),
        ("absolute member", _zip([("/" + n, d) for n, d in members])),
        ("data member with ..", _zip(members + [("a/data/../../evil", b"x")])),
        ("zip bomb data.pkl", bomb),
        ("two data.pkl", _zip(members + [("b/data.pkl", pkl)])),
        ("no data.pkl", _zip([(n, d) for n, d in members if not n.endswith("data.pkl")])),
        ("compressed storage", _zip(members, zipfile.ZIP_DEFLATED)),
        ("big-endian", _zip([(n, b"big" if n.endswith("byteorder") else d) for n, d in members])),
        ("truncated zip", good_zip[:len(good_zip) // 2]),
        ("zip with a hostile pickle", _zip([(n, pickle.dumps(Reduce(os.system, ("touch " + SENTINEL,)), 2)
                                             if n.endswith("data.pkl") else d) for n, d in members])),
    ]
    return out


def legacy_files(good_legacy):
    evil = pickle.dumps(Reduce(os.system, ("touch " + SENTINEL,)), 2)
    magic = pickle.dumps(0x1950a86a20f9469cfc6c, 2) + pickle.dumps(1001, 2)
    info = pickle.dumps({"protocol_version": 1001, "little_endian": True, "type_sizes": {}}, 2)
    return [
        ("legacy: evil first pickle", evil + good_legacy),
        ("legacy: evil object pickle", magic + info + evil),
        ("legacy: evil system info", magic + evil),
        ("legacy: big-endian", magic + pickle.dumps({"little_endian": False}, 2) + evil),
        ("legacy: storage count 2**60", good_legacy[:-16] + struct.pack("<q", 1 << 60) + good_legacy[-8:]),
        ("legacy: truncated storages", good_legacy[:-3]),
        ("legacy: wrong key list", good_legacy.replace(b"]q\x00X", b"]q\x00X", 1)[:-24] + pickle.dumps(["x"], 2)),
    ]


def test_hostile_corpus_is_refused_without_side_effects(tmp_path):
    good = tmp_path / "good.pt"
    torch.save({"w": torch.ones(2)}, str(good))
    legacy = tmp_path / "legacy.pt"
    torch.save({"w": torch.ones(2)}, str(legacy), _use_new_zipfile_serialization=False)
    pytorch.load(str(good))  # warm: whatever ember imports lazily is imported now
    pytorch.load(str(legacy))
    (tmp_path / "x.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(RecordError, match="found: unknown format"):
        pytorch.load(str(tmp_path / "x.pt"))
    b"x".decode("cp437")  # zipfile reads names not flagged UTF-8 as cp437: the codec is ember's, not a payload's
    files = []
    good_zip = good.read_bytes()
    z = zipfile.ZipFile(io.BytesIO(good_zip))
    for label, data in pickles():
        files.append((label, _zip([(i.filename, data if i.filename.endswith("data.pkl") else z.read(i))
                                   for i in z.infolist()])))
        if not data.startswith(b"\x80\x02\x8a"):
            files.append(("legacy-wrapped " + label, data))
    files += archives(good_zip) + legacy_files(legacy.read_bytes())
    for name in FRESH:
        assert name not in sys.modules
    before = set(sys.modules)
    refused = []
    tracemalloc.start()
    try:
        for i, (label, data) in enumerate(files):
            path = str(tmp_path / ("h%d.pt" % i))
            with open(path, "wb") as f:
                f.write(data)
            tracemalloc.reset_peak()
            try:
                pytorch.load(path)
            except RecordError as e:
                refused.append(label)
                assert str(e), label
            peak = tracemalloc.get_traced_memory()[1]
            assert peak < 64 * len(data) + (8 << 20), "%s: %d bytes allocated for a %d-byte file" % (label, peak, len(data))
    finally:
        tracemalloc.stop()
    assert [lbl for lbl, _ in files if lbl not in refused] == []  # 100% refused
    assert not os.path.exists(SENTINEL)
    assert set(sys.modules) - before == set()
    assert len(files) > 80


def test_refusals_say_what_they_refused(tmp_path):
    good = tmp_path / "g.pt"
    torch.save({"w": torch.ones(2)}, str(good))
    z = zipfile.ZipFile(str(good))
    good.write_bytes(_zip([(i.filename, _tensor_pickle() if i.filename.endswith("data.pkl") else z.read(i))
                           for i in z.infolist()]))
    assert pytorch.load(str(good))["w"].tolist() == [1.0, 1.0]  # the corpus' hand-made tensor pickle, undamaged
    path = tmp_path / "e.pt"
    with open(str(path), "wb") as f:
        f.write(pickle.dumps(Reduce(os.system, ("true",)), 2))
    with pytest.raises(RecordError, match=r"global posix.system is not allowed.*refusing to run code"):
        pytorch.open(str(path))
    path.write_bytes(b"\x80\x02X\xff\xff\xff\xff.")
    with pytest.raises(RecordError, match="BINUNICODE claims 4294967295 bytes, only 1 are left"):
        pytorch.open(str(path))
    path.write_bytes(_zip([("../x/data.pkl", b"N.")]))
    with pytest.raises(RecordError, match="escapes the archive"):
        pytorch.open(str(path))
