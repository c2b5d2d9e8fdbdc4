"""The precision audit on a real GPU (issue 35, classes 3 and 4): the promoted truth made on CUDA for every
task file, the reference's own statistic inside the bound and what the truth costs against one forward;
real cuBLAS/cuDNN kernels in fp32 and torch.compile's kernels accepted, cuBLAS/cuDNN with TF32 or
fp16/bf16 operands refused; the emulated variants of benchmarks/precision_variants.py at GPU sizes.
Set CUDA_AGENT_RESULTS=folder to keep the rows."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def bench():
    return load_benchmark("precision_audit")


def _keep(name: str, rows: object) -> None:
    out = os.environ.get("CUDA_AGENT_RESULTS")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        (Path(out) / f"precision_{name}.json").write_text(json.dumps(rows, indent=1, default=str))


def test_real_kernels_fp32_and_compiled_pass_tf32_and_half_operands_are_refused(bench) -> None:
    from cuda_agent.judge.config import JudgeConfig

    k = JudgeConfig().precision_k
    rows = []
    with bench.math_flags():
        for case in bench.real_cases():
            rows += bench.pv.run_case(case, k, "cuda")[0]
    _keep("real", [r.__dict__ for r in rows])
    bad = [f"{r.case}: {r.variant} {r.statistic:.3g} / {r.bound:.3g}" for r in rows if not r.ok]
    assert not bad, bad
    assert any(r.variant == "cuDNN TF32" and r.statistic > r.bound for r in rows)
    assert any(r.variant == "cuBLAS TF32" and r.statistic > r.bound for r in rows)


def test_emulated_variants_at_gpu_sizes(bench) -> None:
    from cuda_agent.judge.config import JudgeConfig

    k = JudgeConfig().precision_k
    rows = []
    with bench.math_flags():
        for case in bench.pv.cases("gpu"):
            rows += bench.pv.run_case(case, k, "cuda")[0]
    _keep("emulated", [r.__dict__ for r in rows])
    bad = [f"{r.case}: {r.variant} {r.statistic:.3g} / {r.bound:.3g}" for r in rows if not r.ok]
    assert not bad, bad
    assert len([r for r in rows if r.honest]) >= 30


def test_every_task_file_has_a_truth_its_reference_meets_and_its_cost(bench) -> None:
    from cuda_agent.judge.config import JudgeConfig

    k = JudgeConfig().precision_k
    rows = bench.task_rows("cuda", k)
    _keep("tasks", rows)
    for row in rows:
        print(row)
    missing = [r["task"] for r in rows if not str(r.get("truth", "")).startswith("float64")]
    assert not missing, [r for r in rows if r["task"] in missing]
    stats = {r["task"]: r["reference_statistic"] for r in rows if r.get("reference_statistic") is not None}
    assert all(s < k / 2 for s in stats.values()), stats
    # one truth costs at most 100 ms on these tasks (one per verification set and checked timed call)
    slow = {r["task"]: r["truth_ms"] for r in rows if r["truth_ms"] > 100.0}
    assert not slow, slow


def test_a_truth_too_large_for_the_gpu_is_planned_on_blocks_and_still_catches_lowered_precision() -> None:
    """KernelBench's Softsign at its current size (4096 x 393216 float32, 6 GiB a set): the whole batch's
    float64 truth would need about 170 GiB, so it is planned on blocks of rows (truth_rows.py). Each block
    stands for its rows (checked against the full-batch output), an honest fp32 output passes the audit,
    and one computed through fp16 (inside the tolerance) is refused. On 2026-12-04 the whole-batch attempt
    ran the H200 out of memory and the audit had no truth (reward capped at 1)."""
    import torch

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.trusted.compare import Tolerance
    from cuda_agent.judge.trusted.output_verdict import judge_outputs
    from cuda_agent.judge.trusted.truth import TruthModel

    class Softsign(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x / (1 + torch.abs(x))

    torch.manual_seed(0)
    x = torch.rand(4096, 393216, device="cuda") * 2 - 1
    model, tol, k = Softsign(), Tolerance(1e-2, 1e-2), JudgeConfig().precision_k
    torch.cuda.reset_peak_memory_stats()
    exact = TruthModel(model)
    truths = exact.outputs([x])
    assert truths is not None and truths[0].rows is not None, exact.problem
    with torch.no_grad():
        reference = model(x)
    assert exact.confirm(truths, [reference], tol, [x]) is truths, exact.problem
    peak = torch.cuda.max_memory_allocated() / 2**30
    total = torch.cuda.get_device_properties(0).total_memory / 2**30
    assert peak < 0.75 * total, f"peak {peak:.1f} GiB of {total:.0f}"
    honest = judge_outputs([reference], [reference.clone()], tol, None, None, truths, k)
    assert honest["match"], honest
    with torch.no_grad():
        lowered = model(x.half()).float()
    assert float((lowered - reference).abs().max()) < 1e-2, "inside the tolerance: only the audit can see it"
    refused = judge_outputs([reference], [lowered], tol, None, None, truths, k)
    assert not refused["match"] and refused["kind"] == "precision", refused
    _keep("blocks", {"rows": exact.rows, "peak_gib": round(peak, 2), "name": exact.name,
                     "honest_ratio": honest["error_ratio"], "lowered_ratio": refused["error_ratio"]})  # fmt: skip


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_recurrent_layers_on_cuda_have_a_truth_and_it_catches_lowered_precision(kind: str) -> None:
    """KernelBench's recurrent tasks (level 3, 35-42: 6 layers of 256 over 512 steps; 35_LSTM's shapes, and
    a GRU of the same): on a GPU the layers took cuDNN's path, whose weight-buffer probe reads the
    parameters' storage (`set_`), and the truth refused them, capping every kernel at reward 1 (H100,
    2026-12-07). With the layers on PyTorch's own path for the truth (truth_recurrent.py: a fused cell per
    step, under the generic rule), a truth is made under the judge's math policy, the honest float32 output
    passes the audit, one computed through fp16 weights and inputs is refused, and cuDNN is on again after.
    Kept: the truth's cost, the ops it had no rule for, and the ratio of a cuDNN run with TF32 allowed."""
    import time

    import torch

    from cuda_agent.judge.common import math_policy
    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.trusted.compare import Tolerance
    from cuda_agent.judge.trusted.output_verdict import judge_outputs
    from cuda_agent.judge.trusted.truth import TruthModel

    class Task(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = getattr(torch.nn, kind)(128, 256, num_layers=6, batch_first=True)
            self.fc = torch.nn.Linear(256, 10)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out, _ = self.rnn(x)
            return self.fc(out[:, -1, :])

    math_policy.pin()  # what every judge worker runs under: no TF32 in cuDNN or cuBLAS
    torch.manual_seed(0)
    model, x = Task().cuda().eval(), torch.rand(10, 512, 128, device="cuda")
    tol, k = Tolerance(1e-2, 1e-2), JudgeConfig().precision_k
    exact = TruthModel(model)
    began = time.monotonic()
    truths = exact.outputs([x])
    seconds = time.monotonic() - began
    assert truths is not None, exact.problem
    assert torch.backends.cudnn.enabled, "cuDNN is on again for everything else"
    with torch.no_grad():
        reference = model(x)
        lowered = copy.deepcopy(model).half()(x.half()).float()
        with math_policy.flags_settable(torch):
            torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = True
        try:
            tf32 = model(x)
        finally:
            math_policy.pin()
    honest = judge_outputs([reference], [reference.clone()], tol, None, None, truths, k)
    refused = judge_outputs([reference], [lowered], tol, None, None, truths, k)
    with_tf32 = judge_outputs([reference], [tf32], tol, None, None, truths, k)
    _keep(f"recurrent_{kind}", {"truth_s": round(seconds, 2), "name": exact.name, "unmodelled": sorted(exact.unmodelled),
                                "honest_ratio": honest["error_ratio"], "lowered_ratio": refused["error_ratio"],
                                "lowered_match": refused["match"], "tf32_ratio": with_tf32["error_ratio"],
                                "tf32_match": with_tf32["match"]})  # fmt: skip
    assert honest["match"], honest
    assert not refused["match"], refused
