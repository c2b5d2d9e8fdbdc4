"""Eval metrics on hand-made verdict sets whose answers are worked out by hand here."""

from __future__ import annotations

import json
import math
import random

import pytest

from cuda_agent.eval.metrics import COLUMNS, FAST_P, RunMetrics, compute_metrics, fast_column
from cuda_agent.eval.records import EvalRecord, RecordError, append_record, read_records, write_records
from cuda_agent.judge import SPEEDUP_THRESHOLD, Stat, Status, Timing, Verdict


def rec(task: str, status: str = "ok", reward: int | None = None, se: float | None = None, sc: float | None = None,
        *, episode: int = 0, eager_ms: float | None = None, compile_ms: float | None = None, **extra) -> EvalRecord:
    level = int(task.split("/")[0].removeprefix("level"))
    if reward is None:
        reward = 1 if status == "ok" else -1
    return EvalRecord(task_id=task, level=level, problem=0, name=task.split("/")[1], episode=episode,
                      status=status, reward=reward, eager_ms=eager_ms, compile_ms=compile_ms,
                      speedup_vs_eager=se, speedup_vs_compile=sc, **extra)


def value(metrics: RunMetrics, column: str, level: int | str = "overall", selection: str = "pass@1") -> float | None:
    return metrics.row(level, selection).metrics[column].value


def geo(*xs: float) -> float:
    return math.prod(xs) ** (1 / len(xs))


def test_build_only_results_are_not_applicable_not_zero(tmp_path, capsys):
    """`built` (judged --build-only: nothing verified or timed) is neither correct nor failed: every column
    of a row holding one is n/a, in the metrics, the terminal tables and the report, never "0% pass"."""
    from cuda_agent.cli import main

    records = [rec("level1/a", "built", 0), rec("level1/b", "built", 0), rec("level2/c", "compile_error")]
    metrics = compute_metrics(records, bootstrap=20)
    for key in (1, "overall"):
        for selection in ("pass@1", "best_of_k"):
            cells = metrics.row(key, selection).metrics
            assert all(cells[c].value is None and cells[c].unmeasured for c in COLUMNS), (key, selection)
    assert value(metrics, "pass_rate", 2) == 0.0 and not metrics.row(2).metrics["pass_rate"].unmeasured
    assert RunMetrics.from_dict(json.loads(json.dumps(metrics.to_dict()))) == metrics
    # A task with a measured episode beside a build-only one: pass@1 is unknown, its best episode is not.
    mixed = compute_metrics([rec("level1/a", "ok", 2, 1.5, 0.9), rec("level1/a", "built", 0, episode=1)], bootstrap=0)
    assert value(mixed, "pass_rate") is None and value(mixed, "pass_rate", selection="best_of_k") == 1.0

    run = tmp_path / "run"
    write_records(run / "records.jsonl", records)
    assert main(["eval", "--report", str(run), "--bootstrap", "10"]) == 0
    captured = capsys.readouterr()
    table, report = captured.out, captured.err
    assert "level 1: 2 task(s), 2 record(s), first episode passed n/a (2 unmeasured), mean reward n/a" in table
    assert "level 2: 1 task(s), 1 record(s), first episode passed 0/1, mean reward -1.00" in table
    assert "n/a: 2 episode(s) judged build-only: the CPU checks passed, nothing was verified or timed" in table
    rows = {line.split()[0]: line.split()[2:] for line in report.splitlines() if line.startswith(("1 ", "2 ", "overall"))}
    assert rows["1"] == ["n/a"] * 7 and rows["overall"] == ["n/a"] * 7 and rows["2"][0] == "0%"
    assert "| Level 1 | 2 | 2 | n/a |" in (run / "report.md").read_text()


