"""GPU tests of issue 35, classes 5-8: the honest cases of each class accepted by the whole judge, the
views-instead-of-work cheats still refused for sharing memory, true degenerate tasks still task_error,
and the reference worker's audits on the GPU. Set CUDA_AGENT_RESULTS=folder to save the verdicts."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

ROOT = Path(__file__).parents[2]
SUITE = ROOT / "tests" / "adversarial"
pytestmark = pytest.mark.gpu

HONEST = [
    "00_honest_inplace_relu", "00_honest_inplace_ema",  # 5
    "00_honest_absmax_norm", "00_honest_new_gelu_kb88",  # 6
    "00_honest_contiguous_for_transposed_view", "00_honest_contiguous_for_transposed_view_permute",  # 7
    "00_honest_threshold_mask", "00_honest_threshold_mask_above_row_mean",  # 8
    "00_honest_argmax_affine_rows", "00_honest_max_with_indices",  # 8
    "00_honest_output_view_like_reference",
]  # fmt: skip
REFUSED = {
    "05_transpose_view_python_view": "shares memory with input 0",
    "05_transpose_view_cpp_view": "shares memory with input 0",
    "05_chunk_views_python_view": "shares memory with input 0",
    "05_duplicate_output_python_view": "shares memory with output",
    "03_tiny_output_zeros": "degenerate task",
    "03_constant_uniform_softmax": "degenerate task",
}


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    from cuda_agent.judge.decide.service import JudgeService

    cases = [SUITE / name for name in [*HONEST, *REFUSED]]
    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0))
    out = os.environ.get("CUDA_AGENT_RESULTS")
    judged: dict[str, dict] = {}
    with JudgeService(config) as service:
        for i, verdict in service.judge_many(cases):
            v = judged[cases[i].name] = verdict.to_dict()
            print(f"{cases[i].name:50s} {v['status']:12s} {v['reward']:+d} {v['reason'][:150]}", flush=True)
            if out:
                Path(out).mkdir(parents=True, exist_ok=True)
                (Path(out) / "output_rules.json").write_text(json.dumps(judged, indent=1))
    return judged


@pytest.mark.parametrize("name", HONEST)
def test_honest_case_is_accepted(verdicts: dict[str, dict], name: str) -> None:
    verdict = verdicts[name]
    assert verdict["status"] == "ok" and verdict["reward"] >= 1, f"{verdict['status']}: {verdict['reason']}"
    assert verdict["checks"]["degeneracy_audit"] == "passed"


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_cheat_or_degenerate_task_is_refused_for_the_right_reason(verdicts: dict[str, dict], name: str) -> None:
    verdict = verdicts[name]
    assert verdict["reward"] == -1 and REFUSED[name] in verdict["reason"], verdict["reason"]


def _prepare(name: str, tmp_path: Path) -> tuple[Any, dict[str, Any]]:
    from cuda_agent.judge.trusted.reference_worker import ReferenceWorker

    worker = ReferenceWorker()
    reply = worker.prepare(str(SUITE / name / "model.py"), str(tmp_path), 1, [11, 12, 13, 14, 15], 16, 1e-2, 1e-2)
    return worker, reply


@pytest.mark.parametrize(
    ("name", "degenerate"),
    [("00_honest_inplace_relu", False), ("00_honest_inplace_ema", False), ("00_honest_absmax_norm", False),
     ("00_honest_new_gelu_kb88", False), ("03_tiny_output_zeros", True), ("03_constant_uniform_softmax", True)],
)  # fmt: skip
def test_reference_worker_degeneracy_audit(tmp_path: Path, name: str, degenerate: bool) -> None:
    worker, reply = _prepare(name, tmp_path)
    assert bool(reply["degenerate"]) == degenerate, reply["degenerate"]
    if "inplace" in name:
        assert worker.aliases[0][0] == ["input 0"]  # the reference returns its updated input
    worker.end_judgment()


def test_reference_worker_allows_flips_at_the_cut_only(tmp_path: Path) -> None:
    import torch

    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.judge.common import tensorfile

    worker, reply = _prepare("00_honest_threshold_mask_above_row_mean", tmp_path)
    assert reply["degenerate"] == [] and worker.has_cuts
    (x,) = draw_inputs(worker.module, 99)
    mean = x.mean(dim=-1, keepdim=True)
    truth = x > mean
    path = tmp_path / "out.tensors"

    def verdict(mask: torch.Tensor) -> dict[str, Any]:
        tensorfile.save([mask], path)
        return worker.compare_timing(99, str(path), 1e-2, 1e-2, aliases=[[]], precision_k=64.0)

    assert verdict(x > x.double().mean(dim=-1, keepdim=True).float())["match"]  # another rounding of the mean
    near = (x - mean).abs().flatten().argmin()
    flipped = truth.clone().flatten()
    flipped[near] = ~flipped[near]
    assert verdict(flipped.view_as(truth))["match"]
    far = (x - mean).abs().flatten().argmax()
    flipped[far] = ~flipped[far]
    assert "compared exactly" in verdict(flipped.view_as(truth))["reason"]
    worker.end_judgment()
