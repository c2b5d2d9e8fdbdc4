"""benchmarks/judge_service_faults.py at a small scale on the CPU: real server processes restarted
gracefully and killed mid-run, slow clients holding connections, and every verdict checked against the
in-process judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
bench = load_benchmark("judge_service_faults")


def test_nothing_lost_duplicated_or_judged_twice_through_restarts_and_kills(tmp_path: Path) -> None:
    argv = ["--n", "60", "--clients", "6", "--graceful", "2", "--kills", "1", "--slow", "20", "--build-only",
            "--workers", "1", "--probe-share", "0.05", "--max-pending", "16", "--out", str(tmp_path)]  # fmt: skip
    code = bench.main(argv)
    figures = json.loads((tmp_path / "judge_service_faults.json").read_text())
    assert code == 0, figures
    assert figures["lost"] == figures["duplicated"] == figures["judged_twice"] == 0
    assert figures["differ_from_in_process"] == 0 and figures["verdicts"] == figures["rows_done"] == 60
    assert [f["fault"] for f in figures["faults"]].count("kill") == 1 and len(figures["faults"]) == 3
    assert figures["submit_ms"]["p99"] is not None and figures["poll_ms"]["p99"] is not None
    assert figures["slow_connections_reopened"] >= 20


def test_the_submissions_are_distinct_and_judgeable() -> None:
    subs = bench.cpu_submissions(50, 0.2, "n")
    assert len({s.key for s in subs}) == 50 and len({json.dumps(s.body()) for s in subs}) == 50
    assert {s.task_name for s in subs} & {"elementwise_chain"}
    examples = bench.example_submissions(12, "n")
    assert len({json.dumps(s.body(), sort_keys=True) for s in examples}) == 12
