"""Bash, BashOutput, KillBash and the sandbox they run in.

Timing-based checks use short sleeps (about a second) so that a process that should have been killed
would visibly have done its work by the time the test looks.
"""

from __future__ import annotations

import os
import threading
import time
import uuid
from pathlib import Path

import pytest
from agent_helpers import Tools, needs_bwrap

from cuda_agent.agent.tools import ERROR, OK, SandboxPolicy, ToolBox, ToolContext, build_sandbox
from cuda_agent.agent.tools.processes import MAX_BACKGROUND_SHELLS
from cuda_agent.agent.tools.sandbox import _unshare_works

PROBE_NETWORK = (
    "python3 -c \"import socket; s = socket.socket(); s.settimeout(2); "
    "s.connect(('1.1.1.1', 53))\" 2>&1 | tail -1"
)


@pytest.fixture(params=["none", pytest.param("bwrap", marks=needs_bwrap)])
def any_tools(request, make_tools) -> Tools:
    """The same behaviour must hold with and without bubblewrap."""
    return make_tools(request.param)


def test_output_and_exit_codes(any_tools: Tools) -> None:
    ok = any_tools.call("Bash", command="echo out; echo err >&2")
    assert ok.status == OK and ok.content == "out\nerr" and ok.meta == {"exit_code": 0, "timed_out": False}
    failed = any_tools.call("Bash", command="echo nope; exit 3")
    assert failed.status == OK and failed.content == "nope\n[exit code 3]" and failed.meta["exit_code"] == 3
    quiet = any_tools.call("Bash", command="true")
    assert quiet.content == "(no output)"
    assert any_tools.call("Bash", command="   ").status == ERROR


def test_commands_start_in_the_workspace_and_write_there(any_tools: Tools) -> None:
    result = any_tools.call("Bash", command="pwd; echo hello > kernels/from_bash.txt")
    assert result.content == any_tools.ws.display_root
    assert (any_tools.root / "kernels" / "from_bash.txt").read_text() == "hello\n"


def test_timeout_kills_the_whole_process_group(any_tools: Tools) -> None:
    start = time.monotonic()
    result = any_tools.call("Bash", command="(sleep 1; touch late.txt) & sleep 30", timeout=400)
    assert time.monotonic() - start < 10
    assert result.status == ERROR and result.meta["timed_out"] is True and result.meta["exit_code"] is None
    assert "[timed out after 0.4 s (the requested timeout)" in result.content
    time.sleep(1.5)
    assert not (any_tools.root / "late.txt").exists(), "a child of the timed-out command survived"


def test_processes_left_behind_by_a_finished_command_are_killed(any_tools: Tools) -> None:
    result = any_tools.call("Bash", command="(sleep 1; touch straggler.txt) & echo started")
    assert result.content == "started"
    time.sleep(1.5)
    assert not (any_tools.root / "straggler.txt").exists()


def test_the_episode_budget_and_the_maximum_cap_the_timeout(make_tools) -> None:
    capped = make_tools(max_timeout_s=0.3)
    result = capped.call("Bash", command="sleep 5", timeout=600000)
    assert "(the maximum timeout)" in result.content
    late = make_tools(time_left=lambda: 0.2)
    result = late.call("Bash", command="sleep 5")
    assert "(the episode's remaining time)" in result.content and result.meta["timed_out"]


def test_cancelling_the_run_kills_a_running_command(any_tools: Tools) -> None:
    threading.Timer(0.3, any_tools.box.context.cancel.set).start()
    start = time.monotonic()
    result = any_tools.call("Bash", command="echo begun; sleep 30")
    assert time.monotonic() - start < 5
    assert result.status == ERROR and result.meta["cancelled"] is True and result.meta["timed_out"] is False
    assert result.content.startswith("begun\n[stopped: the run was cancelled")


def test_long_output_is_cut_in_the_middle_with_a_note(make_tools) -> None:
    tools = make_tools(max_output_chars=1000)
    result = tools.call("Bash", command="seq 1 100000")
    assert result.content.startswith("1\n2\n3\n") and result.content.rstrip().endswith("100000")
    assert "output truncated:" in result.content and "bytes cut from the middle" in result.content
    assert result.meta["truncated_chars"] > 500_000
    assert len(result.content) < 1400


def test_background_shell_output_status_and_kill(any_tools: Tools) -> None:
    started = any_tools.call("Bash", command="for i in 1 2 3; do echo tick $i; sleep 0.3; done; echo done",
                             run_in_background=True)  # fmt: skip
    assert started.meta == {"shell_id": "bash_1"} and "bash_1" in started.content
    time.sleep(0.15)
    first = any_tools.call("BashOutput", bash_id="bash_1")
    assert first.content.startswith("[shell bash_1: running]") and "tick 1" in first.content
    time.sleep(1.2)
    rest = any_tools.call("BashOutput", bash_id="bash_1")
    assert rest.content.startswith("[shell bash_1: exited with code 0]")
    assert "tick 1" not in rest.content and "tick 3" in rest.content and "done" in rest.content
    assert "(no new output)" in any_tools.call("BashOutput", bash_id="bash_1").content
    stopped = any_tools.call("KillBash", shell_id="bash_1")
    assert "already stopped (exited with code 0)" in stopped.content

    any_tools.call("Bash", command="sleep 30", run_in_background=True)
    killed = any_tools.call("KillBash", shell_id="bash_2")
    assert killed.content == "Killed shell bash_2." and killed.meta == {"shell_status": "killed"}
    assert "[shell bash_2: killed]" in any_tools.call("BashOutput", bash_id="bash_2").content


