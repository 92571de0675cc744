"""ember.accel.data: datasets and transforms, the DataLoader (order, workers, prefetch, devices),
IDX files (well-formed and corrupt), MNIST from a folder and the shipped digits."""
import gzip
import os
import threading
import time

import numpy as np
import pytest

import ember
from ember.accel.data import (DataError, DataLoader, Dataset, InMemoryDataset, load_digits, load_mnist, permutation,
                              read_idx, stack, train_valid_split, write_idx)
from ember.accel.data.idx import TYPES
from ember.errors import ArgumentError, ArgumentTypeError, EmberError, IndexOutOfRange


def _ds(n=10):
    return InMemoryDataset(np.arange(n * 2, dtype=np.float32).reshape(n, 2), np.arange(n) % 3)


# -- datasets and transforms ------------------------------------------------------------------------------
def test_in_memory_items_and_batches():
    ds = _ds()
    assert len(ds) == 10
    x, y = ds[3]
    assert x.tolist() == [6.0, 7.0] and y == 0
    assert ds[-1][1] == 9 % 3
    xb, yb = ds.get_batch([1, 4])
    assert xb.shape == (2, 2) and yb.tolist() == [1, 1]
    assert [a.tolist() for a in stack([ds[1], ds[4]])] == [xb.tolist(), yb.tolist()]
    assert ds.targets.tolist() == (np.arange(10) % 3).tolist()
    single = InMemoryDataset(np.arange(4))
    assert single[2] == 2 and single.targets is None


def test_in_memory_errors():
    ds = _ds()
    with pytest.raises(IndexOutOfRange, match="index 10 out of range for 10 items"):
        ds[10]
    with pytest.raises(ArgumentTypeError):
        ds["a"]
    with pytest.raises(ArgumentError, match="same length"):
        InMemoryDataset(np.zeros(3), np.zeros(4))
    with pytest.raises(ArgumentError):
        InMemoryDataset()


def test_map_subset_shuffle():
    ds = _ds()
    doubled = ds.map(lambda item: (item[0] * 2, item[1]))
    assert doubled[1][0].tolist() == [4.0, 6.0]
    assert doubled.get_batch([1])[0].tolist() == [[4.0, 6.0]]
    batched = ds.map(lambda b: (b[0] + 1, b[1]), batched=True)
    assert batched.get_batch([0, 2])[0].tolist() == [[1.0, 2.0], [5.0, 6.0]]
    assert batched[2][0].tolist() == [5.0, 6.0]
    sub = ds.subset([5, 2, 7])
    assert [sub[i][1] for i in range(3)] == [5 % 3, 2 % 3, 7 % 3]
    assert sub.get_batch([2, 0])[0].tolist() == [[14.0, 15.0], [10.0, 11.0]]
    assert sub.targets.tolist() == [2, 2, 1]
    with pytest.raises(IndexOutOfRange):
        ds.subset([10])
    a, b = ds.shuffle(seed=1), ds.shuffle(seed=1)
    assert a.indices.tolist() == b.indices.tolist()
    assert sorted(a.indices.tolist()) == list(range(10))
    assert ds.shuffle(seed=2).indices.tolist() != a.indices.tolist()
    assert [x[1] for x in Dataset.__iter__(sub)] == [2, 2, 1]


def test_permutation_is_platform_independent():
    # ember's generator (xoshiro128++), not numpy's: the same order on every platform and numpy
    # version, so a seed names one split and one data order for good
    assert permutation(8, 0).tolist() == [1, 6, 7, 3, 2, 4, 0, 5]


