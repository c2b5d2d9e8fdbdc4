"""Judge collected episodes once per distinct final submission, and give each episode its real verdict.

Collection at scale produces many episodes that end in the same files (the same kernel reached by
different conversations). Judging each of them would time the same kernel again and again; judging
the submission once and giving every episode that ended in it that verdict keeps each reward a real
verdict on exactly those bytes. Episodes are collected with `solve --no-judge`; `judge_distinct`
groups the finished ones by task and by the content of the final workspace (`rft_data.kernel_digest`:
`model_new.py` and `kernels/`), judges one workspace per group with the judge passed in (the agent's
`LocalJudge`, or a remote one), and rewrites each trajectory file with the verdict, the reward and
where the verdict came from (`judge.shared`: the episode judged and the group's digest).

An episode already judged is left as it is; one whose workspace is gone cannot be matched and is
reported, never given a guess.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.train.rft_data import kernel_digest, trajectory_files

UNJUDGED = ("skipped",)


@dataclass
class Group:
    """Episodes of one task that ended in the same files, and the verdict they share."""

    task: str
    digest: str
    files: list[Path] = field(default_factory=list)
    judged: Path | None = None
    outcome: dict[str, Any] | None = None
    judge_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        outcome = self.outcome or {}
        return {"task": self.task, "digest": self.digest, "episodes": len(self.files), "status": outcome.get("status"),
                "reward": outcome.get("reward"), "judged": str(self.judged), "judge_s": round(self.judge_s, 2)}  # fmt: skip


@dataclass
class Report:
    groups: list[Group] = field(default_factory=list)
    skipped: dict[str, str] = field(default_factory=dict)  # file -> why it was not judged here

    def to_dict(self) -> dict[str, Any]:
        return {"judgments": len(self.groups), "episodes": sum(len(g.files) for g in self.groups),
                "groups": [g.to_dict() for g in self.groups], "skipped": self.skipped}  # fmt: skip

    def table(self) -> str:
        head = ("task", "digest", "episodes", "status", "reward", "judge_s")
        rows = [(g.task, g.digest, str(len(g.files)), str((g.outcome or {}).get("status")),
                 str((g.outcome or {}).get("reward")), f"{g.judge_s:.1f}") for g in self.groups]  # fmt: skip
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(head)]
        lines = ["  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True))]
        lines.append("  ".join("-" * w for w in widths))
        lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
        lines.append(f"{len(self.groups)} judgment(s) for {sum(len(g.files) for g in self.groups)} episode(s)"
                     + (f"; {len(self.skipped)} not judged here" if self.skipped else ""))  # fmt: skip
        return "\n".join(lines)


def group_episodes(paths: Iterable[Path | str], report: Report) -> list[Group]:
    """Finished, unjudged episodes grouped by (task digest, final files); the rest go to `report.skipped`.
    The reference judged against is the workspace's `model.py`, so it must still be the episode's task."""
    from cuda_agent.agent import load_trajectory
    from cuda_agent.task import load_task

    groups: dict[tuple[str, str], Group] = {}
    for path in trajectory_files(paths):
        try:
            record = load_trajectory(path)
        except (ValueError, OSError) as e:
            report.skipped[str(path)] = f"unreadable: {e}"
            continue
        if record.get("state") != "finished":
            report.skipped[str(path)] = "the episode did not finish"
            continue
        if (record.get("judge") or {}).get("status") not in UNJUDGED:
            report.skipped[str(path)] = f"already judged ({(record.get('judge') or {}).get('status')})"
            continue
        workspace = Path(str((record.get("workspace") or {}).get("path") or ""))
        if not (workspace / "model_new.py").is_file():
            report.skipped[str(path)] = f"no final workspace at {workspace} to judge"
            continue
        task = record.get("task") or {}
        if task.get("digest") and load_task(workspace / "model.py", name="check").digest != task["digest"]:
            report.skipped[str(path)] = "the workspace's model.py is not the episode's task (changed since)"
            continue
        digest = kernel_digest(record)
        key = (str(task.get("digest") or task.get("name")), digest)
        group = groups.setdefault(key, Group(task=str(task.get("name") or "?"), digest=digest))
        group.files.append(path)
    return list(groups.values())


def judge_distinct(paths: Iterable[Path | str], judge: Callable[[Path, Any], Any],
                   progress: Callable[[str], None] | None = None) -> Report:  # fmt: skip
    """Judge one workspace per group with `judge(workspace, task) -> JudgeOutcome`, write every episode's
    verdict and reward into its trajectory file, and return the report of what was judged."""
    from cuda_agent.agent import load_trajectory
    from cuda_agent.task import load_task

    report = Report()
    report.groups = group_episodes(paths, report)
    for group in report.groups:
        first = load_trajectory(group.files[0])
        workspace = Path(first["workspace"]["path"])
        task = load_task(workspace / "model.py", name=group.task)
        start = time.monotonic()
        outcome = judge(workspace, task)
        group.judge_s = time.monotonic() - start
        group.judged, group.outcome = group.files[0], outcome.to_dict()
        if progress is not None:
            progress(f"judged {group.task} {group.digest}: {outcome.status} reward {outcome.reward} "
                     f"({group.judge_s:.1f} s) for {len(group.files)} episode(s)")  # fmt: skip
        for path in group.files:
            record = load_trajectory(path)
            shared = {"judged": str(group.judged), "digest": group.digest, "episodes": len(group.files)}
            record["judge"] = {**group.outcome, "shared": shared}
            record["reward"] = outcome.reward
            _replace(path, record)
    return report


def _replace(path: Path, record: dict[str, Any]) -> None:
    """Rewrite a trajectory file atomically, in the trajectory writer's canonical JSON."""
    from cuda_agent.agent.trajectory import dumps

    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(dumps(record) + "\n")
    os.replace(tmp, path)
