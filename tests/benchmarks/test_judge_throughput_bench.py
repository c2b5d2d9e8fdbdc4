"""benchmarks/judge_throughput.py without a GPU: issue 34's targets and their PASS/FAIL lines on figures
shaped like a run's (the H200's of 2026-12-04 among them), the RL-shaped phase's candidates (T x G
folders, each its own rebuild) and task list, per-group latency, and the command line's checks.

The phases themselves judge on a GPU (the device's run of the benchmark); what runs here is everything
around them: the candidates they submit and the figures and verdicts made of their records."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuda_agent.judge.decide.verdict import Status, Verdict
from tests.benchmark_module import load_benchmark

ROOT = Path(__file__).resolve().parents[2]
bench = load_benchmark("judge_throughput")
tables = load_benchmark("throughput_report")  # the summary and tables, split from it


# ---- figures shaped like a run's ------------------------------------------------------------------


def verdict(candidate_ms: float = 1.0, status: str = "ok", reward: int = 2) -> dict:
    """A verdict as brief() reports it."""
    return {"status": status, "reward": reward, "reason": "" if status == "ok" else "wrong output",
            "candidate_ms": candidate_ms, "eager_ms": 2.0, "compile_ms": 1.5, "baseline_source": "measured",
            "stage_seconds": {"build": 1.0, "timing": 1.0, "total": 2.0}, "rounds": 12, "traced_rounds": 3,
            "spot_checks": 3, "worker_calls": {}, "host_clock": {}, "draw": {}, "compiled": ["a.cu"],
            "cached": []}  # fmt: skip


def idle_figures(share: float | None, note: str = "") -> dict:
    """A phase's idle figures with `share` of the time idle (and none of its samples at 0 %)."""
    return {"samples": 0 if share is None else 200, "idle_samples": None if share is None else 0,
            "idle_share": None if share is None else 0.0, "idle_time_share": share,
            "mean_utilization": None if share is None else round(100 * (1 - share), 2), "median_gap_ms": 166.7,
            "invalid": 0, "source": None if share is None else "nvmlDeviceGetSamples", "note": note}  # fmt: skip


def report(warm_s: float, batch_n: int, batch_wall_s: float, batch_idle: dict | None = None,
           rl: dict | None = None) -> dict:  # fmt: skip
    names = list(bench.HONEST_EXAMPLES)
    seq = lambda wall, name: {"example": name, "wall_s": wall, "error": "", "verdict": verdict()}  # noqa: E731
    return {
        "gpu": "NVIDIA H200", "original": [], "examples": {n: f"examples/{n}" for n in names},
        "args": {"aa_example": "row_softmax"},
        "prime": [seq(9.0, n) for n in names],
        "warm": [seq(warm_s, n) for n in names for _ in range(2)],
        "cold_build": [{"example": n, "wall_s": 6.4, "ok": True, "compiled": [], "cached": []} for n in names],
        "aa_idle": [seq(warm_s, "row_softmax") for _ in range(3)],
        "batch": {"records": [{"example": names[i % 4], "done_at_s": batch_wall_s * (i + 1) / batch_n,
                               "verdict": verdict()} for i in range(batch_n)],
                  "wall_s": batch_wall_s, "error": "", "gpu_idle": batch_idle},
        "rl": rl,
    }  # fmt: skip


def rl_report(groups: int, size: int, wall_s: float, idle: dict | None, unfinished: int = 0) -> dict:
    records = []
    for g in range(groups):
        for _ in range(size):
            pending = len(records) >= groups * size - unfinished  # the last `unfinished` never came back
            at = wall_s * (len(records) + 1) / (groups * size)
            records.append({"example": f"task{g}", "done_at_s": None if pending else at,
                            "verdict": None if pending else verdict()})  # fmt: skip
    return {"groups": groups, "group_size": size, "tasks": [], "prime": [], "records": records,
            "wall_s": wall_s, "error": "", "gpu_idle": idle}  # fmt: skip


