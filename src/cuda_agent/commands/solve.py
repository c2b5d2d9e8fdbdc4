"""`cuda-agent solve TASK...`: let a model write CUDA kernels for tasks, with live progress and a summary.

TASK is a KernelBench-style `.py` file, a folder holding `model.py`, a folder of such tasks, or a
`.parquet` file of tasks. Each episode gets `RUNS/<task>/workspace/` and `RUNS/<task>/trajectory.jsonl`
(rewritten after every message); several run at once with `--concurrency`. Progress goes to stderr, one
line per turn and per tool call; the summary table follows at the end. `--json` prints one summary per
episode as JSON lines on stdout; `--out FILE` appends the full trajectory records (the RL format).

Before any episode starts, the model server is checked once (`check_server`): a dead server, a model it
does not serve or a server without tool calling ends the run in seconds with the URL and the error
(exit 3). When an episode ends with a model error the server is checked again, and if it is gone the
batch stops (tasks not started are reported as `not_run`) instead of burning every task on retries.
A task that cannot be loaded is skipped with its reason (`--strict` aborts instead). Exit codes: 0 every
episode ran, 1 some episode failed, was skipped or the run was interrupted, 2 bad arguments, 3 the model
server is unusable.
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import Any, TextIO

FAILED_EXITS = ("model_error", "crashed", "bad_task", "not_run")
EXIT_SERVER = 3
# Judge outcomes that mean "never judged": `--resume` judges these workspaces instead of skipping them.
UNJUDGED = ("unavailable", "judge_error")


def add_model_arguments(model: argparse._ArgumentGroup) -> None:
    """The model server's options, shared by every command that drives the agent (solve, eval). Their
    argparse defaults are None so that --config and CUDA_AGENT_* can set them; the help states what applies
    when none of them does (agent/config.py's defaults)."""
    from cuda_agent.agent.config import ModelConfig

    model.add_argument("--model", help="model name as the server knows it")
    model.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://localhost:8000/v1")
    model.add_argument("--api-key", help="API key (prefer CUDA_AGENT_API_KEY or OPENAI_API_KEY)")
    model.add_argument("--temperature", type=float, help="sampling temperature (default: the server's)")
    model.add_argument("--max-tokens", type=int, help=f"tokens per response (default {ModelConfig.max_tokens})")
    model.add_argument("--config", type=Path, help="TOML or JSON file with [model], [agent], [sandbox] sections")


def add_budget_arguments(group: argparse._ArgumentGroup) -> None:
    """An episode's budgets, shared by solve and eval (defaults as for `add_model_arguments`)."""
    from cuda_agent.agent.config import AgentConfig

    group.add_argument("--max-turns", type=int, help=f"model turns per episode (default {AgentConfig.max_turns})")
    group.add_argument("--context-tokens", type=int, help=f"context budget (default {AgentConfig.context_tokens})")
    group.add_argument("--max-total-tokens", type=int,
                       help="prompt+completion tokens over the episode (default: no limit)")  # fmt: skip
    group.add_argument("--time-limit", type=float, dest="time_limit_s",
                       help=f"seconds per episode (default {AgentConfig.time_limit_s:g})")  # fmt: skip


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name,
        help="run the agent on one or more tasks",
        description="Run the CUDA agent with an OpenAI-compatible model on tasks, then judge the results.",
    )
    parser.add_argument("tasks", nargs="+", help="task .py file, task folder, folder of tasks, or .parquet file")
    model = parser.add_argument_group("model (also from CUDA_AGENT_* variables or --config)")
    add_model_arguments(model)
    budget = parser.add_argument_group("budgets")
    add_budget_arguments(budget)
    runs = parser.add_argument_group("run")
    runs.add_argument("--runs-dir", type=Path, default=Path("runs"), help="where workspaces and trajectories go")
    runs.add_argument("--concurrency", "-j", type=int, default=1, help="episodes at once")
    runs.add_argument("--force", action="store_true", help="replace existing workspaces")
    runs.add_argument("--resume", action="store_true",
                      help="skip finished episodes; re-run cancelled ones, judge ones never judged")  # fmt: skip
    runs.add_argument("--strict", action="store_true", help="abort when a task cannot be loaded (default: skip it)")
    runs.add_argument("--cache-seed", dest="cache_seed_dir", help="judge cache folder episodes read (read-only) for the precompiled header and objects")
    runs.add_argument("--no-judge", action="store_true", help="skip the final judgment (no reward)")
    runs.add_argument("--judge-url", help="judge on a `cuda-agent serve` server at this URL (token in "
                      "$CUDA_AGENT_JUDGE_TOKEN) instead of in this process")  # fmt: skip
    runs.add_argument("--isolation", choices=["auto", "bwrap", "unshare", "none"],
                      help="Bash sandbox mechanism (default auto)")  # fmt: skip
    runs.add_argument("--allow-network", action="store_true", default=None,
                      help="let Bash reach the network (default: no network)")  # fmt: skip
    out = parser.add_argument_group("output")
    out.add_argument("--json", action="store_true", help="print one JSON summary per episode on stdout")
    out.add_argument("--out", type=Path, help="append each episode's full trajectory record to this JSONL file")
    out.add_argument("--quiet", "-q", action="store_true", help="no live progress")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuda_agent.agent.config import ConfigError, load_config
    from cuda_agent.task import TaskError
    from cuda_agent.tasks import collect_tasks

    problems: list[tuple[str, str]] = []
    try:
        config = load_config(args.config, _overrides(args))
        if not config.model.name:
            raise ConfigError("no model name: pass --model, set CUDA_AGENT_MODEL or [model] name in --config")
        tasks = collect_tasks(args.tasks, None if args.strict else problems)
        if not tasks:
            raise TaskError("no task could be loaded: " + "; ".join(f"{spec}: {why}" for spec, why in problems))
        if not config.model.base_url:
            # The SDK would silently fall back to api.openai.com: a hosted API is used only when asked for.
            raise ConfigError("no model server: pass --base-url (e.g. http://localhost:8000/v1 for a local vLLM or "
                              "SGLang server), or set CUDA_AGENT_BASE_URL, OPENAI_BASE_URL or [model] base_url in "
                              "--config; for the hosted OpenAI API pass --base-url https://api.openai.com/v1")  # fmt: skip
    except (ConfigError, TaskError, ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.concurrency < 1:
        print("error: --concurrency must be at least 1", file=sys.stderr)
        return 2
    if args.judge_url and not os.environ.get("CUDA_AGENT_JUDGE_TOKEN"):
        print("error: --judge-url needs the judge server's token in $CUDA_AGENT_JUDGE_TOKEN", file=sys.stderr)
        return 2
    return Runner(args, config, tasks, problems).run()



def _overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    return {
        "model": {
            "name": args.model,
            "base_url": args.base_url,
            "api_key": args.api_key,
            "temperature": args.temperature,
            "max_tokens": args.max_tokens,
        },
        "agent": {
            "max_turns": args.max_turns,
            "context_tokens": args.context_tokens,
            "max_total_tokens": args.max_total_tokens,
            "time_limit_s": args.time_limit_s,
            "cache_seed_dir": args.cache_seed_dir,
        },
        "sandbox": {"isolation": args.isolation, "allow_network": args.allow_network},
    }


# -- running ----------------------------------------------------------------------------------------


class Runner:
    """Runs the episodes (concurrently), prints progress, the summary, and the machine-readable output."""

    def __init__(
        self, args: argparse.Namespace, config: Any, tasks: list[Any], problems: list[tuple[str, str]] | None = None
    ) -> None:
        from cuda_agent.agent.judging import LocalJudge, no_judge

        self.args = args
        self.config = config
        self.tasks = tasks
        self.problems = problems or []
        self.server_gone: str | None = None  # why the batch stopped, once the model server went away
        self._server_lock = threading.Lock()
        self.cancel = threading.Event()
        self.print_lock = threading.Lock()
        self.out_lock = threading.Lock()
        self.judge = no_judge if args.no_judge else LocalJudge()
        if args.judge_url and not args.no_judge:
            from cuda_agent.service.client import RemoteJudge

            self.judge = RemoteJudge(args.judge_url)
        self.rows: dict[str, dict[str, Any]] = {}
        self._sandbox_shown = threading.Event()

    def show_sandbox(self, protections: dict[str, str]) -> None:
        """Say once per run what the Bash sandbox enforces here, and what it does not."""
        if self._sandbox_shown.is_set():
            return
        self._sandbox_shown.set()
        self.say("Bash sandbox: " + "; ".join(f"{k}: {v}" for k, v in protections.items()))

    def run(self) -> int:
        from cuda_agent.agent.llm import ServerUnusable, check_server

        for where, why in self.problems:
            self.say(f"skipped task {where}: {why}")
        self.say(f"{len(self.tasks)} task(s), model {self.config.model.name}"
                 f"{' at ' + self.config.model.base_url if self.config.model.base_url else ''}, "
                 f"{min(self.args.concurrency, len(self.tasks))} at a time, runs in {self.args.runs_dir}")  # fmt: skip
        try:
            self.say(f"model server: {check_server(self.config.model)}")
        except ServerUnusable as e:
            self.say(f"error: {e}")
            return EXIT_SERVER
        if not self.args.no_judge and not self.config.cache_seed_dir:
            self.warm_shared_cache()
        pool = ThreadPoolExecutor(max_workers=self.args.concurrency)
        futures: dict[Future, str] = {pool.submit(self.episode, task): task.name for task in self.tasks}
        pending = set(futures)
        try:
            while pending:
                _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            self.say("interrupted: stopping the episodes (their trajectories are saved); Ctrl-C again to abort")
            self.cancel.set()
            try:
                wait(pending)
            except KeyboardInterrupt:
                # Worker threads cannot be interrupted; trajectories are on disk up to the last message, and
                # bubblewrap sandboxes die with this process.
                self.say("aborted")
                os._exit(130)
        finally:
            pool.shutdown(wait=True)
        for future, name in futures.items():
            if future.exception() is not None:
                error = future.exception()
                self.say(f"[{name}] crashed: {type(error).__name__}: {error}")
                self.rows[name] = {"task": name, "exit": "crashed", "exit_message": f"{type(error).__name__}: {error}",
                                   "turns": 0, "usage": {}, "best": "-", "judge": {}, "reward": None}  # fmt: skip
        rows = [self.rows[t.name] for t in self.tasks if t.name in self.rows]
        rows += [{"task": where, "exit": "bad_task", "exit_message": why, "turns": 0, "usage": {}, "best": "-",
                  "judge": {}, "reward": None} for where, why in self.problems]  # fmt: skip
        print_table(rows, sys.stderr)
        if self.server_gone:
            not_run = sum(1 for r in rows if r["exit"] == "not_run")
            self.say(f"stopped the batch: {self.server_gone}; {not_run} task(s) not started (run again with --resume)")
        failed = [r for r in rows if r["exit"] in FAILED_EXITS]
        return 1 if failed or self.cancel.is_set() else 0

    def warm_shared_cache(self) -> None:
        """Put the judge's precompiled header into the machine's shared cache (once per machine and
        toolchain), which every episode's builds read in place instead of each making its own ~570 MB."""
        from cuda_agent.judge import ToolchainError, warm_shared

        self.say("shared build cache: checking (the first time on a machine it compiles the PCH, about a minute)")
        try:
            warmed = warm_shared()
        except (ToolchainError, OSError) as e:
            self.say(f"shared build cache not prepared ({e}); each episode builds its own")
            return
        state = "ready" if warmed.ok and warmed.pch else f"not usable ({warmed.message.strip()[:200]})"
        self.say(f"shared build cache {state}: {warmed.root} ({warmed.seconds:.0f} s)")

    def episode(self, task: Any) -> None:
        from cuda_agent.agent.episode import run_episode
        from cuda_agent.agent.llm import OpenAIClient
        from cuda_agent.agent.printer import ProgressPrinter
        from cuda_agent.agent.trajectory import load_trajectory

        folder = self.args.runs_dir / task.name
        trajectory = folder / "trajectory.jsonl"
        if self.server_gone or self.cancel.is_set():
            why = self.server_gone or "the run was cancelled"
            self.rows[task.name] = {"task": task.name, "exit": "not_run", "exit_message": why, "turns": 0,
                                    "usage": {}, "best": "-", "judge": {}, "reward": None}  # fmt: skip
            return
        if self.args.resume and trajectory.is_file() and self.resumed(task, folder, trajectory):
            return
        workspace = folder / "workspace"
        if workspace.is_dir() and any(workspace.iterdir()) and not (self.args.force or self.args.resume):
            raise FileExistsError(f"{workspace} is not empty; pass --force to replace it or --resume to continue")
        quiet = self.args.quiet
        client = OpenAIClient(self.config.model, cancel=self.cancel,
                              on_retry=None if quiet else self.retry_printer(task.name))  # fmt: skip
        printer = ProgressPrinter(task.name, self.say, self.show_sandbox, judging=not self.args.no_judge)
        result = run_episode(
            task,
            workspace,
            self.config,
            client=client,
            judge=self.judge,
            trajectory_path=trajectory,
            observer=None if quiet else printer,
            cancel=self.cancel,
            overwrite=self.args.force or self.args.resume,
        )
        self.finish(task.name, result.summary(), load_trajectory(trajectory))
        if result.exit_status == "model_error":
            self.recheck_server(result.exit_message)

    def resumed(self, task: Any, folder: Path, trajectory: Path) -> bool:
        """--resume: True when the saved episode stands (judged now if it never was); False to run it again."""
        from cuda_agent.agent.trajectory import load_trajectory, rewrite_record

        record = load_trajectory(trajectory)
        exit_status = (record.get("exit") or {}).get("status")
        if record.get("state") != "finished" or exit_status in ("cancelled", "interrupted"):
            self.say(f"[{task.name}] was {exit_status or record.get('state')}; running it again (--resume)")
            return False
        judged = (record.get("judge") or {}).get("status")
        workspace = folder / "workspace"
        if judged in UNJUDGED and not self.args.no_judge and workspace.is_dir():
            self.say(f"[{task.name}] finished but never judged ({judged}); judging its workspace (--resume)")
            outcome = self.judge(workspace, task)
            record.update(judge=outcome.to_dict(), reward=outcome.reward)
            rewrite_record(trajectory, record)
            reward = "-" if outcome.reward is None else f"{outcome.reward:+d}"
            self.say(f"[{task.name}] verdict: {outcome.status}, reward {reward}: {outcome.reason}")
        else:
            self.say(f"[{task.name}] already finished; skipped (--resume)")
        self.finish(task.name, summary_from_record(task.name, record, folder), record)
        return True

    def recheck_server(self, error: str) -> None:
        """After a model error: if the server itself is gone, stop the batch instead of burning every task."""
        from cuda_agent.agent.llm import ServerUnusable, check_server

        with self._server_lock:
            if self.server_gone:
                return
            try:
                check_server(self.config.model)
            except ServerUnusable as e:
                self.server_gone = f"the model server stopped answering ({e})"
                self.say(f"error: {self.server_gone}; stopping the episodes in flight")
                self.cancel.set()

    def retry_printer(self, name: str) -> Callable[[int, float, Any], None]:
        def show(attempt: int, delay: float, error: Any) -> None:
            self.say(f"[{name}] model request failed ({error}); retry {attempt}/{self.config.model.max_retries} "
                     f"in {delay:.1f} s")  # fmt: skip

        return show

    def finish(self, name: str, summary: dict[str, Any], record: dict[str, Any]) -> None:
        from cuda_agent.agent.trajectory import dumps

        self.rows[name] = summary
        if self.args.json:
            with self.print_lock:
                print(dumps(summary), flush=True)
        if self.args.out:
            with self.out_lock:
                self.args.out.parent.mkdir(parents=True, exist_ok=True)
                with open(self.args.out, "a", encoding="utf-8") as f:
                    f.write(dumps(record) + "\n")

    def say(self, line: str) -> None:
        with self.print_lock:
            print(line, file=sys.stderr, flush=True)


def summary_from_record(name: str, record: dict[str, Any], folder: Path) -> dict[str, Any]:
    judge = record.get("judge") or {}
    return {
        "task": name,
        "exit": (record.get("exit") or {}).get("status", "?"),
        "exit_message": (record.get("exit") or {}).get("message", ""),
        "turns": len(record.get("turns") or []),
        "usage": record.get("usage") or {},
        "best": (record.get("progress") or {}).get("label", "-"),
        "judge": judge,
        "reward": record.get("reward"),
        "workspace": str(folder / "workspace"),
        "trajectory": str(folder / "trajectory.jsonl"),
        "wall_s": (record.get("timings") or {}).get("wall_s"),
    }


def print_table(rows: list[dict[str, Any]], stream: TextIO) -> None:
    headers = ("task", "exit", "turns", "tokens", "best (own checks)", "judge", "reward", "time")
    table = [headers]
    for row in rows:
        usage = row.get("usage") or {}
        reward = row.get("reward")
        wall = row.get("wall_s")
        table.append((
            str(row["task"]),
            str(row["exit"]),
            str(row.get("turns", 0)),
            f"{usage.get('total_tokens', 0):,}",
            str(row.get("best", "-")),
            str((row.get("judge") or {}).get("status", "-")),
            "-" if reward is None else f"{reward:+d}",
            "-" if wall is None else f"{wall:.0f}s",
        ))  # fmt: skip
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    rewards = [r["reward"] for r in rows if r.get("reward") is not None]
    if rewards:
        lines.append(f"mean reward {sum(rewards) / len(rewards):+.2f} over {len(rewards)} judged episode(s)")
    print("\n".join(lines), file=stream, flush=True)
