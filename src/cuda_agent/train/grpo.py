"""Agentic GRPO on one GPU: TRL's `GRPOTrainer` with our environment (train/environment.py) and the judge.

TRL has no PPO with a critic any more (its PPO trainer is gone), so the one-GPU path of the online stage is
GRPO: a group of rollouts per task, each a multi-turn episode in which the model calls our ten tools
(TRL's tool-calling loop, generation with plain transformers: no vLLM), scored by the judge's milestone
reward, advantages relative to the group. The cluster path with a critic (stage 4 of the recipe) is verl.

What this module adds around TRL, and nothing more (no training loop of ours):
- the dataset: one row per task, the prompt `solve` would open the episode with (SKILL.md + this
  environment's rules as the system message, the task as the user message) and the task itself;
- the judge behind the `Judge` seam: a local `JudgeService` kept warm for the run, or `RemoteJudge`
  for `--judge-url`; closed at the end, so no judge process outlives training;
- the response parser TRL needs to read tool calls, for chat templates it does not know (the tiny
  model's Hermes-style `<tool_call>` JSON);
- rollouts the judge could not judge masked out of the loss and counted (masking.py; never a reward);
- per-step logs: TRL's own (`log_history`), plus OUT/grpo_steps.jsonl (reward mean, tool calls per
  rollout, loss, wall time, the judge's statuses, the unjudged count), OUT/rollouts.jsonl and
  OUT/grpo_curve.png.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuda_agent.agent.config import AgentConfig
from cuda_agent.agent.judging import ServiceJudge
from cuda_agent.task import Task
from cuda_agent.train.arguments import shared_arguments
from cuda_agent.train.curves import loss_points, plot_panels, stderr_logging
from cuda_agent.train.environment import EnvironmentFactory, EnvironmentSettings, RolloutLog
from cuda_agent.train.masking import masking_trainer

log = logging.getLogger(__name__)

JUDGE_CODE = "cuda_agent.judge"  # in the command line of every judge worker process (python -m cuda_agent.judge...)


@dataclass(frozen=True)
class GRPOSettings:
    tasks: tuple[str, ...]  # task files, folders (KernelBench level folders), Ops-6K / synth parquet files
    model: str
    out: Path
    judge_url: str | None = None  # None: a local JudgeService on this machine's GPU
    judge_timeout_s: float = 900.0  # a remote judgment not answered by then counts as the judge being down
    num_generations: int = 4  # rollouts per task in a group
    prompts_per_step: int = 1
    max_steps: int = 150
    epochs: float = 1.0  # only when max_steps <= 0
    learning_rate: float = 1e-6
    grad_accum: int = 1
    max_completion_length: int = 16_384  # the whole multi-turn completion, tool results included
    max_turns: int = 16  # model turns per rollout (TRL's tool-calling iterations + 1)
    temperature: float = 1.0
    beta: float = 0.0  # KL to the reference model (0: no reference model is loaded)
    loss_type: str = "dapo"
    bf16: bool | None = None
    gradient_checkpointing: bool = False
    warmup_steps: int = 0
    logging_steps: int = 1
    seed: int = 0
    dtype: str = "auto"
    cache_seed_dir: str | None = None  # judge cache the rollouts' compiles read (see `solve --cache-seed`)
    bash_timeout_s: float = 300.0
    rollout_time_limit_s: float | None = 1800.0

    @property
    def batch_size(self) -> int:  # what shared_arguments reads: rollouts per device per step
        return self.num_generations * self.prompts_per_step


# -- tasks and prompts --------------------------------------------------------------------------------


def load_tasks(specs: tuple[str, ...] | list[str]) -> tuple[list[Task], list[tuple[str, str]]]:
    """Tasks through `solve`'s loader (files, folders, parquet of Ops-6K or synth output); (where, why) skipped."""
    from cuda_agent.tasks import collect_tasks

    problems: list[tuple[str, str]] = []
    tasks = collect_tasks(list(specs), problems)
    return tasks, problems


def agent_config(settings: GRPOSettings, prompt_tokens: int = 0) -> AgentConfig:
    """The budgets the prompt announces and the tools enforce: the context is the prompt plus TRL's
    completion budget (tool results included)."""
    return AgentConfig(max_turns=settings.max_turns, context_tokens=prompt_tokens + settings.max_completion_length,
                       time_limit_s=settings.rollout_time_limit_s, bash_timeout_s=settings.bash_timeout_s,
                       cache_seed_dir=settings.cache_seed_dir)  # fmt: skip


