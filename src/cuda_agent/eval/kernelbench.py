"""A KernelBench checkout as a list of tasks: `levelN/<problem>_<Name>.py`, read as it is.

KernelBench is not a package, so the user points at a folder: the checkout's root (which holds
`KernelBench/level1/...`), the inner `KernelBench/` folder, or any folder laid out the same way (our
bundled `examples/kernelbench_mini/`). Each file's name gives the problem number and name
(`level1/19_ReLU.py` is level 1, problem 19, "ReLU") and its task id is `level1/19_ReLU`, the id every
record and report uses. The files are loaded with `load_task` (syntax and the three names), nothing
is executed here.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.task import Task, TaskError, load_task

LEVEL_DIR = re.compile(r"^level(\d+)$")
PROBLEM_FILE = re.compile(r"^(\d+)_(.+)\.py$")


@dataclass(frozen=True)
class BenchTask:
    """One benchmark problem: where it came from and the task loaded from it."""

    level: int
    problem: int
    name: str
    path: Path
    task: Task

    @property
    def task_id(self) -> str:
        return f"level{self.level}/{self.problem}_{self.name}"

    @property
    def slug(self) -> str:
        """A folder-safe name unique across levels (the episode's workspace and the task's name)."""
        return slug_of(self.level, self.problem, self.name)


def slug_of(level: int, problem: int, name: str) -> str:
    return f"level{level}_{problem}_{_safe(name)}"


def _safe(text: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text).strip(".") or "task"


def benchmark_root(path: Path) -> Path:
    """The folder holding `level1/`, `level2/`, ...: `path` itself or its `KernelBench/` child."""
    path = Path(path)
    if not path.is_dir():
        raise TaskError(f"{path} is not a folder; pass a KernelBench checkout (the folder holding level1/ ...)")
    for candidate in (path, path / "KernelBench"):
        if candidate.is_dir() and any(LEVEL_DIR.match(c.name) and c.is_dir() for c in candidate.iterdir()):
            return candidate
    raise TaskError(f"{path} holds no level1/, level2/ ... folders (nor does {path / 'KernelBench'}); "
                    "pass a KernelBench checkout or a folder laid out like one")  # fmt: skip


def available_levels(path: Path) -> list[int]:
    root = benchmark_root(path)
    return sorted(int(m.group(1)) for c in root.iterdir() if c.is_dir() and (m := LEVEL_DIR.match(c.name)))


def discover(
    path: Path,
    levels: list[int] | None = None,
    *,
    tasks_per_level: int | None = None,
    limit: int | None = None,
    problems: list[tuple[str, str]] | None = None,
) -> list[BenchTask]:
    """The tasks of `levels` (default: every level present), by level then problem number.

    `tasks_per_level` keeps the first N problems of each level, `limit` the first N overall. A file that
    cannot be loaded is appended to `problems` as (file, why) when given, else raises TaskError; a level
    asked for that does not exist is an error either way (a typo would otherwise evaluate nothing).
    """
    root = benchmark_root(path)
    present = available_levels(root)
    wanted = sorted(set(levels)) if levels else present
    missing = [n for n in wanted if n not in present]
    if missing:
        raise TaskError(f"{root} has no level{missing[0]}/ (levels present: {', '.join(map(str, present))})")
    out: list[BenchTask] = []
    for level in wanted:
        found: list[BenchTask] = []
        for file in sorted((root / f"level{level}").iterdir()):
            match = PROBLEM_FILE.match(file.name)
            if not match or not file.is_file():
                continue
            problem, name = int(match.group(1)), match.group(2)
            try:
                task = load_task(file, name=slug_of(level, problem, name))
            except TaskError as exc:
                if problems is None:
                    raise
                problems.append((str(file), str(exc)))
                continue
            found.append(BenchTask(level, problem, name, file, task))
        found.sort(key=lambda t: t.problem)
        out.extend(found[:tasks_per_level] if tasks_per_level else found)
    return out[:limit] if limit else out


def level_sizes(path: Path, levels: list[int] | None = None) -> dict[int, int]:
    """Problems per level in the whole benchmark (what "overall" weights by), counted from the files."""
    root = benchmark_root(path)
    sizes: dict[int, int] = {}
    for level in levels or available_levels(root):
        folder = root / f"level{level}"
        if folder.is_dir():
            sizes[level] = sum(1 for f in folder.iterdir() if f.is_file() and PROBLEM_FILE.match(f.name))
    return sizes


def find(path: Path, level: int, problem: int) -> BenchTask | None:
    """The task for (level, problem) in a benchmark folder, or None."""
    root = benchmark_root(path)
    folder = root / f"level{level}"
    if not folder.is_dir():
        return None
    for file in sorted(folder.iterdir()):
        match = PROBLEM_FILE.match(file.name)
        if match and int(match.group(1)) == problem and file.is_file():
            name = match.group(2)
            return BenchTask(level, problem, name, file, load_task(file, name=slug_of(level, problem, name)))
    return None


def parse_levels(text: str) -> list[int]:
    """`1,2,3` or `1-3` -> [1, 2, 3]."""
    levels: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                levels.extend(range(lo, hi + 1))
            else:
                levels.append(int(part))
        except ValueError as exc:
            raise ValueError(f"--levels: {part!r} is not a level number (e.g. 1,2,3 or 1-3)") from exc
    if not levels or any(n < 1 for n in levels):
        raise ValueError(f"--levels: {text!r} names no level (e.g. 1,2,3)")
    return sorted(set(levels))
