"""The reference worker's commands about the machine rather than the task: warming the GPU (and measuring
the drain probe on it while no candidate exists), the drain itself, free memory, and what the verdict
records of the environment. Mixed into `ReferenceWorker` (reference_worker.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate import kernel_trace
from cuda_agent.judge.trusted.drain import GpuDrain, drain_probe


class MachineCommands:
    """Warm-up, drain, free memory and environment (reference worker commands)."""

    def warm(self, gpu: bool) -> dict[str, Any]:
        if gpu:
            torch.cuda.init()
            torch.ones(8, device="cuda").add_(1)
            torch.cuda.synchronize()
            kernel_trace.warm_profiler()  # as the candidate's worker: the same process state (kernel_trace.py)
            # How long the drain probe takes on an idle GPU and right after another context's kernel:
            # measured now, before any candidate exists (the pool warms workers one at a time), never while
            # a candidate could be keeping the GPU busy (trusted/drain.py).
            self.gpu_drain = GpuDrain()
        return {}

    def drain(self, timeout_s: float = 10.0) -> dict[str, Any]:
        """Is the GPU idle now (the candidate frozen), and how much work outlived its reply? See trusted/drain.py."""
        gpu_drain = getattr(self, "gpu_drain", None)
        if gpu_drain is None:  # not warmed for the GPU: measure the idle probe now, no switch allowance
            return drain_probe(None, timeout_s)
        return gpu_drain(timeout_s)

    def free_memory(self) -> dict[str, Any]:
        # Memory this worker cached (e.g. for the candidate outputs it compared) is not the candidate's.
        torch.cuda.empty_cache()
        free, total = torch.cuda.mem_get_info()
        return {"free": free, "total": total}

    def environment(self) -> dict[str, Any]:
        props = torch.cuda.get_device_properties(0)
        return {
            "gpu": props.name,
            "compute_capability": f"{props.major}.{props.minor}",
            "driver": _driver_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda or "",
        }


def _driver_version() -> str:
    try:
        import pynvml

        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        return version.decode() if isinstance(version, bytes) else str(version)
    except Exception:
        pass
    try:
        return Path("/proc/driver/nvidia/version").read_text().split("Kernel Module")[1].split()[0]
    except Exception:
        return "unknown"
