"""Output comparison, degeneracy audit and timing statistics, on CPU tensors."""

from __future__ import annotations

import pytest
import torch

from cuda_agent.judge.decide.stats import median_rse, ratio_with_bound, stat_of
from cuda_agent.judge.trusted.compare import Tolerance, compare_tensor
from cuda_agent.judge.trusted.degeneracy import degenerate_baselines

TOL = Tolerance()


def test_matching_output_passes() -> None:
    ref = torch.randn(64, 64)
    assert compare_tensor(ref, ref + 1e-4, TOL, "output") is None


def test_mismatch_reports_count_index_and_size() -> None:
    ref = torch.zeros(4, 4) + 1
    out = ref.clone()
    out[2, 3] = 5.0
    problem = compare_tensor(ref, out, TOL, "output")
    assert problem is not None
    assert "1 of 16" in problem and "(2, 3)" in problem and "got 5" in problem


def test_nan_where_reference_is_finite_fails_but_matching_nan_passes() -> None:
    ref = torch.ones(8)
    out = ref.clone()
    out[1] = float("nan")
    assert "NaN/Inf" in (compare_tensor(ref, out, TOL, "output") or "")
    ref_nan = ref.clone()
    ref_nan[1] = float("nan")
    assert compare_tensor(ref_nan, out, TOL, "output") is None


@pytest.mark.parametrize(
    ("out", "expected"),
    [
        (torch.ones(3, 2), "shape"),
        (torch.ones(2, 3, dtype=torch.float64), "dtype"),
    ],
)
def test_shape_and_dtype_must_match_exactly(out: torch.Tensor, expected: str) -> None:
    assert expected in (compare_tensor(torch.ones(2, 3), out, TOL, "output") or "")


def test_tensor_subclass_is_refused() -> None:
    class Lazy(torch.Tensor):
        pass

    ref = torch.ones(3)
    assert "not a plain torch.Tensor" in (compare_tensor(ref, ref.as_subclass(Lazy), TOL, "output") or "")


def test_degeneracy_audit_finds_zero_and_constant_outputs() -> None:
    assert "all zeros" in degenerate_baselines(torch.randn(1000) * 1e-4, TOL)
    assert any(
        "mean" in d for d in degenerate_baselines(torch.full((100,), 3.0) + torch.randn(100) * 1e-4, TOL)
    )
    assert degenerate_baselines(torch.randn(1000), TOL) == []


def test_stats_and_rse() -> None:
    stat = stat_of([1.0, 2.0, 3.0, 4.0, 100.0])
    assert stat.median == 3.0 and stat.min == 1.0 and stat.samples == 5
    assert median_rse([1.0, 1.0, 1.0, 1.0]) == 0.0
    assert median_rse([1.0, 2.0]) == float("inf")


def test_speedup_bound_is_below_the_point_estimate() -> None:
    baseline = [2.0, 2.1, 1.9, 2.05, 1.95, 2.0]
    candidate = [1.0, 1.1, 0.9, 1.0, 1.05, 0.95]
    point, low = ratio_with_bound(baseline, candidate, paired=True)
    assert 1.8 < point < 2.2 and low <= point
    point_u, low_u = ratio_with_bound(baseline, candidate, paired=False)
    assert abs(point_u - 2.0) < 0.1 and low_u <= point_u


def test_output_that_barely_varies_along_a_dimension_is_degenerate() -> None:
    rows = torch.randn(1, 256).expand(64, 256) + 1e-4 * torch.randn(64, 256)
    assert any("first slice along dim 0" in d for d in degenerate_baselines(rows, TOL))
    assert degenerate_baselines(torch.randn(64, 256), TOL) == []


def test_constant_parameters_and_buffers_are_varied() -> None:
    from cuda_agent.judge.trusted.reference_worker import vary_constant_state

    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.BatchNorm1d(8))
    weight_before = model[0].weight.clone()
    varied = vary_constant_state(model)
    bn = model[1]
    assert {"1.weight", "1.bias", "1.running_mean", "1.running_var"} <= set(varied)
    assert bool((bn.running_var > 0).all()) and bool((bn.weight > 0).all())
    assert not bool((bn.weight == 1).all()) and not bool((bn.running_mean == 0).all())
    assert torch.equal(model[0].weight, weight_before)  # random weights are left as they are
