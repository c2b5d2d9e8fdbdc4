"""Lay out a workspace for a task: SKILL.md, model.py, model_new.py, kernels/, binding files, utils/."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

from cuda_agent.task import Task
from cuda_agent.workspace.files import TEMPLATE_DIR

TASK_META_FILE = ".task.json"


def materialize(task: Task, dest: Path, *, overwrite: bool = False) -> Path:
    """Create the workspace for `task` in `dest` and return it.

    `model.py`, `binding.cpp`, `binding_registry.h`, `SKILL.md` and `utils/` are made read-only as a
    reminder; the judge never trusts them anyway and rebuilds from its own copies.
    """
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        if not overwrite:
            raise FileExistsError(f"{dest} is not empty; pass --force to replace it")
        _make_writable(dest)
        shutil.rmtree(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(TEMPLATE_DIR.iterdir()):
        if item.name == "__pycache__":
            continue
        target = dest / item.name
        if item.is_dir():
            shutil.copytree(item, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
        else:
            shutil.copyfile(item, target)
    (dest / "kernels").mkdir(exist_ok=True)
    (dest / "model.py").write_text(task.source, encoding="utf-8")
    (dest / TASK_META_FILE).write_text(json.dumps({"name": task.name}, indent=2) + "\n", encoding="utf-8")
    (dest / "utils" / "compile.sh").chmod(0o755)
    for name in ("model.py", "binding.cpp", "binding_registry.h", "SKILL.md"):
        _read_only(dest / name)
    for path in (dest / "utils").rglob("*"):
        if path.is_file():
            _read_only(path)
    return dest


def _read_only(path: Path) -> None:
    mode = path.stat().st_mode
    path.chmod(mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _make_writable(root: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode | stat.S_IWUSR)
