"""The timing protocol (shared/design/timing.md), in two halves.

`Sampler` runs inside a worker process: each sample flushes L2 on the timing stream, records a start
event, calls the function, records an end event and synchronises the whole device, so work on other
streams cannot escape the round. It also keeps a host-clock bracket around each round.

`combine` runs in the parent: it takes interleaved rounds of candidate, eager and compile samples and
computes medians, spreads and the speedups as medians of per-round ratios with bootstrap lower bounds.
"""

from __future__ import annotations

import ctypes
import functools
import random
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from cuda_agent.judge.verdict import Stat

PROTOCOL_VERSION = "flush256-events-devsync-v1"
L2_FLUSH_BYTES = 256 << 20
WARMUP_MIN_CALLS = 5
WARMUP_MIN_MS = 25.0
COMPILE_WARMUP_CALLS = 3


@dataclass(frozen=True)
class RoundResult:
    samples_ms: list[float]
    wall_ms: float  # host clock around the whole round, device synchronised at both ends


class Sampler:
    """Times one callable over rotating argument sets on the current CUDA stream."""

    def __init__(self, fn: Callable[..., Any], arg_sets: Sequence[Sequence[Any]]) -> None:
        import torch

        self.torch = torch
        self.fn = fn
        self.arg_sets = [list(a) for a in arg_sets]
        self.flush_buffer = torch.empty(L2_FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self._next = 0
        self.last: tuple[int, Any] = (-1, None)  # (input set, output) of the kept timed call
        self._round_copies: dict[int, list[Any]] = {}
        self.kept: list[tuple[list[Any], Any]] = []  # (inputs, output) of every call of a fresh round
        self._cudart = cuda_runtime()
        if self._cudart is not None:
            self._cudart.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))

    def _args(self) -> list[Any]:
        """The next argument set in rotation (warm-up only; timed rounds draw theirs at random)."""
        self._next += 1
        return self.arg_sets[(self._next - 1) % len(self.arg_sets)]

    def _reset_l2(self) -> None:
        # Writing 256 MB evicts the 60 MB L2 of an H200, and the queued kernel hides the host launch
        # latency of the call that follows. Persisting lines survive ordinary evictions, so they are
        # reset explicitly.
        if self._cudart is not None:
            self._cudart.cudaCtxResetPersistingL2Cache()
        self.flush_buffer.zero_()

    def warmup(self, min_calls: int = WARMUP_MIN_CALLS, min_ms: float = WARMUP_MIN_MS) -> float:
        """Call until both minimums are met; returns the mean ms per call seen during warm-up."""
        torch = self.torch
        calls = 0
        start = time.perf_counter()
        while True:
            with torch.no_grad():
                self.fn(*self._args())
            torch.cuda.synchronize()
            calls += 1
            elapsed = (time.perf_counter() - start) * 1000
            if calls >= min_calls and elapsed >= min_ms:
                return elapsed / calls
            if calls >= 10_000:
                return elapsed / calls

    def round(
        self, samples: int, keep: int | None = None, fresh: Sequence[Sequence[Any]] | None = None
    ) -> RoundResult:
        """Time `samples` calls. Each round draws its input sets in a random order and copies them to
        fresh memory first (outside the timed region), so an output cache keyed on addresses or call
        order misses. `keep` names the call whose output is kept for a spot check.

        `fresh` (the candidate's rounds): one input set per call, drawn for this round alone from
        seeds only the judge holds; every call's inputs and output are then kept in `kept`, so that the
        parent can choose which to check after the round (content caches never hit, and no call can
        tell whether it will be checked)."""
        torch = self.torch
        if fresh is not None:
            calls = [list(a) for a in fresh]
            if len(calls) != samples:
                raise ValueError(f"{len(calls)} fresh input sets for {samples} timed calls")
            order = list(range(samples))
            self._round_copies = dict(enumerate(calls))
        else:
            order = [random.randrange(len(self.arg_sets)) for _ in range(samples)]
            previous = self._round_copies  # alive while new copies are made: the addresses must differ
            self._round_copies = {k: _fresh(self.arg_sets[k]) for k in sorted(set(order))}
            del previous
        self.kept = []
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(samples)]
        keep = samples - 1 if keep is None else keep
        torch.cuda.synchronize()
        host_start = time.perf_counter()
        with torch.no_grad():
            for i, k in enumerate(order):
                args = self._round_copies[k]
                self._reset_l2()
                starts[i].record()
                result = self.fn(*args)
                ends[i].record()
                torch.cuda.synchronize()
                if fresh is not None:
                    self.kept.append((args, result))
                if i == keep:
                    self.last = (k, result)
                del result
        wall_ms = (time.perf_counter() - host_start) * 1000
        return RoundResult([s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)], wall_ms)


CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def _fresh(args: list[Any]) -> list[Any]:
    return [a.clone() if hasattr(a, "clone") and hasattr(a, "is_cuda") else a for a in args]


@functools.cache
def cuda_runtime() -> ctypes.CDLL | None:
    """The CUDA runtime torch loaded into this process, for the calls torch does not expose."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if "libcudart.so" in line}
    except OSError:
        return None
    for path in sorted(paths):
        try:
            return ctypes.CDLL(path)
        except OSError:
            continue
    return None


def stat_of(samples: Sequence[float]) -> Stat:
    ordered = sorted(samples)
    n = len(ordered)
    if n == 0:
        return Stat(float("nan"), float("nan"), float("nan"), float("nan"), 0)
    q = statistics.quantiles(ordered, n=4, method="inclusive") if n >= 2 else [ordered[0]] * 3
    return Stat(median=statistics.median(ordered), p25=q[0], p75=q[2], min=ordered[0], samples=n)


def median_rse(round_medians: Sequence[float]) -> float:
    """Relative standard error of the median, estimated from the spread of per-round medians."""
    n = len(round_medians)
    if n < 3:
        return float("inf")
    med = statistics.median(round_medians)
    if med <= 0:
        return float("inf")
    # The standard error of a median is about 1.25 times that of a mean for near-normal data.
    return 1.2533 * statistics.stdev(round_medians) / (n**0.5) / med


def ratio_with_bound(
    baseline_rounds: Sequence[float], candidate_rounds: Sequence[float], *, paired: bool, seed: int = 0
) -> tuple[float, float]:
    """Median speedup (baseline / candidate) and the 5th percentile of its bootstrap distribution.

    Paired rounds (measured interleaved) give per-round ratios; unpaired ones (cached baseline) compare
    medians of resampled rounds.
    """
    rng = random.Random(seed)
    if paired:
        ratios = [b / c for b, c in zip(baseline_rounds, candidate_rounds, strict=True) if c > 0]
        point = statistics.median(ratios)
        boots = sorted(statistics.median(rng.choices(ratios, k=len(ratios))) for _ in range(2000))
    else:
        point = statistics.median(baseline_rounds) / statistics.median(candidate_rounds)
        boots = sorted(
            statistics.median(rng.choices(baseline_rounds, k=len(baseline_rounds)))
            / statistics.median(rng.choices(candidate_rounds, k=len(candidate_rounds)))
            for _ in range(2000)
        )
    return point, boots[int(0.05 * len(boots))]
