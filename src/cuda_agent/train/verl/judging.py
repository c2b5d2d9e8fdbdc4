"""The judge a verl rollout scores with: one interface, two places, and never a stall.

Rollouts reach the judge through the `Judge` seam of agent/judging.py, `(workspace, task) -> JudgeOutcome`:
- no URL: this node's own `JudgeService` (warm workers on the node's GPUs, started on first use and kept
  for the life of the process, one per rollout worker process);
- a URL: a judge server (`cuda-agent serve`, possibly a Ray pool behind it) through `RemoteJudge`, with
  its retries and idempotency keys; the token comes from `$CUDA_AGENT_JUDGE_TOKEN`.

`judge_bounded` runs the judgment off the event loop, on a small pool of its own (a hung judgment must
not take the threads verl's tools and tokenizers use), and gives up after `timeout_s`. A judge that is
down, raises or times out is not the policy's fault and not a verdict: the trajectory's `judged` flag is
False, the reason is logged, and the caller masks the sample out of the loss (train/unjudged.py);
`failure_reward` (0.0 unless configured) only fills the reward slot verl needs for every sample. A
training step never waits on, or crashes with, a broken judge.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.agent.judging import JUDGE_ERROR, UNAVAILABLE, Judge, JudgeOutcome, ServiceJudge
from cuda_agent.task import Task
from cuda_agent.train.unjudged import training_signal

log = logging.getLogger("cuda_agent.train.verl")

DEFAULT_TIMEOUT_S = 1800.0
DEFAULT_FAILURE_REWARD = 0.0
TIMEOUT = "timeout"  # as a JudgeOutcome status here it is always the judge's, never a verdict's
JUDGE_THREADS = 8
URL_ENV, TIMEOUT_ENV, FAILURE_REWARD_ENV = "CUDA_AGENT_JUDGE_URL", "CUDA_AGENT_JUDGE_TIMEOUT_S", "CUDA_AGENT_FAILURE_REWARD"
TOKEN_FILE_ENV = "CUDA_AGENT_JUDGE_TOKEN_FILE"


@dataclass(frozen=True)
class JudgeSettings:
    """Where rollouts are judged and how long a verdict may take. Hashable: one judge per process."""

    url: str | None = None  # None: the local JudgeService of this node
    timeout_s: float = DEFAULT_TIMEOUT_S
    retries: int = 3  # RemoteJudge: connection errors, 429 and 5xx retried with backoff
    failure_reward: float = DEFAULT_FAILURE_REWARD

    def __post_init__(self) -> None:
        if self.timeout_s <= 0:
            raise ValueError(f"judge timeout_s must be positive, got {self.timeout_s}")
        if self.url is not None and not str(self.url).startswith(("http://", "https://")):
            raise ValueError(f"judge url must start with http:// or https://, got {self.url!r}")


class MissingJudge:
    """A judge that could not be set up (no token, a bad URL): every outcome says so, none crashes."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        return JudgeOutcome(UNAVAILABLE, None, self.reason)


def judge_token() -> str | None:
    """The judge server's token: `$CUDA_AGENT_JUDGE_TOKEN`, or the file `$CUDA_AGENT_JUDGE_TOKEN_FILE` names
    (how a cluster hands it to Ray workers without putting it on a command line or in a logged config)."""
    from cuda_agent.service.auth import CLIENT_TOKEN_ENV

    token = os.environ.get(CLIENT_TOKEN_ENV)
    path = os.environ.get(TOKEN_FILE_ENV)
    if not token and path:
        lines = [ln.strip() for ln in Path(path).read_text().splitlines() if ln.strip() and not ln.startswith("#")]
        token = lines[0] if lines else None
    return token or None


