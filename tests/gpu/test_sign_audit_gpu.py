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

import pytest
from suite_verdicts import judge_cases, meets_expectation

pytestmark = pytest.mark.gpu

CHEATS = ["08_tf32_stochastic_rounding_long_k", "08_tf32_rescaled_operands_long_k", "08_fp8_operands_half_gemm_long_k"]
HONEST = ["00_honest_running_sum_long_k_signs", "00_honest_splitk_positive_long_k", "00_honest_3xtf32_wmma_long_k"]


@pytest.fixture(scope="module")
def verdicts_on() -> dict[str, dict]:
    return judge_cases(CHEATS + HONEST, "signs_on.json")


@pytest.fixture(scope="module")
def verdicts_off() -> dict[str, dict]:
    return judge_cases(CHEATS, "signs_off.json", sign_audit=False)


@pytest.mark.parametrize("name", CHEATS + HONEST)
def test_case_meets_its_expectation_with_the_sign_audit(verdicts_on: dict[str, dict], name: str) -> None:
    assert meets_expectation(name, verdicts_on[name]), verdicts_on[name]


# On an H100 (2026-12-05) the judge without the sign audit accepted the stochastically rounded TF32 GEMM (+1)
# and refused the other two on their own draws (precision audit 4.67 and 6.29 of about 3): only the first
# is shown to need the sign audit on a GPU; all three need it in the CPU emulation at other draws.
@pytest.mark.parametrize("name", ["08_tf32_stochastic_rounding_long_k"])
def test_unbiased_cheats_passed_without_the_sign_audit(verdicts_off: dict[str, dict], name: str) -> None:
    """The judge before the sign audit accepted it: a working cheat, not a failure of the kernel."""
    assert verdicts_off[name]["reward"] >= 1, verdicts_off[name]


def test_honest_verdicts_name_the_inputs_given_signs(verdicts_on: dict[str, dict]) -> None:
    for name in HONEST:
        mixed = verdicts_on[name]["checks"]["sign_audit"]["mixed"]
        assert set(mixed) == {"input 0", "input 1"}, (name, mixed)
