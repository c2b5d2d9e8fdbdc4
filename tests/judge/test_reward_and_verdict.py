"""The milestone reward and the verdict's JSON contract (architecture.md)."""

from __future__ import annotations

import json

import pytest

from cuda_agent.judge.decide.reward import milestone_reward
from cuda_agent.judge.decide.verdict import Environment, Stat, Status, Timing, Verdict, failure


@pytest.mark.parametrize(
    ("passed", "eager", "compile_", "expected"),
    [
        (False, 10.0, 10.0, -1),  # anything failed: -1 whatever the speed
        (True, 1.06, 1.06, 3),  # more than 5% faster than both
        (True, 1.06, 1.05, 2),  # exactly 5% faster than compile is not "more than"
        (True, 1.06, 0.50, 2),  # faster than eager only
        (True, 1.05, 1.50, 1),  # faster than compile only is still 1
        (True, 1.00, 1.00, 1),
        (True, 0.10, 0.10, 1),  # correct but slow
        (True, None, None, 1),  # not timed
    ],
)
def test_milestone_reward(passed: bool, eager: float | None, compile_: float | None, expected: int) -> None:
    assert milestone_reward(passed, eager, compile_) == expected


def _timing() -> Timing:
    stat = Stat(median=1.0, p25=0.9, p75=1.1, min=0.8, samples=30)
    return Timing(
        candidate_ms=1.0, eager_ms=2.0, compile_ms=1.5, speedup_vs_eager=2.0, speedup_vs_compile=1.5,
        speedup_vs_eager_low=1.9, speedup_vs_compile_low=1.4, candidate=stat, eager=stat, compile=stat,
        rounds=3, baseline_source="measured", protocol="p",
    )  # fmt: skip


def test_verdict_json_has_the_contract_fields() -> None:
    env = Environment(gpu="NVIDIA H200", compute_capability="9.0", driver="580", torch="2.11", cuda="13.0")
    verdict = Verdict(reward=3, status=Status.OK, reason="fast", timing=_timing(), environment=env,
                      tolerance={"atol": 1e-2, "rtol": 1e-2})  # fmt: skip
    data = json.loads(verdict.to_json())
    for key in ("reward", "status", "reason", "compile_log", "timing", "environment", "tolerance"):
        assert key in data
    assert data["status"] == "ok"
    for key in ("candidate_ms", "eager_ms", "compile_ms", "speedup_vs_eager", "speedup_vs_compile"):
        assert isinstance(data["timing"][key], float)
    assert data["timing"]["candidate"]["p75"] == 1.1
    assert data["environment"]["gpu"] == "NVIDIA H200"


def test_a_verdict_with_infinite_figures_is_strict_json_and_reads_back() -> None:
    """An unbounded interval's end or a ratio over zero is inf in Python; JSON has none. The server's strict
    encoder refused such a verdict with a 500 on every poll, so its client never got it (H100, 2026-12-05).
    The verdict's data carries None there, everywhere it is written."""
    import dataclasses
    import math

    from cuda_agent.service.wire import verdict_from_dict

    timing = dataclasses.replace(_timing(), policy={"upper": math.inf, "spreads": [1.0, -math.inf]})
    verdict = Verdict(reward=1, status=Status.OK, reason="ok", timing=timing,
                      checks={"response": {"missing": math.inf, "t": math.nan, "kept": 2.5}})  # fmt: skip
    data = json.loads(json.dumps(verdict.to_dict(), allow_nan=False))
    assert data["checks"]["response"] == {"missing": None, "t": None, "kept": 2.5}
    assert data["timing"]["policy"] == {"upper": None, "spreads": [1.0, None]}
    assert json.loads(verdict.to_json()) == data
    back = verdict_from_dict(data)
    assert back.reward == 1 and back.timing is not None and back.timing.candidate.p75 == 1.1


def test_failure_is_always_minus_one_and_never_ok() -> None:
    verdict = failure(Status.COMPILE_ERROR, "kernels/a.cu:3: error: x undeclared", compile_log="log")
    assert verdict.reward == -1 and not verdict.passed
    assert json.loads(verdict.to_json())["status"] == "compile_error"
    with pytest.raises(ValueError):
        failure(Status.OK, "no")


def test_all_statuses_serialise() -> None:
    values = {s.value for s in Status}
    assert {"ok", "compile_error", "incorrect", "runtime_error", "timeout", "rejected"} <= values
