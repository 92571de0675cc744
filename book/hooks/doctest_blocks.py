"""mkdocs hook: docstring examples (``>>>`` lines and what follows them) render as code.

ember's docstrings show examples as interpreter sessions; plain Markdown would read ``>>>`` as three
nested quotes. A Markdown preprocessor, added before mkdocstrings copies the extensions, wraps each
run of ``>>>``/``...`` lines (and their output, up to a blank line) into a ``pycon`` fence."""
import re

from markdown import Extension
from markdown.preprocessors import Preprocessor
from mkdocs.plugins import event_priority

PROMPT = re.compile(r"^(?P<indent>\s*)>>>( |$)")
FENCE = re.compile(r"^\s*(```|~~~)")


class DoctestBlocks(Preprocessor):
    def run(self, lines):
        out, i, fenced = [], 0, False
        while i < len(lines):
            line = lines[i]
            if FENCE.match(line):
                fenced = not fenced
            m = None if fenced else PROMPT.match(line)
            if not m:
                out.append(line)
                i += 1
                continue
            indent = m.group("indent")
            if out and out[-1].strip():
                out.append("")
            out.append(indent + "```pycon")
            while i < len(lines) and lines[i].strip():
                out.append(indent + lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
                i += 1
            out.append(indent + "```")
            out.append("")
        return out


class DoctestExtension(Extension):
    def extendMarkdown(self, md):
        md.preprocessors.register(DoctestBlocks(md), "ember_doctest_blocks", 35)


@event_priority(100)  # before mkdocstrings' on_config, which copies the extension list
def on_config(config):
    config.markdown_extensions.append(DoctestExtension())
    return config
