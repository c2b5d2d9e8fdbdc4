"""The torch.compile mode through the commands and the eval (issue 29, item 6): `judge`, `eval` and `serve`
take `--compile-mode` (a mode with CUDA graphs refused in one line), the eval's judge settings carry it
into the JudgeConfig and the run's settings, and records, metrics.json and the report name the mode every
'vs compile' figure is against."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuda_agent.cli import build_parser, main
from cuda_agent.eval.judges import JudgeSettings
from cuda_agent.eval.metrics import RunMetrics, compute_metrics
from cuda_agent.eval.records import EvalRecord, RecordError
from cuda_agent.eval.report import write_report
from cuda_agent.eval.runner import RunMismatch, open_run

AUTOTUNE = "max-autotune-no-cudagraphs"


# ---- the commands ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [["judge", "DIR"], ["eval"], ["serve"]])
def test_every_judging_command_takes_the_mode_and_defaults_to_default(command: list[str]) -> None:
    parser = build_parser()
    assert parser.parse_args(command).compile_mode == "default"
    assert parser.parse_args([*command, "--compile-mode", AUTOTUNE]).compile_mode == AUTOTUNE


@pytest.mark.parametrize("mode, why", [("reduce-overhead", "replays CUDA graphs"), ("turbo", "unknown")])
def test_a_mode_the_baseline_is_not_built_with_is_refused_in_one_line(mode, why, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["judge", "DIR", "--compile-mode", mode])
    assert exited.value.code == 2
    error = [line for line in capsys.readouterr().err.splitlines() if "error" in line]
    assert len(error) == 1 and why in error[0] and AUTOTUNE in error[0], error


def test_the_judge_command_hands_the_mode_to_the_judges_timing_config() -> None:
    from cuda_agent.commands.judge import judge_config

    args = build_parser().parse_args(["judge", "DIR", "--compile-mode", AUTOTUNE, "--fixed-budget-timing"])
    config = judge_config(args, build=None)
    assert config.timing.compile_mode == AUTOTUNE and config.timing.sequential is False
    assert config.warm_beside_timing is False, "issue 34's experiment is off unless asked for"
    asked = judge_config(build_parser().parse_args(["judge", "DIR", "--warm-beside-timing"]), build=None)
    assert asked.warm_beside_timing is True


def test_eval_refuses_a_mode_a_judge_server_would_not_apply(monkeypatch, tmp_path, capsys) -> None:
    """Jobs carry no judge options: the server judges in its own `serve --compile-mode`."""
    monkeypatch.setenv("CUDA_AGENT_JUDGE_TOKEN", "t" * 32)
    code = main(["eval", "--submissions", str(tmp_path), "--out", str(tmp_path / "run"),
                 "--judge-url", "http://127.0.0.1:9", "--compile-mode", AUTOTUNE])  # fmt: skip
    assert code == 2
    assert f"cuda-agent serve --compile-mode {AUTOTUNE}" in capsys.readouterr().err


# ---- the eval's judge settings ---------------------------------------------------------------------------------


def test_eval_settings_carry_the_mode_into_the_judge_config(monkeypatch) -> None:
    monkeypatch.setattr("cuda_agent.judge.default_arch", lambda: "9.0")
    assert JudgeSettings(compile_mode=AUTOTUNE).config().timing.compile_mode == AUTOTUNE
    assert JudgeSettings().config().timing.compile_mode == "default"


def test_a_run_made_before_the_option_resumes_and_another_mode_is_another_run(tmp_path: Path) -> None:
    before = {
        "atol": 0.01,
        "rtol": 0.01,
        "timing": True,
        "precision_audit": True,
        "arch": None,
    }  # main's to_dict
    assert JudgeSettings().to_dict() == before
    open_run(tmp_path, {"mode": "submissions", "judge": before})
    open_run(tmp_path, {"mode": "submissions", "judge": JudgeSettings().to_dict()})  # resumes
    with pytest.raises(RunMismatch, match="judge"):
        open_run(tmp_path, {"mode": "submissions", "judge": JudgeSettings(compile_mode=AUTOTUNE).to_dict()})
    stored = JudgeSettings(compile_mode=AUTOTUNE).to_dict()
    assert JudgeSettings(**stored) == JudgeSettings(compile_mode=AUTOTUNE)  # what --recheck rebuilds


# ---- records, metrics and the report ---------------------------------------------------------------------------


def _verdict(mode: str | None, status: str = "ok") -> dict:
    policy = {"pad_ms": 0.1} if mode is None else {"compile_mode": mode}
    return {"status": status, "reward": 3 if status == "ok" else -1, "reason": "r",
            "timing": {"candidate_ms": 0.1, "eager_ms": 0.3, "compile_ms": 0.2, "speedup_vs_eager": 3.0,
                       "speedup_vs_compile": 2.0, "policy": policy}}  # fmt: skip


def _record(i: int, verdict: dict) -> EvalRecord:
    return EvalRecord.from_verdict(
        verdict, task_id=f"level1/{i}_T{i}", level=1, problem=i, name=f"T{i}", episode=0
    )


def test_a_record_names_its_verdicts_compile_mode() -> None:
    assert _record(1, _verdict(AUTOTUNE)).compile_mode == AUTOTUNE
    assert _record(1, _verdict(None)).compile_mode == "default"  # timed before the option: default was all
    assert _record(1, {"status": "incorrect", "reward": -1, "timing": None}).compile_mode is None
    record = _record(1, _verdict(AUTOTUNE))
    assert EvalRecord.from_dict(json.loads(json.dumps(record.to_dict()))) == record
    with pytest.raises(RecordError, match="compile_mode"):
        EvalRecord.from_dict({**record.to_dict(), "compile_mode": 3})
    written_before = {k: v for k, v in record.to_dict().items() if k != "compile_mode"}  # records.jsonl of old
    assert EvalRecord.from_dict(written_before).compile_mode == "default"
    untimed = _record(2, {"status": "incorrect", "reward": -1, "timing": None}).to_dict()
    del untimed["compile_mode"]
    assert EvalRecord.from_dict(untimed).compile_mode is None


def _report(tmp_path: Path, records: list[EvalRecord]) -> tuple[RunMetrics, str, str, dict]:
    metrics = compute_metrics(records, bootstrap=20, seed=0)
    write_report(tmp_path, records, metrics)
    data = json.loads((tmp_path / "metrics.json").read_text())
    return metrics, (tmp_path / "report.html").read_text(), (tmp_path / "report.md").read_text(), data


def test_the_report_and_metrics_json_name_the_mode(tmp_path: Path) -> None:
    records = [_record(i, _verdict(AUTOTUNE)) for i in range(3)]
    records.append(_record(3, {"status": "incorrect", "reward": -1, "timing": None}))
    metrics, html, md, data = _report(tmp_path, records)
    assert data["compile_modes"] == {AUTOTUNE: 3} and RunMetrics.from_dict(data) == metrics
    label = f"torch.compile ({AUTOTUNE})"
    assert f"torch.compile in mode {AUTOTUNE} (3 timed episode(s))" in html
    assert f"<td>{label}</td>" in html  # the fast_p table's baseline column
    assert f"<figcaption>fast_p against eager and {label}" in html or "matplotlib is not installed" in html
    assert f"'vs compile' and 'compile ms': against {label}." in md


def test_a_run_mixing_modes_says_so(tmp_path: Path) -> None:
    records = [_record(0, _verdict(AUTOTUNE)), _record(1, _verdict("default")), _record(2, _verdict(None))]
    metrics, html, _, _ = _report(tmp_path, records)
    assert metrics.compile_modes == {"default": 2, AUTOTUNE: 1}
    assert f"Compile baselines MIXED: torch.compile modes default (2), {AUTOTUNE} (1)" in html


def test_metrics_written_before_the_option_still_load(tmp_path: Path) -> None:
    metrics = compute_metrics([_record(0, _verdict(None))], bootstrap=0)
    data = metrics.to_dict()
    del data["compile_modes"]
    assert RunMetrics.from_dict(data).compile_modes == {}


def test_the_runs_closing_table_names_the_mode(tmp_path: Path) -> None:
    from cuda_agent.eval.records import write_records
    from cuda_agent.eval.runner import finish

    write_records(tmp_path / "records.jsonl", [_record(i, _verdict(AUTOTUNE)) for i in range(2)])
    said: list[str] = []
    finish(tmp_path, level_sizes=None, bootstrap=0, say=said.append)
    assert f"compile baseline: torch.compile {AUTOTUNE} (2 timed)" in said
