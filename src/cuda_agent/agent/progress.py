"""What the agent's own checks said so far: the last build, verification and profiling, and the best.

The workspace's `utils/` commands run the judge's own build and judgment, so their output is an honest
preview of the final verdict. Watching the Bash calls that run them gives the CLI a live "best verdict
so far" and gives the trajectory the result of the last compile, which is all there is to report when
no GPU is available for the final judgment.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

OUTPUT_TAIL_CHARS = 1500

_COMPILE = re.compile(r"utils/compile\.sh|workspace\.commands\s+compile")
_VERIFY = re.compile(r"utils[./]verification|workspace\.commands\s+verification")
_PROFILE = re.compile(r"utils[./]profiling|workspace\.commands\s+profiling")
_VERDICT = re.compile(r"\b(PASS|FAIL) \[(\w+)\] reward ([+-]?\d+)")
_SPEEDUP_EAGER = re.compile(r"^\s*eager\s.*?speedup ([\d.]+)x", re.MULTILINE)
_SPEEDUP_COMPILE = re.compile(r"^\s*torch\.compile\s.*?speedup ([\d.]+)x", re.MULTILINE)
_UNAVAILABLE = re.compile(r"cannot run here: (.*)")


@dataclass
class ProgressTracker:
    """Updated with every Bash result; `snapshot()` goes into the trajectory."""

    last_build: dict[str, Any] | None = None
    last_verification: dict[str, Any] | None = None
    last_profiling: dict[str, Any] | None = None
    best: dict[str, Any] = field(default_factory=lambda: {"stage": "none"})

    def observe(self, turn: int, command: str, output: str, exit_code: int | None) -> bool:
        """Record a Bash call; returns True if it ran one of the workspace's checks."""
        seen = False
        tail = output[-OUTPUT_TAIL_CHARS:]
        if _COMPILE.search(command):
            seen = True
            if "Compile success" in output:
                ok = True
            elif "Compilation failed" in output:
                ok = False
            else:
                ok = exit_code == 0
            self.last_build = {"turn": turn, "command": command, "exit_code": exit_code, "ok": ok, "output_tail": tail}
            self._promote("compiled" if ok else "compile_failed", turn)
        for pattern, attr, stage in ((_VERIFY, "last_verification", "verified"), (_PROFILE, "last_profiling", "profiled")):
            if not pattern.search(command):
                continue
            seen = True
            result: dict[str, Any] = {"turn": turn, "command": command, "exit_code": exit_code, "output_tail": tail}
            verdict = _VERDICT.search(output)
            unavailable = _UNAVAILABLE.search(output)
            if verdict:
                result.update(passed=verdict.group(1) == "PASS", status=verdict.group(2), reward=int(verdict.group(3)))
            elif unavailable:
                result.update(passed=False, status="unavailable", reason=unavailable.group(1).strip())
            else:
                result.update(passed=False, status="unknown")
            for key, regex in (("speedup_vs_eager", _SPEEDUP_EAGER), ("speedup_vs_compile", _SPEEDUP_COMPILE)):
                match = regex.search(output)
                if match:
                    result[key] = float(match.group(1))
            setattr(self, attr, result)
            if result.get("passed"):
                self._promote(stage, turn, result)
        return seen

    def _promote(self, stage: str, turn: int, result: dict[str, Any] | None = None) -> None:
        candidate = {"stage": stage, "turn": turn}
        if result:
            for key in ("reward", "speedup_vs_eager", "speedup_vs_compile"):
                if key in result:
                    candidate[key] = result[key]
        if _rank(candidate) >= _rank(self.best):
            self.best = candidate

    def label(self) -> str:
        """A few words for progress lines: 'reward +2 (1.31x vs compile)', 'compiled', ..."""
        best = self.best
        if "reward" in best:
            text = f"reward {best['reward']:+d}"
            if "speedup_vs_compile" in best:
                text += f" ({best['speedup_vs_compile']:.2f}x vs compile)"
            return text + ("" if best["stage"] == "profiled" else ", not timed")
        return {"none": "-", "compile_failed": "compile failed", "compiled": "compiled"}.get(best["stage"], best["stage"])

    def snapshot(self) -> dict[str, Any]:
        return {
            "best": dict(self.best),
            "label": self.label(),
            "last_build": self.last_build,
            "last_verification": self.last_verification,
            "last_profiling": self.last_profiling,
        }


def _rank(entry: dict[str, Any]) -> tuple[float, ...]:
    stage_rank = {"none": 0, "compile_failed": 1, "compiled": 2, "verified": 3, "profiled": 4}[entry["stage"]]
    reward = entry.get("reward")
    return (reward if reward is not None else -2, stage_rank, entry.get("speedup_vs_compile") or 0.0)
