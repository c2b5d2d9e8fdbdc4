"""scripts/gpu_suite.py in parts: the suite is longer than a device call, so it is judged a part per call
and the parts are joined. Joining is sound only for one judge: verdict lines carry a digest of the judge's
code and a part judged by other code is refused. No GPU here: these run the script up to where it would
start judging (it stops on a refused part), and its digest and reading of parts directly."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
SCRIPT = ROOT / "scripts" / "gpu_suite.py"


@pytest.fixture(scope="module")
def suite():
    spec = importlib.util.spec_from_file_location("gpu_suite_under_test", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _line(case: str, digest: str, good: bool = True) -> str:
    return json.dumps({"case": case, "as_expected": good, "judge_code": digest, "status": "ok", "reward": 3})


def test_the_digest_is_of_the_judge_code_and_changes_with_it(suite, tmp_path: Path, monkeypatch) -> None:
    digest = suite.judge_digest()
    assert len(digest) == 64 and digest == suite.judge_digest()
    copy = tmp_path / "src" / "cuda_agent"
    copy.mkdir(parents=True)
    (copy / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(suite, "ROOT", tmp_path)
    first = suite.judge_digest()
    (copy / "a.py").write_text("x = 2\n")
    assert suite.judge_digest() != first, "a changed judge is another judge"


def test_earlier_parts_are_joined_only_when_judged_by_this_judge(suite, tmp_path: Path) -> None:
    digest = suite.judge_digest()
    same = tmp_path / "p1.jsonl"
    same.write_text(_line("tests/adversarial/a", digest) + "\n" + _line("tests/adversarial/b", digest, False) + "\n")
    joined = suite.read_earlier([same], digest)
    assert sorted(joined) == ["tests/adversarial/a", "tests/adversarial/b"]
    assert joined["tests/adversarial/b"]["as_expected"] is False
    other = tmp_path / "p2.jsonl"
    other.write_text(_line("tests/adversarial/c", "0" * 64) + "\n")
    with pytest.raises(ValueError, match="other judge code"):
        suite.read_earlier([same, other], digest)


def test_a_part_judged_by_other_code_stops_the_run_with_one_line(tmp_path: Path) -> None:
    stale = tmp_path / "verdicts.jsonl"
    stale.write_text(_line("examples/row_softmax", "f" * 64) + "\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--part", "2/3", "--earlier", str(stale), "--gpus", "1",
                           "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("gpu_suite: ") and "judge that part again" in done.stdout
    bad_part = subprocess.run([sys.executable, str(SCRIPT), "--part", "4/3", "--gpus", "1", "--out", str(tmp_path / "o")],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
    assert bad_part.returncode == 2 and "K must be 1 to N" in bad_part.stdout


def test_the_lane_table_sums_each_part_over_the_verdicts_that_reached_it(suite) -> None:
    verdicts = [
        {"stage_seconds": {"lane": 2.0, "timing": 1.5, "baseline_rounds": 0.5, "verify": 0.25}},
        {"stage_seconds": {"lane": 4.0, "timing": 2.5}},
        {"status": "compile_error", "stage_seconds": {"build": 3.0}},  # never reached the lane
    ]
    rows = {line.split()[0]: line.split()[1:] for line in suite.lane_table(verdicts).splitlines()[2:]}
    assert rows["lane"] == ["6.0", "2", "3.000"] and rows["timing"] == ["4.0", "2", "2.000"]
    assert rows["baseline_rounds"] == ["0.5", "1", "0.500"] and rows["verify"] == ["0.2", "1", "0.250"]
    assert "build" not in rows and "quiet_wait" not in rows  # not a lane part / reached by none
