"""The `ember` command line: info, inspect, convert, train, bench, and its progress lines."""
import io
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import ember
from ember import record
from ember.accel.cli import convert, formats, main
from ember.accel.cli.progress import Progress

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _record(path):
    w = ember.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    record.write(str(path), [("fc.weight", w), ("fc.bias", ember.tensor([0.5, -0.5])),
                             ("scale", ember.tensor([3], dtype=ember.int32))], metadata={"ember_module": "Net"})
    return str(path)


def test_python_dash_m_ember_runs_the_cli():
    proc = subprocess.run([sys.executable, "-m", "ember", "--help"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0
    for command in ("info", "train", "inspect", "convert", "deploy", "bench"):
        assert command in proc.stdout


def test_info_reports_every_backend(capsys):
    assert main(["info", "--json"]) == 0
    r = json.loads(capsys.readouterr().out)
    assert r["ember"] == ember.__version__
    assert set(r["backends"]) == {"cpu", "cpu-c", "numpy", "wgpu"}
    from ember.backends.cpu import ckernels
    assert r["backends"]["cpu-c"]["available"] == ckernels.available()
    for b in r["backends"].values():
        assert b["available"] or b["why"]
    assert main(["info"]) == 0
    text = capsys.readouterr().out
    assert "cpu-c" in text and "numpy   yes: numpy %s" % np.__version__ in text


def test_inspect_counts_parameters_per_module(tmp_path, capsys):
    path = _record(tmp_path / "m.safetensors")
    assert main(["inspect", path, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["parameters"] == 9
    assert out["parameters_by_module"] == {"fc": 8, "(top level)": 1}
    assert [t["name"] for t in out["tensors"]] == ["fc.weight", "fc.bias", "scale"]
    assert main(["inspect", path]) == 0
    text = capsys.readouterr().out
    assert "parameters: 9" in text and "fc.weight" in text and "ember_module: Net" in text


def test_inspect_names_the_format_it_found(tmp_path, capsys):
    np.save(str(tmp_path / "a.npy"), np.zeros(3))
    assert main(["inspect", str(tmp_path / "a.npy")]) == 1
    assert "is not a safetensors record (found: numpy .npy array)" in capsys.readouterr().err
    assert main(["inspect", str(tmp_path / "missing.safetensors")]) == 1
    assert "No such file" in capsys.readouterr().err


def test_sniff_knows_formats_by_content(tmp_path):
    torch = pytest.importorskip("torch")
    zipped, legacy = tmp_path / "z.safetensors", tmp_path / "l.bin"
    torch.save({"w": torch.ones(2)}, str(zipped))  # the name lies: content decides
    torch.save({"w": torch.ones(2)}, str(legacy), _use_new_zipfile_serialization=False)
    np.savez(str(tmp_path / "a.npz"), x=np.ones(2))
    (tmp_path / "g.bin").write_bytes(b"GGUF\x03\x00\x00\x00" + bytes(8))
    (tmp_path / "t.safetensors").write_bytes(b"\x05" + bytes(7) + b"{nope")
    assert formats.sniff(str(zipped)) == formats.PYTORCH_ZIP
    assert formats.sniff(str(legacy)) == formats.PYTORCH_LEGACY
    assert formats.sniff(str(tmp_path / "a.npz")) == formats.NUMPY_ZIP
    assert formats.sniff(str(tmp_path / "g.bin")) == formats.GGUF
    assert formats.sniff(str(tmp_path / "t.safetensors")) == formats.UNKNOWN
    assert formats.sniff(_record(tmp_path / "m.safetensors")) == formats.SAFETENSORS


def test_convert_changes_precision_and_keeps_metadata(tmp_path, capsys):
    src, dst = _record(tmp_path / "m.safetensors"), str(tmp_path / "h.safetensors")
    assert main(["convert", src, dst, "--precision", "f16"]) == 0
    with record.open(dst) as r:
        assert r.metadata["ember_module"] == "Net" and r.metadata["ember_precision"] == "f16"
        w = r.read("fc.weight")
        assert w.dtype is ember.float16 and w.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
        assert r.read("scale").dtype is ember.int32  # ints are kept


def test_convert_reads_npz_without_unpickling(tmp_path):
    np.savez(str(tmp_path / "a.npz"), w=np.arange(6, dtype=np.float32).reshape(2, 3), n=np.array([7], np.int64))
    assert convert.convert(str(tmp_path / "a.npz"), str(tmp_path / "a.safetensors")) == 2
    with record.open(str(tmp_path / "a.safetensors")) as r:
        assert r.read("w").tolist() == [[0, 1, 2], [3, 4, 5]] and r.read("n").tolist() == [7]
    np.savez(str(tmp_path / "o.npz"), o=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ember.EmberError):  # an object array needs pickle: refused
        convert.convert(str(tmp_path / "o.npz"), str(tmp_path / "o.safetensors"))


def test_convert_refuses_what_it_cannot_read(tmp_path, capsys):
    (tmp_path / "x.bin").write_bytes(b"\x00\x01\x02")
    assert main(["convert", str(tmp_path / "x.bin"), str(tmp_path / "y.safetensors")]) == 1
    err = capsys.readouterr().err
    assert "cannot convert yet (found: unknown format)" in err and "safetensors" in err
    src = _record(tmp_path / "m.safetensors")
    assert main(["convert", src, src]) == 1
    assert "same file" in capsys.readouterr().err


def _config(tmp_path, **overrides):
    config = {"seed": 0, "model": {"spec": os.path.join(ROOT, "examples", "digits", "digits_cnn.py") + ":DigitsCNN"},
              "data": {"name": "digits", "batch_size": 64},
              "optimizer": {"name": "AdamW", "lr": 0.005},
              "train": {"epochs": 1, "device": "cpu-c", "run_dir": "run", "out": "model.safetensors"}}
    for key, value in overrides.items():
        config[key] = value
    path = tmp_path / "train.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_train_from_a_config_writes_a_loadable_record(tmp_path, capsys):
    pytest.importorskip("ember._ckernels")
    assert main(["train", _config(tmp_path), "--progress", "none"]) == 0
    out = capsys.readouterr().out
    assert "training finished after 1 epochs" in out
    with record.open(str(tmp_path / "model.safetensors")) as r:
        assert r.metadata["ember_module"] == "DigitsCNN" and len(r.entries) == 6


def test_train_reads_toml(tmp_path, capsys):
    pytest.importorskip("tomllib")
    pytest.importorskip("ember._ckernels")
    spec = os.path.join(ROOT, "examples", "digits", "digits_cnn.py")
    (tmp_path / "t.toml").write_text('[model]\nspec = "%s:DigitsCNN"\n[data]\nname = "digits"\n'
                                     '[optimizer]\nname = "SGD"\nlr = 0.1\n[train]\nepochs = 1\ndevice = "cpu-c"\n'
                                     'run_dir = "r"\n' % spec)
    assert main(["train", str(tmp_path / "t.toml"), "--progress", "none"]) == 0
    assert (tmp_path / "r" / "model.safetensors").exists()


@pytest.mark.parametrize("change, message", [
    ({"epochz": 3}, "unknown key(s) epochz"),
    ({"model": {"spec": "nope"}}, "must be FILE.py:Name or module:Name"),
    ({"model": {"spec": "missing.py:Net"}}, "no file"),
    ({"model": {"spec": "ember.nn:Nothing"}}, "ember.nn has no Nothing"),
    ({"optimizer": {"lr": 1}}, "[optimizer] needs name"),
    ({"optimizer": {"name": "Adamm"}}, "optimizer 'Adamm' is not in ember.accel.optim"),
    ({"data": {"name": "digits", "batch": 3}}, "[data] has unknown key(s) batch"),
    ({"train": {"device": "tpu"}}, "device must be auto, cpu, cpu-c, numpy or wgpu"),
    ({"seed": "0"}, "seed must be an int"),
])
def test_bad_configs_say_what_is_wrong(tmp_path, capsys, change, message):
    assert main(["train", _config(tmp_path, **change)]) == 1
    assert message in capsys.readouterr().err


def test_a_config_that_is_not_json_says_so(tmp_path, capsys):
    (tmp_path / "c.json").write_text("{not json")
    assert main(["train", str(tmp_path / "c.json")]) == 1
    assert "is not valid JSON" in capsys.readouterr().err
    (tmp_path / "d.json").write_text("[" * 100000)
    assert main(["train", str(tmp_path / "d.json")]) == 1
    assert "is not valid JSON" in capsys.readouterr().err


def test_bench_lists_and_refuses_unknown_names(capsys):
    assert main(["bench", "--list"]) == 0
    listed = capsys.readouterr().out.split()
    assert "train_step" in listed and "_models" not in listed
    assert main(["bench", "no_such_bench"]) == 1
    assert "no benchmark no_such_bench" in capsys.readouterr().err


def test_bench_outside_a_checkout_says_where_the_benchmarks_are(tmp_path, capsys):
    assert main(["bench", "--dir", str(tmp_path)]) == 1
    assert "ship with the source, not the wheel" in capsys.readouterr().err


def test_bench_runs_a_benchmark_with_arguments_after_dashes(tmp_path, capfd):
    folder = tmp_path / "bench"
    folder.mkdir()
    (folder / "README.md").write_text("")
    (folder / "_models.py").write_text("")
    (folder / "echo.py").write_text("import sys\nprint('args', sys.argv[1:])\n")
    assert main(["bench", "--dir", str(folder), "echo", "--", "--models", "mlp"]) == 0
    out = capfd.readouterr().out
    assert "args ['--models', 'mlp']" in out and "benchmarks 1/1 (100%)" in out


def test_progress_lines_in_a_pipe_and_quiet_for_quick_jobs(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("ember.accel.cli.progress.time.perf_counter", lambda: clock[0])
    quick = io.StringIO()
    p = Progress(3, "quick", stream=quick, every=5.0)
    for _ in range(3):
        p.update()
    assert quick.getvalue() == ""
    slow = io.StringIO()
    p = Progress(4, "slow", unit="files", stream=slow, every=5.0)
    for _ in range(4):
        clock[0] += 3.0
        p.update(note="x")
    lines = slow.getvalue().splitlines()
    assert lines[0].startswith("slow 2/4 ( 50%) 0.33 files/s, 0:06 elapsed, ETA 0:06 - x")
    assert lines[-1].startswith("slow 4/4 (100%)") and len(lines) == 2


def test_the_cli_needs_nothing_beyond_the_core():
    # a bare `pip install ember`: no numpy, no wgpu; `ember info` and `ember inspect` still work
    code = ("import sys\nfor m in ('numpy', 'wgpu', 'torch', 'textual'): sys.modules[m] = None\n"
            "from ember.accel.cli import main\nsys.exit(main(['info']))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "numpy   no:" in proc.stdout and "pip install ember[numpy]" in proc.stdout
    assert "wgpu    no:" in proc.stdout and "pip install ember[gpu]" in proc.stdout
