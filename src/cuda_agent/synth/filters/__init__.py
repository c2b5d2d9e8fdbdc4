"""Task filters. `static` needs nothing but the source; `execute` runs tasks in isolated worker processes.

Every filter returns a `Verdict`: accepted, or rejected at a named stage for a named reason, so that a
pipeline run can report acceptance by stage and every rejected task keeps why.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Verdict:
    """The outcome of one filter on one task. `reason` is None when accepted."""

    stage: str
    reason: str | None = None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.reason is None


def passed(stage: str, detail: str = "") -> Verdict:
    return Verdict(stage, None, detail)


def rejected(stage: str, reason: str, detail: str = "") -> Verdict:
    return Verdict(stage, reason, detail[:2000])
