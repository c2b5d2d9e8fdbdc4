"""GRPO with TRL's GRPOTrainer over our environment: the tools in a real workspace, optimiser steps on the
tiny model with the reward path asserted, and judges that are down.

The one double is the judge that gives known verdicts (a CPU machine cannot judge kernels); it implements
the real `Judge` seam, so everything between TRL and the judge is the production code. The judges that
are down are real: `RemoteJudge` against a port nobody listens on, and the local `JudgeService` on a
machine without a GPU.
"""

from __future__ import annotations

import inspect
import json
import socket
from pathlib import Path

import pytest
from train_helpers import RELU_TASK

from cuda_agent.agent.judging import JudgeOutcome, ServiceJudge
from cuda_agent.agent.tools import default_tools
from cuda_agent.task import Task
from cuda_agent.train.environment import (
    TOOL_NAMES,
    CudaKernelEnv,
    EnvironmentFactory,
    EnvironmentSettings,
    RolloutLog,
    python_name,
)
from cuda_agent.train.grpo import GRPOSettings, judge_processes, run_grpo

KERNEL = """#include <cuda_runtime.h>
__global__ void relu_kernel(const float* x, float* y, long n) {
    long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
    if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
"""


class KnownVerdicts:
    """A judge double over the real seam: verdicts fixed per rollout slot, every call recorded."""

    def __init__(self, by_slot: dict[str, JudgeOutcome]) -> None:
        self.by_slot = by_slot
        self.calls: list[tuple[Path, Task, set[str]]] = []

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        files = {str(p.relative_to(workspace)) for p in Path(workspace).rglob("*") if p.is_file()}
        self.calls.append((Path(workspace), task, files))
        return self.by_slot[Path(workspace).parent.name]


def _env(tmp_path: Path, judge, **kw) -> tuple[CudaKernelEnv, RolloutLog]:
    rollouts = RolloutLog(tmp_path / "rollouts.jsonl")
    factory = EnvironmentFactory(judge, EnvironmentSettings(root=tmp_path / "envs", **kw), rollouts)
    env = factory()
    env.reset(task_name="relu", task_source=RELU_TASK, prompt=[{"role": "user", "content": "ignored"}])
    return env, rollouts


def test_the_grpo_modules_import_no_training_engine() -> None:
    """`cuda-agent` without TRL installed still imports them (the engines load inside `run_grpo`)."""
    import subprocess
    import sys

    code = ("import sys, cuda_agent.train.grpo, cuda_agent.train.environment; "
            "loaded = [m for m in ('trl', 'transformers', 'datasets', 'accelerate', 'torch') if m in sys.modules]; "
            "print(loaded); sys.exit(1 if loaded else 0)")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_trl_sees_exactly_our_ten_tools_with_their_schemas() -> None:
    from transformers.utils import get_json_schema

    # The rule TRL applies to an environment class: public functions, less reset and get_reward.
    members = [n for n, _ in inspect.getmembers(CudaKernelEnv, predicate=inspect.isfunction)
               if not n.startswith("_") and n not in ("reset", "get_reward")]  # fmt: skip
    assert sorted(members) == sorted(TOOL_NAMES) and len(members) == 10
    for tool in default_tools():
        ours = tool.schema()["function"]
        theirs = get_json_schema(getattr(CudaKernelEnv, tool.name))["function"]
        assert theirs["name"] == ours["name"] and theirs["description"] == ours["description"].strip()
        assert sorted(theirs["parameters"].get("required", [])) == sorted(
            python_name(p) for p in ours["parameters"].get("required", []))
        for name, spec in ours["parameters"]["properties"].items():
            got = theirs["parameters"]["properties"][python_name(name)]
            assert got.get("type") == spec.get("type"), (tool.name, name)
            assert got.get("enum") == spec.get("enum"), (tool.name, name)
            assert got["description"] == " ".join(spec["description"].split()), (tool.name, name)


