"""GPU timestamps of submitted batches (accel/wgpu/timing.py, Runtime.start_timing/stop_timing):
one figure per timed pass, growing with the work, and clear errors where timing cannot run."""
import types

import pytest

import ember
from ember.accel.wgpu import timing
from harness import backends

wgpu_dev = dict(backends.available()).get("wgpu")
pytestmark = pytest.mark.skipif(wgpu_dev is None, reason="no wgpu device: %s" % dict(backends.unavailable()).get("wgpu"))


@pytest.fixture
def rt():
    if "timestamp-query" not in wgpu_dev.rt.features:
        pytest.skip("this adapter has no timestamp-query: %s" % (wgpu_dev.rt.features,))
    return wgpu_dev.rt


def _work(n):
    x = ember.ones(1 << 16, device=wgpu_dev)
    ys = [x * (k + 1) for k in range(n)]
    return ys


def test_each_submitted_batch_gets_one_figure(rt):
    x = ember.ones(1 << 16, device=wgpu_dev)
    wgpu_dev.synchronize()
    rt.start_timing()
    a = x * 2
    wgpu_dev.synchronize()
    b = x + 3
    c = b * a
    seconds = rt.stop_timing()
    assert len(seconds) == 2
    assert all(s > 0 for s in seconds)
    assert c.tolist()[:2] == [8.0, 8.0]  # the timed work computed what it should


def test_more_work_takes_more_gpu_time(rt):
    wgpu_dev.synchronize()
    rt.start_timing()
    keep = _work(1)
    wgpu_dev.synchronize()
    keep += _work(64)
    seconds = rt.stop_timing()
    assert len(seconds) == 2
    assert seconds[1] > seconds[0]


def test_nothing_recorded_gives_no_figures(rt):
    wgpu_dev.synchronize()
    rt.start_timing()
    assert rt.stop_timing() == []


def test_work_recorded_before_start_is_not_timed(rt):
    keep = _work(4)  # still open when timing starts: submitted untimed
    rt.start_timing()
    assert rt.batch == 0
    keep += _work(1)
    assert len(rt.stop_timing()) == 1


def test_a_full_timer_stops_asking_and_counts_what_it_left_out(rt):
    wgpu_dev.synchronize()
    rt.start_timing()
    rt.timer.capacity = 2
    for _ in range(4):
        keep = _work(1)
        wgpu_dev.synchronize()
    dropped = rt.timer.dropped
    seconds = rt.stop_timing()
    assert len(seconds) == 2 and dropped == 2
    del keep


def test_timing_twice_starts_again(rt):
    rt.start_timing()
    keep = _work(1)
    wgpu_dev.synchronize()
    rt.start_timing()  # the first timer's figures are dropped with it
    keep += _work(1)
    assert len(rt.stop_timing()) == 1


def test_stop_without_start_is_an_error():
    with pytest.raises(RuntimeError, match="without start_timing"):
        wgpu_dev.rt.stop_timing()


def test_an_adapter_without_timestamps_is_named():
    fake = types.SimpleNamespace(features=("shader-f16",))
    with pytest.raises(RuntimeError, match="timestamp-query.*shader-f16"):
        timing.PassTimer(fake)


def test_tick_period_is_positive(rt):
    assert timing.tick_ns(rt) > 0
