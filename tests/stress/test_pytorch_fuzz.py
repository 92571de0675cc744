"""The PyTorch checkpoint fuzzer: mutated ``torch.save`` files (the pickle's opcodes and integers,
spliced hostile snippets, the zip structure, storage members, legacy counts), each read whole by
``ember.accel.pytorch.load``. A damaged file may only raise ``RecordError``, within 2 s, and with a
sampled allocation peak bounded by the file's size; a file that torch's own
``torch.load(weights_only=True)`` also accepts must give the same values (torch is only the oracle:
it makes the base files and checks results). Seeds are fixed: a failure names its seed and input."""
import io
import math
import os
import random
import struct
import time
import tracemalloc
import zipfile

import torch

from ember import RecordError
from ember.accel import pytorch

from probes import Outcomes, scale

SEEDS = (17, 1702, 99991, 4242)
INPUTS = scale(2000, 100000)  # over all seeds
SLOW = 2.0  # seconds: any input slower than this is a hang
SNIPPETS = [b"cposix\nsystem\n", b"cbuiltins\neval\n", b"(", b"t", b"R", b"b", b".", b"0", b"2", b"N", b"]", b"}",
            b"u", b"s", b"a", b"e", b"Q", b"\x81", b"\x93", b"\x94", b"h\x00", b"j\xff\xff\xff\x00", b"i", b"o",
            b"X\xff\xff\xff\x7f", b"\x8e" + struct.pack("<Q", 1 << 60), b"\x8b\xff\xff\xff\x7f", b"K\xff",
            b"J\xff\xff\xff\xff", b"\x8a\x08" + b"\xff" * 8, b"(" * 1000, b"ctorch\nFloatStorage\n",
            b"ccollections\nOrderedDict\n", b"ctorch._utils\n_rebuild_tensor_v2\n", b"\x95" + b"\xff" * 8]


def _bases(folder):
    """(kind, file bytes) of a few valid checkpoints: dtypes, views, shared storages, both formats."""
    torch.manual_seed(1)  # the Linear's initial weights too: a seed and an input number replay a failure
    x = torch.randn(4, 6)
    objs = [
        {"w": x, "b": x[0], "t": x.t()},
        {"model": {"a": x.half(), "c": (x * 9).to(torch.int8), "m": x > 0, "u": (x.abs() * 9).to(torch.uint16)}},
        [x.bfloat16(), x.double()[:, 1:5:2], torch.tensor(3), {"k": x.long()}],
        torch.nn.Linear(3, 2).state_dict(),
    ]
    out = []
    for i, obj in enumerate(objs):
        for legacy in (False, True):
            path = os.path.join(folder, "base%d.pt" % i)
            torch.save(obj, path, _use_new_zipfile_serialization=not legacy)
            with open(path, "rb") as f:
                out.append(("legacy" if legacy else "zip", f.read()))
    return out


def _mutate_pickle(rng, p):
    p = bytearray(p)
    for _ in range(rng.choice([1, 1, 1, 2, 3, 8])):
        if not p:
            p = bytearray(b"\x80")
        what = rng.randrange(7)
        i = rng.randrange(len(p))
        if what == 0:
            p[i] = rng.randrange(256)
        elif what == 1:
            p[i] ^= 1 << rng.randrange(8)
        elif what == 2:
            p[i:i] = rng.choice(SNIPPETS)
        elif what == 3:
            del p[i:i + rng.randint(1, 16)]
        elif what == 4:
            j = rng.randrange(len(p))
            p[i:i] = p[j:j + rng.randint(1, 32)]
        elif what == 5 and p[i:i + 1] == b"K" and i + 1 < len(p):  # a small int: its neighbours
            p[i + 1] = rng.choice([0, 1, 2, 3, 5, 7, 9, 255])
        else:
            del p[i:]
    return bytes(p)


