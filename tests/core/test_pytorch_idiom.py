"""PyTorch's module conveniences in ember's core: every layer as ``ember.nn.<Name>``, weight tying,
``Module.apply``, ``ModuleDict`` attributes, ``Tensor.to`` in PyTorch's three forms and device
names, ``ember.no_grad``, loss modules, channel dropout, ``multinomial`` and the in-place init
spellings. Runs under MicroPython too (the lazy names are a module ``__getattr__``)."""
import os

import ember
import ember.nn as nn
from ember.nn import init
from ember.nn.module import owner
from harness.check import assert_close, assert_equal, assert_true, raises
from harness.files import tmp_path

PARAMETERS = ("device",)


def _ordered_dict():
    try:
        from collections import OrderedDict
    except ImportError:  # a port below EXTRA_FEATURES
        return None
    return OrderedDict


# -- ember.nn's lazy names ---------------------------------------------------------------------------

def test_every_layer_is_reachable_from_ember_nn(device):
    from ember.nn import linear, conv, loss, dropout
    assert_true(nn.Linear is linear.Linear and nn.LinearConfig is linear.LinearConfig)
    assert_true(nn.Conv2d is conv.Conv2d and nn.CrossEntropyLoss is loss.CrossEntropyLoss)
    assert_true(nn.Dropout2d is dropout.Dropout2d)
    assert_true(nn.functional.relu is not None and nn.init.normal_ is init.normal_)
    from ember.nn import MaxPool2d  # from-imports go through the same lookup
    assert_true(MaxPool2d is nn.pool.MaxPool2d)
    with raises(AttributeError, "NoSuchLayer"):
        nn.NoSuchLayer
    with raises(AttributeError, "no_such_module"):
        nn.no_such_module


def test_the_name_table_names_each_class_where_it_lives(device):
    for module, names in nn._FAMILIES:
        m = __import__("ember.nn." + module, None, None, ["*"])
        for name in names.split():
            assert_true(getattr(nn, name) is getattr(m, name), "%s.%s" % (module, name))


# -- weight tying ------------------------------------------------------------------------------------

class TiedLM(nn.Module):
    """nanoGPT's tying: the embedding takes the output layer's weight."""

    def __init__(self, device):
        super().__init__()
        g = ember.Generator(3)
        self.wte = nn.Embedding(5, 3, device=device, generator=g)
        self.head = nn.Linear(3, 5, bias=False, device=device, generator=g)
        self.wte.weight = self.head.weight

    def forward(self, idx):
        return self.head(self.wte(idx))


def test_assigning_a_parameter_value_ties_the_parameter(device):
    m = TiedLM(device)
    p = m.head._params["weight"]
    assert_true(m.wte._params["weight"] is p and owner(m.wte.weight) is p)
    assert_true([n for n, _ in m.named_parameters()] == ["wte.weight"] and m.num_params() == 15)
    assert_true([n for n, _ in m.named_tensors()] == ["wte.weight", "head.weight"])  # as state_dict lists
    p.value = ember.ones(5, 3, device=device)  # an update (what an optimizer step does) reaches both
    assert_equal(m.wte.weight, [[1.0] * 3] * 5)
    assert_true(m.wte(ember.tensor([1], device=device)).shape == (1, 3))
    # a plain tensor (no parameter's current value) still replaces the value, id kept
    m.head.weight = m.head.weight * 2
    assert_true(m.head._params["weight"] is p and m.wte.weight is m.head.weight)
    # a tensor that was a parameter's value before an update is just a value
    old = m.head.weight
    p.value = ember.zeros(5, 3, device=device)
    other = nn.Linear(3, 5, bias=False, device=device)
    other.weight = old
    assert_true(other._params["weight"] is not p)
    # a parameter's value assigned to a new attribute registers that parameter
    holder = nn.Module()
    holder.shared = m.head.weight
    assert_true([p2 for _, p2 in holder.named_parameters()] == [p])


def test_tied_parameters_are_saved_once_and_load_from_either_name(device):
    path = tmp_path("tied.safetensors")
    m = TiedLM(device)
    m.save(path)
    with ember.record.open(path) as r:
        # safetensors.torch.save_model's rule: the first name in sorted order, the other in metadata
        assert_true(r.names() == ["head.weight"] and r.metadata["wte.weight"] == "head.weight")
    fresh = TiedLM(device)
    assert_true(fresh.load(path).ok)
    assert_equal(fresh.wte.weight, m.head.weight)
    assert_true(fresh.wte._params["weight"] is fresh.head._params["weight"])
    # a file listing the other name only, or both names
    for names in (["wte.weight"], ["wte.weight", "head.weight"]):
        fresh = TiedLM(device)
        fresh.load_state_dict([(n, m.head.weight * 3) for n in names])
        assert_equal(fresh.head.weight, m.head.weight * 3)
    with raises(ember.RecordError, "missing wte.weight, head.weight"):
        TiedLM(device).load_state_dict([])
    os.remove(path)


