"""Backends' own replays of a plan: the C-backed Cpu's kernel calls (lower_c.py); elsewhere the
generic replay (plan.py) runs."""


def recorder_for(base):
    """What records the backend's own work beside the trace, or None."""
    if getattr(base, "kernels", None) == "c" and type(base).__name__ == "CpuC":
        from .lower_c import CRecorder
        return CRecorder()
    return None


def lower(plan, trace):
    """(a lowered plan with ``run(arrays, host)``, None) or (None, why not)."""
    if trace.recorder is None:
        return None, "the backend has no lowering"
    from .lower_c import ReplayError, lower as lower_c
    try:
        return lower_c(plan, trace)
    except ReplayError as e:
        return None, str(e)
