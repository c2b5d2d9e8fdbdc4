"""The workspace template's files and which of them are fixed infrastructure."""

from __future__ import annotations

from pathlib import Path

TEMPLATE_DIR = Path(__file__).parent / "template"

# Built from the judge's own copies; never taken from a submission.
INFRASTRUCTURE_FILES = ("binding.cpp", "binding_registry.h")

# Paths (relative to the workspace root) the agent must not change.
PROTECTED_PATHS = ("model.py", "binding.cpp", "binding_registry.h", "utils", "SKILL.md")


def template_path(name: str) -> Path:
    path = TEMPLATE_DIR / name
    if not path.exists():
        raise FileNotFoundError(f"workspace template file missing from the package: {name}")
    return path
