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
from collections.abc import Iterable, Iterator
from typing import Any


@functools.cache
def _nvml() -> Any | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        return pynvml
    except Exception:
        return None


def _listed(nvml: Any, pids: list[int]) -> Iterator[tuple[Any, list[Any]]]:
    """Each GPU (its NVML handle) on which any of `pids` runs, with their entries there."""
    wanted = set(pids)
    for index in range(nvml.nvmlDeviceGetCount()):
        handle = nvml.nvmlDeviceGetHandleByIndex(index)
        here = [p for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle) if p.pid in wanted]
        if here:
            yield handle, here


def process_gpu_bytes(pid: int) -> int | None:
    """Bytes of GPU memory `pid` holds on all GPUs, or None when NVML is unavailable or does not list it."""
    nvml = _nvml()
    if nvml is None:
        return None
    try:
        found = list(_listed(nvml, [pid]))
        return sum(int(p.usedGpuMemory or 0) for _, here in found for p in here) if found else None
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
        found = list(_listed(nvml, pids))
        held = sum(int(p.usedGpuMemory or 0) for _, here in found for p in here)
        return held, min((int(nvml.nvmlDeviceGetMemoryInfo(handle).free) for handle, _ in found), default=0)
    except Exception:
        return None


def leaves_room_twice(pids: Iterable[int]) -> bool:
    """Whether what `pids` hold on their GPUs is at most half the free memory there, so that one more like
    them still fits twice over (a teardown beside a verification, a second judgment beside a first). False
    where NVML cannot tell: then the caller waits."""
    seen = gpu_bytes_and_free(sorted(pids))
    return seen is not None and 2 * seen[0] <= seen[1]
