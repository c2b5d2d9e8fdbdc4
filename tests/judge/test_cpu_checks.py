"""CPU checks that say what the judge would say (issue 14, item 3): `judge --build-only` and the workspace's
`utils/compile.sh` validate the task, apply the static checks and build, and exit non-zero when any fails;
`--build-only` checks many folders in parallel with progress and `--out`, in the full verdict schema."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.judge.decide.verdict import STAGES, Status, Verdict, failed_stage, stage_outcomes
from cuda_agent.task import load_task
from cuda_agent.workspace import materialize

EXAMPLES = Path(__file__).parents[2] / "examples"
EXAMPLE = EXAMPLES / "elementwise_chain"
BROKEN_TASK = """
import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x):
        return x @ torch.ones(3, 5)  # (4, 7) @ (3, 5): fails on its own inputs

def get_inputs():
    return [torch.randn(4, 7)]

def get_init_inputs():
    return []
"""
# A binding unit that needs only binding_registry.h (pybind11, through the shared PCH): the cheapest kernels/
# that builds, so these tests pay for task probes and checks, not for nvcc.
SMALL_BINDING = """
#include "../binding_registry.h"
static int answer() { return 7; }
static void register_small(pybind11::module& m) { m.def("answer", &answer); }
REGISTER_BINDING(small, register_small);
"""
FULL_SCHEMA = set(Verdict(reward=-1, status=Status.COMPILE_ERROR, reason="").to_dict())


def _submission(root: Path, *, model: str | None = "example", model_new_extra: str = "", bad_cu: bool = False) -> Path:
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "small_binding.cpp").write_text(SMALL_BINDING)
    (root / "model_new.py").write_text((EXAMPLE / "model_new.py").read_text() + model_new_extra)
    if model == "example":
        shutil.copyfile(EXAMPLE / "model.py", root / "model.py")
    elif model is not None:
        (root / "model.py").write_text(model)
    if bad_cu:
        (root / "kernels" / "bad.cu").write_text("__global__ void k(float* x) { x[0] = missing_name; }\n")
    return root


@pytest.fixture()
def judge_cache(warm_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The judge's own cache for these builds: the warmed root (its owner may write to it), so a build here
    pays only for the submission's own sources."""
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(warm_root))
    return warm_root


def test_stage_map_of_a_full_judgment() -> None:
    """Every verdict says which stages passed, failed, were skipped or not reached."""
    ok = Verdict(reward=2, status=Status.OK, reason="")
    assert stage_outcomes(failed_stage(ok, {"build": 1, "reference": 1, "verify": 1, "timing": 1})) == dict.fromkeys(
        STAGES, "passed")  # fmt: skip
    wrong = Verdict(reward=-1, status=Status.INCORRECT, reason="output 0 differs")
    outcomes = stage_outcomes(failed_stage(wrong, {"build": 1, "reference": 1}, timed=False), ("timing",))
    assert outcomes == {"task": "passed", "static": "passed", "build": "passed", "reference": "passed",
                        "verify": "failed", "timing": "skipped"}  # fmt: skip
    rejected = Verdict(reward=-1, status=Status.REJECTED, reason="static checks failed: model_new.py:1: os")
    assert stage_outcomes(failed_stage(rejected, {}))["build"] == "not_reached"
    slow = Verdict(reward=-1, status=Status.TIMEOUT, reason="timing did not finish")
    assert failed_stage(slow, {"build": 1, "reference": 1, "load": 1, "verify": 1}) == "timing"


