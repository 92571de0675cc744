"""mkdocs hook: docs/*.md (ember's design pages) join the book as design/<name>.md, unchanged.

They stay where the repository links to them; the book renders the same files, so neither copy
can drift from the other."""
import os

from mkdocs.structure.files import File

DESIGN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs")


def on_files(files, config):
    for name in sorted(os.listdir(DESIGN)):
        if name.endswith(".md"):
            files.append(File.generated(config, "design/" + name, abs_src_path=os.path.join(DESIGN, name)))
    return files