def _rezip(members):
    """A zip of ``members`` laid out as torch.save lays it: each member's data 64-byte aligned
    (torch's own reader misreads unaligned storages, and it is the oracle here)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, data in members:
            info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
            pad = -(buf.tell() + 30 + len(name.encode()) + 4) % 64
            info.extra = struct.pack("<HH", 0x4246, pad) + b"Z" * pad  # the padding field torch writes
            z.writestr(info, data)
    return buf.getvalue()


def _mutate(rng, kind, body):
    if kind == "zip" and rng.random() < 0.75:
        z = zipfile.ZipFile(io.BytesIO(body))
        members = [(i.filename, z.read(i)) for i in z.infolist()]
        k = rng.randrange(len(members))
        name, data = members[k]
        if name.endswith("data.pkl") or rng.random() < 0.3:
            data = _mutate_pickle(rng, data) if name.endswith("data.pkl") else data[:rng.randrange(len(data) + 1)]
        else:
            name = rng.choice([name + "x", "../" + name, name.replace("/", "/../", 1), "/" + name, name])
        members[k] = (name, data)
        return _rezip(members)
    if kind == "legacy" and rng.random() < 0.75:
        return _mutate_pickle(rng, body)
    b = bytearray(body)
    for _ in range(rng.choice([1, 2, 4])):
        i = rng.randrange(len(b))
        b[i] = rng.randrange(256)
    if rng.random() < 0.2:
        del b[rng.randrange(len(b)):]
    return bytes(b)


def _values(t):
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    if t.dtype in (torch.uint16, torch.uint32):
        t = t.long()
    return t.reshape(-1).tolist()


def _same(a, b):
    return len(a) == len(b) and all(x == y or (isinstance(x, float) and math.isnan(x) and math.isnan(y))
                                    for x, y in zip(a, b))


def _truth(bases):
    """Each base file's tensors as torch reads them: name -> flat values (what an undamaged read gives)."""
    truth = {}
    for _, body in bases:
        try:
            ref = torch.load(io.BytesIO(body), weights_only=True)
        except AttributeError:  # torch 2.13 cannot read its own legacy file of a uint16 tensor
            continue
        if isinstance(ref, dict):
            for k, v in ref.items():
                if isinstance(v, torch.Tensor):
                    truth.setdefault(k, []).append(_values(v))
    return truth


def _check_against_torch(out, label, path, got, truth):
    try:
        ref = torch.load(path, weights_only=True)
    except Exception:  # torch refuses it: nothing to compare
        return
    if not isinstance(ref, dict) or not all(isinstance(v, torch.Tensor) for v in ref.values()):
        return
    names = [k for k in ref if isinstance(k, str)]
    if sorted(names) != sorted(got) and not [k for k in names if k.startswith("module.")]:
        out.wrong(label, "names %s, torch reads %s" % (sorted(got)[:5], sorted(names)[:5]))
        return
    for k in names:
        mine = got[k].reshape(-1).tolist() if k in got else None
        # where a damaged local header misleads torch's zip reader, ember's value is the undamaged one
        if mine is not None and not _same(mine, _values(ref[k])) and not any(_same(mine, v) for v in truth.get(k, ())):
            out.wrong(label, "tensor %s differs from torch's" % k)


def test_pytorch_fuzz(tmp_path):
    folder = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else str(tmp_path)
    path = os.path.join(folder, "ember-ptfuzz-%d.pt" % os.getpid())
    bases = _bases(str(tmp_path))
    truth = _truth(bases)
    with open(path, "wb") as f:
        f.write(bases[0][1])
    pytorch.load(path)  # warm: the first load imports what ember loads lazily, which is no input's doing
    out = Outcomes("pytorch_fuzz", RecordError)
    worst, worst_mem, biggest = 0.0, 0, 0
    per_seed = INPUTS // len(SEEDS)
    try:
        for seed in SEEDS:
            rng = random.Random(seed)
            for i in range(per_seed):
                kind, body = rng.choice(bases)
                data = _mutate(rng, kind, body)
                with open(path, "wb") as f:
                    f.write(data)
                label = "seed %d input %d" % (seed, i)
                traced = i % 25 == 0
                if traced:
                    tracemalloc.start()
                t0 = time.perf_counter()
                got = out.run(label, lambda: pytorch.load(path))
                took = time.perf_counter() - t0
                if traced:
                    peak = tracemalloc.get_traced_memory()[1]
                    tracemalloc.stop()
                    worst_mem = max(worst_mem, peak)
                    biggest = max(biggest, len(data))
                    if peak > 64 * len(data) + (1 << 20):
                        out.wrong(label, "allocated %d bytes for a file of %d" % (peak, len(data)))
                worst = max(worst, took)
                if took > SLOW:
                    out.wrong(label, "took %.2f s" % took)
                if got is not None:
                    _check_against_torch(out, label, path, got, truth)
    finally:
        if os.path.exists(path):
            os.remove(path)
    print("pytorch_fuzz: %d inputs, %d accepted, slowest %.3f s, largest sampled allocation peak %d bytes "
          "(files of at most %d bytes)" % (out.inputs, out.accepted, worst, worst_mem, biggest))
    assert out.inputs >= INPUTS - len(SEEDS) and out.rejected > out.inputs // 4 and out.accepted > 20
    out.check()
