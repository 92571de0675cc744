"""Issue 14, defects 6-8 in the core: bad input raises an ember error that names the op the user
called and what it expected, at construction when a layer's settings are wrong."""
import ember
import ember.nn.functional as F
from ember import record
from ember.nn.conv import Conv1d, Conv2d, ConvTranspose2d
from ember.nn.embedding import Embedding
from ember.nn.linear import Linear
from ember.nn.norm import BatchNorm1d, BatchNorm2d, GroupNorm
from ember import ArgumentError, ArgumentTypeError, EmberError, IndexOutOfRange, RecordError, ShapeError
from ember.nn.linear import LinearConfig
from harness.check import assert_equal, assert_true
from harness.files import tmp_path

PARAMETERS = ("device",)


def expect(kind, fn, *fragments):
    """``fn()`` raises ``kind`` and its message contains every fragment (any other error escapes)."""
    try:
        fn()
    except EmberError as e:
        text = str(e)
        assert_true(isinstance(e, kind), "expected another class than %s: %s" % (type(e).__name__, text))
        for f in fragments:
            assert_true(f in text, "%r is not in %r" % (f, text))
        return
    raise AssertionError("nothing was raised, expected %s" % (fragments,))


def out_of_range(fn, op, fragment):
    """An index fault names ``op``; a GPU finds it later, at the read, under its primitive's name."""
    try:
        fn().tolist()
    except IndexOutOfRange as e:
        text = str(e)
        assert_true(fragment in text and (text.startswith(op) or "found by the GPU" in text), text)
        return
    raise AssertionError("nothing was raised, expected %s" % op)


def test_layers_check_their_settings_when_built(device):
    expect(ArgumentError, lambda: Conv2d(1, 2, 0, device=device), "Conv2d", "kernel_size", "found 0")
    expect(ArgumentError, lambda: Conv2d(1, 2, 3, stride=0, device=device), "Conv2d", "stride", "found 0")
    expect(ArgumentError, lambda: Conv1d(1, 2, 3, dilation=(0,), device=device), "Conv1d", "dilation")
    expect(ArgumentError, lambda: Conv2d(1, 2, 3, padding=-1, device=device), "Conv2d", "padding", "found -1")
    expect(ArgumentError, lambda: Conv2d(0, 2, 3, device=device), "Conv2d", "in_channels", "found 0")
    expect(ArgumentError, lambda: Conv2d(1, 2, 3, padding="full", device=device), "Conv2d", "'full'")
    expect(ArgumentError, lambda: ConvTranspose2d(1, 2, 3, stride=2, output_padding=2, device=device),
           "ConvTranspose2d", "output_padding")
    expect(ArgumentError, lambda: BatchNorm1d(0, device=device), "BatchNorm1d", "num_features", "found 0")
    expect(ArgumentError, lambda: BatchNorm2d(3, eps=0.0, device=device), "BatchNorm2d", "eps")
    expect(ArgumentError, lambda: BatchNorm2d(3, momentum=2.0, device=device), "BatchNorm2d", "momentum")
    expect(ArgumentError, lambda: GroupNorm(0, 4, device=device), "GroupNorm", "num_groups")
    expect(ArgumentError, lambda: Linear(-1, 3, device=device), "Linear", "in_features", "found -1")
    expect(ArgumentError, lambda: Linear(3, 2.5, device=device), "Linear", "out_features", "found 2.5")
    expect(ArgumentError, lambda: Embedding(-1, 3, device=device), "Embedding", "num_embeddings", "found -1")
    # the good ones still build, and a zero-width Linear is allowed as in PyTorch
    assert_equal(Conv2d(1, 2, (1, 3), stride=(2, 1), device=device).weight.shape, (2, 1, 1, 3))
    assert_equal(Linear(0, 3, device=device)(ember.zeros(2, 0, device=device)).shape, (2, 3))


def test_conv_refuses_an_empty_kernel(device):
    x = ember.ones(1, 1, 4, 4, device=device)
    expect(ShapeError, lambda: F.conv2d(x, ember.ones(2, 1, 0, 0, device=device)), "conv2d", "kernel", "(2, 1, 0, 0)")
    expect(ShapeError, lambda: F.conv1d(ember.ones(1, 1, 4, device=device), ember.ones(2, 1, 0, device=device)),
           "conv1d", "kernel")
    expect(ShapeError, lambda: F.conv_transpose2d(x, ember.ones(1, 2, 0, 3, device=device)), "conv_transpose2d")