@pytest.mark.slow
def test_build_only_checks_many_folders_in_parallel_and_fails_for_each_broken_one(
    judge_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folders = [
        _submission(tmp_path / "good"),
        _submission(tmp_path / "imports_os", model_new_extra="\nimport os\n"),
        _submission(tmp_path / "no_task", model=None),
        _submission(tmp_path / "broken_task", model=BROKEN_TASK),
        _submission(tmp_path / "bad_build", bad_cu=True),
    ]
    out = tmp_path / "verdicts.jsonl"
    code = main(["judge", *map(str, folders), "--build-only", "--json", "--out", str(out), "--build-workers", "2"])
    captured = capsys.readouterr()
    assert code == 1  # some failed: the exit code says so
    printed = [json.loads(line) for line in captured.out.splitlines()]
    written = [json.loads(line) for line in out.read_text().splitlines()]
    assert printed == written and [r["submission"] for r in written] == list(map(str, folders))  # given order
    assert "[5/5]" in captured.err and "verdicts in" in captured.err  # progress
    by = {Path(r["submission"]).name: r for r in written}
    for record in written:  # the schema of a full judgment, GPU stages marked as not run
        assert set(record) == FULL_SCHEMA | {"submission"}
        assert {record["stages"][s] for s in ("reference", "verify", "timing")} == {"skipped"}
    good = by["good"]
    assert good["status"] == "built" and good["reward"] == 0 and good["stages"]["build"] == "passed"
    assert good["checks"]["task"]["outputs"] == [[[16384, 8192], "float32"]]
    # The build's steps are timed, as in a full judgment's stage table.
    assert set(good["checks"]["build"]["seconds"]) == {"compile", "link"}
    assert {"build_compile", "build_link"} <= set(good["stage_seconds"])
    os_ = by["imports_os"]  # it builds, and is still rejected, as the judge would
    assert os_["status"] == "rejected" and os_["reward"] == -1 and "import of os" in os_["reason"]
    assert os_["stages"]["static"] == "failed" and os_["stages"]["build"] == "passed"
    assert by["no_task"]["status"] == "task_error" and "not found" in by["no_task"]["reason"]
    assert by["no_task"]["stages"]["task"] == "failed" and by["no_task"]["stages"]["build"] == "passed"
    broken = by["broken_task"]
    assert broken["status"] == "task_error" and "fails on its own inputs" in broken["reason"]
    bad = by["bad_build"]
    assert bad["status"] == "compile_error" and bad["stages"]["build"] == "failed"
    assert "kernels/bad.cu(1)" in bad["compile_log"]
    # All passing: exit 0.
    assert main(["judge", str(folders[0]), "--build-only"]) == 0
    assert "built" in capsys.readouterr().out


@pytest.mark.slow
def test_compile_sh_exits_non_zero_unless_task_static_checks_and_build_pass(
    warm_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`bash utils/compile.sh` inside an episode: its own private cache, the shared layer read-only."""
    from cuda_agent.workspace.commands import compile_main

    ws = materialize(load_task(EXAMPLE / "model.py"), tmp_path / "ws")
    (ws / "kernels" / "small_binding.cpp").write_text(SMALL_BINDING.replace("7", "8"))
    (ws / "model_new.py").write_text((EXAMPLE / "model_new.py").read_text() + "\nimport os\n")
    private = ws / ".cache" / "cuda-agent"
    env = {**os.environ, "PYTHON": sys.executable, "CUDA_AGENT_CACHE": str(private),
           "CUDA_AGENT_SHARED_CACHE": str(warm_root)}  # fmt: skip

    def compile_sh() -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", "utils/compile.sh"], cwd=ws, env=env, capture_output=True, text=True,
                              timeout=600)  # fmt: skip

    rejected = compile_sh()
    assert rejected.returncode == 1, rejected.stdout + rejected.stderr
    assert "Static checks failed" in rejected.stderr and "import of os" in rejected.stderr
    assert "Compile success" not in rejected.stdout  # progress tracking must not count it as compiled
    assert (ws / "cuda_extension.so").is_file()  # built all the same, to try while fixing the rest
    assert not (private / "objects" / "pch").exists()  # the first compile reused the shared header
    assert "1 compiled, 2 reused" in rejected.stderr  # binding.cpp and the driver gate came from the shared layer

    (ws / "model_new.py").write_text((EXAMPLE / "model_new.py").read_text())
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(private))  # the same command, in this process (faster)
    monkeypatch.setenv("CUDA_AGENT_SHARED_CACHE", str(warm_root))
    assert compile_main(ws) == 0
    assert "Compile success" in capsys.readouterr().out

    (ws / "model.py").chmod(stat.S_IWUSR | stat.S_IRUSR)
    (ws / "model.py").write_text(BROKEN_TASK)  # (a missing model.py: see the --build-only test)
    assert compile_main(ws) == 1
    assert "model.py is not a valid task" in capsys.readouterr().err
