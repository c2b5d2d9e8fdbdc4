"""Behaving differently when observed (issue 33, class 3): traced rounds against untraced ones.

Only some timed rounds are traced (trust_boundary.md, "Which timed rounds are traced"), and during a
traced round the profiler's state is visible in the candidate's process. A submission that reads it can
run its own kernels while traced and PyTorch's faster ones (SDPA, cuBLAS through ATen) otherwise; the
coverage gate then sees only honest rounds. But the untraced rounds' times are measured all the same, so
the two kinds of round can be compared: a call's events enclose every kernel it ran, so an honest call
keeps the GPU busy no longer than it takes; a submission whose untraced calls take less than the device
time its traced calls' kernels needed did not run those kernels there.

The measure of a traced round is its **device busy time** per call: the union of the intervals of every
kernel, copy and memset the trace saw except the judge's own pad/flush (candidate/kernel_trace.py:
`device_busy_us`), over its calls. Not the traced round's samples: tracing slows a call's host launches
(CUPTI callbacks), which the pad hides only up to its length, so an honest launch-bound call can take
longer while traced; the kernels' device time is what tracing does not change. Overlapping streams count
once, so an honest submission with a joined side stream is not charged twice.

Refused: median traced busy time per call > (1 + `observed_slack`) x median untraced round time +
`observed_slack_ms` (decide/stats-like medians over rounds, so one noisy round decides nothing). The
slack must cover: the difference between the kernels' device time while traced and while not (CUPTI's
activity records), round-to-round spread of the same kernels, and event resolution on tiny calls. It is to
be set from the GPU: on the honest suite, max over cases of (traced busy per call / untraced median) --
recorded in every verdict as `checks.observed_timing.ratio` -- and the cheats' ratios
(tests/adversarial/04_runtime_profiler_lookup: honest kernels ~40x slower than SDPA).

Trust boundary: the busy time and the samples are claims from the candidate's process (a patched trace
or sampler could report anything: issue 12 class 1, defence in depth), bounded where they can be (the
samples by the host clock). Against a candidate that only reads the profiler's state, the comparison is a
fact: it cannot make its traced calls' kernels take less device time than they need.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from cuda_agent.judge.config import TimingConfig


@dataclass(frozen=True)
class ObservedGap:
    """Traced rounds' device busy time per call against untraced rounds' time per call (ms)."""

    traced_busy_ms: float | None  # median over traced rounds; None: no traced round reported it
    untraced_ms: float | None  # median over untraced rounds of their median sample
    traced_rounds: int
    untraced_rounds: int
    limit_ms: float | None

    @property
    def ratio(self) -> float | None:
        if self.traced_busy_ms is None or not self.untraced_ms:
            return None
        return self.traced_busy_ms / self.untraced_ms

    @property
    def refused(self) -> bool:
        return self.limit_ms is not None and self.traced_busy_ms is not None and self.traced_busy_ms > self.limit_ms

    def summary(self) -> dict[str, object]:
        def r(x: float | None) -> float | None:
            return None if x is None else round(x, 5)

        return {"traced_busy_ms_per_call": r(self.traced_busy_ms), "untraced_ms_per_call": r(self.untraced_ms),
                "ratio": None if self.ratio is None else round(self.ratio, 4), "limit_ms": r(self.limit_ms),
                "rounds": [self.traced_rounds, self.untraced_rounds]}  # fmt: skip

    def reason(self) -> str:
        return (f"calls in traced rounds kept the GPU busy {self.traced_busy_ms:.4g} ms each, but untraced timed "
                f"calls took {self.untraced_ms:.4g} ms ({self.ratio:.2f}x less than their kernels need): the "
                "submission behaves differently when observed; run the same kernels on every call")  # fmt: skip


def round_busy_ms(reply: dict, calls: int) -> float | None:
    """A traced round's device busy time per call, in ms, from its reply (None when not reported)."""
    busy = reply.get("busy_us")
    if not isinstance(busy, int | float) or busy != busy or busy < 0 or calls <= 0:
        return None
    return float(busy) / 1000 / calls


def observed_gap(traced_busy_ms: Sequence[float], untraced_rounds: Sequence[Sequence[float]],
                 timing: TimingConfig) -> ObservedGap:  # fmt: skip
    """Compare traced rounds' busy time per call (`round_busy_ms` of each) with untraced rounds' samples."""
    untraced = [statistics.median(r) for r in untraced_rounds if r]
    busy = statistics.median(traced_busy_ms) if traced_busy_ms else None
    base = statistics.median(untraced) if untraced else None
    limit = None if base is None else (1 + timing.observed_slack) * base + timing.observed_slack_ms
    return ObservedGap(busy, base, len(traced_busy_ms), len(untraced), limit)
