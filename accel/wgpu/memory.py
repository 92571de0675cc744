"""Device memory for the Wgpu backend: ``BufferPool`` hands out ``Block``s of GPU buffers.

Two strategies, chosen per device (``Wgpu(memory="buckets" | "pages")``):

- ``buckets``: each block is a whole buffer whose size is rounded up to a bucket (four buckets per
  power of two); a freed buffer waits in its bucket's free list for the next request of that size.
- ``pages``: blocks are sub-ranges (256-byte aligned) of large page buffers, found first-fit and
  merged with free neighbours when released; requests over half a page get a buffer of their own.

A block goes back to its pool when the last array that uses it is garbage collected (``Block.__del__``:
CPython frees it as soon as the last reference goes). GPU work already queued that reads the block
stays correct: every later use of the memory is queued after it on the same queue.
"""
import threading

from ember.errors import OutOfMemoryError

ALIGN = 256
MIB = 1 << 20


class DeviceBuffer:
    """One GPU buffer the pool owns; ``uid`` keys the bind groups that use it."""

    __slots__ = ("gpu", "size", "uid", "page")

    def __init__(self, gpu, size, uid):
        self.gpu = gpu
        self.size = size
        self.uid = uid
        self.page = None  # a page's free list ([offset, size] ranges) when the buffer is a page


class Block:
    """``size`` bytes at byte ``offset`` of ``buffer``; returns itself to ``pool`` when collected."""

    __slots__ = ("buffer", "offset", "size", "pool")

    def __init__(self, buffer, offset, size, pool):
        self.buffer = buffer
        self.offset = offset
        self.size = size
        self.pool = pool

    def __del__(self):
        pool = self.pool
        if pool is not None:
            self.pool = None
            try:
                pool.release(self)
            except Exception:  # interpreter shutdown: the pool's modules may be gone already
                pass


def _round_up(n, m):
    return (n + m - 1) // m * m


