"""`judge()`: judge one submission folder in one call, with workers started for it and gone afterwards.

Runs in the caller's process, which becomes the judge's parent; the verdict comes from a `Judgment`
(judgment.py) run by a `JudgeService` (service.py). It establishes no fact itself.
"""

from __future__ import annotations

from pathlib import Path

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.verdict import Verdict
from cuda_agent.task import Task


def judge(submission: Path, task: Task | None = None, config: JudgeConfig | None = None) -> Verdict:
    """Judge the submission folder (`model_new.py` + `kernels/`) against `task` (default: its model.py).

    One-shot: its workers start while the build runs and are gone afterwards. Callers that judge
    repeatedly should keep a `JudgeService` instead, whose workers are already warm."""
    from cuda_agent.judge.decide.service import JudgeService

    with JudgeService(config, keep_warm=False) as service:
        return service.judge(Path(submission), task)
