"""ember deploy: bundles that run on MicroPython's unix port with a board's heap, and every bad
input a clear error with no partial bundle left behind."""
import json
import os
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
TINY = os.path.join(MODELS, "tiny.py") + ":Tiny"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A trained-looking record for Tiny, 12 inputs with labels, 16 calibration inputs."""
    Tiny = load_class(os.path.join(MODELS, "tiny.py"), "Tiny")
    d = tmp_path_factory.mktemp("deploy")
    gen = ember.Generator(3)
    model = Tiny(generator=gen)
    weights = str(d / "tiny.safetensors")
    model.save(weights)
    x = ember.rand(12, 1, 6, 6, generator=gen)
    labels = model(x).argmax(dim=1)
    data = str(d / "data.safetensors")
    record.write(data, [("inputs", x), ("labels", labels)])
    calib = str(d / "calib.safetensors")
    record.write(calib, [("inputs", ember.rand(16, 1, 6, 6, generator=gen))])
    return {"dir": d, "weights": weights, "data": data, "calib": calib}


@pytest.mark.parametrize("precision", ["float32", "int8"])
def test_every_layer_of_the_deployment_path(tmp_path, precision):
    """A Sequential of every layer (strides, 'same' padding, both pools, Dropout, Identity, no bias),
    deployed and checked on the unix port."""
    Seq = load_class(os.path.join(MODELS, "seq.py"), "Seq")
    ember.seed(5)
    model = Seq()
    weights = str(tmp_path / "seq.safetensors")
    model.save(weights)
    x = ember.rand(10, 1, 12, 12, generator=ember.Generator(6))
    data = str(tmp_path / "data.safetensors")
    record.write(data, [("inputs", x), ("labels", model.eval()(x).argmax(dim=1))])
    calib = str(tmp_path / "calib.safetensors")
    record.write(calib, [("inputs", ember.rand(16, 1, 12, 12, generator=ember.Generator(7)))])
    report = D.deploy("unix", weights, os.path.join(MODELS, "seq.py") + ":Seq", str(tmp_path / "b"),
                      precision=precision, calibration=calib if precision == "int8" else None, data=data,
                      check=True, log=lambda s: None)
    assert report["check"]["passed"]
    if precision == "float32":
        assert report["deployed_correct"] == 10
    assert os.path.exists(str(tmp_path / "b" / "ember" / "micro" / "layers.mpy"))


def _no_leftovers(d):
    assert [n for n in os.listdir(d) if ".partial-" in n or ".old-" in n] == []


def test_float32_bundle_runs_on_the_unix_port(files):
    out = str(files["dir"] / "f32")
    report = D.deploy("rp2040", files["weights"], TINY, out, precision="float32", data=files["data"],
                      check=True, log=lambda s: None)
    assert report["check"]["passed"] and report["check"]["same_predictions"] == 12
    assert report["deployed_correct"] == report["float32_correct"] == 12
    names = set(os.listdir(out))
    assert {"main.py", "tiny.mpy", "model.safetensors", "plan.json", "manifest.py", "report.json",
            "data.safetensors", "ember", "frozen"} <= names
    with open(os.path.join(out, "report.json")) as f:
        assert json.load(f)["flash_bytes"] == report["flash_bytes"]
    manifest = open(os.path.join(out, "manifest.py")).read()
    assert 'package("ember", base_path="frozen")' in manifest and 'module("tiny.py"' in manifest
    # only the runtime the model uses: no parameter-free layer module for a model that imports none
    assert not os.path.exists(os.path.join(out, "ember", "micro", "layers.mpy"))
    _no_leftovers(files["dir"])


def test_cli_deploys_and_reports(files):
    out = str(files["dir"] / "cli")
    proc = subprocess.run([sys.executable, "-m", "ember", "deploy", files["weights"], "--board", "unix",
                           "--model", TINY, "--out", out, "--precision", "float32", "--input-shape", "1,6,6"],
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.returncode == 0, proc.stdout
    assert "flash" in proc.stdout and "heap" in proc.stdout
    bad = subprocess.run([sys.executable, "-m", "ember", "deploy", files["weights"], "--board", "nosuch",
                          "--model", TINY, "--out", out + "2", "--input-shape", "1,6,6"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert bad.returncode == 1 and "unknown board 'nosuch'" in bad.stdout and "rp2040" in bad.stdout
    assert not os.path.exists(out + "2")


def _fails(files, match, exc=DeployError, **kw):
    out = str(files["dir"] / "bad")
    args = dict(board="unix", weights=files["weights"], model=TINY, out=out, precision="float32",
                input_shape=(1, 6, 6), log=lambda s: None)
    args.update(kw)
    with pytest.raises(exc, match=match):
        D.deploy(**args)
    assert not os.path.exists(out)
    _no_leftovers(files["dir"])


def test_unknown_board(files):
    _fails(files, "unknown board 'pico9'.*rp2040", board="pico9")


def test_layer_the_deployment_path_lacks_is_named(files):
    _fails(files, "BatchNorm2d", model=os.path.join(MODELS, "with_norm.py") + ":WithNorm")


def test_op_the_deployment_path_lacks_is_named(files):
    _fails(files, "gelu is not in the deployment path", model=os.path.join(MODELS, "uses_gelu.py") + ":UsesGelu",
           weights=_uses_gelu_record(files), input_shape=(1, 2, 2))


def _uses_gelu_record(files):
    path = str(files["dir"] / "gelu.safetensors")
    record.write(path, [("fc.weight", ember.zeros(2, 4)), ("fc.bias", ember.zeros(2))])
    return path


def test_record_that_does_not_fit_the_model(files):
    path = str(files["dir"] / "wrong.safetensors")
    record.write(path, [("conv.weight", ember.zeros(4, 1, 3, 3)), ("conv.bias", ember.zeros(4))])
    _fails(files, "fc.weight", exc=RecordError, weights=path)


def test_board_too_small_says_by_how_much(files):
    tiny_board = dict(D.board("rp2040"), name="tiny", heap_bytes=4096)
    _fails(files, r"tiny has 4 KB: \d+ KB short", board=tiny_board)


def test_a_board_that_reads_an_older_mpy_format(files):
    _fails(files, r"writes .mpy v6\.3, which a board reading v6\.1 cannot", board=dict(D.board("rp2040"),
                                                                                      mpy_version="6.1"))
    with pytest.raises(DeployError, match="v5.0 cannot"):
        D.run.check_mpy_format("5.0", "6.3")
    D.run.check_mpy_format("6.3", "6.2")  # an older sub-version imports


def test_bad_model_spec_and_precision(files):
    _fails(files, "FILE.py:ClassName", model="tiny.py")
    _fails(files, "does not exist", model="/nonexistent/x.py:X")
    _fails(files, "has no class Nope", model=os.path.join(MODELS, "tiny.py") + ":Nope")
    _fails(files, "precision must be", precision="int4")


def test_refuses_to_replace_a_folder_that_is_not_a_bundle(files):
    other = files["dir"] / "precious"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(DeployError, match="not an ember bundle"):
        D.deploy("unix", files["weights"], TINY, str(other), precision="float32", input_shape=(1, 6, 6),
                 log=lambda s: None)
    assert (other / "notes.txt").read_text() == "keep me"


def test_data_without_inputs(files):
    path = str(files["dir"] / "noinputs.safetensors")
    record.write(path, [("images", ember.zeros(2, 1, 6, 6))])
    _fails(files, "has no 'inputs' tensor", data=path, input_shape=None)


# -- the board runtime computes what the desktop's ember.quant computes ----------------------------------

def test_micro_runtime_agrees_with_ember_quant(files, tmp_path):
    """The same int8 record through ember.quant (desktop, float32 steps) and through ember.micro
    (the board's runtime, here on CPython's doubles): same predictions, logits within a few of the
    last layer's float32 steps."""
    import ember.quant as Q
    from ember.micro import tensor as T
    from ember.micro.affine import Conv2d, Linear
    from ember.micro.functional import max_pool2d, relu
    from ember.micro.module import Module
    from ember.micro.record import load
    Tiny = load_class(os.path.join(MODELS, "tiny.py"), "Tiny")
    net = Tiny()
    net.load(files["weights"])
    with record.open(files["calib"]) as r:
        calib = r.read("inputs")
    with record.open(files["data"]) as r:
        x = r.read("inputs")
    qnet = Q.quantize(net, calibration=[calib])
    path = str(tmp_path / "tiny-int8.safetensors")
    Q.save(qnet, path)
    want = qnet(x).tolist()

    class MicroTiny(Module):  # Tiny, written against ember.micro (what the bundle's shims give it)
        def __init__(self):
            self.conv = Conv2d(1, 4, 3, padding=1)
            self.fc = Linear(36, 3)

        def forward(self, x):
            return self.fc(max_pool2d(relu(self.conv(x)), 2).flatten(1))
    m = MicroTiny()
    load(m, path)
    T.use(T.Arena())
    flat = x.flatten().tolist()
    for i, row in enumerate(want):
        got = m(T.tensor(flat[i * 36:(i + 1) * 36], (1, 1, 6, 6))).tolist()[0]
        assert max(range(3), key=lambda k: got[k]) == max(range(3), key=lambda k: row[k])
        assert max(abs(g - w) for g, w in zip(got, row)) < 1e-4, (got, row)
