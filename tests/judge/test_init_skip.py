"""The candidate worker builds ModelNew without torch.nn.init's random draws (candidate/init_skip.py): the
model it ends with after load_state_dict is the one it had with them, the draws are really skipped, and the
initialisers are put back afterwards -- but never over a candidate's own replacement."""

from __future__ import annotations

import sys

import pytest
import torch
import torch.nn as nn
import torch.nn.init as init

from cuda_agent.judge.candidate import opgate
from cuda_agent.judge.candidate.init_skip import RANDOM_INITIALISERS, random_init_skipped
from cuda_agent.judge.candidate.torch_integrity import TorchSnapshot


class Layers(nn.Module):
    """The standard layers whose reset_parameters draw, and one constant the model computes itself."""

    def __init__(self) -> None:
        super().__init__()
        self.linear = nn.Linear(16, 8)
        self.conv = nn.Conv2d(3, 4, 3)
        self.norm = nn.BatchNorm1d(8)
        self.embedding = nn.Embedding(10, 8)
        self.rnn = nn.GRU(8, 8)
        self.attention = nn.MultiheadAttention(8, 2)
        self.register_buffer("positions", torch.arange(8.0), persistent=False)


def test_a_model_built_without_draws_is_the_same_once_loaded() -> None:
    reference = Layers()
    with torch.no_grad():
        for p in reference.parameters():
            p.copy_(torch.randn_like(p))
    state = reference.state_dict()
    drawn = Layers()
    generator_before = torch.get_rng_state()
    with random_init_skipped() as replaced:
        skipped = Layers()
    assert torch.equal(torch.get_rng_state(), generator_before), "no random number was drawn"
    assert set(replaced) == {f"nn.init.{n}" for n in RANDOM_INITIALISERS} | {"Tensor.uniform_", "Tensor.normal_"}
    assert torch.count_nonzero(skipped.linear.weight) == 0 and torch.count_nonzero(skipped.conv.weight) == 0
    assert torch.equal(skipped.norm.weight, torch.ones(8)), "deterministic initialisers still run"
    assert torch.equal(skipped.positions, torch.arange(8.0)), "what __init__ computes itself is kept"
    for model in (drawn, skipped):
        model.load_state_dict(state, strict=True)
    assert [k for k, _ in drawn.state_dict().items()] == [k for k, _ in skipped.state_dict().items()]
    for (name, a), b in zip(drawn.state_dict().items(), skipped.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    x = torch.randn(5, 16)
    assert torch.equal(drawn.linear(x), skipped.linear(x))


def test_the_initialisers_are_put_back_even_when_construction_fails() -> None:
    originals = {name: getattr(init, name) for name in RANDOM_INITIALISERS}
    snapshot = TorchSnapshot()  # what the worker checks after loading: torch as the judge left it
    with pytest.raises(ValueError), random_init_skipped():
        nn.Linear(4, 4)
        raise ValueError("ModelNew.__init__ failed")
    assert {name: getattr(init, name) for name in RANDOM_INITIALISERS} == originals
    assert "uniform_" not in vars(torch.Tensor) and "normal_" not in vars(torch.Tensor)
    assert snapshot.changes() == []
    assert torch.count_nonzero(nn.Linear(64, 64).weight) > 0, "draws again afterwards"


def test_a_candidates_own_replacement_is_left_as_it_set_it(monkeypatch) -> None:
    original = init.normal_
    monkeypatch.setattr(init, "normal_", original)  # restored by monkeypatch whatever happens below

    def own(tensor, *args, **kwargs):
        return tensor

    with random_init_skipped():
        init.normal_ = own  # what a ModelNew's __init__ could do
    assert init.normal_ is own, "the judge does not hide what the candidate changed"
    snapshot = TorchSnapshot()
    try:
        with random_init_skipped():
            torch.Tensor.uniform_ = own  # a patch of torch's own class while ModelNew is built
        assert snapshot.changes() == ["torch.Tensor.uniform_"], "still there for the worker's check to name"
    finally:
        if vars(torch.Tensor).get("uniform_") is own:
            delattr(torch.Tensor, "uniform_")
    assert init.kaiming_uniform_ is not None and init.kaiming_uniform_.__name__ == "kaiming_uniform_"


MODEL_NEW = """
import torch
import torch.nn as nn

class ModelNew(nn.Module):
    seen = None

    def __init__(self, features):
        super().__init__()
        self.linear = nn.Linear(features, features)
        ModelNew.seen = self.linear.weight.detach().clone()

    def forward(self, x):
        return self.linear(x)
"""


def test_the_candidate_worker_builds_model_new_without_draws(tmp_path, monkeypatch) -> None:
    """The worker's own construction path: ModelNew sees zeros while it is built and the reference's
    parameters once loaded."""
    from cuda_agent.judge.candidate import worker as worker_module

    monkeypatch.setattr(opgate, "_capturing", lambda: False)  # no GPU here: nothing captures
    monkeypatch.setattr(torch.nn.Module, "cuda", lambda self, *a, **k: self)
    (tmp_path / "model_new.py").write_text(MODEL_NEW)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "model_new", raising=False)
    worker = worker_module.CandidateWorker()
    worker.init_inputs = [32]
    state = {"linear.weight": torch.randn(32, 32), "linear.bias": torch.randn(32)}
    model, _ = worker._construct(state, first=False)
    assert torch.count_nonzero(sys.modules["model_new"].ModelNew.seen) == 0
    assert torch.equal(model.linear.weight.detach(), state["linear.weight"])
    assert init.kaiming_uniform_.__name__ == "kaiming_uniform_", "put back after the construction"
