"""The two files ``torch.save`` writes: where the pickle is and where each storage's bytes lie.

* zip (torch >= 1.6): ``PREFIX/data.pkl`` plus one stored (uncompressed) member ``PREFIX/data/KEY``
  per storage; ``PREFIX/byteorder`` says ``little``.
* legacy (``_use_new_zipfile_serialization=False``): pickles back to back: the magic number, the
  protocol version (1001), system info, the object, the list of storage keys; then for each key an
  int64 element count and the raw bytes.

Both only *locate* bytes: a storage is (file offset, byte size), read later one tensor at a time.
"""
import mmap
import struct
import zipfile

from ember.errors import RecordError

from .unpickle import Unpickler

LEGACY_MAGIC = 0x1950a86a20f9469cfc6c
LEGACY_PROTOCOL = 1001
MAX_PICKLE = 1 << 30  # bytes of data.pkl ember will decompress (and never more than the file's size)


class Storage:
    """One torch storage: ``key``, element ``dtype`` (a torch dtype name; "untyped" for bytes),
    ``itemsize``, its bytes at file ``offset`` (``None`` until located) and ``nbytes``."""
    __slots__ = ("key", "dtype", "itemsize", "offset", "nbytes")

    def __init__(self, key, dtype, itemsize, offset=None, nbytes=0):
        self.key = key
        self.dtype = dtype
        self.itemsize = itemsize
        self.offset = offset
        self.nbytes = nbytes


def _storage_id(pid, err):
    """Check a ``BINPERSID`` id ``('storage', StorageType, key, location, numel[, view])``."""
    from .unpickle import StorageType
    if len(pid) not in (5, 6) or pid[0] != "storage":
        raise err("a persistent id must be ('storage', type, key, location, size), found a %d-tuple%s"
                  % (len(pid), " of %r" % pid[0] if pid and type(pid[0]) is str and len(pid[0]) < 40 else ""))
    st = pid[1]
    if type(st) is not StorageType:
        raise err("a persistent id's storage type must be a torch storage class, found %s"
                  % getattr(st, "name", type(st).__name__))
    key, location, numel = pid[2], pid[3], pid[4]
    if type(key) is not str or not key or len(key) > 64 or not all(c.isalnum() or c in "_-" for c in key):
        raise err("a storage key must be a short name of letters, digits, '_' or '-', found %s"
                  % (repr(key)[:70] if type(key) is str else type(key).__name__))
    if type(location) is not str or len(location) > 64:
        raise err("a storage location must be a short string (\"cpu\", \"cuda:0\"), found %s" % type(location).__name__)
    if type(numel) is not int or numel < 0:
        raise err("a storage size must be an int >= 0, found %r" % (numel if type(numel) is int else type(numel).__name__))
    if len(pid) == 6 and pid[5] is not None:
        raise err("legacy storage views (view metadata %s) are not supported" % type(pid[5]).__name__)
    return st, key, numel


class ZipCheckpoint:
    """A zip checkpoint's pickle and storages; bad archives raise ``RecordError``."""

    def __init__(self, path, f, size, where):
        self.where = where
        try:
            z = zipfile.ZipFile(f)
            infos = z.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error,
                NotImplementedError, KeyError, IndexError) as e:
            raise RecordError("%s: not a readable zip archive (%s)" % (where, e))
        members = {}
        for info in infos:
            name = info.filename
            if (name.startswith("/") or "\\" in name or ".." in name.split("/") or "\x00" in name
                    or ":" in name.split("/")[0]):
                raise RecordError("%s: zip member %r escapes the archive (absolute path or '..')" % (where, name[:100]))
            members[name] = info
        pickles = [n for n in members if n.endswith("/data.pkl") and n.count("/") == 1]
        if len(pickles) != 1:
            raise RecordError("%s: a PyTorch zip checkpoint holds one PREFIX/data.pkl, found %d (members: %s)"
                              % (where, len(pickles), ", ".join(sorted(members)[:5]) or "none"))
        self.prefix = pickles[0][:-len("data.pkl")]
        self._z, self._f, self._size, self._members = z, f, size, members
        order = members.get(self.prefix + "byteorder")
        if order is not None:
            text = self._small(order, 16)
            if text != b"little":
                raise RecordError("%s: byteorder is %r; ember reads little-endian checkpoints only" % (where, text[:16]))
        self.pickle = self._small(members[pickles[0]], min(MAX_PICKLE, size))
        self.storages = {}

    def _small(self, info, limit):
        """A member's bytes, refusing more than ``limit`` (a zip bomb claims little and inflates much)."""
        if info.file_size > limit:
            raise RecordError("%s: zip member %s claims %d bytes, more than the %d allowed"
                              % (self.where, info.filename, info.file_size, limit))
        try:
            with self._z.open(info) as m:
                data = m.read(limit + 1)
        except (zipfile.BadZipFile, OSError, ValueError, EOFError, struct.error, NotImplementedError,
                RuntimeError, KeyError, EOFError) as e:
            raise RecordError("%s: zip member %s cannot be read (%s)" % (self.where, info.filename, e))
        except Exception as e:  # zlib.error and other decompressor failures
            raise RecordError("%s: zip member %s cannot be read (%s: %s)"
                              % (self.where, info.filename, type(e).__name__, e))
        if len(data) > limit:
            raise RecordError("%s: zip member %s inflates past %d bytes" % (self.where, info.filename, limit))
        return data

    def persistent(self, pid, err):
        st, key, numel = _storage_id(pid, err)
        s = self.storages.get(key)
        if s is not None:
            if s.dtype != st.dtype:
                raise err("storage %s is named with two types (%s and %s)" % (key, s.dtype, st.dtype))
            return s
        info = self._members.get(self.prefix + "data/" + key)
        if info is None:
            raise err("storage %s has no member %sdata/%s in the archive" % (key, self.prefix, key))
        if info.compress_type != zipfile.ZIP_STORED:
            raise err("storage member %s is compressed; torch stores storages uncompressed (re-save it "
                      "with torch.save)" % info.filename)
        offset = self._data_offset(info, err)
        if numel * st.itemsize != info.file_size:
            raise err("storage %s claims %d elements of %d bytes, its member holds %d bytes"
                      % (key, numel, st.itemsize, info.file_size))
        s = Storage(key, st.dtype, st.itemsize, offset, info.file_size)
        self.storages[key] = s
        return s

    def _data_offset(self, info, err):
        self._f.seek(info.header_offset)
        head = self._f.read(30)
        if len(head) != 30 or head[:4] != b"PK\x03\x04":
            raise err("member %s has no local header at byte %d" % (info.filename, info.header_offset))
        n, m = struct.unpack("<HH", head[26:30])
        name = self._f.read(n)
        want = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "replace")
        if name != want:  # zipfile checks this too when it opens a member: a damaged or forged header
            raise err("member %s's local header names %r" % (info.filename, name[:100]))
        start = info.header_offset + 30 + n + m
        if start + info.file_size > self._size or info.compress_size != info.file_size:
            raise err("member %s's %d bytes at %d run past the end of the file (%d bytes)"
                      % (info.filename, info.file_size, start, self._size))
        return start

    def locate(self, end):
        """Called once the pickle (ending at ``end``) is read: zip storages were located as named."""
        self.pickle = None

    def close(self):
        self._z.close()


