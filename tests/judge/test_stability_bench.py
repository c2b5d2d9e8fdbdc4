"""benchmarks/compile_baseline_stability.py: issue 12's reproducibility targets, decided on rows recorded
on the H200 (tests/judge/data/h200_stability_v5.json: 3 examples x 5 cold judgments, protocol v5).

The recorded runs are protocol v5's (a round's time was its median sample). These tests check how the
benchmark decides on such rows, which v6 did not change; they say nothing of v6's stability (a round's
time is now its mean sample): that takes a new run on the H200 (scripts/device/judge_stability.sh), to be
recorded beside these as h200_stability_v6.json. `test_the_final_v5_run_meets_every_target` is the record
of v5, not a claim about the protocol in force."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from tests.benchmark_module import load_benchmark


def _recorded(name: str) -> dict[str, list[dict]]:
    """A stability run recorded on the H200 (tests/judge/data/<name>), its rows by example."""
    return json.loads((Path(__file__).parent / "data" / name).read_text())["results"]


RECORDED = _recorded("h200_stability_v5.json")
bench = load_benchmark("compile_baseline_stability")


def _verdict(lines: list[str], name: str) -> str:
    return next(line for line in lines if line.startswith(name)).split()[-1]


def test_one_reward_that_differs_fails_its_example_and_the_run() -> None:
    lines, ok = bench.summarise(RECORDED)
    assert not ok
    assert _verdict(lines, "row_softmax") == "FAIL"  # rewards 3,2,3,3,3
    assert _verdict(lines, "layernorm") == "PASS" and _verdict(lines, "elementwise_chain") == "PASS"


def test_the_same_reward_everywhere_passes_and_a_moved_baseline_fails() -> None:
    results = copy.deepcopy(RECORDED)
    for row in results["row_softmax"]:
        row["reward"] = 3
    assert bench.summarise(results)[1]
    results["layernorm"][2]["compile_ms"] *= 1.04  # one cold run's baseline 4% off: beyond the 3% target
    lines, ok = bench.summarise(results)
    assert not ok and _verdict(lines, "layernorm") == "FAIL"


def test_a_run_that_was_not_timed_fails_with_its_status() -> None:
    results = copy.deepcopy(RECORDED)
    results["elementwise_chain"][0] = {"run": 1, "reward": -1, "status": "timeout", "reason": "the GPU hung"}
    lines, ok = bench.summarise(results)
    assert not ok and any("not every run was timed" in line and "timeout" in line for line in lines)


def test_each_line_names_the_host_clocks_charges() -> None:
    row = RECORDED["row_softmax"][1]
    line = bench._line("row_softmax", row)
    assert "reward +2" in line and "charged 49/60" in line and "margin 0.00795" in line, line


def test_the_final_v5_run_meets_every_target() -> None:
    """The run recorded with the builds' private kernels, the margin's floor and the GPU claim (H200,
    tests/judge/data/h200_stability_v5_claim.json) passes as recorded; one reward changed fails it."""
    final = _recorded("h200_stability_v5_claim.json")
    lines, ok = bench.summarise(final)
    assert ok and all(_verdict(lines, name) == "PASS" for name in final), lines
    final["layernorm"][3]["reward"] = 3
    assert not bench.summarise(final)[1]
