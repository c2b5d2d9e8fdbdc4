"""GPU tests of the weight pair (trusted/response_probe.py, docs/design/precision.md): weights kept in fewer
bits on a long reduction with terms of both signs.

The cheats 08_rounded_weights_long_k_signs (weights rounded to 15 mantissa bits and packed at load) and
08_weights_exact_in_later_instances (the same, in the process's first ModelNew only) must be refused; the
honest 00_honest_weights_relaid_at_load (an fp32 transposed copy made at load) accepted with the weight
pair passed. With the precision audit's bound made loose (`precision_k` = 1000) the cheats' errors pass
every set on their own: then the weight pair alone must refuse them, which shows it works end to end (the
second ModelNew built, loaded and run in the candidate worker, its state file handed over, the response
compared). Set CUDA_AGENT_RESULTS=folder to save the verdicts.

    PYTHONPATH=src python -m pytest -q -m gpu tests/gpu/test_weight_pair_gpu.py
"""

from __future__ import annotations

import pytest
from suite_verdicts import judge_cases, meets_expectation

pytestmark = pytest.mark.gpu

CHEATS = ["08_rounded_weights_long_k_signs", "08_weights_exact_in_later_instances"]
HONEST = ["00_honest_weights_relaid_at_load"]


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    return judge_cases(CHEATS + HONEST, "weight_pair.json")


@pytest.fixture(scope="module")
def verdicts_loose() -> dict[str, dict]:
    return judge_cases(CHEATS, "weight_pair_loose.json", precision_k=1000.0)


@pytest.mark.parametrize("name", CHEATS + HONEST)
def test_case_meets_its_expectation(verdicts: dict[str, dict], name: str) -> None:
    assert meets_expectation(name, verdicts[name]), verdicts[name]


def test_the_honest_verdict_names_the_weight_pair_it_passed(verdicts: dict[str, dict]) -> None:
    checks = verdicts[HONEST[0]]["checks"]
    assert str(checks["weight_response"]).startswith("passed"), checks["weight_response"]
    assert checks["worker_calls"]["candidate.run_variant"][0] == 1


@pytest.mark.parametrize("name", CHEATS)
def test_with_a_loose_audit_the_weight_pair_alone_refuses_the_cheats(verdicts_loose: dict[str, dict], name: str) -> None:
    verdict = verdicts_loose[name]
    assert verdict["reward"] == -1 and "weight response check" in verdict["reason"], verdict["reason"]
