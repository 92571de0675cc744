"""One wgpu device per adapter, and the queue discipline that makes ember's GPU ops asynchronous.

``Runtime`` owns the GPUDevice and everything cached on it: shader modules, pipelines, bind group
layouts and bind groups. An op never waits: ``dispatch`` records one compute dispatch into the
current compute pass and appends its parameters (256 bytes) to a host-side staging area. Many
dispatches share one pass, one command encoder and one ``queue.submit``; ``flush`` closes the batch
(one ``write_buffer`` of all parameters, then one submit) and only ``read`` waits for the GPU.

Parameters reach each dispatch through a dynamic offset into one uniform buffer, so a bind group
depends only on the storage buffers it names and is reused whenever the pool hands the same
buffers out again. Uploads (``write``) first submit the batch in flight: ``queue.write_buffer``
runs before the next submit, so it must not overtake work already encoded.
"""
import os
import struct
import sys
import threading
from array import array as _ARRAY

import wgpu

try:  # the raw C entry points: a third of the cost of wgpu-py's checked wrappers on the hot path
    from wgpu.backends.wgpu_native import _api as _native
    from wgpu.backends.wgpu_native._api import ffi as _ffi, lib as _lib
    _SET_BIND_GROUP = _lib.wgpuComputePassEncoderSetBindGroup
    _SET_PIPELINE = _lib.wgpuComputePassEncoderSetPipeline
    _DISPATCH = _lib.wgpuComputePassEncoderDispatchWorkgroups
    COPY = _lib.wgpuCommandEncoderCopyBufferToBuffer  # a captured step's copies (accel/capture)
except (ImportError, AttributeError):  # another wgpu-py layout: the public API
    _ffi = _native = COPY = None


def _c_encoder():
    """ember._ckernels with its wgpu entry points aimed at wgpu-native's (ext_c/wgpu_encode.c): one
    compiled call per dispatch instead of two or three through libffi. None without the C kernels
    (a pure install, an older build), the raw entry points, or with EMBER_WGPU_C_ENCODE=0."""
    if _ffi is None or os.environ.get("EMBER_WGPU_C_ENCODE", "1") == "0":
        return None
    try:
        from ember.backends.cpu import ckernels
        lib = ckernels.native()[0]
        use = lib.emb_wgpu_use
    except (ImportError, AttributeError):
        return None
    addr = _ffi.cast
    use(int(addr("uintptr_t", _SET_PIPELINE)), int(addr("uintptr_t", _SET_BIND_GROUP)),
        int(addr("uintptr_t", _DISPATCH)))
    return lib


_C = _c_encoder()


def address(obj):
    """The address of a wgpu-py object's native handle (a pipeline, a bind group), as an int."""
    return int(_ffi.cast("uintptr_t", obj._internal))

PARAM_BYTES = 256  # one dispatch's parameter block: 64 u32 words
PARAM_WORDS = PARAM_BYTES // 4
PARAM_CAPACITY = 1 << 22  # parameter bytes per submit: 16384 dispatches
STAGE_BYTES = 4096  # bytes ``Runtime.stage`` copies out with a submit, for the reads after it
# submit after this many dispatches, so the GPU starts on a long queue while Python records the rest
AUTO_FLUSH = int(os.environ.get("EMBER_WGPU_BATCH", "512"))
READ_WAIT = os.environ.get("EMBER_WGPU_READ_WAIT", "thread")  # how a read waits: "thread" or "poll" (Runtime._map_read)
WORKGROUP = 256
_MAX_BIND_GROUPS = 8192

# features ember uses when the adapter has them (64-bit types, half floats, tensor cores, GPU
# timestamps for the benchmarks); EMBER_WGPU_DISABLE (comma-separated) leaves some out
WANTED_FEATURES = ("shader-f16", "shader-f64", "shader-int64", "cooperative-matrix", "timestamp-query")
# the ones a device may refuse although the adapter lists them: dropped one by one, in this order
OPTIONAL_FEATURES = ("cooperative-matrix", "timestamp-query")

