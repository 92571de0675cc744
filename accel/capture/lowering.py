"""Backends' own replays of a plan: the C-backed Cpu's kernel calls (lower_c.py) and the Wgpu
device's recorded dispatches (lower_wgpu.py), the Torch device's torch calls or CUDA graph
(lower_torch.py); elsewhere the generic replay (plan.py) runs."""


def _kind(base):
    name = type(base).__name__
    if name == "CpuC" and getattr(base, "kernels", None) == "c":
        return "c"
    if name == "Wgpu" and hasattr(base, "rt"):
        return "wgpu"
    if name == "Torch" and hasattr(base, "device") and base.device.type in ("cpu", "cuda"):
        return "torch"
    return None


def recorder_for(base):
    """What records the backend's own work beside the trace (the C kernel calls), or None."""
    if _kind(base) == "c":
        from .lower_c import CRecorder
        return CRecorder()
    return None


def lower(plan, trace):
    """(a lowered plan with ``run(arrays, host)``, None) or (None, why not)."""
    from .lower_c import ReplayError
    kind = _kind(plan.base)
    try:
        if kind == "c":
            from .lower_c import lower as lower_c
            return lower_c(plan, trace)
        if kind == "wgpu":
            from .lower_wgpu import lower as lower_wgpu
            return lower_wgpu(plan, trace)
        if kind == "torch":
            from .lower_torch import lower as lower_torch
            return lower_torch(plan, trace)
    except ReplayError as e:
        return None, str(e)
    return None, "the backend has no lowering"