@functools.lru_cache(maxsize=8)
def judge_for(settings: JudgeSettings) -> Judge:
    """The process's judge for `settings` (verl builds a new agent loop per sample; judges are kept)."""
    if settings.url is None:
        return ServiceJudge()
    from cuda_agent.service.client import RemoteJudge

    try:
        return RemoteJudge(settings.url, token=judge_token(), timeout_s=settings.timeout_s, retries=settings.retries)
    except Exception as exc:  # no token, unreadable token file: every rollout reports it, none crashes
        log.error("cannot set up the judge at %s: %s", settings.url, exc)
        return MissingJudge(f"cannot set up the judge at {settings.url}: {exc}")


def settings_from_env(**overrides: Any) -> JudgeSettings:
    """Settings from `$CUDA_AGENT_JUDGE_URL`, `_TIMEOUT_S` and `$CUDA_AGENT_FAILURE_REWARD`; explicit
    values (not None) win. The recipe passes these to every Ray worker through the job's runtime_env."""
    env = {"url": os.environ.get(URL_ENV) or None, "timeout_s": os.environ.get(TIMEOUT_ENV),
           "failure_reward": os.environ.get(FAILURE_REWARD_ENV)}  # fmt: skip
    given = {k: v for k, v in overrides.items() if v is not None}
    values = {k: v for k, v in {**env, **given}.items() if v not in (None, "")}
    if "url" in values and str(values["url"]).lower() in ("null", "none"):
        values.pop("url")
    for key in ("timeout_s", "failure_reward"):
        if key in values:
            values[key] = float(values[key])
    if "retries" in values:
        values["retries"] = int(values["retries"])
    return JudgeSettings(**values)


@functools.lru_cache(maxsize=1)
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(JUDGE_THREADS, thread_name_prefix="cuda-agent-judge")


async def judge_bounded(judge: Judge, workspace: Path, task: Task, timeout_s: float, *,
                        shared_gpus: bool = False) -> JudgeOutcome:  # fmt: skip
    """The judge's outcome within `timeout_s`, or an outcome without reward that says why not. With
    `shared_gpus` (this node's JudgeService, on the GPUs vLLM and the trainer use) a verdict that GPU
    contention can cause is a judge failure (train/unjudged.py `on_shared_gpus`); a verdict on the task
    itself (`task_error`) is never a reward (`on_the_task`)."""
    loop = asyncio.get_running_loop()
    try:
        outcome = await asyncio.wait_for(loop.run_in_executor(_pool(), judge, Path(workspace), task), timeout_s)
        return training_signal(outcome, shared_gpus=shared_gpus)
    except asyncio.TimeoutError:
        return JudgeOutcome(TIMEOUT, None, f"the judge gave no verdict within {timeout_s:g} s")
    except Exception as exc:  # a Judge should not raise; one that does still ends as a recorded outcome
        return JudgeOutcome(JUDGE_ERROR, None, f"the judge raised {type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class Score:
    """What verl records for one judged trajectory: the scalar reward and the facts behind it."""

    value: float
    info: dict[str, Any]


def score_outcome(outcome: JudgeOutcome, failure_reward: float = DEFAULT_FAILURE_REWARD, *,
                  where: str = "") -> Score:  # fmt: skip
    """The milestone reward of a verdict, or `failure_reward` (logged) when there is no verdict.

    `info` always has the same keys and types (verl stacks them across the batch into
    `reward_extra_info` arrays and averages the numeric ones): `status`, `judged`, `reason`,
    `milestone` (the verdict's reward, None without one), and the speedups and time (None unless timed).
    """
    judged = outcome.reward is not None
    if not judged:
        log.warning("no verdict for %s (%s): %s; reward %g", where or "a rollout", outcome.status, outcome.reason,
                    failure_reward)  # fmt: skip
    timing = (outcome.verdict or {}).get("timing") or {}
    info = {
        "score": float(outcome.reward) if judged else float(failure_reward),
        "status": outcome.status,
        "judged": judged,
        "milestone": outcome.reward,
        "reason": outcome.reason[:2000],
        "speedup_vs_eager": _number(timing.get("speedup_vs_eager")),
        "speedup_vs_compile": _number(timing.get("speedup_vs_compile")),
        "candidate_ms": _number(timing.get("candidate_ms")),
    }
    return Score(info["score"], info)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
