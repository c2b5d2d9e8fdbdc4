"""Is the GPU idle, and how much GPU work did the candidate leave behind? (runs in the reference worker)

Facts established here, in a process that never runs candidate code: "the GPU was idle before each
baseline round" and "this much GPU work outlived the candidate's reply" (charged to its round by the
judgment). Method: flush probes launched from the reference's own CUDA context and timed by the host from
launch to completion. Work of any other context -- a frozen candidate's queued kernels, a second
context it made, a helper process -- time-shares the GPU and stretches them, whatever stream or process
it is on, so nothing the candidate reports is used.

**The context switch is not the candidate's work.** The first probe after another context used the GPU
pays a switch between contexts: on an H200 (driver 580) 0.29-0.56 ms from launch to completion where an
idle probe takes 0.10-0.13 ms, even when that context left nothing behind (measured 2026-12-01). Charging
it made every honest candidate about 50 us per call slower than the same kernel timed in-process (two
drains per 10-call round), and its jitter made the reward flip between runs. So the switch is measured in
this process, before any candidate exists: the worker makes a second CUDA context of its own (driver API),
runs a kernel in it, and probes from its primary context, several times (`calibrate_switch`). A drain's
first probe is then allowed the highest switch-in probe seen (times `SWITCH_SLACK`, plus
`SWITCH_EXTRA_MS`); only time beyond that allowance, and for later probes beyond the idle limit, is
charged. Residual slack, stated plainly: up to the allowance's margin over a real switch per drain, i.e.
work of another context shorter than that, finished within the first probe, goes uncharged (the
judgment's rounds have ten calls, so this is at most a tenth of the margin per call).
"""

from __future__ import annotations

import ctypes
import statistics
import time
from collections.abc import Callable
from typing import Any

from cuda_agent.judge.candidate.pad import Driver, flush_buffer, pad_kernel

# A probe that takes at most this multiple of an idle probe (plus the constant) saw an idle GPU.
IDLE_FACTOR = 1.5
IDLE_EXTRA_MS = 0.03
# The allowance of a drain's first probe: the slowest calibrated switch-in probe times this, plus the constant.
SWITCH_SLACK = 1.25
SWITCH_EXTRA_MS = 0.05
SWITCH_SAMPLES = 12

NOOP_PTX = rb"""
.version 7.0
.target sm_70
.address_size 64
.visible .entry judge_switch_noop(.param .u64 p_ns)
{
	.reg .pred %p<2>;
	.reg .b64 %rd<5>;
	ld.param.u64 %rd1, [p_ns];
	mov.u64 %rd2, %globaltimer;
	add.u64 %rd3, %rd2, %rd1;
SPIN:
	mov.u64 %rd4, %globaltimer;
	setp.lt.u64 %p1, %rd4, %rd3;
	@%p1 bra SPIN;
	ret;
}
"""


def idle_limit(idle_ms: float) -> float:
    """The longest probe that still counts as an idle GPU."""
    return IDLE_FACTOR * idle_ms + IDLE_EXTRA_MS


def switch_allowance(switch_ms: float, idle_ms: float) -> float:
    """What a drain's first probe may take without anything being charged."""
    return max(idle_limit(idle_ms), SWITCH_SLACK * switch_ms + SWITCH_EXTRA_MS)


class _SecondContext:
    """A CUDA context of the reference worker's own beside torch's primary one: a kernel run in it makes
    the GPU switch contexts exactly as a candidate's would, with nothing left behind."""

    def __init__(self, device: int) -> None:
        driver = Driver()  # the pad kernel's driver calls, their argument types declared
        self.lib, self._check = lib, check = driver.lib, driver.check
        dev, ctx = ctypes.c_int(), ctypes.c_void_p()
        check(lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
        check(lib.cuCtxCreate_v2(ctypes.byref(ctx), 0, dev), "cuCtxCreate")  # now current
        self.ctx = ctx
        try:
            module, func = ctypes.c_void_p(), ctypes.c_void_p()
            check(lib.cuModuleLoadData(ctypes.byref(module), NOOP_PTX + b"\0"), "cuModuleLoadData")
            check(lib.cuModuleGetFunction(ctypes.byref(func), module, b"judge_switch_noop"), "cuModuleGetFunction")
            self.func = func
        finally:
            self._pop()

    def _pop(self) -> None:
        popped = ctypes.c_void_p()
        self.lib.cuCtxPopCurrent_v2(ctypes.byref(popped))

    def run_kernel(self, ns: int = 20_000) -> None:
        """One short kernel in this context, waited for; torch's context is current again afterwards."""
        self._check(self.lib.cuCtxPushCurrent_v2(self.ctx), "cuCtxPushCurrent")
        try:
            arg = ctypes.c_uint64(ns)
            params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p))
            self._check(self.lib.cuLaunchKernel(self.func, 1, 1, 1, 32, 1, 1, 0, None, params, None),
                        "cuLaunchKernel")  # fmt: skip
            self._check(self.lib.cuCtxSynchronize(), "cuCtxSynchronize")
        finally:
            self._pop()

    def close(self) -> None:
        self.lib.cuCtxDestroy_v2(self.ctx)


