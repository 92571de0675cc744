"""ember.accel.distributed under ``mpirun`` on this machine, over loopback only.

Each test starts ``worker.py`` with ``mpirun -n 2`` or ``-n 4 --oversubscribe`` (a subprocess with
a timeout) and checks what rank 0 wrote against a single-process run of the same script: the
trained weights, eager and captured (the Learner's ``compile``), a killed or stopped rank failing
the job fast, a checkpoint written at world size 2 resumed at world size 1. Needs Open MPI's mpirun (tools/system_packages.sh installs it) and mpi4py (``pip install ember[mpi]``).
"""
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "worker.py")
LOOPBACK = ["--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo"]
ENV = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1",
           OPENBLAS_NUM_THREADS="1")


def _mpirun():
    path = shutil.which("mpirun")
    if path is None:
        pytest.fail("mpirun not found: apt-get install openmpi-bin libopenmpi-dev (tools/system_packages.sh)")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        pytest.fail("mpi4py is not installed: pip install ember[mpi]")
    return path


def _run(n, mode, out, dtype="float64", epochs=2, timeout=60, env=None):
    """``mpirun -n n worker.py ...`` (n=None: plain python, a world of one); (rc, output, seconds)."""
    cmd = [sys.executable, WORKER, mode, str(out), dtype, str(epochs)]
    if n is not None:
        cmd = [_mpirun(), "-n", str(n)] + (["--oversubscribe"] if n > 2 else []) + LOOPBACK + cmd
    t0 = time.monotonic()
    p = subprocess.run(cmd, env=dict(ENV, **(env or {})), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=timeout, text=True)
    return p.returncode, p.stdout, time.monotonic() - t0


def _trained(n, mode, out, dtype, epochs=2, env=None):
    out.mkdir(exist_ok=True)
    rc, text, _ = _run(n, mode, out, dtype, epochs, env=env)
    assert rc == 0, text[-3000:]
    return dict(np.load(str(out / "weights.npz"))), json.load(open(str(out / "history.json")))


def _assert_same(got, want, tol):
    assert sorted(got) == sorted(want)
    for k in want:
        diff = float(np.abs(got[k] - want[k]).max())
        assert diff <= tol, "%s differs by %g (tolerance %g)" % (k, diff, tol)
        assert got[k].dtype == want[k].dtype


@pytest.mark.parametrize("n, dtype, tol", [(2, "float64", 1e-6), (4, "float32", 1e-5)])
def test_weights_equal_single_process_on_the_union_batch(tmp_path, n, dtype, tol):
    want, want_history = _trained(None, "single", tmp_path / "single", dtype)
    got, history = _trained(n, "ddp", tmp_path / "ddp", dtype)
    _assert_same(got, want, tol)
    assert len(history) == 2
    for a, b in zip(history, want_history):  # the whole batch's loss and accuracy, as one process logs them
        assert abs(a["train_loss"] - b["train_loss"]) <= tol and a["train_accuracy"] == b["train_accuracy"]
    assert not np.allclose(got["fc1.weight"], _trained(None, "single", tmp_path / "e0", dtype, 1)[0]["fc1.weight"])


def _compiled(out):
    return json.load(open(str(out / "compiled.json")))


@pytest.mark.parametrize("n, dtype, device, tol", [(2, "float64", "numpy", 1e-6), (2, "float64", "cpu", 1e-6),
                                                   (4, "float32", "cpu", 1e-5)])
def test_the_captured_step_equals_the_eager_one_and_the_union_batch(tmp_path, n, dtype, device, tol):
    env = {"WORKER_DEVICE": device}
    want, want_history = _trained(None, "single", tmp_path / "single", dtype, env=env)
    eager, eager_history = _trained(n, "ddp", tmp_path / "eager", dtype, env=dict(env, WORKER_COMPILE="off"))
    got, history = _trained(n, "ddp", tmp_path / "captured", dtype, env=env)
    assert _compiled(tmp_path / "eager") is None
    # the same kernels and scaling; a sum of two ranks is the same in any order, four may be
    # associated otherwise by MPI for one flat message than for the eager step's buckets
    _assert_same(got, eager, 0.0 if n == 2 else tol)
    if n == 2:
        assert history == eager_history
    _assert_same(got, want, tol)
    for a, b in zip(history, want_history):
        assert abs(a["train_loss"] - b["train_loss"]) <= tol and a["train_accuracy"] == b["train_accuracy"]
    info = _compiled(tmp_path / "captured")
    assert info["refused"] == [], info
    # 2 epochs of 4 full batches and a short one; the update's key changes once, when AdamW has made its state
    assert info["stats"]["gradients"]["replayed"] == 6 and info["stats"]["update"]["replayed"] == 7, info
    if device == "cpu":
        assert info["lowering"] == {"gradients": "lowered", "update": "lowered"}, info


