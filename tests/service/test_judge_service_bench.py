"""benchmarks/judge_service.py: its Done-when logic on verdicts recorded on the H200, its argument
handling, and a build-only run over real sockets split in two phases as the device would run it."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "judge_service.py"
RECORDED = json.loads((Path(__file__).parent / "data" / "h200_verdicts.json").read_text())["verdicts"]

bench = load_benchmark("judge_service")


def base(name: str) -> bench.Base:
    return next(b for b in bench.bundled_examples() if b.name == name)


BASES = [base(n) for n in ("row_softmax", "elementwise_chain", "compile_error", "wrong_result")]


def recorded(name: str) -> dict:
    record = copy.deepcopy(RECORDED[name])
    if name == "compile_error":  # recorded cold; a primed run compiles only the changed file
        record["verdict"]["checks"]["build"]["compiled"] = ["kernels/elementwise_chain.cu"]
    return record


def run_of(judged: list) -> dict[int, dict]:
    return {i: recorded(b.name) for i, b in enumerate(judged)}


def metrics_of(records: dict[int, dict]) -> dict[str, float]:
    counts: dict[str, int] = {}
    for record in records.values():
        counts[record["status"]] = counts.get(record["status"], 0) + 1
    return {"cuda_agent_judge_lanes": 1.0, **{f'cuda_agent_judge_verdicts_total{{status="{k}"}}': float(v)
                                               for k, v in counts.items()}}  # fmt: skip


def check(judged=None, local=None, http=None, clients=8, local_s=300.0, http_s=310.0, idle=None, loaded=None,
          build_only=False, metrics=None) -> dict:  # fmt: skip
    judged = judged if judged is not None else bench.plan(BASES, 60)
    local = local if local is not None else run_of(judged)
    http = http if http is not None else run_of(judged)
    loaded = loaded if loaded is not None else [0.0740] * 15
    return bench.done_when(judged, local, http, clients, local_s, http_s, idle or [0.0739, 0.0740, 0.0741],
                           loaded, build_only, metrics if metrics is not None else metrics_of(http))  # fmt: skip


def unmet(result: dict) -> set[str]:
    return {name for name, c in result.items() if c["met"] is False}


def test_a_run_like_the_recorded_verdicts_meets_every_item() -> None:
    result = check()
    assert unmet(result) == set()
    assert result["throughput"]["value"] == round(300 / 310, 4) and result["aa"]["value"]["ratio"] == 1.0
    assert result["honest_ok"]["value"]["honest_judgments"] == 30


def test_each_shortfall_fails_its_own_item() -> None:
    judged = bench.plan(BASES, 60)
    http = run_of(judged)
    http[4]["reward"] = 2  # row_softmax, recorded with reward 3
    result = check(http=http, metrics=metrics_of(http))
    assert unmet(result) == {"identical"}
    [mismatch] = result["identical"]["value"]["mismatches"]
    assert mismatch.startswith("row_softmax: http ok 2 (eager ") and ", local ok 3 (eager " in mismatch
    http = run_of(judged)
    http[9] = {**http[9], "status": "incorrect", "reward": -1}  # an honest case not ok (and a mismatch)
    assert unmet(check(http=http, metrics=metrics_of(http))) == {"identical", "honest_ok"}
    assert unmet(check(http_s=334.0)) == {"throughput"}  # 0.898
    assert unmet(check(loaded=[0.0740 * 1.03] * 15)) == {"aa"}
    assert unmet(check(loaded=[0.0740 * 1.015] * 15)) == set()
    assert unmet(check(clients=7)) == {"clients"}
    short = bench.plan(BASES, 59)
    assert unmet(check(judged=short, local=run_of(short), http=run_of(short))) == {"judgments"}
    assert "metrics" in unmet(check(metrics={"cuda_agent_judge_lanes": 1.0}))


def test_a_submission_whose_repeats_disagree_within_one_run_is_named() -> None:
    """A reward that flips between the two runs only counts against the service beyond the judge's own
    noise: each run names the submissions whose repeats within it did not agree (H200 2026-12-02: row_softmax
    3, 2, 2, 2 over HTTP, its lower bound 1.0712 against a 1.0709 threshold), and the mismatch says so. The
    item itself stays strict."""
    judged = bench.plan(BASES, 60)
    rows = [i for i, b in enumerate(judged) if b.name == "row_softmax"]
    assert len(rows) >= 2
    http = run_of(judged)
    http[rows[0]]["reward"] = 2  # recorded with reward 3: one repeat of four flips, over HTTP only
    result = check(http=http, metrics=metrics_of(http))
    assert unmet(result) == {"identical"}
    [mismatch] = result["identical"]["value"]["mismatches"]
    assert mismatch.endswith("its repeats within one run disagree too")
    assert bench.self_disagreements(http, judged) == {"row_softmax": ["ok +2"] + ["ok +3"] * (len(rows) - 1)}
    assert bench.self_disagreements(run_of(judged), judged) == {}
    assert bench.run_facts(http, judged)["disagrees_with_itself"] == {"row_softmax": ["ok +2"] + ["ok +3"] * (len(rows) - 1)}


def test_a_cold_or_unprimed_run_is_no_fair_comparison() -> None:
    judged = bench.plan(BASES, 60)
    http = run_of(judged)
    http[0]["verdict"]["timing"]["baseline_source"] = "measured"
    assert unmet(check(http=http)) == {"warm"}
    http = run_of(judged)
    http[2] = copy.deepcopy(RECORDED["compile_error"])  # as recorded: every source compiled
    result = check(http=http)
    assert unmet(result) == {"same_builds"}
    assert result["same_builds"]["value"]["http"] == [
        "compile_error: compiled ['kernels/elementwise_chain.cu', 'kernels/elementwise_chain_binding.cpp'], "
        "expected ['kernels/elementwise_chain.cu']"
    ]


def test_a_run_cut_short_leaves_its_items_unmet_never_passed() -> None:
    judged = bench.plan(BASES, 60)
    http = {i: r for i, r in run_of(judged).items() if i < 40}  # the deadline came after 40 verdicts
    result = check(http=http, metrics=metrics_of(http))
    assert unmet(result) == {"judgments", "identical", "honest_ok", "throughput"}
    assert result["throughput"]["value"] is None
    nothing = check(http={}, http_s=None, loaded=[], metrics={})
    assert {"judgments", "identical", "throughput", "aa", "warm", "same_builds", "metrics"} <= unmet(nothing)


def test_build_only_leaves_the_gpu_items_out() -> None:
    result = check(build_only=True, idle=[], loaded=[])
    assert {k for k, c in result.items() if c["met"] is None} == {"honest_ok", "aa", "warm"}
    assert unmet(result) == set()


def test_the_default_bases_are_the_bundled_examples_and_honest_cases_of_one_task() -> None:
    bases = bench.choose_bases(3)
    names = [b.name for b in bases]
    assert "build_hang" not in names and "infinite_loop" not in names
    assert [b.name for b in bases if b.name.startswith("00_")] == [
        "00_honest_fused_elementwise", "00_honest_inc_kernel_body", "00_honest_joined_side_stream",
    ]  # fmt: skip
    assert len({b.task for b in bases if b.honest and b.name.startswith("00_")}) == 1
    assert len({b.task for b in bases}) == 5 and all(bench.first_cu(b.folder) for b in bases)
    assert "row_softmax" in names and base("row_softmax").expected == "ok"


def test_parse_metrics_reads_labelled_samples() -> None:
    text = ('# HELP x\ncuda_agent_judge_lanes 1.0\ncuda_agent_judge_verdicts_total{status="ok"} 16.0\n'
            'cuda_agent_judge_verdicts_created{status="ok"} 1.7e+09\n')  # fmt: skip
    found = bench.parse_metrics(text)
    assert found['cuda_agent_judge_verdicts_total{status="ok"}'] == 16.0 and found["cuda_agent_judge_lanes"] == 1.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--n", "0"], "--n must be at least 1"),
        (["--clients", "0"], "--clients must be at least 1"),
        (["--deadline-s", "-5"], "--deadline-s must be positive"),
        (["--bases", "nonesuch"], "unknown base(s) nonesuch"),
        (["--bases", "compile_error,wrong_result"], "the A/A example row_softmax is not among the bases"),
        (["--bases", "wrong_result", "--aa-example", "wrong_result"], "must be an honest kernel"),
    ],
)
def test_bad_arguments_are_refused_before_any_work(argv, message, tmp_path: Path, capsys) -> None:
    with pytest.raises(SystemExit) as stopped:
        bench.main([*argv, "--out", str(tmp_path / "out")])
    assert message in str(stopped.value.code) + capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_the_service_phase_needs_the_local_phase_of_the_same_plan(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match=r"needs .*local_state\.json, written by --phase local with the same --state"):
        bench.main(["--phase", "service", "--build-only", "--out", str(tmp_path)])
    (tmp_path / bench.STATE_FILE).write_text(json.dumps({"plan": ["row_softmax"], "build_only": True}))
    with pytest.raises(SystemExit, match="is for another plan"):
        bench.main(["--phase", "service", "--build-only", "--n", "2", "--bases", "row_softmax", "--out", str(tmp_path)])


def instant_base(folder: Path) -> Path:
    """A submission the CPU checks finish in a moment (its task does not parse, it has no kernels/)."""
    folder.mkdir(parents=True)
    (folder / "model.py").write_text("this is not a task (\n")
    (folder / "model_new.py").write_text("import torch\n")
    return folder


def run_script(*argv: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *argv], capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)  # fmt: skip


def test_build_only_over_real_sockets_in_two_phases(tmp_path: Path) -> None:
    folder = str(instant_base(tmp_path / "instant"))
    out, state = tmp_path / "out", tmp_path / "state"  # each device command gets an empty OUT of its own
    common = ["--build-only", "--bases", folder, "--n", "4", "--clients", "2", "--state", str(state)]
    local = run_script(*common, "--phase", "local", "--out", str(tmp_path / "out-local"))
    assert local.returncode == 0, local.stderr[-3000:]
    assert "local 4/4 instant: task_error" in local.stderr and (state / bench.STATE_FILE).is_file()
    service = run_script(*common, "--phase", "service", "--out", str(out))
    assert service.returncode == 1, service.stderr[-3000:]  # 4 judgments from 2 clients is no Done-when
    result = json.loads((out / "judge_service.json").read_text())
    checks = result["done_when"]
    assert checks["judgments"]["value"] == {"planned": 4, "with_verdict": 4} and checks["judgments"]["met"] is False
    assert checks["identical"]["met"] is True and checks["metrics"]["met"] is True
    assert checks["metrics"]["value"]["counted"] == {"task_error": 4}
    assert result["runs"]["http"]["statuses"] == {"task_error": 4} and result["local_seconds"] > 0
    assert result["stage_seconds"]["between_phases_s"] >= 0 and result["latency_p50_s"] > 0
    lines = (out / "verdicts.jsonl").read_text().splitlines()
    assert len(lines) == 4 and all(json.loads(line)["http"]["status"] == "task_error" for line in lines)
    assert "PASS  identical" in service.stdout and "FAIL  judgments" in service.stdout


def test_a_deadline_that_leaves_no_time_stops_with_what_was_measured(tmp_path: Path) -> None:
    folder = str(instant_base(tmp_path / "instant"))
    done = run_script("--build-only", "--bases", folder, "--n", "2", "--deadline-s", "5", "--out", str(tmp_path / "o"))
    assert done.returncode == 1
    result = json.loads((tmp_path / "o" / "judge_service.json").read_text())
    assert result["not_reached"] and result["not_reached"][0].startswith("local run not started")
    assert result["priming"]["built"] == {"task_error": 1} and result["passed"] is False


def test_a_variant_changes_its_first_cu_only_and_is_unique_to_the_run(tmp_path: Path) -> None:
    row = base("row_softmax")
    one = bench.variant(row, tmp_path / "one", "local-1")
    two = bench.variant(row, tmp_path / "two", "local-2")
    cu = "kernels/row_softmax.cu"
    assert (one / cu).read_text().startswith((row.folder / cu).read_text())
    assert bench.RUN_NONCE in (one / cu).read_text() and (one / cu).read_text() != (two / cu).read_text()
    assert (one / "kernels/row_softmax_binding.cpp").read_bytes() == (row.folder / "kernels/row_softmax_binding.cpp").read_bytes()
    assert not (one / "expected.json").exists() and (one / "model.py").is_file()
