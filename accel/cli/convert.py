"""``ember convert IN OUT``: a file of another format (or precision) into an ember safetensors record.

The converters are a table keyed by the input's format as ``formats.sniff`` finds it; the import
features (ONNX, PyTorch checkpoints) add theirs with ``register``. Built in: a safetensors record to
another precision, and a numpy ``.npz`` archive of arrays.
"""
from ember.errors import ArgumentError, RecordError

from . import formats
from .progress import Progress

PRECISIONS = ("keep", "f32", "f16", "bf16")
CONVERTERS = {}  # format name -> fn(src, dst, precision) -> tensors written


def register(fmt, fn):
    """Make ``ember convert`` read files of ``fmt`` (a ``formats`` name) with ``fn(src, dst, precision)``."""
    CONVERTERS[fmt] = fn


def add(sub):
    p = sub.add_parser("convert", help="turn another format (or precision) into an ember safetensors record",
                       description="Convert IN into the safetensors record OUT. Reads: %s."
                                   % ", ".join(sorted(CONVERTERS)))
    p.add_argument("src", metavar="IN")
    p.add_argument("dst", metavar="OUT")
    p.add_argument("--precision", choices=PRECISIONS, default="keep",
                   help="cast float tensors (ints and bools are kept); default: keep every dtype")
    p.set_defaults(run=run)
    return p


def _write(dst, named, precision, metadata=None):
    from ember import record
    record.write(dst, named, metadata=metadata, precision=None if precision == "keep" else precision)
    return len(named)


def _from_safetensors(src, dst, precision):
    from ember import record
    with record.open(src) as r:
        names = [e.name for e in r.entries]
        bar = Progress(len(names), "reading %s" % src, unit="tensors")
        named = []
        for name in names:
            named.append((name, r.read(name)))
            bar.update(note=name)
        bar.close()
        # the writer sets ember's own format keys again; the rest (ember_module, the user's) is kept
        metadata = {k: v for k, v in r.metadata.items() if k not in ("ember_format_version", "ember_precision")}
    return _write(dst, named, precision, metadata)


def _from_npz(src, dst, precision):
    try:
        import numpy as np
    except ImportError:
        raise ArgumentError("convert: reading %s needs numpy (pip install ember[numpy])" % src)
    from ember.accel.numpy.interop import from_numpy
    import ember
    with np.load(src, allow_pickle=False) as z:  # never unpickle: arrays only
        keys = list(z.keys())
        bar = Progress(len(keys), "reading %s" % src, unit="arrays")
        named = []
        for key in keys:
            try:
                a = z[key]
            except ValueError as e:  # an object array, which only pickle could read
                raise RecordError("convert: %s: array %r cannot be read without unpickling (%s)" % (src, key, e))
            named.append((key, from_numpy(np.ascontiguousarray(a), device=ember.Cpu(kernels="python"))))
            bar.update(note=key)
        bar.close()
    return _write(dst, named, precision)


register(formats.SAFETENSORS, _from_safetensors)
register(formats.NUMPY_ZIP, _from_npz)
from ember.accel.pytorch import convert as _pytorch  # noqa: E402,F401  registers the torch.save formats


def convert(src, dst, precision="keep"):
    """Convert ``src`` into the record ``dst``; the number of tensors written."""
    if precision not in PRECISIONS:
        raise ArgumentError("convert: precision must be one of %s, found %r" % (", ".join(PRECISIONS), precision))
    kind = formats.sniff(src)
    fn = CONVERTERS.get(kind)
    if fn is None:
        raise RecordError("convert: %s is a format ember cannot convert yet (found: %s); it reads: %s"
                          % (src, kind, ", ".join(sorted(CONVERTERS))))
    import os
    if os.path.abspath(src) == os.path.abspath(dst):
        raise ArgumentError("convert: IN and OUT are the same file (%s)" % src)
    return fn(src, dst, precision)


def run(args):
    n = convert(args.src, args.dst, args.precision)
    print("wrote %s: %d tensors%s" % (args.dst, n, "" if args.precision == "keep" else ", floats as " + args.precision))
    return 0
