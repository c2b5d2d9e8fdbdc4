"""The verification side of the trust boundary, on CPU tensors: the parameter audit (zero and tiny
parameters made to matter), the degenerate baselines (an input returned, a low-order polynomial), the
precision audit against float64, and the memory rule (aliasing). Each test builds the cheat
it guards against and shows the judge's decision function refusing it while the honest answer passes."""

from __future__ import annotations

import torch

from cuda_agent.judge.candidate import aliasing
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted import layout, precision
from cuda_agent.judge.trusted.audit import differs, make_parameters_matter, vary_constant_state
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.degeneracy import degenerate_baselines
from cuda_agent.judge.trusted.reference_worker import judge_outputs
from cuda_agent.judge.trusted.truth import TruthModel

TOL = Tolerance()


class GatedResidual(torch.nn.Module):
    """y = x + alpha * tanh(W x) + gamma * relu(W x): a ReZero gate (alpha = 0) and a LayerScale gain."""

    def __init__(self, dim: int = 64) -> None:
        super().__init__()
        self.lin = torch.nn.Linear(dim, dim)
        self.alpha = torch.nn.Parameter(torch.zeros(1))
        self.gamma = torch.nn.Parameter(1e-5 * torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x)
        return x + self.alpha * torch.tanh(h) + self.gamma * torch.relu(h)


def _skip_branches(model: GatedResidual, x: torch.Tensor) -> torch.Tensor:
    """The cheat: assume the gate and the gain are negligible and return the residual alone."""
    return x.clone()


def test_zero_scalar_gate_and_tiny_gain_are_made_to_matter() -> None:
    torch.manual_seed(0)
    model = GatedResidual()
    x = torch.randn(32, 64)
    with torch.no_grad():
        naive = model(x)
    # Against the task's own defaults the cheat passes, and the degeneracy audit sees the identity.
    assert not differs([naive], [_skip_branches(model, x)], TOL)
    assert "input 0 returned as it is" in degenerate_baselines(naive, TOL, [x])

    varied = vary_constant_state(model)
    assert {"alpha", "gamma"} <= set(varied)  # the scalar gate is varied too
    assert abs(float(model.alpha.detach())) >= 0.5
    report = make_parameters_matter(model, [x], TOL)
    assert "gamma" in report["scaled"] and report["do_not_matter"] == []
    with torch.no_grad():
        truth = model(x)
        without_gain = x + model.alpha * torch.tanh(model.lin(x))
    assert differs([truth], [_skip_branches(model, x)], TOL)
    assert differs([truth], [without_gain], TOL), "skipping the LayerScale branch must now fail"
    assert degenerate_baselines(truth, TOL, [x]) == []


def test_a_parameter_that_cannot_matter_is_reported_not_scaled_forever() -> None:
    class Unused(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(8))
            self.unused = torch.nn.Parameter(torch.randn(8))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x * self.w

    model = Unused()
    before = model.unused.detach().clone()
    report = make_parameters_matter(model, [torch.randn(4, 8)], TOL, max_steps=3)
    assert report["do_not_matter"] == ["unused"] and "w" not in report["scaled"]
    assert torch.allclose(model.unused.detach(), before * 1000)  # grown max_steps times, then given up


def test_low_order_polynomial_baseline_and_its_switch() -> None:
    x = torch.randn(4096)
    gelu_small = torch.nn.functional.gelu(0.05 * x)  # ~ 0.025 x + small quadratic term
    assert "a quadratic polynomial of input 0" in degenerate_baselines(gelu_small, TOL, [x])
    # A task that is itself affine (x * scale + shift) is not degenerate: the polynomial is the task.
    assert degenerate_baselines(1.5 * x + 0.25, TOL, [x], low_order=False) == []
    assert degenerate_baselines(torch.nn.functional.gelu(1.5 * x + 0.25), TOL, [x]) == []


def _gemm(a: torch.Tensor, b: torch.Tensor, cast: torch.dtype | None) -> torch.Tensor:
    if cast is None:
        return a @ b
    return a.to(cast).float() @ b.to(cast).float()


