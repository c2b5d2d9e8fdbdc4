"""The input audit within a memory budget (issue 29): where six draws and six outputs of a task would not fit,
the audit keeps the first draw and one other (`DrawnOnDemand`, each made again from its seed when read) and
compares outputs two at a time, and it reaches the same findings and transforms as the audit holding all."""

from __future__ import annotations

import weakref
from collections.abc import Callable

import pytest
import torch

from cuda_agent.judge.trusted import input_audit
from cuda_agent.judge.trusted.compare import Tolerance

TOL = Tolerance(1e-2, 1e-2)


class Weighted(torch.nn.Module):  # the mask matters only once scaled
    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) + 1e-6 * mask


class IgnoresOne(torch.nn.Module):  # y's values are read without effect: the task ignores it
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.relu(x) + 0 * y


class Mse(torch.nn.Module):  # a scalar loss: concentrates as drawn, matters under per-draw factors
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.mean((x - y) ** 2)


def _draw(seed: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(128, 64, generator=g), torch.randn(128, 64, generator=g)]


SEEDS = list(range(500, 500 + input_audit.AUDIT_DRAWS))


@pytest.mark.parametrize("model", [Weighted(), IgnoresOne(), Mse()], ids=lambda m: type(m).__name__)
def test_the_lean_audit_finds_what_the_audit_holding_everything_finds(model: torch.nn.Module) -> None:
    held = input_audit.audit_inputs(model, [_draw(s) for s in SEEDS], TOL)
    lean = input_audit.audit_inputs(model, input_audit.DrawnOnDemand(_draw(SEEDS[0]), _draw, SEEDS), TOL, hold_bytes=0)
    assert lean.report() == held.report() and lean.transforms == held.transforms
    assert held.report() != input_audit.InputAudit().report()  # something was found either way


class Counted:
    """Counts how many of the audit's draws and outputs are alive at once (weak references)."""

    def __init__(self) -> None:
        self.alive: weakref.WeakSet = weakref.WeakSet()
        self.most = {"outputs": 0, "draws": 0}

    def note(self, kind: str, tensor: torch.Tensor) -> None:
        self.alive.add(tensor)
        tensor._counted = kind
        self.most[kind] = max(self.most[kind], sum(getattr(t, "_counted", "") == kind for t in self.alive))

    def draw(self, seed: int) -> list[torch.Tensor]:
        drawn = _draw(seed)
        self.note("draws", drawn[0])
        return drawn

    def outputs(self, real: Callable) -> Callable:
        def counted(model: torch.nn.Module, inputs: list) -> list[torch.Tensor] | None:
            out = real(model, inputs)
            if out is not None:
                self.note("outputs", out[0])
            return out

        return counted


def test_over_its_budget_the_audit_holds_a_few_draws_and_outputs_not_six(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most the first draw and two others (the one read and, while the next is drawn, the last one a
    loop held), and three outputs (two compared, one being made); within budget, six of each, as designed."""
    real = input_audit.outputs_or_none
    lean = Counted()
    monkeypatch.setattr(input_audit, "outputs_or_none", lean.outputs(real))
    sets = input_audit.DrawnOnDemand(lean.draw(SEEDS[0]), lean.draw, SEEDS)
    input_audit.audit_inputs(Weighted(), sets, TOL, hold_bytes=0)
    assert lean.most["draws"] <= 3 and lean.most["outputs"] <= 3, lean.most
    held = Counted()
    monkeypatch.setattr(input_audit, "outputs_or_none", held.outputs(real))
    input_audit.audit_inputs(Weighted(), [held.draw(s) for s in SEEDS], TOL)
    assert held.most["draws"] == 6 and held.most["outputs"] >= 6, held.most


def test_the_draws_are_held_only_where_six_fit_in_the_audits_budget() -> None:
    first = _draw(SEEDS[0])
    one_set = sum(t.numel() * t.element_size() for t in first)
    held = input_audit.audit_sets(first, _draw, SEEDS, None)
    assert isinstance(held, list) and len(held) == len(SEEDS) and torch.equal(held[3][1], _draw(SEEDS[3])[1])
    assert isinstance(input_audit.audit_sets(first, _draw, SEEDS, 6 * one_set), list)
    lean = input_audit.audit_sets(first, _draw, SEEDS, 6 * one_set - 1)
    assert isinstance(lean, input_audit.DrawnOnDemand) and torch.equal(lean[3][1], held[3][1])
