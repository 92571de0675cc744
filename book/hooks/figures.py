"""mkdocs hook: the generated figures must exist before the book builds, with a clear error if not.

``make docs`` makes them first (``tools/book/figures.py``, from a real training run); a bare
``mkdocs build`` would otherwise fail on image links without saying how to get the images."""
import os

from mkdocs.exceptions import PluginError

FIGURES = ("dashboard.svg", "curves.png")


def on_pre_build(config):
    folder = os.path.join(config["docs_dir"], "img", "generated")
    missing = [f for f in FIGURES if not os.path.exists(os.path.join(folder, f))]
    if missing:
        raise PluginError("the book's generated figures are missing (%s in %s): run `make docs`, or "
                          "`.venv/bin/python tools/book/figures.py` before `mkdocs build`"
                          % (", ".join(missing), folder))
