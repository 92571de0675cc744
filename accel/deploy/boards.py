"""Board profiles: the facts a deployment needs about a board (heap, flash, float width), read from
``ember.boards`` (the repository's ``boards/`` folder)."""
import json
import os

from ember.errors import DeployError

FIELDS = ("name", "description", "port", "heap_bytes", "flash_bytes", "fs_bytes", "float", "word_bits",
          "mpy_version", "sources")


def folder():
    import ember.boards
    return os.path.dirname(os.path.abspath(ember.boards.__file__))


def names():
    """The names of the board profiles ember ships (``ember deploy --board``), sorted."""
    return sorted(f[:-5] for f in os.listdir(folder()) if f.endswith(".json"))


def load(name):
    """The profile ``name`` (a dict with ``FIELDS``); a ``DeployError`` listing the known boards.
    A dict is taken as a profile itself (a board of your own)."""
    if type(name) is dict:
        missing = [k for k in FIELDS if k not in name]
        if missing:
            raise DeployError("deploy: the board profile lacks %s" % ", ".join(missing))
        return name
    known = names()
    if name not in known:
        raise DeployError("deploy: unknown board %r (known: %s)" % (name, ", ".join(known)))
    with open(os.path.join(folder(), name + ".json")) as f:
        profile = json.load(f)
    missing = [k for k in FIELDS if k not in profile]
    if missing:
        raise DeployError("deploy: board profile %s lacks %s" % (name, ", ".join(missing)))
    return profile
