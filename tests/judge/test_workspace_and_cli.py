"""The workspace layout and the CLI's front door (no GPU needed)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from cuda_agent.cli import main
from cuda_agent.task import load_task
from cuda_agent.workspace import PROTECTED_PATHS, materialize

EXAMPLES = Path(__file__).parents[2] / "examples"


def test_workspace_has_the_cuda_agent_layout(tmp_path: Path) -> None:
    task = load_task(EXAMPLES / "elementwise_chain" / "model.py")
    ws = materialize(task, tmp_path / "ws")
    for name in ("SKILL.md", "model.py", "model_new.py", "binding.cpp", "binding_registry.h",
                 "utils/compile.sh", "utils/verification.py", "utils/profiling.py", "utils/__init__.py"):  # fmt: skip
        assert (ws / name).is_file(), name
    assert (ws / "kernels").is_dir()
    assert (ws / "model.py").read_text() == task.source
    assert "REGISTER_BINDING" in (ws / "binding_registry.h").read_text()
    assert "PYBIND11_MODULE(cuda_extension" in (ws / "binding.cpp").read_text()
    assert not (ws / "model.py").stat().st_mode & stat.S_IWUSR
    assert set(PROTECTED_PATHS) >= {"model.py", "binding.cpp", "binding_registry.h", "utils"}
    with pytest.raises(FileExistsError):
        materialize(task, ws)
    materialize(task, ws, overwrite=True)


def test_skill_md_states_the_rules_the_judge_enforces(tmp_path: Path) -> None:
    ws = materialize(load_task(EXAMPLES / "elementwise_chain" / "model.py"), tmp_path / "ws")
    skill = (ws / "SKILL.md").read_text()
    for rule in ("atol", "1e-2", "torch.compile", "5%", "kernels/", "utils/compile.sh", "cuBLAS", "cuDNN"):
        assert rule in skill, rule


def test_cli_workspace_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["workspace", str(EXAMPLES / "elementwise_chain" / "model.py"), str(tmp_path / "w")])
    assert code == 0 and (tmp_path / "w" / "SKILL.md").exists()
    assert main(["workspace", str(tmp_path / "missing.py"), str(tmp_path / "w2")]) == 2
    assert "not found" in capsys.readouterr().err


def test_cli_judge_rejects_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["judge", str(tmp_path / "nowhere")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    bad_task = tmp_path / "bad.py"
    bad_task.write_text("def get_inputs(): pass\n")
    assert main(["judge", str(tmp_path), "--task", str(bad_task)]) == 2
    assert "missing Model" in capsys.readouterr().err


def test_cli_judge_without_gpu_says_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("a GPU is visible")
    assert main(["judge", str(EXAMPLES / "elementwise_chain")]) == 3
    assert "no CUDA GPU" in capsys.readouterr().err


def test_cli_build_only_reports_compile_errors_as_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, warm_root: Path
) -> None:
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(warm_root))  # the judge's cache: PCH and binding object in it
    kernels = tmp_path / "sub" / "kernels"
    kernels.mkdir(parents=True)
    (kernels / "bad.cu").write_text("this is not C++\n")
    for name in ("model.py", "model_new.py"):
        (tmp_path / "sub" / name).write_text((EXAMPLES / "elementwise_chain" / name).read_text())
    assert main(["judge", str(tmp_path / "sub"), "--build-only", "--json"]) == 1  # a failed build fails
    record = json.loads(capsys.readouterr().out)
    assert record["status"] == "compile_error" and record["reward"] == -1
    assert record["stages"]["build"] == "failed" and "kernels/bad.cu" in record["compile_log"]


def test_compile_sh_entry_point_builds_with_relative_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], warm_root: Path
) -> None:
    """`bash utils/compile.sh` runs from the workspace root with a relative root; compilers run elsewhere."""
    from cuda_agent.workspace.commands import compile_main

    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))  # not the user's; the PCH from the shared one
    monkeypatch.setenv("CUDA_AGENT_SHARED_CACHE", str(warm_root))

    ws = materialize(load_task(EXAMPLES / "elementwise_chain" / "model.py"), tmp_path / "ws")
    kernels = ws / "kernels"
    (kernels / "bad.cu").write_text("__global__ void k(float* x) { x[0] = missing_name; }\n")
    monkeypatch.chdir(ws)
    assert compile_main(Path(".")) == 1
    err = capsys.readouterr().err
    assert "kernels/bad.cu(1)" in err and "missing_name" in err
    assert "No such file" not in err and "Could not open" not in err


@pytest.mark.parametrize("command", ["verification", "profiling"])
def test_verification_and_profiling_build_from_the_episodes_shared_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """The agent's verification and profiling read the shared cache layer like compile.sh (its PCH and
    objects, the judge's binding too): without it every verification in the sandbox rebuilt the PCH and
    the binding (36-41 s per command on the H200). The final judgment's own build stays private."""
    import cuda_agent.judge as judge_package
    from cuda_agent.workspace import commands

    shared = tmp_path / "shared"
    monkeypatch.setenv("CUDA_AGENT_SHARED_CACHE", str(shared))
    seen = {}

    def fake_judge(root, task, config):
        seen["build"] = config.build
        seen["timed"] = config.time_candidate
        raise judge_package.JudgeUnavailable("no GPU in this test")

    monkeypatch.setattr(judge_package, "judge", fake_judge)
    ws = materialize(load_task(EXAMPLES / "elementwise_chain" / "model.py"), tmp_path / "ws")
    main_of = {"verification": commands.verification_main, "profiling": commands.profiling_main}[command]
    assert main_of(ws) == 3  # "cannot run here", said, not raised
    assert seen["build"].read_only_caches == (shared / "objects",)
    assert seen["build"].private_judge_binding is False
    assert seen["timed"] is (command == "profiling")
    assert judge_package.JudgeConfig().build.private_judge_binding is True  # the final judgment's default
