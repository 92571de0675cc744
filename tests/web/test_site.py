"""The web demo's Python as the page runs it: the site built by tools/web/build.py (with records made
here), ``web_infer`` under MicroPython's unix port beside the page's ember.micro bundle, against the full
ember on CPython; and the shared preprocessing. (The page itself: tests/web/run.mjs, ``make test-web``.)"""
import json
import math
import os
import subprocess
import sys

import pytest

import ember

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path[:0] = [os.path.join(ROOT, "tools", "web"), os.path.join(ROOT, "examples", "web"),
                os.path.join(ROOT, "examples", "digits")]

import build  # noqa: E402
from digits_cnn import DigitsCNN  # noqa: E402
from preprocess import normalize  # noqa: E402
from shapes_cnn import ShapesCNN  # noqa: E402

DIGITS = [[(i * 5 + j * 3) % 17 for j in range(64)] for i in range(4)]
GREYS = [[(i * 40 + j * 7) % 256 for j in range(256)] for i in range(3)]


def _softmax(logits):
    top = max(logits)
    e = [math.exp(v - top) for v in logits]
    return [v / sum(e) for v in e]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site (no GPU plans) with seeded untrained records, and those records."""
    tmp = tmp_path_factory.mktemp("web")
    records = {}
    for name, cls in (("digits", DigitsCNN), ("shapes", ShapesCNN)):
        records[name] = str(tmp / (name + ".safetensors"))
        cls(generator=ember.Generator(3)).save(records[name])
    out = str(tmp / "site")
    build.build(out, records=records, gpu=False)
    return out, records


def _micropython(folder, code):
    from ember.accel.deploy.run import micropython_binary
    r = subprocess.run([micropython_binary(), "-X", "heapsize=8M", "-c", code], cwd=folder, capture_output=True,
                       text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def test_page_python_matches_full_ember(site):
    out, records = site
    code = ("import web_infer\nprint(web_infer.load('digits'))\nprint(web_infer.load('shapes'))\n"
            "for name, v in %r:\n    print(web_infer.predict(name, ','.join([str(x) for x in v])))\n"
            % ([("digits", d) for d in DIGITS] + [("shapes", g) for g in GREYS],))
    status, text = _micropython(out, code)
    assert status == 0, text
    lines = text.strip().splitlines()
    assert json.loads(lines[0]) == [str(i) for i in range(10)]
    assert json.loads(lines[1])[:3] == ["circle", "ring", "square"]
    digits = DigitsCNN.from_record(records["digits"])
    shapes = ShapesCNN.from_record(records["shapes"])
    want = [_softmax(digits(ember.tensor([v / 16 for v in d]).reshape((1, 1, 8, 8))).tolist()[0]) for d in DIGITS]
    want += [_softmax(shapes(ember.tensor(normalize(g)).reshape((1, 1, 16, 16))).tolist()[0]) for g in GREYS]
    for line, w in zip(lines[2:], want):
        got = json.loads(line)
        assert len(got) == len(w)
        assert max(abs(a - b) for a, b in zip(got, w)) < 1e-5, (got, w)


def test_page_python_reports_bad_input_and_bad_record(site):
    out, _ = site
    status, text = _micropython(out, "import web_infer\nweb_infer.load('digits')\nweb_infer.predict('digits', '1,2,3')\n")
    assert status != 0 and "digits: expected 64 pixel counts, found 3" in text, text
    with open(os.path.join(out, "shapes_cnn.safetensors"), "wb") as f:
        f.write(b"not a record at all")
    status, text = _micropython(out, "import web_infer\nweb_infer.load('shapes')\n")
    assert status != 0 and "shapes_cnn.safetensors" in text and "header" in text, text


def test_site_files_listed_with_their_sizes(site):
    out, _ = site
    with open(os.path.join(out, "files.json")) as f:
        files = json.load(f)
    for name in ("index.html", "app.js", "micropython.wasm", "digits_cnn.safetensors", "ember/micro/affine.mpy",
                 "samples/star.png"):
        assert files[name] == os.path.getsize(os.path.join(out, name))
    assert not [f for f in files if f.endswith("_gpu.json")]  # built without wgpu: the page says so


def test_normalize_makes_the_shape_bright_and_spans_zero_to_one():
    dark_on_light = [200] * 256
    for y in range(5, 11):
        for x in range(5, 11):
            dark_on_light[y * 16 + x] = 40
    v = normalize(dark_on_light)
    assert v[8 * 16 + 8] == 1.0 and v[0] == 0.0  # inverted: the square is the bright part
    assert normalize([7] * 256) == [0.0] * 256  # flat: no division by zero
    with pytest.raises(ValueError, match="expected 256 grey values .* found 255"):
        normalize([0] * 255)
