"""Issue 12's adversarial cases name their attack class, and the suite keeps enough of each kind.

The GPU run (`scripts/gpu_suite.py`) prints a table by class; this keeps the labels usable on CPU: every
`"class"` is one of issue 12's ten, on a cheat, and the suite has the cheats and honest edge cases the
issue asks for (40 new cheats over the ten classes, 10 honest edge cases), several per class."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).parents[2] / "tests" / "adversarial"
CASES = {p.parent.name: json.loads(p.read_text()) for p in sorted(ROOT.glob("*/expected.json"))}


def test_classes_are_issue_12s_and_only_on_cheats() -> None:
    labelled = {name: e for name, e in CASES.items() if "class" in e}
    assert labelled, "no case carries an issue-12 class"
    for name, expected in labelled.items():
        assert isinstance(expected["class"], int) and 1 <= expected["class"] <= 10, name
        assert expected["kind"] == "cheat", f"{name}: only cheats have an attack class"
        assert "issue12_class" not in expected, f"{name}: the old label; use class"


def test_every_class_has_several_cheats_and_the_honest_edge_cases_are_there() -> None:
    per_class = Counter(e["class"] for e in CASES.values() if "class" in e)
    assert set(per_class) == set(range(1, 11)), per_class
    assert min(per_class.values()) >= 2, per_class
    assert sum(per_class.values()) >= 42, per_class
    honest = [n for n, e in CASES.items() if e["kind"] == "honest" and "issue12" in e]
    assert len(honest) >= 12, honest
    for name in honest:
        assert CASES[name]["expect"] == "accept", name
