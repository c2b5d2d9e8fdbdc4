"""Judging named adversarial-suite cases in one JudgeService, for the GPU tests that compare the judge with a
check switched off against the judge as it is (the verdicts with the check off show the cheat was a working one).

Set CUDA_AGENT_RESULTS=folder to keep the verdicts as JSON beside the test's output.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from test_judge_gpu import meets

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

SUITE = Path(__file__).parents[2] / "tests" / "adversarial"


def judge_cases(cases: list[str], results_name: str, **switches: Any) -> dict[str, dict[str, Any]]:
    """Each case's verdict as a dict, judged in order by one service; `switches` are JudgeConfig fields."""
    from cuda_agent.judge.decide.service import JudgeService

    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0), **switches)
    judged: dict[str, dict[str, Any]] = {}
    with JudgeService(config) as service:
        for i, verdict in service.judge_many([SUITE / name for name in cases]):
            v = judged[cases[i]] = verdict.to_dict()
            print(f"{cases[i]:40s} {switches or 'on'} {v['status']:12s} {v['reward']:+d} {v['reason'][:200]}", flush=True)
    out = os.environ.get("CUDA_AGENT_RESULTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / results_name).write_text(json.dumps(judged, indent=1))
    return judged


def meets_expectation(name: str, verdict: dict[str, Any]) -> bool:
    """Whether a case's verdict meets the expectation written in its expected.json."""
    return meets(json.loads((SUITE / name / "expected.json").read_text()), verdict)
