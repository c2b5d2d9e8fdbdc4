"""The judge's answer: a typed, frozen verdict with a status, a reward and a reason someone can act on.

The JSON form (`to_dict`) is the contract in shared/design/architecture.md: `reward`, `status`, `reason`,
`compile_log`, `timing` and the environment fingerprint, plus the tolerances and the checks that ran.
"""

from __future__ import annotations

import json
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


@dataclass(frozen=True)
class Stat:
    """A median with the spread behind it (milliseconds)."""

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
    bounds of their 95% confidence intervals, which is what the reward thresholds look at.
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

    @property
    def passed(self) -> bool:
        return self.status is Status.OK

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["status"] = self.status.value
        data["schema_version"] = SCHEMA_VERSION
        return data

    def to_json(self, indent: int | None = None) -> str:
        return json.dumps(self.to_dict(), indent=indent, sort_keys=True, default=_json_default)


def _json_default(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def failure(status: Status, reason: str, **extra: Any) -> Verdict:
    """A verdict for anything that failed: reward -1, always."""
    if status is Status.OK:
        raise ValueError("failure() needs a failing status")
    return Verdict(reward=-1, status=status, reason=reason, **extra)
