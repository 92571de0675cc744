"""What ``ember.accel.pytorch`` reads from ``torch.save`` files: every dtype torch stores, views
(non-contiguous, offset, shared storages), both formats, nested containers, key selection and
remapping, partial loads, casts; ``Module.load_state_dict`` of foreign tensors; ``ember convert``;
and no ``import torch`` anywhere on the way."""
import os
import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

import ember
from ember import RecordError, record
from ember.accel import pytorch
from ember.accel.cli import convert, formats
from ember.errors import ArgumentError, ArgumentTypeError
from ember.nn.linear import Linear

import torch  # noqa: E402  the dev extra has it: the fixtures are made by torch.save

FORMATS = pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])


def save(obj, path, legacy=False):
    torch.save(obj, str(path), _use_new_zipfile_serialization=not legacy)
    return str(path)


def as_list(t):
    """A torch tensor's values as ember reads them (bf16/f16 through float32, ints widened)."""
    if t.dtype in (torch.bfloat16, torch.float16):
        t = t.float()
    if t.dtype in (torch.uint16, torch.uint32):
        t = t.long()
    return t.tolist()


@FORMATS
def test_every_dtype_torch_stores(tmp_path, legacy):
    g = torch.Generator().manual_seed(0)
    base = torch.randn(3, 4, generator=g) * 100
    tensors = OrderedDict([
        ("f32", base), ("f64", base.double()), ("f16", base.half()), ("bf16", base.bfloat16()),
        ("i64", base.long()), ("i32", base.int()), ("i16", base.short()), ("i8", base.to(torch.int8)),
        ("u8", base.abs().to(torch.uint8)), ("bool", base > 0),
        ("u16", (base.abs() * 50).to(torch.int32).to(torch.uint16)),
        ("u32", (base.abs() * 1e6).to(torch.int64).to(torch.uint32)),
        ("scalar", torch.tensor(2.5)), ("empty", torch.zeros(0, 3)),
        ("param", torch.nn.Parameter(base.clone())),  # _rebuild_parameter
    ])
    noted = base.clone()
    noted.note = "a Python attribute"  # saved through torch._tensor._rebuild_from_type_v2
    tensors["noted"] = noted
    path = save(tensors, tmp_path / "d.pt", legacy)
    want = {"noted": ember.float32, "f32": ember.float32, "f64": ember.float64, "f16": ember.float16, "bf16": ember.bfloat16,
            "i64": ember.int64, "i32": ember.int32, "i16": ember.int32, "i8": ember.int8, "u8": ember.uint8,
            "bool": ember.bool_, "u16": ember.int32, "u32": ember.int64, "scalar": ember.float32,
            "empty": ember.float32, "param": ember.float32}
    got = pytorch.load(path)
    assert list(got) == list(tensors)
    for name, t in tensors.items():
        assert got[name].dtype is want[name], name
        assert got[name].shape == tuple(t.shape), name
        assert got[name].tolist() == as_list(t), name


@FORMATS
def test_views_and_shared_storages(tmp_path, legacy):
    big = torch.arange(60, dtype=torch.float32).reshape(6, 10)
    tensors = {"whole": big, "t": big.t(), "cols": big[:, 2:7:2], "row": big[3], "offset": big.view(-1)[17:29],
               "expanded": torch.arange(3.0).unsqueeze(1).expand(3, 4), "perm": torch.arange(24).reshape(2, 3, 4).permute(2, 0, 1)}
    path = save(tensors, tmp_path / "v.pt", legacy)
    with pytorch.open(path) as ck:
        assert len({e.ref.storage.key for e in ck.entries if e.name in ("whole", "t", "cols", "row", "offset")}) == 1
        for name, t in tensors.items():
            assert ck.read(name).tolist() == t.tolist(), name
    # without numpy's strided copy: the pure-Python gather gives the same bytes
    from ember.accel.pytorch import checkpoint
    raw = bytes(range(24))
    assert checkpoint._gather(raw, (3, 2), (1, 3), 1) == bytes(np.frombuffer(raw, np.uint8)[:6].reshape(2, 3).T.tobytes())


@FORMATS
def test_wrapped_and_nested_checkpoints(tmp_path, legacy):
    lin = torch.nn.Linear(3, 2)
    sd = {"module." + k: v for k, v in lin.state_dict().items()}
    path = save({"epoch": 3, "state_dict": sd, "optimizer": {"lr": 0.1}}, tmp_path / "w.pth", legacy)
    m = Linear(3, 2)
    assert m.load(path).ok  # state_dict followed, module. dropped
    assert m.weight.tolist() == lin.weight.tolist() and m.bias.tolist() == lin.bias.tolist()
    nested = {"enc": {"layers": [{"w": torch.ones(2)}, {"w": torch.zeros(1)}]}, "step": torch.tensor(4)}
    got = pytorch.load(save(nested, tmp_path / "n.pt", legacy))
    assert list(got) == ["enc.layers.0.w", "enc.layers.1.w", "step"] and got["step"].tolist() == 4
    assert list(pytorch.load(path, key="optimizer")) == []
    with pytest.raises(RecordError, match="no 'ema' in the checkpoint"):
        pytorch.open(path, key="ema")


