"""The ReAct loop against a scripted model over HTTP: tool calls, malformed calls, every way to stop,
token accounting, and a trajectory that is on disk as the episode goes."""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest
from agent_helpers import make_workspace
from scripted_llm import Reply, ScriptedLLM, call, last_tool_results

from cuda_agent.agent.config import AgentConfig, ModelConfig
from cuda_agent.agent.llm import OpenAIClient
from cuda_agent.agent.loop import Agent, estimate_tokens
from cuda_agent.agent.tools import SandboxPolicy, ToolBox, ToolContext, build_sandbox
from cuda_agent.agent.trajectory import TrajectoryWriter, load_trajectory

FINAL = Reply(content="All done.")


class Run:
    """Run an Agent on a fresh workspace with a scripted model; keeps everything a test may inspect."""

    def __init__(self, tmp_path: Path, steps: list, *, clock=None, cancel=None, **settings: Any) -> None:
        self.root = make_workspace(tmp_path / "ws")
        self.path = tmp_path / "trajectory.jsonl"
        self.events: list[tuple[str, dict]] = []
        sandbox = build_sandbox(self.root, SandboxPolicy(isolation="none"))
        self.box = ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox))
        with ScriptedLLM(steps) as self.server:
            model = ModelConfig(name="scripted", base_url=self.server.url, max_retries=0, max_tokens=2000)
            self.config = AgentConfig(model=model, **settings)
            self.writer = TrajectoryWriter(self.path, {"task": {"name": "t"}})
            extra = {"clock": clock} if clock else {}
            self.agent = Agent(OpenAIClient(model), self.box, self.config, self.writer,
                               observer=lambda e, **d: self.events.append((e, d)), cancel=cancel, **extra)  # fmt: skip
            self.exit = self.agent.run("system prompt", "task prompt")
        self.box.close()
        self.record = load_trajectory(self.path)

    def tool_messages(self) -> list[dict]:
        return [m for m in self.record["messages"] if m["role"] == "tool"]


def test_parallel_tool_calls_run_in_order_and_answer_each_id(tmp_path: Path) -> None:
    run = Run(tmp_path, [
        lambda r: Reply(content="Writing and checking.", tool_calls=[
            call("Write", "w", file_path="kernels/a.cu", content="// a\n"),
            call("Read", "r", file_path="kernels/a.cu"),
            call("Bash", "b", command="ls kernels"),
        ]),
        lambda r: FINAL,
    ])  # fmt: skip
    assert run.exit.status == "finished"
    tools = run.tool_messages()
    assert [m["tool_call_id"] for m in tools] == ["w", "r", "b"]
    assert tools[0]["content"].startswith("Created") and "     1\t// a" in tools[1]["content"]
    assert tools[2]["content"] == "a.cu"
    assert [m["role"] for m in run.record["messages"]] == ["system", "user", "assistant", "tool", "tool", "tool",
                                                           "assistant"]  # fmt: skip
    assert run.record["turns"][0]["tool_results"] == [
        {"id": "w", "name": "Write", "status": "ok", "meta": {"created": True, "lines": 1}},
        {"id": "r", "name": "Read", "status": "ok", "meta": {"first": 1, "last": 1, "lines": 1}},
        {"id": "b", "name": "Bash", "status": "ok", "meta": {"exit_code": 0, "timed_out": False}},
    ]
    assert len(run.server.requests) == 2
    assert run.server.requests[1]["messages"][-1] == {"role": "tool", "tool_call_id": "b", "content": "a.cu"}


def test_malformed_calls_get_error_results_and_the_episode_goes_on(tmp_path: Path) -> None:
    run = Run(tmp_path, [
        lambda r: Reply(tool_calls=[
            call("Read", "bad_json", raw_arguments='{"file_path": "model.py"'),
            call("Compile", "unknown", x=1),
            call("Edit", "wrong_args", path="model_new.py"),
            call("Write", "refused", file_path="model.py", content="x"),
        ]),
        lambda r: Reply(content=" | ".join(last_tool_results(r))),
    ])  # fmt: skip
    assert run.exit.status == "finished"
    statuses = [t["status"] for t in run.record["turns"][0]["tool_results"]]
    assert statuses == ["error", "error", "error", "refused"]
    final = run.record["messages"][-1]["content"]
    assert "not valid JSON" in final and "Unknown tool 'Compile'" in final
    assert "missing required parameter 'file_path'" in final and "model.py is protected" in final