def test_split_plain_and_stratified():
    labels = np.repeat(np.arange(4), [10, 20, 30, 40])
    ds = InMemoryDataset(np.arange(100), labels)
    train, valid = train_valid_split(ds, 0.2, seed=3)
    assert len(valid) == 20 and len(train) == 80
    assert sorted(train.indices.tolist() + valid.indices.tolist()) == list(range(100))
    train, valid = ds.split(0.2, seed=3, stratify=True)
    assert np.bincount(valid.targets).tolist() == [2, 4, 6, 8]
    assert np.bincount(train.targets).tolist() == [8, 16, 24, 32]
    again = ds.split(0.2, seed=3, stratify=True)[1]
    assert again.indices.tolist() == valid.indices.tolist()
    assert ds.split(0.2, seed=4, stratify=True)[1].indices.tolist() != valid.indices.tolist()
    by_array = train_valid_split(InMemoryDataset(np.arange(100)), 0.2, seed=3, stratify=labels)[1]
    assert by_array.indices.tolist() == valid.indices.tolist()
    with pytest.raises(ArgumentError, match="needs a dataset with targets"):
        train_valid_split(InMemoryDataset(np.arange(5)), 0.2, stratify=True)
    with pytest.raises(ArgumentError, match="valid_fraction"):
        ds.split(1.5)


# -- the loader -------------------------------------------------------------------------------------------
def _epoch_indices(loader, epoch):
    return [b[0].tolist() for b in loader.epoch(epoch)]


