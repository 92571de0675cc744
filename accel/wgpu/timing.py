"""GPU time of submitted work, from timestamps the GPU itself writes.

A ``PassTimer`` asks for a timestamp at the start and at the end of every compute pass the runtime
opens for its dispatches while it is attached (a captured replay encodes its own passes, untimed),
the way CUDA events bracket a stream's work: what it reports is the
time the GPU spent from the first dispatch of a batch to the end of its last, without the host's
encoding, the submit or the wait for the fence. Benchmarks use it to compare ember's kernels with
a reference timed by CUDA events; ``Runtime.start_timing`` attaches one where the adapter has the
``timestamp-query`` feature.

    rt.start_timing()
    y = x * 2          # recorded into a timed pass
    seconds = rt.stop_timing()   # one figure per pass submitted since start_timing
"""
import struct

import wgpu

CAPACITY = 512  # passes one timer records before it stops asking for timestamps
STRIDE = 256  # bytes between two passes' results: wgpu resolves queries only to 256-byte offsets


class PassTimer:
    def __init__(self, rt, capacity=CAPACITY):
        if "timestamp-query" not in rt.features:
            raise RuntimeError("this adapter's device was opened without the timestamp-query feature "
                               "(features: %s)" % (", ".join(rt.features) or "none"))
        self.rt = rt
        self.capacity = capacity
        dev = rt.device
        self.queries = dev.create_query_set(type="timestamp", count=2 * capacity)
        self.resolved = dev.create_buffer(size=STRIDE * capacity,
                                          usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.readback = dev.create_buffer(size=STRIDE * capacity,
                                          usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
        self.period = tick_ns(rt)
        self.passes = 0  # passes that asked for timestamps
        self.dropped = 0  # passes opened after the timer was full (not timed)

    def writes(self):
        """The ``timestamp_writes`` of the next compute pass, or None once the timer is full."""
        if self.passes >= self.capacity:
            self.dropped += 1
            return None
        i = self.passes
        self.passes += 1
        return {"query_set": self.queries, "beginning_of_pass_write_index": 2 * i,
                "end_of_pass_write_index": 2 * i + 1}

    def resolve(self, encoder):
        """Resolve the pass just ended into the result buffer (before its encoder finishes)."""
        i = self.passes - 1
        encoder.resolve_query_set(self.queries, 2 * i, 2, self.resolved, STRIDE * i)

    def read(self):
        """Seconds of GPU time of each timed pass, in order (waits for the GPU)."""
        n = self.passes
        if not n:
            return []
        enc = self.rt.device.create_command_encoder()
        size = STRIDE * n
        enc.copy_buffer_to_buffer(self.resolved, 0, self.readback, 0, size)
        self.rt.queue.submit([enc.finish()])
        self.readback.map_async("READ", 0, size).sync_wait()
        data = bytes(self.readback.read_mapped(0, size, copy=True))
        self.readback.unmap()
        out = []
        for i in range(n):
            begin, end = struct.unpack_from("<2Q", data, STRIDE * i)
            # a driver may write an end before its begin when a pass is empty: clamp at zero
            out.append(max(0, end - begin) * self.period * 1e-9)
        return out

    def destroy(self):
        self.queries.destroy()
        self.resolved.destroy()
        self.readback.destroy()


def tick_ns(rt):
    """Nanoseconds per timestamp tick (wgpu-native's own query; 1.0 where it is not reachable)."""
    try:
        from wgpu.backends.wgpu_native._api import lib
        period = float(lib.wgpuQueueGetTimestampPeriod(rt.queue._internal))
    except (ImportError, AttributeError):
        return 1.0
    return period if period > 0 else 1.0