def test_missing_or_repeated_call_ids_are_made_deterministic(tmp_path: Path) -> None:
    run = Run(tmp_path, [
        lambda r: Reply(tool_calls=[call("Bash", "", command="true"), call("Bash", "dup", command="true"),
                                    call("Bash", "dup", command="true")]),
        lambda r: FINAL,
    ])  # fmt: skip
    ids = [c["id"] for c in run.record["messages"][2]["tool_calls"]]
    assert ids == ["call_1_0", "dup", "call_1_2"]
    assert [m["tool_call_id"] for m in run.tool_messages()] == ids


def test_the_submit_marker_ends_the_episode_after_its_tool_calls(tmp_path: Path) -> None:
    run = Run(tmp_path, [
        lambda r: Reply(content="Kernels are final. TASK_COMPLETE", tool_calls=[call("Bash", "b", command="echo last")]),
        lambda r: Reply(content="never asked"),
    ])  # fmt: skip
    assert run.exit.status == "submitted"
    assert run.tool_messages()[0]["content"] == "last"
    assert len(run.server.requests) == 1


def test_turn_limit(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", None, command="true")])], max_turns=3)
    assert run.exit.status == "turn_limit" and "3 turns" in run.exit.message
    assert len(run.server.requests) == 3 and len(run.record["turns"]) == 3
    assert run.record["exit"] == {"status": "turn_limit", "message": run.exit.message}


def test_context_budget_shrinks_max_tokens_then_stops(tmp_path: Path) -> None:
    big = "python3 -c \"print('x' * 6000)\""
    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", None, command=big)])], context_tokens=16000,
              min_completion_tokens=500)  # fmt: skip
    assert run.exit.status == "context_limit"
    budgets = [r["max_tokens"] for r in run.server.requests]
    assert budgets[0] == 2000 and budgets[-1] < 2000 and budgets == sorted(budgets, reverse=True)
    assert all(t["context_tokens"] <= 16000 for t in run.record["turns"])
    assert run.agent.context_tokens() > 16000 - 500


def test_server_side_context_overflow_ends_the_episode_cleanly(tmp_path: Path) -> None:
    run = Run(tmp_path, [
        lambda r: Reply(tool_calls=[call("Bash", None, command="true")]),
        lambda r: Reply(status=400, error="This model's maximum context length is 32768 tokens."),
    ])  # fmt: skip
    assert run.exit.status == "context_limit" and "context is full" in run.exit.message


def test_total_token_budget(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", None, command="true")])], max_total_tokens=1000)
    assert run.exit.status == "token_limit"
    assert run.record["usage"]["total_tokens"] >= 1000


def test_wall_clock_budget(tmp_path: Path) -> None:
    now = [0.0]

    def slow_model(request):
        now[0] += 40.0
        return Reply(tool_calls=[call("Bash", None, command="true")])

    run = Run(tmp_path, [slow_model], clock=lambda: now[0], time_limit_s=100.0)
    assert run.exit.status == "time_limit" and len(run.server.requests) == 3


def test_a_model_server_failure_is_an_exit_not_a_crash(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: Reply(status=401, error="invalid key")])
    assert run.exit.status == "model_error" and "401" in run.exit.message
    assert run.record["exit"]["status"] == "model_error"


def test_cut_responses_are_continued_a_few_times(tmp_path: Path) -> None:
    cut = Reply(content="I will now write a very long", finish_reason="length")
    run = Run(tmp_path, [lambda r: cut, lambda r: FINAL])
    assert run.exit.status == "finished"
    nudge = run.record["messages"][3]
    assert nudge["role"] == "user" and "cut off at the 2000-token response limit" in nudge["content"]
    assert run.record["turns"][0]["continuation"] is True
    stuck = Run(tmp_path / "again", [lambda r: cut], max_length_continuations=2)
    assert stuck.exit.status == "length_limit" and len(stuck.server.requests) == 3


