"""mkdocs hook: the ``ember`` package as griffe must see it, for the API reference.

The import name ``ember`` is the folder ``core_pure/`` and ``ember.accel`` is ``accel/`` (pyproject's
package-dir); griffe reads packages from folders named as they import, so this links
``build/book-api/ember`` to that layout: real folders (griffe does not walk linked ones) holding
links to the .py files, rebuilt on every build. It is built in ``on_config``, ahead of the
mkdocstrings plugin: its handler resolves ``paths`` when it starts, and a folder missing then (a
fresh clone) silently falls back to the installed ``ember``, which has no ``accel`` subfolder."""
import os
import shutil

from mkdocs.plugins import event_priority

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TREE = os.path.join(ROOT, "build", "book-api", "ember")
MOUNTS = {"accel": "accel", "boards": "boards"}  # ember.<name> -> folder of the repository


def _mirror(src, dst):
    os.makedirs(dst)
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if os.path.isdir(path) and os.path.exists(os.path.join(path, "__init__.py")):
            _mirror(path, os.path.join(dst, name))
        elif name.endswith(".py"):
            os.symlink(path, os.path.join(dst, name))


@event_priority(100)
def on_config(config):
    shutil.rmtree(os.path.dirname(TREE), ignore_errors=True)
    _mirror(os.path.join(ROOT, "core_pure"), TREE)
    for name, folder in MOUNTS.items():
        _mirror(os.path.join(ROOT, folder), os.path.join(TREE, name))
    return config
