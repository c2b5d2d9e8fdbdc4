"""Fixtures for the agent's tests: a small workspace and tool boxes over it.

Only the model is ever faked (and only at its boundary, by a real HTTP server or a scripted client);
tools, sandbox and files are the real ones.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from agent_helpers import Tools, make_workspace

from cuda_agent.agent.tools import ToolBox, ToolContext, build_sandbox
from cuda_agent.agent.tools.sandbox import SandboxPolicy


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return make_workspace(tmp_path / "ws")


def _tools(workspace: Path, isolation: str, **ctx: Any) -> Tools:
    sandbox = build_sandbox(workspace, SandboxPolicy(isolation=isolation))
    box = ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox, **ctx))
    return Tools(box)


@pytest.fixture
def tools(workspace: Path):
    """Tools without a sandbox: the workspace is seen at its real path."""
    t = _tools(workspace, "none")
    yield t
    t.box.close()


@pytest.fixture
def make_tools(workspace: Path):
    made: list[Tools] = []

    def make(isolation: str = "none", **ctx: Any) -> Tools:
        t = _tools(workspace, isolation, **ctx)
        made.append(t)
        return t

    yield make
    for t in made:
        t.box.close()
