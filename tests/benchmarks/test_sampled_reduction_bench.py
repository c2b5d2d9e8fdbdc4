"""benchmarks/sampled_reduction.py at a small size: the full read is honest and a sample of the rows is
refused there (the audit's allowance is tight at 65K elements; the benchmark's point is the large sizes)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import sampled_reduction


def test_the_full_read_passes_and_a_small_sample_is_refused(tmp_path: Path, capsys) -> None:
    assert sampled_reduction.main(["--sides", "256", "--shares", "1,8", "--out", str(tmp_path)]) == 0
    rows = {row["share"]: row for row in json.loads((tmp_path / "sampled_reduction.json").read_text())["rows"]}
    assert rows[1]["passes"] and rows[1]["relative_error"] < 1e-6, rows[1]
    assert not rows[8]["passes"] and rows[8]["statistic"] > rows[8]["bound"], rows[8]
    assert "refused" in capsys.readouterr().out
