"""``ember.record``: safetensors files, read and written in pure Python (CPython and MicroPython).

>>> ember.record.write("model.safetensors", [("fc.weight", w), ("fc.bias", b)], precision="f16")
>>> with ember.record.open("model.safetensors") as r:
...     w = r.read("fc.weight", dtype=ember.float32)
>>> print(ember.record.inspect("model.safetensors"))

Reading holds one tensor's bytes at a time; writing streams tensor by tensor into a temporary file
that replaces the target only when complete. Malformed or hostile files raise ``RecordError``
naming the file and the key.
"""
from .format import Entry, FORMAT_VERSION, MAX_HEADER_SIZE, TO_EMBER, WIDENED
from .reader import Reader, Info, inspect, read
from .reader import open_reader as open  # noqa: A001  (ember.record.open reads like the builtin)
from .writer import write, PRECISIONS