def test_one_level_every_column_with_ties_at_both_thresholds():
    assert SPEEDUP_THRESHOLD == 1.05  # the hand answers below assume the reward's 5% threshold
    records = [
        rec("level1/a", "ok", 3, 2.0, 1.5),
        rec("level1/b", "incorrect", eager_ms=1.0, compile_ms=0.5),  # failed; eager would be 0.5x compile
        rec("level1/c", "ok", 1, 1.0, 0.8),     # exactly 1.0 vs eager: not faster
        rec("level1/d", "ok", 2, 1.05, 1.05),   # exactly at the 5% threshold: faster, not > 5%
        rec("level1/e", "ok", 2, 1.2, 1.0),     # exactly 1.0 vs compile
    ]
    m = compute_metrics(records, bootstrap=0, seed=0)
    expected = {
        "pass_rate": 4 / 5,
        "faster_than_eager": 3 / 5,             # a, d, e
        "faster_than_eager_5pct": 2 / 5,        # a, e
        "faster_than_eager_credited": 3 / 5,    # reward >= 2: a, d, e
        "faster_than_compile": 2 / 5,           # a, d
        "faster_than_compile_5pct": 1 / 5,      # a
        "faster_than_compile_credited": 1 / 5,  # no bounds recorded: reward 3, a
        "geomean_vs_eager_correct": geo(2.0, 1.0, 1.05, 1.2),
        "geomean_vs_compile_correct": geo(1.5, 0.8, 1.05, 1.0),
        "geomean_vs_eager_all": geo(2.0, 1.0, 1.05, 1.2, 1.0),          # b fell back to eager
        "geomean_vs_compile_all": geo(1.5, 0.8, 1.05, 1.0, 0.5 / 1.0),  # ... which is compile_ms/eager_ms
        "mean_reward": (3 - 1 + 1 + 2 + 2) / 5,
        # KernelBench's fast_p: correct and median speedup strictly above p; fast_0 is the share correct
        **{fast_column(p, "eager"): n / 5 for p, n in zip(FAST_P, (4, 4, 4, 3, 1, 0), strict=True)},
        **{fast_column(p, "compile"): n / 5 for p, n in zip(FAST_P, (4, 4, 3, 2, 0, 0), strict=True)},
        # no precision ratio recorded: no kernel is known to be at parity
        **{fast_column(p, b, parity=True): 0.0 for p in FAST_P for b in ("eager", "compile")},
    }
    assert set(expected) == set(COLUMNS)
    for column, answer in expected.items():
        assert value(m, column, 1) == pytest.approx(answer), column
        assert value(m, column) == pytest.approx(answer), column  # one level: overall is that level
    assert m.row(1).metrics["geomean_vs_eager_correct"].n == 4
    assert m.row(1).metrics["pass_rate"].low is None  # bootstrap=0: no interval
    assert m.reward_counts["1"] == {"-1": 1, "0": 0, "1": 1, "2": 2, "3": 1}
    assert m.status_counts["overall"] == {"ok": 4, "incorrect": 1}


def test_compile_credit_reads_the_bound_and_the_widened_threshold():
    records = [
        # reward 1 but compile credited: faster than compile only (reward 2/3 need eager)
        rec("level1/a", "ok", 1, 1.0, 1.3, speedup_vs_compile_low=1.09, compile_threshold=1.08),
        rec("level1/b", "ok", 3, 2.0, 1.3, speedup_vs_compile_low=1.07, compile_threshold=1.08),  # bound under
        rec("level1/c", "ok", 1, 1.0, 1.3, speedup_vs_compile_low=1.05, compile_threshold=None),  # tie at 1.05
        rec("level1/d", "ok", 1, 1.0, 1.3, speedup_vs_compile_low=1.06, compile_threshold=1.02),  # bar stays 1.05
    ]
    m = compute_metrics(records, bootstrap=0)
    assert value(m, "faster_than_compile_credited") == pytest.approx(2 / 4)  # a, d
    assert value(m, "faster_than_compile_5pct") == pytest.approx(1.0)        # all medians are 1.3


