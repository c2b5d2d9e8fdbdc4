"""The dispatcher-level op gate sees PyTorch compute from any entry point; allocations get poisoned."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from cuda_agent.judge.candidate.opgate import OpGate


def test_allocation_and_views_are_allowed() -> None:
    x = torch.randn(4, 8)
    with OpGate(poison=False) as gate:
        y = torch.empty_like(x)
        z = x.view(8, 4).permute(1, 0).unsqueeze(0)
        w = torch.zeros(3)
        _ = x[1:3, ::2]
    assert not gate.forbidden
    assert y.shape == x.shape and z.shape == (1, 4, 8) and float(w.sum()) == 0.0


def test_compute_ops_are_recorded_from_every_entry_point() -> None:
    x = torch.randn(4, 4)
    with OpGate(poison=False) as gate:
        torch.relu(x)
        F.gelu(x)
        _ = x @ x
        torch.ops.aten.mm.default(x, x)
        x.float().sum()
    forbidden = set(gate.forbidden)
    assert {"aten.relu", "aten.gelu", "aten.mm", "aten.sum"} <= forbidden
    assert gate.forbidden["aten.mm"] == 2


def test_try_except_cannot_hide_a_fallback() -> None:
    x = torch.randn(4)

    def forward(t: torch.Tensor) -> torch.Tensor:
        try:
            raise RuntimeError("custom kernel unavailable")
        except RuntimeError:
            return torch.sigmoid(t)

    with OpGate(poison=False) as gate:
        forward(x)
    assert "aten.sigmoid" in gate.forbidden


def test_fresh_allocations_are_poisoned() -> None:
    with OpGate(poison=True):
        f = torch.empty(16)
        i = torch.empty(16, dtype=torch.int32)
        z = torch.zeros(16)
    assert bool(torch.isnan(f).all())
    assert bool((i != 0).all())
    assert float(z.abs().sum()) == 0.0
