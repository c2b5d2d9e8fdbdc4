"""The Bash tool tells the model the sandbox that is actually active: a private /tmp only under bubblewrap."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from agent_helpers import Tools, needs_bwrap

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.prompts import system_prompt


def bash_description(tools: Tools) -> str:
    [schema] = [s for s in tools.box.schemas() if s["function"]["name"] == "Bash"]
    return schema["function"]["description"]


def test_without_bubblewrap_the_tool_says_tmp_is_the_hosts(make_tools) -> None:
    tools = make_tools("none")
    text = bash_description(tools)
    assert "private /tmp" not in text and "shared /tmp" in text and "NOT confined" in text
    marker = Path("/tmp") / f"cuda-agent-probe-{uuid.uuid4().hex}"
    try:  # and that is the truth: a file written to /tmp lands on the host
        assert tools.call("Bash", command=f"echo x > {marker}").meta["exit_code"] == 0
        assert marker.read_text() == "x\n"
    finally:
        marker.unlink(missing_ok=True)
    prompt = system_prompt(tools.root, str(tools.root), AgentConfig(), tools.box.context.sandbox.protections)
    assert "does NOT confine files" in prompt and "/tmp is private" not in prompt


@needs_bwrap
def test_under_bubblewrap_the_tool_promises_a_private_tmp_and_keeps_it(make_tools) -> None:
    tools = make_tools("bwrap")
    text = bash_description(tools)
    assert "private /tmp" in text and "NOT confined" not in text
    marker = Path("/tmp") / f"cuda-agent-probe-{uuid.uuid4().hex}"
    assert tools.call("Bash", command=f"echo x > {marker} && cat {marker}").content == "x"
    assert not marker.exists()


@pytest.mark.parametrize("isolation", ["none", pytest.param("bwrap", marks=needs_bwrap)])
def test_no_placeholder_leaks_into_any_description(make_tools, isolation: str) -> None:
    for schema in make_tools(isolation).box.schemas():
        assert "{sandbox}" not in schema["function"]["description"], schema["function"]["name"]