def test_load_state_dict_takes_an_ordered_dict(device):
    OrderedDict = _ordered_dict()
    if OrderedDict is None:
        return
    a, b = nn.Linear(2, 2, device=device), nn.Linear(2, 2, device=device)
    b.load_state_dict(OrderedDict(a.named_tensors()))
    assert_equal(b.weight, a.weight)


# -- module conveniences -------------------------------------------------------------------------------

def test_apply_visits_children_before_parents(device):
    seen = []
    net = nn.Sequential(nn.Linear(2, 2, device=device), nn.Sequential(nn.ReLU(), nn.Tanh()))
    assert_true(net.apply(lambda m: seen.append(type(m).__name__)) is net)
    assert_true(seen == ["Linear", "ReLU", "Tanh", "Sequential", "Sequential"])
    net.apply(lambda m: init.zeros_(m.bias) if isinstance(m, nn.Linear) else None)
    assert_equal(net[0].bias, [0.0, 0.0])


def test_module_dict_reads_like_attributes_in_insertion_order(device):
    d = nn.ModuleDict([("zeta", nn.ReLU()), ("alpha", nn.Linear(1, 1, device=device))])
    assert_true(d.keys() == ["zeta", "alpha"] and d.alpha is d["alpha"])
    d.beta = nn.Tanh()  # an attribute that is a module is an entry
    assert_true(d.keys() == ["zeta", "alpha", "beta"] and "beta" in d)
    assert_true([n for n, _ in d.named_parameters()] == ["alpha.weight", "alpha.bias"])
    del d.zeta
    assert_true(d.keys() == ["alpha", "beta"])
    with raises(AttributeError, "gamma"):
        d.gamma


def test_param_reads_like_a_tensor_and_zero_grad_clears(device):
    lin = nn.Linear(3, 2, device=device)
    w, b = lin.parameters()
    assert_true(w.dim() == w.ndim == 2 and b.dim() == 1 and w.grad is None)
    w.grad = ember.ones(2, 3, device=device)
    lin.zero_grad()
    assert_true(w.grad is None)


def test_module_to_takes_names_and_keywords(device):
    lin = nn.Linear(2, 2, device=device)
    assert_true(lin.to(dtype=ember.float64) is lin and lin.weight.dtype is ember.float64)
    lin.to("cpu", dtype=ember.float32)
    assert_true(lin.weight.device == ember.Cpu() and lin.weight.dtype is ember.float32)
    with raises(ember.ArgumentError, "Module.to"):
        lin.to()


# -- Tensor.to ------------------------------------------------------------------------------------------

def test_tensor_to_in_pytorchs_three_forms(device):
    x = ember.tensor([1.5, -2.0], device=device)
    assert_true(x.to(dtype=ember.float16).dtype is ember.float16)
    assert_true(x.to(device=device) is x and x.to(device=device, copy=True) is not x)
    y = x.to("cpu", ember.float64)
    assert_true(y.device == ember.Cpu() and y.dtype is ember.float64)
    assert_equal(y, [1.5, -2.0])
    z = x.to(ember.zeros(1, dtype=ember.int32))  # another tensor's device and dtype
    assert_true(z.dtype is ember.int32 and z.device == ember.Cpu())
    assert_equal(z, [1, -2])
    assert_true(ember.zeros(2, device="cpu").device == ember.Cpu())
    with raises(ember.DeviceError, "no ember device is named 'mps'"):
        ember.zeros(2, device="mps")
    with raises(ember.DTypeError, "'mps'"):  # to() reads a string that names no device as a dtype
        x.to("mps")
    assert_true(x.to("float64").dtype is ember.float64)
    with raises(ember.DeviceError, "cuda:1"):
        x.to("cuda:1")
    with raises(ember.ArgumentError, "dtype is given twice"):
        x.to(ember.float16, dtype=ember.float32)
    with raises(ember.ArgumentError, "expected a device, a dtype or a tensor"):
        x.to()


# -- no_grad -----------------------------------------------------------------------------------------------

def test_no_grad_is_a_context_manager_and_a_decorator(device):
    with ember.no_grad():
        y = ember.ones(2, device=device) * 2
    assert_equal(y, [2.0, 2.0])

    @ember.no_grad()
    def double(t):
        return t * 2

    @ember.no_grad
    def triple(t):
        return t * 3

    assert_equal(double(ember.ones(1, device=device)), [2.0])
    assert_equal(triple(ember.ones(1, device=device)), [3.0])


# -- losses and dropout ----------------------------------------------------------------------------------

