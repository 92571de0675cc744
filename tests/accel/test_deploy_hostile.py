"""Hostile inputs: the board's record reader (ember.micro.record, ember.micro.run.Inputs) and
``ember deploy`` refuse each with a clear error, and deploy leaves no output or partial folder."""
import json
import os
import struct
import subprocess
import sys

import pytest

import ember
from ember import record
from ember.accel import deploy as D
from ember.accel.deploy.model import load_class
from ember.errors import DeployError, RecordError

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = os.path.join(HERE, "deploy_models")
TINY_SOURCE = open(os.path.join(MODELS, "tiny.py")).read()


def _raw(path, header, data=b""):
    h = json.dumps(header).encode()
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + data)


def _micro_tiny():
    from ember.micro.affine import Conv2d, Linear
    from ember.micro.module import Module

    class M(Module):
        def __init__(self):
            self.conv = Conv2d(1, 4, 3, padding=1)
            self.fc = Linear(36, 3)
    return M()


OK = {"conv.weight": {"dtype": "I8", "shape": [4, 1, 3, 3], "data_offsets": [0, 36]},
      "conv.weight_scale": {"dtype": "F32", "shape": [4], "data_offsets": [36, 52]},
      "conv.bias": {"dtype": "F32", "shape": [4], "data_offsets": [52, 68]},
      "fc.weight": {"dtype": "F32", "shape": [3, 36], "data_offsets": [68, 500]},
      "fc.bias": {"dtype": "F32", "shape": [3], "data_offsets": [500, 512]}}
DATA = bytes(36) + struct.pack("<4f", 0.1, 0.1, 0.1, 0.1) + bytes(512 - 52)


def test_micro_reader_loads_the_well_formed_record(tmp_path):
    from ember.micro.record import load
    path = str(tmp_path / "r.safetensors")
    _raw(path, dict(OK, __metadata__={"format": "pt"}), DATA)
    m = _micro_tiny()
    load(m, path)
    assert list(m.conv.weight_scale) == [pytest.approx(0.1)] * 4


@pytest.mark.parametrize("case, change, match", [
    ("dtype_list", {"fc.bias": dict(OK["fc.bias"], dtype=["F32"])}, r"expected dtype F32, I8 or I32, found \['F32'\]"),
    ("dtype_object", {"fc.bias": dict(OK["fc.bias"], dtype={})}, "expected dtype F32, I8 or I32, found {}"),
    ("entry_not_object", {"fc.bias": [500, 512]}, r"expected dtype F32, I8 or I32, found \[500, 512\]"),
    ("negative_offsets", {"fc.bias": dict(OK["fc.bias"], data_offsets=[-12, 0])}, "data_offsets"),
    ("float_offsets", {"fc.bias": dict(OK["fc.bias"], data_offsets=[500.0, 512])}, "data_offsets"),
    ("bool_shape", {"fc.bias": dict(OK["fc.bias"], shape=[True, 3])}, "bad shape"),
    ("huge_shape", {"fc.weight": dict(OK["fc.weight"], shape=[1 << 40, 1 << 40])}, "data_offsets"),
    ("overlap", {"fc.bias": dict(OK["fc.bias"], data_offsets=[488, 500])}, "'fc.bias'.*overlaps 'fc.weight'"),
    ("gap", {"fc.bias": dict(OK["fc.bias"], data_offsets=[504, 516])}, "gap of 4 bytes before 'fc.bias'"),
    ("trailing", {}, "4 bytes of data follow the last tensor 'fc.bias'"),
    ("metadata_list", {"__metadata__": ["format", "pt"]}, "'__metadata__' is a list, expected an object"),
    ("metadata_string", {"__metadata__": "pt"}, "'__metadata__' is a str, expected an object"),
])
def test_micro_reader_refuses_more_hostile_headers(tmp_path, case, change, match):
    from ember.micro.record import load
    path = str(tmp_path / "r.safetensors")
    h = dict(OK)
    h.update(change)
    _raw(path, h, DATA + bytes(4) if case in ("gap", "trailing") else DATA)
    with pytest.raises(RecordError, match=match):
        load(_micro_tiny(), path)


def test_micro_reader_duplicate_key_leaves_a_gap_it_names(tmp_path):
    """MicroPython's json keeps the last of two equal keys silently; the tiling check still sees
    the bytes the first one described."""
    from ember.micro.record import load
    path = str(tmp_path / "r.safetensors")
    text = json.dumps(OK)
    dup = text.replace('"fc.bias"', '"conv.bias": {"dtype": "F32", "shape": [4], "data_offsets": [500, 516]}, '
                                    '"fc.bias"')
    h = dup.encode()
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h + DATA + bytes(4))
    with pytest.raises(RecordError, match="gap of 16 bytes before 'fc.weight'"):
        load(_micro_tiny(), path)



