"""The GRPO environment: one rollout's workspace, the agent's ten tools as its methods, the judge's reward.

TRL's `GRPOTrainer(environment_factory=...)` makes one instance per concurrent rollout and reuses it:
`reset(**row)` starts a rollout on the row's task, every public method is a tool the model may call
(TRL reads each method's signature and Google-style docstring with transformers' `get_json_schema` to
declare it), and `get_reward()` scores the finished rollout. So:

- the tools are not re-implemented: each method hands its arguments to the `ToolBox` that `cuda-agent
  solve` uses, over a workspace opened by the same `open_workspace` (template, judge cache, Bash sandbox).
  The method signatures and docstrings are generated from the tools' own JSON schemas, so the model is
  offered the same names, parameters and descriptions as in `solve`;
- the reward is the judge's milestone reward (-1..3) on the final workspace, through the `Judge` seam
  (local `JudgeService` or `RemoteJudge`). A judge that cannot give a verdict (down, no GPU, timed out,
  the GPU never free for it) and a rollout whose workspace could not be opened never raise into the
  trainer and never become a reward: `get_reward()` returns None (TRL keeps the sample out of the group
  baseline), the reason is logged and recorded with `judged: false`, and `UnjudgedMasking` (masking.py)
  masks the sample out of the loss (train/unjudged.py says why).

Every finished rollout is appended to `RolloutLog` (task, tool calls and their statuses, the judge's
status, reward and reason), which grpo.py writes per step.
"""

from __future__ import annotations

import inspect
import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from cuda_agent import gpu_lease
from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.judging import JUDGE_ERROR, Judge, JudgeOutcome
from cuda_agent.agent.tools import Tool, ToolBox, default_tools
from cuda_agent.task import Task, load_task
from cuda_agent.train.unjudged import ROLLOUT_ERROR, training_signal

log = logging.getLogger(__name__)

_PYTHON_TYPES: dict[str, type] = {"string": str, "integer": int, "number": float, "boolean": bool, "array": list,
                                  "object": dict}  # fmt: skip


# -- the tools as methods ---------------------------------------------------------------------------


def _hint(spec: dict[str, Any]) -> Any:
    """The Python type hint from which `get_json_schema` gives back this JSON-schema property."""
    if "enum" in spec:
        return Literal.__getitem__(tuple(spec["enum"]))
    kind = spec.get("type", "string")
    if kind == "array" and isinstance(spec.get("items"), dict):
        return list[_hint(spec["items"])]
    return _PYTHON_TYPES.get(kind, str)


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def python_name(parameter: str) -> str:
    """The name a parameter has in the method's signature. Grep's flags (-i, -n, -A, -B, -C) cannot be
    Python names, so they are offered without the dash and mapped back before the tool runs."""
    name = parameter.lstrip("-")
    if not name.isidentifier():
        raise ValueError(f"tool parameter {parameter!r} has no Python spelling")
    return name


def _docstring(tool: Tool) -> str:
    """Google style, which transformers parses: the tool's description, then one line per parameter."""
    lines = [tool.describe(None).strip(), "", "Args:"]
    for name, spec in tool.parameters.get("properties", {}).items():
        lines.append(f"    {python_name(name)}: {_one_line(spec.get('description') or name)}")
    return "\n".join(lines)


def tool_method(tool: Tool) -> Callable[..., str]:
    """A method named like `tool` whose signature and docstring carry its JSON schema; calling it runs
    the tool in the rollout's workspace and returns what the model reads (errors included, as in `solve`)."""
    name = tool.name
    properties = tool.parameters.get("properties", {})
    spelled = {python_name(p): p for p in properties if python_name(p) != p}

    def method(self: CudaKernelEnv, **arguments: Any) -> str:
        return self._run_tool(name, {spelled.get(k, k): v for k, v in arguments.items()})

    required = set(tool.parameters.get("required", []))
    parameters = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    for param, spec in properties.items():
        hint = _hint(spec)
        annotations[python_name(param)] = hint
        parameters.append(inspect.Parameter(python_name(param), inspect.Parameter.KEYWORD_ONLY, annotation=hint,
                                            default=inspect.Parameter.empty if param in required else None))  # fmt: skip
    annotations["return"] = str
    method.__name__ = method.__qualname__ = name
    method.__signature__ = inspect.Signature(parameters, return_annotation=str)  # type: ignore[attr-defined]
    method.__annotations__ = annotations
    method.__doc__ = _docstring(tool)
    return method