_PACKERS = {}
# parameters are little-endian u32 words: here an array("I") holds them as they are, copied unpacked
_LITTLE = sys.byteorder == "little" and _ARRAY("I").itemsize == 4


def _packer(n):
    p = _PACKERS.get(n)
    if p is None:
        p = _PACKERS[n] = struct.Struct("<%dI" % n).pack_into
    return p


def adapter_label(adapter):
    info = adapter.info
    return "%s (%s, %s)" % (info.get("device", "?"), info.get("backend_type", "?"),
                            info.get("adapter_type", "?"))


# The backends ember's kernels are written for: the OpenGL/GLES one lacks storage features the
# kernels use (Mesa's llvmpipe through OpenGL fails to compile them), so it is never chosen.
SUPPORTED_BACKENDS = ("Vulkan", "Metal", "D3D12")
# first the fastest kind of adapter: a discrete GPU, then integrated, virtual, and a CPU driver last
_KIND_ORDER = ("DiscreteGPU", "IntegratedGPU", "VirtualGPU", "CPU")
INSTALL_HINT = ("install a Vulkan driver: on Debian/Ubuntu `apt-get install mesa-vulkan-drivers libvulkan1` "
                "(Mesa's lavapipe runs Vulkan on the CPU)")


def _describe(adapter):
    info = adapter.info
    return " ".join(str(info.get(k, "")) for k in ("vendor", "device", "description", "backend_type",
                                                   "adapter_type"))


def _rank(adapter):
    kind = adapter.info.get("adapter_type", "")
    return _KIND_ORDER.index(kind) if kind in _KIND_ORDER else len(_KIND_ORDER)


def choose_adapter(name=None, adapters=None):
    """The adapter ember runs on: among those on a supported backend (Vulkan, Metal, D3D12), the one
    whose description contains ``name`` (case-insensitive; default: the environment variable
    ``EMBER_WGPU_ADAPTER``), else the fastest kind (discrete GPU first, a CPU driver last).

    Raises RuntimeError naming every adapter found and what to install when none is usable.
    ``adapters`` replaces wgpu's enumeration (tests)."""
    want = name if name is not None else os.environ.get("EMBER_WGPU_ADAPTER", "")
    if adapters is None:
        adapters = wgpu.gpu.enumerate_adapters_sync()
    usable = [a for a in adapters if a.info.get("backend_type") in SUPPORTED_BACKENDS]
    refused = [a for a in adapters if a not in usable]
    seen = "; ".join(adapter_label(a) for a in adapters) or "none"
    if want:
        matches = [a for a in usable if want.lower() in _describe(a).lower()]
        if not matches:
            if any(want.lower() in _describe(a).lower() for a in refused):
                raise RuntimeError("wgpu: the adapter matching %r runs on a backend ember's kernels do not "
                                   "support (they need %s); adapters: %s; %s"
                                   % (want, "/".join(SUPPORTED_BACKENDS), seen, INSTALL_HINT))
            raise RuntimeError("wgpu: no adapter matches %r (EMBER_WGPU_ADAPTER); adapters: %s" % (want, seen))
        usable = matches
    if not usable:
        if refused:
            raise RuntimeError("wgpu: no supported adapter: found only %s, whose backend ember's kernels do "
                               "not support (they need %s); %s" % (seen, "/".join(SUPPORTED_BACKENDS),
                                                                    INSTALL_HINT))
        raise RuntimeError("wgpu: no adapter found; " + INSTALL_HINT)
    return min(usable, key=_rank)  # min keeps wgpu's order among adapters of one kind


_RUNTIMES = {}