@pytest.mark.parametrize("name", ["\u00b2.weight", "00.weight", "+0.weight"])
def test_micro_reader_names_a_sequential_index_only_one_way(tmp_path, name):
    """'\u00b2'.isdigit() is true but int() refuses it (a ValueError, no RecordError); '00' and '+0'
    would load a second tensor into layer 0."""
    from ember.micro.affine import Linear
    from ember.micro.module import Sequential
    from ember.micro.record import load
    path = str(tmp_path / "s.safetensors")
    _raw(path, {"0.weight": {"dtype": "F32", "shape": [1, 1], "data_offsets": [0, 4]},
                name: {"dtype": "F32", "shape": [1, 1], "data_offsets": [4, 8]}}, bytes(8))
    with pytest.raises(RecordError, match="names no layer of Sequential"):
        load(Sequential(Linear(1, 1, bias=False)), path)

def _inputs(tmp_path, header, data):
    from ember.micro.run import Inputs
    path = str(tmp_path / "data.safetensors")
    _raw(path, header, data)
    return Inputs(path)


@pytest.mark.parametrize("entry, data, match", [
    # a shape of 2**34 floats: refused from the file's size, before any buffer is made
    ({"dtype": "F32", "shape": [1, 1 << 34], "data_offsets": [0, 8]}, bytes(8), "data_offsets"),
    ({"dtype": "F32", "shape": [2, 2]}, bytes(16), "data_offsets"),
    ({"dtype": "F32", "shape": [4, 2], "data_offsets": [0, 8]}, bytes(8), "data_offsets"),
    ({"dtype": "F32", "shape": [2, -2], "data_offsets": [0, 0]}, b"", "bad shape"),
    ({"dtype": "I8", "shape": [2, 2], "data_offsets": [0, 4]}, bytes(4), "expected a float32 tensor 'inputs'"),
    ({"dtype": "F32", "shape": [], "data_offsets": [0, 4]}, bytes(4), "expected a float32 tensor 'inputs'"),
])
def test_micro_inputs_refuse_hostile_records(tmp_path, entry, data, match):
    with pytest.raises(RecordError, match=match):
        _inputs(tmp_path, {"inputs": entry}, data)


@pytest.mark.parametrize("labels, match", [
    ({"dtype": "I32", "shape": [1], "data_offsets": [24, 28]}, r"'labels' must be int32 of shape \(3,\)"),
    ({"dtype": "F32", "shape": [3], "data_offsets": [24, 36]}, r"'labels' must be int32 of shape \(3,\)"),
    ([1, 2, 3], "expected dtype F32, I8 or I32"),
])
def test_micro_inputs_refuse_labels_that_do_not_fit(tmp_path, labels, match):
    with pytest.raises(RecordError, match=match):
        _inputs(tmp_path, {"inputs": {"dtype": "F32", "shape": [3, 2], "data_offsets": [0, 24]},
                           "labels": labels}, bytes(36))


# -- ember deploy: every bad input a clear error, nothing left behind ------------------------------------

@pytest.fixture(scope="module")
def files(tmp_path_factory):
    Tiny = load_class(os.path.join(MODELS, "tiny.py"), "Tiny")
    d = tmp_path_factory.mktemp("hostile")
    weights = str(d / "tiny.safetensors")
    Tiny(generator=ember.Generator(3)).save(weights)
    empty = str(d / "empty.safetensors")
    record.write(empty, [("inputs", ember.zeros(0, 1, 6, 6)), ("labels", ember.zeros(0).to(ember.int32))])
    return {"dir": d, "weights": weights, "empty": empty}


def _model(files, name, source, cls="Tiny"):
    folder = files["dir"] / "models"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(source)
    return str(folder / name) + ":" + cls


def _left(d):
    return sorted(n for n in os.listdir(d) if n.startswith("out") or ".partial-" in n or ".old-" in n)


def _fails(files, match, exc=DeployError, out="out", **kw):
    args = dict(board="unix", weights=files["weights"], model=os.path.join(MODELS, "tiny.py") + ":Tiny",
                out=str(files["dir"] / out), precision="float32", input_shape=(1, 6, 6), log=lambda s: None)
    args.update(kw)
    with pytest.raises(exc, match=match):
        D.deploy(**args)
    assert _left(files["dir"]) == []


def test_model_file_with_a_syntax_error(files):
    _fails(files, r"syntax\.py:18: .*syntax", model=_model(files, "syntax.py", TINY_SOURCE + "\ndef (:\n"))


