"""Outputs the comparison and the precision audit used to pass unread, on the CPU (a white-box review of
2026-12-04 found each with a cheat the judge's own code accepted):

- complex outputs: a float64 copy of a complex tensor keeps its real part, so the imaginary part was never
  compared, and the float64 truth followed only real parts;
- float64 outputs: the precision audit skipped them, so fp16 operands behind an fp32 GEMM returned with
  `.double()`, or fp32 arithmetic in a float64 task, passed on the tolerance alone;
- boolean and integer outputs of float maths: a flip was allowed wherever the reference's value lay within
  atol/rtol (1e-2) of the cut, so a sign mask of a GEMM with fp16 operands passed; a flip now also needs
  the float64 truth to call the decision unknowable within an honest computation's error.

Each cheat is built here, passes the judge as it was, and must be refused; each honest variant must pass.
"""

from __future__ import annotations

import torch

from cuda_agent.judge.trusted import cuts, truth
from cuda_agent.judge.trusted.compare import Tolerance, compare_tensor, passes_with
from cuda_agent.judge.trusted.output_verdict import judge_outputs

TOL = Tolerance()
K_AUDIT = 3.0


def _split_k(a: torch.Tensor, b: torch.Tensor, parts: int) -> torch.Tensor:
    """An honest reordering: the reduction over K in `parts` partial products, added in turn."""
    step = a.shape[-1] // parts
    partial = [a[..., i * step : (i + 1) * step] @ b[i * step : (i + 1) * step] for i in range(parts)]
    total = partial[0]
    for p in partial[1:]:
        total = total + p
    return total


def _judge(model: torch.nn.Module, inputs: list[torch.Tensor], produced: list[torch.Tensor],
           with_cuts: bool = False, audit: bool = True) -> dict:  # fmt: skip
    """The reference worker's decision on one call: its outputs, its truth, its cut alternatives."""
    with torch.no_grad():
        outputs = model(*inputs)
    outputs = list(outputs) if isinstance(outputs, tuple) else [outputs]
    exact = truth.TruthModel(model).outputs(inputs) if audit else None
    alts = cuts.alternatives(lambda: [model(*[x.clone() for x in inputs])], outputs, TOL) if with_cuts else None
    return judge_outputs(outputs, produced, TOL, None, None, exact, K_AUDIT if audit else None, alts)


# --- complex outputs ----------------------------------------------------------------------------------------


def test_complex_outputs_are_compared_in_both_parts() -> None:
    torch.manual_seed(0)
    ref = torch.randn(64, 33, dtype=torch.complex64)
    real_only = torch.complex(ref.real, torch.zeros_like(ref.real))
    problem = compare_tensor(ref, real_only, TOL, "output") or ""
    assert "imaginary" in problem and "differ" in problem
    assert compare_tensor(ref, ref.clone(), TOL, "output") is None
    assert compare_tensor(ref.t(), ref.t().contiguous(), TOL, "output") is None, "by logical index"
    assert compare_tensor(ref, ref.conj().conj(), TOL, "output") is None, "a lazily conjugated view resolved"
    assert not passes_with(ref, torch.zeros(()), TOL)
    assert passes_with(torch.zeros(8, dtype=torch.complex64), torch.zeros(()), TOL)


