"""Every ```python block of the book (book/*.md) runs, page by page: the blocks of one page share a
namespace and run in order, in a fresh temporary folder, so a page reads as one program.

The design pages (docs/*.md, in the book as design/*.md) run the same way.

Every fence names its language. A python block opts out only with the line
``<!-- book: no-run REASON -->`` just above its fence (a sketch with the reader's own names, two
programs side by side, a run too slow for a test); a marker without a reason is an error, and so
is a marker that stands above no python block. Shell commands and printed output go in ```sh and ```text
blocks, which are never run. Pages of features still being built elsewhere are in PENDING below:
their tests are skipped with the reason, not hidden.
"""
import linecache
import os
import re
import sys
import textwrap
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BOOK = os.path.join(ROOT, "book")
DESIGN = os.path.join(ROOT, "docs")  # the design pages: the book shows them as design/<name>

# Pages whose snippets use features other branches are building (issues 16-19 and 21). The lead
# empties this list as each feature merges; a page listed here is still built by `make docs`.
PENDING = {
}

PYTHON_SPELLINGS = ("py", "python3", "Python")  # would silently never run
FENCE = re.compile(r"^(?P<indent> *)(?P<ticks>```+)(?P<info>[^`\n]*)$")
NO_RUN = re.compile(r"^\s*<!--\s*book:\s*no-run(?P<reason>[^>]*?)-->\s*$")


class Block:
    def __init__(self, page, line, lang, code, skip):
        self.page, self.line, self.lang, self.code, self.skip = page, line, lang, code, skip


def blocks(page):
    """The fenced blocks of ``page`` (a file name in book/), in order, with their first line."""
    if page.startswith("design/"):
        path = os.path.join(DESIGN, page[len("design/"):])
    else:
        path = os.path.join(BOOK, page)
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    out, i, marker = [], 0, None
    while i < len(lines):
        m = NO_RUN.match(lines[i])
        if m:
            reason = m.group("reason").strip()
            if not reason:
                raise ValueError("%s:%d: a no-run marker needs a reason: <!-- book: no-run WHY -->" % (page, i + 1))
            marker = (i + 1, reason)
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f and not f.group("info").strip():
            raise ValueError("%s:%d: a fence without a language: write ```python (runs) or ```sh / ```text "
                             "(never runs)" % (page, i + 1))
        if not f:
            if marker and lines[i].strip():
                raise ValueError("%s:%d: the no-run marker is not followed by a fenced block" % (page, marker[0]))
            i += 1
            continue
        indent, ticks, lang = len(f.group("indent")), f.group("ticks"), f.group("info").strip().split()[0]
        if lang in PYTHON_SPELLINGS:
            raise ValueError("%s:%d: write ```python, not ```%s: only python blocks run" % (page, i + 1, lang))
        start, body, i = i + 1, [], i + 1
        while i < len(lines) and lines[i].strip() != ticks:
            body.append(lines[i][indent:])
            i += 1
        if i == len(lines):
            raise ValueError("%s:%d: the block opened here is never closed" % (page, start))
        if marker and lang != "python":
            raise ValueError("%s:%d: the no-run marker stands above a %s block, which never runs"
                             % (page, marker[0], lang))
        out.append(Block(page, start + 1, lang, "\n".join(body) + "\n", marker[1] if marker else None))
        marker = None
        i += 1
    return out


def _where(page):
    """The page's file in the repository, for messages."""
    return "docs/" + page[len("design/"):] if page.startswith("design/") else "book/" + page


def pages():
    return sorted(n for n in os.listdir(BOOK) if n.endswith(".md")) + \
        sorted("design/" + n for n in os.listdir(DESIGN) if n.endswith(".md"))


def test_the_book_has_its_pages_and_they_have_code():
    names = pages()
    for page in ("getting-started.md", "tensors.md", "modules.md", "records.md", "training.md", "backends.md",
                 "fusion.md", "custom.md", "deploy.md", "performance.md", "pytorch.md"):
        assert page in names, page
        assert any(b.lang == "python" and b.skip is None for b in blocks(page)), "%s runs no python block" % page
    for page in PENDING:
        assert page in names, "PENDING names %s, which is not a page of book/" % page


def test_the_collector_reads_markers_and_fences(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "BOOK", str(tmp_path))
    (tmp_path / "p.md").write_text("text\n```python\nx = 1\n```\n<!-- book: no-run PyTorch's code -->\n"
                                   "```python\nimport torch\n```\n```sh\nmake docs\n```\n")
    got = [(b.lang, b.code, b.skip, b.line) for b in blocks("p.md")]
    assert got == [("python", "x = 1\n", None, 3), ("python", "import torch\n", "PyTorch's code", 7),
                   ("sh", "make docs\n", None, 10)]
    (tmp_path / "q.md").write_text("<!-- book: no-run -->\n```python\nx = 1\n```\n")
    with pytest.raises(ValueError, match="needs a reason"):
        blocks("q.md")
    (tmp_path / "r.md").write_text("<!-- book: no-run why -->\n```sh\nls\n```\n")
    with pytest.raises(ValueError, match="never runs"):
        blocks("r.md")
    (tmp_path / "s.md").write_text("```\nx = 1\n```\n")
    with pytest.raises(ValueError, match="without a language"):
        blocks("s.md")
    (tmp_path / "t.md").write_text("```py\nx = 1\n```\n")
    with pytest.raises(ValueError, match="only python blocks run"):
        blocks("t.md")


@pytest.mark.parametrize("page", pages())
def test_every_python_block_compiles(page):
    """Also the pending pages' blocks: a typo is caught before the feature merges."""
    for b in blocks(page):
        if b.lang == "python" and not b.skip:
            compile(textwrap.dedent(b.code), "%s:%d" % (_where(page), b.line), "exec")


def _run_page(page, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("EMBER_BOOK", "1")
    namespace = {"__name__": "__book__"}
    import ember
    ember.seed(0)
    for b in blocks(page):
        if b.lang != "python" or b.skip:
            continue
        source, name = textwrap.dedent(b.code), "%s:%d" % (_where(page), b.line)
        # the block's lines in tracebacks, numbered as in the page
        padded = "\n" * (b.line - 1) + source
        linecache.cache[name] = (len(padded), None, padded.splitlines(True), name)
        code = compile(padded, name, "exec")
        start = time.perf_counter()
        try:
            exec(code, namespace)
        except Exception as e:
            raise AssertionError("%s, the block at line %d raised %s: %s"
                                 % (_where(page), b.line, type(e).__name__, e)) from e
        assert time.perf_counter() - start < 30, "%s:%d is too slow for a snippet" % (_where(page), b.line)


@pytest.mark.parametrize("page", pages())
def test_page_runs(page, tmp_path, monkeypatch):
    if page in PENDING:
        pytest.skip("%s is pending: %s (tests/book/test_book.py PENDING)" % (_where(page), PENDING[page]))
    _run_page(page, tmp_path, monkeypatch)
