"""Fresh content for every timed call, and checks chosen after the round (decide/timed_checks.py:
`new_round`, `check_round`) against scripted workers: every call of every round gets a seed of its own,
made for that round and sent with the command that times it; the candidate is asked for a call's output
only after the round ran; the reference compares it on that call's seed; a wrong checked output ends the
judgment with -1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.judge.trusted.pool import ReferenceSlot
from cuda_agent.task import Task

pytestmark = pytest.mark.usefixtures("candidate_holds_nothing")  # conftest.py: the memory check at rest passes


class Candidate:
    """Records what it was told; `wrong_calls` are the timed calls whose output is wrong."""

    pid = 2

    def __init__(self) -> None:
        self.log: list[tuple[str, dict[str, Any]]] = []

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        self.log.append((command, payload))
        if command == "dump_call":
            return {"ok": True, "aliases": [[]]}
        return {"ok": True, "samples": [0.1] * 10, "calls": 10}


class Reference:
    def __init__(self, wrong_seeds: set[int] | None = None) -> None:
        self.wrong_seeds = wrong_seeds or set()
        self.compared: list[dict[str, Any]] = []
        self.pid = 1

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        assert command == "compare_timing"
        self.compared.append(payload)
        if payload["seed"] in self.wrong_seeds:
            return {"ok": True, "match": False, "reason": "3 of 100 elements differ"}
        return {"ok": True, "match": True, "error_ratio": 1.5}


def judgment(tmp_path: Path, checks: int = 1) -> Judgment:
    task = Task(name="t", source="", path=tmp_path / "model.py")
    made = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "scratch", timed_checks_per_round=checks))
    made.io_dir = made.out_dir = tmp_path
    made.input_files, made.shared_outputs = False, False
    return made


def one_round(made: Judgment, ref: Reference, cand: Candidate) -> None:
    """As `TimingStage._candidate_round` asks for a round (the content's arguments split as it splits them)."""
    content = made.new_round(ref)  # type: ignore[arg-type]
    cand.call("prepare_round", 1, samples=10, inputs_path=content.get("inputs_path"))
    cand.call("time_round", 1, samples=10, seeds=content.get("seeds"))
    made.check_round(ref, cand)  # type: ignore[arg-type]


def test_every_timed_call_gets_its_own_seed_and_checks_come_after_the_round(tmp_path: Path) -> None:
    made, ref, cand = judgment(tmp_path, checks=2), Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    for _ in range(5):
        one_round(made, ref, cand)
    draws = [p["seeds"] for c, p in cand.log if c == "time_round"]
    seeds = [s for round_seeds in draws for s in round_seeds]
    assert len(draws) == 5 and all(len(d) == 10 for d in draws)
    assert len(set(seeds)) == 50, "no two timed calls share input content"
    commands = [c for c, _ in cand.log]
    assert commands == ["prepare_round", "time_round", "dump_call", "dump_call"] * 5
    for r in range(5):  # the compared seed is the chosen call's seed of that same round
        dumps = [p["index"] for c, p in cand.log[4 * r : 4 * r + 4] if c == "dump_call"]
        assert len(set(dumps)) == 2
        assert [ref.compared[2 * r + k]["seed"] for k in range(2)] == [draws[r][i] for i in dumps]
    assert made.checks["timed_spot_checks"] == 10 and made.checks["precision_error_ratio"] == 1.5
    indices = {p["index"] for c, p in cand.log if c == "dump_call"}
    assert len(indices) > 2, "the checked call is not predictable by its position"
    assert all("precision_k" in p and p["precision_k"] == JudgeConfig().precision_k for p in ref.compared)


def test_a_wrong_checked_output_is_minus_one(tmp_path: Path) -> None:
    made, cand = judgment(tmp_path, checks=10), Candidate()
    ref = Reference()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.new_round(ref)  # type: ignore[arg-type]
    ref.wrong_seeds = {made.round_seeds[7]}  # one call in ten returned a stale (cached) answer
    with pytest.raises(Stop) as stopped:
        made.check_round(ref, cand)  # type: ignore[arg-type]
    assert stopped.value.verdict.reward == -1 and stopped.value.verdict.status.value == "incorrect"
    assert "timed call returned a wrong result" in stopped.value.verdict.reason


def test_tolerance_only_switch_turns_the_precision_audit_off(tmp_path: Path) -> None:
    task = Task(name="t", source="", path=tmp_path / "model.py")
    made = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "s", precision_audit=False))
    made.io_dir = made.out_dir = tmp_path
    made.input_files, made.shared_outputs = False, False
    ref, cand = Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    one_round(made, ref, cand)
    assert ref.compared[0]["precision_k"] is None