def test_a_new_shard_shape_records_its_own_plan(tmp_path):
    # the short last batch (2 rows a rank instead of 12) runs eagerly in epoch 1, is recorded in
    # epoch 2 and replayed in epoch 3; the update's plan does not depend on the batch
    env = {"WORKER_DEVICE": "cpu"}
    want, _ = _trained(None, "single", tmp_path / "single", "float64", epochs=3, env=env)
    got, _ = _trained(2, "ddp", tmp_path / "captured", "float64", epochs=3, env=env)
    _assert_same(got, want, 1e-6)
    stats = _compiled(tmp_path / "captured")["stats"]
    assert stats["gradients"] == {"eager": 2, "recorded": 2, "replayed": 11}, stats
    assert stats["update"] == {"eager": 2, "recorded": 1, "replayed": 12}, stats


def test_collectives_on_every_device(tmp_path):
    rc, text, _ = _run(2, "collectives", tmp_path, epochs=0)
    assert rc == 0, text[-3000:]
    assert (tmp_path / "collectives.ok").read_text() == "2 ranks\n"


@pytest.mark.parametrize("compile", ["off", "auto"])
def test_a_killed_rank_fails_the_job_fast(tmp_path, compile):
    rc, text, seconds = _run(2, "kill", tmp_path, timeout=60, env={"WORKER_TIMEOUT": "10", "WORKER_COMPILE": compile})
    assert rc != 0
    assert "rank 1" in text and "signal 9" in text, text[-3000:]
    assert seconds < 30, "the job took %.1f s to fail" % seconds
    assert not (tmp_path / "weights.npz").exists()


@pytest.mark.parametrize("compile", ["off", "auto"])
def test_a_hung_rank_makes_the_others_time_out_with_a_clear_error(tmp_path, compile):
    rc, text, seconds = _run(2, "hang", tmp_path, timeout=60, env={"WORKER_TIMEOUT": "3", "WORKER_COMPILE": compile})
    assert rc != 0
    assert "CollectiveTimeout" in text and "rank 0 of 2 waited 3.0 s for the other ranks" in text, text[-3000:]
    assert seconds < 30, "the job took %.1f s to fail" % seconds


def test_a_checkpoint_written_at_world_size_2_resumes_at_world_size_1(tmp_path):
    want, want_history = _trained(None, "single", tmp_path / "straight", "float64", epochs=3)
    run = str(tmp_path / "run")
    _trained(2, "resume", tmp_path / "two", "float64", epochs=1, env={"WORKER_RUN_DIR": run})
    assert sorted(os.listdir(os.path.join(run, "checkpoints")))[0].startswith("epoch-001")
    assert os.path.exists(os.path.join(run, "metrics.csv"))
    got, history = _trained(None, "resume", tmp_path / "one", "float64", epochs=3, env={"WORKER_RUN_DIR": run})
    _assert_same(got, want, 1e-6)
    assert [r["epoch"] for r in history] == [1, 2, 3]
    assert abs(history[-1]["train_loss"] - want_history[-1]["train_loss"]) <= 1e-6


@pytest.mark.parametrize("compile", ["off", "auto"])
def test_a_stop_asked_on_one_rank_stops_every_rank_and_resumes_at_world_size_1(tmp_path, compile):
    want, _ = _trained(None, "single", tmp_path / "straight", "float64", epochs=2)
    run = str(tmp_path / "run")
    out = tmp_path / "two"
    out.mkdir()
    rc, text, _ = _run(2, "stop", out, "float64", epochs=2, env={"WORKER_RUN_DIR": run, "WORKER_COMPILE": compile})
    assert rc == 0, text[-3000:]
    history = json.load(open(str(out / "history.json")))
    assert history == []  # stopped in epoch 1
    names = os.listdir(os.path.join(run, "checkpoints"))
    assert names == ["epoch-001-batch-0004"], names  # asked during batch 3 on rank 1: every rank stops after 4
    got, history = _trained(None, "resume", tmp_path / "one", "float64", epochs=2, env={"WORKER_RUN_DIR": run})
    _assert_same(got, want, 1e-6)
    assert [r["epoch"] for r in history] == [1, 2]
