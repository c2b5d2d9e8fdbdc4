"""Every place that calls the judge on this host holds the GPU exclusively while it judges: `solve`'s
LocalJudge, GRPO's environment (not for a judge with a URL) and verl's local ServiceJudge. The judge
itself is the GPU boundary a CPU cannot reach: it is replaced by a probe that checks, from another
thread, that no tool command could get the GPU while it runs."""

from __future__ import annotations

import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

import cuda_agent.judge as judge_package
from cuda_agent import gpu_lease
from cuda_agent.agent.judging import JudgeOutcome, LocalJudge
from cuda_agent.task import load_task
from cuda_agent.train.environment import EnvironmentFactory, EnvironmentSettings, RolloutLog
from cuda_agent.train.verl.judging import ServiceJudge

GPU = "GPU-judges-test"
ROOT = Path(__file__).resolve().parents[2]
TASK = (ROOT / "examples" / "elementwise_chain" / "model.py").read_text()


@pytest.fixture(autouse=True)
def one_gpu(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(gpu_lease.GPUS_ENV, GPU)
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(tmp_path / "leases"))


def gpu_is_taken() -> bool:
    """Whether a tool command (another thread, shared) would have to wait for the GPU right now."""
    result: list[bool] = []

    def probe() -> None:
        try:
            gpu_lease.acquire([GPU], gpu_lease.SHARED, timeout_s=0.1).release()
            result.append(False)
        except gpu_lease.LeaseTimeout:
            result.append(True)

    thread = threading.Thread(target=probe)
    thread.start()
    thread.join()
    return result[0]


class Verdict:
    status = SimpleNamespace(value="incorrect")
    reward, reason = -1, "probe"

    def to_dict(self) -> dict:
        return {"status": "incorrect", "reward": -1, "reason": "probe"}


def test_solves_local_judge_holds_the_gpu(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[bool] = []
    monkeypatch.setattr(judge_package, "judge", lambda *a, **k: seen.append(gpu_is_taken()) or Verdict())
    outcome = LocalJudge()(tmp_path, load_task(TASK, name="t"))
    assert seen == [True] and outcome.status == "incorrect"
    assert outcome.gpu_lease["gpus"] == [GPU] and outcome.to_dict()["gpu_lease"]["mode"] == "exclusive"
    assert not gpu_is_taken()  # given back


def test_verls_local_judge_holds_the_gpu(tmp_path: Path) -> None:
    seen: list[bool] = []
    judge = ServiceJudge()
    judge._get = lambda: SimpleNamespace(judge=lambda *a: seen.append(gpu_is_taken()) or Verdict())
    outcome = judge(tmp_path, load_task(TASK, name="t"))
    assert seen == [True] and outcome.reward == -1 and outcome.gpu_lease["gpus"] == [GPU]


@pytest.mark.parametrize("remote", [False, True])
def test_grpo_environment_holds_the_gpu_unless_the_judge_is_remote(tmp_path: Path, remote: bool) -> None:
    seen: list[bool] = []

    class Probe:
        url = "http://judge:8000/v1" if remote else None

        def __call__(self, workspace: Path, task) -> JudgeOutcome:
            seen.append(gpu_is_taken())
            return JudgeOutcome("incorrect", -1, "probe")

    rollouts = RolloutLog(tmp_path / "rollouts.jsonl")
    env = EnvironmentFactory(Probe(), EnvironmentSettings(root=tmp_path / "envs"), rollouts)()
    env.reset(task_name="chain", task_source=TASK)
    assert env.get_reward() == -1.0
    assert seen == [not remote]
    wait = rollouts.drain()[0]["gpu_wait_s"]
    assert (wait is None) if remote else (wait is not None and wait >= 0)
    env._close()


def test_a_judge_run_inside_a_tool_command_does_not_wait_on_its_own_command(tmp_path: Path) -> None:
    """An agent may run `cuda-agent judge .` in Bash: its command holds the GPU shared, so the judge inside
    asks for nothing (else it would wait on its own command until the bound)."""
    from cuda_agent.agent.config import AgentConfig
    from cuda_agent.agent.episode import open_workspace
    from cuda_agent.agent.tools.sandbox import SandboxPolicy

    toolbox = open_workspace(load_task(TASK, name="t"), tmp_path / "ws", AgentConfig(sandbox=SandboxPolicy(isolation="none")))
    try:
        assert toolbox.context.gpus == (GPU,)
        script = ("from cuda_agent import gpu_lease\n"
                  "with gpu_lease.judgment(timeout_s=2) as lease: print('judged', lease.gpus)")  # fmt: skip
        result = toolbox.execute("Bash", {"command": f'python3 -c "{script}"'})
        assert result.status == "ok" and result.content == "judged ()", result.content
        assert result.meta["gpu_wait_s"] < 1
    finally:
        toolbox.close()


def test_grpo_environment_with_the_local_service_judge_takes_the_gpu_once(tmp_path: Path) -> None:
    """GRPO's environment holds the GPU around any judge, and the local ServiceJudge asks for it again
    inside, in the same thread: the hold nests (nothing taken twice, no wait on itself) and the GPU is
    free again after the reward."""
    seen: list[bool] = []
    judge = ServiceJudge()
    judge._get = lambda: SimpleNamespace(judge=lambda *a: seen.append(gpu_is_taken()) or Verdict())
    rollouts = RolloutLog(tmp_path / "rollouts.jsonl")
    env = EnvironmentFactory(judge, EnvironmentSettings(root=tmp_path / "envs"), rollouts)()
    env.reset(task_name="chain", task_source=TASK)
    assert env.get_reward() == -1.0
    assert seen == [True] and not gpu_is_taken()
    record = rollouts.drain()[0]
    assert record["judge_status"] == "incorrect" and record["gpu_wait_s"] is not None
    env._close()
