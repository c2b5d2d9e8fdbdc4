"""The episode record RL training consumes: one JSON line, rewritten as the episode goes.

The line holds the messages in OpenAI chat format (assistant `tool_calls`, `tool` results), the tools
offered, one entry per turn (finish reason, token usage, tool statuses), the exit reason, the judge's
verdict and reward. It is replaced atomically (write a temporary file, rename) after every message, so
a crash or Ctrl-C loses nothing that happened: the file then holds the last complete state with
`"state": "running"`.

Serialisation is deterministic (sorted keys, no whitespace, UTF-8), and everything that depends on the
clock lives in fields named `timings`, so `strip_timings` of two replays of the same scripted episode
gives byte-identical JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

FORMAT = "cuda-agent.trajectory/1"
TIMINGS_KEY = "timings"


def dumps(record: Any) -> str:
    """Canonical JSON for records: sorted keys, compact, non-ASCII kept."""
    return json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=_default)


def _default(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if hasattr(value, "value"):  # enums
        return value.value
    if hasattr(value, "to_dict"):
        return value.to_dict()
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def strip_timings(record: Any) -> Any:
    """A copy of `record` without any `timings` field, at any depth."""
    if isinstance(record, dict):
        return {k: strip_timings(v) for k, v in record.items() if k != TIMINGS_KEY}
    if isinstance(record, list):
        return [strip_timings(v) for v in record]
    return record


def load_trajectory(path: Path | str) -> dict[str, Any]:
    """The record in a trajectory file (its last non-empty line)."""
    lines = [line for line in Path(path).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"{path} holds no trajectory")
    return json.loads(lines[-1])


def rewrite_record(path: Path, record: dict[str, Any]) -> None:
    """Replace a finished trajectory file's record atomically (as `TrajectoryWriter` does): what a resumed
    run does when it judges an episode that finished without a verdict."""
    tmp = path.with_name(f".{path.name}.resume")
    tmp.write_text(dumps(record) + "\n", encoding="utf-8")
    os.replace(tmp, path)


class TrajectoryWriter:
    """Holds the record of one episode and keeps its file (if any) up to date.

    The record's `messages` list is shared with the agent loop: appending there and calling `flush()`
    is all it takes to persist a new message.
    """

    def __init__(self, path: Path | str | None, record: dict[str, Any]) -> None:
        self.path = Path(path) if path is not None else None
        self.record: dict[str, Any] = {"format": FORMAT, "state": "running", **record}
        self.record.setdefault(TIMINGS_KEY, {})
        self._lock = threading.Lock()
        if self.path is not None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self.flush()

    def update(self, **fields: Any) -> None:
        self.record.update(fields)
        self.flush()

    def timings(self, **values: Any) -> None:
        self.record[TIMINGS_KEY].update(values)

    def line(self) -> str:
        return dumps(self.record)

    def flush(self) -> None:
        if self.path is None:
            return
        with self._lock:
            text = self.line() + "\n"
            fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, self.path)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise

