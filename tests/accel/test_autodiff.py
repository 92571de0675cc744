"""Autodiff's behaviour beyond the values of gradients: errors, scopes, memory, threads."""
import gc
import threading
import tracemalloc

import pytest

import ember
import ember.nn.functional as F
from ember.accel.autodiff import Autodiff, Gradients, no_grad


@pytest.fixture
def dev():
    return Autodiff(ember.Cpu())


def test_backward_without_autodiff_is_a_clear_error():
    x = ember.ones(3)
    with pytest.raises(ember.ArgumentError, match="Autodiff"):
        x.sum().backward()
    with pytest.raises(ember.ArgumentError, match="requires_grad_"):
        x.requires_grad_()


def test_backward_needs_a_graph_and_a_scalar(dev):
    x = ember.ones(3, device=dev)
    with pytest.raises(ember.ArgumentError, match="does not depend"):
        x.sum().backward()
    w = ember.ones(3, device=dev).requires_grad_()
    with pytest.raises(ember.ShapeError, match="scalar"):
        (w * 2).backward()
    grads = (w * 2).backward(grad=ember.tensor([1.0, 2.0, 3.0]))
    assert w.grad(grads).tolist() == [2.0, 4.0, 6.0]


def test_only_float_tensors_require_grad(dev):
    with pytest.raises(ember.DTypeError):
        ember.arange(3, device=dev).requires_grad_()


def test_gradients_live_on_the_inner_device_and_record_nothing(dev):
    w = ember.randn(2, 3, device=dev).requires_grad_()
    g = w.grad((w * w).sum().backward())
    assert g.device == ember.Cpu()
    assert not g.requires_grad
    assert g.tolist() == (w.detach().to(ember.Cpu()) * 2).tolist()


def test_detach_and_no_grad_stop_recording(dev):
    w = ember.ones(2, device=dev).requires_grad_()
    assert (w * 3).requires_grad
    assert not (w.detach() * 3).requires_grad
    with no_grad():
        assert not (w * 3).requires_grad
    assert (w * 3).requires_grad


def test_no_grad_is_per_thread(dev):
    w = ember.ones(2, device=dev).requires_grad_()
    seen = []
    with no_grad():
        t = threading.Thread(target=lambda: seen.append((w * 2).requires_grad))
        t.start()
        t.join()
    assert seen == [True]


def test_a_released_graph_refuses_a_second_backward(dev):
    w = ember.ones(2, device=dev).requires_grad_()
    loss = (w * w).sum()
    loss.backward()
    with pytest.raises(ember.ArgumentError, match="retain_graph"):
        loss.backward()
    loss2 = (w * w).sum()
    a = loss2.backward(retain_graph=True)
    b = loss2.backward()
    assert w.grad(a).tolist() == w.grad(b).tolist() == [2.0, 2.0]


def test_deep_graphs_need_no_recursion(dev):
    x = ember.ones(1, device=dev).requires_grad_()
    y = x
    for _ in range(5000):
        y = y * 1.0001
    g = x.grad(y.sum().backward())
    assert abs(g.item() - 1.0001 ** 5000) < 1e-2


def test_gradients_accumulate_and_add(dev):
    w = ember.ones(2, device=dev).requires_grad_()
    a = (w * 2).sum().backward()
    b = (w * 3).sum().backward()
    total = a + b
    assert isinstance(total, Gradients)
    assert w.grad(total).tolist() == [5.0, 5.0]
    with pytest.raises(ember.ArgumentTypeError):
        a + 1


def test_a_leaf_used_twice_sums_its_gradients(dev):
    w = ember.tensor([3.0], device=dev).requires_grad_()
    assert w.grad((w * w + w).sum().backward()).tolist() == [7.0]


def test_require_grad_keys_the_gradient_by_a_given_id(dev):
    w = ember.ones(2, device=dev).require_grad(id=12345)
    grads = (w * 4).sum().backward()
    assert 12345 in grads
    assert grads.get_id(12345).tolist() == [4.0, 4.0]


def test_tensors_move_in_and_out_without_copies(dev):
    x = ember.tensor([1.0, 2.0])
    y = x.to(dev)
    assert y.device == dev and y._data.value is x._data
    assert y.to(ember.Cpu())._data is x._data


def test_autodiff_and_its_inner_device_do_not_mix(dev):
    w = ember.ones(2, device=dev)
    with pytest.raises(ember.DeviceError, match="Autodiff"):
        w + ember.ones(2)


def test_autodiff_wraps_devices_only_once():
    with pytest.raises(ember.ArgumentError):
        Autodiff(Autodiff(ember.Cpu()))
    with pytest.raises(ember.ArgumentTypeError):
        Autodiff("cpu")


def test_dropping_tensors_frees_their_graph(dev):
    w = ember.randn(64, 64, device=dev).requires_grad_()
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for _ in range(5):
        loss = F.gelu(w @ w).sum()  # dropped without backward
        del loss
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert after - base < 200_000, "graphs kept %d bytes alive" % (after - base)


def test_threads_build_independent_graphs(dev):
    w = ember.tensor([1.0, 2.0], device=dev).requires_grad_()
    results = {}

    def work(k):
        results[k] = w.grad((w * k).sum().backward()).tolist()
    threads = [threading.Thread(target=work, args=(k,)) for k in (1.0, 2.0, 3.0, 4.0)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == {k: [k, k] for k in (1.0, 2.0, 3.0, 4.0)}


def _deep_mlp_peak(checkpointing):
    dev = Autodiff(ember.Cpu(), checkpointing=checkpointing)
    g = ember.Generator(7)
    ws = [ember.randn(48, 48, generator=g, device=dev).mul(0.2).requires_grad_() for _ in range(6)]
    x = ember.randn(128, 48, generator=g, device=dev)
    gc.collect()
    tracemalloc.start()
    h = x
    for w in ws:
        h = h @ w
        h = h * ((h * 0.7071067811865476).erf() + 1) * 0.5  # the seed's GELU: four elementwise ops
    grads = h.sum().backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, [w.grad(grads).tolist() for w in ws]


def test_checkpointing_gives_the_same_gradients_with_less_memory():
    peak_kept, grads_kept = _deep_mlp_peak(False)
    peak_ckpt, grads_ckpt = _deep_mlp_peak(True)
    assert grads_kept == grads_ckpt
    assert peak_ckpt < 0.8 * peak_kept, "checkpointing peak %d vs %d bytes" % (peak_ckpt, peak_kept)
