"""The workspace boundary every file tool goes through.

The model sees the workspace at `display_root` (``/workspace`` when Bash runs in a bubblewrap sandbox
that mounts it there; otherwise its real path), so trajectories do not depend on where a run happened to
put its folder. Paths it passes may be relative to the workspace or absolute under either root.

A path is refused when it leaves the workspace, lexically (``../x``) or through a symlink that resolves
outside it, and, for writes, when it names fixed infrastructure (`model.py`, `utils/`, ...) that the
judge replaces with its own copy anyway: editing those would only make the agent's own checks lie.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.agent.tools.base import ToolError, ToolRefused
from cuda_agent.workspace.files import PROTECTED_PATHS

DEFAULT_PROTECTED: tuple[str, ...] = tuple(PROTECTED_PATHS)  # the workspace module owns the list


@dataclass(frozen=True)
class Workspace:
    """A workspace folder, how the model sees it, and which relative paths it may not write."""

    root: Path
    display_root: str
    protected: tuple[str, ...] = DEFAULT_PROTECTED

    @classmethod
    def at(cls, root: Path | str, display_root: str | None = None,
           protected: Iterable[str] = DEFAULT_PROTECTED) -> Workspace:
        real = Path(os.path.realpath(root))
        return cls(root=real, display_root=display_root or str(real), protected=tuple(protected))

    # -- resolution -------------------------------------------------------------------------------

    def resolve(self, path: str, *, write: bool = False) -> Path:
        """The real path `path` names, after every check; raises ToolRefused with an actionable message."""
        if not isinstance(path, str) or not path.strip():
            raise ToolError("The path is empty; pass a file path inside the workspace, e.g. kernels/my_op.cu.")
        if "\x00" in path:
            raise ToolError("The path contains a NUL character.")
        lexical = self._lexical(path)
        real = Path(os.path.realpath(lexical))
        if not _within(real, self.root):
            raise ToolRefused(
                f"{path} is a symlink (or goes through one) that resolves to {real}, outside the workspace "
                f"{self.display_root}; tools may only access files inside the workspace."
            )
        if write:
            for candidate in (lexical, real):
                rel = self.relative(candidate)
                entry = self.protected_entry(rel)
                if entry is not None:
                    raise ToolRefused(self._protected_message(rel, entry))
        return real

    def _lexical(self, path: str) -> Path:
        text = os.path.expanduser(path) if path.startswith("~") else path
        display = self.display_root.rstrip("/") or "/"
        if os.path.isabs(text):
            norm = os.path.normpath(text)
            if norm == display or norm.startswith(display + "/"):
                norm = str(self.root) + norm[len(display):]
            candidate = Path(norm)
        else:
            candidate = Path(os.path.normpath(self.root / text))
        if not _within(candidate, self.root):
            raise ToolRefused(
                f"{path} is outside the workspace {self.display_root}; tools may only access files inside it "
                f"(use a path relative to the workspace, such as kernels/my_op.cu)."
            )
        return candidate

    def relative(self, path: Path) -> str:
        """`path` relative to the root, with '/' separators ('' for the root itself)."""
        rel = os.path.relpath(path, self.root)
        return "" if rel == "." else rel.replace(os.sep, "/")

    def display(self, path: Path) -> str:
        """How the model should see a real path inside the workspace."""
        rel = self.relative(path)
        base = self.display_root.rstrip("/")
        return f"{base}/{rel}" if rel else (base or "/")

    def protected_entry(self, rel: str) -> str | None:
        """The protected entry covering `rel` (a file itself or anything under a protected folder)."""
        for entry in self.protected:
            name = entry.strip("/")
            if name and (rel == name or rel.startswith(name + "/")):
                return entry
        return None

    def _protected_message(self, rel: str, entry: str) -> str:
        name = entry.strip("/")
        where = "it is" if rel == name else f"it is inside {name}/, which is"
        return (
            f"{rel} is protected: {where} fixed infrastructure of the workspace (the judge uses its own clean "
            "copy, so changes would not count). Put your code in model_new.py and kernels/ instead."
        )

    def protected_existing(self) -> list[Path]:
        """Protected paths that exist in this workspace (for read-only mounts in the sandbox)."""
        found = []
        for entry in self.protected:
            candidate = self.root / entry.strip("/")
            if candidate.exists() and not candidate.is_symlink():
                found.append(candidate)
        return found


def _within(path: Path, root: Path) -> bool:
    try:
        path.relative_to(root)
    except ValueError:
        return False
    return True
