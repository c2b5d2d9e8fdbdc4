"""Helpers shared by the agent's tests (imported by name: pytest puts this folder on sys.path)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cuda_agent.agent.tools import ToolBox, ToolResult
from cuda_agent.agent.tools.sandbox import _bwrap_works


def make_workspace(root: Path) -> Path:
    """The parts of a CUDA-Agent workspace the tools care about (protected files included)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "model.py").write_text("import torch\n\nclass Model:\n    pass\n")
    (root / "model_new.py").write_text("class ModelNew:\n    pass\n")
    (root / "binding.cpp").write_text("// fixed\n")
    (root / "binding_registry.h").write_text("// fixed\n")
    (root / "SKILL.md").write_text("# Skill\n")
    (root / "utils").mkdir(exist_ok=True)
    (root / "utils" / "compile.sh").write_text("echo compiling\n")
    (root / "kernels").mkdir(exist_ok=True)
    return root


class Tools:
    """A ToolBox plus a `call(name, **args)` shortcut that sends arguments as JSON, like a model."""

    def __init__(self, box: ToolBox) -> None:
        self.box = box
        self.ws = box.context.workspace
        self.root = self.ws.root

    def call(self, name: str, **args: Any) -> ToolResult:
        return self.box.execute(name, json.dumps(args))


needs_bwrap = pytest.mark.skipif(not _bwrap_works(), reason="bubblewrap is not installed or cannot make namespaces")
