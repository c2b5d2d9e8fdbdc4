"""Every bundled example and adversarial case is well-formed: a valid task and a usable expectation.

The GPU run (`python scripts/gpu_suite.py`) judges them; this CPU test keeps the folders from rotting."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuda_agent.task import check_task_runs, load_task

ROOT = Path(__file__).parents[2]
CASES = sorted(
    p.parent for folder in ("examples", "tests/adversarial") for p in (ROOT / folder).glob("*/expected.json")
)
STATUSES = {"ok", "compile_error", "incorrect", "runtime_error", "timeout", "rejected", "task_error"}


@pytest.mark.parametrize("case", CASES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_case_is_well_formed(case: Path) -> None:
    expected = json.loads((case / "expected.json").read_text())
    assert expected.get("kind") in {"honest", "broken", "cheat"}, expected
    assert expected.get("description"), "say what the case does"
    if "expect" in expected:
        assert expected["expect"] in {"accept", "reject", "honest_timing"}
        if expected["expect"] == "honest_timing":
            assert "max_reward" in expected
    else:
        assert expected["status"] in STATUSES
    assert (case / "model_new.py").is_file() and (case / "kernels").is_dir()
    outputs = check_task_runs(load_task(case / "model.py"))
    assert outputs


def test_suites_cover_every_hack_family() -> None:
    families = {json.loads((c / "expected.json").read_text()).get("family") for c in CASES}
    assert set(range(1, 19)) <= families
    honest = [c for c in CASES if json.loads((c / "expected.json").read_text())["kind"] == "honest"]
    assert len(honest) >= 6
