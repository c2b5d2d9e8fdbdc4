"""The judge's answer: a typed, frozen verdict with a status, a reward and a reason someone can act on.

The JSON form (`to_dict`) is the contract in docs/design/architecture.md: `reward`, `status`, `reason`,
`compile_log`, `timing` and the environment fingerprint, plus the tolerances and the checks that ran.

Trust boundary: the answer, made in the parent from facts the stages established (decide/judgment.py); a
verdict is never built from a worker's reply without those checks.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from enum import Enum
from typing import Any

SCHEMA_VERSION = 1


class Status(str, Enum):
    OK = "ok"
    COMPILE_ERROR = "compile_error"
    INCORRECT = "incorrect"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    REJECTED = "rejected"
    # The task itself is unusable (broken or degenerate reference): not the candidate's fault, but still
    # reward -1 (fail closed); RL code can filter on this status.
    TASK_ERROR = "task_error"
    # `judge --build-only` / `utils/compile.sh`: every check a CPU can make passed (task, static checks,
    # build), but nothing was verified or timed. Reward 0: no reward was earned (nor lost) yet.
    BUILT = "built"


# The stages of a judgment, in order, and what `Verdict.stages` says of each: it ran and passed, it ran
# and failed, it was not run by choice (`--build-only`, `--no-timing`, no GPU), or an earlier stage failed.
STAGES = ("task", "static", "build", "reference", "verify", "timing")
PASSED, FAILED, SKIPPED, NOT_REACHED = "passed", "failed", "skipped", "not_reached"


@dataclass(frozen=True)
class Stat:
    """A median with the spread behind it (milliseconds). In `Timing` (protocol v6) the values are round
    times, each a round's total work over its calls, and `samples` counts the rounds."""

    median: float
    p25: float
    p75: float
    min: float
    samples: int

    @property
    def relative_iqr(self) -> float:
        return (self.p75 - self.p25) / self.median if self.median > 0 else float("inf")


@dataclass(frozen=True)
class Timing:
    """Times of the candidate and both baselines, and the speedups credited from them.

    Speedups are medians of per-round ratios (baseline / candidate); the `*_low` fields are the lower
    bounds of their 95% confidence intervals, which is what the reward thresholds look at. A round's time
    is its total work over its calls (protocol v6); `*_ms` are the medians of those over rounds.
    """

    candidate_ms: float
    eager_ms: float
    compile_ms: float
    speedup_vs_eager: float
    speedup_vs_compile: float
    speedup_vs_eager_low: float
    speedup_vs_compile_low: float
    candidate: Stat
    eager: Stat
    compile: Stat
    rounds: int
    baseline_source: str  # "measured" (interleaved in this run) or "cached"
    protocol: str
    # What the reward compared (timing.md): the thresholds the lower bounds had to exceed (1.05 widened
    # by each baseline's measured spread), and how the figures were made (pad, fresh compile builds,
    # spreads, host-clock bound, work charged beyond the events).
    eager_threshold: float = 1.05
    compile_threshold: float = 1.05
    policy: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Environment:
    gpu: str
    compute_capability: str
    driver: str
    torch: str
    cuda: str
    nvcc: str = ""

    def key(self) -> str:
        return f"{self.gpu}|{self.compute_capability}|{self.driver}|{self.torch}|{self.cuda}"


@dataclass(frozen=True)
class Verdict:
    reward: int
    status: Status
    reason: str
    compile_log: str = ""
    timing: Timing | None = None
    environment: Environment | None = None
    tolerance: dict[str, float] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    task: str = ""
    stages: dict[str, str] = field(default_factory=dict)  # STAGES -> PASSED / FAILED / SKIPPED / NOT_REACHED

    @property
    def passed(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON-ready data. Non-finite numbers (an unbounded interval's end, a ratio over
        zero) become None: JSON has no infinity, and a verdict that a strict encoder refuses (the
        server's did, with a 500 on every poll: H100, 2026-12-05) is a verdict its client never gets."""
        data = asdict(self)
        data["status"] = self.status.value
        data["schema_version"] = SCHEMA_VERSION
        return json_safe(data)

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, default=_json_default, allow_nan=False)


def json_safe(value: Any) -> Any:
    """`value` with every non-finite float inside dicts, lists and tuples replaced by None."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, tuple):
        return tuple(json_safe(v) for v in value)
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def stage_outcomes(failed: str | None, skipped: tuple[str, ...] = ()) -> dict[str, str]:
    """The `stages` map of a judgment that failed at stage `failed` (None: nothing failed): the stages
    before it passed, those after it were not reached, and `skipped` ones were not run by choice."""
    outcomes: dict[str, str] = {}
    reached_failure = False
    for stage in STAGES:
        if stage == failed:
            outcomes[stage], reached_failure = FAILED, True
        elif stage in skipped:
            outcomes[stage] = SKIPPED
        else:
            outcomes[stage] = NOT_REACHED if reached_failure else PASSED
    return outcomes


def failed_stage(verdict: Verdict, ran: set[str] | dict[str, float], timed: bool = True) -> str | None:
    """Which stage of a full judgment ended it, from its verdict and the stages that recorded a time
    (a stage records its time when it completes; checks after verification count as timing when timed)."""
    if verdict.status in (Status.OK, Status.BUILT):
        return None
    reason = verdict.reason
    if reason.startswith(("static checks failed", "no model_new.py")):
        return "static"
    if verdict.status is Status.COMPILE_ERROR or reason.startswith("build failed"):
        return "build"
    if verdict.status is Status.TASK_ERROR:
        return "reference" if "build" in ran else "task"
    if "build" not in ran:
        return "build"
    if "reference" not in ran:
        return "reference"
    return "timing" if "verify" in ran and timed else "verify"


def failure(status: Status, reason: str, **extra: Any) -> Verdict:
    """A verdict for anything that failed: reward -1, always."""
    if status is Status.OK:
        raise ValueError("failure() needs a failing status")
    return Verdict(reward=-1, status=status, reason=reason, **extra)
