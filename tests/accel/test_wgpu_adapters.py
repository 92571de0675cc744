"""Which wgpu adapter ember picks, on made-up adapter lists (no GPU needed): only backends its kernels
support, the fastest kind first, and an error naming the adapters and what to install otherwise."""
import pytest

from ember.accel.wgpu import runtime


class FakeAdapter:
    def __init__(self, device, backend, kind, vendor=""):
        self.info = {"vendor": vendor, "device": device, "description": "", "backend_type": backend,
                     "adapter_type": kind}


LAVAPIPE = FakeAdapter("llvmpipe (LLVM 15.0.6, 256 bits)", "Vulkan", "CPU", vendor="llvmpipe")
GL_LLVMPIPE = FakeAdapter("llvmpipe (LLVM 15.0.6, 256 bits)", "OpenGL", "CPU")
H200 = FakeAdapter("NVIDIA H200", "Vulkan", "DiscreteGPU", vendor="NVIDIA")
IGPU = FakeAdapter("Intel(R) UHD Graphics", "Vulkan", "IntegratedGPU")
METAL = FakeAdapter("Apple M2", "Metal", "IntegratedGPU")


@pytest.fixture(autouse=True)
def _no_env(monkeypatch):
    monkeypatch.delenv("EMBER_WGPU_ADAPTER", raising=False)


def test_opengl_is_never_chosen_over_vulkan():
    assert runtime.choose_adapter(adapters=[GL_LLVMPIPE, LAVAPIPE]) is LAVAPIPE


def test_the_fastest_kind_wins_whatever_the_order():
    assert runtime.choose_adapter(adapters=[LAVAPIPE, IGPU, H200]) is H200
    assert runtime.choose_adapter(adapters=[LAVAPIPE, IGPU]) is IGPU
    assert runtime.choose_adapter(adapters=[METAL]) is METAL


def test_only_opengl_is_refused_naming_the_adapter_and_the_fix():
    with pytest.raises(RuntimeError) as e:
        runtime.choose_adapter(adapters=[GL_LLVMPIPE])
    text = str(e.value)
    assert "llvmpipe (LLVM 15.0.6, 256 bits) (OpenGL, CPU)" in text
    assert "apt-get install mesa-vulkan-drivers libvulkan1" in text
    assert "Vulkan/Metal/D3D12" in text


def test_no_adapter_at_all_says_what_to_install():
    with pytest.raises(RuntimeError, match="no adapter found; install a Vulkan driver"):
        runtime.choose_adapter(adapters=[])


def test_a_name_picks_among_supported_adapters_only():
    assert runtime.choose_adapter("llvmpipe", adapters=[GL_LLVMPIPE, LAVAPIPE]) is LAVAPIPE
    assert runtime.choose_adapter("intel", adapters=[H200, IGPU]) is IGPU


def test_a_name_matching_only_an_unsupported_adapter_is_refused(monkeypatch):
    monkeypatch.setenv("EMBER_WGPU_ADAPTER", "llvmpipe")
    with pytest.raises(RuntimeError, match="runs on a backend ember's kernels do not support"):
        runtime.choose_adapter(adapters=[GL_LLVMPIPE, H200])


def test_a_name_matching_nothing_lists_the_adapters():
    with pytest.raises(RuntimeError, match=r"no adapter matches 'tpu'.*NVIDIA H200 \(Vulkan, DiscreteGPU\)"):
        runtime.choose_adapter("tpu", adapters=[H200])


def test_the_harness_reports_wgpu_unavailable_with_the_reason(monkeypatch):
    from harness import backends
    monkeypatch.setattr(runtime.wgpu.gpu, "enumerate_adapters_sync", lambda: [GL_LLVMPIPE])
    monkeypatch.setattr(runtime, "_RUNTIMES", {})
    with pytest.raises(RuntimeError, match="no supported adapter"):
        backends._wgpu()
