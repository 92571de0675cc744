"""Fixtures shared by the accel tests."""
import pytest


@pytest.fixture
def autotune(tmp_path, monkeypatch):
    """The Wgpu autotuner on, for every size, with an empty cache under ``tmp_path``."""
    from ember.accel.wgpu import autotune
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("EMBER_AUTOTUNE", "1")
    monkeypatch.setattr(autotune, "MIN_FLOPS", 1)
    autotune._loaded[:] = []
    return autotune
