"""The test tree stays collectable as one run: without package __init__ files pytest refuses two test
modules with one basename (tests/verl/test_agent_loop.py once stopped the clean-clone CI at collection)."""

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]


def test_no_two_test_modules_share_a_basename() -> None:
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if "adversarial" in path.parts or "__pycache__" in path.parts:
            continue  # cases are submissions, not test modules
        is_test = path.name.startswith("test_") or path.name.endswith("_test.py")
        if is_test and not (path.parent / "__init__.py").exists():
            seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: places for name, places in seen.items() if len(places) > 1}
    assert not clashes, f"rename one of each: {clashes}"
