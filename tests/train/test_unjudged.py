"""Judge failures never become rewards: GPU contention on a judge that shares its GPUs with training is a
judge failure (masked), never -1, in both training paths; a judge on GPUs of its own keeps the verdict.

The judge is the double at the `Judge` seam (a CPU machine cannot time kernels): it returns the verdict the
real judge gives when the GPU stays busy after the candidate is frozen (judge/decide/timing_stage.py).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from train_helpers import RELU_TASK

from cuda_agent.agent.judging import JudgeOutcome
from cuda_agent.task import Task, load_task
from cuda_agent.train.environment import EnvironmentFactory, EnvironmentSettings, RolloutLog
from cuda_agent.train.unjudged import unjudged_metrics
from cuda_agent.train.verl.judging import judge_bounded

BUSY = JudgeOutcome("rejected", -1, "the GPU stayed busy for 10 s after every process of the candidate was "
                    "frozen: GPU work queued outside forward (a helper process, a second context, deferred "
                    "kernels) is not allowed")  # fmt: skip
CHEAT = JudgeOutcome("rejected", -1, "forward calls torch.matmul: PyTorch compute in forward is not allowed")


class Fixed:
    """A judge double over the real seam; `url` set makes it look remote (a judge pool of its own)."""

    def __init__(self, outcome: JudgeOutcome, url: str | None = None) -> None:
        self.outcome, self.url = outcome, url

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        return self.outcome


def _reward(tmp_path: Path, judge: Fixed) -> tuple[float | None, dict]:
    rollouts = RolloutLog(tmp_path / "rollouts.jsonl")
    env = EnvironmentFactory(judge, EnvironmentSettings(root=tmp_path / "envs"), rollouts)()
    env.reset(task_name="relu", task_source=RELU_TASK)
    reward = env.get_reward()
    env._close()
    return reward, json.loads((tmp_path / "rollouts.jsonl").read_text().splitlines()[-1])


def test_grpo_on_its_own_gpu_masks_a_drain_timeout_and_keeps_other_rejections(tmp_path: Path) -> None:
    reward, record = _reward(tmp_path / "busy", Fixed(BUSY))
    assert reward is None and record["judge_status"] == "judge_error" and not record["judged"]
    assert record["reason"].startswith("GPU contention (the judge shares its GPUs with training)")
    assert unjudged_metrics([record])["cuda_agent/unjudged_total/judge_error"] == 1
    reward, record = _reward(tmp_path / "cheat", Fixed(CHEAT))
    assert reward == -1.0 and record["judge_status"] == "rejected"


def test_a_judge_pool_of_its_own_keeps_the_drain_verdict(tmp_path: Path) -> None:
    reward, record = _reward(tmp_path, Fixed(BUSY, url="http://judge-pool:8765"))
    assert reward == -1.0 and record["judge_status"] == "rejected"


def test_the_verl_judge_masks_contention_only_on_shared_gpus() -> None:
    task = load_task(RELU_TASK, name="relu")
    shared = asyncio.run(judge_bounded(Fixed(BUSY), Path("."), task, 5.0, shared_gpus=True))
    assert shared.status == "judge_error" and shared.reward is None and "GPU contention" in shared.reason
    own = asyncio.run(judge_bounded(Fixed(BUSY), Path("."), task, 5.0, shared_gpus=False))
    assert own.status == "rejected" and own.reward == -1
    cheat = asyncio.run(judge_bounded(Fixed(CHEAT), Path("."), task, 5.0, shared_gpus=True))
    assert cheat.status == "rejected" and cheat.reward == -1


REFUSED = JudgeOutcome("task_error", -1, "the task is degenerate: input 0 returned as it is passes every input set")


def test_a_verdict_on_the_task_is_masked_in_both_trainers_wherever_the_judge_runs(tmp_path: Path) -> None:
    """Every rollout of a task the judge refuses gets the same -1 whatever it wrote: no signal about the
    policy, so masked and counted under its status, on the trainer's GPUs or a judge pool of its own."""
    for name, judge in (("local", Fixed(REFUSED)), ("pool", Fixed(REFUSED, url="http://judge-pool:8765"))):
        reward, record = _reward(tmp_path / name, judge)
        assert reward is None and record["judge_status"] == "task_error" and not record["judged"], name
        assert record["reason"].startswith("the judge refused the task itself")
        assert unjudged_metrics([record])["cuda_agent/unjudged_total/task_error"] == 1
    task = load_task(RELU_TASK, name="relu")
    for shared in (True, False):
        outcome = asyncio.run(judge_bounded(Fixed(REFUSED), Path("."), task, 5.0, shared_gpus=shared))
        assert outcome.status == "task_error" and outcome.reward is None


NO_WORKER = JudgeOutcome("runtime_error", -1, "the judge could not start its reference worker: AcceleratorError: "
                         "CUDA error: out of memory (started twice; the first try: ...)")  # fmt: skip
CRASH = JudgeOutcome("runtime_error", -1, "the candidate process was killed by SIGSEGV during run (forward on input set 1)")
JUDGE_BUG = JudgeOutcome("runtime_error", -1, "judge error (KeyError: 'outputs')")


def test_a_worker_the_judge_could_not_start_is_masked_and_the_candidates_own_failures_are_not(tmp_path: Path) -> None:
    """A worker that failed to start is the judge's failure before any code of the rollout ran: masked in
    both trainers. The rollout's own crash keeps its -1, and so does a judge exception, which a candidate
    could provoke on purpose to escape its -1 (train/unjudged.py JUDGE_FAULT_RULES)."""
    reward, record = _reward(tmp_path / "worker", Fixed(NO_WORKER))
    assert reward is None and record["judge_status"] == "judge_error" and not record["judged"]
    assert record["reason"].startswith("the judge failed, not this rollout: the judge could not start")
    task = load_task(RELU_TASK, name="relu")
    outcome = asyncio.run(judge_bounded(Fixed(NO_WORKER), Path("."), task, 5.0, shared_gpus=False))
    assert outcome.status == "judge_error" and outcome.reward is None
    for name, kept in (("crash", CRASH), ("bug", JUDGE_BUG)):
        reward, record = _reward(tmp_path / name, Fixed(kept))
        assert reward == -1.0 and record["judge_status"] == "runtime_error", name