class _Matmul(torch.nn.Module):
    def __init__(self, b: torch.Tensor) -> None:
        super().__init__()
        self.b = torch.nn.Parameter(b)

    def forward(self, a: torch.Tensor) -> torch.Tensor:
        return a @ self.b


def test_precision_audit_refuses_half_and_bf16_operands_that_pass_the_tolerance() -> None:
    torch.manual_seed(1)
    a, b = torch.randn(128, 64), torch.randn(64, 128) * 0.05  # short K, small values: inside 1e-2
    (truth,) = TruthModel(_Matmul(b)).outputs([a]) or [None]
    ref = a @ b
    reordered = (a.reshape(128, 8, 8).transpose(0, 1) @ b.reshape(8, 8, 128)).sum(0)  # honest: other order
    k = JudgeConfig().precision_k
    for cheat in (torch.float16, torch.bfloat16):
        out = _gemm(a, b, cheat)
        assert judge_outputs([ref], [out], TOL, None, None, None, None)["match"], "tolerance alone passes"
        decided = judge_outputs([ref], [out], TOL, None, None, [truth], k)
        assert not decided["match"] and decided["kind"] == "precision"
        assert "precision audit" in decided["reason"] and decided["error_ratio"] > 10 * k
    honest = judge_outputs([ref], [reordered], TOL, None, None, [truth], k)
    assert honest["match"] and honest["error_ratio"] < 1


def test_precision_floor_admits_rounding_on_exact_references() -> None:
    x = torch.randn(1000)
    ref = torch.relu(x)
    (truth,) = TruthModel(torch.nn.ReLU()).outputs([x]) or [None]
    assert truth is not None
    found = precision.audit(ref, ref, truth, 3.0)
    assert found.reference == 0.0 and found.passed
    one_ulp = torch.nextafter(ref, torch.full_like(ref, float("inf")))
    assert precision.verdict(precision.audit(one_ulp, ref, truth, 3.0), "output") is None
    four_ulps = ref * (1 + 4 * 2.0**-23)
    assert precision.verdict(precision.audit(four_ulps, ref, truth, 3.0), "output") is not None


def test_views_and_aliases_are_refused_unless_the_reference_has_them() -> None:
    x = torch.randn(64, 32)
    ref = x.t().contiguous()  # the task materialises the transpose
    view = x.t()
    assert judge_outputs([ref], [view], TOL, None, None, None, None)["match"], "values alone pass"
    decided = judge_outputs([ref], [view], TOL, [[]], aliasing.aliases([view], [x]), None, None)
    assert not decided["match"] and "shares memory with input 0" in decided["reason"]
    same = x.clone()  # an identity-like task whose reference copies
    alias = judge_outputs([same], [x], TOL, [[]], aliasing.aliases([x], [x]), None, None)
    assert not alias["match"] and "input 0" in alias["reason"]
    # Where the reference itself returns a view of its input, so may the candidate.
    allowed = judge_outputs([x], [x], TOL, aliasing.aliases([x], [x]), aliasing.aliases([x], [x]), None, None)
    assert allowed["match"]
    # Two outputs in one buffer, where the reference's do not share memory.
    buf = torch.randn(2, 10)
    both = judge_outputs([buf[0].clone(), buf[0].clone()], [buf[0], buf[0]], TOL, [[], []],
                         aliasing.aliases([buf[0], buf[0]], []), None, None)  # fmt: skip
    assert not both["match"] and "output 1" in both["reason"]


def test_a_missing_or_malformed_alias_report_fails_closed() -> None:
    ref = torch.randn(4, 4)
    for report in (None, "x", [["input 0"], []], [[1]], [["a" * 100]]):
        assert not judge_outputs([ref], [ref.clone()], TOL, [[]], report, None, None)["match"]


def test_expanded_output_is_not_the_materialised_reference() -> None:
    row = torch.randn(1, 256)
    ref = row.repeat(64, 1)
    expanded = row.expand(64, 256)
    decided = judge_outputs([ref], [expanded], TOL, [[]], [[]], None, None)
    assert not decided["match"] and "elements that share memory" in decided["reason"]
    assert layout.significant_strides(torch.empty(1, 5)) == ((1, 1),)
