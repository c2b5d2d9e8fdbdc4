"""Stage 1's reward: verl's custom reward function for single-turn responses (async, so verl awaits it).

    reward.custom_reward_function.path=pkg://cuda_agent.train.verl.reward
    reward.custom_reward_function.name=compute_score

verl's reward manager calls `compute_score(data_source=, solution_str=, ground_truth=, extra_info=)` with
the decoded response and the row's `extra_info`, which carries the task (data.py). The response goes
through part 1's single-turn parser: a response that is not a set of allowed files (no blocks, paths
outside `model_new.py` / `kernels/`, `..`, absolute paths, duplicates, oversized or broken text) scores
-1 with the parser's reason and never reaches the judge; one that parses is laid out in a fresh
workspace and judged (judging.py: this node's JudgeService or a judge server, bounded in time). A judge
that is down or slow gives `failure_reward` (0.0 unless configured), `judged: False` and a logged reason,
never an exception; the stage-1 agent loop (single_turn_loop.py) calls this function and masks such a
sample out of the loss, which a reward function alone cannot do. A row without a usable task is a data error, scored the same way (with the reason logged)
rather than stopping the step.

The returned dict always has the same keys (verl stacks them across the batch): `score` (the reward),
`status`, `judged`, `milestone`, `reason`, `speedup_vs_eager`, `speedup_vs_compile`, `candidate_ms`.
Settings: keyword arguments (`reward.custom_reward_function.reward_kwargs.*`) or the environment
(`$CUDA_AGENT_JUDGE_URL`, `$CUDA_AGENT_JUDGE_TIMEOUT_S`, `$CUDA_AGENT_FAILURE_REWARD`).
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from pathlib import Path
from typing import Any

from cuda_agent.agent.judging import JUDGE_ERROR, JudgeOutcome
from cuda_agent.task import Task, TaskError
from cuda_agent.train.single_turn import BAD_RESPONSE, BadResponse, parse_response, write_workspace
from cuda_agent.train.verl.data import task_from_extra_info
from cuda_agent.train.verl.judging import (
    JudgeSettings,
    judge_bounded,
    judge_for,
    score_outcome,
    settings_from_env,
)
from cuda_agent.train.verl.scratch import remove_tree

log = logging.getLogger("cuda_agent.train.verl")
BAD_ROW = "bad_row"


async def compute_score(data_source: str = "", solution_str: str = "", ground_truth: Any = None,
                        extra_info: dict[str, Any] | None = None, *, judge_url: str | None = None,
                        judge_timeout_s: float | None = None, failure_reward: float | None = None,
                        workdir: str | None = None, **_: Any) -> dict[str, Any]:  # fmt: skip
    """The milestone reward of one single-turn response, with the verdict's facts beside it."""
    settings = settings_from_env(url=judge_url, timeout_s=judge_timeout_s, failure_reward=failure_reward)
    try:
        task = task_from_extra_info(extra_info)
    except TaskError as exc:
        outcome = JudgeOutcome(BAD_ROW, None, f"row from {data_source or 'unknown source'}: {exc}")
        return score_outcome(outcome, settings.failure_reward, where="a stage-1 row").info
    files = parse_response(solution_str)
    if isinstance(files, BadResponse):
        return score_outcome(JudgeOutcome(BAD_RESPONSE, -1, files.reason), settings.failure_reward).info
    outcome = await judge_files(task, files, settings, workdir)
    return score_outcome(outcome, settings.failure_reward, where=f"task {task.name}").info


async def judge_files(task: Task, files: dict[str, str], settings: JudgeSettings, workdir: str | None) -> JudgeOutcome:
    """Lay out `files` for `task` in a scratch workspace, judge it within the timeout, delete it."""
    loop = asyncio.get_running_loop()
    try:
        root = Path(await loop.run_in_executor(None, lambda: tempfile.mkdtemp(prefix=f"stage1-{task.name}-",
                                                                              dir=_scratch(workdir))))  # fmt: skip
        workspace = await loop.run_in_executor(None, write_workspace, task, files, root / "workspace")
    except OSError as exc:
        return JudgeOutcome(JUDGE_ERROR, None, f"cannot lay out the workspace: {exc}")
    try:
        return await judge_bounded(judge_for(settings), workspace, task, settings.timeout_s,
                                   shared_gpus=settings.url is None)
    finally:
        await loop.run_in_executor(None, remove_tree, root)


def _scratch(workdir: str | None) -> str | None:
    if workdir is None:
        return None
    Path(workdir).mkdir(parents=True, exist_ok=True)
    return workdir