def test_environment_tools_work_in_a_real_workspace(tmp_path: Path) -> None:
    judge = KnownVerdicts({"env-0": JudgeOutcome("compile_error", -1, "known: nvcc failed")})
    env, rollouts = _env(tmp_path, judge)
    root = tmp_path / "envs" / "env-0" / "workspace"
    assert (root / "model.py").read_text() == RELU_TASK and (root / "utils" / "compile.sh").is_file()

    assert "relu" in env.Read(file_path="model.py")
    written = env.Write(file_path="kernels/relu.cu", content=KERNEL)
    assert (root / "kernels" / "relu.cu").read_text() == KERNEL, written
    edited = env.Edit(file_path="kernels/relu.cu", old_string="x[i] : 0.f", new_string="x[i] : 0.0f")
    assert "x[i] : 0.0f" in (root / "kernels" / "relu.cu").read_text(), edited
    assert "relu.cu" in env.Bash(command="ls kernels && echo listed")
    assert "relu.cu" in env.Glob(pattern="kernels/*.cu")
    assert "relu_kernel" in env.Grep(pattern="RELU_KERNEL", i=True, output_mode="content")  # Grep's -i, renamed
    refused = env.Write(file_path="model.py", content="x = 1\n")  # protected: refused, no exception
    assert "protected" in refused and (root / "model.py").read_text() == RELU_TASK
    outside = env.Read(file_path="../../../etc/passwd")
    assert "outside the workspace" in outside
    assert "Invalid arguments" in env.Read(path="model.py")  # a wrong parameter name is the model's to fix

    assert env.get_reward() == -1.0
    (workspace, task, files), = judge.calls
    assert workspace == root.resolve() and task.name == "relu" and "kernels/relu.cu" in files
    record = json.loads((tmp_path / "rollouts.jsonl").read_text())
    assert record["judge_status"] == "compile_error" and record["reason"] == "known: nvcc failed"
    assert [c["name"] for c in record["tool_calls"]] == ["Read", "Write", "Edit", "Bash", "Glob", "Grep", "Write",
                                                         "Read", "Read"]  # fmt: skip
    assert [c["status"] for c in record["tool_calls"]][-3:] == ["refused", "refused", "error"]

    env.reset(task_name="relu", task_source=RELU_TASK)  # the next rollout starts from a clean workspace
    assert not (root / "kernels" / "relu.cu").exists() and rollouts.total == 1


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there


def test_a_judge_that_is_down_gives_no_reward_and_the_reason(tmp_path: Path) -> None:
    from cuda_agent.service.client import RemoteJudge

    remote = RemoteJudge(f"http://127.0.0.1:{_dead_port()}", token="t", retries=0, timeout_s=5)
    env, _ = _env(tmp_path / "remote", remote)
    assert env.get_reward() is None and not env._judged
    record = json.loads((tmp_path / "remote" / "rollouts.jsonl").read_text())
    assert record["judge_status"] == "unavailable" and "cannot reach the judge" in record["reason"]
    assert record["judged"] is False and record["reward"] is None

    def broken(workspace: Path, task: Task) -> JudgeOutcome:
        raise ConnectionResetError("the judge went away")

    env, _ = _env(tmp_path / "broken", broken)  # default: no reward (TRL gives it a zero advantage)
    assert env.get_reward() is None
    record = json.loads((tmp_path / "broken" / "rollouts.jsonl").read_text())
    assert record["judge_status"] == "judge_error" and "the judge went away" in record["reason"]


def test_the_local_judge_service_without_a_gpu_is_down_not_a_crash(tmp_path: Path) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU: the local judge is up")
    judge = ServiceJudge()
    env, _ = _env(tmp_path, judge)
    try:
        assert env.get_reward() is None
    finally:
        judge.close()
    record = json.loads((tmp_path / "rollouts.jsonl").read_text())
    assert record["judge_status"] == "unavailable" and "GPU" in record["reason"]
    assert judge_processes() == []


