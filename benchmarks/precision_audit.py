"""Calibrate and check the precision audit (issue 35): false alarms, downgrades caught, the truth's cost.

The audit (src/cuda_agent/judge/trusted/precision.py) judges each output element against a float64
evaluation of the reference with every op promoted (truth.py), in units of the error an honest kernel in
the task's precision can have (truth_ops.py and the rule modules it names), and refuses a root-mean-square beyond k
(`JudgeConfig.precision_k`, widened for small outputs). One run reports:

1. **emulated kernels** (benchmarks/precision_variants.py): every honest ordering (running sums, FMA,
   split-K, trees, tiles, warp shuffles, Kahan, BLAS, Welford/Chan, online softmax, fast-math exp and
   rsqrt, half2 arithmetic) on fp32, fp16 and bf16 tasks, and every lowered precision (TF32, fp16/bf16
   operands, fp16/bf16 accumulators, weights cut to 15 mantissa bits), including tasks whose reference
   casts to float32, keeps an fp16 matmul or runs under autocast, and tasks with cancellation or
   discontinuities. Honest rows must pass (false alarms: 0); claimed downgrades must be refused;
2. **real kernels** (GPU only): cuBLAS and cuDNN in fp32 (TF32 off) and torch.compile's own kernels as
   honest, cuBLAS with TF32, fp16 or bf16 operands and cuDNN with TF32 as downgrades;
3. **task files** (tests/adversarial/*/model.py, examples/*/model.py, `--tasks`): a truth can be made
   for each, the reference's own statistic is inside the bound, and what the truth costs against one
   forward of the reference (the judge makes one per verification set and per checked timed call);
4. optionally the statistics the real judge recorded (`--verdicts FILE`: a JSON object case -> verdict,
   as tests/gpu/test_judge_verify_gpu.py writes with CUDA_AGENT_RESULTS).

    python benchmarks/precision_audit.py [--out DIR] [--scale cpu|gpu] [--tasks] [--verdicts FILE]

Runs on the CPU too (`--scale cpu`, no real-kernel rows). Prints a table and writes OUT/precision_audit.json;
exits 1 on any false alarm, missed downgrade or task without a truth (complex outputs have none by design).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

import precision_variants as pv  # noqa: E402
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402

from cuda_agent.judge.config import JudgeConfig  # noqa: E402
from cuda_agent.judge.trusted import precision  # noqa: E402
from cuda_agent.judge.trusted.truth import TruthModel  # noqa: E402


@contextlib.contextmanager
def math_flags(tf32: bool = False, reduced: bool = False) -> Iterator[None]:
    """PyTorch's precision flags for the length of a block (the judge pins them all off)."""
    cuda, cudnn = torch.backends.cuda.matmul, torch.backends.cudnn
    saved = (cuda.allow_tf32, cudnn.allow_tf32, cuda.allow_fp16_reduced_precision_reduction,
             cuda.allow_bf16_reduced_precision_reduction)  # fmt: skip
    cuda.allow_tf32 = cudnn.allow_tf32 = tf32
    cuda.allow_fp16_reduced_precision_reduction = cuda.allow_bf16_reduced_precision_reduction = reduced
    try:
        yield
    finally:
        (cuda.allow_tf32, cudnn.allow_tf32, cuda.allow_fp16_reduced_precision_reduction,
         cuda.allow_bf16_reduced_precision_reduction) = saved  # fmt: skip