def test_messages_name_the_called_op(device):
    w = ember.arange(6, device=device).reshape(3, 2).float()
    out_of_range(lambda: F.embedding(ember.tensor([5], device=device), w), "embedding:", "index 5")
    out_of_range(lambda: Embedding(3, 2, device=device)(ember.tensor([3], device=device)), "embedding:", "size 3")
    out_of_range(lambda: w.index_select(0, ember.tensor([4], device=device)), "index_select:", "index 4")
    out_of_range(lambda: w.take(ember.tensor([60], device=device)), "take:", "index 60")
    expect(ShapeError, lambda: w.clamp(ember.zeros(4, device=device)), "clamp")
    expect(ShapeError, lambda: w.clamp(max=ember.zeros(5, device=device)), "clamp")
    expect(ArgumentTypeError, lambda: w.clamp("0"), "clamp", "str")
    expect(ShapeError, lambda: F.batch_norm(ember.ones(4, 3, device=device), ember.zeros(2, device=device),
                                            ember.ones(2, device=device)), "batch_norm", "running_mean", "(3,)")
    expect(ShapeError, lambda: F.batch_norm(ember.ones(4, 3, device=device), None, None,
                                            ember.ones(4, device=device), training=True), "batch_norm", "weight")
    expect(ArgumentTypeError, lambda: list(ember.tensor(1.0, device=device)), "iter:", "0-d")
    expect(ArgumentTypeError, lambda: F.linear(ember.ones(2, 3, device=device), None), "linear", "weight", "NoneType")
    expect(ArgumentTypeError, lambda: F.linear([1.0], w), "linear", "list")
    # what still works: lookups in range, clamp with tensors that broadcast
    assert_equal(F.embedding(ember.tensor([2, 0], device=device), w).tolist(), [[4.0, 5.0], [0.0, 1.0]])
    assert_equal(w.clamp(ember.tensor([1.0, 2.0], device=device), 4.0).tolist(), [[1.0, 2.0], [2.0, 3.0], [4.0, 4.0]])
    assert_equal([t.item() for t in ember.tensor([1, 2], device=device)], [1, 2])


def test_load_state_dict_checks_its_argument(device):
    m = Linear(3, 2, device=device)
    expect(ArgumentTypeError, lambda: m.load_state_dict(None), "load_state_dict", "NoneType")
    expect(ArgumentTypeError, lambda: m.load_state_dict({"weight": [[1.0] * 3] * 2, "bias": [1.0, 2.0]}),
           "load_state_dict", "expected a Tensor for", "found list")
    expect(ArgumentTypeError, lambda: m.load_state_dict([1, 2]), "load_state_dict", "pairs")
    sd = m.state_dict()
    m.load_state_dict(sd)


def test_config_from_deeply_nested_json(device):
    deep = "[" * 5000 + "]" * 5000  # deeper than CPython's recursion limit
    expect(ArgumentError, lambda: LinearConfig.from_json(deep), "LinearConfig.from_json")
    expect(ArgumentError, lambda: LinearConfig.from_json('{"d_input": ' + deep + "}"), "LinearConfig")
    expect(ArgumentTypeError, lambda: LinearConfig.from_json(None), "LinearConfig.from_json", "NoneType")


def _record_with_shape(path, shape):
    header = '{"t":{"dtype":"F32","shape":[%s],"data_offsets":[0,0]}}' % ",".join([str(d) for d in shape])
    with open(path, "wb") as f:
        f.write(len(header).to_bytes(8, "little"))
        f.write(header.encode())


def test_zero_size_record_with_huge_dims(device):
    path = tmp_path("huge-empty.safetensors")
    for shape in ((0, 1 << 63), (1 << 40, 0, 1 << 30), (0, 1 << 70, 2)):
        _record_with_shape(path, shape)
        expect(RecordError, lambda: record.read(path, device=device), "huge-empty", "2^63")
    _record_with_shape(path, (0, 1 << 20, 3))
    assert_equal(record.read(path, device=device)[0][1].shape, (0, 1 << 20, 3))


def test_a_failed_write_names_its_target(device):
    target = tmp_path("no-such-folder") + "/model.safetensors"
    try:
        record.write(target, [("w", ember.ones(2, device=device))])
    except OSError as e:
        assert_true(target in str(e) and ".tmp" not in str(e), str(e))
        return
    raise AssertionError("writing into a missing folder raised nothing")
