"""`cuda-agent eval --submissions DIR`: judge existing submission folders (our layout) as one batch.

A submission folder holds `model_new.py` and `kernels/` (and usually `model.py`). Each is matched to
its task, in this order:
  1. `.task.json` naming `level` and `problem` (what `eval` bundles and `import kernelbench` write);
  2. its path: `level_1_problem_19...`, `level1/19_ReLU/`, `level1_19_ReLU`;
  3. with `--tasks KERNELBENCH_DIR`, its `model.py` equal to a benchmark file.
With `--tasks` the benchmark's file is the reference (the published kernel is judged against the
benchmark's problem, not a copy that came with it); without, the folder's own `model.py`. A folder
that cannot be matched is listed with the reason, never silently left out. Several folders for one
task are its episodes 0, 1, ... (best-of-K counts them).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.eval import bundle
from cuda_agent.eval.judges import Backend, leased
from cuda_agent.eval.kernelbench import BenchTask, benchmark_root, discover, find
from cuda_agent.eval.runner import Progress, RunBook, Unit
from cuda_agent.task import TaskError, load_task

MAX_DEPTH = 4
_LEVEL_PROBLEM = re.compile(r"level[_-]?(\d+)[_-]problem[_-]?(\d+)", re.IGNORECASE)
_LEVEL_DIR_PROBLEM = re.compile(r"(?:^|/)level(\d+)[/_](\d+)_([^/]+?)(?:/|$)", re.IGNORECASE)
_LEVEL_DIR = re.compile(r"(?:^|/)level[_-]?(\d+)(?:/|$)", re.IGNORECASE)
_PROBLEM_NAME = re.compile(r"^(\d+)_(.+)$")


@dataclass(frozen=True)
class Found:
    folder: Path
    task: BenchTask
    how: str  # how it was matched: meta, path, digest


def submission_folders(root: Path) -> list[Path]:
    """Folders under `root` (or `root` itself) holding model_new.py, at most MAX_DEPTH levels down."""
    root = Path(root)
    if (root / "model_new.py").is_file():
        return [root]
    out: list[Path] = []

    def walk(folder: Path, depth: int) -> None:
        for child in sorted(folder.iterdir()):
            if not child.is_dir() or child.name.startswith((".", "__")):
                continue
            if (child / "model_new.py").is_file():
                out.append(child)
            elif depth < MAX_DEPTH:
                walk(child, depth + 1)

    walk(root, 1)
    return out


def match(folders: list[Path], root: Path, tasks_dir: Path | None,
          problems: list[tuple[str, str]]) -> list[Found]:  # fmt: skip
    """Each folder's task (see the module docstring); the unmatched go to `problems` with the reason."""
    by_digest: dict[str, BenchTask] = {}
    if tasks_dir is not None:
        benchmark_root(tasks_dir)  # a wrong --tasks is an error, not "nothing matched"
        for bench in discover(tasks_dir, problems=[]):
            by_digest.setdefault(bench.task.digest, bench)
    found: list[Found] = []
    for folder in folders:
        rel = folder.relative_to(root).as_posix() if folder != root else folder.name
        try:
            found.append(_match_one(folder, rel, tasks_dir, by_digest))
        except TaskError as exc:
            problems.append((str(folder), str(exc)))
    return found


