"""ember.nn.Module and Param: discovery and naming (in definition order on MicroPython too), fork,
to(device), train/eval, counting, repr, visit/map, save and load."""
import os
import sys

import ember
from ember.nn import Module, ModuleDict, ModuleList, Param, Sequential
from ember.nn.activation import ReLU
from ember.nn.conv import Conv2d
from ember.nn.dropout import Dropout
from ember.nn.linear import Linear, LinearConfig
from ember.nn.norm import BatchNorm1d, BatchNorm2d
from harness.check import assert_close, assert_equal, assert_true, raises
from harness.files import tmp_path

PARAMETERS = ("device",)


class Block(Module):
    """Attributes of every kind, assigned in an order no sorting would give."""

    def __init__(self, device):
        super().__init__()
        g = ember.Generator(0)
        self.zeta = Linear(2, 3, device=device, generator=g)
        self.alpha = Param(ember.ones(3, device=device))
        self.mid = [Linear(3, 3, device=device, generator=g), ReLU(), Linear(3, 2, bias=False, device=device,
                                                                               generator=g)]
        self.steps = ember.zeros(1, device=device)  # a buffer
        self.heads = {"b": Linear(2, 1, device=device, generator=g), "a": Linear(2, 1, device=device, generator=g)}
        self.beta = Param(ember.zeros(2, device=device))
        self.size = 3  # a plain attribute: not a parameter

    def forward(self, x):
        h = self.zeta(x) * self.alpha
        for m in self.mid:
            h = m(h)
        return self.heads["a"](h + self.beta) + self.steps


BLOCK_PARAMS = ["alpha", "beta", "zeta.weight", "zeta.bias", "mid.0.weight", "mid.0.bias", "mid.2.weight",
                "heads.a.weight", "heads.a.bias", "heads.b.weight", "heads.b.bias"]
# state_dict order: per module its params, then its buffers, then the children
BLOCK_TENSORS = BLOCK_PARAMS[:2] + ["steps"] + BLOCK_PARAMS[2:]


def test_names_follow_pytorch_in_definition_order(device):
    b = Block(device)
    assert_true([n for n, _ in b.named_parameters()] == BLOCK_PARAMS, [n for n, _ in b.named_parameters()])
    assert_true([n for n, _ in b.named_tensors()] == BLOCK_TENSORS)
    assert_true([n for n, _ in b.named_buffers()] == ["steps"])
    assert_true([n for n, _ in b.named_modules()] == ["", "zeta", "mid.0", "mid.1", "mid.2", "heads.a", "heads.b"])
    assert_true([n for n, _ in b.named_children()] == ["zeta", "mid.0", "mid.1", "mid.2", "heads.a", "heads.b"])
    assert_true(b.get_parameter("mid.2.weight").shape == (2, 3))
    assert_true(b.get_submodule("heads.b") is b.heads["b"])
    with raises(ember.ArgumentError, "no parameter 'mid.1.weight'"):
        b.get_parameter("mid.1.weight")


def test_containers_name_like_pytorch(device):
    g = ember.Generator(1)
    net = Sequential(Conv2d(1, 2, 3, device=device, generator=g), ReLU(),
                     Sequential(Linear(4, 4, device=device, generator=g), Dropout(0.1)))
    assert_true([n for n, _ in net.named_parameters()] == ["0.weight", "0.bias", "2.0.weight", "2.0.bias"])
    assert_true(len(net) == 3 and type(net[1]) is ReLU and type(net[1:]) is Sequential and len(net[1:]) == 2)

    class Model(Module):
        def __init__(self):
            super().__init__()
            self.features = ModuleList([Linear(2, 2, device=device, generator=g) for _ in range(2)])
            self.features.append(Linear(2, 1, device=device, generator=g))
            self.heads = ModuleDict()
            self.heads["z"] = Linear(1, 1, device=device, generator=g)
            self.heads["y"] = Linear(1, 1, bias=False, device=device, generator=g)

    names = [n for n, _ in Model().named_parameters()]
    assert_true(names == ["features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias",
                          "features.2.weight", "features.2.bias", "heads.z.weight", "heads.z.bias", "heads.y.weight"],
                names)


