"""Live progress of an episode as lines of text: what `solve` and `eval --verbose` print to stderr.

The agent loop reports events (`turn`, `tool_start`, `tool_end`, `exit`, `judge_start`, `judged`,
`sandbox`) to an observer; `ProgressPrinter` is the observer that turns them into one line each, tagged
with the task, and hands them to the caller's `say` (which owns the stream and its lock).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class ProgressPrinter:
    """Turns loop events into stderr lines: one per turn, one per tool call, the exit and the verdict."""

    def __init__(
        self, task: str, say: Callable[[str], None], show_sandbox: Callable[[dict], None], judging: bool = True
    ) -> None:
        self.task = task
        self.say = say
        self.show_sandbox = show_sandbox
        self.judging = judging  # False under --no-judge: nothing to announce about a judgment

    def __call__(self, event: str, **data: Any) -> None:
        tag = f"[{self.task}]"
        if event == "sandbox":
            self.show_sandbox(data["protections"])
        elif event == "turn":
            self.say(f"{tag} turn {data['turn']}/{data['max_turns']}  context {data['context_tokens'] / 1000:.1f}k "
                     f"tokens  best so far: {data['best']}")  # fmt: skip
        elif event == "tool_start":
            summary = f" {data['summary']}" if data.get("summary") else ""
            self.say(f"{tag}   -> {data['name']}{summary}")
        elif event == "tool_end" and data["status"] != "ok":
            self.say(f"{tag}      {data['name']} {data['status']}")
        elif event == "exit":
            self.say(f"{tag} stopped after {data['turns']} turn(s): {data['status']} ({data['message']})")
        elif event == "judge_start" and self.judging:
            self.say(f"{tag} judging the final workspace ...")
        elif event == "judged" and self.judging:
            outcome = data["outcome"]
            reward = "-" if outcome.reward is None else f"{outcome.reward:+d}"
            self.say(f"{tag} verdict: {outcome.status}, reward {reward}: {outcome.reason}")