class Spectrum(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.fft.rfft(x, dim=-1)


def test_a_reference_with_complex_tensors_has_no_truth_and_fails_closed() -> None:
    torch.manual_seed(1)
    model, x = Spectrum(), torch.randn(16, 256)
    made = truth.TruthModel(model)
    assert made.outputs([x]) is None and "complex" in made.problem
    garbage = model(x).clone()
    garbage.imag.fill_(1e9)
    assert not _judge(model, [x], [garbage])["match"]
    honest = _judge(model, [x], [torch.fft.fft(x, dim=-1)[..., :129]])
    assert honest["match"] and honest["no_truth"] == ["output"], "correct, but nothing vouches for its precision"


# --- float64 outputs ----------------------------------------------------------------------------------------


class GemmAsDouble(torch.nn.Module):
    """An fp32 Linear whose result is handed on in float64."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(1024, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x).double()


class DoubleGemm(torch.nn.Module):
    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a @ b


def test_float64_outputs_get_the_precision_audit() -> None:
    torch.manual_seed(2)
    model, x = GemmAsDouble(), torch.randn(32, 1024)
    w, b = model.linear.weight.detach(), model.linear.bias.detach()
    fp16_operands = (x.half().float() @ w.half().float().t() + b).double()
    found = _judge(model, [x], [fp16_operands])
    assert not found["match"] and found["kind"] == "precision", found
    assert _judge(model, [x], [fp16_operands], audit=False)["match"], "the tolerance alone lets it through"
    assert _judge(model, [x], [(_split_k(x, w.t(), 8) + b).double()])["match"], "an honest split-K passes"

    a, bb = torch.randn(32, 1024, dtype=torch.float64), torch.randn(1024, 48, dtype=torch.float64)
    in_fp32 = (a.float() @ bb.float()).double()
    found = _judge(DoubleGemm(), [a, bb], [in_fp32])
    assert not found["match"] and found["kind"] == "precision", "fp32 arithmetic in a float64 task"
    honest = _judge(DoubleGemm(), [a, bb], [_split_k(a, bb, 16)])
    assert honest["match"] and honest["error_ratio"] < K_AUDIT / 2, honest


# --- boolean outputs of float maths -------------------------------------------------------------------------


class SignHash(torch.nn.Module):
    """Sign bits of a random projection: every element is a cut of a length-1024 reduction."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = torch.nn.Parameter(torch.randn(1024, 256) / 32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return (x @ self.proj) > 0


def test_flips_at_a_cut_need_the_truths_doubt_not_only_the_tolerance() -> None:
    torch.manual_seed(3)
    model, x = SignHash(), torch.randn(1024, 1024)
    proj = model.proj.detach()
    fp16_operands = (x.half().float() @ proj.half().float()) > 0
    with torch.no_grad():
        flips = int((fp16_operands != model(x)).sum())
    assert 0 < flips <= cuts.FLIP_SHARE * fp16_operands.numel(), "few flips, each near the cut"
    assert _judge(model, [x], [fp16_operands], with_cuts=True, audit=False)["match"], "the tolerance window admits them"
    found = _judge(model, [x], [fp16_operands], with_cuts=True)
    assert not found["match"] and "honest computation" in found["reason"], found
    assert _judge(model, [x], [_split_k(x, proj, 16) > 0], with_cuts=True)["match"], "an honest split-K passes"


def test_the_tolerance_window_stands_where_the_truth_cannot_vouch_for_itself() -> None:
    ref = torch.tensor([True, False, True, False])
    near_cut = torch.tensor([True, True, False, False])
    certain = truth.Truth(ref.clone(), None, torch.bool)
    assert not bool(cuts.within_honest_error(near_cut, ref, certain).any()), "the truth is sure: no flips"
    unsure = truth.Truth(ref.clone(), torch.tensor([float("inf"), 0.0, 0.0, 0.0]), torch.bool)
    assert cuts.within_honest_error(near_cut, ref, unsure).tolist() == [True, False, False, False]
    disagrees = truth.Truth(~ref, None, torch.bool)  # the truth differs where it calls itself certain
    assert cuts.within_honest_error(near_cut, ref, disagrees).tolist() == near_cut.tolist()
    block = truth.Truth(ref[2:].clone(), None, torch.bool, rows=(2, 4))
    assert cuts.within_honest_error(near_cut, ref, block).tolist() == [True, True, False, False], "rows outside"
    assert cuts.within_honest_error(near_cut, ref, None).tolist() == near_cut.tolist()