def test_key_rules_partial_report_and_casts(tmp_path):
    lin = torch.nn.Linear(3, 2)
    path = save({"backbone.fc.weight": lin.weight.data, "backbone.fc.bias": lin.bias.data.double(),
                 "head.extra": torch.ones(1), "aux.drop": torch.ones(2)}, tmp_path / "r.pt")
    m = Linear(3, 2)
    rules = [(r"^backbone\.fc\.", ""), (r"^aux\.", None)]
    report = pytorch.load_into(m, path, rules=rules, strict=False)
    assert report.missing == [] and report.unexpected == ["head.extra"] and not report.ok
    assert m.bias.dtype is ember.float32 and m.bias.tolist() == lin.bias.tolist()  # float64 cast to the module's
    with pytest.raises(RecordError, match="unexpected head.extra"):
        pytorch.load_into(m, path, rules=rules)
    bad = save({"weight": torch.ones(4, 4), "bias": torch.ones(2)}, tmp_path / "s.pt")
    report = Linear(3, 2).load(bad, strict=False)
    assert report.mismatched == [("weight", "float32 (2, 3)", "float32 (4, 4)")]
    sd = pytorch.load(path, rules=rules, dtype=ember.float16)
    assert sorted(sd) == ["bias", "head.extra", "weight"] and all(t.dtype is ember.float16 for t in sd.values())
    with pytest.raises(RecordError, match="both map to"):
        pytorch.open(path, rules=[(r"\.(weight|bias)$", ".p")])
    with pytest.raises(ArgumentError, match="not a valid regex"):
        pytorch.open(path, rules=[("(", "")])


def test_load_state_dict_takes_foreign_tensors():
    lin = torch.nn.Linear(3, 2)
    m = Linear(3, 2)
    assert m.load_state_dict(lin.state_dict()).ok  # torch tensors
    assert m.weight.tolist() == lin.weight.tolist()
    assert m.load_state_dict({"weight": lin.weight, "bias": lin.bias.bfloat16()}).ok  # requires_grad, bf16
    assert m.bias.tolist() == lin.bias.bfloat16().float().tolist()
    arrays = {"weight": np.arange(6, dtype=np.float64).reshape(2, 3), "bias": np.array([1, 2], np.int16)}
    with pytest.raises(RecordError, match="mismatched bias"):
        m.load_state_dict(arrays)  # int16 bias into a float bias: the kinds differ
    arrays["bias"] = np.array([1.5, 2.5], np.float32)
    assert m.load_state_dict(OrderedDict(arrays)).ok
    assert m.weight.tolist() == [[0, 1, 2], [3, 4, 5]] and m.bias.tolist() == [1.5, 2.5]
    with pytest.raises(ArgumentTypeError, match="expected a Tensor for 'bias'"):
        m.load_state_dict({"weight": m.weight, "bias": "x"})


def test_wrong_formats_say_what_they_found(tmp_path):
    npy = tmp_path / "a.pt"
    np.save(str(npy), np.zeros(2))
    os.rename(str(npy) + ".npy", str(npy))
    with pytest.raises(RecordError, match="found: numpy .npy array"):
        pytorch.open(str(npy))
    (tmp_path / "p.bin").write_bytes(b"\x80\x04K\x01.")  # a pickle of 1, not torch's layout
    assert formats.sniff(str(tmp_path / "p.bin")) == formats.PICKLE
    with pytest.raises(RecordError, match="not a PyTorch legacy checkpoint"):
        pytorch.open(str(tmp_path / "p.bin"))
    with pytest.raises(RecordError, match=r"header length .* \(found: numpy .npy array\)"):
        Linear(3, 2).load(str(npy))  # neither a checkpoint nor a record: Module.load names what it is
    st = tmp_path / "m.safetensors"
    Linear(3, 2).save(str(st))
    assert Linear(3, 2).load(str(st)).ok  # content decides: a safetensors file still loads as before
    whole = tmp_path / "whole.pt"
    torch.save(torch.nn.Linear(3, 2), str(whole))  # a pickled Module names its class: refused
    with pytest.raises(RecordError, match="global torch.nn.modules.linear.Linear is not allowed"):
        Linear(3, 2).load(str(whole))


@pytest.mark.parametrize("legacy", [False, True], ids=["zip", "legacy"])
def test_convert_writes_a_record(tmp_path, legacy):
    lin = torch.nn.Linear(3, 2)
    src = save({"model": lin.state_dict()}, tmp_path / "c.pt", legacy)
    dst = str(tmp_path / "c.safetensors")
    from ember.accel.cli import main
    assert main(["convert", src, dst, "--precision", "bf16"]) == 0
    with record.open(dst) as r:
        assert r.names() == ["weight", "bias"] and r.metadata["ember_source"].startswith("pytorch ")
        assert r.read("weight").dtype is ember.bfloat16
        assert r.read("weight").tolist() == lin.weight.data.bfloat16().float().tolist()
    assert formats.PYTORCH_ZIP in convert.CONVERTERS and formats.PYTORCH_LEGACY in convert.CONVERTERS


BLOCK_TORCH = """
import sys
class Block:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this test")
sys.meta_path.insert(0, Block())
import ember
from ember.accel import pytorch
from ember.nn.linear import Linear
for p in sys.argv[1:]:
    m = Linear(3, 2)
    assert m.load(p).ok
    print(p, m.weight.tolist(), sorted(pytorch.load(p)))
assert not [k for k in sys.modules if k == "torch" or k.startswith("torch.")]
"""


def test_loading_never_imports_torch(tmp_path):
    lin = torch.nn.Linear(3, 2)
    paths = [save(lin.state_dict(), tmp_path / "z.pt"), save(lin.state_dict(), tmp_path / "l.pt", legacy=True)]
    out = subprocess.run([sys.executable, "-c", BLOCK_TORCH] + paths, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    for p in paths:
        assert "%s %s ['bias', 'weight']" % (p, lin.weight.tolist()) in out.stdout
