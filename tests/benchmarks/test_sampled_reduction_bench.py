"""benchmarks/sampled_reduction.py at a small size: the full read is honest with and without the judge's
outliers, and a sample of the rows is refused on the planted draw, by far more than the bound (the large
sizes, where a sample passed before the outliers, are the benchmark's own run: docs/design/precision.md)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import sampled_reduction


def test_the_full_read_passes_and_a_sample_of_a_planted_draw_is_refused(tmp_path: Path, capsys) -> None:
    assert sampled_reduction.main(["--sides", "1024", "--shares", "1,8", "--out", str(tmp_path)]) == 0
    rows = {(row["outliers"], row["share"]): row
            for row in json.loads((tmp_path / "sampled_reduction_mse.json").read_text())["rows"]}  # fmt: skip
    for outliers in ("without", "with"):
        assert rows[outliers, 1]["passes"] and rows[outliers, 1]["relative_error"] < 1e-6, rows[outliers, 1]
    planted = rows["with", 8]
    assert planted["magnitudes"] and not planted["passes"] and planted["statistic"] > 10 * planted["bound"], planted
    assert planted["relative_error"] > 0.02, planted  # beyond the tolerance too (rtol 1e-2 plus atol on ~0.4)
    assert "refused" in capsys.readouterr().out


def test_a_sampled_frobenius_norm_is_refused_on_the_planted_draw(tmp_path: Path) -> None:
    """x / ||x||_F: the global probe plants its input, and the norm of every fourth row is refused."""
    assert sampled_reduction.main(["--task", "frobenius", "--sides", "1024", "--shares", "1,4", "--out", str(tmp_path)]) == 0
    rows = {(row["outliers"], row["share"]): row
            for row in json.loads((tmp_path / "sampled_reduction_frobenius.json").read_text())["rows"]}  # fmt: skip
    assert rows["with", 1]["passes"] and rows["with", 1]["magnitudes"], rows["with", 1]
    planted = rows["with", 4]
    assert not planted["passes"] and planted["statistic"] > 10 * planted["bound"], planted
    assert planted["relative_error"] > 10 * rows["without", 4]["relative_error"], (planted, rows["without", 4])
