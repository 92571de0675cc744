"""The replay's rewrites (accel/onnx/fuse.py): torch's attention onto
F.scaled_dot_product_attention, movement runs as precomputed view programs, the cached parameter
lookup. Each rewrite checked against onnxruntime and the node-by-node ``run_plan``, with the calls
counted; near-miss patterns stay as they are."""
import importlib.util
import os
from collections import Counter

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.accel import NumPy
from ember.accel.onnx import load
from ember.accel.onnx.fuse import _NARROW, _PERMUTE, _RESHAPE, _plan, _view
from ember.nn import Param

from onnx_nets import ort
from test_replay import _plain

B, H, L, E = 2, 3, 5, 4
n = helper.make_node


def _const(name, a):
    return n("Constant", [], [name], value=numpy_helper.from_array(np.asarray(a, np.float32), name))


def _model(nodes, inputs, outputs=("y",), inits=()):
    g = helper.make_graph(nodes, "attention",
                          [helper.make_tensor_value_info(nm, TensorProto.FLOAT, shape) for nm, shape in inputs],
                          [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m


def _torch_attention(kind):
    """torch.onnx's attention (scale split as sqrt(scale) on q and on kᵀ) and its variants."""
    s = (1.0 / E ** 0.5) ** 0.5
    qkv = [("q", [B, H, L, E]), ("k", [B, H, L, E]), ("v", [B, H, L, E])]
    scores = [_const("sq", s), _const("sk", s), n("Mul", ["q", "sq"], ["qs"]),
              n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), n("Mul", ["kt", "sk"], ["ks"]),
              n("MatMul", ["qs", "ks"], ["sc"])]
    tail = [n("Softmax", ["sc2"], ["p"], axis=-1), n("MatMul", ["p", "v"], ["y"])]
    if kind == "plain":
        return _model(scores + [n("Identity", ["sc"], ["sc2"])] + tail, qkv)
    if kind == "div":  # older exports: MatMul(q, kᵀ) / sqrt(E)
        return _model([_const("d", E ** 0.5), n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]),
                       n("MatMul", ["q", "kt"], ["sc"]), n("Div", ["sc", "d"], ["sc2"])] + tail, qkv)
    if kind == "mask":  # an additive mask after the scaling: attn_mask
        return _model(scores + [n("Add", ["sc", "mask"], ["sc2"])] + tail, qkv + [("mask", [1, 1, L, L])])
    if kind == "mask_left":  # Add(mask, scores): either operand may be the scores
        return _model(scores + [n("Add", ["mask", "sc"], ["sc2"])] + tail, qkv + [("mask", [1, 1, L, L])])
    if kind == "mask_first":  # the mask added before a scaling: not SDPA's order, left alone
        return _model(scores + [n("Add", ["sc", "mask"], ["m"]), _const("c", 0.7), n("Mul", ["m", "c"], ["sc2"])]
                      + tail, qkv + [("mask", [1, 1, L, L])])
    if kind == "axis":  # a Softmax over the queries: left alone
        return _model(scores + [n("Identity", ["sc"], ["sc2"]), n("Softmax", ["sc2"], ["p"], axis=2),
                                n("MatMul", ["p", "v"], ["y"])], qkv)
    if kind == "per_head":  # a scale per head, not one number: left alone
        heads = numpy_helper.from_array(np.linspace(0.2, 0.6, H).reshape(1, H, 1, 1).astype(np.float32), "hs")
        return _model([_const("sq", s), n("Constant", [], ["hs"], value=heads), n("Mul", ["q", "sq"], ["qs"]),
                       n("Transpose", ["k"], ["kt"], perm=[0, 1, 3, 2]), n("Mul", ["kt", "hs"], ["ks"]),
                       n("MatMul", ["qs", "ks"], ["sc"]), n("Identity", ["sc"], ["sc2"])] + tail, qkv)
    if kind == "read_twice":  # the scores are a graph output too: nothing fuses away
        return _model(scores + [n("Identity", ["sc"], ["sc2"])] + tail, qkv, outputs=("y", "sc"))
    raise AssertionError(kind)