def test_overall_weights_levels_by_size():
    records = [rec("level1/a", se=2.0, sc=2.0), rec("level1/b", "incorrect")]
    records += [rec(f"level2/t{i}", se=s, sc=s) for i, s in enumerate([1.0, 1.0, 1.0, 4.0])]
    plain = compute_metrics(records, bootstrap=0)
    assert value(plain, "pass_rate") == pytest.approx(5 / 6)  # default weights: the tasks present
    assert value(plain, "geomean_vs_eager_correct") == pytest.approx((2.0 * 4.0) ** (1 / 5))
    weighted = compute_metrics(records, level_sizes={1: 100, 2: 50}, bootstrap=0)
    assert value(weighted, "pass_rate", 1) == pytest.approx(0.5)
    assert value(weighted, "pass_rate", 2) == pytest.approx(1.0)
    assert value(weighted, "pass_rate") == pytest.approx((100 * 0.5 + 50 * 1.0) / 150)
    # each task of level 1 stands for 50 tasks, of level 2 for 12.5: the correct ones' logs weighted so
    assert value(weighted, "geomean_vs_eager_correct") == pytest.approx(
        math.exp((50 * math.log(2.0) + 12.5 * math.log(4.0)) / (50 + 4 * 12.5)))
    # failures as eager: (50*log2 + 50*0 + 12.5*log4) / 150
    assert value(weighted, "geomean_vs_eager_all") == pytest.approx(math.exp(75 * math.log(2) / 150))
    assert weighted.row("overall").weight == 150


def test_empty_level_is_reported_empty_and_left_out_of_overall():
    records = [rec("level1/a", se=2.0, sc=1.0), rec("level2/b", "timeout")]
    m = compute_metrics(records, level_sizes={1: 100, 2: 100, 3: 50}, bootstrap=50)
    row3 = m.row(3)
    assert (row3.tasks, row3.episodes) == (0, 0)
    assert all(metric.value is None and metric.low is None for metric in row3.metrics.values())
    assert m.levels == [1, 2, 3] and m.overall_levels == [1, 2]
    assert value(m, "pass_rate") == pytest.approx(0.5)
    assert m.reward_counts["3"] == {"-1": 0, "0": 0, "1": 0, "2": 0, "3": 0}


def test_no_records_at_all():
    m = compute_metrics([], bootstrap=100)
    assert m.levels == [] and m.row("overall").tasks == 0
    assert all(metric.value is None for metric in m.row("overall").metrics.values())
    json.dumps(m.to_dict())


def test_all_failed():
    records = [
        rec("level1/a", "compile_error"),
        rec("level1/b", "incorrect", eager_ms=2.0, compile_ms=1.0),
        rec("level1/c", "runtime_error", eager_ms=1.0, compile_ms=2.0),
    ]
    m = compute_metrics(records, bootstrap=200, seed=3)
    for column in ("pass_rate", "faster_than_eager", "faster_than_compile_5pct", "faster_than_compile_credited"):
        metric = m.row("overall").metrics[column]
        assert (metric.value, metric.low, metric.high) == (0.0, 0.0, 0.0), column
    assert value(m, "geomean_vs_eager_correct") is None and value(m, "geomean_vs_compile_correct") is None
    assert value(m, "geomean_vs_eager_all") == pytest.approx(1.0)
    compile_all = m.row("overall").metrics["geomean_vs_compile_all"]
    assert compile_all.value == pytest.approx(geo(0.5, 2.0)) and compile_all.n == 2  # a: no baseline times
    assert value(m, "mean_reward") == -1