def test_param_attributes_read_as_tensors(device):
    layer = Linear(3, 2, device=device, generator=ember.Generator(0))
    assert_true(type(layer.weight) is ember.Tensor)
    p = layer.get_parameter("weight")
    assert_true(type(p) is Param and p.value is layer.weight and p.requires_grad)
    before = p.id
    layer.weight = ember.zeros(2, 3, device=device)  # a new value for the same parameter
    assert_true(layer.get_parameter("weight").id == before)
    assert_equal(layer.weight, [[0.0] * 3] * 2)
    layer.bias = None  # removes the parameter
    assert_true([n for n, _ in layer.named_parameters()] == ["weight"] and layer.bias is None)
    layer.bias = Param(ember.ones(2, device=device))
    assert_true(layer.get_parameter("bias").id != before)
    del layer.bias
    assert_true([n for n, _ in layer.named_parameters()] == ["weight"])
    with raises(AttributeError, "no attribute 'nope'"):
        layer.nope
    with raises(ember.ArgumentTypeError, "Param: expected a Tensor"):
        Param([1.0, 2.0])
    assert_true(p.shape == (2, 3) and p.dtype is ember.float32 and p.numel() == 6)


def test_param_ids_are_unique(device):
    ids = [p.id for p in Block(device).parameters()] + [p.id for p in Block(device).parameters()]
    assert_true(len(set(ids)) == len(ids))


def test_subclass_may_assign_before_calling_init(device):
    class Early(Module):
        def __init__(self):
            self.fc = Linear(2, 2, device=device)
            super().__init__()

    assert_true([n for n, _ in Early().named_parameters()] == ["fc.weight", "fc.bias"])


def test_shared_parameters_count_once(device):
    class Tied(Module):
        def __init__(self):
            super().__init__()
            self.a = Linear(2, 2, bias=False, device=device)
            self.b = self.a

    t = Tied()
    assert_true([n for n, _ in t.named_parameters()] == ["a.weight"] and t.num_params() == 4)
    assert_true([n for n, _ in t.named_tensors()] == ["a.weight", "b.weight"])  # state_dict lists both names


def test_num_params_and_repr(device):
    b = Block(device)
    assert_true(b.num_params() == 3 + 2 + 9 + 12 + 6 + 3 + 3)
    net = Sequential(Linear(100, 20, device=device), ReLU(), Linear(20, 10, bias=False, device=device))
    assert_true(net.num_params() == 100 * 20 + 20 + 200)
    want = "\n".join([
        "Sequential(  # 2,220 params",
        "  (0): Linear(in_features=100, out_features=20, bias=True)  # 2,020 params",
        "  (1): ReLU()",
        "  (2): Linear(in_features=20, out_features=10, bias=False)  # 200 params",
        ")",
    ])
    assert_true(repr(net) == want, repr(net))


def test_fork_keeps_ids_and_separates_values(device):
    b = Block(device).train()
    f = b.fork()
    assert_true(type(f) is Block and f is not b and f.zeta is not b.zeta and f.mid[0] is not b.mid[0])
    assert_true([p.id for p in f.parameters()] == [p.id for p in b.parameters()])
    assert_true([n for n, _ in f.named_tensors()] == BLOCK_TENSORS and f.size == 3)
    f.zeta.weight = f.zeta.weight * 0
    f.steps[0] = 5.0
    assert_true(b.zeta.weight.abs().sum().item() > 0 and b.steps.tolist() == [0.0])
    x = ember.ones(1, 2, device=device)
    assert_close(b.fork()(x), b(x))
    copy = b.deepcopy()
    assert_true(not set(p.id for p in copy.parameters()) & set(p.id for p in b.parameters()))
    assert_close(copy(x), b(x))


def test_fork_keeps_batch_norm_statistics_apart(device):
    bn = BatchNorm1d(2, device=device)
    f = bn.fork()
    f(ember.tensor([[1.0, 2.0], [3.0, 6.0]], device=device))
    assert_equal(bn.running_mean, [0.0, 0.0])
    assert_close(f.running_mean, [0.2, 0.4])
    assert_true(f.num_batches_tracked.item() == 1 and bn.num_batches_tracked.item() == 0)


def test_visit_and_map(device):
    b = Block(device)
    seen = []
    b.visit(lambda name, p: seen.append((name, p.id)))
    assert_true([n for n, _ in seen] == BLOCK_PARAMS)
    halved = b.map(lambda name, p: p.value * 0.5)
    assert_true([p.id for p in halved.parameters()] == [p.id for p in b.parameters()])
    assert_close(halved.zeta.weight, b.zeta.weight * 0.5)
    assert_equal(b.alpha, [1.0, 1.0, 1.0])  # the original is unchanged
    with raises(ember.ArgumentTypeError, "map: fn must return a Tensor"):
        b.map(lambda name, p: 1.0)
    b.requires_grad_(False)
    assert_true(not any(p.requires_grad for p in b.parameters()))


def test_to_device_and_dtype(device):
    b = Block(ember.Cpu())
    ids = [p.id for p in b.parameters()]
    assert_true(b.to(device) is b)
    assert_true(all(t.device == device for _, t in b.named_tensors()))
    assert_true([p.id for p in b.parameters()] == ids)
    b.to(ember.float16)
    assert_true(all(t.dtype is ember.float16 for _, t in b.named_tensors()))
    bn = BatchNorm2d(2, device=device).to(ember.float64)
    assert_true(bn.num_batches_tracked.dtype is ember.int64 and bn.running_mean.dtype is ember.float64)


def test_train_and_eval_reach_every_module(device):
    net = Sequential(Linear(2, 2, device=device), Sequential(Dropout(0.5), BatchNorm1d(2, device=device)))
    assert_true(all(m.training for m in net.modules()))
    assert_true(net.eval() is net and not any(m.training for m in net.modules()))
    net.train()
    assert_true(all(m.training for m in net.modules()))
    x = ember.ones(4, 2, device=device)
    net.eval()
    assert_close(net[1][0](x), x)  # dropout is the identity in eval mode


def test_deep_trees_walk_without_recursion(device):
    # MicroPython stops at about 150 Python frames: every tree walk is iterative
    net = Linear(1, 1, device=device)
    for _ in range(200):
        net = Sequential(net)
    assert_true(len(net.named_parameters()) == 2 and net.named_parameters()[0][0] == "0." * 200 + "weight")
    assert_true(net.fork().num_params() == 2 and len(repr(net).split("\n")) == 401)


def test_save_and_load_round_trip(device):
    path = tmp_path("block.safetensors")
    b = Block(device)
    b.steps = ember.tensor([7.0], device=device)
    b.save(path)
    c = Block(device)
    c.zeta.weight = ember.zeros(3, 2, device=device)
    ids = [p.id for p in c.parameters()]
    report = c.load(path)
    assert_true(report.ok and report.missing == [] and [p.id for p in c.parameters()] == ids)
    for (n, t), (m, u) in zip(b.named_tensors(), c.named_tensors()):
        assert_true(n == m and u.device == device)
        assert_equal(u, t, msg=n)
    with ember.record.open(path) as r:
        assert_true(r.names() == BLOCK_TENSORS and r.metadata["ember_module"] == "Block")
    os.remove(path)


def test_save_keeps_the_config_and_precision(device):
    path = tmp_path("linear.safetensors")
    layer = LinearConfig(3, 2).init(device, ember.Generator(0))
    layer.save(path, precision="f16")
    with ember.record.open(path) as r:
        assert_true(LinearConfig.from_json(r.metadata["ember_config"]) == LinearConfig(3, 2))
        assert_true(r.entry("weight").dtype is ember.float16)
    other = Linear(3, 2, device=device)
    other.load(path)
    assert_true(other.weight.dtype is ember.float32)
    assert_close(other.weight, layer.weight, rtol=1e-3, atol=1e-3)
    os.remove(path)


