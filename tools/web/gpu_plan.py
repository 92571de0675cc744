"""The GPU path's plan of a model: the WGSL kernels and dispatches the Wgpu backend itself runs for one
forward pass, recorded at the runtime's boundary (``pipeline``, ``dispatch``, ``write``, ``read``), so
the page's bridge (examples/web/gpu.js) replays exactly the kernels ember generates.

The plan (JSON): ``kernels`` (WGSL source, bindings, read-only count), ``buffers`` (byte sizes),
``weights`` (buffer, byte offset, record tensor name: the bridge fills them from the same record the
CPU path loads), ``consts`` (any other upload, as u32 words), ``input`` and ``output`` (buffer, byte
offset, float count) and ``dispatches`` (kernel, buffers, the 64 parameter words, workgroups).
"""
import json
import os
import struct
import sys

# the features a browser's WebGPU core lacks (f64, i64) or may lack (f16): kernels generated without them
os.environ["EMBER_WGPU_DISABLE"] = "shader-f16,shader-f64,shader-int64,cooperative-matrix"

import ember  # noqa: E402
from ember.accel import Wgpu  # noqa: E402
from ember.accel.deploy import model as model_spec  # noqa: E402
from ember.accel.wgpu.runtime import PARAM_WORDS  # noqa: E402
from ember.errors import DeployError  # noqa: E402

WARMUP = 2  # forward passes before the recorded one: the autotuner's trials stay out of the plan


class _Recorder:
    """Wraps a Runtime's entry points on the instance; the plan's pieces accumulate here."""

    def __init__(self, rt):
        self.rt = rt
        self.kernels, self.kernel_of = [], {}
        self.buffers, self.buffer_of = [], {}
        self.writes, self.dispatches, self.reads = [], [], []
        pipeline, dispatch, write, read = rt.pipeline, rt.dispatch, rt.write, rt.read

        def rec_pipeline(key, make_source, n, readonly=0):
            entry = pipeline(key, make_source, n, readonly)
            if id(entry[0]) not in self.kernel_of:
                self.kernel_of[id(entry[0])] = len(self.kernels)
                self.kernels.append({"wgsl": make_source(), "bindings": n, "readonly": readonly})
            return entry

        def rec_dispatch(entry, buffers, words, groups):
            words = [int(w) & 0xFFFFFFFF for w in words]
            g = list(groups) + [1] * (3 - len(groups)) if isinstance(groups, (tuple, list)) else [groups, 1, 1]
            self.dispatches.append({"k": self.kernel_of[id(entry[0])], "b": self.unaliased(buffers),
                                    "w": words + [0] * (PARAM_WORDS - len(words)), "g": g})
            return dispatch(entry, buffers, words, groups)

        def rec_write(buf, offset, data):
            self.writes.append((self.buffer(buf), offset, bytes(data)))
            return write(buf, offset, data)

        def rec_read(buf, offset, nbytes):
            self.reads.append((self.buffer(buf), offset, nbytes))
            return read(buf, offset, nbytes)

        rt.pipeline, rt.dispatch, rt.write, rt.read = rec_pipeline, rec_dispatch, rec_write, rec_read

    def unaliased(self, buffers):
        """The buffers' indices, a repeat replaced by a scratch buffer of its size: browsers (Dawn) refuse
        one buffer at two writable bindings, which the tiled matmul does when it needs no split-K
        partials (it binds the output again in their place, unused); the replay's check (the
        plan's ``check``) shows the answer is unchanged."""
        out = []
        for b in buffers:
            i = self.buffer(b)
            if i in out:
                i = len(self.buffers)
                self.buffers.append((None, b.gpu.size))
            out.append(i)
        return out

    def buffer(self, buf):
        i = self.buffer_of.get(id(buf.gpu))
        if i is None:
            i = self.buffer_of[id(buf.gpu)] = len(self.buffers)
            self.buffers.append((buf.gpu, buf.gpu.size))
        return i


def record_plan(path, cls, record, input_shape):
    """The plan (a dict) of model ``path:cls`` with weights ``record`` on one input of ``input_shape``."""
    device = Wgpu()
    rec = _Recorder(device.rt)
    net = model_spec.build(path, cls)
    net.load(record)
    net.eval()
    params = {name: bytes(p.to(ember.float32).to_bytes()) for name, p in net.state_dict().items()}
    net = net.to(device)
    weights = []
    for b, off, data in rec.writes:
        names = [n for n, v in params.items() if v == data]
        if not names:
            raise DeployError("gpu plan: an upload of %d bytes matches no tensor of %s" % (len(data), record))
        weights.append({"buffer": b, "offset": off, "tensor": names[0]})
    n = 1
    for d in input_shape:
        n *= d
    probe = [((i * 7919) % 1000) / 1000.0 for i in range(n)]  # distinct values: the input's upload is unmistakable
    x = ember.tensor(probe).reshape((1,) + tuple(input_shape))
    for _ in range(WARMUP):
        net(x.to(device)).tolist()
    del rec.writes[:], rec.dispatches[:], rec.reads[:]
    expected = net(x.to(device)).tolist()[0]
    probe_bytes = struct.pack("<%df" % n, *probe)
    inputs = [w for w in rec.writes if w[2] == probe_bytes]
    if len(inputs) != 1 or len(rec.reads) != 1:
        raise DeployError("gpu plan: expected one input upload and one read in the forward pass, found %d and %d"
                          % (len(inputs), len(rec.reads)))
    consts = [{"buffer": b, "offset": off, "words": list(struct.unpack("<%dI" % (len(d) // 4), d))}
              for b, off, d in rec.writes if d != probe_bytes]
    out_b, out_off, out_n = rec.reads[0]
    return {"kernels": rec.kernels, "buffers": [max(size, 16) for _, size in rec.buffers], "weights": weights,
            "consts": consts, "input": {"buffer": inputs[0][0], "offset": inputs[0][1], "count": n},
            "output": {"buffer": out_b, "offset": out_off, "count": out_n // 4},
            "dispatches": rec.dispatches, "check": {"input": probe, "logits": expected}}


def write(path, cls, record, input_shape, out):
    with open(out, "w") as f:
        json.dump(record_plan(path, cls, record, input_shape), f, separators=(",", ":"))


def main():
    """``python tools/web/gpu_plan.py MODEL.py CLASS RECORD SHAPE OUT``: one model per process, so the
    runtime's pipeline cache starts empty and every kernel goes through ``pipeline`` (recorded)."""
    path, cls, record, shape, out = sys.argv[1:6]
    write(path, cls, record, tuple(int(d) for d in shape.split(",")), out)


if __name__ == "__main__":
    main()