def test_untimed_correct_and_missing_task():
    records = [
        rec("level1/a", "ok", 1),                  # correct, timing did not run (--no-timing)
        rec("level1/b", "ok", 2, 1.5, 1.2),
    ]
    m = compute_metrics(records, bootstrap=0, expected_tasks=["level1/a", "level1/b", "level1/z"])
    row = m.row(1)
    assert (row.tasks, row.missing, row.episodes) == (3, 1, 2)
    assert value(m, "pass_rate") == pytest.approx(2 / 3)        # z has no record: failed
    assert value(m, "faster_than_eager") == pytest.approx(1 / 3)  # a is correct but never faster
    assert value(m, "geomean_vs_eager_correct") == pytest.approx(1.5)
    assert row.metrics["geomean_vs_eager_correct"].n == 1
    assert value(m, "geomean_vs_eager_all") == pytest.approx(geo(1.5, 1.0))  # a left out, z counted as eager
    assert row.metrics["geomean_vs_compile_all"].n == 1  # z: no baseline times known
    assert value(m, "mean_reward") == pytest.approx((1 + 2 - 1) / 3)
    with pytest.raises(RecordError, match="level"):
        compute_metrics(records, expected_tasks=["z"])
    with pytest.raises(RecordError, match="expected at level 2"):
        compute_metrics(records, expected_tasks={"level1/a": 2})


def test_failure_takes_the_baseline_times_from_another_episode_of_its_task():
    records = [
        rec("level1/a", "ok", 1, 1.0, 0.8, episode=0, eager_ms=1.0, compile_ms=0.8),
        rec("level1/a", "incorrect", episode=1),
    ]
    m = compute_metrics(records, bootstrap=0)
    # pass@1: episode 0 gives log 0.8, episode 1 fell back to eager: compile_ms/eager_ms = 0.8 as well
    assert value(m, "geomean_vs_compile_all") == pytest.approx(0.8)
    assert value(m, "geomean_vs_eager_all") == pytest.approx(1.0)


def test_pass_at_1_and_best_of_k():
    records = [
        rec("level1/a", "ok", 3, 2.0, 1.1, episode=0),
        rec("level1/a", "ok", 1, 4.0, 1.2, episode=1),   # faster but rewarded less: best-of-K prefers reward
        rec("level1/a", "incorrect", episode=2),
        rec("level1/a", "incorrect", episode=3),
        rec("level1/b", "incorrect", episode=0),
        rec("level1/b", "incorrect", episode=1),
    ]
    m = compute_metrics(records, bootstrap=0)
    assert m.episodes_per_task == {"min": 2, "max": 4}
    assert value(m, "pass_rate") == pytest.approx((2 / 4 + 0) / 2)
    assert value(m, "pass_rate", selection="best_of_k") == pytest.approx(1 / 2)
    # pass@1: a's correct episodes weigh 1/4 each: geomean over them is (2*4)^(1/2)
    assert value(m, "geomean_vs_eager_correct") == pytest.approx(math.sqrt(8.0))
    assert value(m, "geomean_vs_eager_all") == pytest.approx(math.exp((math.log(2) + math.log(4)) / 4 / 2))
    assert value(m, "geomean_vs_eager_correct", selection="best_of_k") == pytest.approx(2.0)  # episode 0
    assert value(m, "mean_reward", selection="best_of_k") == pytest.approx((3 - 1) / 2)
    assert m.row(1).episodes == 6 and m.row(1, "best_of_k").episodes == 6


def test_a_duplicate_episode_counts_once_the_later_one_winning():
    records = [rec("level1/a", "incorrect"), rec("level1/a", "ok", 1, 1.5, 1.5)]
    with pytest.warns(UserWarning, match="recorded twice"):
        m = compute_metrics(records, bootstrap=0)
    assert value(m, "pass_rate") == 1.0 and m.row(1).episodes == 1


def test_bad_inputs_are_clear_errors():
    records = [rec("level1/a"), rec("level1/b")]
    with pytest.raises(ValueError, match="level_sizes says 1"):
        compute_metrics(records, level_sizes={1: 1})
    with pytest.raises(ValueError, match="no size in level_sizes"):
        compute_metrics(records, level_sizes={2: 100})
    with pytest.raises(ValueError, match="positive"):
        compute_metrics(records, level_sizes={1: 0})
    with pytest.raises(ValueError, match="bootstrap"):
        compute_metrics(records, bootstrap=-1)
    with pytest.raises(RecordError, match="levels 1 and 2"):
        compute_metrics([rec("level1/a"), EvalRecord("level1/a", 2, 0, "a", 1, "ok", 1)])


