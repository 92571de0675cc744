"""examples/pytorch_style: the same files under PyTorch and under ember, from the same weights.

Each example is loaded twice (its import block reads ``EMBER_EXAMPLE_FRAMEWORK``); PyTorch's
initial weights go to ember through a safetensors file (``safetensors.torch.save_model``, which
writes the GPT's tied embedding once). Forward passes agree to 1e-5; training follows the same
path (the GPT without dropout step for step; the CNN, whose dropout masks differ, to the same
accuracy within a point).
"""
import importlib.util
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
safetensors_torch = pytest.importorskip("safetensors.torch")

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "pytorch_style")


def load(name, framework):
    os.environ["EMBER_EXAMPLE_FRAMEWORK"] = framework
    try:
        spec = importlib.util.spec_from_file_location("%s_%s" % (name, framework), os.path.join(EXAMPLES, name + ".py"))
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        del os.environ["EMBER_EXAMPLE_FRAMEWORK"]
    assert module.FRAMEWORK == framework
    return module


@pytest.fixture(scope="module")
def one_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def numpy_of(t):
    return t.detach().numpy() if isinstance(t, torch.Tensor) else np.asarray(t.detach().tolist())


# -- the GPT ------------------------------------------------------------------------------------------

GPT_ARGS = ["--steps", "4", "--batch-size", "4", "--block-size", "16", "--n-embd", "16", "--log-interval", "0"]


def gpt_pair(tmp_path):
    tg, eg = load("gpt", "torch"), load("gpt", "ember")
    t_model, t_opt = tg.build(tg.parse(GPT_ARGS))
    path = str(tmp_path / "gpt.safetensors")
    safetensors_torch.save_model(t_model, path)
    e_model, e_opt = eg.build(eg.parse(GPT_ARGS + ["--load-weights", path]))
    return tg, eg, (t_model, t_opt), (e_model, e_opt), path


def test_gpt_ties_and_saves_the_embedding_once(tmp_path, one_thread):
    tg, eg, (t_model, _), (e_model, e_opt), path = gpt_pair(tmp_path)
    from safetensors import safe_open
    with safe_open(path, "np") as f:
        torch_names = sorted(f.keys())
    # one of the two names, the first in sorted order
    assert "lm_head.weight" in torch_names and "transformer.wte.weight" not in torch_names
    names = [n for n, _ in e_model.named_parameters()]
    assert names == [n for n, _ in t_model.named_parameters()]  # the tied one once, under its first name
    assert e_model.transformer.wte.weight is e_model.lm_head.weight
    ember_path = str(tmp_path / "ember_gpt.safetensors")
    e_model.save(ember_path)
    with safe_open(ember_path, "np") as f:
        assert sorted(f.keys()) == torch_names  # the name safetensors.torch.save_model keeps
        assert f.metadata()["transformer.wte.weight"] == "lm_head.weight"  # as save_model notes it
    fresh = tg.GPT(t_model.config)
    safetensors_torch.load_model(fresh, ember_path)  # PyTorch reads what ember wrote
    for (n, a), (_, b) in zip(sorted(fresh.state_dict().items()), sorted(t_model.state_dict().items())):
        assert torch.equal(a, b), n
    # both parameter groups as nanoGPT builds them: matrices decayed, vectors not
    assert [len(g["params"]) for g in e_opt.param_groups] == [len(g["params"]) for g in t_model.configure_optimizers(
        0.1, 1e-3, (0.9, 0.95)).param_groups]