def lines_of(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    """The PASS/FAIL/SKIP lines of finish()'s output, by the word they start with and their check."""
    out = capsys.readouterr().out.splitlines()
    return {line: line.split(":")[0] for line in out if re.match(r"^(PASS|FAIL|SKIP): ", line)}


def verdict_of(lines: dict[str, str], fragment: str) -> str:
    return next(word for line, word in lines.items() if fragment in line)


# ---- issue 34's targets -----------------------------------------------------------------------------


def test_the_h200_run_of_2026_12_04_fails_issue_34s_bar(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # measured on an H200 that day: warm median 2.91 s, 16 verdicts at 1,328/hour (both passed the old bar)
    code = bench.finish(report(2.91, 16, 16 / 1328 * 3600, idle_figures(0.31)), tmp_path, 600.0)
    lines = lines_of(capsys)
    assert code == 1
    warm = next(line for line in lines if "warm latency median" in line)
    assert warm.startswith("FAIL") and "target <= 2.5 s" in warm and "before issue 34 <= 5 s" in warm
    rate = next(line for line in lines if "verdicts/hour" in line and "batch" in line)
    assert rate.startswith("FAIL") and "1328" in rate and "target >= 3000" in rate and ">= 1000" in rate
    assert verdict_of(lines, "GPU idle share during the batch") == "FAIL"
    assert verdict_of(lines, "cold build median") == "PASS" and verdict_of(lines, "A/A ratio") == "PASS"
    assert verdict_of(lines, "rl_throughput") == "SKIP"  # g was not asked for


def test_a_run_at_issue_34s_bar_passes_every_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rl = rl_report(8, 8, 64 / 3100 * 3600, idle_figures(0.08))
    code = bench.finish(report(2.4, 60, 60 / 3050 * 3600, idle_figures(0.12), rl), tmp_path, 900.0)
    lines = lines_of(capsys)
    assert code == 0, lines
    assert set(lines.values()) == {"PASS"} and len(lines) == 7
    assert verdict_of(lines, "RL-shaped 8 tasks x 8: 3100 verdicts/hour") == "PASS"
    assert verdict_of(lines, "GPU idle share during the RL-shaped step 8.0% of the time") == "PASS"
    summary = json.loads((tmp_path / "judge_throughput.json").read_text())["summary"]
    assert summary["rl_shape"] == [8, 8] and summary["rl_per_hour"] == 3100.0 and summary["rl_verdicts"] == 64
    assert summary["batch_gpu_idle_share"] == 0.12 and summary["rl_gpu_idle_share"] == 0.08
    assert summary["batch_gpu_idle_samples_share"] == 0.0
    assert summary["rl_groups"]["task7"]["last_s"] == pytest.approx(64 / 3100 * 3600, abs=1e-6)


def test_the_rl_step_is_judged_on_its_own_rate_and_idle_share(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    rl = rl_report(8, 8, 64 / 2000 * 3600, idle_figures(0.15))
    code = bench.finish(report(2.4, 60, 60 / 3050 * 3600, idle_figures(0.12), rl), tmp_path, 900.0)
    lines = lines_of(capsys)
    assert code == 1
    assert verdict_of(lines, "RL-shaped 8 tasks x 8: 2000 verdicts/hour") == "FAIL"
    assert verdict_of(lines, "GPU idle share during the RL-shaped step 15.0% of the time") == "FAIL"  # < 15%
    assert verdict_of(lines, "batch 3050 verdicts/hour") == "PASS"


def test_without_nvml_the_idle_lines_say_so_and_do_not_fail(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    absent = idle_figures(None, "NVML unavailable: libnvidia-ml.so.1: cannot open shared object file")
    rl = rl_report(2, 4, 8 / 3200 * 3600, absent)
    code = bench.finish(report(2.4, 60, 60 / 3050 * 3600, absent, rl), tmp_path, 900.0)
    lines = lines_of(capsys)
    assert code == 0
    skips = [line for line, word in lines.items() if word == "SKIP"]
    assert len(skips) == 2 and all("not measured (NVML unavailable" in line for line in skips), skips
    summary = json.loads((tmp_path / "judge_throughput.json").read_text())["summary"]
    assert summary["batch_gpu_idle_share"] is None and summary["rl_gpu_idle_share"] is None


def test_an_unfinished_group_has_no_latency_and_fails_the_step(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    rl = rl_report(2, 4, 1.0, idle_figures(0.0), unfinished=1)
    code = bench.finish(report(2.4, 60, 60 / 3050 * 3600, idle_figures(0.1), rl), tmp_path, 900.0)
    out = capsys.readouterr().out
    assert code == 1
    assert re.search(r"group task1 +n 4, first \S+ s, last - s", out), out
    assert "1 of 8 verdicts not ok" in out


# ---- per-group latency ------------------------------------------------------------------------------


def test_group_latency_runs_from_the_steps_start_to_the_groups_first_and_last_verdict() -> None:
    records = [{"example": "a", "done_at_s": 5.0, "verdict": verdict()},
               {"example": "b", "done_at_s": 2.0, "verdict": verdict(status="wrong_output")},
               {"example": "a", "done_at_s": 9.0, "verdict": verdict()},
               {"example": "b", "done_at_s": 3.0, "verdict": verdict()}]  # fmt: skip
    groups = tables.group_latencies(records)
    assert list(groups) == ["a", "b"]
    assert groups["a"] == {"n": 2, "done": 2, "not_ok": 0, "first_s": 5.0, "last_s": 9.0}
    assert groups["b"] == {"n": 2, "done": 2, "not_ok": 1, "first_s": 2.0, "last_s": 3.0}


# ---- the RL-shaped phase's candidates -----------------------------------------------------------------


def test_rl_variants_are_t_by_g_distinct_folders_each_with_its_own_cu(tmp_path: Path) -> None:
    tasks = list(bench.RL_TASKS[:3])
    jobs = bench.rl_variants(tasks, 4, tmp_path)
    assert len(jobs) == 12
    assert [name for name, _ in jobs] == [t.name for t in tasks for _ in range(4)]  # group after group
    assert len({path for _, path in jobs}) == 12
    cus = []
    for (name, path), task in zip(jobs, [t for t in tasks for _ in range(4)], strict=True):
        assert (
            path.name == name == task.name
            and (path / "model.py").read_bytes() == (task / "model.py").read_bytes()
        )
        first = sorted((path / "kernels").glob("*.cu"))[0]
        original = (task / "kernels" / first.name).read_text()
        assert first.read_text().startswith(original) and first.read_text() != original
        cus.append(first.read_text())
        for other in (task / "kernels").iterdir():  # only the first .cu changed
            if other.name != first.name and other.is_file():
                assert (path / "kernels" / other.name).read_bytes() == other.read_bytes()
    assert len(set(cus)) == 12  # each candidate rebuilds: no two share a source


def test_the_rl_tasks_are_eight_honest_accepted_tasks_with_distinct_models() -> None:
    assert len(bench.RL_TASKS) == 8 and bench.RL_DEFAULT_SHAPE == (8, 8)
    assert [t.name for t in bench.RL_TASKS[:4]] == list(bench.HONEST_EXAMPLES)
    models = [(t / "model.py").read_bytes() for t in bench.RL_TASKS]
    assert len(set(models)) == 8
    for name, reason in bench.RL_ADVERSARIAL_TASKS:
        folder = ROOT / "tests" / "adversarial" / name
        assert name.startswith("00_honest_") and reason
        assert json.loads((folder / "expected.json").read_text())["expect"] == "accept"
        sources = "".join(p.read_text() for p in (folder / "kernels").iterdir() if p.is_file())
        # plain CUDA: library headers would time the library's build and link, not the judge
        assert not re.search(r"#include\s*[<\"](cublas|cudnn|cub/|thrust/)", sources), name


class RecordingService:
    """Stands in for JudgeService at the GPU boundary: records what it is asked to judge and how, and
    answers every submission with an ok verdict (judge_many in reverse order, as a pipeline may)."""

    def __init__(self) -> None:
        self.judged: list[Path] = []
        self.batches: list[list[Path]] = []

    def _verdict(self) -> Verdict:
        return Verdict(reward=2, status=Status.OK, reason="", stage_seconds={"total": 1.0})

    def judge(self, path: Path) -> Verdict:
        self.judged.append(Path(path))
        return self._verdict()

    def judge_many(self, items: list[Path]) -> Iterator[tuple[int, Verdict]]:
        paths = [Path(p) for p in items]
        self.batches.append(paths)
        for index in reversed(range(len(paths))):
            yield index, self._verdict()


def test_the_rl_step_goes_through_one_judge_many_call_group_after_group(tmp_path: Path) -> None:
    service, journal = RecordingService(), bench.Journal(tmp_path / "verdicts.jsonl")
    primed = {"elementwise_chain": verdict(), "row_softmax": verdict()}  # b judged these; layernorm not
    result = bench.phase_rl(
        service, journal, (3, 2), tmp_path / "variants", primed, None, "NVML unavailable: test"
    )
    journal.close()
    assert [p.name for p in service.judged] == ["layernorm"]  # primed once, alone, before the step
    assert len(service.batches) == 1 and len(service.batches[0]) == 6  # the whole step in one call
    assert [p.name for p in service.batches[0]] == ["elementwise_chain"] * 2 + ["row_softmax"] * 2 + [
        "layernorm"
    ] * 2
    assert result["groups"] == 3 and result["group_size"] == 2 and not result["error"]
    assert all(r["verdict"]["status"] == "ok" and r["done_at_s"] is not None for r in result["records"])
    assert result["gpu_idle"]["idle_time_share"] is None and "NVML unavailable" in result["gpu_idle"]["note"]
    phases = [json.loads(line)["phase"] for line in (tmp_path / "verdicts.jsonl").read_text().splitlines()]
    assert phases == ["rl_prime"] + ["rl"] * 6


# ---- the command line ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "shape"),
    [([], (0, 0)), (["--rl-shaped"], (8, 8)), (["--groups", "3"], (3, 8)), (["--group-size", "16"], (8, 16)),
     (["--rl-shaped", "--groups", "2", "--group-size", "2"], (2, 2))],
)  # fmt: skip
def test_the_rl_shape_of_the_command_line(argv: list[str], shape: tuple[int, int]) -> None:
    assert bench.parse_args(argv).rl_shape == shape


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--groups", "0"], "--groups must be 1-8"), (["--groups", "9"], "--groups must be 1-8"),
     (["--rl-shaped", "--group-size", "0"], "--group-size must be >= 1"), (["--batch", "-1"], "--batch must be >= 0"),
     (["--aa-example", "layernorm", "--examples", "row_softmax"], "is not among --examples"),
     (["--examples", "no_such_example"], "not a submission folder"),
     (["--lane-preempt", "on"], "needs --lane-depth 2")],
)  # fmt: skip
def test_bad_arguments_stop_with_a_usage_error(argv: list[str], message: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    with pytest.raises(SystemExit) as stop:
        bench.parse_args(argv)
    assert stop.value.code == 2 and message in capsys.readouterr().err


def test_shared_reference_preparations_are_counted_per_phase(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """Reference groups (decide/reference_group.py): the benchmark says how many verdicts of each phase ran on
    a preparation shared with an earlier judgment of the task, so a run shows whether groups were on."""
    rl = rl_report(2, 4, 10.0, idle_figures(0.1))
    for i, record in enumerate(rl["records"]):
        record["verdict"]["shared_preparation"] = i % 4 != 0  # the first of each group prepares
    bench.finish(report(2.4, 8, 10.0, idle_figures(0.1), rl), tmp_path, 60.0)
    out = capsys.readouterr().out
    assert "reference preparations shared, rl: 6 of 8 verdicts" in out
    assert "reference preparations shared, batch: 0 of 8 verdicts" in out
    summary = json.loads((tmp_path / "judge_throughput.json").read_text())["summary"]
    assert summary["shared_preparations"] == {"batch": {"shared": 0, "of": 8}, "rl": {"shared": 6, "of": 8}}


def test_the_lane_accounting_says_what_the_wall_leaves_outside_the_lane(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    """The H200 run of 2026-12-04 (session 3) spent 2.4 s of wall per RL verdict while its lane stages summed to
    1.5 s: the benchmark now says, per phase, the medians of the lane's stages and waits, the mean of each
    verdict's whole time on the lane, and what the wall per verdict leaves outside it."""
    rl = rl_report(2, 4, 16.0, idle_figures(0.1))
    for i, record in enumerate(rl["records"]):
        record["verdict"]["stage_seconds"].update({"lane": 1.5 + 0.1 * i, "settle_wait": 0.4, "verify": 0.3})
    made = report(2.4, 8, 10.0, idle_figures(0.1), rl)
    made["retirements"] = [{"reap": 0.5, "tree": 0.2, "files": 0.0, "strays": 0.1},
                           {"reap": 0.7, "tree": 0.2, "files": 0.0, "strays": 0.1},
                           {"reap": 0.9, "tree": 0.4, "files": 0.0, "strays": 0.1}]  # fmt: skip
    made["warmups"] = [{"import": 3.0, "gpu": 1.3, "cuda_init": 0.4}, {"import": 3.0, "gpu": 1.4, "cuda_init": 0.5}]
    bench.finish(made, tmp_path, 60.0)
    out = capsys.readouterr().out
    assert ("candidate worker retirement, median s over the last 3: files 0.000, reap 0.700, strays 0.100, "
            "tree 0.200, total 1.000") in out
    assert "candidate worker warm-up, median s over the last 2: cuda_init 0.450, gpu 1.350, import 3.000" in out
    line = next(x for x in out.splitlines() if x.startswith("lane, rl"))
    assert "settle_wait 0.400" in line and "verify 0.300" in line
    assert "lane mean 1.850 s, wall per verdict 2.000 s, outside the lane 0.150 s" in line
    assert not any(x.startswith("lane, batch") for x in out.splitlines())  # its verdicts carry no "lane"
    lanes = json.loads((tmp_path / "judge_throughput.json").read_text())["summary"]["lane_accounting"]
    assert lanes["batch"] is None and lanes["rl"]["outside_lane_s"] == pytest.approx(0.15)
    summary = json.loads((tmp_path / "judge_throughput.json").read_text())["summary"]
    assert summary["retirement_medians_s"]["reap"] == pytest.approx(0.7)


def test_at_depth_two_with_preempt_the_report_says_who_was_held_frozen_and_how_long(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--lane-preempt: a timing freezes the other judgment's reference and candidate mid-call; the report
    counts the verdicts so held and the seconds, so an A/B shows what the freezes cost the frozen side."""
    made = report(2.4, 8, 10.0, idle_figures(0.1))
    for i, record in enumerate(made["batch"]["records"]):
        record["verdict"]["others_frozen"] = i % 2
        if i < 3:
            record["verdict"]["stage_seconds"]["held_frozen"] = 0.5
        record["verdict"]["waited_after_freeze"] = i == 7
    bench.finish(made, tmp_path, 60.0)
    out = capsys.readouterr().out
    assert ("lane depth 2, batch: 4 of 8 timed with another candidate frozen, 0 judged again alone, "
            "3 held frozen by another's timing (1.5 s in all), a failed drain beside a frozen section waited out "
            "in 1") in out  # fmt: skip
