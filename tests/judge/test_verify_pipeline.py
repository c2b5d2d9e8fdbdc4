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
        self.commands: list[str] = []  # of the requests sent, in order
        self.ids = (f"r{k}" for k in itertools.count())
        self.pid = 1

    def send(self, command: str, **payload: Any) -> str:
        assert not (set(self.sent) - set(self.received)), "one request at a time"
        request = next(self.ids)
        self.sent.append(request)
        self.commands.append(command)
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


class PairReference(ScriptedReference):
    """Matches every set; answers the low-bit pair's commands, writing a changed set when asked."""

    def __init__(self, io_dir: Path, changed_match: tuple[bool, bool] = (True, True)) -> None:
        super().__init__([True] * 6 + list(changed_match))
        self.io_dir = io_dir

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        if command == "write_changed":
            assert not (set(self.sent) - set(self.received)), "write_changed sent while a comparison is in flight"
            self.calls.append(command)
            path = self.io_dir / f"changed_{payload['which']}.tensors"
            path.write_text(f"written {payload['which']}")
            return {"ok": True, "path": str(path), "print": f"print {payload['which']}"}
        return super().call(command, timeout, **payload)

    def receive(self, command: str, request_id: str, timeout: float) -> dict[str, Any]:
        reply = super().receive(command, request_id, timeout)
        if self.commands[self.sent.index(request_id)] == "compare_changed":
            assert command == "compare_changed", "a reply is read as the command it answers"
            reply["response"] = [{"alignment": 0.01, "missing": 0.0}]
        return reply


class PairCandidate(ScriptedCandidate):
    """Records, at each call on a changed set, which changed files its input folder held."""

    def __init__(self, io_dir: Path) -> None:
        super().__init__()
        self.io_dir = io_dir
        self.seen: list[tuple[str, list[str]]] = []

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        reply = super().call(command, timeout, **payload)
        path = payload.get("inputs_path")
        if path:
            self.seen.append((Path(path).read_text(), sorted(p.name for p in self.io_dir.glob("changed_*"))))
            reply["input_print"] = "print " + Path(path).name.split("_")[1].split(".")[0]
        return reply


def staged_judgment(tmp_path: Path) -> tuple[Judgment, Path]:
    """A judgment whose two changed sets were staged with the preparation in the slot's folder."""
    (tmp_path / "io").mkdir()
    made = judgment(tmp_path)
    made.io_dir = made.out_dir = tmp_path / "io"
    staged_dir = tmp_path / "slot" / "changed"
    staged_dir.mkdir(parents=True)
    made.staged_changed = []
    for which in (0, 1):
        (staged_dir / f"changed_{which}.tensors").write_text(f"staged {which}")
        made.staged_changed.append({"path": str(staged_dir / f"changed_{which}.tensors"), "print": f"print {which}"})
    return made, staged_dir


@pytest.mark.parametrize("separate_user", [True, False])
def test_the_changed_sets_are_linked_in_where_staged_and_one_at_a_time(tmp_path: Path, separate_user: bool) -> None:
    """Staged with the preparation (a candidate of another uid cannot read the slot's folder), each
    changed set is linked into the input folder just before its call and gone after it, and the reference
    writes nothing in the lane; where the candidate is the judge's own user the reference writes each set
    before its call, as before. Either way the candidate's folder never holds the other set."""
    made, staged_dir = staged_judgment(tmp_path)
    made.candidate_separate_user = separate_user
    made.response_sets = 2
    ref, cand = PairReference(made.io_dir), PairCandidate(made.io_dir)
    made.reference_slot = ReferenceSlot(ref, tmp_path / "slot")  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    made.verify(ref, cand)  # type: ignore[arg-type]
    source = "staged" if separate_user else "written"
    assert cand.seen == [(f"{source} 0", ["changed_0.tensors"]), (f"{source} 1", ["changed_1.tensors"])]
    assert ref.calls.count("write_changed") == (0 if separate_user else 2)
    assert ref.commands == ["compare"] * 6 + ["compare_changed"] * 2
    assert sorted(ref.received) == sorted(ref.sent)
    assert not list(made.io_dir.glob("changed_*")), "each changed set leaves the input folder after its call"
    assert sorted(p.name for p in staged_dir.iterdir()) == ["changed_0.tensors", "changed_1.tensors"], (
        "the staged files stay for the group's next judgment"
    )
    assert made.checks["low_bit_response"].startswith("passed")
    assert made.checks["changed_sets"].startswith("staged" if separate_user else "written")


def test_the_pairs_comparisons_run_while_the_candidate_computes_the_next_call(tmp_path: Path) -> None:
    """Linked changed sets need no reference call, so the repeated set's comparison is still in flight
    while the candidate runs on changed set A, and A's while it runs on B; a wrong output on A ends the
    judgment after B's call at most, with every reply read once."""
    made, _ = staged_judgment(tmp_path)
    made.candidate_separate_user, made.response_sets = True, 2
    ref = PairReference(made.io_dir, changed_match=(False, True))
    in_flight: list[int] = []

    class Watching(PairCandidate):
        def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
            in_flight.append(len(set(ref.sent) - set(ref.received)))
            return super().call(command, timeout, **payload)

    cand = Watching(made.io_dir)
    made.reference_slot = ReferenceSlot(ref, tmp_path / "slot")  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    with pytest.raises(Stop) as stopped:
        made.verify(ref, cand)  # type: ignore[arg-type]
    assert "wrong result on the changed input set A" in stopped.value.verdict.reason
    assert in_flight == [0, 1, 1, 1, 1, 1, 1, 1], "from the second call on, one comparison is always in flight"
    assert sorted(ref.received) == sorted(ref.sent) and ref.commands[-1] == "compare_changed"
    assert not list(made.io_dir.glob("changed_*"))