def _random_run(seed: int, n: int = 40) -> list[EvalRecord]:
    rng = random.Random(seed)
    records = []
    for i in range(n):
        level = 1 + i % 3
        if rng.random() < 0.8:
            se, sc = math.exp(rng.gauss(0.4, 0.5)), math.exp(rng.gauss(0.1, 0.5))
            reward = 3 if se > 1.05 and sc > 1.05 else 2 if se > 1.05 else 1
            records.append(rec(f"level{level}/t{i}", "ok", reward, se, sc, eager_ms=1.0, compile_ms=se / sc))
        else:
            records.append(rec(f"level{level}/t{i}", "incorrect", eager_ms=1.0, compile_ms=rng.uniform(0.5, 2)))
    return records


def test_intervals_contain_the_estimate_and_are_seeded():
    records = _random_run(7)
    m = compute_metrics(records, level_sizes={1: 100, 2: 100, 3: 50}, bootstrap=300, seed=11)
    for selection in ("pass@1", "best_of_k"):
        for key, row in m.tables[selection].items():
            for column, metric in row.metrics.items():
                assert metric.low is not None, (key, column)
                assert metric.low <= metric.value <= metric.high, (key, column)
    overall = m.row().metrics["pass_rate"]
    assert overall.high - overall.low > 0.05  # 40 tasks: a real interval, not a degenerate one
    again = compute_metrics(records, level_sizes={1: 100, 2: 100, 3: 50}, bootstrap=300, seed=11)
    assert again.to_dict() == m.to_dict()
    other = compute_metrics(records, level_sizes={1: 100, 2: 100, 3: 50}, bootstrap=300, seed=12)
    assert other.row().metrics["geomean_vs_compile_all"] != m.row().metrics["geomean_vs_compile_all"]
    assert other.row().metrics["pass_rate"].value == overall.value  # the seed moves intervals only


def test_intervals_are_degenerate_when_every_task_is_alike():
    records = [rec(f"level1/t{i}", "ok", 2, 1.7, 0.9) for i in range(12)]
    m = compute_metrics(records, bootstrap=200, seed=0)
    for column, metric in m.row().metrics.items():
        assert metric.low == pytest.approx(metric.value) and metric.high == pytest.approx(metric.value), column
    assert m.row().metrics["geomean_vs_eager_correct"].value == pytest.approx(1.7)


def test_metrics_json_round_trip():
    m = compute_metrics(_random_run(3, 12), bootstrap=50, seed=1)
    text = json.dumps(m.to_dict())
    assert RunMetrics.from_dict(json.loads(text)) == m
    newer = json.loads(text)
    newer["added_later"] = 1
    newer["tables"]["pass@1"]["overall"]["metrics"]["pass_rate"]["method"] = "percentile"
    assert RunMetrics.from_dict(newer) == m  # a newer writer's extra keys are ignored
    with pytest.raises(RecordError, match=r"metrics\.json"):
        RunMetrics.from_dict({"tables": 1})


# ------------------------------------------------------------------------------------------ records


def _stat(ms: float) -> Stat:
    return Stat(median=ms, p25=ms, p75=ms, min=ms, samples=10)