def bucket_size(n):
    """``n`` bytes rounded up to a bucket: 256 bytes at least, then four steps per power of two."""
    if n <= ALIGN:
        return ALIGN
    top = 1 << (n - 1).bit_length()  # the power of two at or above n
    step = max(top // 8, ALIGN)  # [top/2, top] in four steps
    return _round_up(n, step)


class BufferPool:
    """Allocates blocks for one device. ``strategy``: ``"buckets"`` or ``"pages"``; ``cap``: the most
    bytes of buffers the pool may hold (None: as many as the device gives); ``page_size``: bytes per
    page of the ``pages`` strategy."""

    def __init__(self, runtime, strategy="buckets", cap=None, page_size=64 * MIB):
        if strategy not in ("buckets", "pages"):
            raise ValueError("BufferPool: expected strategy 'buckets' or 'pages', found %r" % (strategy,))
        self.runtime = runtime
        self.strategy = strategy
        self.cap = cap
        self.page_size = min(page_size, runtime.max_binding)
        self.in_use = 0
        self.reserved = 0
        self.peak_in_use = 0
        self.peak_reserved = 0
        self.allocations = 0
        self.reused = 0
        self.in_place = 0  # outputs written over an input no one else could see (device._donor)
        self.buffers = 0
        self._free = {}  # buckets: size -> [DeviceBuffer]; pages: dedicated buffers by size
        self._pages = []  # pages: [(DeviceBuffer, free list of [offset, size] sorted by offset)]
        # every buffer stays reachable from here: a block found in a garbage cycle (a traceback's
        # frames, say) is finalized together with the cycle, and must not take its buffer along
        self._owned = {}
        self._sizes = {}  # requested bytes -> block size
        self.lock = threading.RLock()  # threads share a pool; a release may interrupt an alloc

    # -- public ---------------------------------------------------------------------------------
    # alloc and release run once per op, so each is one function, locked by acquire/finally
    # (half the cost of ``with``)
    def alloc(self, nbytes):
        """A block of at least ``nbytes`` bytes (rounded up to 256)."""
        lock = self.lock
        lock.acquire()
        try:
            size = self._sizes.get(nbytes)
            if size is None:
                size = _round_up(max(nbytes, 4), ALIGN)
                if self.strategy == "buckets":
                    size = bucket_size(size)
                if len(self._sizes) < 4096:
                    self._sizes[nbytes] = size
            if self.strategy == "buckets" or size > self.page_size // 2:
                bufs = self._free.get(size)
                if bufs:
                    self.reused += 1
                    block = Block(bufs.pop(), 0, size, self)
                else:
                    block = Block(self._new_buffer(size), 0, size, self)
            else:
                block = self._alloc_in_page(size)
            self.allocations += 1
            in_use = self.in_use = self.in_use + size
            if in_use > self.peak_in_use:
                self.peak_in_use = in_use
            return block
        finally:
            lock.release()

    def release(self, block):
        lock = self.lock
        lock.acquire()
        try:
            self.in_use -= block.size
            buf = block.buffer
            if buf.page is None:
                bufs = self._free.get(buf.size)
                if bufs is None:
                    self._free[buf.size] = [buf]
                else:
                    bufs.append(buf)
            else:
                _insert_range(buf.page, block.offset, block.size)
        finally:
            lock.release()

    def stats(self):
        """Bytes in use by live blocks, bytes reserved in buffers, their peaks, and counts."""
        return {"strategy": self.strategy, "in_use": self.in_use, "reserved": self.reserved,
                "peak_in_use": self.peak_in_use, "peak_reserved": self.peak_reserved,
                "cap": self.cap, "buffers": self.buffers, "allocations": self.allocations,
                "reused": self.reused, "in_place": self.in_place}

    def trim(self):
        """Give every buffer no block uses back to the device. Returns the bytes freed."""
        with self.lock:
            return self._trim()

    def _trim(self):
        self.runtime.flush()  # queued work may still name the buffers about to go
        freed = 0
        for size, bufs in list(self._free.items()):
            for buf in bufs:
                freed += self._destroy(buf)
        self._free.clear()
        kept = []
        for page, free in self._pages:
            if len(free) == 1 and free[0][0] == 0 and free[0][1] == page.size:
                freed += self._destroy(page)
            else:
                kept.append((page, free))
        self._pages = kept
        return freed

    # -- strategies -------------------------------------------------------------------------------
    def _alloc_in_page(self, size):
        for page, free in self._pages:
            for i, (off, n) in enumerate(free):
                if n >= size:
                    if n == size:
                        del free[i]
                    else:
                        free[i] = [off + size, n - size]
                    self.reused += 1
                    return Block(page, off, size, self)
        page = self._new_buffer(self.page_size)
        page.page = [[size, self.page_size - size]]
        self._pages.append((page, page.page))
        return Block(page, 0, size, self)

    # -- buffers ------------------------------------------------------------------------------------
    def _new_buffer(self, size):
        if size > self.runtime.max_buffer:
            raise OutOfMemoryError("wgpu: out of memory: a tensor of %s exceeds the adapter's largest "
                                   "buffer (%s)" % (_mib(size), _mib(self.runtime.max_buffer)))
        if self.cap is not None and self.reserved + size > self.cap:
            self._trim()
            if self.reserved + size > self.cap:
                raise OutOfMemoryError(
                    "wgpu: out of memory: allocating %s would exceed the pool's cap of %s (%s in use by "
                    "live tensors, %s reserved); free tensors or raise the cap (Wgpu(memory_cap=...))"
                    % (_mib(size), _mib(self.cap), _mib(self.in_use), _mib(self.reserved)))
        try:
            gpu = self.runtime.create_storage_buffer(size)
        except MemoryError:
            self._trim()
            try:
                gpu = self.runtime.create_storage_buffer(size)
            except MemoryError as e:
                raise OutOfMemoryError("wgpu: out of memory: the device could not allocate %s (%s "
                                       "reserved by this pool): %s" % (_mib(size), _mib(self.reserved), e))
        self.reserved += size
        self.buffers += 1
        if self.reserved > self.peak_reserved:
            self.peak_reserved = self.reserved
        buf = DeviceBuffer(gpu, size, self.runtime.next_uid())
        self._owned[buf.uid] = buf
        return buf

    def _destroy(self, buf):
        del self._owned[buf.uid]
        self.runtime.forget(buf)
        buf.gpu.destroy()
        self.reserved -= buf.size
        self.buffers -= 1
        return buf.size


def _insert_range(free, off, size):
    """Put [off, off+size) back into the sorted free list, merging with touching neighbours."""
    lo, hi = 0, len(free)
    while lo < hi:
        mid = (lo + hi) // 2
        if free[mid][0] < off:
            lo = mid + 1
        else:
            hi = mid
    free.insert(lo, [off, size])
    if lo + 1 < len(free) and free[lo][0] + free[lo][1] == free[lo + 1][0]:
        free[lo][1] += free[lo + 1][1]
        del free[lo + 1]
    if lo > 0 and free[lo - 1][0] + free[lo - 1][1] == free[lo][0]:
        free[lo - 1][1] += free[lo][1]
        del free[lo]


def _mib(n):
    return "%.1f MiB" % (n / MIB)
