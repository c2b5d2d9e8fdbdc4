"""`cuda-agent eval --submissions` (matching folders to tasks, one batch, resumable, unmatched listed with
the reason) and `eval --recheck` (a changed submission shows up as a difference), on the CPU judge path;
and the recheck's noise rule on hand-made timings."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from eval_helpers import MINI, cli

from cuda_agent.cli import main
from cuda_agent.eval.recheck import MIN_NOISE, compare, noise_bound, recheck_table
from cuda_agent.eval.records import EvalRecord, read_records
from cuda_agent.eval.submissions import match, submission_folders, units_of

NO_KERNELS = "import torch.nn as nn\n\nimport cuda_extension\n\n\nclass ModelNew(nn.Module):\n" \
             "    def forward(self, x):\n        return cuda_extension.op(x)\n"  # fmt: skip


def _submission(folder: Path, model: Path | None = None, meta: dict | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "model_new.py").write_text(NO_KERNELS)
    (folder / "kernels").mkdir()
    if model is not None:
        shutil.copyfile(model, folder / "model.py")
    if meta is not None:
        (folder / ".task.json").write_text(json.dumps(meta))
    return folder


def test_folders_are_matched_by_meta_path_or_content_and_the_rest_listed(tmp_path: Path) -> None:
    subs = tmp_path / "subs"
    _submission(subs / "level1" / "19_ReLU")  # by path, reference from --tasks
    _submission(subs / "level1" / "19_ReLU-2")  # a second one for the same problem: its episode 1
    _submission(subs / "mine", meta={"level": 2, "problem": 1})  # by .task.json
    _submission(subs / "renamed", model=MINI / "level3" / "1_MLP.py")  # by model.py's content
    _submission(subs / "level_3_problem_9")  # no such problem
    _submission(subs / "stray")  # no level, no problem, no model.py
    _submission(subs / "level2" / "own", model=MINI / "level2" / "1_Gemm_Bias_ReLU.py")  # without --tasks
    problems: list[tuple[str, str]] = []
    found = match(submission_folders(subs), subs, MINI, problems)
    how = {f.folder: f.how for f in found}
    # episodes of one task in path order
    units = {unit.key: (folder.relative_to(subs).as_posix(), how[folder]) for unit, folder in units_of(found)}
    assert units == {"level1/19_ReLU#0": ("level1/19_ReLU", "path"), "level1/19_ReLU#1": ("level1/19_ReLU-2", "path"),
                     "level2/1_Gemm_Bias_ReLU#0": ("level2/own", "digest"), "level2/1_Gemm_Bias_ReLU#1": ("mine", "meta"),
                     "level3/1_MLP#0": ("renamed", "digest")}  # fmt: skip
    reasons = {Path(where).name: why for where, why in problems}
    assert set(reasons) == {"level_3_problem_9", "stray"}
    assert "matched to level 3 problem 9 (path)" in reasons["level_3_problem_9"] and "does not have" in reasons[
        "level_3_problem_9"]  # fmt: skip
    assert "cannot tell its task" in reasons["stray"]
    # Without --tasks a folder's own model.py is the reference, and its level comes from its path.
    problems.clear()
    found = match(submission_folders(subs / "level2"), subs, None, problems)
    assert [(f.task.task_id, f.task.task.source) for f in found] == [
        ("level2/0_own", (MINI / "level2" / "1_Gemm_Bias_ReLU.py").read_text())] and not problems


def test_submissions_are_judged_once_and_rechecked(tmp_path: Path, capsys) -> None:
    subs, run = tmp_path / "subs", tmp_path / "run"
    _submission(subs / "level1" / "19_ReLU")
    _submission(subs / "mine", meta={"level": 2, "problem": 1})
    _submission(subs / "stray")
    args = ["eval", "--submissions", str(subs), "--tasks", str(MINI), "--build-only", "--out", str(run),
            "--bootstrap", "20"]  # fmt: skip
    assert main(args) == 1  # a folder could not be matched
    assert "not judged: " in capsys.readouterr().err
    records = read_records(run / "records.jsonl")
    assert sorted((r.task_id, r.episode) for r in records) == [("level1/19_ReLU", 0), ("level2/1_Gemm_Bias_ReLU", 0)]
    assert all(r.status == "compile_error" and r.reward == -1 for r in records)
    assert [Path(u["folder"]).name for u in json.loads((run / "run.json").read_text())["unmatched"]] == ["stray"]
    bundled = run / "submissions" / "level2_1_Gemm_Bias_ReLU" / "ep0"
    assert (bundled / "model.py").read_text() == (MINI / "level2" / "1_Gemm_Bias_ReLU.py").read_text()
    assert json.loads((run / "manifest.json").read_text())["submissions"]["submissions/level2_1_Gemm_Bias_ReLU/ep0"]

    # Resumed: nothing is judged again.
    verdicts = {p: p.stat().st_mtime_ns for p in (run / "verdicts").rglob("*.json")}
    assert main(args) == 1
    assert "2 already recorded, 0 to judge" in capsys.readouterr().err
    assert {p: p.stat().st_mtime_ns for p in (run / "verdicts").rglob("*.json")} == verdicts
    assert len(read_records(run / "records.jsonl")) == 2

    # Recheck with one bundled submission changed: that one differs, the other agrees.
    (bundled / "model_new.py").write_text("import os\n")
    assert main(["eval", "--recheck", str(run), "--build-only"]) == 1
    out = capsys.readouterr().out
    result = json.loads((run / "recheck.json").read_text())
    assert result["summary"]["rechecked"] == 2 and result["summary"]["agree"] == 1
    changed = next(e for e in result["entries"] if not e["agrees"])
    assert (changed["task_id"], changed["episode"]) == ("level2/1_Gemm_Bias_ReLU", 0)
    assert changed["status"][0] == "compile_error" and changed["status"][1] != "compile_error"
    assert "level2/1_Gemm_Bias_ReLU" in out and "NO" in out and "1/2 agree" in out


def _timing(candidate: float, eager: float, compile_: float, spread: float) -> dict:
    def stat(median: float) -> dict:
        return {"median": median, "p25": median * (1 - spread / 2), "p75": median * (1 + spread / 2),
                "min": median * 0.9, "samples": 50}  # fmt: skip

    return {"candidate": stat(candidate), "eager": stat(eager), "compile": stat(compile_),
            "speedup_vs_eager": eager / candidate, "speedup_vs_compile": compile_ / candidate}  # fmt: skip


@pytest.mark.parametrize(("new_candidate", "within"), [(1.02, True), (0.97, True), (1.2, False), (0.8, False)])
def test_recheck_judges_speedup_changes_against_the_measured_spread(new_candidate: float, within: bool) -> None:
    old = {"status": "ok", "reward": 2, "timing": _timing(1.0, 2.0, 1.1, 0.04)}
    new = {"status": "ok", "reward": 2, "timing": _timing(new_candidate, 2.0, 1.1, 0.04)}
    record = EvalRecord.from_verdict(old, task_id="level1/1_X", level=1, problem=1, name="X", episode=0)
    row = compare(record, old, new)
    # relative IQRs 0.04 for candidate and baseline in both verdicts: half their sum is 0.08
    assert noise_bound(old["timing"], new["timing"], "eager") == pytest.approx(0.08)
    assert row["speedup_vs_eager"]["within_noise"] is within and row["within_noise"] is within
    assert row["agrees"] is within and row["same_status"] and row["same_reward"]
    quiet = _timing(1.0, 2.0, 1.1, 0.0)
    assert noise_bound(quiet, quiet, "compile") == MIN_NOISE  # never tighter than 3%


def test_recheck_without_a_gpu_says_so_in_one_line(tmp_path: Path) -> None:
    """Issue 29 item 4: on a machine without a GPU `eval --recheck` crashed formatting the missing reward;
    now it stops at the first judgment with one `error:` line, exit 3, and leaves no recheck.json."""
    subs, run = tmp_path / "subs", tmp_path / "run"
    _submission(subs / "level1" / "19_ReLU")
    assert main(["eval", "--submissions", str(subs), "--tasks", str(MINI), "--build-only", "--out", str(run),
                 "--bootstrap", "20"]) == 0  # fmt: skip
    done = cli("eval", "--recheck", str(run), env={"CUDA_VISIBLE_DEVICES": ""}, timeout=300)
    assert done.returncode == 3, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "cannot run here" in errors[0] and "GPU" in errors[0], done.stderr
    assert not (run / "recheck.json").exists()


def test_recheck_table_shows_rows_without_a_reward() -> None:
    """A judgment that reached no verdict (judge_error) has no reward: the table says `-`, not a crash."""
    result = {"entries": [{"task_id": "level1/19_ReLU", "episode": 0, "status": ["ok", "judge_error"],
                           "agrees": False, "reason": "worker died"},
                          {"task_id": "level1/23_Softmax", "episode": 0, "status": ["ok", "ok"],
                           "reward": [2, 2], "agrees": True}],
              "missing": [], "noise_rule": "rule",
              "summary": {"agree": 1, "rechecked": 2, "same_status": 1, "same_reward": 1, "within_noise": 0,
                          "timed": 0}}  # fmt: skip
    table = recheck_table(result)
    assert "ok -> judge_error" in table and "+2" in table
    row = next(line for line in table.splitlines() if line.startswith("level1/19_ReLU"))
    assert " - " in row and "NO" in row
