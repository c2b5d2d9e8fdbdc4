"""GPU tests of issue 35, classes 1 and 2: parameters moved to a generic point (trusted/perturb.py) and inputs
made to matter on every draw (trusted/input_audit.py).

Each cheat of tests/adversarial/19_* (an initialiser's structure assumed) and 20_* (an input ignored) is
judged twice: with both mechanisms switched off (the judge before them) it must be accepted, which shows
that it is a working cheat; with them on it must be rejected with its expected reason. The honest cases
00_honest_identity_init_gemm and 00_honest_reads_every_input must be accepted with the mechanisms on, and
their verdicts must record what was moved and scaled. Set CUDA_AGENT_RESULTS=folder to save the verdicts.

    PYTHONPATH=src python -m pytest -q -m gpu tests/gpu/test_parameters_and_inputs_gpu.py
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from suite_verdicts import SUITE, judge_cases, meets_expectation

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

pytestmark = pytest.mark.gpu

CHEATS = [
    "19_identity_init_skip_gemm",
    "19_permutation_init_gather",
    "19_dirac_conv_copy",
    "19_masked_depthwise_conv",
    "20_ignored_two_inputs_fp16",
    "20_ignored_target_rowwise_mse",
]
HONEST = ["00_honest_identity_init_gemm", "00_honest_reads_every_input"]


@pytest.fixture(scope="module")
def verdicts_on() -> dict[str, dict]:
    return judge_cases(CHEATS + HONEST, "issue35_on.json")


@pytest.fixture(scope="module")
def verdicts_off() -> dict[str, dict]:
    return judge_cases(CHEATS, "issue35_off.json", perturb_parameters=False, input_audit=False)


@pytest.mark.parametrize("name", CHEATS)
def test_cheat_passed_the_judge_before_issue_35(verdicts_off: dict[str, dict], name: str) -> None:
    verdict = verdicts_off[name]
    assert verdict["status"] == "ok" and verdict["reward"] >= 1, f"{verdict['status']}: {verdict['reason']}"


@pytest.mark.parametrize("name", CHEATS + HONEST)
def test_case_meets_its_expectation_with_the_audits(verdicts_on: dict[str, dict], name: str) -> None:
    verdict = verdicts_on[name]
    assert meets_expectation(name, verdict), f"{verdict['status']} {verdict['reward']}: {verdict['reason']}"


def test_honest_verdicts_record_what_was_moved_and_scaled(verdicts_on: dict[str, dict]) -> None:
    gemm = verdicts_on["00_honest_identity_init_gemm"]["checks"]
    assert {"proj.weight", "proj.bias"} <= set(gemm["parameter_audit"]["perturbed"]), gemm["parameter_audit"]
    product = verdicts_on["00_honest_reads_every_input"]["checks"]["input_audit"]
    assert "input 1" in product["made_to_matter"] and product["ignored"] == [], product
    assert "input 0" in product["matter"]


IGNORING_TASK = '''
import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x, y, z):
        return torch.relu(x) + 0 * y.sum()


def get_inputs():
    return [torch.randn(1024, 1024), torch.randn(1024, 1024), torch.randn(1024, 1024)]


def get_init_inputs():
    return []
'''


def test_a_task_that_ignores_inputs_is_a_task_error(tmp_path: Path) -> None:
    from cuda_agent.judge.decide.service import JudgeService

    case = tmp_path / "ignoring"
    case.mkdir()
    (case / "model.py").write_text(IGNORING_TASK)
    # Any submission: the task fails before the candidate is loaded.
    (case / "model_new.py").write_text((SUITE / "00_honest_reads_every_input" / "model_new.py").read_text())
    shutil.copytree(SUITE / "00_honest_reads_every_input" / "kernels", case / "kernels")
    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0))
    with JudgeService(config) as service:
        ((_, verdict),) = list(service.judge_many([case]))
    v = verdict.to_dict()
    assert v["status"] == "task_error" and "input 1, input 2" in v["reason"], v["reason"]


def test_reference_worker_moves_the_state_and_draws_transformed_inputs(tmp_path: Path) -> None:
    """The reference worker on its own, on the GPU: the state it saves for the candidate is dense where the
    task's was a permutation, and the fp16 product task's inputs are drawn scaled in both workers."""
    import torch

    from cuda_agent.judge.candidate.inputs import draw_inputs, fingerprint
    from cuda_agent.judge.trusted.reference_worker import ReferenceWorker
    from cuda_agent.task import Task, import_task_module

    worker = ReferenceWorker()
    perm = SUITE / "19_permutation_init_gather" / "model.py"
    reply = worker.prepare(str(perm), str(tmp_path), 5, [11, 12, 13, 14, 15], 17, 1e-2, 1e-2)
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    mix = state["state_dict"]["mix"]
    assert bool((mix != 0).all()) and "mix" in reply["parameter_audit"]["perturbed"]
    worker.end_judgment()

    product = SUITE / "20_ignored_two_inputs_fp16" / "model.py"
    reply = worker.prepare(str(product), str(tmp_path), 6, [21, 22, 23, 24, 25], 27, 1e-2, 1e-2)
    state = torch.load(tmp_path / "state.pt", weights_only=True)
    transforms = state["input_transforms"]
    assert transforms is not None and transforms[1][0] > 1.0, reply["input_audit"]
    module = import_task_module(Task(name="t", source=product.read_text(), path=product), "t_product")
    assert fingerprint(draw_inputs(module, 21, transforms=transforms)) == reply["input_prints"][0]
    x, a, b = draw_inputs(module, 21, transforms=transforms)
    with torch.no_grad():
        truth = worker.model(x, a, b)
    assert bool(torch.isfinite(truth).all())
    assert not torch.allclose(truth.float(), torch.relu(x).float(), atol=1e-2, rtol=1e-2), "ignoring a, b fails now"
    worker.end_judgment()