def _ops(model):
    replay = model._replays[next(iter(model._replays))]
    return Counter(c[1].op_type + ":" + c[0].__name__ for c in replay.calls)


def _inputs(m, seed=0):
    r = np.random.default_rng(seed)
    out = []
    for i in m.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        a = r.standard_normal(shape).astype(np.float32)
        out.append(np.where(a > 0.8, -1e4, 0.0).astype(np.float32) if i.name == "mask" else a)
    return out


DEVICES = [ember.Cpu(kernels="c"), ember.Cpu(kernels="python"), NumPy()]
IDS = ["cpu-c", "cpu-python", "numpy"]
FUSED = {"plain": True, "div": True, "mask": True, "mask_left": True,
         "mask_first": False, "axis": False, "per_head": False, "read_twice": False}


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
@pytest.mark.parametrize("kind", sorted(FUSED))
def test_attention_matches_onnxruntime_and_fuses_only_the_exact_pattern(kind, device):
    m = _torch_attention(kind)
    model = load(m.SerializeToString(), device=device)
    xs = _inputs(m)
    want = ort(m, *xs)
    xe = [ember.from_numpy(a, device=device) for a in xs]
    for _ in range(2):  # the first call specialises, the second replays
        got = model(*xe)
        got = got if isinstance(got, tuple) else (got,)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)
    for g, w in zip(_plain(model, *xe), want):
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)
    ops = _ops(model)
    if FUSED[kind]:
        # Mul, Mul, Transpose, MatMul, [Div | Add,] Softmax, MatMul: one call
        assert ops == Counter({"MatMul:_attention": 1}), ops
    else:
        assert "MatMul:_attention" not in ops and ops["Softmax:<lambda>"] == 1, ops