def test_model_file_that_raises_on_import_or_build(files):
    _fails(files, "importing .*raises.py failed: RuntimeError: boom",
           model=_model(files, "raises.py", TINY_SOURCE + "\nraise RuntimeError('boom')\n"))
    source = TINY_SOURCE.replace("super().__init__()", "super().__init__()\n        raise ValueError('no')")
    _fails(files, r"building Tiny\(\) failed: ValueError: no", model=_model(files, "init_raises.py", source))


@pytest.mark.parametrize("name", ["main.py", "boot.py", "json.py", "ember.py", "my-model.py"])
def test_model_file_whose_name_a_bundle_cannot_import(files, name):
    _fails(files, "deploy: the model file's name", model=_model(files, name, TINY_SOURCE))


def test_model_imports_a_functional_name_the_path_lacks(files):
    source = "from ember.nn.functional import relu, gelu\n" + TINY_SOURCE
    _fails(files, "imports gelu from ember.nn.functional.*it has: .*max_pool2d",
           model=_model(files, "gelu_name.py", source))


@pytest.mark.parametrize("name, edit", [
    ("import_ember.py", lambda s: "import ember\n" + s),
    ("from_functional.py", lambda s: s.replace("import ember.nn.functional as F",
                                               "from ember.nn.functional import max_pool2d, relu")
                                      .replace("F.max_pool2d(F.relu", "max_pool2d(relu")),
])
def test_import_styles_that_deploy(files, name, edit):
    out = str(files["dir"] / "ok")
    try:
        D.deploy("unix", files["weights"], _model(files, name, edit(TINY_SOURCE)), out, precision="float32",
                 input_shape=(1, 6, 6), log=lambda s: None)
        assert os.path.exists(os.path.join(out, "report.json"))
    finally:
        import shutil
        shutil.rmtree(out, ignore_errors=True)


def test_data_with_no_inputs(files):
    _fails(files, r"'inputs' must hold at least one input, found shape \(0, 1, 6, 6\)", data=files["empty"],
           input_shape=None)


@pytest.mark.parametrize("shape", [(1, -6, 6), (0, 6, 6), ()])
def test_bad_input_shape(files, shape):
    _fails(files, "input-shape must be positive sizes", input_shape=shape)


def test_check_without_data_fails_before_any_work(files, monkeypatch):
    monkeypatch.setattr("ember.accel.deploy.bundle._stage", lambda *a: pytest.fail("staged before the error"))
    _fails(files, "--check needs --data", check=True)


def test_a_failed_deploy_leaves_no_folder_it_made_for_out(files):
    small = dict(D.board("rp2040"), name="small", heap_bytes=4096)
    _fails(files, "small has 4 KB", board=small, out="out-parent/deeper/bundle")