def _match_one(folder: Path, rel: str, tasks_dir: Path | None, by_digest: dict[str, BenchTask]) -> Found:
    own = folder / "model.py"
    meta: dict[str, Any] = {}
    if (folder / bundle.TASK_META).is_file():
        try:
            meta = bundle.read_json(folder / bundle.TASK_META)
        except ValueError as exc:
            raise TaskError(f"{bundle.TASK_META} is not JSON: {exc}") from exc
    level = problem = None
    name = None
    how = ""
    if not isinstance(meta, dict):
        raise TaskError(f"{bundle.TASK_META} must hold a JSON object")
    if _count(meta.get("level")) and _count(meta.get("problem"), zero=True):
        level, problem, name, how = meta["level"], meta["problem"], meta.get("name"), "meta"
    elif m := _LEVEL_PROBLEM.search(rel):
        level, problem, how = int(m.group(1)), int(m.group(2)), "path"
    elif m := _LEVEL_DIR_PROBLEM.search(rel + "/"):
        level, problem, name, how = int(m.group(1)), int(m.group(2)), m.group(3), "path"
    elif (m := _LEVEL_DIR.search(rel)) and (p := _PROBLEM_NAME.match(folder.name)):
        level, problem, name, how = int(m.group(1)), int(p.group(1)), p.group(2), "path"
    if tasks_dir is not None:
        if level is not None and problem is not None:
            bench = find(tasks_dir, level, problem)
            if bench is None:
                raise TaskError(f"matched to level {level} problem {problem} ({how}), which {tasks_dir} does not have")
            return Found(folder, bench, how)
        if own.is_file():
            try:
                digest = load_task(own).digest
            except TaskError as exc:
                raise TaskError(f"cannot tell its task: no level/problem in its name or {bundle.TASK_META}, "
                                f"and its model.py does not load ({exc})") from exc  # fmt: skip
            if digest in by_digest:
                return Found(folder, by_digest[digest], "digest")
        raise TaskError(f"cannot tell its task: no level/problem in its path or {bundle.TASK_META}, and no "
                        f"model.py equal to a file of {tasks_dir}")  # fmt: skip
    if not own.is_file():
        raise TaskError("no model.py to judge against: pass --tasks KERNELBENCH_DIR to use the benchmark's")
    if level is None:
        if m := _LEVEL_DIR.search(rel):
            level = int(m.group(1))
        else:
            raise TaskError("cannot tell its level: put it under a levelN/ folder, name it level_N_problem_M, "
                            f"or give it a {bundle.TASK_META} with level and problem")  # fmt: skip
    if problem is None:  # a level folder of named submissions: problem 0, told apart by name
        problem = 0
    name = name or (meta.get("name") if isinstance(meta.get("name"), str) else None) or folder.name
    task = load_task(own, name=f"level{level}_{problem}_{name}")
    return Found(folder, BenchTask(level, problem, str(name), own, task), how or "path")


def _count(value: Any, zero: bool = False) -> bool:
    """A level (>= 1) or problem number (>= 0) as .task.json must give it: a plain integer."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= (0 if zero else 1)


def units_of(found: list[Found]) -> list[tuple[Unit, Path]]:
    """One unit per folder; folders of one task are its episodes 0, 1, ... in path order."""
    counts: dict[str, int] = {}
    out: list[tuple[Unit, Path]] = []
    for item in sorted(found, key=lambda f: (f.task.level, f.task.problem, f.task.task_id, str(f.folder))):
        k = counts.get(item.task.task_id, 0)
        counts[item.task.task_id] = k + 1
        out.append((Unit(item.task, k), item.folder))
    return out


def judge_submissions(run_dir: Path, run_id: str, units: list[tuple[Unit, Path]], backend: Backend,
                      say: Callable[[str], None] | None = None) -> dict[str, str]:  # fmt: skip
    """Judge every unit not yet recorded as one batch; returns {key: why} for those left unrecorded."""
    book = RunBook(run_dir)
    todo = [(u, f) for u, f in units if not book.has(u.key)]
    progress = Progress(len(units), len(units) - len(todo))
    say = say or progress.line
    say(f"{len(units)} submission(s), {len(units) - len(todo)} already recorded, {len(todo)} to judge; "
        f"judge: {backend.name}")  # fmt: skip
    unfinished: dict[str, str] = {}
    ready = []
    for unit, folder in todo:
        saved = book.saved_verdict(unit)
        if saved is not None and saved.get("verdict"):
            progress.finished(unit.key, book.finalize(unit, saved, folder))
        else:
            ready.append((unit, folder))
    items = [(folder, unit.task.task, unit.judgment_key(run_id)) for unit, folder in ready]
    batch = leased(backend).judge_many(items) if items else ()  # nothing to judge: no judge started
    for index, outcome in batch:  # the batch holds its GPU alone (judges.LeasedBackend)
        unit, folder = ready[index]
        if outcome.get("verdict"):
            progress.finished(unit.key, book.finalize(unit, outcome, folder))
        else:
            unfinished[unit.key] = f"{outcome.get('status')}: {outcome.get('reason', '')}"
            progress.finished(unit.key, None, unfinished[unit.key])
    return unfinished
