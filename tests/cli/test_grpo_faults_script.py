"""scripts/device/grpo_faults.py, the judge seam with faults for issue 31's GPU run: which judgments raise,
which run under contention, and that a contention verdict is recorded as the rollout will see it (masked
as `judge_error`, never -1). The GPU spinner is the one part a CPU cannot run; it is replaced here by a
context that records when it was entered, and the inner judge is a double giving known verdicts."""

from __future__ import annotations

import contextlib
import importlib.util
from pathlib import Path

import pytest

from cuda_agent.agent.judging import JudgeOutcome
from cuda_agent.task import Task

ROOT = Path(__file__).resolve().parents[2]


def _module():
    spec = importlib.util.spec_from_file_location("grpo_faults", ROOT / "scripts" / "device" / "grpo_faults.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_faults_follow_the_schedule_and_contention_is_recorded_as_masked(monkeypatch) -> None:
    faults = _module()
    busy: list[int] = []
    calls: list[int] = []

    @contextlib.contextmanager
    def kept_busy():
        busy.append(len(calls) + 1)
        yield

    def inner(workspace: Path, task: Task) -> JudgeOutcome:
        calls.append(1)
        if busy and busy[-1] == len(calls):  # under contention: what the judge's drain wait says
            return JudgeOutcome("rejected", -1, "the GPU stayed busy for 10.0 s after the candidate was frozen")
        return JudgeOutcome("ok", 2, "correct on 5 input sets")

    monkeypatch.setattr(faults, "gpu_kept_busy", kept_busy)
    judge = faults.FaultyJudge(inner, raise_every=4, contend_every=4)
    task = Task(name="relu", source="import torch\n")
    outcomes = []
    for n in range(1, 9):
        if n % 4 == 0:
            with pytest.raises(RuntimeError, match=f"injected fault: judgment {n}"):
                judge(Path("/nowhere"), task)
            continue
        outcomes.append((n, judge(Path("/nowhere"), task)))
    assert [i["judgment"] for i in judge.injected if i["fault"] == "raise"] == [4, 8]
    contended = [i for i in judge.injected if i["fault"] == "contention"]
    assert [i["judgment"] for i in contended] == [2, 6] and len(busy) == 2
    assert all(i["status"] == "rejected" and i["final_status"] == "judge_error" and i["final_reward"] is None
               for i in contended)  # fmt: skip
    assert [n for n, o in outcomes if o.status == "ok"] == [1, 3, 5, 7]


def test_a_contention_that_cannot_start_is_recorded_and_masked(monkeypatch) -> None:
    """No GPU for the spinner (this CPU machine, as it really fails here): the judgment raises, so the
    environment masks the rollout as judge_error, and the injection is still on the record."""
    faults = _module()
    judge = faults.FaultyJudge(lambda w, t: JudgeOutcome("ok", 3, "fine"), raise_every=0, contend_every=2)
    task = Task(name="relu", source="import torch\n")
    with pytest.raises(RuntimeError, match="spinner"):
        judge(Path("/nowhere"), task)  # judgment 1 (1 = 2 // 2 mod 2): the real spinner, which needs CUDA
    assert judge(Path("/nowhere"), task).status == "ok"  # judgment 2: plain
    (entry,) = judge.injected
    assert entry["judgment"] == 1 and entry["final_status"] == "judge_error" and entry["final_reward"] is None


def test_a_minus_1_under_contention_stands_only_if_a_quiet_gpu_gives_it_too(monkeypatch) -> None:
    """The H100 run of 2026-12-05: a contended judgment of a workspace with no kernels ended compile_error
    (-1), which the check "contention never -1" counted as contention's doing. The judgment is now repeated
    uncontended: a build that fails there too keeps its -1; a -1 that a quiet GPU turns into +2 is flagged."""
    faults = _module()
    monkeypatch.setattr(faults, "gpu_kept_busy", contextlib.nullcontext)
    plain_calls: list[str] = []
    verdicts = {"broken": [JudgeOutcome("compile_error", -1, "build failed: kernels/ has no .cu")] * 2,
                "drained": [JudgeOutcome("incorrect", -1, "differs beyond"), JudgeOutcome("ok", 2, "correct")]}

    def inner(workspace: Path, task: Task) -> JudgeOutcome:
        plain_calls.append(workspace.name)
        return verdicts[workspace.name][sum(1 for w in plain_calls if w == workspace.name) - 1]

    judge = faults.FaultyJudge(inner, raise_every=0, contend_every=1)  # every judgment contended (n % 1 == 0)
    task = Task(name="relu", source="import torch\n")
    assert judge(Path("/w/broken"), task).reward == -1
    assert judge(Path("/w/drained"), task).reward == -1
    broken, drained = judge.injected
    assert plain_calls == ["broken", "broken", "drained", "drained"]  # each -1 judged once more, quietly
    assert broken["uncontended_status"] == "compile_error" and broken["minus_1_from_contention"] is False
    assert drained["uncontended_reward"] == 2 and drained["minus_1_from_contention"] is True
