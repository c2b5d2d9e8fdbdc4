"""One evaluation result per (task, episode): the row every eval metric and report is computed from.

`cuda-agent eval` stores them as `RUN/records.jsonl`, one JSON object a line, appended as episodes finish
so a killed run resumes from what is on disk. A crash can leave a torn last line; `read_records` skips it
with a warning and `append_record` cuts it off before appending, so the file never carries garbage in the
middle. A malformed line that is *not* the last one is corruption, not a crash, and is an error naming
the line.

The agreed fields (H17a <-> H17b): task_id ("level1/19_ReLU"), level, problem, name, episode (0-based),
status (a Verdict status: ok, incorrect, compile_error, ...), reward (-1..3), candidate_ms / eager_ms /
compile_ms (the timing stage's medians, or None when it did not run), speedup_vs_eager /
speedup_vs_compile (medians of per-round ratios; None unless status is ok), reason, verdict_path
(relative to RUN/, or None).

Four optional fields beyond those carry what the reward itself compared (docs/verdict.md): the lower 95%
bounds of both speedups and the thresholds they had to exceed (1.05 widened by each baseline's measured
spread). `from_verdict` fills them; with them the metrics can report the share the *judge credited* as
more than 5% faster, not just the share whose median is. `gpu_wait_s` says how long the judgment waited
for its GPU lease (cuda_agent.gpu_lease), None when it took none. `precision_ratio` and `precision_k`
carry the precision audit's statistic and bound (eval/precision.py: fast_p at precision parity).
`compile_mode` names the torch.compile mode of the compile baseline the times were measured against
(the verdict's `timing.policy.compile_mode`; "default" for a timed verdict from before the option, when
no other mode existed); None when the verdict had no timing.
"""

from __future__ import annotations

import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

OK = "ok"


class RecordError(ValueError):
    """A record (or a line of records.jsonl) that does not have the agreed fields and types."""