def calibrate_switch(probe: Callable[[], float], device: int, samples: int = SWITCH_SAMPLES) -> dict[str, Any]:
    """Probe times right after a kernel of another (trusted, idle) context: the context-switch cost a
    drain's first probe pays. Falls back to no allowance beyond the idle limit where the driver API is
    unavailable (charging the switch is the safe side of the error)."""
    try:
        other = _SecondContext(device)
    except (OSError, RuntimeError, AttributeError) as exc:
        return {"switch_ms": 0.0, "switch_samples": [], "note": f"no second context ({exc}); switch charged"}
    try:
        times = []
        for _ in range(samples):
            other.run_kernel()
            times.append(probe())
            probe()  # back to an idle, switched-in GPU before the next sample
        return {"switch_ms": max(times), "switch_median_ms": statistics.median(times),
                "switch_samples": [round(t, 4) for t in times]}  # fmt: skip
    finally:
        other.close()


def drain(probe: Callable[[], float], idle_ms: float, switch_ms: float, timeout_s: float = 10.0) -> dict[str, Any]:
    """Probe until two probes in a row see an idle GPU (the first one allowed a context switch).

    `busy_ms` is what the probes took beyond what an idle GPU (and, for the first, a context switch)
    explains: the GPU work of other contexts that outlived the candidate's reply."""
    limit, first_limit = idle_limit(idle_ms), switch_allowance(switch_ms, idle_ms)
    began = time.perf_counter()
    busy = 0.0
    good = probes = 0
    while True:
        took = probe()
        allowed = first_limit if probes == 0 else limit
        probes += 1
        if took <= allowed:
            good += 1
            if good >= 2:
                return {"drained": True, "busy_ms": busy, "idle_ms": idle_ms, "switch_ms": switch_ms,
                        "probes": probes}  # fmt: skip
        else:
            good = 0
            busy += took - (first_limit if probes == 1 else idle_ms)
        if time.perf_counter() - began > timeout_s:
            return {"drained": False, "busy_ms": (time.perf_counter() - began) * 1000, "idle_ms": idle_ms,
                    "switch_ms": switch_ms, "probes": probes}  # fmt: skip


def flush_probe() -> Callable[[], float]:
    """A probe: one flush kernel on this process's current stream, host-timed from launch to completion (ms)."""
    import torch

    kernel, buffer = pad_kernel(), flush_buffer()

    def probe() -> float:
        began = time.perf_counter()
        if kernel is not None:
            kernel.launch(torch.cuda.current_stream().cuda_stream, 0.0)
        else:
            buffer.zero_()
        torch.cuda.synchronize()
        return (time.perf_counter() - began) * 1000

    return probe


def idle_probe_ms(probe: Callable[[], float]) -> float:
    """The fastest of a few probes on a GPU this process just synchronised: what an idle GPU takes."""
    import torch

    torch.cuda.synchronize()
    return min(probe() for _ in range(7))


class GpuDrain:
    """The reference worker's drain: idle and switch-in probe times measured once, before any candidate."""

    def __init__(self, calibrate: bool = True) -> None:
        import torch

        self.probe = flush_probe()
        self.idle_ms = idle_probe_ms(self.probe)
        self.calibration: dict[str, Any] = {"switch_ms": 0.0, "switch_samples": []}
        if calibrate:
            self.calibration = calibrate_switch(self.probe, torch.cuda.current_device())
        self.switch_ms = float(self.calibration["switch_ms"])

    def __call__(self, timeout_s: float = 10.0) -> dict[str, Any]:
        return drain(self.probe, self.idle_ms, self.switch_ms, timeout_s)


def drain_probe(idle_ms: float | None, timeout_s: float = 10.0, switch_ms: float = 0.0) -> dict[str, Any]:
    """One drain with a probe made now (`idle_ms` None: measure the idle probe time first)."""
    probe = flush_probe()
    return drain(probe, idle_probe_ms(probe) if idle_ms is None else idle_ms, switch_ms, timeout_s)
