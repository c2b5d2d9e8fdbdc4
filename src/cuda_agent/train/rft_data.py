"""Rejection-sampling data: the trajectories `solve` wrote, filtered and deduplicated into parquet rows.

A row is one kept episode in the conversational format TRL's `SFTTrainer` and verl's multi-turn SFT
trainer both read: `messages` (OpenAI chat turns with assistant `tool_calls` and `tool` results) and
`tools` (the JSON schemas the episode offered, as JSON text: parquet cannot hold ten differently shaped
schemas in one typed column, and both trainers accept the text), plus `task`, `reward` and provenance.

Every episode read is either kept or dropped for exactly one reason (the first filter it fails), so the
table printed at the end adds up. Among episodes of one task the best come first (highest reward, then
fewest tokens), so `--per-task` and the duplicate filter keep the best ones.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.train.chat import ChatFormatError, chat_tools, training_messages

# No verdict on the episode: the judge could not judge it, or refused its task (`task_error`: every episode
# of the task gets it whatever it wrote, so its -1 would teach the critic nothing about the trajectory).
NO_VERDICT = ("judge_error", "unavailable", "skipped", "task_error")
NORMAL_EXITS = ("finished", "submitted")
EDIT_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
REASONS = ("unreadable", "task", "unfinished", "exit", "no_verdict", "reward", "too_long", "bad_messages",
           "duplicate_kernel", "per_task_cap")  # fmt: skip


@dataclass(frozen=True)
class Filters:
    """What an episode must satisfy to be kept. `exits=None` keeps every exit (value data wants failures)."""

    min_reward: float = 2.0
    max_reward: float | None = None
    exits: tuple[str, ...] | None = NORMAL_EXITS
    max_tokens: int | None = 131_072
    per_task: int | None = None
    dedupe: bool = True
    tasks: tuple[str, ...] | None = None  # only these task names


@dataclass
class Report:
    read: int = 0
    kept: int = 0
    dropped: Counter = field(default_factory=Counter)
    kept_per_task: Counter = field(default_factory=Counter)
    examples: dict[str, str] = field(default_factory=dict)  # reason -> one example of what was dropped

    def drop(self, reason: str, where: str) -> None:
        self.dropped[reason] += 1
        self.examples.setdefault(reason, where)

    def to_dict(self) -> dict[str, Any]:
        return {"read": self.read, "kept": self.kept, "dropped": dict(self.dropped),
                "kept_per_task": dict(self.kept_per_task), "examples": self.examples}  # fmt: skip

    def table(self) -> str:
        rows = [("kept", str(self.kept), "")] + [
            (f"dropped: {r}", str(self.dropped[r]), self.examples.get(r, "")) for r in REASONS if self.dropped[r]
        ]
        rows.append(("read", str(self.read), ""))
        width = max(len("episodes"), *(len(r[0]) for r in rows))
        count = max(len(r[1]) for r in rows)
        lines = [f"{'episodes':<{width}}  {'n':>{count}}  example", f"{'-' * width}  {'-' * count}  -------"]
        lines += [f"{a:<{width}}  {b:>{count}}  {c}".rstrip() for a, b, c in rows]
        if self.kept_per_task:
            lines.append("kept per task: " + ", ".join(f"{t} {n}" for t, n in sorted(self.kept_per_task.items())))
        return "\n".join(lines)


def trajectory_files(paths: Iterable[Path | str]) -> list[Path]:
    """Files named directly, and every `trajectory.jsonl` under folders (a `solve --runs-dir`)."""
    files: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found = sorted(path.rglob("trajectory.jsonl"))
            if not found:
                raise FileNotFoundError(f"{path} holds no trajectory.jsonl files (is it a solve --runs-dir?)")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such trajectory file or folder: {path}")
    return files


def iter_records(paths: Iterable[Path | str]) -> Iterator[tuple[str, dict[str, Any] | None]]:
    """(where, record) for every line of every file; record None for a line that is not a JSON object.

    A `trajectory.jsonl` holds one line (rewritten as the episode goes); `solve --out` appends one line
    per episode; both are read the same way.
    """
    for path in trajectory_files(paths):
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    record = json.loads(line)
                except json.JSONDecodeError:
                    record = None
                yield f"{path}:{number}", record if isinstance(record, dict) else None


def episode_tokens(record: dict[str, Any]) -> int:
    """The episode's final context size: the server's count where it reported one, else an estimate."""
    from cuda_agent.agent.loop import estimate_message_tokens

    counted = (record.get("usage") or {}).get("context_tokens")
    if isinstance(counted, int) and counted > 0:
        return counted
    return estimate_message_tokens(record.get("messages") or []) + len(json.dumps(record.get("tools") or [])) // 3


def kernel_digest(record: dict[str, Any]) -> str:
    """Identity of the final kernel: the files in the episode's workspace when it still exists, else what
    the model wrote (every file-editing tool call, in order)."""
    digest = hashlib.sha256()
    root = Path(str((record.get("workspace") or {}).get("path") or ""))
    files = []
    if root.is_dir() and (root / "model_new.py").is_file():
        files = [root / "model_new.py", *sorted(p for p in (root / "kernels").rglob("*") if p.is_file())]
    if files:
        for path in files:
            digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes() + b"\0")
        return "files:" + digest.hexdigest()[:16]
    for message in record.get("messages") or []:
        for call in message.get("tool_calls") or []:
            function = call.get("function") or {}
            if function.get("name") in EDIT_TOOLS:
                digest.update(f"{function['name']}\0{function.get('arguments')}\0".encode())
    return "edits:" + digest.hexdigest()[:16]


def _first_failure(record: dict[str, Any], filters: Filters) -> str | None:
    if filters.tasks is not None and str((record.get("task") or {}).get("name")) not in filters.tasks:
        return "task"
    if record.get("state") != "finished":
        return "unfinished"
    exit_status = (record.get("exit") or {}).get("status")
    if filters.exits is not None and exit_status not in filters.exits:
        return "exit"
    judge = record.get("judge") or {}
    reward = record.get("reward")
    if judge.get("status") in NO_VERDICT or not isinstance(reward, (int, float)):
        return "no_verdict"
    if reward < filters.min_reward or (filters.max_reward is not None and reward > filters.max_reward):
        return "reward"
    if filters.max_tokens is not None and episode_tokens(record) > filters.max_tokens:
        return "too_long"
    return None


def select(paths: Iterable[Path | str], filters: Filters) -> tuple[list[dict[str, Any]], Report]:
    """The rows to write and the report of what was kept and dropped."""
    report = Report()
    candidates: list[tuple[str, dict[str, Any], list[dict[str, Any]]]] = []
    for where, record in iter_records(paths):
        report.read += 1
        if record is None:
            report.drop("unreadable", where)
            continue
        reason = _first_failure(record, filters)
        if reason is None:
            try:
                messages = training_messages(record.get("messages") or [])
            except ChatFormatError as e:
                reason, where = "bad_messages", f"{where}: {e}"
        if reason is not None:
            report.drop(reason, where)
            continue
        candidates.append((where, record, messages))

    def task_of(record: dict[str, Any]) -> str:
        return str((record.get("task") or {}).get("name") or "?")

    candidates.sort(key=lambda c: (task_of(c[1]), -float(c[1]["reward"]), episode_tokens(c[1]), c[0]))
    rows: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for where, record, messages in candidates:
        task = task_of(record)
        digest = kernel_digest(record)
        if filters.dedupe and (task, digest) in seen:
            report.drop("duplicate_kernel", where)
            continue
        if filters.per_task is not None and report.kept_per_task[task] >= filters.per_task:
            report.drop("per_task_cap", where)
            continue
        seen.add((task, digest))
        report.kept += 1
        report.kept_per_task[task] += 1
        rows.append(row(record, messages, where, digest))
    return rows, report


def row(record: dict[str, Any], messages: list[dict[str, Any]], where: str, digest: str) -> dict[str, Any]:
    from cuda_agent.agent.tools import default_tools

    agents = [t.schema() for t in default_tools()]
    tools = chat_tools(record.get("tools") or agents, reference=agents)
    return {
        "task": str((record.get("task") or {}).get("name") or "?"),
        "task_digest": str((record.get("task") or {}).get("digest") or ""),
        "reward": float(record["reward"]),
        "judge_status": str((record.get("judge") or {}).get("status") or ""),
        "exit": str((record.get("exit") or {}).get("status") or ""),
        "turns": len(record.get("turns") or []),
        "tokens": episode_tokens(record),
        "kernel_digest": digest,
        "source": where,
        "messages": messages,
        "tools": json.dumps(tools, ensure_ascii=False),
    }


def write_parquet(rows: list[dict[str, Any]], out: Path) -> None:
    """Rows to parquet, atomically (a temporary file renamed into place)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.tmp")
    pq.write_table(pa.Table.from_pylist(rows, schema=_schema(pa)), tmp)
    tmp.replace(out)


def _schema(pa: Any) -> Any:
    call = pa.struct([("id", pa.string()), ("type", pa.string()),
                      ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])  # fmt: skip
    message = pa.struct([("role", pa.string()), ("content", pa.string()), ("tool_calls", pa.list_(call)),
                         ("tool_call_id", pa.string())])  # fmt: skip
    return pa.schema([
        ("task", pa.string()), ("task_digest", pa.string()), ("reward", pa.float64()),
        ("judge_status", pa.string()), ("exit", pa.string()), ("turns", pa.int64()), ("tokens", pa.int64()),
        ("kernel_digest", pa.string()), ("source", pa.string()), ("messages", pa.list_(message)),
        ("tools", pa.string()),
    ])  # fmt: skip


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows of an `rft-data` parquet file, checked for the columns training needs."""
    import pyarrow.parquet as pq

    table = pq.read_table(path)
    missing = {"messages", "tools", "reward", "task"} - set(table.column_names)
    if missing:
        raise ValueError(f"{path} lacks column(s) {', '.join(sorted(missing))}; write it with `cuda-agent train rft-data`")
    return table.to_pylist()