def test_strict_load_lists_every_problem(device):
    path = tmp_path("mlp.safetensors")
    Sequential(Linear(4, 3, device=device), ReLU(), BatchNorm1d(3, device=device)).save(path)
    other = Sequential(Linear(4, 2, device=device), ReLU(), Linear(2, 2, device=device))
    before = [t.tolist() for _, t in other.named_tensors()]
    with raises(ember.RecordError, "Module.load: ") as e:
        other.load(path)
    text = str(e.value)
    for part in ("mlp.safetensors", "does not fit Sequential", "unexpected 2.running_mean, 2.running_var, "
                 "2.num_batches_tracked", "0.weight (expected float32 (2, 4), found float32 (3, 4))",
                 "2.weight (expected float32 (2, 2), found float32 (3,))"):
        assert_true(part in text, text)
    assert_true([t.tolist() for _, t in other.named_tensors()] == before)  # nothing changed
    report = other.load(path, strict=False)
    assert_true(report.missing == [] and report.unexpected == ["2.running_mean", "2.running_var",
                                                               "2.num_batches_tracked"])
    assert_true([m[0] for m in report.mismatched] == ["0.weight", "0.bias", "2.weight", "2.bias"])
    partial = Sequential(Linear(4, 3, device=device), ReLU(), BatchNorm1d(3, device=device),
                         Linear(3, 1, device=device))
    report = partial.load(path, strict=False)
    assert_true(report.missing == ["3.weight", "3.bias"] and not report.unexpected and not report.ok)
    assert_true("missing 3.weight, 3.bias" in repr(report))
    os.remove(path)


def test_from_record_builds_and_loads_in_one_call(device):
    path = tmp_path("block.safetensors")
    b = Block(device)
    b.steps = ember.tensor([7.0], device=device)
    b.save(path)
    c = Block.from_record(path, device)
    assert_true(type(c) is Block and [n for n, _ in c.named_tensors()] == BLOCK_TENSORS)
    for (n, t), (m, u) in zip(b.named_tensors(), c.named_tensors()):
        assert_true(n == m and u.device == device)
        assert_equal(u, t, msg=n)
    Linear(2, 3, device=device, generator=ember.Generator(5)).save(path)
    g = ember.Generator(6)
    state = g.get_state()
    layer = Linear.from_record(path, 2, 3, device=device, generator=g)  # args and kwargs reach __init__
    assert_true(g.get_state() == state)  # built under init.skip(): nothing drawn
    assert_equal(layer.weight, Linear(2, 3, device=device, generator=ember.Generator(5)).weight)
    with raises(ember.RecordError, "does not fit Block"):
        Block.from_record(path, device)  # strict: a record of another model is refused
    os.remove(path)


def test_dtype_kind_mismatch_is_refused(device):
    bn = BatchNorm1d(2, device=device)
    state = [(n, t.to(ember.float32)) for n, t in bn.named_tensors()]  # num_batches_tracked as a float
    with raises(ember.RecordError, "num_batches_tracked (expected int64 (), found float32 ())"):
        bn.load_state_dict(state)
    report = bn.load_state_dict(dict(state), strict=False)
    assert_true([m[0] for m in report.mismatched] == ["num_batches_tracked"])


def test_load_state_dict_takes_tensors_from_another_device(device):
    src = Linear(2, 2, device=ember.Cpu(), generator=ember.Generator(3))
    dst = Linear(2, 2, device=device)
    assert_true(dst.load_state_dict(src.state_dict()).ok)
    assert_true(dst.weight.device == device)
    assert_equal(dst.weight, src.weight)


def test_non_persistent_buffers_are_not_saved(device):
    class Scaled(Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("table", ember.ones(2, device=device), persistent=False)
            self.register_buffer("kept", ember.zeros(2, device=device))

    s = Scaled()
    assert_true([n for n, _ in s.named_buffers()] == ["table", "kept"])
    assert_true([n for n, _ in s.named_tensors()] == ["kept"])
    with raises(ember.ArgumentTypeError, "register_buffer"):
        s.register_buffer("bad", [1.0])


def test_a_layer_module_imports_only_what_it_needs(device):
    saved = {}
    for k in list(sys.modules):
        if k == "ember" or k.startswith("ember."):
            saved[k] = sys.modules.pop(k)
    try:
        __import__("ember.nn.linear")
        loaded = sorted(k for k in sys.modules if k.startswith("ember.nn"))
    finally:
        for k in list(sys.modules):
            if k == "ember" or k.startswith("ember."):
                del sys.modules[k]
        for k in saved:
            sys.modules[k] = saved[k]
    expected = ["ember.nn", "ember.nn.checks", "ember.nn.config", "ember.nn.functional", "ember.nn.init",
                "ember.nn.linear", "ember.nn.module"]
    from ember.backends.cpu import ckernels
    if ckernels.available():  # the C-backed Cpu's fused composites come with the kernels (never on a board)
        expected = expected[:4] + ["ember.nn.fused_c"] + expected[4:]
    assert_true(loaded == expected, loaded)