def trainer_tool_schemas() -> list[dict[str, Any]]:
    """The tool schemas exactly as TRL renders them into the prompt: transformers' `get_json_schema` of
    the environment's methods, in the order TRL lists them (by name, as `inspect.getmembers` does)."""
    import inspect

    from transformers.utils import get_json_schema

    from cuda_agent.train.environment import CudaKernelEnv

    names = [n for n, _ in inspect.getmembers(CudaKernelEnv, predicate=inspect.isfunction)
             if not n.startswith("_") and n not in ("reset", "get_reward")]  # fmt: skip
    return [get_json_schema(getattr(CudaKernelEnv, n)) for n in names]


def longest_prompt(tokenizer: Any, rows: list[dict[str, Any]]) -> int:
    """Tokens of the longest prompt as the trainer renders it (with the tools' schemas)."""
    tools = trainer_tool_schemas()
    return max(len(tokenizer.apply_chat_template(r["prompt"], tools=tools, add_generation_prompt=True, tokenize=True,
                                                 return_dict=True)["input_ids"]) for r in rows)  # fmt: skip


def training_rows(settings: GRPOSettings, tasks: list[Task], tokenizer: Any) -> tuple[list[dict[str, Any]], AgentConfig]:
    """The dataset rows and the agent budgets of a run: the prompts' budget line names the real context
    (the longest prompt plus the completion budget), so the rows are rendered twice."""
    rows = task_rows(tasks, agent_config(settings))
    config = agent_config(settings, longest_prompt(tokenizer, rows))
    return task_rows(tasks, config), config


def episode_prompt(tasks: list[Task], config: AgentConfig) -> tuple[str, str, dict[str, str]]:
    """(system prompt, display root, sandbox protections) as `solve` opens an episode here.

    Under bubblewrap every workspace is mounted at /workspace, so the prompt is `solve`'s word for word.
    Without it each rollout's workspace has its own real path, which a prompt shared by a group of
    rollouts cannot name; "." is then the truthful name (Bash runs in the workspace and every tool takes
    paths relative to it)."""
    from cuda_agent.agent.prompts import system_prompt
    from cuda_agent.agent.tools import build_sandbox
    from cuda_agent.workspace import materialize

    with tempfile.TemporaryDirectory(prefix="grpo-prompt-") as tmp:
        root = materialize(tasks[0], Path(tmp) / "workspace")
        sandbox = build_sandbox(root, config.sandbox)
        display = config.sandbox.display_root if sandbox.protections.get("mechanism") == "bwrap" else "."
        system = system_prompt(root, display, config, sandbox.protections)
        from cuda_agent.workspace.materialize import _make_writable

        _make_writable(root)  # materialize leaves the infrastructure read-only
    return system, display, dict(sandbox.protections)


def task_rows(tasks: list[Task], config: AgentConfig) -> list[dict[str, Any]]:
    """One dataset row per task: the conversational prompt and the task the environment resets to."""
    from cuda_agent.agent.prompts import task_prompt

    system, display, _ = episode_prompt(tasks, config)
    return [{"prompt": [{"role": "system", "content": system},
                        {"role": "user", "content": task_prompt(t.name, t.source, display)}],
             "task_name": t.name, "task_source": t.source} for t in tasks]  # fmt: skip


# -- the judge ----------------------------------------------------------------------------------------


def open_judge(url: str | None, timeout_s: float = 900.0) -> Any:
    """RemoteJudge for a `cuda-agent serve` URL (token in $CUDA_AGENT_JUDGE_TOKEN), else the local service
    (whose own stage timeouts bound a judgment)."""
    if url:
        from cuda_agent.service.client import RemoteJudge

        return RemoteJudge(url, retries=2, timeout_s=timeout_s)
    return ServiceJudge()


def judge_processes(root_pid: int | None = None) -> list[dict[str, Any]]:
    """Live descendants of `root_pid` (default: this process) running judge code, read from /proc."""
    root_pid = root_pid or os.getpid()
    parents: dict[int, int] = {}
    cmdlines: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if fields[0] == "Z":  # a zombie holds nothing but its exit status
            continue
        parents[int(entry.name)] = int(fields[1])
        cmdlines[int(entry.name)] = cmd

    def descends(pid: int) -> bool:
        seen = set()
        while pid in parents and pid not in seen:
            seen.add(pid)
            pid = parents[pid]
            if pid == root_pid:
                return True
        return False

    return [{"pid": pid, "cmdline": cmd[:200]} for pid, cmd in sorted(cmdlines.items())
            if descends(pid) and JUDGE_CODE in cmd]  # fmt: skip


# -- the tokenizer's tool-call parser -----------------------------------------------------------------