def runtime_for(adapter_name=None):
    """The shared Runtime of the chosen adapter (created on first use)."""
    key = adapter_name if adapter_name is not None else os.environ.get("EMBER_WGPU_ADAPTER", "")
    rt = _RUNTIMES.get(key)
    if rt is None:
        adapter = choose_adapter(adapter_name)
        label = adapter_label(adapter)
        for other in _RUNTIMES.values():
            if other.label == label:
                rt = other
                break
        else:
            rt = Runtime(adapter)
        _RUNTIMES[key] = rt
    return rt


class Runtime:
    def __init__(self, adapter):
        self.adapter = adapter
        self.label = adapter_label(adapter)
        off = [f.strip() for f in os.environ.get("EMBER_WGPU_DISABLE", "").split(",") if f.strip()]
        self.features = tuple(f for f in WANTED_FEATURES if f in adapter.features and f not in off)
        limits = dict(adapter.limits)  # ask for everything the adapter offers (64M floats > 128 MiB)
        needed = {k: limits[k] for k in ("max-storage-buffer-binding-size", "max-buffer-size",
                                         "max-compute-workgroup-storage-size",
                                         "max-storage-buffers-per-shader-stage") if k in limits}
        self.refused = {}  # feature -> why the device would not take it
        self.device = None
        while self.device is None:
            try:
                self.device = adapter.request_device_sync(required_features=list(self.features),
                                                          required_limits=limits)
            except Exception as e:
                if limits is not needed:  # some limit the driver will not grant as offered
                    limits = needed
                    continue
                # wgpu-native 29 advertises cooperative-matrix but offers no switch for the
                # experimental features it belongs to: drop it (then the next optional one) and go on
                drop = next((f for f in OPTIONAL_FEATURES if f in self.features), None)
                if drop is None:
                    raise
                self.refused[drop] = str(e).strip().splitlines()[-1][:200]
                self.features = tuple(f for f in self.features if f != drop)
        self.queue = self.device.queue
        lim = self.device.limits
        self.max_binding = lim["max-storage-buffer-binding-size"]
        self.max_buffer = lim["max-buffer-size"]
        self.max_groups = lim["max-compute-workgroups-per-dimension"]
        self.max_workgroup_storage = lim["max-compute-workgroup-storage-size"]
        self.has_f16 = "shader-f16" in self.features
        self.has_f64 = "shader-f64" in self.features
        self.has_i64 = "shader-int64" in self.features
        self.params = self.device.create_buffer(
            size=PARAM_CAPACITY, usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        self.staging = bytearray(PARAM_CAPACITY)
        self._words = memoryview(self.staging).cast("I")  # the staging area as u32 words
        self.cursor = 0
        self._layouts = {}  # number of storage bindings -> (bind group layout, pipeline layout)
        self._pipelines = {}  # kernel key -> (pipeline, number of storage bindings)
        self._modules = {}  # WGSL source -> shader module
        self._bind_groups = {}  # tuple of DeviceBuffers -> bind group
        self._uid = 0
        self._encoder = None
        self._pass = None
        self._pass_handle = None  # the open pass's C handle, for the raw entry points
        self._timed = False  # whether the open pass writes timestamps
        self._pipeline = None
        # bind groups dropped from the cache while a batch was open: the batch may use them
        self._keep = []
        # statistics: how the work was batched
        self._submitted = 0  # dispatches in the batches already submitted
        self.submits = 0
        self.batch = 0  # dispatches in the batch being recorded
        self.batches = []  # dispatch count of each recent submit (last 64)
        self.pipeline_count = 0
        self.error_check = None  # an index.ErrorRecord when queued kernels may have recorded errors
        self._sync_buffer = None
        self._staging = None  # the mappable buffer reads come back through
        # one queue, many threads (data-parallel training): recording, submitting and reading
        # each run under this lock; re-entrant, as a collected tensor may return a block mid-op
        self.lock = threading.RLock()
        self.auto_flush = AUTO_FLUSH
        self.read_wait = READ_WAIT
        self.trusted = (_native is not None and hasattr(_lib, "wgpuDeviceCreateShaderModuleTrusted")
                        and os.environ.get("EMBER_WGPU_CHECKED", "0") in ("0", ""))
        self._offset = _ffi.new("uint32_t[1]") if _ffi is not None else None
        self.c_dispatch = _C.emb_wgpu_dispatch if _C is not None else None  # None: the libffi calls
        self.timer = None  # a timing.PassTimer while start_timing is in effect
        self._stage_buf = None  # the mappable buffer ``stage`` copies into
        self._staged = None  # (ranges, submit count, bytes or None): what a read may take as it is

    # -- buffers -------------------------------------------------------------------------------
    def next_uid(self):
        self._uid += 1
        return self._uid

    def create_storage_buffer(self, size):
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_SRC | wgpu.BufferUsage.COPY_DST
        try:
            return self.device.create_buffer(size=size, usage=usage)
        except Exception as e:  # wgpu reports allocation failures as GPU errors
            if "memory" in str(e).lower() or "OutOfMemory" in type(e).__name__:
                raise MemoryError(str(e))
            raise

    def forget(self, buf):
        """Drop the cached bind groups that name ``buf`` (it is about to be destroyed)."""
        for key in [k for k in self._bind_groups if buf in k]:
            bg = self._bind_groups.pop(key)
            if self._pass is not None:
                self._keep.append(bg)

    # -- pipelines -----------------------------------------------------------------------------
    def layouts(self, n, readonly=0):
        """(bind group layout, pipeline layout) of the parameters and ``n`` storage bindings, the
        first ``readonly`` of them read-only."""
        lay = self._layouts.get((n, readonly))
        if lay is None:
            B = wgpu.BufferBindingType
            entries = [{"binding": 0, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": B.uniform, "has_dynamic_offset": True,
                                   "min_binding_size": PARAM_BYTES}}]
            for i in range(n):
                entries.append({"binding": i + 1, "visibility": wgpu.ShaderStage.COMPUTE,
                                "buffer": {"type": B.read_only_storage if i < readonly else B.storage}})
            bgl = self.device.create_bind_group_layout(entries=entries)
            lay = (bgl, self.device.create_pipeline_layout(bind_group_layouts=[bgl]))
            self._layouts[(n, readonly)] = lay
        return lay

    def pipeline(self, key, make_source, n, readonly=0):
        """The cached pipeline for ``key``; ``make_source()`` gives its WGSL (``n`` storage bindings,
        the first ``readonly`` of them declared ``var<storage, read>``)."""
        with self.lock:
            entry = self._pipelines.get(key)
            if entry is None:
                src = make_source()
                module = self._modules.get(src)
                if module is None:
                    try:
                        module = self._shader_module(src)
                    except Exception as e:
                        raise RuntimeError("wgpu: kernel %r failed to compile: %s\n%s" % (key, e, _numbered(src)))
                    self._modules[src] = module
                pipe = self.device.create_compute_pipeline(layout=self.layouts(n, readonly)[1],
                                                           compute={"module": module, "entry_point": "main"})
                self.pipeline_count += 1
                entry = self._pipelines[key] = (pipe, n, readonly)
            return entry

    def _shader_module(self, src):
        """A shader module from WGSL. By default "trusted": without naga's runtime bounds checks,
        which cost a clamp per array access (every kernel here stays in bounds by construction;
        EMBER_WGPU_CHECKED=1 puts the checks back, to chase a suspected out-of-range access)."""
        if self.trusted:
            desc_src = _native.new_struct_p("WGPUShaderSourceWGSL *", code=_native.to_c_string_view(src))
            desc_src[0].chain.next = _ffi.NULL
            desc_src[0].chain.sType = _lib.WGPUSType_ShaderSourceWGSL
            desc = _native.new_struct_p("WGPUShaderModuleDescriptor *",
                                        nextInChain=_ffi.cast("WGPUChainedStruct *", desc_src),
                                        label=_native.to_c_string_view(""))
            handle = _native.libf.wgpuDeviceCreateShaderModuleTrusted(self.device._internal, desc, 0)
            if handle == _ffi.NULL:
                raise RuntimeError("shader module creation failed")
            return _native.GPUShaderModule("", handle, self.device)
        return self.device.create_shader_module(code=src)

    # -- recording -----------------------------------------------------------------------------
    def dispatch(self, entry, buffers, words, groups):
        """Record one dispatch of ``entry`` (from ``pipeline``) over the DeviceBuffers ``buffers``
        with parameter words ``words`` (u32 values: a sequence, or an ``array("I")``, which is
        copied without packing) and ``groups`` workgroups (an int or (x, y, z))."""
        lock = self.lock
        lock.acquire()  # not ``with``: this runs once per op, and try/finally costs half as much
        try:
            offset = self.cursor
            if offset + PARAM_BYTES > PARAM_CAPACITY:
                self.flush()
                offset = 0
            if self._pass is None:
                self._begin_pass()
            if type(words) is _ARRAY and _LITTLE:
                start = offset >> 2
                self._words[start:start + len(words)] = words
            else:
                pack = _PACKERS.get(len(words)) or _packer(len(words))
                pack(self.staging, offset, *words)
            self.cursor = offset + PARAM_BYTES
            readonly = entry[2]
            key = (readonly,) + tuple(buffers) if readonly else tuple(buffers)
            bg = self._bind_groups.get(key)
            if bg is None:
                bg = self._bind_group(len(buffers), buffers, key, readonly)
            if type(groups) is int:
                gx, gy, gz = groups, 1, 1
                if groups > self.max_groups:
                    gy = (groups + self.max_groups - 1) // self.max_groups
                    gx = (groups + gy - 1) // gy
            else:
                gx, gy, gz = groups
            pipe = entry[0]
            cd = self.c_dispatch
            if cd is not None:
                set_pipe = _ffi.NULL  # the pass keeps the pipeline it has
                if self._pipeline is not pipe:
                    self._pipeline = pipe
                    set_pipe = pipe._internal
                if cd(self._pass_handle, set_pipe, bg._internal, offset, gx, gy, gz):
                    raise RuntimeError("wgpu: the C encoder refused a dispatch (not set up, or a null handle)")
            elif self._offset is not None:
                dyn = self._offset
                ci = self._pass_handle
                if self._pipeline is not pipe:
                    _SET_PIPELINE(ci, pipe._internal)
                    self._pipeline = pipe
                dyn[0] = offset
                _SET_BIND_GROUP(ci, 0, bg._internal, 1, dyn)
                _DISPATCH(ci, gx, gy, gz)
            else:
                cp = self._pass
                if self._pipeline is not pipe:
                    cp.set_pipeline(pipe)
                    self._pipeline = pipe
                cp.set_bind_group(0, bg, [offset])
                cp.dispatch_workgroups(gx, gy, gz)
            batch = self.batch = self.batch + 1
            if batch >= self.auto_flush:
                self.flush()
        finally:
            lock.release()

    def _begin_pass(self):
        """Open the command encoder and compute pass the next dispatches record into."""
        self._encoder = self.device.create_command_encoder()
        timer = self.timer
        writes = timer.writes() if timer is not None else None
        cp = self._pass = self._encoder.begin_compute_pass(timestamp_writes=writes)
        self._timed = writes is not None
        self._pass_handle = cp._internal if self._offset is not None else None
        self._pipeline = None
        return cp

    def _bind_group(self, n, buffers, key, readonly=0):
        if len(self._bind_groups) >= _MAX_BIND_GROUPS:
            self._keep.extend(self._bind_groups.values())  # the open pass may use them
            self._bind_groups.clear()
        entries = [{"binding": 0, "resource": {"buffer": self.params, "offset": 0, "size": PARAM_BYTES}}]
        for i, b in enumerate(buffers):
            entries.append({"binding": i + 1, "resource": {"buffer": b.gpu, "offset": 0, "size": b.size}})
        bg = self.device.create_bind_group(layout=self.layouts(n, readonly)[0], entries=entries)
        self._bind_groups[key] = bg
        return bg

    def flush(self):
        """Submit the recorded batch (no wait)."""
        with self.lock:
            if self._pass is None:
                return
            self._pass.end()
            if self._timed:
                self.timer.resolve(self._encoder)
            self.queue.write_buffer(self.params, 0, self.staging, 0, self.cursor)
            self.queue.submit([self._encoder.finish()])
            self._pass = self._encoder = self._pipeline = self._pass_handle = None
            self._keep = []
            self.cursor = 0
            self.submits += 1
            self._submitted += self.batch
            self.batches.append(self.batch)
            if len(self.batches) > 64:
                del self.batches[:-64]
            self.batch = 0

    def start_timing(self):
        """Time each batch submitted from now on by the GPU's own clock (``timing.PassTimer``;
        needs the ``timestamp-query`` feature). What is recorded already is submitted untimed."""
        from .timing import PassTimer
        with self.lock:
            self.flush()
            if self.timer is not None:
                self.timer.destroy()
            self.timer = PassTimer(self)

    def stop_timing(self):
        """Seconds of GPU time of each batch submitted since ``start_timing`` (waits for the GPU)."""
        with self.lock:
            self.flush()
            timer, self.timer = self.timer, None
            if timer is None:
                raise RuntimeError("stop_timing without start_timing")
            try:
                return timer.read()
            finally:
                timer.destroy()

    @property
    def dispatches(self):
        """Dispatches recorded so far (submitted or in the open batch)."""
        return self._submitted + self.batch

    def pending(self):
        return self._pass is not None

    def sync(self):
        """Submit what is recorded and wait until the GPU has run it."""
        with self.lock:
            self.flush()
            poll = getattr(self.device, "_poll_wait", None)  # wgpuDevicePoll(wait=true)
            if poll is not None:
                poll()
                return
            if self._sync_buffer is None:  # any read waits for everything submitted before it
                self._sync_buffer = self.device.create_buffer(size=4, usage=wgpu.BufferUsage.COPY_SRC)
            self.queue.read_buffer(self._sync_buffer, 0, 4)

    # -- transfers -------------------------------------------------------------------------------
    def write(self, buf, offset, data):
        """Copy ``data`` (bytes-like, length a multiple of 4) into ``buf`` at byte ``offset``."""
        with self.lock:
            self._staged = None  # it may overwrite what was staged
            if self._pass is not None:
                self.flush()
            if len(data):
                self.queue.write_buffer(buf.gpu, offset, data)

    def stage(self, encoder, ranges):
        """Copy the small byte ``ranges`` ((DeviceBuffer, offset, nbytes), multiples of 4) into a
        mappable buffer at the end of ``encoder``'s commands, and return their table for
        ``staged``. The caller submits them and calls ``staged(table)``: a read that falls in one
        of them before anything else is recorded, written or submitted then maps that copy, with
        no copy and submit of its own (a captured training step stages its loss and the queued
        index checks' error record for the ``.item()`` after it). Ranges past ``STAGE_BYTES`` in
        all are left out. A buffer encoded now may be submitted later (a replay encodes the next
        one ahead): the copy lands in the mappable buffer only at that submit."""
        with self.lock:
            if self._stage_buf is None:
                self._stage_buf = self.device.create_buffer(
                    size=STAGE_BYTES, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
            table, at = [], 0
            for buf, offset, nbytes in ranges:
                if offset % 4 or nbytes % 4 or not nbytes or at + nbytes > STAGE_BYTES:
                    continue
                encoder.copy_buffer_to_buffer(buf.gpu, offset, self._stage_buf, at, nbytes)
                table.append((buf, offset, nbytes, at))
                at += nbytes
            return table

    def staged(self, table):
        """The commands of the ``stage`` that returned ``table`` were submitted (``submits``
        counts them)."""
        with self.lock:
            self._staged = (table, self.submits, None) if table else None

    def _from_stage(self, buf, offset, nbytes, errors):
        """The bytes of a read from what ``stage`` copied, or None where it does not hold them."""
        table, submits, data = self._staged
        if submits != self.submits or self._pass is not None:
            self._staged = None
            return None
        hit = err = None
        for b, o, n, at in table:
            if b is buf and o <= offset and offset + nbytes <= o + n:
                hit = at + offset - o
            if errors is not None and b is errors.block.buffer and o == errors.block.offset and n == errors.nbytes:
                err = at
        if hit is None or (errors is not None and err is None):
            return None
        if data is None:  # the first read after the step maps the copy once for all staged ranges
            size = sum(n for _, _, n, _ in table)
            self._map_read(self._stage_buf, size)
            data = bytes(self._stage_buf.read_mapped(0, size, copy=True))
            self._stage_buf.unmap()
            self._staged = (table, submits, data)
        if errors is not None:
            self.error_check = None
            errors.check(data[err:err + errors.nbytes])
        return data[hit:hit + nbytes]

    def read(self, buf, offset, nbytes):
        """The ``nbytes`` bytes at ``offset`` of ``buf`` (waits for the GPU). One round trip: the
        device-side error record of queued index checks comes back in the same copy."""
        with self.lock:
            self.flush()
            errors = self.error_check
            if self._staged is not None and nbytes:
                data = self._from_stage(buf, offset, nbytes, errors)
                if data is not None:
                    return data
            if nbytes == 0 and errors is None:
                return b""
            skip = offset % 4  # copies move whole 4-byte words
            size = (skip + nbytes + 3) // 4 * 4
            total = size + (errors.nbytes if errors is not None else 0)
            staging = self._staging_buffer(total)
            enc = self.device.create_command_encoder()
            if size:
                enc.copy_buffer_to_buffer(buf.gpu, offset - skip, staging, 0, size)
            if errors is not None:
                enc.copy_buffer_to_buffer(errors.block.buffer.gpu, errors.block.offset, staging, size, errors.nbytes)
            self.queue.submit([enc.finish()])
            self._map_read(staging, total)
            data = bytes(staging.read_mapped(0, total, copy=True))
            staging.unmap()
            if errors is not None:
                self.error_check = None
                errors.check(data[size:])
            return data[skip:skip + nbytes]

    def _map_read(self, staging, nbytes):
        """Map ``staging`` for reading once the GPU has run what was submitted, as ``read_wait``
        says: "thread" is wgpu-py's own wait (its poll thread runs the map callback and wakes this
        one); "poll" waits for the GPU on this thread (``wgpuDevicePoll(wait)``), then maps (the
        copy just submitted makes wgpu-py's extra empty submit before a read mapping needless) and
        a non-blocking poll runs the callback here. On the H200 (2026-12-02, bench/gpu_profile.py)
        "poll" took a 4-byte read from 271 to 199 us, but captured training steps with a read per
        step moved by -8 % to +4 %, so "thread" stays the default. (Mapping first and then waiting
        on this thread, racing the poll thread, made those steps take 11 ms.)"""
        if self.read_wait != "poll" or getattr(self.device, "_poll_wait", None) is None:
            staging.map_async("READ", 0, nbytes).sync_wait()
            return
        self.device._poll_wait()
        promise = staging.map_async("READ_NOSYNC", 0, nbytes)
        self.device._poll(False)
        promise.sync_wait()

    def _staging_buffer(self, size):
        """A mappable buffer of at least ``size`` bytes, kept for the next read."""
        size = max(256, (size + 255) // 256 * 256)
        if self._staging is None or self._staging.size < size:
            if self._staging is not None:
                self._staging.destroy()
            self._staging = self.device.create_buffer(
                size=size, usage=wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.MAP_READ)
        return self._staging


def _numbered(src):
    return "\n".join("%4d  %s" % (i + 1, line) for i, line in enumerate(src.split("\n")))