def test_usage_is_summed_from_the_server_or_estimated(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", None, command="true")]), lambda r: FINAL])
    reported = [t["usage"] for t in run.record["turns"]]
    assert run.record["usage"]["total_tokens"] == sum(u["total_tokens"] for u in reported)
    assert run.record["usage"]["unreported_turns"] == 0
    quiet = Run(tmp_path / "quiet", [lambda r: Reply(tool_calls=[call("Bash", None, command="true")], usage=False),
                                     lambda r: Reply(content="done", usage=False)])  # fmt: skip
    usage = quiet.record["usage"]
    assert usage["unreported_turns"] == 2 and usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    assert quiet.record["turns"][0]["usage"] is None
    assert estimate_tokens("abc" * 100) == 100


def test_the_trajectory_is_on_disk_before_the_episode_ends(tmp_path: Path) -> None:
    seen: list[dict] = []
    path = tmp_path / "trajectory.jsonl"

    def peek(request):
        seen.append(load_trajectory(path))
        return FINAL

    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", "b", command="echo persisted")]), peek])
    during = seen[0]
    assert during["state"] == "running" and "exit" not in during
    assert during["messages"][-1] == {"role": "tool", "tool_call_id": "b", "content": "persisted"}
    assert run.record["exit"]["status"] == "finished"


def test_cancel_stops_at_the_next_step(tmp_path: Path) -> None:
    cancel = threading.Event()

    def cancel_now(request):
        cancel.set()
        return Reply(tool_calls=[call("Bash", "b", command="echo still runs")])

    run = Run(tmp_path, [cancel_now, lambda r: FINAL], cancel=cancel)
    assert run.exit.status == "cancelled" and len(run.server.requests) == 1
    assert run.tool_messages()[0]["content"] == "Not run: the episode was cancelled."


def test_observer_sees_turns_tools_and_the_exit(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: Reply(tool_calls=[call("Bash", "b", command="exit 1", description="fail")]),
                         lambda r: FINAL])  # fmt: skip
    kinds = [e for e, _ in run.events]
    assert kinds == ["turn", "tool_start", "tool_end", "turn", "exit"]
    assert run.events[1][1]["summary"] == "fail" and run.events[0][1]["max_turns"] == 150


def test_trajectory_has_tools_config_and_no_api_key(tmp_path: Path) -> None:
    run = Run(tmp_path, [lambda r: FINAL])
    assert [t["function"]["name"] for t in run.record["tools"]][:3] == ["Bash", "BashOutput", "KillBash"]
    assert dataclasses.asdict(run.config.model)["api_key"] is None
    assert "api_key" not in json.dumps(run.config.public())


def test_an_interrupted_episode_keeps_everything_up_to_the_interruption(tmp_path: Path) -> None:
    from cuda_agent.agent import run_episode
    from cuda_agent.agent.llm import ModelResponse
    from cuda_agent.task import load_task

    class InterruptedModel:
        """Answers once, then the user presses Ctrl-C while the second request is in flight."""

        def __init__(self) -> None:
            self.calls = 0

        def complete(self, messages, tools, *, max_tokens=None, timeout=None):
            self.calls += 1
            if self.calls > 1:
                raise KeyboardInterrupt
            tool_call = {"id": "c1", "type": "function",
                         "function": {"name": "Bash", "arguments": json.dumps({"command": "echo kept"})}}
            return ModelResponse({"role": "assistant", "content": None, "tool_calls": [tool_call]}, "tool_calls", None)

    task = load_task("import torch\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
                     "def get_inputs():\n    return [torch.ones(2)]\ndef get_init_inputs():\n    return []\n")
    path = tmp_path / "trajectory.jsonl"
    config = AgentConfig(sandbox=SandboxPolicy(isolation="none"))
    with pytest.raises(KeyboardInterrupt):
        run_episode(task, tmp_path / "ws", config, client=InterruptedModel(), trajectory_path=path)
    record = load_trajectory(path)
    assert record["state"] == "interrupted" and record["exit"]["status"] == "interrupted"
    assert record["messages"][-1] == {"role": "tool", "tool_call_id": "c1", "content": "kept"}
    assert "wall_s" in record["timings"]
