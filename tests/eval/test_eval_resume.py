"""`cuda-agent eval` end to end over real HTTP: the scripted solver behind an OpenAI-compatible server,
the judge behind `cuda-agent serve --build-only`, the eval in a subprocess that is SIGKILLed mid-run and
then resumed. Every (task, episode) must end with exactly one record, and the judge server must have
judged each exactly once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from eval_helpers import MINI, ROOT, TOKEN, JudgeServer
from scripted_solver import ScriptedLLM, solver

from cuda_agent.cli import main
from cuda_agent.eval.records import read_records


def cheap_files(task_name: str) -> dict[str, str]:
    """A ModelNew without kernels: the CPU checks reach a verdict (compile_error) without compiling."""
    return {"model_new.py": f"# written for {task_name}\nimport torch.nn as nn\n\nimport cuda_extension\n\n\n"
            "class ModelNew(nn.Module):\n    def forward(self, x):\n        return cuda_extension.op(x)\n"}  # fmt: skip


@pytest.fixture
def judge_server(tmp_path: Path):
    server = JudgeServer(tmp_path / "judge")
    yield server
    server.stop()


def test_killed_run_resumes_with_one_record_and_one_judgment_per_episode(tmp_path: Path, judge_server) -> None:
    run = tmp_path / "run"
    with ScriptedLLM(solver(cheap_files), models=["scripted"], delay_s=0.2) as llm:
        argv = [sys.executable, "-m", "cuda_agent.cli", "eval", "--tasks", str(MINI), "--levels", "1,2,3",
                "--tasks-per-level", "1", "--episodes-per-task", "1", "-j", "2", "--model", "scripted",
                "--base-url", llm.url, "--judge-url", judge_server.url, "--isolation", "none", "--out", str(run),
                "--bootstrap", "20"]  # fmt: skip
        env = {**os.environ, "CUDA_AGENT_JUDGE_TOKEN": TOKEN, "PYTHONUNBUFFERED": "1"}
        log = open(tmp_path / "first.log", "w")  # noqa: SIM115 - closed below
        first = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=ROOT)
        records = run / "records.jsonl"
        deadline = time.monotonic() + 120
        while not (records.exists() and records.read_text().count("\n") >= 1):
            assert first.poll() is None, (tmp_path / "first.log").read_text()[-3000:]
            assert time.monotonic() < deadline, "no record within 120 s"
            time.sleep(0.1)
        first.send_signal(signal.SIGKILL)  # mid-run: other episodes are in flight
        first.wait(10)
        log.close()
        before = read_records(records)
        assert 1 <= len(before) < 3
        second = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=ROOT, timeout=180)
    assert second.returncode == 0, second.stderr[-4000:]
    assert f"{len(before)} already recorded" in second.stderr
    # a step it skips says why (the judge server judges; the episodes' first compiles make their own PCH)
    assert "shared build cache: not prepared (--judge-url given; episodes build their own" in second.stderr

    after = read_records(records)
    keys = [f"{r.task_id}#{r.episode}" for r in after]
    expected = {f"{t}#0" for t in ("level1/19_ReLU", "level2/1_Gemm_Bias_ReLU", "level3/1_MLP")}
    assert sorted(keys) == sorted(expected)  # every episode exactly once
    assert after[: len(before)] == before  # the records made before the kill were kept as they were
    judged = judge_server.judgments()
    assert len(judged) == 3 and all(state == "done" and attempts == 1 for state, attempts in judged)

    for record in after:
        assert record.status == "compile_error" and record.reward == -1
        assert "kernels" in record.reason
        verdict = json.loads((run / record.verdict_path).read_text())
        assert verdict["verdict"]["stages"]["task"] == "passed"  # a real CPU check of the real task
        slug = record.task_id.replace("/", "_")
        submission = run / "submissions" / slug / f"ep{record.episode}"
        assert f"written for {slug}" in (submission / "model_new.py").read_text()
        assert (submission / "model.py").read_text() == (MINI / f"{record.task_id}.py").read_text()
        trajectory = run / "episodes" / slug / f"ep{record.episode}" / "trajectory.jsonl"
        assert json.loads(trajectory.read_text())["state"] == "finished"
    environment = json.loads((run / "environment.json").read_text())
    assert environment["judge"]["protocol_version"] and environment["judge"]["tolerance"] == {"atol": 0.01, "rtol": 0.01}
    assert (run / "report.md").is_file() and (run / "metrics.json").is_file()
    assert "level1/19_ReLU" in second.stdout and "Table 1" in second.stderr

    # The report is recomputed from the records alone: nothing judged, the model asked nothing.
    requests = len(llm.requests)
    assert main(["eval", "--report", str(run), "--bootstrap", "10"]) == 0
    assert len(judge_server.judgments()) == 3 and len(llm.requests) == requests