def ensure_response_parser(tokenizer: Any) -> str:
    """Make sure TRL can parse the model's tool calls; say how.

    TRL knows the response formats of the chat templates it ships (Qwen, Llama, ...). A template it does
    not know but that speaks the Hermes convention (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`
    closed by `<|im_end|>`, as the tiny model's does) is parsed like Qwen3's, whose convention it is."""
    if getattr(tokenizer, "response_template", None) is not None or getattr(tokenizer, "response_schema", None):
        return "the tokenizer's own"
    from trl.chat_template_utils import add_response_schema

    try:
        add_response_schema(tokenizer)
        return "TRL's for this chat template"
    except ValueError:
        template = tokenizer.chat_template or ""
        if "<tool_call>" not in template or "<|im_end|>" not in template:
            raise ValueError(
                "the model's chat template is not one TRL can parse tool calls from, and it does not use "
                "<tool_call> JSON blocks; set tokenizer.response_template (see transformers' response parsing docs)"
            ) from None
    from trl.chat_template_utils import qwen3_template

    tokenizer.response_template = qwen3_template
    return "Hermes <tool_call> JSON (Qwen3's)"


# -- per-step logging ----------------------------------------------------------------------------------


def step_record(logs: dict[str, Any], rollouts: list[dict[str, Any]], step: int, wall_s: float, step_s: float
                ) -> dict[str, Any]:  # fmt: skip
    """One line of grpo_steps.jsonl from TRL's logs for the step and the rollouts judged in it."""
    statuses = Counter(r["judge_status"] for r in rollouts)
    tool_calls = Counter(c["name"] for r in rollouts for c in r["tool_calls"])
    env_mean = next((v for k, v in logs.items() if k.startswith("rewards/") and k.endswith("/mean")), None)
    return {
        "step": step,
        "loss": logs.get("loss"),
        "reward_mean": logs.get("reward", env_mean),
        "reward_std": logs.get("reward_std"),
        "tool_call_frequency": logs.get("tools/call_frequency"),
        "tool_failure_frequency": logs.get("tools/failure_frequency"),
        "completion_mean_length": logs.get("completions/mean_length"),
        "rollouts": len(rollouts),
        "judge_statuses": dict(statuses),
        "unjudged": sum(1 for r in rollouts if not r["judged"]),  # masked out of the loss
        "tool_calls": dict(tool_calls),
        "step_s": round(step_s, 3),
        "wall_s": round(wall_s, 3),
    }


def step_logger(out: Path, rollouts: RolloutLog, start: float) -> Any:
    """A TrainerCallback writing OUT/grpo_steps.jsonl and one readable line per step on stderr."""
    import sys

    from transformers import TrainerCallback

    class StepLogger(TrainerCallback):
        def __init__(self) -> None:
            self.records: list[dict[str, Any]] = []
            self._step_start = time.monotonic()

        def on_step_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self._step_start = time.monotonic()

        def on_log(self, args: Any, state: Any, control: Any, logs: dict | None = None, **kwargs: Any) -> None:
            if not logs or "loss" not in logs or not state.is_world_process_zero:
                return
            now = time.monotonic()
            record = step_record(logs, rollouts.drain(), state.global_step, now - start, now - self._step_start)
            self.records.append(record)
            with open(out / "grpo_steps.jsonl", "a", encoding="utf-8") as f:
                f.write(json.dumps(record) + "\n")
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(record["judge_statuses"].items())) or "-"
            print(f"[grpo] step {record['step']}/{state.max_steps}: reward mean {_fmt(record['reward_mean'])}, "
                  f"tool calls/rollout {_fmt(record['tool_call_frequency'])}, loss {_fmt(record['loss'])}, "
                  f"judge: {statuses}, {record['step_s']:.1f} s (total {record['wall_s']:.0f} s)",
                  file=sys.stderr, flush=True)  # fmt: skip

    return StepLogger()


def _fmt(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, (int, float)) else "-"


# -- the run ------------------------------------------------------------------------------------------


