"""The reference worker's baseline timing (its `time_*` and `clock_setup` commands): eager and torch.compile
warmed and timed with the same sampler as the candidate's (candidate/sampler.py), in the trusted process.

A mixin of `ReferenceWorker` (reference_worker.py), which holds the judgment's model, timing sets and
`_draw`; split out so that each module keeps one job. Trust boundary: runs in the reference worker, a
process that never loads candidate code; its samples are facts there (sampler.py says why).
"""

from __future__ import annotations

import dataclasses
import secrets
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch

from cuda_agent.judge.candidate import kernel_trace
from cuda_agent.judge.candidate.pad import release_policy
from cuda_agent.judge.candidate.sampler import COMPILE_WARMUP_CALLS, Sampler
from cuda_agent.judge.trusted import reference_memory
from cuda_agent.judge.trusted.compile_builds import compile_build, fresh_compiles
from cuda_agent.judge.trusted.compile_modes import DEFAULT as DEFAULT_COMPILE_MODE


class BaselineTiming:
    """Eager and torch.compile samplers of the judgment's reference model (`self.model`, `self.timing_sets`,
    `self._draw` and `self.samplers` are the worker's)."""

    model: Any
    timing_sets: list[list[Any]]
    samplers: dict[str, Sampler]
    sizes: dict[str, int]  # what the preparation learnt of the task's sizes (reference_memory.py)
    _draw: Callable[[int], list[Any]]

    def time_setup(self, modes: list[str], compile_builds: int = 1, build_windows: int = 2,
                   samples: int = 10, compile_mode: str = DEFAULT_COMPILE_MODE,
                   release: bool = False) -> dict[str, Any]:  # fmt: skip
        """Warm up the baselines (`_warm_up`); running out of GPU memory is one task_error line."""
        with reference_memory.said_in_one_line(self.sizes, self._release_rounds, reference_memory.TIMING):
            return self._warm_up(modes, compile_builds, build_windows, samples, compile_mode, release)

    def _warm_up(self, modes: list[str], compile_builds: int, build_windows: int, samples: int, compile_mode: str,
                 release: bool) -> dict[str, Any]:  # fmt: skip
        """Warm up the baselines. torch.compile is built in `compile_mode` (compile_modes.py) `compile_builds`
        times from scratch (inductor's caches off, so each build re-generates and re-autotunes its kernels),
        each build is timed over `build_windows` windows, and the fastest build is the baseline: one unlucky
        autotuning choice no longer decides a cold judgment's reward. Returns warm-up and host enqueue times,
        every build's median and the mode the builds were made in."""
        kernel_trace.warm_profiler()  # this judgment's candidate worker has traced its calls (kernel_trace.py)
        warm: dict[str, float] = {}
        host: dict[str, float] = {}
        builds_ms: list[float] = []
        for mode in modes:
            if mode == "compile":
                sampler, builds_ms = self._best_compile_build(compile_builds, build_windows, samples, compile_mode,
                                                              release)  # fmt: skip
            else:
                sampler = Sampler(self.model, self.timing_sets, draw=self._draw, release=release)
            warm[mode] = sampler.warmup()
            host[mode] = sampler.host_ms
            self.samplers[mode] = sampler
        # The flush allowance every contender's pad gets and the draw's host time the cover must hide (the
        # eager sampler's: the host clock's calibration runs on eager rounds); measured here, in a process
        # no candidate code reached.
        eager = self.samplers.get("eager")
        release = {mode: _pad_release(s) for mode, s in self.samplers.items() if mode in modes}
        return {"warmup_ms": warm, "host_ms": host, "compile_builds_ms": builds_ms, "compile_mode": compile_mode,
                "pad_release": release,
                "flush_ms": eager.flush_ms if eager else None, "draw_ms": eager.draw_ms if eager else None}  # fmt: skip

    def _best_compile_build(self, builds: int, windows: int, samples: int, mode: str = DEFAULT_COMPILE_MODE,
                            release: bool = False) -> tuple[Sampler, list[float]]:  # fmt: skip
        fresh_compiles()
        best: tuple[float, Sampler] | None = None
        medians = []
        for build in range(max(1, builds)):
            fn = compile_build(self.model, build, mode)
            with torch.no_grad():
                for _ in range(COMPILE_WARMUP_CALLS):
                    fn(*self.timing_sets[0])
            sampler = Sampler(fn, self.timing_sets, draw=self._draw, release=release)
            sampler.warmup()
            # The build's time: the median over its windows of each round's work per call (protocol v6).
            median = statistics.median(self._round(sampler, samples).per_call_ms for _ in range(max(1, windows)))
            medians.append(median)
            if best is None or median < best[0]:
                best = (median, sampler)
        assert best is not None
        return best[1], medians

    def clock_setup(self, pad_ms: float) -> dict[str, Any]:
        """An eager sampler with the judgment's pad, for the host clock's calibration rounds when the
        baselines are cached (made once per worker; a warm worker keeps the one it timed baselines with).
        Its draw's host time is measured again: this judgment's cover follows this host now."""
        kernel_trace.warm_profiler()  # this judgment's candidate worker has traced its calls (kernel_trace.py)
        eager = self.samplers.get("eager")
        if eager is None:  # its warm-up measures the draw
            eager = self.samplers["eager"] = Sampler(self.model, self.timing_sets, draw=self._draw)
            eager.warmup()
        else:
            eager.draw_ms = eager.measure_draw()
        eager.set_pad(pad_ms, eager.flush_ms)
        return {"host_ms": eager.host_ms, "flush_ms": eager.flush_ms, "draw_ms": eager.draw_ms,
                "pad_release": {"eager": _pad_release(eager)}}

    def time_pad(self, pad_ms: float, flush_ms: float | None = None, cover_ms: float | None = None,
                 release: bool | None = None) -> dict[str, Any]:  # fmt: skip
        """One pad length, flush allowance and draw cover for every contender (the parent's choice, see
        candidate/sampler.py)."""
        for sampler in self.samplers.values():
            sampler.set_pad(pad_ms, flush_ms, cover_ms, release)
        return {}

    def time_round(self, mode: str, samples: int) -> dict[str, Any]:
        """One round of a baseline, its inputs drawn inside it (from seeds made here) as a candidate
        round's are, every call kept as the candidate's are: the host clock compares the two walls."""
        with reference_memory.said_in_one_line(self.sizes, self._release_rounds, reference_memory.TIMING):
            return self._round(self.samplers[mode], samples).reply()

    def _release_rounds(self) -> None:
        """Every sampler's kept round dropped (before the line that says what the GPU has free)."""
        for sampler in self.samplers.values():
            sampler.release()
        torch.cuda.empty_cache()

    def _round(self, sampler: Sampler, samples: int) -> Any:
        began = time.perf_counter()
        for other in self.samplers.values():  # one round's calls kept at a time, as in the candidate's worker
            other.release()
        released_ms = (time.perf_counter() - began) * 1000
        result = sampler.round(samples, seeds=[secrets.randbits(62) for _ in range(samples)])
        return dataclasses.replace(result, setup_ms=result.setup_ms + released_ms)


def _pad_release(sampler: Any) -> str:
    """What a baseline sampler's pads wait for (pad.py), for the verdict's timing policy."""
    return release_policy(getattr(sampler, "kernel", None), bool(getattr(sampler, "release_ok", False)))
