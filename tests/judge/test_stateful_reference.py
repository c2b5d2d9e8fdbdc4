"""A reference that keeps state between calls (trusted/stateful.py): an RNN that assigns `self.hidden` on
every forward and reads it on the next (KernelBench's level3/33_VanillaRNN before its forward took the
initial hidden state as an input) gives outputs for the same inputs that depend on how often it ran before. The judge runs the reference and a candidate different numbers of times, so
an honest kernel would be refused for the task's fault; the task is a task_error that names the state.
State that does not change the output (a call counter) is no error, and a model without state is run no
extra time. The preparations run on the CPU (conftest's `cpu_reference`): the judge's own code."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from cuda_agent.judge.trusted import stateful
from cuda_agent.judge.trusted.compare import Tolerance
from cuda_agent.judge.trusted.reference_worker import ReferenceWorker

RNN = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = torch.randn(8, 32)
        self.i2h = nn.Linear(16 + 32, 32)
        self.h2o = nn.Linear(32, 16)

    def forward(self, x):
        combined = torch.cat((x, self.hidden.to(x.device)), dim=1)
        {update}
        return self.h2o(self.hidden)


def get_inputs():
    return [torch.randn(8, 16)]


def get_init_inputs():
    return []
"""
ASSIGNED = "self.hidden = torch.tanh(self.i2h(combined))"  # a new tensor on every call (KernelBench's form)
IN_PLACE = "self.hidden.copy_(torch.tanh(self.i2h(combined)))"  # the same tensor, updated
COUNTER = """
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0
        self.proj = nn.Linear(32, 32)

    def forward(self, x):
        self.calls += 1  # kept between calls, but the output does not read it
        return torch.tanh(self.proj(x))


def get_inputs():
    return [torch.randn(8, 32)]


def get_init_inputs():
    return []
"""


@pytest.mark.parametrize("update", [ASSIGNED, IN_PLACE], ids=["assigned", "in_place"])
def test_a_reference_whose_output_follows_its_own_history_is_the_tasks_error(
    cpu_reference: ReferenceWorker, tmp_path: Path, update: str
) -> None:
    task = tmp_path / "vanilla_rnn.py"
    task.write_text(RNN.replace("{update}", update))
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1, [11, 22, 33], 44, 1e-2, 1e-2)
    assert set(reply) == {"stateful"}, reply
    assert "changes `hidden` on every call" in reply["stateful"] and "beyond atol=0.01" in reply["stateful"]
    assert "reset it at the start of forward" in reply["stateful"]


def test_state_that_does_not_change_the_output_lets_the_judgment_go_on(
    cpu_reference: ReferenceWorker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    again: list[int] = []
    forward_again = ReferenceWorker._forward_again
    monkeypatch.setattr(ReferenceWorker, "_forward_again", lambda self, seed: again.append(seed) or forward_again(self, seed))
    task = tmp_path / "counter.py"
    task.write_text(COUNTER)
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1, [11, 22, 33], 44, 1e-2, 1e-2)
    assert "stateful" not in reply and not reply["degenerate"] and reply["kept_sets"] == 3
    assert again == [11]  # the counter moved, so the first set ran once more, and gave the same outputs


def test_a_model_without_state_runs_no_extra_forward(
    cpu_reference: ReferenceWorker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(self: ReferenceWorker, seed: int) -> list[torch.Tensor]:
        raise AssertionError("a stateless model was run again")

    monkeypatch.setattr(ReferenceWorker, "_forward_again", refuse)
    task = tmp_path / "stateless.py"
    task.write_text(COUNTER.replace("        self.calls += 1  # kept between calls, but the output does not read it\n", ""))
    reply = cpu_reference.prepare(str(task), str(tmp_path), 1, [11, 22, 33], 44, 1e-2, 1e-2)
    assert "stateful" not in reply and reply["kept_sets"] == 3


def test_what_changed_is_named_by_its_place_in_the_model() -> None:
    inner = torch.nn.Linear(4, 4)
    model = torch.nn.Sequential(inner)
    inner.register_buffer("steps", torch.zeros(()))
    inner.cache = torch.zeros(2)
    before = stateful.snapshot(model)
    assert stateful.changed(model, before) == []
    inner.steps.add_(1)  # a buffer updated in place
    inner.cache = torch.ones(2)  # a plain attribute replaced
    inner.seen = 3  # a number added
    assert stateful.changed(model, before) == ["0.cache", "0.seen", "0.steps"]


def test_outputs_that_differ_only_within_the_tolerance_are_the_same_outputs() -> None:
    model = torch.nn.Linear(2, 2)
    before = stateful.snapshot(model)
    model.last = torch.zeros(1)  # some state appeared
    first = [torch.ones(100)]
    near = [torch.ones(100) + 1e-4]
    far = [torch.cat([torch.ones(99), torch.tensor([2.0])])]
    assert stateful.repeat_problem(model, before, first, lambda: near, Tolerance(1e-2, 1e-2)) is None
    problem = stateful.repeat_problem(model, before, first, lambda: far, Tolerance(1e-2, 1e-2))
    assert problem is not None and "output 0: 1 of 100 elements (1.00%) differ beyond" in problem and "`last`" in problem


def test_the_judgment_ends_as_task_error_with_the_workers_reason() -> None:
    from types import SimpleNamespace

    from cuda_agent.judge.decide.reference_stage import ReferenceStage
    from cuda_agent.judge.decide.verdict import Status

    class Ended(Exception):
        pass

    judgment = SimpleNamespace(fail=lambda status, reason: Ended(status, reason), config=SimpleNamespace(atol=1e-2, rtol=1e-2))
    with pytest.raises(Ended) as ended:
        ReferenceStage._check_prepared(judgment, {"stateful": "Model.forward changes `hidden` on every call"})
    assert ended.value.args == (Status.TASK_ERROR, "task keeps state between calls: Model.forward changes `hidden` on every call")
