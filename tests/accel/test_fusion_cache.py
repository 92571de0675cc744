"""The disk cache of compiled fused kernels (accel/fusion/cache.py) across processes.

A second process loads the module without compiling; two processes building the same kernel at once
both succeed; a truncated or corrupt cached module is rebuilt; an unwritable cache directory gives
one warning and a private temporary directory.
"""
import os
import subprocess
import sys
import warnings

import pytest

from ember.accel.fusion import cache

CHILD = r"""
import json, sys
sys.path.insert(0, %(kit)r)
from fusion_kit import Graph, array, item
from ember.accel.fusion import cache
from ember.accel.fusion.compile_c import CCompiler
g = Graph(["float32"])
k = g.flat(1, [g.binary("mul", g.binary("add", g.load(0), %(c)r), 3.0)])
out = CCompiler().run(k, (5,), [item(array([1, 2, 3, 4, 5], (5,), "float32"))])[0]
print(json.dumps({"stats": cache.STATS, "values": list(out.data)}))
"""


def _child(cache_dir, const=0.5):
    env = dict(os.environ, EMBER_CACHE_DIR=str(cache_dir))
    src = CHILD % {"kit": os.path.dirname(os.path.abspath(__file__)), "c": const}
    return subprocess.Popen([sys.executable, "-c", src], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def _result(proc):
    import json
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])


def _modules(d):
    return [f for f in os.listdir(d) if f.startswith("_ember_fk_") and not f.endswith(".sha256")]


def test_second_process_loads_without_compiling(tmp_path):
    first = _result(_child(tmp_path))
    assert first["stats"]["compiled"] == 1
    second = _result(_child(tmp_path))
    assert second["stats"] == {"compiled": 0, "loaded": 1, "rebuilt": 0}
    assert second["values"] == first["values"] == [4.5, 7.5, 10.5, 13.5, 16.5]


def test_concurrent_builders(tmp_path):
    procs = [_child(tmp_path, 0.25) for _ in range(3)]
    results = [_result(p) for p in procs]
    assert all(r["values"] == results[0]["values"] for r in results)
    assert len(_modules(tmp_path)) == 1
    assert not [f for f in os.listdir(tmp_path) if f.startswith(".build-")]


@pytest.mark.parametrize("damage", ["truncate", "garbage", "checksum"])
def test_corrupt_module_is_rebuilt(tmp_path, damage):
    _result(_child(tmp_path))
    (name,) = _modules(tmp_path)
    path = os.path.join(tmp_path, name)
    if damage == "truncate":
        with open(path, "r+b") as f:
            f.truncate(100)
    elif damage == "garbage":
        with open(path, "wb") as f:
            f.write(b"\x7fELF not really")
    else:
        os.remove(path + ".sha256")
    again = _result(_child(tmp_path))
    assert again["stats"]["compiled"] == 1 and again["stats"]["rebuilt"] == 1
    assert again["values"] == [4.5, 7.5, 10.5, 13.5, 16.5]
    assert _result(_child(tmp_path))["stats"]["loaded"] == 1


def test_unwritable_cache_dir_warns_and_uses_a_temp_dir(tmp_path, monkeypatch):
    if os.geteuid() == 0:  # root writes anywhere: a path under a regular file cannot be created
        blocked = tmp_path / "file"
        blocked.write_text("")
        target = blocked / "cache"
    else:
        target = tmp_path / "ro"
        target.mkdir()
        target.chmod(0o500)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(target))
    monkeypatch.setitem(cache._state, "dir", None)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        path = cache.cache_dir()
        assert cache.cache_dir() == path  # one warning per process, not per call
    assert path != str(target) and os.path.isdir(path)
    assert len([w for w in seen if "not writable" in str(w.message)]) == 1