def test_fine_tuning_runs_the_onnx_nodes_and_the_replay_reads_the_trained_weights():
    """Under Autodiff the module runs the plan node by node (no replay, no rewrite), so gradients flow
    through the graph's own nodes; back on the plain device the replay reads the trained values."""
    from ember.accel import Autodiff
    from ember.optim import SGD
    r = np.random.default_rng(1)
    inits = [numpy_helper.from_array((r.standard_normal((E, E)) * 0.5).astype(np.float32), w) for w in ("wq", "wv")]
    m = _torch_attention("plain")
    g = m.graph
    for nd in g.node:  # q and v through learned projections of x
        nd.input[:] = [{"q": "xq", "v": "xv"}.get(i, i) for i in nd.input]
    g.node.extend([n("MatMul", ["q", "wq"], ["xq"]), n("MatMul", ["v", "wv"], ["xv"])])
    g.initializer.extend(inits)
    device = NumPy()
    model = load(m.SerializeToString(), device=device)
    xs = [ember.from_numpy(a, device=device) for a in _inputs(m)]
    model(*xs)
    model(*xs)
    assert _ops(model)["MatMul:_attention"] == 1
    dev = Autodiff(device)
    model.to(dev)
    target = ember.from_numpy(np.zeros((B, H, L, E), np.float32), device=device).to(dev)
    opt = SGD(model.parameters(), lr=0.2)
    losses = []
    for _ in range(4):
        loss = ((model(*[x.to(dev) for x in xs]) - target) ** 2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < losses[0] * 0.9, losses
    model.to(device)
    np.testing.assert_allclose(model(*xs).numpy(), _plain(model, *xs)[0], rtol=1e-5, atol=1e-5)
    trained = {k: v.numpy() for k, v in model.state_dict().items()}
    assert np.abs(trained["wq"] - numpy_helper.to_array(inits[0])).max() > 1e-4


def test_a_replaced_or_deleted_parameter_is_seen():
    m = _torch_attention("plain")
    g = m.graph
    g.node.extend([n("MatMul", ["q", "wq"], ["xq"])])
    for nd in g.node[:-1]:
        nd.input[:] = ["xq" if i == "q" else i for i in nd.input]
    g.initializer.extend([numpy_helper.from_array(np.eye(E, dtype=np.float32), "wq")])
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    xs = [ember.from_numpy(a, device=device) for a in _inputs(m)]
    before = model(*xs).numpy()
    model(*xs)
    model.wq = Param(ember.from_numpy(np.eye(E, dtype=np.float32) * 3.0, device=device))  # a new Param
    after = model(*xs).numpy()
    np.testing.assert_allclose(after, _plain(model, *xs)[0], rtol=1e-5, atol=1e-5)
    assert np.abs(after - before).max() > 1e-3
    model.load_state_dict({"wq": ember.from_numpy(np.eye(E, dtype=np.float32), device=device)})
    np.testing.assert_allclose(model(*xs).numpy(), before, rtol=1e-5, atol=1e-5)
    del model.wq
    with pytest.raises(KeyError):
        model(*xs)


def _numpy_program(a, steps):
    for st in steps:
        if st[0] == _RESHAPE:
            a = a.reshape(st[1])
        elif st[0] == _PERMUTE:
            a = a.transpose(st[1])
        else:
            a = np.take(a, range(st[2], st[2] + st[3]), axis=st[1])
    return a


def _random_program(r, shape):
    steps, cur = [], tuple(shape)
    for _ in range(r.integers(1, 6)):
        kind = r.integers(0, 3)
        if kind == 0:  # a reshape: split or merge dims, add or drop size-1 dims
            total = int(np.prod(cur))
            sizes = [d for d in (1, 2, 3, 4, 6) if total % d == 0]
            new, left = [], total
            while left > 1 and len(new) < 4:
                d = int(r.choice([s for s in sizes if left % s == 0]))
                new.append(d)
                left //= d
            new.append(left)
            if r.integers(0, 2):
                new.insert(int(r.integers(0, len(new) + 1)), 1)
            cur = tuple(new)
            steps.append((_RESHAPE, cur))
        elif kind == 1:
            perm = tuple(int(p) for p in r.permutation(len(cur)))
            cur = tuple(cur[p] for p in perm)
            steps.append((_PERMUTE, perm))
        else:
            d = int(r.integers(0, len(cur)))
            if cur[d] > 1:
                start = int(r.integers(0, cur[d]))
                length = int(r.integers(1, cur[d] - start + 1))
                cur = cur[:d] + (length,) + cur[d + 1:]
                steps.append((_NARROW, d, start, length))
    return steps


def test_movement_programs_equal_the_steps_they_replace():
    """Random runs of reshapes, permutes and narrows: the planned steps give numpy's values, in no
    more reshapes that copy than the run itself."""
    r = np.random.default_rng(16)
    device = ember.Cpu(kernels="c")
    shapes = [(2, 3, 4), (6, 1, 4), (1, 12, 2), (4, 6)]
    for trial in range(300):
        shape = shapes[trial % len(shapes)]
        prog = _random_program(r, shape)
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        want = _numpy_program(a, prog)
        steps = _plan(shape, prog)
        got = _view(tuple(steps))(None, ember.from_numpy(a, device=device)).numpy()
        assert got.shape == want.shape and (got == want).all(), (shape, prog, steps)


def test_no_op_runs_alias_away_and_constant_gathers_become_narrows():
    """Transpose then its inverse moves nothing: no call stays. Gather of a constant index is a
    narrow of its input, in one program with the Unsqueeze after it."""
    nodes = [n("Transpose", ["x"], ["t"], perm=[1, 0, 2]), n("Transpose", ["t"], ["u"], perm=[1, 0, 2]),
             n("Relu", ["u"], ["r"]), n("Constant", [], ["i"], value=numpy_helper.from_array(np.array(1, np.int64))),
             n("Gather", ["r", "i"], ["g"], axis=1), n("Unsqueeze", ["g", "ax"], ["y"])]
    ax = numpy_helper.from_array(np.array([0], np.int64), "ax")
    m = _model(nodes, [("x", [2, 3, 4])], inits=[ax])
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    x = np.random.default_rng(2).standard_normal((2, 3, 4)).astype(np.float32)
    xe = ember.from_numpy(x, device=device)
    for _ in range(2):
        np.testing.assert_array_equal(model(xe).numpy(), ort(m, x)[0])
    # the Gather and the Unsqueeze after it: one view program, named by its last node
    assert _ops(model) == Counter({"Relu:<lambda>": 1, "Unsqueeze:_movement": 1}), _ops(model)


def test_the_encoder_fixture_matches_onnxruntime_with_its_attention_fused():
    pytest.importorskip("torch", reason="the ONNX fixtures are made with torch==2.13.0 (pip install ember[dev])")
    path = os.path.join(os.path.dirname(__file__), "..", "..", "..", "tools", "onnx_fixtures.py")
    spec = importlib.util.spec_from_file_location("onnx_fixtures", path)
    fx = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fx)
    base = os.path.join(fx.ensure(names=("encoder",)), "encoder")
    x, want = np.load(base + ".input.npy"), np.load(base + ".expected.npy")
    device = ember.Cpu(kernels="c")
    model = load(base + ".onnx", device=device)
    xe = ember.from_numpy(x, device=device)
    for _ in range(2):
        np.testing.assert_allclose(model(xe).numpy(), want, rtol=1e-4, atol=1e-4)
    ops = _ops(model)
    # both layers' MatMul/Mul/Mul/Transpose/MatMul/Softmax/MatMul as one call; no Softmax or
    # attention MatMul left, every Reshape/Transpose/Squeeze/constant Gather a view program
    assert ops["MatMul:_attention"] == 2 and ops["Softmax:<lambda>"] == 0 and ops["MatMul:matmul"] == 0, ops
    # the LayerNorms and the torch Linears' Gemms with their path picked once, the token lookup checked
    assert ops["LayerNormalization:_layer_norm"] == 5 and ops["Gemm:_linear"] == 3, ops
    assert ops["Gather:_gather"] == 1 and ops["Add:_linear"] == 6, ops
    for op in ("Reshape", "Transpose", "Squeeze", "Unsqueeze"):
        assert ops[op + ":reshape"] + ops[op + ":transpose"] + ops[op + ":<lambda>"] == 0, ops


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_a_computed_gather_index_may_be_negative_and_out_of_range_is_an_error(device):
    from ember.errors import IndexOutOfRange
    table = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3), "table")
    g = helper.make_graph([n("Gather", ["table", "idx"], ["y"], axis=0)], "lookup",
                          [helper.make_tensor_value_info("idx", TensorProto.INT64, ["N"])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [table])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    model = load(m.SerializeToString(), device=device)
    for idx in ([0, 3, 1], [2, -1, -4], [0, 3, 1]):  # the replay (second call on) reads negatives too
        a = np.array(idx, np.int64)
        np.testing.assert_array_equal(model(ember.from_numpy(a, device=device)).numpy(), ort(m, a)[0])
    with pytest.raises(IndexOutOfRange, match="out of range"):
        model(ember.from_numpy(np.array([0, 4, 1], np.int64), device=device)).numpy()


def test_official_node_tests_pass_through_the_rewritten_replay(monkeypatch):
    """Every 3rd passing official node test on the C-backed Cpu, each model called twice: the
    second call runs the rewritten replay, whose outputs must pass as the plan's do."""
    from ember.accel.onnx.backend import run_node_test
    from ember.accel.onnx.module import OnnxModule
    from ember.accel.onnx.nodetests import node_test_dir
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "node_tests_passing.txt")) as f:
        names = [line.strip() for line in f if line.strip()][::3]
    first = OnnxModule.forward

    def twice(self, *inputs):
        first(self, *inputs)
        return first(self, *inputs)
    monkeypatch.setattr(OnnxModule, "forward", twice)
    root, device = node_test_dir(), ember.Cpu(kernels="c")
    failed = []
    for name in names:
        ok, why = run_node_test(os.path.join(root, name), device)
        if not ok:
            failed.append("%s: %s" % (name, why))
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("batch", [1, 2])
def test_torch_qkv_split_shares_one_reshape_and_permute(batch):
    """torch's q/k/v split of the in-projection (Reshape, Unsqueeze, Transpose, Squeeze, three
    constant Gathers, each then Reshape and Transpose into heads): the readers' common steps run
    once, in a call they all read."""
    Lq, d, heads = 5, 12, 3
    shape = numpy_helper.from_array(np.array([Lq, batch, 3, d], np.int64), "s3")
    per = numpy_helper.from_array(np.array([Lq, batch * heads, d // heads], np.int64), "sh")
    zero = numpy_helper.from_array(np.array([0], np.int64), "ax0")
    two = numpy_helper.from_array(np.array([-2], np.int64), "axm2")
    nodes = [n("Reshape", ["p", "s3"], ["r"]), n("Unsqueeze", ["r", "ax0"], ["u"]),
             n("Transpose", ["u"], ["t"], perm=[3, 1, 2, 0, 4]), n("Squeeze", ["t", "axm2"], ["qkv"])]
    for i, nm in enumerate("qkv"):
        idx = "i%d" % i
        nodes += [n("Constant", [], [idx], value=numpy_helper.from_array(np.array(i, np.int64))),
                  n("Gather", ["qkv", idx], [nm + "0"], axis=0), n("Reshape", [nm + "0", "sh"], [nm + "1"]),
                  n("Transpose", [nm + "1"], [nm], perm=[1, 0, 2]), n("Relu", [nm], [nm + "r"])]
    nodes += [n("Add", ["qr", "kr"], ["qk"]), n("Add", ["qk", "vr"], ["y"])]
    m = _model(nodes, [("p", [Lq, batch, 3 * d])], inits=[shape, per, zero, two])
    device = ember.Cpu(kernels="c")
    model = load(m.SerializeToString(), device=device)
    x = np.random.default_rng(batch).standard_normal((Lq, batch, 3 * d)).astype(np.float32)
    xe = ember.from_numpy(x, device=device)
    for _ in range(2):
        np.testing.assert_allclose(model(xe).numpy(), ort(m, x)[0], rtol=1e-6, atol=1e-6)
    replay = model._replays[next(iter(model._replays))]
    moves = [c for c in replay.calls if c[0].__name__ == "_movement"]
    assert len(moves) == 4, [c[1].op_type for c in replay.calls]  # shared, then q, k, v
    shared = moves[0][5][0]
    assert all(c[4] == ((0, shared),) for c in moves[1:])  # each reader reads the shared view
    # batch 1: the readers' steps are one narrow each; batch 2 (heads not nesting): the shared
    # reshape and permute, then each its narrow, reshape and permute
    own = [len(c[0].steps) for c in moves[1:]]
    assert own == ([1, 1, 1] if batch == 1 else [3, 3, 3]), own


@pytest.mark.parametrize("device", DEVICES, ids=IDS)
def test_a_constant_slice_with_unit_steps_is_a_view_program_and_a_stepped_one_stays(device):
    """Slice(x, starts, ends, axes) of constants: ONNX's clamping (negative and past-the-end bounds),
    as narrows joining the Transpose after it; with a step of 2 the Slice op runs as it is."""
    def slice_model(steps):
        inits = [numpy_helper.from_array(np.array(v, np.int64), nm)
                 for nm, v in (("st", [1, -3]), ("en", [2 ** 40, -1]), ("ax", [0, -1]), ("sp", steps))]
        nodes = [n("Relu", ["x"], ["r"]), n("Slice", ["r", "st", "en", "ax", "sp"], ["s"]),
                 n("Transpose", ["s"], ["y"], perm=[1, 0, 2])]
        return _model(nodes, [("x", [4, 3, 6])], inits=inits)
    x = np.random.default_rng(4).standard_normal((4, 3, 6)).astype(np.float32)
    xe = ember.from_numpy(x, device=device)
    for steps, ops in (([1, 1], {"Relu:<lambda>": 1, "Transpose:_movement": 1}),
                       ([1, 2], {"Relu:<lambda>": 1, "Slice:<lambda>": 1, "Transpose:_movement": 1})):
        m = slice_model(steps)
        model = load(m.SerializeToString(), device=device)
        for _ in range(2):
            np.testing.assert_array_equal(model(xe).numpy(), ort(m, x)[0])
        replay = model._replays[next(iter(model._replays))]
        got = Counter(c[1].op_type + ":" + c[0].__name__ for c in replay.generic or replay.calls)
        assert got == Counter(ops), got