def _flagged(fn: Callable[[nn.Module, list[torch.Tensor]], torch.Tensor], **flags: bool) -> Callable[..., torch.Tensor]:
    def run(model: nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
        with math_flags(**flags):
            return fn(model, inputs)

    return run


def _compiled(model: nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
    with math_flags():
        return torch.compile(model)(*inputs)


def real_cases() -> list[pv.Case]:
    """Kernels that really run on the GPU: cuBLAS/cuDNN under PyTorch's flags, and torch.compile."""
    forward: Callable[[nn.Module, list[torch.Tensor]], torch.Tensor] = lambda m, xs: m(*xs)  # noqa: E731

    def linear_cast(dtype: torch.dtype) -> Callable[[nn.Module, list[torch.Tensor]], torch.Tensor]:
        def run(model: nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
            lin = model.linear
            return nn.functional.linear(inputs[0].to(dtype), lin.weight.to(dtype), lin.bias.to(dtype)).float()

        return run

    def conv_cast(model: nn.Module, inputs: list[torch.Tensor]) -> torch.Tensor:
        return nn.functional.conv2d(inputs[0].bfloat16(), model.conv.weight.bfloat16(), padding=1).float()

    fp32 = pv.gemm_case(8192, 1024, 1024, pv.F32, "Linear fp32 on the GPU, K=8192")
    fp32.variants = [
        pv.Variant("cuBLAS fp32 (TF32 off)", True, _flagged(forward)),
        pv.Variant("torch.compile (inductor)", True, _compiled),
        pv.Variant("cuBLAS TF32", False, _flagged(forward, tf32=True)),
        pv.Variant("cuBLAS fp16 operands", False, _flagged(linear_cast(torch.float16))),
        pv.Variant("cuBLAS bf16 operands", False, _flagged(linear_cast(torch.bfloat16))),
    ]
    half = pv.gemm_case(8192, 1024, 1024, pv.F16, "Linear fp16 on the GPU, K=8192")
    half.variants = [
        pv.Variant("cuBLAS fp16, fp32 reduction", True, _flagged(forward)),
        pv.Variant("torch.compile (inductor)", True, _compiled),
        # cuBLAS may or may not reduce split-K partials in fp16 for this shape: reported, not claimed
        pv.Variant("cuBLAS fp16, reduced-precision reduction allowed", False, _flagged(forward, reduced=True), claimed=False),
    ]
    conv = pv.conv_case(64, 128, 64, 8)
    conv.name = "conv2d 3x3 on the GPU, C_in=64 (K=576)"
    conv.variants = [
        pv.Variant("cuDNN fp32 (TF32 off)", True, _flagged(forward)),
        pv.Variant("torch.compile (inductor)", True, _compiled),
        pv.Variant("cuDNN TF32", False, _flagged(forward, tf32=True)),
        pv.Variant("cuDNN bf16 operands", False, _flagged(conv_cast)),
    ]
    norm = pv.layernorm_case(4096, 4096)
    norm.name = "layer norm on the GPU, D=4096"
    norm.variants = [pv.Variant("ATen layer_norm", True, _flagged(forward)), pv.Variant("torch.compile (inductor)", True, _compiled)]
    soft = pv.softmax_case(4096, 4096)
    soft.name = "softmax on the GPU, D=4096"
    soft.variants = [pv.Variant("ATen softmax", True, _flagged(forward)), pv.Variant("torch.compile (inductor)", True, _compiled)]
    return [fp32, half, conv, norm, soft]


def task_rows(device: str, k: float) -> list[dict[str, Any]]:
    """A truth for every task file of the suite and the examples: made at all, the reference's own
    statistic, and the time of the truth against one forward of the reference (second call, warm)."""
    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.judge.trusted.audit import make_parameters_matter, vary_constant_state
    from cuda_agent.judge.trusted.compare import Tolerance
    from cuda_agent.task import Task, build_model, flatten_tensors, import_task_module

    rows, seen = [], set()
    for path in sorted((ROOT / "tests" / "adversarial").glob("*/model.py")) + sorted((ROOT / "examples").glob("*/model.py")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
        if digest in seen:
            continue
        seen.add(digest)
        name = path.parent.name
        print(f"... task {name}", file=sys.stderr, flush=True)
        row: dict[str, Any] = {"task": name}
        try:
            module = import_task_module(Task(name=name, source=path.read_text(), path=path), f"precision_task_{digest}")
            torch.manual_seed(1)
            model, _ = build_model(module, name)
            vary_constant_state(model)
            model = model.to(device).eval()
            inputs = draw_inputs(module, 2, device=device)
            make_parameters_matter(model, inputs, Tolerance(), budget_s=2.0)
            truth_model = TruthModel(model)
            def forward(model: nn.Module = model, inputs: list[Any] = inputs) -> Any:
                return model(*[x.clone() if isinstance(x, torch.Tensor) else x for x in inputs])

            with math_flags(), torch.no_grad():
                ref = flatten_tensors(forward())
                ref_ms = _timed(forward, device)
                truths = truth_model.outputs(inputs)
                truth_ms = _timed(lambda truth_model=truth_model, inputs=inputs: truth_model.outputs(inputs), device)
            row |= {"truth": truth_model.name if truths is not None else f"none: {truth_model.problem}",
                    "reference_ms": round(ref_ms, 3), "truth_ms": round(truth_ms, 3)}  # fmt: skip
            if truths is not None:
                stats = [precision.audit(r, r, t, k) for r, t in zip(ref, truths, strict=False) if t is not None and precision.auditable(r)]
                row["reference_statistic"] = max((a.statistic for a in stats), default=None)
                row["left_out"] = sum(a.left_out for a in stats)
        except Exception as exc:  # a task this script cannot load here: say so
            row["error"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        rows.append(row)
    return rows


def _timed(fn: Callable[[], Any], device: str) -> float:
    fn()  # warm: caches of the truth's tracked parameters, cuBLAS handles, kernels
    if device == "cuda":
        torch.cuda.synchronize()
    began = time.perf_counter()
    fn()
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - began) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=Path("precision-audit"))
    parser.add_argument("--scale", choices=("cpu", "gpu"), default=None, help="sizes (default: gpu on a GPU)")
    parser.add_argument("--tasks", action="store_true", help="also make a truth for every task file, timed")
    parser.add_argument("--verdicts", type=Path, help="verdicts JSON (case -> verdict) to report the judge's statistics")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    scale = args.scale or ("gpu" if device == "cuda" else "cpu")
    k = JudgeConfig().precision_k
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.time()
    rows: list[pv.Row] = []
    truth_seconds: dict[str, float] = {}
    catalogue = pv.cases(scale) + (real_cases() if device == "cuda" else [])
    with math_flags():
        for case in catalogue:
            print(f"... {case.name}", file=sys.stderr, flush=True)
            made, seconds = pv.run_case(case, k, device)
            rows += made
            truth_seconds[case.name] = round(seconds, 3)
    tasks = task_rows(device, k) if args.tasks else []

    print(f"\nprecision audit, k = {k:g} ({device}, {scale} sizes): statistic = RMS of error / honest allowance; "
          "honest rows must pass, downgrades must be refused\n")  # fmt: skip
    print(f"{'case':44s} {'variant':46s} {'kind':7s} {'statistic':>10s} {'bound':>6s} {'ref':>6s} {'left out':>8s}  result")
    for r in rows:
        kind = "honest" if r.honest else ("lowered" if r.claimed else "(info)")
        result = "ok" if r.ok else ("FALSE ALARM" if r.honest else "MISSED")
        print(f"{r.case[:44]:44s} {r.variant[:46]:46s} {kind:7s} {r.statistic:10.3g} {r.bound:6.3g} {r.reference:6.3g} "
              f"{r.left_out:8d}  {result}")  # fmt: skip
    honest = [r for r in rows if r.honest]
    lowered = [r for r in rows if not r.honest and r.claimed]
    false_alarms = [r for r in honest if not r.ok]
    missed = [r for r in lowered if not r.ok]
    if tasks:
        print(f"\n{'task file':45s} {'truth':28s} {'ref ms':>8s} {'truth ms':>9s} {'x':>6s} {'ref stat':>9s}")
        for t in tasks:
            ratio = t["truth_ms"] / t["reference_ms"] if t.get("reference_ms") else float("nan")
            stat = t.get("reference_statistic")
            print(f"{t['task'][:45]:45s} {str(t.get('truth', t.get('error', '')))[:28]:28s} {t.get('reference_ms', 0):8.3f} "
                  f"{t.get('truth_ms', 0):9.3f} {ratio:6.1f} {stat if stat is None else round(stat, 3)!s:>9s}")  # fmt: skip
    judged = {}
    if args.verdicts:
        for name, v in json.loads(args.verdicts.read_text()).items():
            checks = v.get("checks", {})
            judged[name] = {"status": v["status"], "reward": v["reward"], "statistic": checks.get("precision_error_ratio"),
                            "truth": checks.get("precision_audit"), "reason": v["reason"][:160]}  # fmt: skip
        print(f"\n{'judged case':45s} {'status':12s} {'reward':>6s} {'statistic':>9s}  truth")
        for name, v in sorted(judged.items()):
            print(f"{name[:45]:45s} {v['status']:12s} {v['reward']:6d} {v['statistic']!s:>9s}  {v['truth']}")
    # A complex output has no float64 truth by design (the judge caps its reward at 1: docs/design/precision.md);
    # any other task without one is a failure of the truth.
    no_truth = [t for t in tasks if not str(t.get("truth", "")).startswith("float64")
                and "complex" not in str(t.get("truth", ""))]
    task_times = [t["truth_ms"] for t in tasks if "truth_ms" in t]
    summary = {
        "k": k, "device": device, "scale": scale,
        "honest_rows": len(honest), "honest_dtypes": sorted({r.dtype for r in honest}),
        "false_alarms": [f"{r.case}: {r.variant}" for r in false_alarms],
        "lowered_rows": len(lowered), "missed": [f"{r.case}: {r.variant}" for r in missed],
        "max_honest_statistic": max((r.statistic for r in honest), default=None),
        "min_lowered_over_bound": min((r.statistic / r.bound for r in lowered), default=None),
        "truth_seconds_per_case": truth_seconds,
        "tasks_without_truth": [t["task"] for t in no_truth],
        "task_truth_ms_median": statistics.median(task_times) if task_times else None,
        "task_truth_ms_max": max(task_times) if task_times else None,
        "rows": [asdict(r) for r in rows], "tasks": tasks, "judged": judged,
        "seconds": round(time.time() - started, 1),
    }  # fmt: skip
    print(f"\n{len(honest)} honest rows ({', '.join(summary['honest_dtypes'])}): {len(false_alarms)} false alarms, "
          f"largest statistic {summary['max_honest_statistic']:.3g}; {len(lowered)} lowered-precision rows: "
          f"{len(missed)} missed, smallest statistic/bound {summary['min_lowered_over_bound']:.3g}; k = {k:g}")  # fmt: skip
    if tasks:
        print(f"task files: {len(tasks)}, without a truth: {summary['tasks_without_truth']}, truth ms median "
              f"{summary['task_truth_ms_median']}, max {summary['task_truth_ms_max']}")  # fmt: skip
    (args.out / "precision_audit.json").write_text(json.dumps(summary, indent=1, default=str))
    return 0 if not false_alarms and not missed and not no_truth else 1


if __name__ == "__main__":
    raise SystemExit(main())
