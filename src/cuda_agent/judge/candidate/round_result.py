"""What a timed round reports (`RoundResult`), its time per call (`work_per_call`, the mean: protocol v6),
and what a round is charged beyond its calibration samples: the device-wide tail after the end events
(`charge_beyond`) and work that ran during the pads' flushes (`charge_flushes`). sampler.py measures the
rounds; the parent's statistics over them live in decide/stats.py.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

# Work after the end event is charged beyond the calibrated round trip plus this resolution per call; work
# during a pad's flush, beyond the calibrated flush plus the same (both netted over the round, not clipped
# per call: under the mean a per-call clip charged every contender the positive half of its jitter).
TAIL_RESOLUTION_MS = 0.001
# A timed call's flush is charged beyond the round's calibrated flush plus this share of it (or the
# resolution, if larger) per call: the calibration is the median of a few flushes, and its error counts once
# per call. What the slack admits: DRAM traffic beside the flush that lengthens it by under 2% (~2 us of
# a 0.1 ms flush, ~7 MB at DRAM bandwidth), i.e. at most a few MB staged, ~1 us of a call's reads.
FLUSH_SLACK_SHARE = 0.02


def work_per_call(samples: Sequence[float]) -> float:
    """A round's time per call (protocol v6): the round's total work over its calls, i.e. the mean of its
    charged samples. The mean is the one statistic that no moving of work between the calls of a round can
    lower: a call that only queues work and one that runs a batch of queued work sum to what they did. A
    median (v5) read the cheapest half: calls 2-9 queueing behind a 4 us marker and call 10 running the
    batch made the median the marker (docs/design/timing.md, "v6"). Outliers are handled one level up: the
    speedup is the median over rounds (decide/stats.py)."""
    return math.fsum(samples) / len(samples) if samples else float("nan")


@dataclass(frozen=True)
class RoundResult:
    """One timed round as the worker measured it (in the candidate's process: a claim the parent bounds)."""

    samples_ms: list[float]  # charged: each call's events plus an equal share of the round's charge
    wall_ms: float  # host clock around the timed loop, device synchronised at both ends
    events_ms: list[float] = field(default_factory=list)  # start -> end on the timing stream
    escaped_ms: list[float] = field(default_factory=list)  # each call's share of the charged device-wide tail
    roundtrip_ms: float = 0.0  # calibrated end -> after of a sample without a call
    setup_ms: float = 0.0  # host time before the timed loop (copies to fresh memory)
    pad_ms: float = 0.0
    cover_ms: float = 0.0  # the spin each call's draw ran under (0: inputs drawn before the round)
    flush_ms: float = 0.0  # the pads' flush in the round's calibration samples (median; 0: not measured)
    flush_charged_ms: float = 0.0  # the timed calls' flushes beyond it: work that ran during them, charged

    def reply(self) -> dict[str, Any]:
        """What a worker sends the parent about a round."""
        return {
            "samples": self.samples_ms, "wall_ms": self.wall_ms, "setup_ms": self.setup_ms,
            "escaped_ms": round(sum(self.escaped_ms), 6), "roundtrip_ms": self.roundtrip_ms,
            "pad_ms": self.pad_ms, "cover_ms": self.cover_ms, "flush_ms": round(self.flush_ms, 6),
            "flush_charged_ms": round(self.flush_charged_ms, 6),
        }  # fmt: skip

    @property
    def per_call_ms(self) -> float:
        """The round's time per call (`work_per_call` of its charged samples)."""
        return work_per_call(self.samples_ms)


def charge_beyond(measured: Sequence[float], expected: float, calls: int, slack_ms: float = TAIL_RESOLUTION_MS) -> float:
    """What a round's calls took beyond `expected` each, summed over the round, beyond `slack_ms` per call."""
    return max(0.0, math.fsum(m - expected for m in measured) - calls * slack_ms)


def charge_flushes(stamps: Any, timed: Sequence[int], calibration: Sequence[int]) -> tuple[float, float]:
    """(The round's calibrated flush, its timed calls' flushes beyond it) in ms. Nothing of the candidate
    runs during a calibration sample's pad; during a timed call's pad only work the call started outside
    the timing stream can (a copy-engine copy or a side-stream kernel that waits for nothing), and any that
    shares DRAM with the flush lengthens it. Without measurements (no pad kernel): (0, 0)."""
    if stamps is None:
        return 0.0, 0.0
    flushes = stamps.flush_ms()
    reference = [flushes[s] for s in calibration if flushes[s] is not None]
    measured = [flushes[s] for s in timed]
    if not reference or any(f is None for f in measured):
        return 0.0, 0.0
    flush = statistics.median(reference)
    slack = max(TAIL_RESOLUTION_MS, FLUSH_SLACK_SHARE * flush)
    return flush, charge_beyond(measured, flush, len(measured), slack)  # type: ignore[arg-type]