class LegacyCheckpoint:
    """A legacy checkpoint: the header pickles are checked, the object pickle kept for the caller;
    ``locate`` reads the key list and walks the storages' counts once the object is read."""

    def __init__(self, path, f, size, where, table):
        self.where, self._f, self._size, self._table = where, f, size, table
        # the pickles are read through a map of the file: only the pages they span are touched
        self._buf = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        pos = 0
        magic, pos = self._pickle(pos, "the magic number")
        if type(magic) is not int or magic != LEGACY_MAGIC:
            raise RecordError("%s: not a PyTorch legacy checkpoint (its first pickle is not torch's magic number)"
                              % where)
        version, pos = self._pickle(pos, "the protocol version")
        if version != LEGACY_PROTOCOL:
            raise RecordError("%s: legacy protocol version %r, ember reads %d" % (where, version, LEGACY_PROTOCOL))
        info, pos = self._pickle(pos, "the system info")
        if type(info) is not dict or info.get("little_endian") is not True:
            raise RecordError("%s: the system info does not say little_endian=True; ember reads "
                              "little-endian checkpoints only" % where)
        self.pickle_start = pos
        self.pickle = self._buf
        self.storages = {}

    def _pickle(self, pos, what, persistent=None):
        obj, end = Unpickler(self._buf, "%s: %s" % (self.where, what), self._table, persistent, pos).load()
        return obj, end

    def persistent(self, pid, err):
        st, key, numel = _storage_id(pid, err)
        s = self.storages.get(key)
        if s is None:
            s = self.storages[key] = Storage(key, st.dtype, st.itemsize, None, numel * st.itemsize)
        elif s.dtype != st.dtype:
            raise err("storage %s is named with two types (%s and %s)" % (key, s.dtype, st.dtype))
        return s

    def locate(self, end):
        """Read the key list after the object pickle (ending at ``end``) and find each storage's bytes."""
        keys, pos = self._pickle(end, "the storage key list")
        if type(keys) is not list or any(type(k) is not str for k in keys):
            raise RecordError("%s: the storage key list is not a list of strings" % self.where)
        if len(set(keys)) != len(keys) or set(keys) != set(self.storages):
            raise RecordError("%s: the storage key list (%d keys) does not match the %d storages the object names"
                              % (self.where, len(keys), len(self.storages)))
        for k in keys:
            s = self.storages[k]
            self._f.seek(pos)
            head = self._f.read(8)
            if len(head) != 8:
                raise RecordError("%s: truncated: storage %s's size is past the end of the file" % (self.where, k))
            count = struct.unpack("<q", head)[0]
            nbytes = count * s.itemsize
            if count < 0 or pos + 8 + nbytes > self._size:
                raise RecordError("%s: storage %s claims %d elements (%d bytes) at byte %d, the file has %d"
                                  % (self.where, k, count, nbytes, pos + 8, self._size))
            if nbytes != s.nbytes:
                raise RecordError("%s: storage %s holds %d bytes, the object said %d" % (self.where, k, nbytes, s.nbytes))
            s.offset = pos + 8
            pos += 8 + nbytes
        self.close()

    def close(self):
        buf, self._buf, self.pickle = self._buf, None, None
        if buf is not None:
            buf.close()