@dataclass(frozen=True)
class EvalRecord:
    task_id: str
    level: int
    problem: int
    name: str
    episode: int
    status: str
    reward: int
    candidate_ms: float | None = None
    eager_ms: float | None = None
    compile_ms: float | None = None
    speedup_vs_eager: float | None = None
    speedup_vs_compile: float | None = None
    reason: str = ""
    verdict_path: str | None = None
    # What the reward compared (optional; None when the verdict had no timing).
    speedup_vs_eager_low: float | None = None
    speedup_vs_compile_low: float | None = None
    eager_threshold: float | None = None
    compile_threshold: float | None = None
    # Seconds the judgment waited for its GPU (cuda_agent.gpu_lease); None when it held no lease.
    gpu_wait_s: float | None = None
    # The precision audit (judge/trusted/precision.py): the candidate's largest error statistic in units of
    # what an honest kernel in the task's precision can be off by (checks.precision_error_ratio), and the
    # bound k it was held to (from checks.precision_audit; None when the audit was off). None: not measured.
    precision_ratio: float | None = None
    precision_k: float | None = None
    # The torch.compile mode of the compile baseline (judge/trusted/compile_modes.py); None: not timed.
    compile_mode: str | None = None

    def __post_init__(self) -> None:
        _check(self)

    @property
    def passed(self) -> bool:
        """Correct: the judge's status is ok (verified, and timed when timing ran)."""
        return self.status == OK

    @classmethod
    def from_verdict(
        cls,
        verdict: Mapping[str, Any] | Any,
        *,
        task_id: str,
        level: int,
        problem: int,
        name: str,
        episode: int,
        verdict_path: str | None = None,
        gpu_wait_s: float | None = None,
    ) -> EvalRecord:
        """Build the record from a Verdict's `to_dict()` (a Verdict object is accepted too).

        Times are copied whenever the timing stage reported them; speedups only when the status is ok,
        since a failed kernel's speedup is no speedup (metrics count it as falling back to eager).
        """
        data = verdict.to_dict() if hasattr(verdict, "to_dict") else verdict
        if not isinstance(data, Mapping):
            raise RecordError(f"a verdict must be a dict (Verdict.to_dict()), got {type(data).__name__}")
        for key in ("status", "reward"):
            if key not in data:
                raise RecordError(f"verdict for {task_id} has no {key!r} field (is it a Verdict.to_dict()?)")
        status = data["status"]
        status = getattr(status, "value", status)  # a Status enum left in a hand-made dict
        timing = data.get("timing") or {}
        if not isinstance(timing, Mapping):
            raise RecordError(f"verdict for {task_id}: 'timing' must be an object or null")
        ok = status == OK
        checks = data.get("checks") if isinstance(data.get("checks"), Mapping) else {}

        def timed(key: str, only_ok: bool = False) -> float | None:
            value = timing.get(key)
            if value is None or (only_ok and not ok):
                return None
            return float(value)

        return cls(
            task_id=task_id,
            level=level,
            problem=problem,
            name=name,
            episode=episode,
            status=str(status),
            reward=data["reward"],
            candidate_ms=timed("candidate_ms"),
            eager_ms=timed("eager_ms"),
            compile_ms=timed("compile_ms"),
            speedup_vs_eager=timed("speedup_vs_eager", only_ok=True),
            speedup_vs_compile=timed("speedup_vs_compile", only_ok=True),
            reason=str(data.get("reason", "")),
            verdict_path=verdict_path,
            speedup_vs_eager_low=timed("speedup_vs_eager_low", only_ok=True),
            speedup_vs_compile_low=timed("speedup_vs_compile_low", only_ok=True),
            eager_threshold=timed("eager_threshold"),
            compile_threshold=timed("compile_threshold"),
            gpu_wait_s=gpu_wait_s,
            precision_ratio=_number(checks.get("precision_error_ratio")),
            precision_k=_audit_k(checks.get("precision_audit")),
            compile_mode=_compile_mode(timing),
        )

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvalRecord:
        """The inverse of `to_dict`. Unknown keys are ignored (newer writers may add fields); a missing
        required key or a wrong type is a RecordError naming it."""
        if not isinstance(data, Mapping):
            raise RecordError(f"a record must be a JSON object, got {type(data).__name__}")
        known = {f.name for f in fields(cls)}
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise RecordError(f"record lacks {', '.join(missing)}")
        values = {k: v for k, v in data.items() if k in known}
        if "compile_mode" not in data and data.get("compile_ms") is not None:
            values["compile_mode"] = "default"  # timed before the option: the only mode there was
        return cls(**values)


_REQUIRED = ("task_id", "level", "problem", "name", "episode", "status", "reward")
_FLOATS = (
    "candidate_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile",
    "speedup_vs_eager_low", "speedup_vs_compile_low", "eager_threshold", "compile_threshold", "gpu_wait_s",
    "precision_ratio", "precision_k",
)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value) \
        and value >= 0 else None  # fmt: skip


def _compile_mode(timing: Mapping[str, Any]) -> str | None:
    """The compile baseline's mode from a verdict's timing: its policy's, or "default" for a verdict made
    before the judge had the option (the only mode then); None without timing."""
    if not timing:
        return None
    policy = timing.get("policy")
    mode = policy.get("compile_mode") if isinstance(policy, Mapping) else None
    return str(mode) if mode else "default"


def _audit_k(audit: Any) -> float | None:
    """k from the verdict's `checks.precision_audit` ("float64 (promoted), k = 3"); None when it was off."""
    match = re.search(r"\bk = ([0-9.]+)", audit) if isinstance(audit, str) else None
    return float(match.group(1)) if match else None


