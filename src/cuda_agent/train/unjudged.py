"""Samples the judge could not judge: kept in the batch, masked out of the loss, counted in the step.

A rollout whose workspace got no verdict (the judge down, unreachable, timed out or raising; the GPU
never free for it; the rollout code itself raising) says nothing about the policy. Scoring it with any
number, 0 included, is a reward the policy did not earn: it biases the group baseline of GRPO and the
value targets and advantages of GAE, and a judge outage of a few minutes becomes a signal the policy
learns from. So both training paths treat such a sample the same way:
- its loss mask is zero on every token (verl: the `response_mask` every PPO loss, the critic's value
  loss and GAE's whitening read; TRL: the tool mask its GRPO loss reads), so it moves no weight and
  takes no share of a token-mean normaliser;
- it is counted, per step, in the metrics the trainer logs (`unjudged_metrics`), by status;
- its reason is kept with the sample (verl's `reward_extra_info`, TRL's rollouts.jsonl).

A sample that reached the judge and failed (`compile_error`, `incorrect`, `rejected`, a malformed
single-turn response, ...) is judged: -1 is its reward and it trains like any other. A `task_error` is a
verdict on the task, not the sample (every rollout of the task gets it), so it is masked too (`on_the_task`);
so is a verdict that records the judge's own failure before the candidate ran (`on_the_judge`: a worker
it could not start), which the judge scores -1 only so that an evaluation never counts it as a success.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from cuda_agent.agent.judging import JUDGE_ERROR, JudgeOutcome

# The rollout itself raised (an exception in verl's agent loop `run()`, a workspace that could not be
# laid out): as with a judge failure, there is no verdict and nothing the policy is to blame for.
ROLLOUT_ERROR = "rollout_error"

# Verdicts that a judge on GPUs shared with training cannot tell apart from GPU contention, so on shared
# GPUs they are judge failures (masked), never -1: (status, how the reason starts, why).
SHARED_GPU_RULES: tuple[tuple[str, str, str], ...] = (
    ("rejected", "the GPU stayed busy for",
     "before timing a baseline the judge freezes the candidate and waits for the GPU to drain; on a GPU that "
     "vLLM or the trainer also use, their kernels keep it busy and the wait times out, which the judge (rightly, "
     "on a GPU of its own) reads as work the candidate hid"),
)  # fmt: skip


def on_shared_gpus(outcome: JudgeOutcome) -> JudgeOutcome:
    """`outcome` as seen from a judge that shares its GPUs with training: a verdict of SHARED_GPU_RULES
    becomes `judge_error` without a reward (the verdict is kept for the record)."""
    return _unjudged_by(outcome, SHARED_GPU_RULES, "GPU contention (the judge shares its GPUs with training)")


def _unjudged_by(outcome: JudgeOutcome, rules: tuple[tuple[str, str, str], ...], why: str) -> JudgeOutcome:
    """`outcome` as `judge_error` without a reward, its reason kept after `why`, where one of `rules`
    (status, how the reason starts, why) matches it; otherwise as it is."""
    for status, reason, _why in rules:
        if outcome.status == status and outcome.reason.startswith(reason):
            return replace(outcome, status=JUDGE_ERROR, reward=None, reason=f"{why}: {outcome.reason}")
    return outcome


# The judge refused the task itself (`task_error`: its reference fails, it is degenerate at its sizes, as
# KernelBench's ReLU is on inputs drawn in [0, 1), or it does not fit the GPU). Every rollout of the task
# gets the same -1 whatever it wrote, so that -1 says nothing about the policy; it would only teach the
# critic that the prompt is hopeless. Masked like a judge failure; the task belongs out of the dataset.
TASK_REFUSED = "task_error"


def on_the_task(outcome: JudgeOutcome) -> JudgeOutcome:
    """`outcome`, without a reward where the verdict is about the task, not the rollout (TASK_REFUSED)."""
    if outcome.status == TASK_REFUSED and outcome.reward is not None:
        return replace(outcome, reward=None, reason=f"the judge refused the task itself, not this rollout: {outcome.reason}")
    return outcome


# Verdicts the judge gives where it failed itself (it fails closed: -1 for the record, never a reward),
# which say nothing about the rollout: (status, how the reason starts, why). Only failures that come before
# any code of the candidate exists: an exception in the judge ("judge error (...)") stays -1, because a
# candidate can provoke one (a reply the judge cannot parse) and must not escape its -1 that way.
JUDGE_FAULT_RULES: tuple[tuple[str, str, str], ...] = (
    ("runtime_error", "the judge could not start",
     "a reference or candidate worker the judge warmed failed to start twice, the second time with no earlier "
     "candidate left on the GPU (trusted/pool.py `_warmed_or_again`); the kernel under judgment never ran"),
)  # fmt: skip


def on_the_judge(outcome: JudgeOutcome) -> JudgeOutcome:
    """`outcome` without a reward where the verdict records the judge's own failure (JUDGE_FAULT_RULES); one
    already without a reward is left as it is."""
    if outcome.reward is None:
        return outcome
    return _unjudged_by(outcome, JUDGE_FAULT_RULES, "the judge failed, not this rollout")


def training_signal(outcome: JudgeOutcome, *, shared_gpus: bool) -> JudgeOutcome:
    """What a trainer may learn from `outcome`: a verdict on the task (`on_the_task`) or on the judge's own
    failure (`on_the_judge`) is masked, and, on GPUs shared with training, one that contention can cause
    (`on_shared_gpus`)."""
    outcome = on_the_judge(on_the_task(outcome))
    return on_shared_gpus(outcome) if shared_gpus else outcome


def is_judged(record: Mapping[str, Any]) -> bool:
    """True if the record (a `reward_extra_info` dict or a rollout record) carries a verdict."""
    if "judged" in record:
        return bool(record["judged"])
    return record.get("judge_reward", record.get("milestone")) is not None


def unjudged_metrics(records: Iterable[Mapping[str, Any]], prefix: str = "cuda_agent") -> dict[str, float]:
    """The step's counts: `{prefix}/samples_total`, `/unjudged_total` (masked out of the loss),
    `/unjudged_fraction` and `/unjudged_total/<status>` for each status among the unjudged. The names
    say "total" because verl's v1 metrics aggregator sums such names over a step's sync iterations."""
    records = list(records)
    unjudged = [r for r in records if not is_judged(r)]
    metrics: dict[str, float] = {
        f"{prefix}/samples_total": float(len(records)),
        f"{prefix}/unjudged_total": float(len(unjudged)),
        f"{prefix}/unjudged_fraction": len(unjudged) / len(records) if records else 0.0,
    }
    statuses = Counter(str(r.get("status", r.get("judge_status", "unknown"))) for r in unjudged)
    for status, count in sorted(statuses.items()):
        metrics[f"{prefix}/unjudged_total/{status}"] = float(count)
    return metrics
