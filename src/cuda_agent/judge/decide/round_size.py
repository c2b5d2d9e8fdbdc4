"""How many calls a timed round has: `TimingConfig.samples_per_round`, fewer where the round would not fit.

Why. A timed round keeps every call's inputs and output until the round's checks are chosen (the
candidate cannot know which call will be compared: candidate/sampler.py, `kept`), and draws all of its
calls' inputs before the first call (`draw_first`). So a round of n calls holds n x (one input set + one
output) of GPU memory, and two rounds are alive at once: the candidate keeps its last round while a
baseline round runs in the reference worker (which keeps one round at a time, reference_timing.py). At
KernelBench's current sizes one call's inputs and output reach 12-16 GiB (ReLU, the norms, pooling): ten
such calls are 120-160 GiB, over an H200's 141 GB for one round alone (an estimate from the tasks' shapes,
docs/design/memory.md). With `round_memory_share` of the GPU for each round, such a task gets fewer calls
per round, and every contender (candidate, eager, torch.compile) gets the same number, so the rounds
they are compared on are alike.

What it changes. Nothing for a task whose calls fit: every task of the examples and the adversarial suite
keeps its 10 calls. A task with fewer calls per round needs more rounds for `min_samples` (stats.py:
`trace_probability`), and its calls are long (milliseconds: gigabytes moved), so a round's per-call jitter
is small beside its work. Its baselines are cached apart (the key names the calls), since a baseline timed
over rounds of another size is not the same measurement.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

GIB = float(1 << 30)


@dataclass(frozen=True)
class RoundSize:
    """The calls of every timed round of one judgment, and why (for the verdict's checks)."""

    calls: int
    wanted: int
    call_bytes: int | None = None
    gpu_bytes: int | None = None

    @property
    def reduced(self) -> bool:
        return self.calls < self.wanted

    def describe(self) -> str:
        if self.call_bytes is None or self.gpu_bytes is None:
            return f"{self.calls} calls per round (the reference did not report its sizes)"
        one = f"one call's inputs and output are {self.call_bytes / GIB:.2f} GiB"
        calls = f"{self.calls} call{'s' if self.calls != 1 else ''} per round"
        if not self.reduced:
            return f"{calls} ({one})"
        return (f"{calls} instead of {self.wanted}: {one}, and a round keeps every call's "
                f"on a GPU of {self.gpu_bytes / GIB:.0f} GiB (decide/round_size.py)")  # fmt: skip


def round_size(wanted: int, input_bytes: Any, output_bytes: Any, gpu_bytes: Any, share: float) -> RoundSize:
    """`wanted` calls, or as many as keep one round's inputs and outputs within `share` of `gpu_bytes`
    (at least one). Sizes the reference did not report (an older worker, a CPU test) leave `wanted`."""
    if not all(isinstance(v, int) and v >= 0 for v in (input_bytes, output_bytes, gpu_bytes)) or not gpu_bytes:
        return RoundSize(wanted, wanted)
    call_bytes = input_bytes + output_bytes
    fits = int(share * gpu_bytes // call_bytes) if call_bytes else wanted
    return RoundSize(max(1, min(wanted, fits)), wanted, call_bytes, gpu_bytes)