def test_cli_reports_a_bad_model_file_without_a_traceback(files):
    spec = _model(files, "syntax_cli.py", TINY_SOURCE + "\ndef (:\n")
    proc = subprocess.run([sys.executable, "-m", "ember", "deploy", files["weights"], "--board", "unix", "--model",
                           spec, "--out", str(files["dir"] / "out"), "--input-shape", "1,6,6"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 1 and "Traceback" not in proc.stdout, proc.stdout
    assert proc.stdout.startswith("ember deploy: ") and "syntax_cli.py:18" in proc.stdout
    assert _left(files["dir"]) == []


@pytest.mark.parametrize("board, passed", [
    ([[1.0, float("nan")]], False),  # nan compared with anything made max() skip it: a pass
    ([[1.0, float("inf")]], False),
    ([[float("nan"), 2.0]], False),
    ([[1.0]], False),  # a logit short
    ([[1.0, 2.0 + 1e-6]], True),
])
def test_check_compare_fails_a_nan_inf_or_missing_logit(board, passed):
    from ember.accel.deploy.run import compare
    reference = {"predictions": [1], "logits": [[1.0, 2.0]]}
    result = compare(reference, {"predictions": [1], "logits": board})
    assert result["passed"] is passed, result
    same = compare({"predictions": [0], "logits": [[float("nan"), float("inf")]]},
                   {"predictions": [0], "logits": [[float("nan"), float("inf")]]})
    assert same["passed"] and same["max_logit_diff"] == 0.0, same


def test_micro_reader_checks_shape_and_dtype_before_reading(tmp_path, monkeypatch):
    """A tensor of the wrong shape is refused before its buffers are made: on a board a large
    wrong tensor would otherwise end in a MemoryError, not in the error that names it."""
    import ember.micro.record as R
    path = str(tmp_path / "r.safetensors")
    big = 3 * 20000 * 4
    h = dict(OK, **{"fc.weight": {"dtype": "F32", "shape": [3, 20000], "data_offsets": [68, 68 + big]},
                    "fc.bias": {"dtype": "F32", "shape": [3], "data_offsets": [68 + big, 80 + big]}})
    _raw(path, h, DATA[:68] + bytes(big + 12))
    made = []
    real = R.scratch
    monkeypatch.setattr(R, "scratch", lambda code, n: made.append(n) or real(code, n))
    with pytest.raises(RecordError, match=r"'fc.weight': expected shape \(3, 36\), found \(3, 20000\)"):
        R.load(_micro_tiny(), path)
    assert max(made) < 1000, made
    _raw(path, dict(OK, **{"conv.bias": dict(OK["conv.bias"], dtype="I8", data_offsets=[52, 56])}), DATA)
    with pytest.raises(RecordError, match="'conv.bias': expected F32, found I8"):
        R.load(_micro_tiny(), path)


def test_input_shape_that_differs_from_the_data(files):
    data = str(files["dir"] / "data66.safetensors")
    record.write(data, [("inputs", ember.zeros(2, 1, 6, 6))])
    _fails(files, r"--input-shape \(1, 7, 7\) differs from .*'inputs' \(1, 6, 6\)", data=data, input_shape=(1, 7, 7))


def test_a_bundle_that_cannot_take_its_place_leaves_the_old_one(files, monkeypatch):
    out = str(files["dir"] / "out-old")
    args = dict(precision="float32", input_shape=(1, 6, 6), log=lambda s: None)
    D.deploy("unix", files["weights"], os.path.join(MODELS, "tiny.py") + ":Tiny", out, **args)
    before = sorted(os.listdir(out))
    import ember.accel.deploy.bundle as B
    real = os.rename

    def rename(src, dst):
        if ".partial-" in src:
            raise OSError("rename refused")
        real(src, dst)
    monkeypatch.setattr(B.os, "rename", rename)
    with pytest.raises(OSError, match="rename refused"):
        D.deploy("unix", files["weights"], os.path.join(MODELS, "tiny.py") + ":Tiny", out, **args)
    monkeypatch.undo()
    assert sorted(os.listdir(out)) == before
    import shutil
    shutil.rmtree(out)
    assert _left(files["dir"]) == []


@pytest.mark.parametrize("case, match", [
    ("truncated", "not a record"),
    ("huge_header", "header length"),
    ("not_json", "not valid JSON"),
    ("bad_dtype", "expected dtype F32, I8 or I32"),
    ("offsets_outside", "data_offsets"),
    ("wrong_shape", "expected shape"),
    ("unknown_name", "names no layer"),
    ("missing", "missing"),
    ("zero_scale", "positive"),
    ("nan_scale", "positive"),
])
def test_micro_record_reader_refuses_hostile_files(tmp_path, case, match):
    from ember.micro.record import load
    path = str(tmp_path / "r.safetensors")
    ok = {"conv.weight": {"dtype": "I8", "shape": [4, 1, 3, 3], "data_offsets": [0, 36]},
          "conv.weight_scale": {"dtype": "F32", "shape": [4], "data_offsets": [36, 52]},
          "conv.bias": {"dtype": "F32", "shape": [4], "data_offsets": [52, 68]},
          "fc.weight": {"dtype": "F32", "shape": [3, 36], "data_offsets": [68, 500]},
          "fc.bias": {"dtype": "F32", "shape": [3], "data_offsets": [500, 512]}}
    import struct
    data = bytes(36) + struct.pack("<4f", 0.1, 0.1, 0.1, 0.1) + bytes(512 - 52)
    if case == "truncated":
        open(path, "wb").write(b"\x01\x02")
    elif case == "huge_header":
        open(path, "wb").write((1 << 40).to_bytes(8, "little") + b"{}")
    elif case == "not_json":
        open(path, "wb").write((3).to_bytes(8, "little") + b"{x}")
    else:
        h = dict(ok)
        if case == "bad_dtype":
            h["fc.bias"] = dict(h["fc.bias"], dtype="F64")
        elif case == "offsets_outside":
            h["fc.bias"] = dict(h["fc.bias"], data_offsets=[500, 900])
        elif case == "wrong_shape":
            h["fc.weight"] = {"dtype": "F32", "shape": [36, 3], "data_offsets": [68, 500]}
        elif case == "unknown_name":
            h["head.weight"] = {"dtype": "F32", "shape": [0], "data_offsets": [512, 512]}
        elif case == "missing":
            del h["conv.weight_scale"]
        elif case == "zero_scale":
            data = bytes(36) + struct.pack("<4f", 0.1, 0.0, 0.1, 0.1) + bytes(512 - 52)
        elif case == "nan_scale":
            data = bytes(36) + struct.pack("<4f", 0.1, float("nan"), 0.1, 0.1) + bytes(512 - 52)
        _raw(path, h, data)
    with pytest.raises(RecordError, match=match):
        load(_micro_tiny(), path)
