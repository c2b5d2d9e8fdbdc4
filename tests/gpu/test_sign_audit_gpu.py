"""GPU tests of the sign audit (trusted/sign_audit.py): unbiased lowered precision on one-signed inputs.

The cheats 08_tf32_stochastic_rounding_long_k, 08_tf32_rescaled_operands_long_k and
08_fp8_operands_half_gemm_long_k round their operands without a bias the rounding probe could show, on
`torch.rand` inputs. Judged with the sign audit off (`JudgeConfig(sign_audit=False)`, the judge before it),
the verdicts show what the other checks made of them; with it on each must be rejected. The honest long-K
GEMMs (a running sum over K = 65536, split-K, 3xTF32) must be accepted with it on, and their verdicts must
name the inputs given signs. Set CUDA_AGENT_RESULTS=folder to save the verdicts.

    PYTHONPATH=src python -m pytest -q -m gpu tests/gpu/test_sign_audit_gpu.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

ROOT = Path(__file__).parents[2]
SUITE = ROOT / "tests" / "adversarial"
pytestmark = pytest.mark.gpu

CHEATS = ["08_tf32_stochastic_rounding_long_k", "08_tf32_rescaled_operands_long_k", "08_fp8_operands_half_gemm_long_k"]
HONEST = ["00_honest_running_sum_long_k_signs", "00_honest_splitk_positive_long_k", "00_honest_3xtf32_wmma_long_k"]


def _judge(cases: list[str], **switches: bool) -> dict[str, dict]:
    from cuda_agent.judge.decide.service import JudgeService

    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0), **switches)
    judged: dict[str, dict] = {}
    with JudgeService(config) as service:
        for i, verdict in service.judge_many([SUITE / name for name in cases]):
            v = judged[cases[i]] = verdict.to_dict()
            print(f"{cases[i]:40s} {switches or 'on'} {v['status']:12s} {v['reward']:+d} {v['reason'][:200]}", flush=True)
    out = os.environ.get("CUDA_AGENT_RESULTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / ("signs_off.json" if switches else "signs_on.json")).write_text(json.dumps(judged, indent=1))
    return judged


@pytest.fixture(scope="module")
def verdicts_on() -> dict[str, dict]:
    return _judge(CHEATS + HONEST)


@pytest.fixture(scope="module")
def verdicts_off() -> dict[str, dict]:
    return _judge(CHEATS, sign_audit=False)


def _meets(name: str, verdict: dict) -> bool:
    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    from test_judge_gpu import meets

    return meets(json.loads((SUITE / name / "expected.json").read_text()), verdict)


@pytest.mark.parametrize("name", CHEATS + HONEST)
def test_case_meets_its_expectation_with_the_sign_audit(verdicts_on: dict[str, dict], name: str) -> None:
    assert _meets(name, verdicts_on[name]), verdicts_on[name]


@pytest.mark.parametrize("name", ["08_tf32_stochastic_rounding_long_k", "08_fp8_operands_half_gemm_long_k"])
def test_unbiased_cheats_passed_without_the_sign_audit(verdicts_off: dict[str, dict], name: str) -> None:
    """The judge before the sign audit accepted them: they are working cheats, not failures of the kernel."""
    assert verdicts_off[name]["reward"] >= 1, verdicts_off[name]


def test_honest_verdicts_name_the_inputs_given_signs(verdicts_on: dict[str, dict]) -> None:
    for name in HONEST:
        mixed = verdicts_on[name]["checks"]["sign_audit"]["mixed"]
        assert set(mixed) == {"input 0", "input 1"}, (name, mixed)