def test_loss_modules_are_the_functional_losses(device):
    import ember.nn.functional as F
    g = ember.Generator(1)
    logits = ember.randn(4, 3, generator=g, device=device)
    target = ember.tensor([0, 2, 1, 2], device=device)
    w = ember.tensor([1.0, 2.0, 0.5], device=device)
    assert_close(nn.CrossEntropyLoss(weight=w, label_smoothing=0.1)(logits, target),
                 F.cross_entropy(logits, target, weight=w, label_smoothing=0.1))
    assert_close(nn.NLLLoss(reduction="sum")(logits, target), F.nll_loss(logits, target, reduction="sum"))
    a = ember.rand(2, 3, generator=g, device=device)
    b = ember.rand(2, 3, generator=g, device=device)
    assert_close(nn.MSELoss(reduction="none")(a, b), F.mse_loss(a, b, reduction="none"))
    assert_close(nn.L1Loss()(a, b), F.l1_loss(a, b))
    assert_close(nn.BCELoss()(a, b), F.binary_cross_entropy(a, b))
    assert_close(nn.BCEWithLogitsLoss(pos_weight=ember.full((3,), 2.0, device=device))(a, b),
                 F.binary_cross_entropy_with_logits(a, b, pos_weight=ember.full((3,), 2.0, device=device)))
    assert_close(nn.HuberLoss(delta=0.5)(a, b), F.huber_loss(a, b, delta=0.5))
    assert_close(nn.SmoothL1Loss(beta=0.5)(a, b), F.smooth_l1_loss(a, b, beta=0.5))
    assert_close(nn.KLDivLoss(reduction="batchmean")(a.log(), b), F.kl_div(a.log(), b, reduction="batchmean"))
    # PyTorch's legacy pair: size_average=False means a sum
    assert_close(nn.MSELoss(size_average=False)(a, b), F.mse_loss(a, b, reduction="sum"))
    assert_true([n for n, _ in nn.CrossEntropyLoss(weight=w).named_tensors()] == ["weight"])  # a buffer
    with raises(ember.ArgumentError, "reduction must be one of"):
        nn.L1Loss(reduction="avg")
    with raises(ember.ArgumentError, "delta"):
        nn.HuberLoss(delta=0)


def test_channel_dropout_zeroes_whole_channels(device):
    x = ember.ones(4, 6, 3, 3, device=device)
    y = nn.Dropout2d(0.5, generator=ember.Generator(0))(x)
    for n in range(4):
        for c in range(6):
            vals = set(y[n, c].reshape(-1).tolist())
            assert_true(vals == {0.0} or vals == {2.0}, repr(vals))
    kept = (y[:, :, 0, 0] > 0).sum().item()
    assert_true(0 < kept < 24)
    d = nn.Dropout1d(0.3).eval()
    assert_equal(d(ember.ones(2, 3, device=device)), [[1.0] * 3] * 2)
    import ember.nn.functional as F
    assert_true(F.dropout3d(ember.ones(1, 2, 2, 2, 2, device=device), 0.0).shape == (1, 2, 2, 2, 2))
    with raises(ember.ShapeError, "dropout2d: expected a 3-D (C, *spatial) or 4-D"):
        F.dropout2d(ember.ones(3, device=device))
    with raises(ember.ArgumentError, "dropout2d: p must be in [0, 1]"):
        F.dropout2d(x, 1.5)


# -- multinomial ----------------------------------------------------------------------------------------

def test_multinomial_draws_by_weight(device):
    w = ember.tensor([[0.0, 1.0, 3.0, 0.0], [1.0, 1.0, 1.0, 1.0]], device=device)
    out = ember.multinomial(w, 2, generator=ember.Generator(0))
    assert_true(out.shape == (2, 2) and out.dtype is ember.int64)
    rows = out.tolist()
    assert_true(sorted(rows[0]) == [1, 2] and len(set(rows[1])) == 2)  # without replacement: each once
    many = w[0].multinomial(400, replacement=True, generator=ember.Generator(1)).tolist()
    assert_true(set(many) <= {1, 2} and 250 < many.count(2) < 350)  # about 3/4 of the draws
    with raises(ember.ArgumentError, "without replacement"):
        ember.multinomial(w, 5)
    with raises(ember.ArgumentError, "fewer than 3 categories"):
        ember.multinomial(w[0], 3)
    with raises(ember.ArgumentError, "finite and >= 0"):
        ember.multinomial(ember.tensor([1.0, -1.0], device=device), 1)
    with raises(ember.ArgumentError, "sum to 0"):
        ember.multinomial(ember.zeros(3, device=device), 1)


# -- init's in-place spellings ----------------------------------------------------------------------------

def test_init_in_place_spellings_refill_the_parameter(device):
    lin = nn.Linear(4, 3, device=device)
    p = lin._params["weight"]
    out = init.normal_(lin.weight, mean=0.0, std=0.02, generator=ember.Generator(0))
    assert_true(lin._params["weight"] is p and out is lin.weight and lin.weight.device == device)
    assert_close(lin.weight, init.normal((3, 4), 0.0, 0.02, ember.Generator(0)))
    init.constant_(p, 0.5)  # a Param works too
    assert_equal(lin.weight, [[0.5] * 4] * 3)
    with raises(ember.ArgumentError, "init.zeros_: expected a parameter"):
        init.zeros_(ember.ones(2, device=device))
