"""Trusted side: a static check's finding (file, line, a reason an agent can act on), and the one-line
summary the verdict's reason quotes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One rule broken at one place: `path:line: message`."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def describe(findings: list[Finding], limit: int = 5) -> str:
    """The first `limit` findings on one line, and how many more there are."""
    shown = "; ".join(str(f) for f in findings[:limit])
    more = f" (and {len(findings) - limit} more)" if len(findings) > limit else ""
    return shown + more
