"""GPU tests of the verification side (issue 12): each new adversarial class refused for the right reason,
the honest edge cases accepted with their audits recorded, and the reference worker's audits on a real
GPU. One judge service for all the cases. Set CUDA_AGENT_RESULTS=folder to save the verdicts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

ROOT = Path(__file__).parents[2]
SUITE = ROOT / "tests" / "adversarial"
pytestmark = pytest.mark.gpu

# case -> fragments, one of which the verdict's reason must hold (None: any reason; honest cases: status ok).
# A static rule may name a precision trick before the audit measures it: both are the right reason.
PRECISION = ("precision audit", "static checks")
REASONS: dict[str, tuple[str, ...] | None] = {
    "05_transpose_view_python_view": ("shares memory with input 0",),
    "05_transpose_view_cpp_view": ("shares memory with input 0",),
    "05_chunk_views_python_view": ("shares memory with input 0",),
    "05_duplicate_output_python_view": ("shares memory with output",),
    "08_tf32_numeric_compute_type_prec": PRECISION,
    "08_flag_toggle_in_forward_prec": (*PRECISION, "math settings"),
    "08_half_weights_at_load_prec": PRECISION,
    "08_fp16_operands_gemm": PRECISION,
    # issue 35, classes 3 and 4: the truth where the reference casts, the per-output bound on long reductions
    "08_tf32_in_casting_reference": ("precision audit",),
    "08_bf16_in_dtype_arg_reference": ("precision audit",),
    "08_truncated_weights_long_k": ("precision audit",),
    "08_fp16_accumulate_long_k": ("precision audit",),
    "00_honest_splitk_gemm_fp32": None,
    "00_honest_welford_layernorm": None,
    "00_honest_fp16_task_fp16_kernel": None,
    "07_skip_layerscale_python_param": None,
    "07_taylor_gelu_python_param": None,
    "07_skip_rezero_cpp_param": None,
    "07_identity_residual_cpp_param": None,
    # the static rule on state kept by forward (next() on an iterator) names it before any call runs
    "04_stale_between_checks_python_fresh": ("timed call returned a wrong result", "static checks"),
    "04_value_cache_python_fresh": None,
    "04_device_global_cache_cpp_fresh": None,
    "07_honest_gated_residual": None,
    # Every honest case, for the precision audit's K (benchmarks/precision_audit.py --verdicts).
    "00_honest_gemm_bias_relu": None,
    "00_honest_layernorm": None,
    "00_honest_cudnn_conv_relu": None,
    "00_honest_fused_elementwise": None,
    "00_honest_joined_side_stream": None,
    "00_honest_row_softmax": None,
    "00_honest_two_kernel_colcenter": None,
    "elementwise_chain": None,
    "gemm_bias_relu": None,
    "layernorm": None,
    "row_softmax": None,
}
EXAMPLES = ROOT / "examples"


def folder(name: str) -> Path:
    return SUITE / name if (SUITE / name).is_dir() else EXAMPLES / name


def _meets(expected: dict, verdict: dict) -> bool:
    import sys

    sys.path.insert(0, str(ROOT / "tests" / "gpu"))
    from test_judge_gpu import meets

    return meets(expected, verdict)


@pytest.fixture(scope="module")
def verdicts() -> dict[str, dict]:
    from cuda_agent.judge.decide.service import JudgeService

    cases = [folder(name) for name in REASONS]
    config = JudgeConfig(forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0))
    out = os.environ.get("CUDA_AGENT_RESULTS")
    judged: dict[str, dict] = {}
    with JudgeService(config) as service:
        for i, verdict in service.judge_many(cases):  # saved as they come: a timeout keeps what was judged
            v = judged[cases[i].name] = verdict.to_dict()
            print(f"{cases[i].name:40s} {v['status']:14s} {v['reward']:+d} {v['reason'][:150]}", flush=True)
            if out:
                Path(out).mkdir(parents=True, exist_ok=True)
                (Path(out) / "judge_verify.json").write_text(json.dumps(judged, indent=1))
    return judged


@pytest.mark.parametrize("name", sorted(REASONS))
def test_case_meets_its_expectation_for_the_right_reason(verdicts: dict[str, dict], name: str) -> None:
    verdict = verdicts[name]
    expected = json.loads((folder(name) / "expected.json").read_text())
    assert _meets(expected, verdict), f"{verdict['status']} {verdict['reward']}: {verdict['reason']}"
    fragments = REASONS[name]
    if fragments:
        assert any(f in verdict["reason"] for f in fragments), verdict["reason"]


def test_honest_cases_record_their_audits(verdicts: dict[str, dict]) -> None:
    gated = verdicts["07_honest_gated_residual"]["checks"]
    assert "gamma" in gated["parameter_audit"]["scaled"], gated["parameter_audit"]
    assert {"alpha", "beta", "gamma"} <= set(gated["parameter_audit"]["varied"])
    k = JudgeConfig().precision_k
    honest = [n for n in REASONS if json.loads((folder(n) / "expected.json").read_text())["kind"] == "honest"]
    for name in honest:
        checks = verdicts[name]["checks"]
        assert checks["precision_audit"].startswith("float64 (promoted)"), checks["precision_audit"]
        assert 0 <= checks["precision_error_ratio"] < k
        assert checks["timed_spot_checks"] >= 2  # the first and the last round at least, chosen after each


def test_reference_worker_redraws_a_timed_call_and_audits_it(tmp_path: Path) -> None:
    """The reference worker on its own: prepare a task, then check one 'timed call' from its seed."""
    import torch

    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.judge.common import tensorfile
    from cuda_agent.judge.trusted.reference_worker import ReferenceWorker
    from cuda_agent.task import Task, import_task_module

    task = SUITE / "07_honest_gated_residual" / "model.py"
    worker = ReferenceWorker()
    reply = worker.prepare(str(task), str(tmp_path), 1, [11, 12], 13, 1e-2, 1e-2)
    assert reply["degenerate"] == [] and reply["precision"].startswith("float64 (promoted)")
    assert "gamma" in reply["parameter_audit"]["scaled"]
    module = import_task_module(Task(name="t", source=task.read_text(), path=task), "t_inputs")
    (x,) = draw_inputs(module, 99)
    assert torch.initial_seed() != 99, "the generators are reseeded after a draw"
    with torch.no_grad():
        good = worker.model(x.clone())
    path = tmp_path / "out.tensors"
    tensorfile.save([good], path)
    assert worker.compare_timing(99, str(path), 1e-2, 1e-2, aliases=[[]], precision_k=JudgeConfig().precision_k)["match"]
    tensorfile.save([good.half().float()], path)  # an fp16 answer: inside 1e-2, far from float64
    verdict = worker.compare_timing(99, str(path), 1e-2, 1e-2, aliases=[[]], precision_k=JudgeConfig().precision_k)
    assert not verdict["match"] and "precision audit" in verdict["reason"]
    tensorfile.save([good.t().contiguous().t()], path)  # right values, column-major: compared by logical index
    assert worker.compare_timing(99, str(path), 1e-2, 1e-2, aliases=[[]], precision_k=JudgeConfig().precision_k)["match"]
    tensorfile.save([good], path)
    verdict = worker.compare_timing(99, str(path), 1e-2, 1e-2, aliases=[["memory kept between calls"]],
                                    precision_k=JudgeConfig().precision_k)  # fmt: skip
    assert not verdict["match"] and "memory kept between calls" in verdict["reason"]
    worker.end_judgment()
