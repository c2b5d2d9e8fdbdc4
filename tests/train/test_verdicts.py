"""`judge_distinct`: one judgment per distinct final submission, its verdict written into every episode
that ended in it, and nothing guessed for episodes it cannot match.

The judge is the real `LocalJudge`; on a machine without a GPU its verdict is `unavailable` (a GPU
run gets ok / compile_error / incorrect the same way), which is enough to see who was judged, how often,
and what each trajectory file says afterwards.
"""

from __future__ import annotations

import json

from train_helpers import KERNEL, play, served_script

from cuda_agent.agent import load_trajectory
from cuda_agent.agent.judging import LocalJudge
from cuda_agent.train.verdicts import judge_distinct


class Counted:
    """The real judge, with the workspaces it was asked to judge written down."""

    def __init__(self) -> None:
        self.judge, self.workspaces, self.outcomes = LocalJudge(), [], []

    def __call__(self, workspace, task):
        self.workspaces.append(workspace)
        self.outcomes.append(self.judge(workspace, task))
        return self.outcomes[-1]


def test_one_judgment_per_distinct_submission(tmp_path) -> None:
    other = KERNEL.replace("0.0f", "0.f")
    for name, kernel in (("a", KERNEL), ("b", KERNEL), ("c", other), ("d", KERNEL)):
        play(tmp_path / "runs" / name, kernel, served_script(kernel) if name == "b" else None)
    # d: an episode judged already keeps its verdict; e: unfinished; f: its workspace is gone
    d = tmp_path / "runs" / "d" / "trajectory.jsonl"
    record = load_trajectory(d)
    record["judge"] = {"status": "ok", "reward": 1, "reason": "", "verdict": None}
    d.write_text(json.dumps(record) + "\n")
    (tmp_path / "runs" / "e").mkdir()
    (tmp_path / "runs" / "e" / "trajectory.jsonl").write_text(json.dumps({**record, "state": "running"}) + "\n")
    gone = {**record, "judge": {"status": "skipped"}, "workspace": {"path": str(tmp_path / "nowhere")}}
    (tmp_path / "runs" / "f").mkdir()
    (tmp_path / "runs" / "f" / "trajectory.jsonl").write_text(json.dumps(gone) + "\n")

    # g: the reference in its workspace was changed after the episode: never judged against it
    g = tmp_path / "runs" / "g"
    play(g, KERNEL)
    (g / "ws" / "model.py").write_text((g / "ws" / "model.py").read_text().replace("torch.relu(x)", "x"))

    judge = Counted()
    lines: list[str] = []
    report = judge_distinct([tmp_path / "runs"], judge, progress=lines.append)
    assert len(judge.workspaces) == 2 == len(lines) == report.to_dict()["judgments"]
    sizes = sorted(len(g.files) for g in report.groups)
    assert sizes == [1, 2]  # a and b end in the same files (b talked differently), c in other files
    assert set(report.skipped) == {str(tmp_path / "runs" / n / "trajectory.jsonl") for n in "defg"}
    assert "not the episode's task" in report.skipped[str(g / "trajectory.jsonl")]
    assert "already judged" in report.skipped[str(d)] and "no final workspace" in " ".join(report.skipped.values())
    shared = [load_trajectory(tmp_path / "runs" / n / "trajectory.jsonl") for n in "ab"]
    assert shared[0]["messages"] != shared[1]["messages"]
    for r in shared:
        assert {k: r["judge"][k] for k in ("status", "reward", "reason")} == {
            k: getattr(judge.outcomes[0], k) for k in ("status", "reward", "reason")}
        assert r["judge"]["shared"]["episodes"] == 2 and r["judge"]["shared"]["digest"] == shared[0]["judge"]["shared"]["digest"]
        assert r["reward"] == r["judge"]["reward"]
    assert load_trajectory(d)["judge"]["status"] == "ok"  # untouched
    assert "judgment(s) for 3 episode(s); 4 not judged here" in report.table()
    # a second pass finds nothing left to judge
    again = judge_distinct([tmp_path / "runs"], judge)
    assert again.groups == [] and len(judge.workspaces) == 2


def test_judge_runs_command(tmp_path, capsys, monkeypatch) -> None:
    from cuda_agent.cli import main

    play(tmp_path / "runs" / "a", KERNEL)
    assert main(["train", "judge-runs", str(tmp_path / "runs"), "--json"]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert report["judgments"] == 1 and report["groups"][0]["episodes"] == 1
    assert "1 judgment(s) for 1 episode(s)" in captured.err
    record = load_trajectory(tmp_path / "runs" / "a" / "trajectory.jsonl")
    assert record["judge"]["status"] == report["groups"][0]["status"] and "shared" in record["judge"]
    monkeypatch.delenv("CUDA_AGENT_JUDGE_TOKEN", raising=False)
    assert main(["train", "judge-runs", str(tmp_path / "runs"), "--judge-url", "http://127.0.0.1:9"]) == 2
    assert "CUDA_AGENT_JUDGE_TOKEN" in capsys.readouterr().err
    assert main(["train", "judge-runs", str(tmp_path / "nowhere")]) == 2
    assert "no such trajectory file" in capsys.readouterr().err
