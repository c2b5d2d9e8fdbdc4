"""The pipelined verification (api.Judgment.verify) against scripted workers: a wrong output ends the
judgment at once, and no reply is ever waited for twice (which once stalled a GPU lane for the 300 s
reference timeout after every incorrect candidate)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest

from cuda_agent.judge.common.channel import WorkerFailure
from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.judge.trusted.pool import ReferenceSlot
from cuda_agent.task import Task


class ScriptedReference:
    """Compares by a script: `matches[k]` is the verdict on the k-th output sent to it."""

    def __init__(self, matches: list[bool]) -> None:
        self.matches = matches
        self.sent: list[str] = []
        self.received: list[str] = []
        self.calls: list[str] = []
        self.ids = (f"r{k}" for k in itertools.count())
        self.pid = 1

    def send(self, command: str, **payload: Any) -> str:
        assert not (set(self.sent) - set(self.received)), "one request at a time"
        request = next(self.ids)
        self.sent.append(request)
        return request

    def receive(self, command: str, request_id: str, timeout: float) -> dict[str, Any]:
        if request_id in self.received or request_id not in self.sent:
            raise WorkerFailure("timeout", f"no reply to {request_id} (already read) within {timeout:.0f} s")
        self.received.append(request_id)
        good = self.matches[self.sent.index(request_id)]
        return {"ok": True, "match": good, "reason": "" if good else "12 of 100 elements differ"}

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        assert not (set(self.sent) - set(self.received)), f"{command} sent while a comparison is in flight"
        self.calls.append(command)
        return {"ok": True, "free": 10**12, "total": 10**12, "kernels": {}}


class ScriptedCandidate:
    pid = 2

    def __init__(self, other_draw_at: int | None = None) -> None:
        self.runs = 0
        self.other_draw_at = other_draw_at
        self.payloads: list[dict[str, Any]] = []

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        assert command == "run"
        self.runs += 1
        self.payloads.append(payload)
        drew_other = self.runs - 1 == self.other_draw_at
        return {"ok": True, "forbidden": {}, "input_print": "other" if drew_other else "p"}


def judgment(tmp_path: Path) -> Judgment:
    task = Task(name="t", source="", path=tmp_path / "model.py")
    made = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "scratch"))
    made.io_dir = made.out_dir = tmp_path
    made.input_seeds, made.input_prints = [1, 2, 3, 4, 5], ["p"] * 5
    made.input_files, made.shared_outputs = False, False
    made.free_before = 10**12
    made.threads_after_load = 10**6  # the leftover check reads /proc of a real worker; none here
    return made


@pytest.mark.parametrize("wrong_at", [0, 2, 5])
def test_a_wrong_output_ends_verification_without_waiting_twice(tmp_path: Path, wrong_at: int) -> None:
    made = judgment(tmp_path)
    ref = ScriptedReference([k != wrong_at for k in range(6)])
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    cand = ScriptedCandidate()
    with pytest.raises(Stop) as stopped:
        made.verify(ref, cand)  # type: ignore[arg-type]
    assert stopped.value.verdict.status.value == "incorrect"
    assert "12 of 100 elements differ" in stopped.value.verdict.reason
    assert sorted(ref.received) == sorted(ref.sent), "every comparison sent was read exactly once"
    assert not made.reference_slot.broken, "a wrong candidate says nothing against the reference"
    assert cand.runs <= wrong_at + 2  # stops at most one run after the wrong output


@pytest.mark.parametrize("other_draw_at", [0, 3])
def test_a_draw_unlike_the_references_switches_to_input_files(tmp_path: Path, other_draw_at: int) -> None:
    """The reference writes input files only after the comparison in flight is settled, the run is
    repeated from the file, and every later run reads files too."""
    made = judgment(tmp_path)
    ref = ScriptedReference([True] * 6)
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    cand = ScriptedCandidate(other_draw_at=other_draw_at)
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]  (needs a profiler)
    made.verify(ref, cand)  # type: ignore[arg-type]
    assert ref.calls.count("save_inputs") == 1
    assert made.checks["inputs"].startswith("files written by the reference")
    assert cand.runs == 7  # six runs, one of them repeated
    seeded = [p for p in cand.payloads if "inputs_seed" in p]
    from_files = [p for p in cand.payloads if "inputs_path" in p]
    assert len(seeded) == other_draw_at + 1 and len(from_files) == 6 - other_draw_at
    assert from_files[0]["inputs_path"].endswith(f"inputs_{other_draw_at}.tensors")
    assert sorted(ref.received) == sorted(ref.sent) and len(ref.sent) == 6


def test_a_draw_unlike_the_references_is_refused_where_a_seed_reproduces_the_inputs(tmp_path: Path) -> None:
    """The reference drew the task's first input set twice from one seed and got the same inputs: then a
    candidate worker reporting other inputs changed its own draw. Switching to input files would hand it
    every timed round's inputs in the round's set-up, before the host clock starts (the gap the in-round
    draw closed), so the judgment is refused instead, and no file is written."""
    made = judgment(tmp_path)
    made.inputs_reproducible = True
    ref = ScriptedReference([True] * 6)
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    with pytest.raises(Stop) as stopped:
        made.verify(ref, ScriptedCandidate(other_draw_at=2))  # type: ignore[arg-type]
    assert stopped.value.verdict.status.value == "rejected" and stopped.value.verdict.reward == -1
    assert "input draw in the candidate's process was changed" in stopped.value.verdict.reason
    assert "save_inputs" not in ref.calls and not made.input_files
    assert sorted(ref.received) == sorted(ref.sent), "the comparison in flight was settled first"
