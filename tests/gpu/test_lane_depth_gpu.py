"""Issue 34's depth-2 lane on a GPU (trusted/lane_share.py): the bundled examples, broken ones among them,
judged two per GPU give the verdicts they give one at a time, and the lane really ran two at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_judge_gpu import meets

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.trusted.build import BuildConfig

ROOT = Path(__file__).parents[2]
pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("preempt", [False, True], ids=["waits-for-readers", "freezes-readers"])
def test_examples_judged_two_per_gpu_get_their_expected_verdicts_with_two_in_flight(preempt: bool) -> None:
    """With `preempt` (JudgeConfig.lane_preempt) a timing freezes the other judgment's reference and
    candidate mid-call instead of waiting for them: the verdicts must not change."""
    from cuda_agent.judge.decide.service import JudgeService

    cases = sorted(p.parent for p in (ROOT / "examples").glob("*/expected.json"))
    config = JudgeConfig(
        forward_timeout_s=30.0, build=BuildConfig(arch="9.0", compile_timeout_s=60.0), lane_depth=2,
        lane_preempt=preempt,
    )  # fmt: skip
    with JudgeService(config) as service:
        judged = {cases[i]: v.to_dict() for i, v in service.judge_many(cases)}
        note = service.lane_depth_note
    assert note == "", f"depth 2 was not taken: {note}"
    wrong = []
    for case, verdict in judged.items():
        expected = json.loads((case / "expected.json").read_text())
        checks = verdict.get("checks", {})
        print(f"{case.name:26s} {verdict['status']:13s} {verdict['reward']:+d} frozen beside: "
              f"{checks.get('lane_others_frozen', 0)} held frozen: {verdict.get('stage_seconds', {}).get('held_frozen', 0):.2f} s waited after freeze: {bool(checks.get('lane_waited_after_freeze'))} two in flight: {checks.get('lane_beside_another')} again alone: {checks.get('judged_again_alone', '')[:80]}")  # fmt: skip
        if not meets(expected, verdict):
            wrong.append(
                f"{case.name}: expected {expected}, got {verdict['status']} {verdict['reward']}: {verdict['reason']}"
            )
    assert not wrong, "\n".join(wrong)
    # Cold tasks rarely have a sibling loaded when one is timed (its preparation, a reader, waits for the
    # writer); the batch benchmark shows the freezes. Here: two judgments were in flight at once.
    beside = [c.name for c, v in judged.items() if v.get("checks", {}).get("lane_beside_another")]
    assert beside, "no judgment was verified while another was in flight: the lane never ran two at once"