def _check(record: EvalRecord) -> None:
    """Types and ranges, so that a bad row fails where it is made, not deep inside a metric."""
    where = f"record {record.task_id!r} episode {record.episode!r}"
    if not isinstance(record.task_id, str) or not record.task_id:
        raise RecordError(f"{where}: task_id must be a non-empty string")
    for key in ("level", "problem", "episode", "reward"):
        value = getattr(record, key)
        if not isinstance(value, int) or isinstance(value, bool):
            raise RecordError(f"{where}: {key} must be an integer, got {value!r}")
    if record.episode < 0:
        raise RecordError(f"{where}: episode must be >= 0")
    if not -1 <= record.reward <= 3:
        raise RecordError(f"{where}: reward must be in -1..3, got {record.reward}")
    for key in ("name", "status", "reason"):
        if not isinstance(getattr(record, key), str):
            raise RecordError(f"{where}: {key} must be a string")
    if not record.status:
        raise RecordError(f"{where}: status must not be empty")
    if record.verdict_path is not None and not isinstance(record.verdict_path, str):
        raise RecordError(f"{where}: verdict_path must be a string or null")
    if record.compile_mode is not None and not isinstance(record.compile_mode, str):
        raise RecordError(f"{where}: compile_mode must be a string or null")
    for key in _FLOATS:
        value = getattr(record, key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise RecordError(f"{where}: {key} must be a number or null, got {value!r}")
        if not math.isfinite(value) or value < 0:
            raise RecordError(f"{where}: {key} must be finite and >= 0, got {value!r}")
        if value == 0 and (key.startswith("speedup") or key.endswith("threshold")):
            raise RecordError(f"{where}: {key} must be > 0, got 0")
        object.__setattr__(record, key, float(value))
    for key in ("speedup_vs_eager", "speedup_vs_compile"):
        if getattr(record, key) is not None and not record.passed:
            raise RecordError(f"{where}: {key} is set but status is {record.status!r} (speedups only when ok)")


# ----------------------------------------------------------------------------------------------- JSONL


def read_records(path: Path) -> list[EvalRecord]:
    """Every record of a records.jsonl, in file order. A torn last line (a crash mid-write) is skipped
    with a warning; any other bad line raises RecordError with its line number. A missing file is []."""
    path = Path(path)
    if not path.exists():
        return []
    text = path.read_text(encoding="utf-8", errors="replace")
    lines = text.split("\n")
    # After split, a file that ends in "\n" has a final empty string; one that does not ends torn-or-not.
    records: list[EvalRecord] = []
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            records.append(EvalRecord.from_dict(json.loads(line)))
        except (json.JSONDecodeError, RecordError, TypeError) as error:
            if number == last and not text.endswith("\n"):
                warnings.warn(
                    f"{path}:{number + 1}: skipping a torn last line ({len(line)} bytes, {error}); "
                    "the run was probably killed while writing it", stacklevel=2,
                )
                continue
            raise RecordError(f"{path}:{number + 1}: not a valid record: {error}") from error
    return records


def write_records(path: Path, records: Iterable[EvalRecord]) -> Path:
    """Replace the file with these records, atomically (a temporary file renamed over it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(_line(record))
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    return path


def append_record(path: Path, record: EvalRecord) -> None:
    """Append one record and flush it to disk, first cutting off a torn last line a crash left."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    drop_torn_tail(path)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(_line(record))
        handle.flush()
        os.fsync(handle.fileno())


def drop_torn_tail(path: Path) -> bool:
    """Truncate a file that does not end in a newline back to its last complete line (warning what was
    cut). Returns whether anything was cut."""
    path = Path(path)
    if not path.exists() or path.stat().st_size == 0:
        return False
    with path.open("rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return False
        keep = data.rfind(b"\n") + 1
        handle.truncate(keep)
    warnings.warn(f"{path}: cut a torn last line ({len(data) - keep} bytes) before appending", stacklevel=2)
    return True


def _line(record: EvalRecord) -> str:
    if not isinstance(record, EvalRecord):
        raise RecordError(f"expected an EvalRecord, got {type(record).__name__}")
    return json.dumps(record.to_dict(), sort_keys=True, allow_nan=False) + "\n"