def test_background_filter_and_unknown_ids(tools: Tools) -> None:
    tools.call("Bash", command="printf 'keep 1\\ndrop\\nkeep 2\\n'", run_in_background=True)
    time.sleep(0.5)
    filtered = tools.call("BashOutput", bash_id="bash_1", filter="^keep")
    assert filtered.content.splitlines()[1:] == ["keep 1", "keep 2"]
    bad = tools.call("BashOutput", bash_id="bash_1", filter="(")
    assert bad.status == ERROR and "Invalid filter" in bad.content
    unknown = tools.call("BashOutput", bash_id="bash_9")
    assert unknown.status == ERROR and "known shells: bash_1" in unknown.content
    assert tools.call("KillBash", shell_id="nope").status == ERROR


def test_background_shells_are_limited_and_all_stopped_at_the_end(workspace: Path) -> None:
    sandbox = build_sandbox(workspace, SandboxPolicy(isolation="none"))
    box = ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox))
    marker = workspace / "survivor.txt"
    for _ in range(MAX_BACKGROUND_SHELLS):
        box.execute("Bash", {"command": f"sleep 1; touch {marker}", "run_in_background": True})
    refused = box.execute("Bash", {"command": "true", "run_in_background": True})
    assert refused.status == ERROR and "already running" in refused.content
    box.close()
    time.sleep(1.5)
    assert not marker.exists(), "a background shell outlived the episode"


def test_secrets_are_not_passed_to_commands(workspace: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-should-not-leak")
    monkeypatch.setenv("HF_TOKEN", "hf-should-not-leak")
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    sandbox = build_sandbox(workspace, SandboxPolicy(isolation="none"))
    box = ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox))
    env = box.execute("Bash", {"command": "env"}).content
    box.close()
    assert "should-not-leak" not in env
    assert "HARMLESS_SETTING=visible" in env
    assert f"CUDA_AGENT_CACHE={sandbox.workspace.display_root}/.cache/cuda-agent" in env


def test_resource_limits_apply_to_commands(workspace: Path) -> None:
    policy = SandboxPolicy(isolation="none", cpu_seconds=77, open_files=256, file_size_mb=1)
    sandbox = build_sandbox(workspace, policy)
    box = ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox))
    limits = box.execute("Bash", {"command": "ulimit -t; ulimit -n; ulimit -c"}).content
    assert limits.splitlines() == ["77", "256", "0"]
    big = box.execute("Bash", {"command": "head -c 3000000 /dev/zero > big.bin"})
    box.close()
    assert big.meta["exit_code"] != 0
    assert (workspace / "big.bin").stat().st_size == 1 << 20
    assert "cpu=77s" in sandbox.protections["rlimits"] and "fsize=1MiB" in sandbox.protections["rlimits"]


def test_without_isolation_the_report_says_what_is_missing(workspace: Path) -> None:
    sandbox = build_sandbox(workspace, SandboxPolicy(isolation="none"))
    assert sandbox.mechanism == "none"
    assert sandbox.protections["network"].startswith("NOT isolated")
    assert sandbox.protections["filesystem"].startswith("NOT confined")
    assert sandbox.workspace.display_root == str(workspace.resolve())
    with pytest.raises(ValueError, match="isolation must be one of"):
        SandboxPolicy(isolation="docker")


@needs_bwrap
def test_bwrap_confines_files_network_and_protected_paths(make_tools) -> None:
    tools = make_tools("bwrap")
    assert tools.ws.display_root == "/workspace"
    assert "bwrap" in tools.box.context.sandbox.protections["network"]
    network = tools.call("Bash", command=PROBE_NETWORK)
    assert "Network is unreachable" in network.content
    host_files = [f"/usr/cuda-agent-test-{uuid.uuid4().hex}", f"{Path.home()}/cuda-agent-test-{uuid.uuid4().hex}"]
    outside = tools.call("Bash", command=f"touch {' '.join(host_files)} 2>&1")
    assert outside.content.count("Read-only file system") == 2
    assert not any(os.path.exists(f) for f in host_files)
    home = tools.call("Bash", command="touch ~/.cache-test && echo $HOME")
    assert home.content == "/workspace/.cache/home" and (tools.root / ".cache/home/.cache-test").exists()
    protected = tools.call("Bash", command="echo x >> model.py; rm -f binding.cpp; touch utils/new.py; ls")
    assert protected.content.count("Read-only file system") == 2 or "Device or resource busy" in protected.content
    assert (tools.root / "model.py").read_text().startswith("import torch")
    assert (tools.root / "binding.cpp").exists() and not (tools.root / "utils" / "new.py").exists()
    name = f"cuda-agent-private-{uuid.uuid4().hex}"
    private = tools.call("Bash", command=f"echo hi > /tmp/{name} && cat /tmp/{name}")
    assert private.content == "hi" and not Path(f"/tmp/{name}").exists()


@needs_bwrap
def test_bwrap_pid_namespace_hides_host_processes(make_tools) -> None:
    tools = make_tools("bwrap")
    result = tools.call("Bash", command="ls /proc | grep -c '^[0-9]'")
    assert int(result.content) < 10


@pytest.mark.skipif(not _unshare_works(), reason="`unshare --net` does not work here")
def test_unshare_isolates_the_network_without_bwrap(make_tools) -> None:
    tools = make_tools("unshare")
    assert tools.box.context.sandbox.mechanism == "unshare"
    result = tools.call("Bash", command=PROBE_NETWORK)
    assert "Network is unreachable" in result.content
    assert tools.call("Bash", command="pwd").content == str(tools.root)
