"""GPU memory held by one process, from NVML, so the judge can charge a candidate with its own memory.

The device-wide free-memory delta the judge falls back to also counts whatever other processes do in the
meantime (a worker the pool is warming up takes about 0.5 GiB for its CUDA context); NVML's per-process
figure does not. NVML sees the pids of this machine's pid namespace only where the judge runs in it;
`None` means it could not tell, and the caller falls back.

Trust boundary: runs in the parent and reads NVML from outside the candidate's process, so the figure is a
fact (the candidate cannot lower what the driver reports for its pid).
"""

from __future__ import annotations

import functools
from typing import Any


@functools.cache
def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def process_gpu_bytes(pid: int) -> int | None:
    """Bytes of GPU memory `pid` holds on all GPUs, or None when NVML is unavailable or does not list it."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        total, seen = 0, False
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            for proc in nvml.nvmlDeviceGetComputeRunningProcesses(handle):
                if proc.pid == pid:
                    seen = True
                    total += int(proc.usedGpuMemory or 0)
        return total if seen else None
    except Exception:
        return None


def gpu_bytes_and_free(pids: list[int]) -> tuple[int, int] | None:
    """What `pids` hold on the GPUs NVML lists them on, and the least free memory among those GPUs (0 and
    0 where none is listed: nothing of theirs is left). None when NVML is unavailable. Found by pid rather
    than by index, so it needs no mapping from CUDA's device order to NVML's."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        held, free = 0, None
        wanted = set(pids)
        for index in range(nvml.nvmlDeviceGetCount()):
            handle = nvml.nvmlDeviceGetHandleByIndex(index)
            here = [p for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid in wanted]
            if here:
                held += sum(int(p.usedGpuMemory or 0) for p in here)
                device_free = int(nvml.nvmlDeviceGetMemoryInfo(handle).free)
                free = device_free if free is None else min(free, device_free)
        return held, free or 0
    except Exception:
        return None
