"""The issue-35 precision cases of tests/adversarial, their kernels' arithmetic emulated on the CPU.

Each cheat's CUDA kernel (TF32 or bf16 tensor cores where the reference casts or passes dtype=float32, 24-bit
weights and an fp16 accumulator on K = 8192) is reproduced operation by operation on a few rows of its task:
it passes atol = rtol = 1e-2, so only the precision audit can refuse it on the GPU, and the audit does; the
old rule (64 times the reference's own error) passed the class-4 ones, and had no truth for the class-3
ones. The honest kernels (split-K SGEMM, Welford LayerNorm) are reproduced the same way and pass."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest
import torch

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted import precision
from cuda_agent.judge.trusted.compare import Tolerance, compare_tensor
from cuda_agent.judge.trusted.truth import TruthModel
from cuda_agent.task import Task, build_model, import_task_module
from tests.benchmark_module import load_benchmark

variants = load_benchmark("precision_variants")
SUITE = Path(__file__).parents[1] / "adversarial"
K = JudgeConfig().precision_k
ROWS = 16


def task(name: str) -> tuple[torch.nn.Module, list[torch.Tensor]]:
    path = SUITE / name / "model.py"
    module = import_task_module(Task(name=name, source=path.read_text(), path=path), f"precision_case_{name}")
    torch.manual_seed(0)
    model, _ = build_model(module, name)
    inputs = [x[:ROWS] for x in module.get_inputs()]
    return model.eval(), inputs


def judged(name: str, out: torch.Tensor) -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, inputs = task(name)
    with torch.no_grad():
        ref = model(*inputs)
    (truth,) = TruthModel(model).outputs(inputs) or [None]
    assert truth is not None
    return truth, ref, out


def _tf32_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("08_tf32_in_casting_reference")
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    out = torch.relu(variants.running(variants.keep_bits(x, 10), variants.keep_bits(w, 10).t()) + b)
    return judged("08_tf32_in_casting_reference", out)


def _bf16_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("08_bf16_in_dtype_arg_reference")
    logits = variants.running(x.bfloat16().float(), model.weight.detach().bfloat16().float())
    return judged("08_bf16_in_dtype_arg_reference", torch.softmax(logits, dim=-1))


def _truncated_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("08_truncated_weights_long_k")
    w = model.linear.weight.detach()
    packed = w.contiguous().view(torch.uint8).reshape(*w.shape, 4)[:, :, 1:].contiguous()  # as the load hook
    unpacked = torch.cat([torch.zeros(*w.shape, 1, dtype=torch.uint8), packed], dim=-1).view(torch.float32)[..., 0]
    assert torch.equal(unpacked, variants.truncate_bits(w, 15))
    # lane-strided partial sums (32 lanes x 256 terms, FMA) reduced by the warp's butterfly
    lanes = variants.interleaved(x, unpacked.t().contiguous(), 32)
    return judged("08_truncated_weights_long_k", variants.tree(lanes) + model.linear.bias.detach())


def _fp16_accumulate_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("08_fp16_accumulate_long_k")
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    acc = variants.tensor_core_half_acc(x.float(), w.float().t(), torch.float16)
    return judged("08_fp16_accumulate_long_k", (acc.float() + b.float()).half())


def _splitk_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("00_honest_splitk_gemm_fp32")
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    return judged("00_honest_splitk_gemm_fp32", variants.split_k(x, w.t().contiguous(), 8) + b)


def _welford_case() -> tuple[Any, torch.Tensor, torch.Tensor]:
    model, (x,) = task("00_honest_welford_layernorm")
    return judged("00_honest_welford_layernorm", welford_layernorm(x, model.ln.weight.detach(), model.ln.bias.detach(), model.ln.eps))


def _merge(a: tuple[torch.Tensor, ...], b: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """Chan's merge as the kernel writes it (fp32, one rounding per operation)."""
    n = a[0] + b[0]
    safe = torch.where(n == 0, torch.ones_like(n), n)
    delta = b[1] - a[1]
    wb = b[0] / safe
    mean = a[1] + delta * wb
    m2 = a[2] + b[2] + delta * delta * a[0] * wb
    keep = n == 0
    return (n, torch.where(keep, a[1], mean), torch.where(keep, a[2], m2))


def _butterfly(s: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
    """The warp's xor-shuffle merges over the last dimension (32 lanes): lane 0's result."""
    for offset in (16, 8, 4, 2, 1):
        partner = torch.arange(32) ^ offset
        s = _merge(s, tuple(t[..., partner] for t in s))
    return tuple(t[..., 0] for t in s)


def welford_layernorm(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor, eps: float) -> torch.Tensor:
    rows, cols = x.shape
    v = x.reshape(rows, 32, 256).transpose(1, 2)  # thread t holds columns t + 256 j
    n = torch.zeros(rows, 256)
    mean = torch.zeros(rows, 256)
    m2 = torch.zeros(rows, 256)
    for j in range(32):
        n = n + 1
        delta = v[:, :, j] - mean
        mean = mean + delta / n
        m2 = variants.fma(m2, delta, v[:, :, j] - mean)
    warps = [_butterfly(tuple(t[:, 32 * w : 32 * w + 32] for t in (n, mean, m2))) for w in range(8)]
    stacked = tuple(torch.stack([w[i] for w in warps], dim=-1) for i in range(3))
    zeros = torch.zeros(rows, 24)
    total = _butterfly(tuple(torch.cat([t, zeros], dim=-1) for t in stacked))
    var = total[2] / cols
    rstd = (1.0 / torch.sqrt((var + eps).double())).float()  # rsqrtf: within an ulp or two
    return (x - total[1][:, None]) * rstd[:, None] * weight + bias


CHEATS = {"08_tf32_in_casting_reference": _tf32_case, "08_bf16_in_dtype_arg_reference": _bf16_case,
          "08_truncated_weights_long_k": _truncated_case, "08_fp16_accumulate_long_k": _fp16_accumulate_case}  # fmt: skip
HONEST = {"00_honest_splitk_gemm_fp32": _splitk_case, "00_honest_welford_layernorm": _welford_case}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CHEATS))
def test_each_cheat_passes_the_tolerance_and_is_refused_by_the_precision_audit(name: str) -> None:
    truth, ref, out = CHEATS[name]()
    assert compare_tensor(ref, out.to(ref.dtype), Tolerance(), "output") is None, "inside atol = rtol = 1e-2"
    found = precision.audit(out.to(ref.dtype), ref, truth, K)
    assert not found.passed and found.statistic > 1.5 * found.bound, found
    assert found.reference < 1.0
    if name in ("08_truncated_weights_long_k", "08_fp16_accumulate_long_k"):  # class 4: the old rule passed them
        exact = truth.value

        def rel(t: torch.Tensor) -> float:
            return float((t.double() - exact).norm() / exact.norm())

        assert rel(out) < 64 * rel(ref)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(HONEST))
def test_each_honest_kernel_passes_the_precision_audit(name: str) -> None:
    truth, ref, out = HONEST[name]()
    assert compare_tensor(ref, out.to(ref.dtype), Tolerance(), "output") is None
    found = precision.audit(out.to(ref.dtype), ref, truth, K)
    assert found.passed and found.statistic < K / 2, found
    assert math.isfinite(found.reference)
