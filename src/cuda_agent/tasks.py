"""Many tasks at once: from task files, folders of them and parquet files, each with a name of its own.

`task.py` loads one task; this module is what every command and library that takes "TASK..." arguments
uses (`solve`, `train grpo`, `train verl-data`), so they accept the same things and name tasks the same
way. Names are unique within one call (a repeated name gets -2, -3, ...), because each task's name is
the folder its episode writes to.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from cuda_agent.task import Task, TaskError, load_task

# Columns of a parquet file of tasks, in the order they are looked for.
NAME_COLUMNS = ("name", "task_name", "task_id", "op_name", "id")
SOURCE_COLUMNS = ("source", "model_py", "code", "pytorch_code", "model_code", "reference")


def collect_tasks(specs: list[str], problems: list[tuple[str, str]] | None = None) -> list[Task]:
    """Tasks from files, folders and parquet files, with unique names (a repeated name gets -2, -3...).

    With `problems` given, a task that cannot be loaded is appended there as (where, why) and skipped, so
    one broken file does not cost a whole batch; without it the first one raises `TaskError`.
    """
    tasks: list[Task] = []

    def load(where: str, source: str | Path, name: str | None = None) -> None:
        try:
            tasks.append(load_task(source, name=name))
        except TaskError as e:
            if problems is None:
                raise
            problems.append((where, str(e)))

    for spec in specs:
        path = Path(spec)
        try:
            if path.suffix == ".parquet":
                for where, source, name in read_parquet_rows(path):
                    load(where, source, name)
            elif path.is_dir() and not (path / "model.py").is_file():
                found = [c for c in sorted(path.iterdir()) if (c.suffix == ".py" and c.is_file())
                         or (c.is_dir() and (c / "model.py").is_file())]  # fmt: skip
                if not found:
                    raise TaskError(f"{path} holds no tasks (.py files or folders with model.py)")
                for c in found:
                    load(str(c), c)
            else:
                load(str(path), path)
        except (TaskError, OSError) as e:
            if problems is None:
                raise
            problems.append((str(path), str(e)))
    return unique_names(tasks)


def read_parquet_tasks(path: Path) -> list[Task]:
    """Every row of a parquet file of tasks, loaded (the first row that fails raises `TaskError`)."""
    return [load_task(source, name=name) for _, source, name in read_parquet_rows(path)]


def read_parquet_rows(path: Path) -> list[tuple[str, str, str]]:
    """(where, source, name) for each row of a parquet file of tasks."""
    try:
        import pyarrow.parquet as pq
    except ImportError as e:
        raise TaskError(f"reading {path} needs pyarrow: pip install 'cuda-agent[synth]'") from e
    table = pq.read_table(path)
    columns = table.column_names
    source_col = next((c for c in SOURCE_COLUMNS if c in columns), None)
    if source_col is None:
        raise TaskError(f"{path}: no task source column (one of {', '.join(SOURCE_COLUMNS)}); found {columns}")
    name_col = next((c for c in NAME_COLUMNS if c in columns), None)
    out = []
    for index, row in enumerate(table.to_pylist()):
        name = str(row[name_col]) if name_col and row.get(name_col) is not None else f"{path.stem}_{index}"
        out.append((f"{path} row {index}", str(row[source_col]), safe_name(name)))
    return out


def safe_name(name: str) -> str:
    """`name` as one folder name: characters other than letters, digits, '-', '_' and '.' become '_'."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name).strip(".") or "task"


def unique_names(tasks: list[Task]) -> list[Task]:
    """The tasks, renamed where needed so that no two share a name: the second `x` becomes `x-2`, the
    third `x-3`, skipping any suffix another task already carries (`x`, `x`, `x-2` -> `x`, `x-3`, `x-2`)."""
    taken = {task.name for task in tasks}
    seen: set[str] = set()
    out = []
    for task in tasks:
        if task.name not in seen:
            seen.add(task.name)
            out.append(task)
            continue
        count = 2
        while f"{task.name}-{count}" in taken:
            count += 1
        name = f"{task.name}-{count}"
        taken.add(name)
        seen.add(name)
        out.append(dataclasses.replace(task, name=name))
    return out
