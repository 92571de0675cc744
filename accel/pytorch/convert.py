"""``ember convert model.pt model.safetensors``: the converter of both torch.save formats."""
from ember.accel.cli import convert, formats
from ember.accel.cli.progress import Progress

from .checkpoint import open_checkpoint


def from_pytorch(src, dst, precision):
    """Write the state dict of the checkpoint ``src`` to the record ``dst``; the tensor count."""
    with open_checkpoint(src) as ck:
        bar = Progress(len(ck.entries), "reading %s" % src, unit="tensors")
        named = []
        for e in ck.entries:
            named.append((e.name, ck.read(e.name)))
            bar.update(note=e.name)
        bar.close()
        metadata = {"ember_source": ck.metadata["format"]}
    return convert._write(dst, named, precision, metadata)


convert.register(formats.PYTORCH_ZIP, from_pytorch)
convert.register(formats.PYTORCH_LEGACY, from_pytorch)
