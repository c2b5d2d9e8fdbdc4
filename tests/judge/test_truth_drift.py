"""truth_drift.running_sum_drift works out a plain fp32 running sum's error without a loop over K: it must
match the error of the loop itself, in any layout of the reduced dimension."""

from __future__ import annotations

import pytest
import torch

from cuda_agent.judge.common import rounding_probe
from cuda_agent.judge.trusted.truth_drift import running_sum_drift


def _loop_error(x: torch.Tensor) -> torch.Tensor:
    total = torch.zeros(x.shape[0])
    for k in range(x.shape[1]):
        total = total + x[:, k]
    return (total.double() - x.double().sum(dim=1)).abs()


@pytest.mark.parametrize("probed", [True, False])
def test_the_worked_out_error_is_the_loops_error(probed: bool) -> None:
    torch.manual_seed(3)
    x = torch.rand(16, 8192)
    if probed:  # the probe's bits make the loop drift one way: 15x the unprobed error here
        rounding_probe.settle(x)
    actual = _loop_error(x)
    worked_out = running_sum_drift(x.double(), [1], False, 2.0**-24)
    assert worked_out is not None and worked_out.shape == actual.shape
    assert 0.8 < float((worked_out / actual).median()) < 1.25


def test_layout_and_keepdim_follow_the_sum_and_a_full_reduction_has_none() -> None:
    torch.manual_seed(4)
    x = rounding_probe.settle(torch.rand(16, 2048)).double()
    flat = running_sum_drift(x, [1], False, 2.0**-24)
    moved = running_sum_drift(x.reshape(4, 4, 2048).permute(2, 0, 1), [0], True, 2.0**-24)
    assert moved is not None and flat is not None and moved.shape == (1, 4, 4)
    assert torch.allclose(moved.reshape(16), flat)
    assert running_sum_drift(x, [0, 1], False, 2.0**-24) is None
