"""One reference preparation serving a group of judgments of one task (decide/reference_group.py, issue 34
item 3): which preparations may be shared, what each judgment of the group gets, and when the pool keeps
the preparation in the reference worker. With real reference worker processes (their GPU warm-up skipped:
no GPU here); tests/gpu/test_judge_gpu.py judges a group on a GPU."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.reference_group import PREPARATION_SETTINGS, describe, group_key, start_group
from cuda_agent.judge.trusted.pool import WorkerPool


def test_a_preparation_is_shared_only_by_the_same_task_under_the_same_settings() -> None:
    base = JudgeConfig()
    assert group_key("task-a", base) == group_key("task-a", JudgeConfig())
    assert group_key("task-a", base) != group_key("task-b", base)
    changed = {"atol": 1e-3, "rtol": 1e-3, "input_sets": 3, "precision_audit": False,
               "perturb_parameters": False, "input_audit": False, "sign_audit": False,
               "reference_kept_share": 0.0}  # fmt: skip
    assert set(changed) == set(PREPARATION_SETTINGS)
    for name, value in changed.items():
        assert group_key("task-a", dataclasses.replace(base, **{name: value})) != group_key("task-a", base), name
    # Settings of timing alone do not change what the reference prepared.
    assert group_key("task-a", dataclasses.replace(base, time_candidate=False)) == group_key("task-a", base)


def _prepared(tmp_path: Path, limit: int):
    io_dir, keep = tmp_path / "io", tmp_path / "keep"
    io_dir.mkdir()
    keep.mkdir()
    (io_dir / "state.pt").write_bytes(b"state of the first judgment")
    reply = {"outputs": [], "degenerate": [], "ops": ["aten::add"]}
    return start_group("key", reply, [11, 22, 33], io_dir, keep, limit), io_dir


def test_each_judgment_of_a_group_gets_its_own_state_file_and_the_group_ends_at_its_limit(tmp_path: Path) -> None:
    group, first_io = _prepared(tmp_path, limit=3)
    assert group is not None and group.uses == 1 and group.serves("key") and not group.serves("other")
    (first_io / "state.pt").unlink()  # the first judgment's scratch goes with it
    for n in (2, 3):
        io_dir = tmp_path / f"io{n}"
        io_dir.mkdir()
        reply = group.hand_out(io_dir)
        assert (io_dir / "state.pt").read_bytes() == b"state of the first judgment"
        assert reply["ops"] == ["aten::add"] and group.uses == n
        assert describe(group).startswith("shared: judgment")
    assert not group.reusable() and not group.serves("key"), "at the limit the next judgment prepares afresh"
    reply["ops"].append("changed by a judgment")
    assert group.reply["ops"] == ["aten::add"], "what one judgment does to its reply never reaches the next"


def test_groups_of_one_are_no_groups(tmp_path: Path) -> None:
    assert _prepared(tmp_path, limit=1)[0] is None


@pytest.fixture
def pool(cpu_pool_factory) -> WorkerPool:
    return cpu_pool_factory(kept_references=2)


def test_the_pool_keeps_a_reusable_preparation_in_the_worker_and_drops_a_spent_one(pool: WorkerPool,
                                                                                   tmp_path: Path) -> None:  # fmt: skip
    sent: list[str] = []
    group, _ = _prepared(tmp_path, limit=2)
    with pool.reference("task-a") as slot:
        real_call = slot.worker.call

        def spy(command: str, *args, **kwargs):
            sent.append(command)
            return real_call(command, *args, **kwargs)

        slot.worker.call = spy  # type: ignore[method-assign]
        slot.group = group
    assert sent == ["end_candidate"], "a preparation with uses left stays in the worker"
    with pool.reference("task-a") as kept:
        assert kept is slot and kept.group is group
        group.hand_out(tmp_path)  # the second judgment of two: spent
    assert sent == ["end_candidate", "end_judgment"] and slot.group is None
