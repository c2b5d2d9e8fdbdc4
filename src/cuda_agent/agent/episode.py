"""One episode from start to reward: workspace, sandbox, tools, the loop, then the judge.

This is the function RL rollouts and the CLI both call. The trajectory file is written from the first
message on; at the end it holds the exit reason, the judge's outcome and the reward, with
`"state": "finished"` (or `"interrupted"` if the run was stopped under it).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.judging import Judge, JudgeOutcome, LocalJudge
from cuda_agent.agent.llm import ModelClient, OpenAIClient
from cuda_agent.agent.loop import Agent, Observer
from cuda_agent.agent.prompts import system_prompt, task_prompt
from cuda_agent.agent.tools import ToolBox, ToolContext, build_sandbox
from cuda_agent.agent.tools.sandbox import EPISODE_CACHE
from cuda_agent.agent.trajectory import TrajectoryWriter
from cuda_agent.gpu_lease import IN_TOOL_ENV, tool_gpus
from cuda_agent.judge import prepare_episode_cache, shared_caches_from_env
from cuda_agent.task import Task
from cuda_agent.workspace import materialize


@dataclass(frozen=True)
class EpisodeResult:
    task: str
    exit_status: str
    exit_message: str
    turns: int
    usage: dict[str, int]
    progress: dict[str, Any]
    outcome: JudgeOutcome
    protections: dict[str, str]
    workspace: Path
    trajectory_path: Path | None
    wall_s: float

    @property
    def reward(self) -> int | None:
        return self.outcome.reward

    def summary(self) -> dict[str, Any]:
        return {
            "task": self.task,
            "exit": self.exit_status,
            "exit_message": self.exit_message,
            "turns": self.turns,
            "usage": self.usage,
            "best": self.progress.get("label", "-"),
            "judge": self.outcome.to_dict(),
            "reward": self.reward,
            "workspace": str(self.workspace),
            "trajectory": str(self.trajectory_path) if self.trajectory_path else None,
            "wall_s": round(self.wall_s, 3),
        }


def open_workspace(task: Task, workspace: Path, config: AgentConfig, *, overwrite: bool = False) -> ToolBox:
    """Lay out `workspace` for `task` with its judge cache and Bash sandbox, and the ten tools over it.

    Every episode works in what this returns, whether `solve` drives it or an RL trainer's rollout
    (train/environment.py): one tool layer, one workspace layout. `toolbox.close()` stops what it left running.
    """
    workspace = materialize(task, Path(workspace), overwrite=overwrite)
    # The judge's PCH and shared objects: read in place from the seed (or the machine's shared cache),
    # never copied, so an episode adds only its own objects to disk (see cuda_agent.judge.trusted.cache).
    seed = Path(config.cache_seed_dir) if config.cache_seed_dir else None
    cache_env = prepare_episode_cache(workspace / EPISODE_CACHE, workspace, seed)
    # the layers' object folders (what builds read) visible in the sandbox, wherever they are
    sandbox = build_sandbox(workspace, config.sandbox, read_only=shared_caches_from_env(cache_env))
    # Commands hold their GPUs shared as a whole (gpu_lease); what they run asks for no lease of its own.
    sandbox = dataclasses.replace(sandbox, _env={**sandbox.env(), **cache_env, IN_TOOL_ENV: "1"})
    return ToolBox(
        ToolContext(
            workspace=sandbox.workspace,
            sandbox=sandbox,
            max_output_chars=config.max_output_chars,
            default_timeout_s=config.bash_timeout_s,
            max_timeout_s=config.bash_max_timeout_s,
            gpus=tuple(tool_gpus()),  # commands share the GPUs; final judgments take them alone
        )
    )


def run_episode(
    task: Task,
    workspace: Path,
    config: AgentConfig,
    *,
    client: ModelClient | None = None,
    judge: Judge | None = None,
    trajectory_path: Path | None = None,
    observer: Observer | None = None,
    cancel: threading.Event | None = None,
    overwrite: bool = False,
) -> EpisodeResult:
    """Lay out `workspace` for `task`, let the model work in it, judge the result."""
    observer = observer or (lambda event, **data: None)
    client = client or OpenAIClient(config.model)
    judge = judge or LocalJudge()
    start, started_at = time.monotonic(), time.time()
    toolbox = open_workspace(task, Path(workspace), config, overwrite=overwrite)
    sandbox = toolbox.context.sandbox
    display = sandbox.workspace.display_root
    writer = TrajectoryWriter(
        trajectory_path,
        {
            "task": {"name": task.name, "digest": task.digest},
            "model": config.model.public(),
            "config": {k: v for k, v in config.public().items() if k != "model"},
            "sandbox": dict(sorted(sandbox.protections.items())),
            "workspace": {"display": display, "path": str(sandbox.workspace.root)},
            "timings": {"started_at": started_at},
        },
    )
    observer("sandbox", task=task.name, protections=dict(sandbox.protections))
    agent = Agent(client, toolbox, config, writer, observer=observer, cancel=cancel)
    try:
        exit_info = agent.run(
            system_prompt(sandbox.workspace.root, display, config, sandbox.protections),
            task_prompt(task.name, task.source, display),
        )
    except BaseException as e:  # Ctrl-C or a bug: keep what happened, say so, let it propagate
        writer.timings(wall_s=round(time.monotonic() - start, 6))
        writer.update(state="interrupted", exit={"status": "interrupted", "message": f"{type(e).__name__}: {e}"})
        raise
    finally:
        toolbox.close()

    judge_start = time.monotonic()
    if exit_info.status == "cancelled":
        outcome = JudgeOutcome("skipped", None, "the run was cancelled before the episode ended")
    elif exit_info.status == "model_error" and not any(t["tool_results"] for t in agent.turns):
        # The untouched template would only be judged as a compile error: no verdict says more than the exit.
        outcome = JudgeOutcome("skipped", None, "the model failed before the agent ran any tool; nothing to judge")
    else:
        observer("judge_start", task=task.name)
        outcome = judge(sandbox.workspace.root, task)
        observer("judged", task=task.name, outcome=outcome)
    wall_s = time.monotonic() - start
    writer.timings(judge_s=round(time.monotonic() - judge_start, 6), wall_s=round(wall_s, 6), finished_at=time.time())
    writer.update(state="finished", judge=outcome.to_dict(), reward=outcome.reward, progress=agent.progress.snapshot())
    return EpisodeResult(
        task=task.name,
        exit_status=exit_info.status,
        exit_message=exit_info.message,
        turns=agent.turn,
        usage=dict(agent.usage),
        progress=agent.progress.snapshot(),
        outcome=outcome,
        protections=dict(sandbox.protections),
        workspace=sandbox.workspace.root,
        trajectory_path=trajectory_path,
        wall_s=wall_s,
    )
