"""Candidate side: the GPU kernels that ran during one call or one round of timed calls (CUPTI, via Kineto).

Runs inside the candidate's process, so what it reports is evidence the parent weighs, not a verdict: the
parent classifies the kernels (coverage.py) against the extension's device code, which it read from the
built binary itself. Every verification call is traced, and timed rounds the parent picks at random after
each round's draw (same command, arguments, fresh inputs and sampler as every round), so behaving honestly
only on the calls that are looked at means behaving honestly on rounds that look like every timed round.
What remains visible here during a traced round (the profiler's own state) is listed in
docs/design/trust_boundary.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def device_kernels(prof: Any) -> dict[str, float]:
    """Device microseconds by kernel (and memcpy/memset) name from a finished torch profiler session."""
    kernels: dict[str, float] = {}
    for event in prof.events():
        device_type = getattr(event, "device_type", None)
        if device_type is not None and "CUDA" in str(device_type):
            kernels[event.name] = kernels.get(event.name, 0.0) + float(event.device_time_total)
    return kernels


def traced(call: Callable[[], T]) -> tuple[T, dict[str, float]]:
    """Run `call` with CUDA activity tracing on; the device is drained before and after, so the kernels
    are exactly those `call` launched (on any stream of this process)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        result = call()
        torch.cuda.synchronize()
    return result, device_kernels(prof)
