"""Scratch folders of rollouts and reward calls: made per episode, deleted when it has been judged."""

from __future__ import annotations

import shutil
from pathlib import Path


def remove_tree(root: Path) -> None:
    """Delete an episode folder; materialize() leaves the workspace's infrastructure read-only."""
    root = Path(root)
    if not root.exists():
        return
    for path in [root, *root.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(path.stat().st_mode | 0o700)
    shutil.rmtree(root, ignore_errors=True)