def test_grpo_optimiser_steps_on_the_tiny_model(tiny_model: Path, tmp_path: Path) -> None:
    """Two steps, two rollouts each: slot 0 judged -1 and slot 1 +1, so every group has a spread and the
    logged reward mean is the double's (0.0); the random tiny model calls no tool, which is logged as 0."""
    task = tmp_path / "relu.py"
    task.write_text(RELU_TASK)
    judge = KnownVerdicts({"env-0": JudgeOutcome("incorrect", -1, "known: wrong output"),
                           "env-1": JudgeOutcome("ok", 1, "known: correct")})  # fmt: skip
    out = tmp_path / "run"
    settings = GRPOSettings(tasks=(str(task), str(tmp_path / "missing.py")), model=str(tiny_model), out=out,
                            num_generations=2, max_steps=2, max_completion_length=8, max_turns=2,
                            learning_rate=1e-4, bf16=False)  # fmt: skip
    summary = run_grpo(settings, judge=judge)

    assert summary["steps"] == 2 and summary["rollouts"] == 4 and len(judge.calls) == 4
    assert summary["tasks"] == ["relu"] and "missing.py" in summary["skipped_tasks"][0]["where"]
    assert {c[1].source for c in judge.calls} == {RELU_TASK}
    assert {c[0].parent.name for c in judge.calls} == {"env-0", "env-1"}
    steps = [json.loads(line) for line in (out / "grpo_steps.jsonl").read_text().splitlines()]
    assert steps == summary["per_step"] and [s["step"] for s in steps] == [1, 2]
    for step in steps:
        assert step["reward_mean"] == pytest.approx(0.0) and step["reward_std"] > 0
        assert step["judge_statuses"] == {"incorrect": 1, "ok": 1} and step["unjudged"] == 0
        assert step["tool_call_frequency"] == 0.0 and isinstance(step["loss"], float)
        assert step["wall_s"] >= step["step_s"] > 0
    rollouts = [json.loads(line) for line in (out / "rollouts.jsonl").read_text().splitlines()]
    assert sorted(r["reward"] for r in rollouts) == [-1.0, -1.0, 1.0, 1.0]
    assert (out / "grpo_curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / "config.json").is_file() and json.loads((out / "grpo_summary.json").read_text())["steps"] == 2
    # A judge passed in is the caller's to close, so run_grpo does not count its processes (None, not [])
    assert summary["judge_processes_left"] is None and judge_processes() == []


def test_a_workspace_that_cannot_be_opened_is_an_unjudged_rollout_not_a_crash(tmp_path: Path) -> None:
    """reset() on a rollout root that is a file: TRL's step would have died in reset(); now the tools say
    why they cannot run, nothing is judged, and the rollout is recorded without a verdict."""
    (tmp_path / "envs").write_text("not a folder")
    judge = KnownVerdicts({})
    env, rollouts = _env(tmp_path, judge)
    assert "could not be opened" in env.Read(file_path="model.py")
    assert env.get_reward() is None and not env._judged and judge.calls == []
    (record,) = rollouts.drain()
    assert record["judge_status"] == "rollout_error" and "could not be opened" in record["reason"]


def test_grpo_masks_an_unjudged_rollout_out_of_the_loss(tiny_model: Path, tmp_path: Path) -> None:
    """One generation batch of three rollouts through TRL's own generation and scoring: slot 2's judge
    raised. Its tool mask (the loss mask TRL multiplies into every loss term) is zero on every token, the
    token normaliser counts only the judged rollouts, and the step's metrics say one of three."""
    import time

    from transformers import AutoTokenizer

    from cuda_agent.train.grpo import _trainer, training_rows

    def verdicts(workspace: Path, task: Task) -> JudgeOutcome:
        slot = Path(workspace).parent.name
        if slot == "env-2":
            raise ConnectionResetError("the judge went away")
        return JudgeOutcome("incorrect", -1, "known") if slot == "env-0" else JudgeOutcome("ok", 1, "known")

    task = tmp_path / "relu.py"
    task.write_text(RELU_TASK)
    settings = GRPOSettings(tasks=(str(task),), model=str(tiny_model), out=tmp_path / "run", num_generations=3,
                            max_steps=1, max_completion_length=8, max_turns=2, bf16=False)  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(tiny_model, padding_side="left")
    from cuda_agent.train.grpo import load_tasks

    rows, config = training_rows(settings, load_tasks(settings.tasks)[0], tokenizer)
    rollouts = RolloutLog(tmp_path / "rollouts.jsonl")
    factory = EnvironmentFactory(verdicts, EnvironmentSettings(root=tmp_path / "envs", agent=config), rollouts)
    try:
        trainer, _, _ = _trainer(settings, tokenizer, rows, factory, rollouts, time.monotonic())
        trainer.model.train()
        output = trainer._generate_and_score_completions([dict(rows[0]) for _ in range(3)])
    finally:
        factory.close()
    loss_mask = output["completion_mask"] * output["tool_mask"]
    assert loss_mask[2].sum().item() == 0 and loss_mask[0].sum().item() > 0 and loss_mask[1].sum().item() > 0
    assert output["num_items_in_batch"].item() == loss_mask.sum().item()
    assert output["advantages"][2].item() == 0.0
    metrics = trainer._metrics["train"]
    assert metrics["cuda_agent/unjudged_total"] == [1.0] and metrics["cuda_agent/samples_total"] == [3.0]
    statuses = {r["slot"]: (r["judge_status"], r["judged"]) for r in rollouts.drain()}
    assert statuses == {0: ("incorrect", True), 1: ("ok", True), 2: ("judge_error", False)}


def test_trl_parses_the_tiny_models_tool_calls_into_our_tools(tiny_model: Path, tmp_path: Path) -> None:
    """What TRL does with a generated turn, minus the sampling: parse it with the response parser
    `ensure_response_parser` chose, then call the environment's method with the parsed arguments."""
    from transformers import AutoTokenizer
    from trl.chat_template_utils import (
        is_chat_template_prefix_preserving,
        parse_response,
        supports_tool_calling,
    )

    from cuda_agent.train.grpo import ensure_response_parser

    tokenizer = AutoTokenizer.from_pretrained(tiny_model, padding_side="left")
    assert ensure_response_parser(tokenizer) == "Hermes <tool_call> JSON (Qwen3's)"
    assert supports_tool_calling(tokenizer) and is_chat_template_prefix_preserving(tokenizer)
    env, _ = _env(tmp_path, KnownVerdicts({}))
    tools = [getattr(env, name) for name in TOOL_NAMES]
    prompt = [{"role": "user", "content": "write the kernel"}]
    turn = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "Write", "arguments": {"file_path": "kernels/relu.cu", "content": KERNEL}}},
        {"type": "function", "function": {"name": "Grep", "arguments": {"pattern": "RELU", "i": True}}}]}  # fmt: skip
    prefix = tokenizer.apply_chat_template(prompt, tools=tools, add_generation_prompt=True, tokenize=True,
                                           return_dict=True)["input_ids"]  # fmt: skip
    full = tokenizer.apply_chat_template([*prompt, turn], tools=tools, tokenize=True, return_dict=True)["input_ids"]
    assert full[: len(prefix)] == prefix
    completion = full[len(prefix):]
    completion = completion[: completion.index(tokenizer.eos_token_id) + 1]  # generation stops at <|im_end|>
    parsed = parse_response(tokenizer, completion, prefix=prefix, tools=tools)
    calls = [c["function"] for c in parsed["tool_calls"]]
    assert calls == [turn["tool_calls"][0]["function"], turn["tool_calls"][1]["function"]]
    results = [getattr(env, c["name"])(**c["arguments"]) for c in calls]  # TRL's call
    root = tmp_path / "envs" / "env-0" / "workspace"
    assert (root / "kernels" / "relu.cu").read_text() == KERNEL and "relu" in results[1]