def test_input_file_mode_has_the_reference_draw_each_round(tmp_path: Path) -> None:
    made, cand = judgment(tmp_path), Candidate()
    made.input_files = True
    calls: list[dict[str, Any]] = []

    class FileReference(Reference):
        def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
            if command == "draw_round":
                calls.append(payload)
                return {"ok": True, "path": str(tmp_path / "round_inputs.tensors")}
            return super().call(command, timeout, **payload)

    ref = FileReference()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    one_round(made, ref, cand)
    one_round(made, ref, cand)
    assert len(calls) == 2 and calls[0]["seeds"] != calls[1]["seeds"]
    assert all(p.get("seeds") is None for _, p in cand.log), "no seeds reach the candidate"
    assert [p["inputs_path"] for c, p in cand.log if c == "prepare_round"] == [str(tmp_path / "round_inputs.tensors")] * 2


def test_only_a_secret_share_of_rounds_is_checked(tmp_path: Path) -> None:
    made, ref, cand = judgment(tmp_path), Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.new_round(ref)  # type: ignore[arg-type]
    assert made.check_round(ref, cand, 0.0) is False and not ref.compared  # type: ignore[arg-type]
    checked = sum(made.check_round(ref, cand, 0.35) for _ in range(400))  # type: ignore[arg-type]
    assert 90 < checked < 190 and len(ref.compared) == checked
    assert made.check_round(ref, cand) is True  # type: ignore[arg-type]  (the default: always)


def test_a_candidate_that_keeps_the_gpu_after_a_timed_hand_over_fails_before_the_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate worker that hands over a timed output and keeps the GPU full ran the reference's spot
    check out of memory: a task_error, no reward, where its output may have been wrong. The memory check at
    rest after the hand-over makes it the candidate's runtime_error, and the reference is not asked."""
    from cuda_agent.judge.decide import verify_stage

    made, ref, cand = judgment(tmp_path), Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.new_round(ref)  # type: ignore[arg-type]
    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: made.config.candidate_gpu_memory_bytes + 1)
    with pytest.raises(Stop) as stopped:
        made.check_round(ref, cand)  # type: ignore[arg-type]
    assert stopped.value.verdict.reward == -1 and stopped.value.verdict.status.value == "runtime_error"
    assert "holds" in stopped.value.verdict.reason and ref.compared == []
    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: made.config.candidate_gpu_memory_bytes)
    assert made.check_round(ref, cand) is True and len(ref.compared) == 1  # type: ignore[arg-type]  (at the limit)


def test_the_rounds_the_judge_asks_a_candidate_to_keep_are_allowed_at_rest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A timed round keeps every call's inputs and output (and the round before may sit in the allocator's
    cache): an honest candidate of a large task holds that much after a hand-over, on top of the limit."""
    from cuda_agent.judge.decide import verify_stage
    from cuda_agent.judge.decide.round_size import RoundSize

    made, ref, cand = judgment(tmp_path), Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.round_plan = RoundSize(4, 10, call_bytes=3 << 30, gpu_bytes=80 << 30)
    made.new_round(ref)  # type: ignore[arg-type]
    limit = made.config.candidate_gpu_memory_bytes + 2 * 4 * (3 << 30)
    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: limit)
    assert made.check_round(ref, cand) is True  # type: ignore[arg-type]
    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: limit + 1)
    with pytest.raises(Stop):
        made.check_round(ref, cand)  # type: ignore[arg-type]


def test_without_a_reading_of_its_own_the_check_at_rest_asks_the_reference_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where NVML cannot name the candidate (a container without the host's pid namespace), the verification
    calls fall back on the device's free memory, which the reference reads after emptying its allocator's
    cache. Mid-timing that would change the reference's own rounds, so the check at rest is skipped there,
    and beside another judgment the judgment is judged again alone, as after a verification call."""
    from cuda_agent.judge.decide import verify_stage
    from cuda_agent.judge.trusted.lane_share import JudgeAlone

    made, ref, cand = judgment(tmp_path), Reference(), Candidate()
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.new_round(ref)  # type: ignore[arg-type]
    monkeypatch.setattr(verify_stage, "process_gpu_bytes", lambda pid: None)
    assert made.check_round(ref, cand) is True  # type: ignore[arg-type]
    assert len(ref.compared) == 1, "only the comparison: no free_memory asked of the reference"
    made.lane_shared = True
    with pytest.raises(JudgeAlone):
        made.check_round(ref, cand)  # type: ignore[arg-type]