def test_gpt_logits_and_training_match_pytorch(tmp_path, one_thread):
    tg, eg, (t_model, t_opt), (e_model, e_opt), _ = gpt_pair(tmp_path)
    x, y = tg.get_batch(np.random.default_rng(0), 3, 16)
    t_model.eval()
    e_model.eval()
    with torch.no_grad():
        t_logits, t_loss = t_model(torch.from_numpy(x), torch.from_numpy(y))
    e_logits, e_loss = e_model(eg.torch.from_numpy(x).to(eg.DEVICE), eg.torch.from_numpy(y).to(eg.DEVICE))
    diff = np.abs(numpy_of(t_logits) - numpy_of(e_logits)).max()
    assert diff < 1e-5, diff
    # four AdamW steps, PyTorch's loop in both: the same losses
    args = tg.parse(GPT_ARGS)
    t_losses = tg.train(args, t_model, t_opt)
    e_losses = eg.train(eg.parse(GPT_ARGS), e_model, e_opt)
    print("GPT: logits max diff %.2e; losses torch %s, ember %s"
          % (diff, ["%.6f" % v for v in t_losses], ["%.6f" % v for v in e_losses]))
    np.testing.assert_allclose(e_losses, t_losses, rtol=1e-5, atol=1e-5)
    assert e_losses[-1] < e_losses[0]
    # greedy sampling (top_k=1) picks the same tokens
    t_model.eval()
    e_model.eval()
    start = tg.ENCODED[None, :6].copy()
    t_out = t_model.generate(torch.from_numpy(start), 8, top_k=1)
    e_out = e_model.generate(eg.torch.from_numpy(start).to(eg.DEVICE), 8, top_k=1)
    assert e_out.tolist() == t_out.tolist()


# -- the CNN ------------------------------------------------------------------------------------------

CNN_ARGS = ["--batch-size", "32", "--log-interval", "0"]


def cnn_epoch(mod, model, opt, sched, data):
    train_x, train_y, test_x, test_y = data
    args = mod.parse(CNN_ARGS)
    mod.train(args, model, mod.DEVICE, mod.batches(train_x, train_y, args.batch_size, seed=1), opt, 1)
    sched.step()
    return mod.test(model, mod.DEVICE, mod.batches(test_x, test_y, 500))[1]


def cnn_pair(tc, ec, tmp_path, extra):
    t_model, t_opt, t_sched = tc.build(tc.parse(CNN_ARGS + extra))
    path = str(tmp_path / "cnn.safetensors")
    safetensors_torch.save_model(t_model, path)
    e_model, e_opt, e_sched = ec.build(ec.parse(CNN_ARGS + extra + ["--load-weights", path]))
    return (t_model, t_opt, t_sched), (e_model, e_opt, e_sched)


def test_cnn_logits_and_one_epoch_match_pytorch(tmp_path, one_thread):
    """Without dropout both frameworks follow one path, float rounding apart."""
    tc, ec = load("cnn", "torch"), load("cnn", "ember")
    (t_model, t_opt, t_sched), (e_model, e_opt, e_sched) = cnn_pair(tc, ec, tmp_path, ["--no-dropout"])
    data = tc.digits_28()
    t_model.eval()
    e_model.eval()
    with torch.no_grad():
        t_out = t_model(torch.from_numpy(data[2][:50]))
    e_out = e_model(ec.torch.from_numpy(data[2][:50]).to(ec.DEVICE))
    diff = np.abs(numpy_of(t_out) - numpy_of(e_out)).max()
    assert diff < 1e-5, diff
    t_acc = cnn_epoch(tc, t_model, t_opt, t_sched, data)
    e_acc = cnn_epoch(ec, e_model, e_opt, e_sched, data)
    print("one epoch without dropout: accuracy torch %.2f%%, ember %.2f%%; logits max diff %.2e"
          % (t_acc, e_acc, diff))
    assert t_acc > 80 and abs(t_acc - e_acc) <= 1.0, (t_acc, e_acc)
    assert e_opt.lr == pytest.approx(t_opt.param_groups[0]["lr"]) == 0.7  # StepLR drove both


def test_cnn_one_epoch_with_dropout_matches_pytorch_on_average(tmp_path, one_thread):
    """With dropout the masks differ (each framework draws its own): one epoch's accuracy varies by
    about 1.5 points (std over masks) in either, so the means of three runs are compared."""
    tc, ec = load("cnn", "torch"), load("cnn", "ember")
    data = tc.digits_28()
    means = []
    for k, mod in enumerate((tc, ec)):
        accs = []
        for seed in range(3):
            pair = cnn_pair(tc, ec, tmp_path, [])
            mod.manual_seed(100 + seed)  # the dropout masks of this run
            accs.append(cnn_epoch(mod, *pair[k], data))
        means.append(sum(accs) / len(accs))
        print("%s with dropout: %s" % (mod.FRAMEWORK, ["%.1f" % a for a in accs]))
    assert min(means) > 80 and abs(means[0] - means[1]) <= 3.0, means