def test_loader_batches_cover_each_epoch_once():
    ds = InMemoryDataset(np.arange(10))
    loader = DataLoader(ds, batch_size=4)
    assert len(loader) == 3
    assert [b.tolist() for b in loader.epoch(0)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    dropping = DataLoader(ds, batch_size=4, drop_last=True)
    assert len(dropping) == 2 and [len(b) for b in dropping.epoch(0)] == [4, 4]
    shuffled = DataLoader(ds, batch_size=3, shuffle=True, seed=7)
    for e in range(3):
        flat = [i for b in shuffled.epoch(e) for i in b.tolist()]
        assert sorted(flat) == list(range(10))
    with pytest.raises(ArgumentError, match="no batch"):
        DataLoader(InMemoryDataset(np.arange(3)), batch_size=4, drop_last=True)


def test_loader_order_depends_only_on_seed_and_epoch():
    ds = _ds(50)
    a = DataLoader(ds, 8, shuffle=True, seed=1)
    b = DataLoader(ds, 8, shuffle=True, seed=1, workers=3, prefetch=2)
    assert _epoch_indices(a, 0) == _epoch_indices(b, 0)
    assert _epoch_indices(a, 0) != _epoch_indices(a, 1)
    assert _epoch_indices(a, 0) != _epoch_indices(DataLoader(ds, 8, shuffle=True, seed=2), 0)
    # resuming mid-epoch gives the tail of the same epoch
    assert _epoch_indices(a, 2)[3:] == [b_[0].tolist() for b_ in a.epoch(2, start=3)]
    # iterating advances the epoch
    first, second = [[x[0].tolist() for x in it] for it in (iter(a), iter(a))]
    assert first == _epoch_indices(a, 0) and second == _epoch_indices(a, 1)


def test_loader_batcher_and_devices():
    ds = InMemoryDataset(np.arange(12, dtype=np.uint8).reshape(6, 2), np.arange(6))
    loader = DataLoader(ds, 4, batcher=lambda items: (np.stack([x for x, _ in items]).sum(1), None))
    assert next(loader.epoch(0))[0].tolist() == [1, 5, 9, 13]
    on_cpu = DataLoader(ds, 4, device=ember.Cpu())
    x, y = next(on_cpu.epoch(0))
    assert x.device == ember.Cpu() and x.dtype is ember.int32 and x.shape == (4, 2)  # uint8 widened
    assert y.dtype is ember.int64 and y.tolist() == [0, 1, 2, 3]
    from ember.accel import NumPy
    x, _ = next(DataLoader(ds, 4, device=NumPy()).epoch(0))
    assert x.device == NumPy() and x.tolist() == [[0, 1], [2, 3], [4, 5], [6, 7]]


class _Recorder(Dataset):
    """Records which thread made each batch; ``gate`` holds batches until released."""

    def __init__(self, n):
        self.n = n
        self.calls = []
        self.threads = set()
        self.lock = threading.Lock()

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return np.int64(i)

    def get_batch(self, indices):
        with self.lock:
            self.calls.append(int(indices[0]))
            self.threads.add(threading.current_thread().name)
        time.sleep(0.01)
        return np.asarray(indices)


def _wait_for(cond, timeout=5.0):
    end = time.monotonic() + timeout
    while not cond() and time.monotonic() < end:
        time.sleep(0.005)
    return cond()


def test_workers_prefetch_ahead_and_keep_order():
    ds = _Recorder(40)
    loader = DataLoader(ds, 4, workers=2, prefetch=3)
    it = loader.epoch(0)
    first = next(it)
    assert first.tolist() == [0, 1, 2, 3]
    # while the caller holds batch 0, batches 1..3 (prefetch=3) are made, and no more
    assert _wait_for(lambda: len(ds.calls) >= 4)
    time.sleep(0.1)
    assert len(ds.calls) == 4
    rest = [b.tolist()[0] for b in it]
    assert rest == list(range(4, 40, 4))
    assert all(name.startswith("ember-data") for name in ds.threads) and len(ds.threads) == 2


def test_closing_the_loader_stops_the_workers():
    ds = _Recorder(400)
    it = DataLoader(ds, 4, workers=2, prefetch=2).epoch(0)
    next(it)
    it.close()
    n = len(ds.calls)
    time.sleep(0.1)
    assert len(ds.calls) == n <= 3


def test_worker_errors_reach_the_caller():
    class Broken(_Recorder):
        def get_batch(self, indices):
            if indices[0] == 8:
                raise ValueError("bad item 8")
            return np.asarray(indices)

    it = DataLoader(Broken(20), 4, workers=2).epoch(0)
    assert next(it).tolist() == [0, 1, 2, 3]
    next(it)
    with pytest.raises(ValueError, match="bad item 8"):
        next(it)


# -- IDX files ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("code", sorted(TYPES))
@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_idx_round_trip(tmp_path, code, suffix):
    dt = TYPES[code].newbyteorder("=")
    a = (np.arange(24) - (0 if dt.kind == "u" else 7)).astype(dt).reshape(2, 3, 4)
    path = str(tmp_path / ("x-idx3" + suffix))
    write_idx(path, a)
    with open(path, "rb") as f:
        head = f.read(4)
    raw = gzip.decompress(open(path, "rb").read()) if suffix else open(path, "rb").read()
    assert raw[:4] == bytes([0, 0, code, 3]) and (head[:2] == b"\x1f\x8b") == bool(suffix)
    b = read_idx(path)
    assert b.dtype == dt and b.shape == (2, 3, 4) and b.tolist() == a.tolist()


def _raw(tmp_path, data, name="f"):
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _header(code, *dims):
    return bytes([0, 0, code, len(dims)]) + b"".join(d.to_bytes(4, "big") for d in dims)


CORRUPT = [
    ("empty", b"", "truncated header: expected 4 bytes, found 0"),
    ("magic", b"\x01\x02\x08\x01" + b"\x00" * 8, "is not an IDX file"),
    ("type", b"\x00\x00\x07\x01\x00\x00\x00\x01\x00", "unknown IDX type 0x07"),
    ("ndim0", b"\x00\x00\x08\x00", "at least one dimension"),
    ("dims", b"\x00\x00\x08\x03\x00\x00\x00\x02", "truncated header: expected 12 bytes, found 4"),
    ("body", _header(0x08, 2, 3) + b"\x01\x02\x03", "truncated data for shape (2, 3): expected 6 bytes, found 3"),
    ("floats", _header(0x0D, 4) + b"\x00" * 15, "expected 16 bytes, found 15"),
    ("extra", _header(0x08, 2) + b"\x01\x02\x03", "bytes past the 2"),
    ("hostile", _header(0x0E, 0xFFFFFFFF, 0xFFFFFFFF) + b"\x00" * 8, "expected 147573952520956936200 bytes, found 8"),
]


@pytest.mark.parametrize("name,data,message", CORRUPT, ids=[c[0] for c in CORRUPT])
@pytest.mark.parametrize("compressed", [False, True], ids=["plain", "gz"])
def test_idx_corrupt_files(tmp_path, name, data, message, compressed):
    path = _raw(tmp_path, gzip.compress(data) if compressed else data, name)
    with pytest.raises(DataError, match=message.replace("(", r"\(").replace(")", r"\)")) as e:
        read_idx(path)
    assert path in str(e.value) and isinstance(e.value, EmberError) and isinstance(e.value, ValueError)


def test_idx_broken_gzip_and_missing_file(tmp_path):
    good = gzip.compress(_header(0x08, 100) + bytes(range(100)))
    cut = _raw(tmp_path, good[:len(good) // 2], "cut.gz")
    with pytest.raises(DataError, match="cut.gz"):
        read_idx(cut)
    flipped = bytearray(good)
    flipped[20] ^= 0xFF
    with pytest.raises(DataError, match="flipped.gz"):
        read_idx(_raw(tmp_path, bytes(flipped), "flipped.gz"))
    with pytest.raises(DataError, match="cannot open .*nope"):
        read_idx(str(tmp_path / "nope"))
    with pytest.raises(ArgumentError, match="write_idx"):
        write_idx(str(tmp_path / "c"), np.zeros(3, np.complex64))


def _mnist(folder, n=5, h=4, w=3, gz=True, prefix="train", labels_n=None):
    os.makedirs(folder, exist_ok=True)
    ext = ".gz" if gz else ""
    images = (np.arange(n * h * w) % 256).astype(np.uint8).reshape(n, h, w)
    labels = (np.arange(labels_n or n) % 10).astype(np.uint8)
    write_idx(os.path.join(folder, "%s-images-idx3-ubyte%s" % (prefix, ext)), images)
    write_idx(os.path.join(folder, "%s-labels-idx1-ubyte%s" % (prefix, ext)), labels)
    return images, labels


def test_load_mnist_from_a_folder(tmp_path):
    images, labels = _mnist(str(tmp_path))
    _mnist(str(tmp_path), n=2, gz=False, prefix="t10k")
    ds = load_mnist(str(tmp_path))
    x, y = ds.get_batch(range(5))
    assert x.shape == (5, 1, 4, 3) and x.dtype == np.float32 and y.dtype == np.int64
    assert np.allclose(x[:, 0] * 255, images) and y.tolist() == labels.tolist()
    raw = load_mnist(str(tmp_path), normalize=False)
    assert raw.arrays[0].dtype == np.uint8
    assert len(load_mnist(str(tmp_path), split="test")) == 2


def test_load_mnist_errors(tmp_path):
    with pytest.raises(DataError, match="no train-images-idx3-ubyte"):
        load_mnist(str(tmp_path))
    _mnist(str(tmp_path / "a"), n=5, labels_n=4)
    with pytest.raises(DataError, match="holds 5 images but .* holds 4 labels"):
        load_mnist(str(tmp_path / "a"))
    folder = tmp_path / "b"
    _mnist(str(folder))
    write_idx(str(folder / "train-images-idx3-ubyte.gz"), np.zeros((5, 4), np.uint8))
    with pytest.raises(DataError, match=r"expected images of shape \(N, H, W\)"):
        load_mnist(str(folder))
    with pytest.raises(ArgumentError, match="split"):
        load_mnist(str(folder), split="valid")


# -- the shipped digits ---------------------------------------------------------------------------------------
def test_digits():
    ds = load_digits()
    assert len(ds) == 1797
    x, y = ds.get_batch(range(1797))
    assert x.shape == (1797, 1, 8, 8) and x.dtype == np.float32 and 0 <= x.min() and x.max() == 1.0
    assert np.bincount(y).tolist() == [178, 182, 177, 183, 181, 182, 181, 179, 174, 180]
    raw = load_digits(normalize=False).arrays[0]
    assert raw.dtype == np.uint8 and raw.max() == 16 and np.array_equal(raw / np.float32(16), x)
    train, test = ds.split(0.2, seed=0, stratify=True)
    assert len(test) >= 350 and not set(train.indices.tolist()) & set(test.indices.tolist())


def test_digits_are_scikit_learns():
    datasets = pytest.importorskip("sklearn.datasets")
    ref = datasets.load_digits()
    ds = load_digits(normalize=False)
    assert np.array_equal(ds.arrays[0][:, 0], ref.images.astype(np.uint8))
    assert np.array_equal(ds.arrays[1], ref.target)