def test_record_from_a_real_verdict():
    timing = Timing(candidate_ms=0.5, eager_ms=1.0, compile_ms=0.75, speedup_vs_eager=2.0, speedup_vs_compile=1.5,
                    speedup_vs_eager_low=1.9, speedup_vs_compile_low=1.4, candidate=_stat(0.5), eager=_stat(1.0),
                    compile=_stat(0.75), rounds=10, baseline_source="measured", protocol="p",
                    eager_threshold=1.06, compile_threshold=1.07)
    ok = Verdict(reward=3, status=Status.OK, reason="fast", timing=timing).to_dict()
    r = EvalRecord.from_verdict(ok, task_id="level1/19_ReLU", level=1, problem=19, name="ReLU", episode=0,
                                verdict_path="verdicts/level1_19_0.json")
    assert (r.status, r.reward, r.candidate_ms, r.eager_ms, r.compile_ms) == ("ok", 3, 0.5, 1.0, 0.75)
    assert (r.speedup_vs_eager, r.speedup_vs_compile, r.speedup_vs_compile_low, r.compile_threshold) == (
        2.0, 1.5, 1.4, 1.07)
    assert EvalRecord.from_dict(json.loads(json.dumps(r.to_dict()))) == r
    failed = Verdict(reward=-1, status=Status.INCORRECT, reason="max abs diff 3.2 at [0, 1]").to_dict()
    f = EvalRecord.from_verdict(failed, task_id="level2/5_x", level=2, problem=5, name="x", episode=1)
    assert (f.status, f.reward, f.speedup_vs_eager, f.eager_ms, f.verdict_path) == ("incorrect", -1, None, None, None)
    with pytest.raises(RecordError, match="reward"):
        EvalRecord.from_verdict({"status": "ok"}, task_id="t", level=1, problem=1, name="t", episode=0)


def test_record_validation():
    with pytest.raises(RecordError, match="reward must be in"):
        rec("level1/a", "ok", 4)
    with pytest.raises(RecordError, match="speedups only when ok"):
        rec("level1/a", "incorrect", -1, 2.0)
    with pytest.raises(RecordError, match="must be > 0"):
        rec("level1/a", "ok", 1, 0.0)
    with pytest.raises(RecordError, match="level must be an integer"):
        EvalRecord("level1/a", "1", 0, "a", 0, "ok", 1)
    with pytest.raises(RecordError, match="lacks reward"):
        EvalRecord.from_dict({"task_id": "a", "level": 1, "problem": 0, "name": "a", "episode": 0, "status": "ok"})


def test_jsonl_survives_a_torn_last_line(tmp_path):
    path = tmp_path / "records.jsonl"
    rows = [rec("level1/a", "ok", 2, 1.5, 0.9), rec("level1/b", "incorrect")]
    write_records(path, rows)
    assert read_records(path) == rows
    with path.open("a") as handle:
        handle.write('{"task_id": "level1/c", "lev')  # killed mid-write
    with pytest.warns(UserWarning, match="torn last line"):
        assert read_records(path) == rows
    with pytest.warns(UserWarning, match="cut a torn last line"):
        append_record(path, rec("level1/c", "timeout"))
    assert [r.task_id for r in read_records(path)] == ["level1/a", "level1/b", "level1/c"]
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], "{broken", lines[1]]) + "\n")  # corruption in the middle: an error
    with pytest.raises(RecordError, match=r"records.jsonl:2"):
        read_records(path)
    assert read_records(tmp_path / "absent.jsonl") == []


def test_fast_p_at_precision_parity_counts_only_kernels_within_their_audit_bound():
    """Issue 29 item 7: a kernel faster because it computes in TF32 (ratio 190 > k = 3) counts in fast_p but
    not in fast_p at parity; one without a ratio is not known to be at parity; the bound is the record's k."""
    records = [
        rec("level1/a", "ok", 3, 2.5, 1.6, precision_ratio=0.4, precision_k=3.0),   # honest
        rec("level1/b", "ok", 3, 3.0, 2.2, precision_ratio=190.0, precision_k=3.0),  # TF32 math
        rec("level1/c", "ok", 2, 1.2, 0.9),                                         # not measured
        rec("level1/d", "ok", 2, 1.1, 0.9, precision_ratio=4.0, precision_k=5.0),   # within its own k
        rec("level2/e", "incorrect", precision_ratio=0.2, precision_k=3.0),          # not correct
    ]
    m = compute_metrics(records, bootstrap=0)
    assert value(m, fast_column(1.5, "eager"), 1) == 2 / 4 and value(m, fast_column(1.5, "eager", True), 1) == 1 / 4
    assert value(m, fast_column(0, "compile", True), 1) == 2 / 4  # a and d
    assert value(m, fast_column(2.0, "compile"), 1) == 1 / 4 and value(m, fast_column(2.0, "compile", True), 1) == 0
    assert value(m, fast_column(0, "eager", True), 2) == 0.0
    assert value(m, fast_column(0, "eager", True)) == 2 / 5  # overall: plain mean over the five tasks