def run_grpo(settings: GRPOSettings, judge: Any = None) -> dict[str, Any]:
    """Train with GRPO, save the model under `out`, write the logs and `grpo_summary.json`.

    `judge` (the `Judge` seam) defaults to `open_judge(settings.judge_url)`; one passed in is the
    caller's to close. Whatever happens, the judge this opened and every rollout's shells are closed."""
    start = time.monotonic()
    out = Path(settings.out)
    tasks, problems = load_tasks(settings.tasks)
    if not tasks:  # before anything under `out` is touched: a failed start loses no earlier run's logs
        why = "; ".join(f"{w}: {p}" for w, p in problems) or "no task files given"
        raise ValueError(f"no tasks to train on ({why})")
    out.mkdir(parents=True, exist_ok=True)
    for name in ("grpo_steps.jsonl", "rollouts.jsonl"):
        (out / name).unlink(missing_ok=True)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(settings.model, padding_side="left")
    rows, config = training_rows(settings, tasks, tokenizer)
    own_judge = judge is None
    judge = open_judge(settings.judge_url, settings.judge_timeout_s) if own_judge else judge
    rollouts = RolloutLog(out / "rollouts.jsonl")
    env_settings = EnvironmentSettings(root=out / "rollouts", agent=config,
                                       rollout_time_limit_s=settings.rollout_time_limit_s)  # fmt: skip
    factory = EnvironmentFactory(judge, env_settings, rollouts)
    try:
        trainer, callback, parser = _trainer(settings, tokenizer, rows, factory, rollouts, start)
        result = trainer.train()
        trainer.save_model(str(out))
        trainer.processing_class.save_pretrained(str(out))
        history = trainer.state.log_history
        steps = trainer.state.global_step
    finally:
        factory.close()
        if own_judge and hasattr(judge, "close"):
            judge.close()
    left = judge_processes() if own_judge else None  # a judge passed in is still open: its caller checks
    records = callback.records
    summary = {
        "model": settings.model,
        "out": str(out),
        "tasks": [t.name for t in tasks],
        "skipped_tasks": [{"where": w, "why": p} for w, p in problems],
        "judge": settings.judge_url or "local JudgeService",
        "tool_call_parser": parser,
        "steps": steps,
        "train_loss": result.training_loss,
        "rollouts": rollouts.total,
        "per_step": records,
        "judge_statuses": dict(sum((Counter(r["judge_statuses"]) for r in records), Counter())),
        "unjudged": sum(r["unjudged"] for r in records),
        "judge_processes_left": left,
        "wall_s": round(time.monotonic() - start, 2),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
    }
    summary["curve"] = _plot(records, loss_points(history), out / "grpo_curve.png", len(tasks))
    (out / "grpo_summary.json").write_text(json.dumps(summary, indent=2, default=str) + "\n", encoding="utf-8")
    return summary


def _trainer(settings: GRPOSettings, tokenizer: Any, rows: list[dict[str, Any]], factory: EnvironmentFactory,
             rollouts: RolloutLog, start: float) -> tuple[Any, Any, str]:  # fmt: skip
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # environment_factory is experimental in TRL 1.16
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    parser = ensure_response_parser(tokenizer)
    arguments = shared_arguments(settings)
    config = GRPOConfig(
        **arguments,
        num_generations=settings.num_generations,
        max_completion_length=settings.max_completion_length,
        max_tool_calling_iterations=max(settings.max_turns - 1, 0),
        temperature=settings.temperature,
        beta=settings.beta,
        loss_type=settings.loss_type,
        model_init_kwargs={"dtype": settings.dtype},
        log_completions=False,
    )
    trainer_class = masking_trainer(GRPOTrainer)  # unjudged rollouts out of the loss (masking.py)
    trainer = trainer_class(model=settings.model, args=config, train_dataset=Dataset.from_list(rows),
                            processing_class=tokenizer, environment_factory=factory)  # fmt: skip
    stderr_logging(trainer, "grpo")
    trl_log = logging.getLogger("trl.trainer.grpo_trainer")
    if not any(isinstance(f, _ShortUnscoredWarning) for f in trl_log.filters):
        trl_log.addFilter(_ShortUnscoredWarning())
    callback = step_logger(Path(settings.out), rollouts, start)
    trainer.add_callback(callback)
    return trainer, callback, parser


class _ShortUnscoredWarning(logging.Filter):
    """TRL warns about a completion no reward function scored by dumping its whole prompt (SKILL.md and
    all); rollouts.jsonl already has the judge's reason, so one line is enough."""

    def filter(self, record: logging.LogRecord) -> bool:
        if str(record.msg).startswith("All reward functions returned None"):
            record.msg, record.args = ("a rollout got no reward (the judge gave no verdict; the reason is in "
                                       "rollouts.jsonl): its advantage is 0"), ()  # fmt: skip
        return True


def _plot(records: list[dict[str, Any]], loss: list[tuple[int, float]], path: Path, tasks: int) -> str | None:
    """The PNG's path, or None where matplotlib is missing (the JSON logs hold the same figures)."""
    import importlib.util

    if importlib.util.find_spec("matplotlib") is None:
        log.warning("matplotlib is not installed: no %s (grpo_steps.jsonl has the figures)", path.name)
        return None

    def curve(key: str) -> list[tuple[int, float]]:
        return [(r["step"], float(r[key])) for r in records if isinstance(r.get(key), (int, float))]

    plot_panels(
        [("loss", {"train loss": loss}), ("judge reward", {"reward mean": curve("reward_mean")}),
         ("tool calls", {"tool calls / rollout": curve("tool_call_frequency")})],
        path, f"GRPO on {tasks} task(s)", bands={"reward mean": curve("reward_std")},
    )  # fmt: skip
    return str(path)
