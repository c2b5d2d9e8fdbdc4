"""Spot checks judged after the timing (issue 34, two judgments per GPU; trusted/timed_takes.py and
decide/timed_checks.py `judge_taken`): the reference takes a timed call's output between rounds and judges
it later, and the verdict must be the one an immediate comparison gives, on the bytes as they were when
taken. Worker tests run the judge's own reference worker on this CPU (conftest.py `cpu_reference`); the
parent's order of calls runs against scripted workers, as in test_timed_checks.py."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from cuda_agent.judge.common import tensorfile
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.judge.trusted import reference_worker as rw
from cuda_agent.judge.trusted import timed_takes
from cuda_agent.judge.trusted.pool import ReferenceSlot
from cuda_agent.task import Task

TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(64, 32)

    def forward(self, x):
        return torch.tanh(self.proj(x))

def get_inputs():
    return [torch.randn(256, 64)]

def get_init_inputs():
    return []
"""
TOL = 1e-2
NONE_SHARED = [[]]  # the candidate worker's report: its one output shares memory with nothing


@pytest.fixture
def worker(cpu_reference: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> rw.ReferenceWorker:
    """A reference worker prepared on this CPU; tensor files it decodes land on the CPU too."""
    decode = tensorfile.decode
    monkeypatch.setattr(rw.tensorfile, "decode", lambda buffer, device: decode(buffer, "cpu"))
    task = tmp_path / "task.py"
    task.write_text(TASK)
    made = rw.ReferenceWorker()
    made.prepare(str(task), str(tmp_path), 1, [11, 12, 13], 14, TOL, TOL)
    return made


def _timed_output(worker: rw.ReferenceWorker, seed: int, path: Path, wrong: bool = False) -> Path:
    """What a candidate's timed call on `seed`'s inputs (with the input audit's transforms, as the
    candidate worker draws them) hands over: the model's output, or one a little off."""
    (x,) = worker._draw(seed)
    with torch.no_grad():
        out = worker.model(x)
    tensorfile.save([out + 0.5 if wrong else out], path)
    return path


def test_a_taken_output_gets_the_verdict_an_immediate_comparison_gives(worker: rw.ReferenceWorker, tmp_path: Path) -> None:
    for wrong in (False, True):
        now = worker.compare_timing(101, str(_timed_output(worker, 101, tmp_path / "now.tensors", wrong)), TOL, TOL,
                                    aliases=NONE_SHARED, precision_k=2.0)  # fmt: skip
        path = _timed_output(worker, 101, tmp_path / "later.tensors", wrong)
        assert worker.take_timed(101, str(path), aliases=NONE_SHARED) == {"taken": True}
        assert not path.exists(), "the file is read and removed at once, as compare_timing does"
        (later,) = worker.compare_taken(TOL, TOL, precision_k=2.0)["verdicts"]
        assert later["match"] is now["match"] is (not wrong)
        assert later.get("reason") == now.get("reason")
    assert worker.taken == [], "judged outputs are not kept"


def test_what_is_judged_is_the_output_as_it_was_when_taken(worker: rw.ReferenceWorker, tmp_path: Path) -> None:
    """A candidate that rewrites its hand-over after the take (its next round overwrites what it kept)
    changes nothing: the bytes were copied. Several taken outputs are judged in the order taken."""
    path = tmp_path / "out.tensors"
    worker.take_timed(201, str(_timed_output(worker, 201, path)), aliases=NONE_SHARED)
    worker.take_timed(202, str(_timed_output(worker, 202, path, wrong=True)), aliases=NONE_SHARED)
    _timed_output(worker, 201, path)  # rewritten afterwards: right for 201, but the take already has 202's
    verdicts = worker.compare_taken(TOL, TOL)["verdicts"]
    assert [v["match"] for v in verdicts] == [True, False]


def test_an_unreadable_hand_over_is_a_wrong_output(worker: rw.ReferenceWorker, tmp_path: Path) -> None:
    assert worker.take_timed(301, str(tmp_path / "missing.tensors")) == {"taken": True}
    garbage = tmp_path / "garbage.tensors"
    garbage.write_bytes(b"not a tensor file")
    worker.take_timed(302, str(garbage))
    verdicts = worker.compare_taken(TOL, TOL)["verdicts"]
    assert [v["match"] for v in verdicts] == [False, False]
    assert "could not be read" in verdicts[0]["reason"] and "could not be read" in verdicts[1]["reason"]


def test_outputs_past_the_host_budget_or_in_input_file_mode_are_compared_at_once(
    worker: rw.ReferenceWorker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _timed_output(worker, 401, tmp_path / "out.tensors")
    monkeypatch.setattr(timed_takes, "HELD_BYTES", path.stat().st_size - 1)
    took = worker.take_timed(401, str(path))
    assert took["taken"] is False and "held" in took["why"]
    assert path.exists(), "left for compare_timing, which reads it"
    monkeypatch.setattr(timed_takes, "HELD_BYTES", 1 << 30)
    worker.round_sets = {401: [torch.zeros(1)]}
    assert worker.take_timed(401, str(path))["taken"] is False
    assert worker.taken == []


class Candidate:
    pid = 2

    def __init__(self) -> None:
        self.log: list[str] = []

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        self.log.append(command)
        return {"ok": True, "aliases": [[]]}


class Reference:
    """Takes every output (unless `refuse`), and judges the taken ones wrong where their seed is in `wrong`."""

    pid = 1

    def __init__(self, refuse: bool = False) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []
        self.held: list[int] = []
        self.refuse, self.wrong = refuse, set[int]()

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        self.log.append((command, payload))
        if command == "take_timed":
            if self.refuse:
                return {"ok": True, "taken": False, "why": "input-file mode"}
            self.held.append(payload["seed"])
            return {"ok": True, "taken": True}
        if command == "compare_taken":
            held, self.held = self.held, []
            return {"ok": True, "verdicts": [{"match": s not in self.wrong, "reason": "3 elements differ",
                                              "error_ratio": 1.0} for s in held]}  # fmt: skip
        assert command == "compare_timing"
        return {"ok": True, "match": True, "error_ratio": 1.0}


def _judgment(tmp_path: Path, ref: Reference) -> Judgment:
    made = Judgment(tmp_path, Task(name="t", source="", path=tmp_path / "model.py"),
                    JudgeConfig(scratch_dir=tmp_path / "scratch", timed_checks_per_round=2))  # fmt: skip
    made.io_dir = made.out_dir = tmp_path
    made.input_files, made.shared_outputs = False, False
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.checks_after_timing = True
    return made


def test_during_timing_the_reference_only_takes_and_judges_them_all_after(tmp_path: Path) -> None:
    ref, cand = Reference(), Candidate()
    made = _judgment(tmp_path, ref)
    seeds = []
    for _ in range(3):
        made.new_round(ref)  # type: ignore[arg-type]
        made.check_round(ref, cand)  # type: ignore[arg-type]
        seeds += made.round_seeds
    assert [c for c, _ in ref.log] == ["take_timed"] * 6, "no reference forward inside the timing"
    assert cand.log == ["dump_call"] * 6 and "timed_spot_checks" not in made.checks
    assert all(p["seed"] in seeds for _, p in ref.log)
    made.judge_taken(ref)  # type: ignore[arg-type]
    assert [c for c, _ in ref.log][-1] == "compare_taken" and made.checks["timed_spot_checks"] == 6
    made.judge_taken(ref)  # nothing taken since: no call
    assert len(ref.log) == 7


def test_a_wrong_taken_output_is_minus_one_after_the_timing(tmp_path: Path) -> None:
    ref, cand = Reference(), Candidate()
    made = _judgment(tmp_path, ref)
    made.new_round(ref)  # type: ignore[arg-type]
    ref.wrong = set(made.round_seeds)
    made.check_round(ref, cand)  # type: ignore[arg-type]  (taken: no verdict yet)
    with pytest.raises(Stop) as stopped:
        made.judge_taken(ref)  # type: ignore[arg-type]
    assert stopped.value.verdict.reward == -1 and stopped.value.verdict.status.value == "incorrect"
    assert "timed call returned a wrong result: 3 elements differ" in stopped.value.verdict.reason


def test_an_output_not_taken_is_compared_at_once(tmp_path: Path) -> None:
    ref, cand = Reference(refuse=True), Candidate()
    made = _judgment(tmp_path, ref)
    made.new_round(ref)  # type: ignore[arg-type]
    made.check_round(ref, cand)  # type: ignore[arg-type]
    assert [c for c, _ in ref.log] == ["take_timed", "compare_timing"] * 2
    assert made.checks["timed_spot_checks"] == 2 and made.taken_checks == 0


def test_a_reply_that_does_not_answer_every_taken_output_fails_closed(tmp_path: Path) -> None:
    ref, cand = Reference(), Candidate()
    made = _judgment(tmp_path, ref)
    made.new_round(ref)  # type: ignore[arg-type]
    made.check_round(ref, cand)  # type: ignore[arg-type]
    ref.held = ref.held[:1]  # one verdict for two taken outputs
    with pytest.raises(Stop) as stopped:
        made.judge_taken(ref)  # type: ignore[arg-type]
    assert stopped.value.verdict.reward == -1 and "2 taken timed outputs, 1 verdicts" in stopped.value.verdict.reason
