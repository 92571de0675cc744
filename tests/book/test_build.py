"""The book's build settings (mkdocs.yml) fail on a broken link and join docs/*.md as design pages.

A small book is built with mkdocs.yml's own validation and design-page hook (the theme and the API
reference are left out to keep it fast; `make docs` builds the real one)."""
import os
import subprocess
import sys

import pytest

yaml = pytest.importorskip("yaml", reason="the book needs the docs extra: pip install -e '.[docs]'")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _build(tmp_path, page):
    with open(os.path.join(ROOT, "mkdocs.yml")) as f:
        ours = yaml.safe_load(f)
    docs = tmp_path / "pages"
    docs.mkdir()
    (docs / "index.md").write_text(page)
    config = {"site_name": "t", "docs_dir": str(docs), "site_dir": str(tmp_path / "site"), "strict": True,
              "validation": ours["validation"], "plugins": [],
              "hooks": [os.path.join(ROOT, "book", "hooks", "design_pages.py")]}
    path = tmp_path / "mkdocs.yml"
    path.write_text(yaml.safe_dump(config))
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "-f", str(path)], capture_output=True,
                          text=True, env=dict(os.environ, NO_MKDOCS_2_WARNING="1"), timeout=120)


def test_design_pages_join_the_book_and_links_to_them_resolve(tmp_path):
    run = _build(tmp_path, "# t\n\n[the contract](design/architecture.md), [fusion](design/fusion.md#what-fuses)\n")
    assert run.returncode == 0, run.stderr
    html = (tmp_path / "site" / "design" / "architecture" / "index.html").read_text()
    with open(os.path.join(ROOT, "docs", "architecture.md")) as f:
        title = f.readline().lstrip("# ").strip()
    assert title.split(":")[0] in html
    for name in os.listdir(os.path.join(ROOT, "docs")):
        if name.endswith(".md"):
            assert (tmp_path / "site" / "design" / name[:-3] / "index.html").exists(), name


def test_a_broken_link_fails_the_build(tmp_path):
    run = _build(tmp_path, "# t\n\n[gone](no-such-page.md)\n")
    assert run.returncode != 0
    assert "no-such-page.md" in run.stderr


def test_a_broken_anchor_fails_the_build(tmp_path):
    run = _build(tmp_path, "# t\n\n[gone](design/fusion.md#no-such-heading)\n")
    assert run.returncode != 0
    assert "no-such-heading" in run.stderr


def test_docstring_examples_become_code_blocks():
    import importlib.util
    spec = importlib.util.spec_from_file_location("doctest_blocks", os.path.join(ROOT, "book", "hooks",
                                                                                  "doctest_blocks.py"))
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    lines = ["Sum it:", ">>> x = ember.ones(2)", ">>> x.sum().item()", "2.0", "", "after",
             "```python", ">>> kept = 'inside a fence'", "```"]
    assert hook.DoctestBlocks(None).run(lines) == [
        "Sum it:", "", "```pycon", ">>> x = ember.ones(2)", ">>> x.sum().item()", "2.0", "```", "", "", "after",
        "```python", ">>> kept = 'inside a fence'", "```"]
