"""`eval -j 2` on one GPU: no episode's tool command runs while another episode's final judgment does.

Two episodes at once through the real runner, the real agent loop and tools and the scripted model over
real HTTP. Each episode's Bash commands are a stand-in for GPU work that records when it ran; the judge
is the one boundary a CPU machine cannot reach (a GPU), replaced by a judgment that records when it ran
and says it runs on the test GPU. With the lease (the default) no tool interval may overlap a judgment
interval; with CUDA_AGENT_GPU_LEASE=off the same run does overlap, so the check can fail."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from eval_helpers import MINI
from scripted_solver import ScriptedLLM, assistant_turns, call, task_name_of

from cuda_agent import gpu_lease
from cuda_agent.agent.config import AgentConfig, ModelConfig
from cuda_agent.agent.tools.sandbox import SandboxPolicy
from cuda_agent.eval import kernelbench
from cuda_agent.eval.recheck import recheck
from cuda_agent.eval.records import read_records
from cuda_agent.eval.runner import AgentRunner, plan

GPU = "GPU-eval-lease-test"
TOOL_S, JUDGE_S = 0.4, 0.8


class TimedJudge:
    """A judgment that runs on GPU `GPU` for JUDGE_S seconds and logs its interval (no verdict logic)."""

    name = "timed"

    def __init__(self, log: Path) -> None:
        self.log = log

    def gpus(self) -> list[str]:
        return [GPU] if gpu_lease.enabled() else []

    def judge(self, folder: Path, task: Any, key: str) -> dict[str, Any]:
        start = time.time()
        time.sleep(JUDGE_S)
        with open(self.log, "a") as handle:
            handle.write(f"judge {start} {time.time()}\n")
        verdict = {"status": "incorrect", "reward": -1, "reason": "timed stand-in", "timing": None}
        return {"status": "incorrect", "reward": -1, "reason": "timed stand-in", "verdict": verdict}

    def judge_many(self, items: Sequence[tuple[Path, Any, str]]) -> Iterator[tuple[int, dict[str, Any]]]:
        self.batches = getattr(self, "batches", 0) + 1
        for index, item in enumerate(items):
            yield index, self.judge(*item)

    def close(self) -> None:
        pass


def script(log: Path):
    """ReLU: one GPU-ish command then done (it judges early); the others: four in a row."""
    command = f's=$(date +%s.%N); sleep {TOOL_S}; echo "tool $s $(date +%s.%N)" >> {log}'

    def reply(request: dict):
        from scripted_llm import Reply

        name, turn = task_name_of(request), assistant_turns(request)
        if name is None:
            return Reply(content="ok")
        calls = 1 if "ReLU" in name else 4
        if turn == 0:
            return Reply(tool_calls=[call("Write", None, file_path="model_new.py", content=f"# {name}\n")])
        if turn <= calls:
            return Reply(tool_calls=[call("Bash", None, command=command)])
        return Reply(content="done")

    return reply


def run_two_at_once(tmp_path: Path) -> tuple[list[tuple[float, float]], list[tuple[float, float]], Path]:
    log = tmp_path / "intervals.log"
    log.touch()
    run = tmp_path / "run"
    tasks = kernelbench.discover(MINI, [1], tasks_per_level=3)
    with ScriptedLLM(script(log), models=["scripted"], delay_s=0.05) as llm:
        config = AgentConfig(model=ModelConfig(name="scripted", base_url=llm.url), sandbox=SandboxPolicy(isolation="none"))
        runner = AgentRunner(run, "lease-test", plan(tasks, 1), TimedJudge(log), config, concurrency=2)
        assert runner.run() == 0, runner.unfinished
    spans: dict[str, list[tuple[float, float]]] = {"tool": [], "judge": []}
    for kind, start, end in (line.split() for line in log.read_text().splitlines()):
        spans[kind].append((float(start), float(end)))
    assert len(spans["tool"]) == 1 + 4 + 4 and len(spans["judge"]) == 3
    return spans["tool"], spans["judge"], run


def overlaps(tools: list[tuple[float, float]], judgments: list[tuple[float, float]]) -> list[tuple]:
    return [(t, j) for t in tools for j in judgments if t[0] < j[1] and j[0] < t[1]]


def test_no_tool_command_runs_during_another_episodes_judgment(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lease.GPUS_ENV, GPU)  # what the episodes' tools can touch
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(tmp_path / "leases"))
    monkeypatch.setenv(gpu_lease.LOG_ENV, str(tmp_path / "audit.jsonl"))
    tools, judgments, run = run_two_at_once(tmp_path)
    assert overlaps(tools, judgments) == []
    audit = gpu_lease.audit(tmp_path / "audit.jsonl")  # the leases' own account agrees
    assert audit["conflicts"] == [] and audit["exclusive"]["count"] == 3 and audit["shared"]["count"] == 9

    records = read_records(run / "records.jsonl")
    assert len(records) == 3 and all(r.gpu_wait_s is not None for r in records)
    tool_waits = []
    for record in records:
        saved = json.loads((run / record.verdict_path).read_text())
        assert saved["gpu_lease"]["gpus"] == [GPU] and saved["gpu_lease"]["mode"] == "exclusive"
        assert saved["gpu_lease"]["held_s"] >= JUDGE_S and saved["gpu_lease"]["waited_s"] == record.gpu_wait_s
        slug = record.task_id.replace("/", "_")
        trajectory = json.loads((run / "episodes" / slug / "ep0" / "trajectory.jsonl").read_text())
        assert trajectory["judge"]["gpu_lease"]["gpus"] == [GPU]
        bash = [r for turn in trajectory["turns"] for r in turn["tool_results"] if r["name"] == "Bash"]
        assert len(bash) == (1 if "ReLU" in slug else 4) and all("gpu_wait_s" in r["meta"] for r in bash)
        tool_waits += [r["meta"]["gpu_wait_s"] for r in bash]
    # the two episodes did contend: someone waited (a tool for a judgment, or a judgment for a tool)
    assert sum(tool_waits) + sum(r.gpu_wait_s for r in records) > 0.05

    # --recheck judges the run's submissions again one at a time, each holding the GPU (no batch: no
    # build beside a timing); --batch makes it one batch
    again = TimedJudge(tmp_path / "recheck.log")
    result = recheck(run, again, lambda line: None)
    assert result["judged"] == "one at a time" and result["summary"]["rechecked"] == 3
    assert not hasattr(again, "batches") and len((tmp_path / "recheck.log").read_text().splitlines()) == 3
    saved = json.loads((run / "recheck" / "verdicts" / "level1_19_ReLU" / "ep0.json").read_text())
    assert saved["gpu_lease"]["gpus"] == [GPU]
    assert recheck(run, again, lambda line: None, batch=True)["judged"] == "one pipelined batch"
    assert again.batches == 1


def test_without_the_lease_the_same_run_overlaps(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv(gpu_lease.ENABLE_ENV, "off")
    tools, judgments, run = run_two_at_once(tmp_path)
    assert overlaps(tools, judgments), "the run never overlapped: this test could not catch a missing lease"
    assert all(r.gpu_wait_s is None for r in read_records(run / "records.jsonl"))


@pytest.fixture(autouse=True)
def _no_cache_warm(monkeypatch) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
