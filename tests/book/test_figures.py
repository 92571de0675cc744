"""tools/book/figures.py: the dashboard screenshot and the training curves come from a real run."""
import importlib.util
import os
import re

import pytest

pytest.importorskip("textual", reason="the dashboard needs ember[train] (textual)")
pytest.importorskip("matplotlib", reason="the curves need ember[train] (matplotlib)")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_figures_from_a_short_run(tmp_path):
    spec = importlib.util.spec_from_file_location("figures", os.path.join(ROOT, "tools", "book", "figures.py"))
    figures = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(figures)
    figures.make(str(tmp_path), epochs=3)
    svg = (tmp_path / "dashboard.svg").read_text()
    assert svg.lstrip().startswith("<svg")
    # the screenshot shows the run: its title, the status line and the metrics table
    assert "training&#160;MLP&#160;on&#160;Cpu()" in svg
    assert re.search(r"epoch&#160;\d/3", svg)
    assert "valid" in svg and "accuracy" in svg
    with open(tmp_path / "curves.png", "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"