def test_records_carry_the_precision_audit_from_the_verdict():
    verdict = {"status": "ok", "reward": 2, "timing": {"speedup_vs_eager": 1.3},
               "checks": {"precision_error_ratio": 0.37, "precision_audit": "float64 (promoted), k = 3"}}
    record = EvalRecord.from_verdict(verdict, task_id="level1/1_X", level=1, problem=1, name="X", episode=0)
    assert (record.precision_ratio, record.precision_k) == (0.37, 3.0)
    off = {**verdict, "checks": {"precision_error_ratio": 12.0, "precision_audit": "off (tolerance only)"}}
    record = EvalRecord.from_verdict(off, task_id="level1/1_X", level=1, problem=1, name="X", episode=0)
    assert (record.precision_ratio, record.precision_k) == (12.0, None)
    assert EvalRecord.from_dict(record.to_dict()) == record


def test_the_terminal_table_ends_with_the_fast_p_sweep():
    from cuda_agent.eval.runner import metrics_table

    records = [rec("level1/a", "ok", 3, 2.5, 1.6, precision_ratio=0.4, precision_k=3.0),
               rec("level1/b", "ok", 3, 3.0, 2.2, precision_ratio=190.0, precision_k=3.0)]  # fmt: skip
    lines = metrics_table(compute_metrics(records, bootstrap=0)).splitlines()
    assert lines[-5].split() == ["fast_p,", "overall", "p=0", "p=0.5", "p=0.8", "p=1", "p=1.5", "p=2"]
    assert lines[-4].split() == ["vs", "eager", "100%", "100%", "100%", "100%", "100%", "100%"]
    assert lines[-3].split() == ["vs", "eager,", "precision", "parity", "50%", "50%", "50%", "50%", "50%", "50%"]
    assert lines[-2].split() == ["vs", "compile", "100%", "100%", "100%", "100%", "100%", "50%"]


def test_a_task_the_judge_refused_in_every_episode_is_left_out_and_named():
    """KernelBench at its current sizes has degenerate tasks (the judge's task_error): no kernel can pass
    them, so they leave the rows and are listed; a task refused in some episodes only stays in."""
    records = [
        rec("level1/19_ReLU", "task_error", episode=0),
        rec("level1/19_ReLU", "task_error", episode=1),
        rec("level1/1_Matmul", "ok", 2, se=1.5, sc=1.1, eager_ms=3.0, compile_ms=2.2),
        rec("level1/1_Matmul", "ok", 2, se=1.5, sc=1.1, eager_ms=3.0, compile_ms=2.2, episode=1),
        rec("level1/2_Conv", "task_error", episode=0),
        rec("level1/2_Conv", "incorrect", episode=1, eager_ms=1.0, compile_ms=1.0),
    ]
    m = compute_metrics(records, bootstrap=100)
    assert m.unjudgeable == ["level1/19_ReLU"]
    assert m.row("overall").tasks == 2 and value(m, "pass_rate") == pytest.approx(0.5)
    assert RunMetrics.from_dict(json.loads(json.dumps(m.to_dict()))).unjudgeable == ["level1/19_ReLU"]
    everything_refused = compute_metrics([rec("level1/19_ReLU", "task_error")], bootstrap=10)
    assert everything_refused.unjudgeable == ["level1/19_ReLU"] and everything_refused.row("overall").tasks == 0