@pytest.mark.gpu
def test_the_local_judge_scores_a_rollout_and_leaves_no_process(tmp_path: Path) -> None:
    """On a GPU: the real JudgeService behind the environment; its workers exist while the run holds it
    (so the /proc scan sees them) and are gone once it is closed."""
    judge = ServiceJudge()
    env, _ = _env(tmp_path, judge)
    env.Write(file_path="model_new.py", content="this is not python\n")
    try:
        assert env.get_reward() == -1.0
        assert judge_processes(), "the scan should see the warm judge workers"
    finally:
        judge.close()
    record = json.loads((tmp_path / "rollouts.jsonl").read_text())
    assert record["judge_status"] not in ("unavailable", "judge_error") and record["judge_reward"] == -1
    assert judge_processes() == []


def test_train_grpo_refuses_bad_arguments_with_the_fix(tmp_path: Path, capsys, monkeypatch) -> None:
    from cuda_agent.cli import main

    task = tmp_path / "relu.py"
    task.write_text(RELU_TASK)
    base = ["train", "grpo", "--tasks", str(task), "--model", str(tmp_path / "m"), "--out", str(tmp_path / "o")]
    assert main([*base, "--num-generations", "1"]) == 2
    assert "at least 2" in capsys.readouterr().err
    monkeypatch.delenv("CUDA_AGENT_JUDGE_TOKEN", raising=False)
    assert main([*base, "--judge-url", "http://127.0.0.1:9"]) == 2
    assert "CUDA_AGENT_JUDGE_TOKEN" in capsys.readouterr().err
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "rollouts.jsonl").write_text("{}\n")  # an earlier run's log
    assert main(["train", "grpo", "--tasks", str(tmp_path / "none.py"), "--model", "m", "--out", str(tmp_path / "o")]) == 2
    assert "no tasks to train on" in capsys.readouterr().err
    assert (tmp_path / "o" / "rollouts.jsonl").read_text() == "{}\n"