# -- settings and the shared log ---------------------------------------------------------------------


@dataclass(frozen=True)
class EnvironmentSettings:
    """Where rollouts work and how they are scored."""

    root: Path  # rollout workspaces: ROOT/env-<slot>/workspace, re-made on every reset
    agent: AgentConfig = field(default_factory=AgentConfig)  # sandbox, Bash timeouts, output limits, cache seed
    rollout_time_limit_s: float | None = 1800.0  # Bash never outlives this, counted from reset


@dataclass
class RolloutLog:
    """Finished rollouts, appended by the environments and drained by the trainer's logging callback."""

    path: Path | None = None  # one JSON line per rollout
    pending: list[dict[str, Any]] = field(default_factory=list)
    total: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, record: dict[str, Any]) -> None:
        with self._lock:
            self.pending.append(record)
            self.total += 1
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(json.dumps(record, default=str) + "\n")

    def drain(self) -> list[dict[str, Any]]:
        with self._lock:
            out, self.pending = self.pending, []
            return out


# -- the environment ---------------------------------------------------------------------------------


class CudaKernelEnv:
    """One rollout slot. Public methods are tools (TRL's rule); everything else is private on purpose."""

    def __init__(self, judge: Judge, settings: EnvironmentSettings, slot: int, rollouts: RolloutLog | None = None) -> None:
        self._judge = judge
        self._settings = settings
        self._slot = slot
        self._rollouts = rollouts if rollouts is not None else RolloutLog()
        self._toolbox: ToolBox | None = None
        self._task: Task | None = None
        self._calls: list[dict[str, str]] = []
        self._started = 0.0
        self._rollout = 0
        self._failure: str | None = None  # why this rollout's workspace could not be opened
        self._judged = True  # whether the last finished rollout got a verdict (read by the trainer's masking)

    # TRL's interface: reset, the tools (generated below), get_reward

    def reset(self, task_name: str = "", task_source: str = "", **row: Any) -> str | None:
        """Start a rollout on the row's task in a fresh workspace (the previous one's shells are stopped)."""
        self._close()
        if not task_source:
            raise ValueError("a GRPO dataset row needs `task_source` (the task's model.py) and `task_name`")
        self._task = load_task(task_source, name=task_name or "task")
        self._failure = None
        self._started = time.monotonic()
        self._calls = []
        self._rollout += 1
        try:
            self._toolbox = _open_workspace(self._task, self._workspace_path(), self._settings.agent)
        except Exception as e:  # a full disk, a broken cache: this rollout is masked, the step goes on
            self._failure = f"the rollout's workspace could not be opened: {type(e).__name__}: {e}"
            log.warning("rollout %s/%d on %s: %s", self._slot, self._rollout, self._task.name, self._failure)
            return None
        limit = self._settings.rollout_time_limit_s
        self._toolbox.context.time_left = (lambda: None) if limit is None else (
            lambda: limit - (time.monotonic() - self._started))  # fmt: skip
        return None

    def get_reward(self) -> float | None:
        """The judge's milestone reward on the final workspace; None when there is no verdict."""
        if self._task is None:
            raise RuntimeError("get_reward() before reset(): the trainer must reset every rollout first")
        if self._toolbox is None:  # the workspace never opened: nothing to judge
            outcome = JudgeOutcome(ROLLOUT_ERROR, None, self._failure or "the rollout has no workspace")
            return self._finish(outcome, self._workspace_path(), time.monotonic(), None)
        workspace = self._toolbox.context.workspace.root
        self._toolbox.close()  # background shells must not change the files while they are judged
        start = time.monotonic()
        gpu_wait_s = None
        remote = bool(getattr(self._judge, "url", None))
        try:
            # A judge on this host's GPU holds it alone (cuda_agent.gpu_lease): no rollout's tool command
            # runs on it while this one is timed. A judge with a URL judges elsewhere.
            what = f"the judgment of rollout {self._slot}/{self._rollout}"
            with gpu_lease.judgment([] if remote else None, what=what) as lease:
                outcome = self._judge(workspace, self._task)
                gpu_wait_s = round(lease.waited_s, 3) if lease.gpus else None
        except Exception as e:  # a judge bug, a dead connection or a GPU never free: no verdict, masked
            outcome = JudgeOutcome(JUDGE_ERROR, None, f"{type(e).__name__}: {e}")
        # On this host's GPU, generation and training use it too (one-GPU GRPO); a verdict on the task is
        # masked wherever it was judged.
        outcome = training_signal(outcome, shared_gpus=not remote)
        return self._finish(outcome, workspace, start, gpu_wait_s)

    # private: TRL exposes every public method to the model

    def _finish(self, outcome: JudgeOutcome, workspace: Path, start: float, gpu_wait_s: float | None) -> float | None:
        """Record the rollout; its reward, or None (and masked) when the judge gave no verdict."""
        assert self._task is not None
        reward: float | None = float(outcome.reward) if outcome.reward is not None else None
        self._judged = reward is not None
        if reward is None:
            log.warning("rollout %s/%d on %s: no verdict (%s: %s); masked out of the loss", self._slot,
                        self._rollout, self._task.name, outcome.status, outcome.reason)  # fmt: skip
        self._rollouts.add({
            "slot": self._slot, "rollout": self._rollout, "task": self._task.name, "workspace": str(workspace),
            "tool_calls": list(self._calls), "judge_status": outcome.status, "judge_reward": outcome.reward,
            "judged": self._judged, "reward": reward, "reason": outcome.reason,
            "judge_s": round(time.monotonic() - start, 3), "gpu_wait_s": gpu_wait_s,
            "rollout_s": round(time.monotonic() - self._started, 3),
        })  # fmt: skip
        return reward

    def _run_tool(self, name: str, arguments: dict[str, Any]) -> str:
        if self._toolbox is None:
            return f"{name} cannot run: {self._failure or 'the rollout has not started'}"
        result = self._toolbox.execute(name, arguments)
        self._calls.append({"name": name, "status": result.status})
        return result.content

    def _workspace_path(self) -> Path:
        return Path(self._settings.root) / f"env-{self._slot}" / "workspace"

    def _close(self) -> None:
        if self._toolbox is not None:
            self._toolbox.close()
            self._toolbox = None


def _open_workspace(task: Task, path: Path, config: AgentConfig) -> ToolBox:
    from cuda_agent.agent.episode import open_workspace

    return open_workspace(task, path, config, overwrite=True)


for _tool in default_tools():
    setattr(CudaKernelEnv, _tool.name, tool_method(_tool))
del _tool


TOOL_NAMES = tuple(t.name for t in default_tools())


class EnvironmentFactory:
    """What `GRPOTrainer(environment_factory=...)` calls: a new slot each time, all of them remembered so
    the run can stop their shells at the end (TRL keeps its pool private)."""

    def __init__(self, judge: Judge, settings: EnvironmentSettings, rollouts: RolloutLog | None = None) -> None:
        self.judge, self.settings = judge, settings
        self.rollouts = rollouts if rollouts is not None else RolloutLog()
        self.made: list[CudaKernelEnv] = []

    def __call__(self) -> CudaKernelEnv:
        env = CudaKernelEnv(self.judge, self.settings, len(self.made), self.rollouts)
        self.made.append(env)
        return env

    def close(self) -> None:
        for env in self.made:
            env._close()