class VariantReference(PairReference):
    """Also answers the weight pair: writes the second point's state file when asked, and compares the
    second ModelNew's output as scripted (`variant_match`)."""

    def __init__(self, io_dir: Path, variant_match: bool = True) -> None:
        super().__init__(io_dir)
        self.matches.append(variant_match)

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        if command == "write_variant":
            assert not (set(self.sent) - set(self.received)), "write_variant sent while a comparison is in flight"
            self.calls.append(command)
            path = self.io_dir / "variant_state.pt"
            path.write_text("written variant")
            return {"ok": True, "path": str(path)}
        return super().call(command, timeout, **payload)

    def receive(self, command: str, request_id: str, timeout: float) -> dict[str, Any]:
        reply = super().receive(command, request_id, timeout)
        if self.commands[self.sent.index(request_id)] == "compare_variant" and reply["match"]:
            reply["weight_response"] = [{"alignment": -0.4, "missing": 0.0007}]
        return reply


class VariantCandidate(PairCandidate):
    """Records what its input folder held during the second ModelNew's call."""

    def __init__(self, io_dir: Path) -> None:
        super().__init__(io_dir)
        self.variant_seen: list[tuple[str, str, list[str]]] = []

    def call(self, command: str, timeout: float, **payload: Any) -> dict[str, Any]:
        if command != "run_variant":
            return super().call(command, timeout, **payload)
        held = sorted(p.name for p in self.io_dir.iterdir() if p.name.startswith(("changed_", "variant_")))
        self.variant_seen.append((Path(payload["inputs_path"]).read_text(), Path(payload["state_path"]).read_text(), held))
        return {"ok": True, "forbidden": {}, "captured": {}, "input_print": "print 1"}


@pytest.mark.parametrize("separate_user", [True, False])
def test_the_weight_pair_runs_set_b_in_a_second_model_with_its_files_only_for_that_call(
    tmp_path: Path, separate_user: bool
) -> None:
    """After both changed sets, set B again with the second point's state file: linked in from the slot's
    folder where staged (a candidate of another uid), else written by the reference; both files in the
    input folder only for that call, and the comparison's finding recorded."""
    made, staged_dir = staged_judgment(tmp_path)
    (staged_dir / "variant_state.pt").write_text("staged variant")
    made.staged_variant = str(staged_dir / "variant_state.pt")
    made.candidate_separate_user, made.response_sets, made.variant_made = separate_user, 2, True
    ref, cand = VariantReference(made.io_dir), VariantCandidate(made.io_dir)
    made.reference_slot = ReferenceSlot(ref, tmp_path / "slot")  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    made.verify(ref, cand)  # type: ignore[arg-type]
    source = "staged" if separate_user else "written"
    assert cand.variant_seen == [(f"{source} 1", f"{source} variant", ["changed_1.tensors", "variant_state.pt"])]
    assert ref.commands == ["compare"] * 6 + ["compare_changed"] * 2 + ["compare_variant"]
    assert ref.calls.count("write_variant") == (0 if separate_user else 1)
    assert sorted(ref.received) == sorted(ref.sent)
    assert not [p for p in made.io_dir.iterdir() if p.name.startswith(("changed_", "variant_"))]
    assert (staged_dir / "variant_state.pt").exists(), "the staged file stays for the group's next judgment"
    assert made.checks["weight_response"] == "passed (largest alignment -0.4, missing share 0.0007)"


def test_a_second_model_that_does_not_respond_ends_the_judgment(tmp_path: Path) -> None:
    made, _ = staged_judgment(tmp_path)
    made.candidate_separate_user, made.response_sets, made.variant_made = True, 2, True
    ref, cand = VariantReference(made.io_dir, variant_match=False), VariantCandidate(made.io_dir)
    made.reference_slot = ReferenceSlot(ref, tmp_path / "slot")  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    with pytest.raises(Stop) as stopped:
        made.verify(ref, cand)  # type: ignore[arg-type]
    assert "wrong result on the changed input set B, run by a second ModelNew" in stopped.value.verdict.reason
    assert stopped.value.verdict.reward == -1 and sorted(ref.received) == sorted(ref.sent)
    assert ref.calls.count("write_variant") == 1, "nothing staged here: the reference writes it"


def test_staged_files_gone_are_written_by_the_reference_after_the_comparison_in_flight(tmp_path: Path) -> None:
    """A staged file that is gone when its call comes (a slot cleaned up) is written by the reference
    instead; the reference answers one request at a time, so the comparison in flight is settled first
    (a call beside it would read that comparison's reply as its own and fail the judgment)."""
    made, staged_dir = staged_judgment(tmp_path)
    made.staged_variant = str(staged_dir / "variant_state.pt")  # never written: gone
    for entry in made.staged_changed:
        Path(entry["path"]).unlink()
    made.candidate_separate_user, made.response_sets, made.variant_made = True, 2, True
    ref, cand = VariantReference(made.io_dir), VariantCandidate(made.io_dir)
    made.reference_slot = ReferenceSlot(ref, tmp_path / "slot")  # type: ignore[arg-type]
    made.check_coverage = lambda cand: None  # type: ignore[method-assign]
    made.verify(ref, cand)  # type: ignore[arg-type]  (ScriptedReference asserts one request at a time)
    assert ref.calls.count("write_changed") == 3 and ref.calls.count("write_variant") == 1
    assert cand.variant_seen == [("written 1", "written variant", ["changed_1.tensors", "variant_state.pt"])]
    assert sorted(ref.received) == sorted(ref.sent)
