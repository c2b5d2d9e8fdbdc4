"""`cuda-agent eval`: the agent on a KernelBench checkout, re-judging of submissions, rechecks, reports.

  eval --tasks KERNELBENCH_DIR --levels 1,2,3 --model M --base-url URL --out RUN/   agent episodes
  eval --submissions DIR [--tasks KERNELBENCH_DIR] --out RUN/                     judge existing folders
  eval --recheck RUN/                                                             judge a run again, diff
  eval --held-out-shapes RUN/                                                     correct kernels, other sizes
  eval --report RUN/ [--compare OTHER_RUN/]                                       metrics and report only

Runs are resumable: the same command continues a killed run (eval/runner.py says how), and nothing
that was judged is judged again. Judging goes through the warm local JudgeService, a judge server
(`--judge-url`, token in $CUDA_AGENT_JUDGE_TOKEN) or the CPU checks only (`--build-only`). Progress
(counts, rate, ETA) goes to stderr, the results table and the report paths at the end; `--json` prints
a JSON summary on stdout. RUN/ is the reproducibility bundle (eval/bundle.py).

Exit codes: 0 every planned unit has its record, 1 some have none (see the table; run again to
resume), 2 bad arguments, 3 the model server or the judge cannot be used here.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cuda_agent.commands.judge import add_compile_mode_argument
from cuda_agent.commands.solve import add_budget_arguments, add_model_arguments

EXIT_UNUSABLE = 3


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(
        name, help="evaluate the agent on KernelBench tasks, or judge existing submissions, with a report",
        description="Run the agent on a KernelBench checkout (levelN/<n>_<Name>.py), or judge existing "
        "submission folders, and write records, metrics, a report and a reproducibility bundle to RUN/.",
    )  # fmt: skip
    what = parser.add_argument_group("what to evaluate")
    what.add_argument("--tasks", type=Path, metavar="KERNELBENCH_DIR", help="a KernelBench checkout (or a folder "
                      "laid out like one: level1/19_ReLU.py ...)")  # fmt: skip
    what.add_argument("--levels", default=None, help="levels to run, e.g. 1,2,3 or 1-2 (default: all present)")
    what.add_argument("--limit", type=int, help="at most N tasks in all")
    what.add_argument("--tasks-per-level", type=int, help="the first N problems of each level")
    what.add_argument("--episodes-per-task", "-k", type=int, default=1, help="episodes per task (pass@1 and "
                      "best-of-K)")  # fmt: skip
    what.add_argument("--submissions", type=Path, metavar="DIR", help="judge the submission folders under DIR "
                      "instead of running the agent")  # fmt: skip
    what.add_argument("--recheck", type=Path, metavar="RUN", help="judge RUN's final submissions again and "
                      "print what changed (writes RUN/recheck.json)")  # fmt: skip
    what.add_argument("--batch", action="store_true", help="--recheck as one pipelined batch: faster, but builds "
                      "run beside timings (default: one judgment at a time, nothing beside it)")  # fmt: skip
    what.add_argument("--held-out-shapes", type=Path, metavar="RUN", help="judge RUN's correct kernels again at "
                      "held-out sizes of their tasks, correctness only (writes RUN/held_out.json; the report "
                      "shows the pass rate)")  # fmt: skip
    what.add_argument("--report", type=Path, metavar="RUN", help="only compute RUN's metrics and write its report")
    what.add_argument("--out", type=Path, metavar="RUN", help="the run folder (created, or resumed)")
    model = parser.add_argument_group("model (agent runs; also from CUDA_AGENT_* variables or --config)")
    add_model_arguments(model)
    add_budget_arguments(model)
    model.add_argument("--concurrency", "-j", type=int, default=1, help="episodes at once")
    model.add_argument("--isolation", choices=["auto", "bwrap", "unshare", "none"],
                       help="Bash sandbox mechanism (default auto)")  # fmt: skip
    model.add_argument("--cache-seed", dest="cache_seed_dir", help="judge cache folder episodes read (read-only)")
    model.add_argument("--no-cache-warm", action="store_true", help="do not prepare the shared build cache first")
    judge = parser.add_argument_group("judge")
    judge.add_argument("--judge-url", help="a `cuda-agent serve` server (token in $CUDA_AGENT_JUDGE_TOKEN)")
    judge.add_argument("--build-only", action="store_true", help="CPU checks only (task, static checks, build)")
    judge.add_argument("--workers", type=int, default=2, help="concurrent CPU checks / remote judgments")
    judge.add_argument("--gpus", type=int, default=1, help="local GPUs to judge on")
    judge.add_argument("--atol", type=float, default=1e-2)
    judge.add_argument("--rtol", type=float, default=1e-2)
    judge.add_argument("--no-timing", action="store_true", help="verify only; reward 1 when correct")
    add_compile_mode_argument(judge)
    judge.add_argument("--arch", help="CUDA architecture to build for (default: the visible GPU)")
    out = parser.add_argument_group("report")
    out.add_argument("--compare", type=Path, metavar="OTHER_RUN", help="put another run beside this one")
    out.add_argument("--bootstrap", type=int, default=1000, help="bootstrap resamples for the intervals")
    out.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    out.add_argument("--json", action="store_true", help="print a JSON summary on stdout")
    out.add_argument("--verbose", "-v", action="store_true", help="one line per agent turn and tool call")
    parser.set_defaults(handler=run)


def say(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> int:
    from cuda_agent.eval.runner import RunMismatch
    from cuda_agent.task import TaskError

    try:
        modes = [m for m in ("submissions", "recheck", "held_out_shapes", "report") if getattr(args, m)]
        if len(modes) > 1:
            first, second = (m.replace("_", "-") for m in modes[:2])
            raise ValueError(f"--{first} and --{second} are separate runs; give one")
        if args.judge_url and args.build_only:
            raise ValueError("--judge-url and --build-only both say where to judge; give one")
        if args.judge_url and args.compile_mode != "default":
            raise ValueError(f"--compile-mode {args.compile_mode} with --judge-url: the server judges in the mode it was "
                             f"started with (cuda-agent serve --compile-mode {args.compile_mode}); the report "
                             "names the mode its verdicts carry")  # fmt: skip
        if args.judge_url and not os.environ.get("CUDA_AGENT_JUDGE_TOKEN"):
            raise ValueError("--judge-url needs the judge server's token in $CUDA_AGENT_JUDGE_TOKEN")
        if args.recheck:
            return _recheck(args)
        if args.held_out_shapes:
            return _held_out(args)
        if args.report:
            return _report_only(args)
        if args.out is None:
            raise ValueError("--out RUN is required: the folder the run's records, bundle and report go to")
        if args.submissions:
            return _submissions(args)
        if args.tasks is None:
            raise ValueError("nothing to evaluate: pass --tasks KERNELBENCH_DIR (agent runs), --submissions DIR, "
                             "--recheck RUN or --report RUN")  # fmt: skip
        return _agent(args)
    except (ValueError, TaskError, RunMismatch, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


# ---- modes ----------------------------------------------------------------------------------------------


def _settings(args: argparse.Namespace) -> Any:
    from cuda_agent.eval.judges import JudgeSettings

    return JudgeSettings(atol=args.atol, rtol=args.rtol, timing=not args.no_timing, arch=args.arch,
                         compile_mode=args.compile_mode)  # fmt: skip


def _backend(args: argparse.Namespace, settings: Any) -> Any:
    from cuda_agent.eval.judges import make_backend

    devices = list(range(args.gpus)) if args.gpus > 1 else None
    return make_backend(settings, judge_url=args.judge_url, build_only=args.build_only, workers=args.workers,
                        devices=devices)  # fmt: skip


def _backend_label(args: argparse.Namespace) -> str:
    return f"remote {args.judge_url}" if args.judge_url else ("build-only" if args.build_only else "local")


def _agent(args: argparse.Namespace) -> int:
    from cuda_agent.agent.config import ConfigError, load_config
    from cuda_agent.agent.llm import ServerUnusable, check_server
    from cuda_agent.eval import bundle, kernelbench
    from cuda_agent.eval.runner import AgentRunner, open_run, plan

    levels = kernelbench.parse_levels(args.levels) if args.levels else None
    for flag in ("limit", "tasks_per_level", "episodes_per_task", "concurrency"):
        value = getattr(args, flag)
        if value is not None and value < 1:
            raise ValueError(f"--{flag.replace('_', '-')} must be at least 1")
    try:
        config = load_config(args.config, _overrides(args))
    except ConfigError as exc:
        raise ValueError(str(exc)) from exc
    if not config.model.name:
        raise ValueError("no model name: pass --model, set CUDA_AGENT_MODEL or [model] name in --config")
    if not config.model.base_url:
        raise ValueError("no model server: pass --base-url (e.g. http://localhost:8000/v1), or set "
                         "CUDA_AGENT_BASE_URL or [model] base_url in --config")  # fmt: skip
    problems: list[tuple[str, str]] = []
    tasks = kernelbench.discover(args.tasks, levels, tasks_per_level=args.tasks_per_level, limit=args.limit,
                                 problems=problems)  # fmt: skip
    for where, why in problems:
        say(f"skipped task {where}: {why}")
    if not tasks:
        raise ValueError(f"no task of {args.tasks} could be loaded")
    settings = _settings(args)
    run_settings = {"mode": "agent", "tasks": str(Path(args.tasks).resolve()), "levels": levels,
                    "limit": args.limit, "tasks_per_level": args.tasks_per_level,
                    "episodes_per_task": args.episodes_per_task, "model": config.model.name,
                    "judge": settings.to_dict()}  # fmt: skip
    meta = open_run(args.out, run_settings)
    sizes = kernelbench.level_sizes(args.tasks, sorted({t.level for t in tasks}))
    units = plan(tasks, args.episodes_per_task)
    _note_run(args.out, meta, sizes, _backend_label(args), _planned(units))
    say(f"{len(tasks)} task(s) of {args.tasks} x {args.episodes_per_task} episode(s); model {config.model.name} at "
        f"{config.model.base_url}; run folder {args.out}")  # fmt: skip
    try:
        say(f"model server: {check_server(config.model)}")
    except ServerUnusable as exc:
        say(f"error: {exc}")
        return EXIT_UNUSABLE
    backend = _backend(args, settings)
    skipped = _why_no_cache_warm(args, config)
    if skipped:
        say(f"shared build cache: not prepared ({skipped})")
    else:
        _warm_cache()
    try:
        runner = AgentRunner(args.out, meta["run_id"], units, backend, config, concurrency=args.concurrency,
                             verbose=args.verbose)  # fmt: skip
        code = runner.run()
    finally:
        backend.close()
    bundle.write_environment(args.out, settings.to_dict(), _backend_label(args))
    planned = _planned(units)
    return _end(args, args.out, sizes, planned, runner.unfinished, code, _unavailable(backend))


def _submissions(args: argparse.Namespace) -> int:
    from cuda_agent.eval import bundle, kernelbench
    from cuda_agent.eval.runner import open_run
    from cuda_agent.eval.submissions import judge_submissions, match, submission_folders, units_of

    root = Path(args.submissions)
    if not root.is_dir():
        raise ValueError(f"--submissions {root} is not a folder")
    folders = submission_folders(root)
    if not folders:
        raise ValueError(f"{root} holds no submission folder (a folder with model_new.py and kernels/)")
    problems: list[tuple[str, str]] = []
    found = match(folders, root, args.tasks, problems)
    for where, why in problems:
        say(f"not judged: {where}: {why}")
    if not found:
        raise ValueError(f"none of the {len(folders)} submission folder(s) under {root} could be matched to a task")
    settings = _settings(args)
    run_settings = {"mode": "submissions", "submissions": str(root.resolve()),
                    "tasks": str(Path(args.tasks).resolve()) if args.tasks else None, "judge": settings.to_dict()}  # fmt: skip
    meta = open_run(args.out, run_settings)
    levels = sorted({f.task.level for f in found})
    sizes = kernelbench.level_sizes(args.tasks, levels) if args.tasks else None
    units = units_of(found)
    _note_run(args.out, meta, sizes, _backend_label(args), _planned([u for u, _ in units]), unmatched=problems)
    backend = _backend(args, settings)
    try:
        unfinished = judge_submissions(args.out, meta["run_id"], units, backend, say)
    except KeyboardInterrupt:
        say("interrupted; the same command resumes the run")
        return 1
    finally:
        backend.close()
    bundle.write_environment(args.out, settings.to_dict(), _backend_label(args))
    planned = _planned([u for u, _ in units])
    code = 1 if unfinished or problems else 0
    return _end(args, args.out, sizes, planned, unfinished, code, _unavailable(backend))


def _run_settings(run_dir: Path, args: argparse.Namespace) -> Any:
    """The judge settings a finished run recorded (RUN/run.json), else the command's: a run is judged again
    as it was judged."""
    from cuda_agent.eval import bundle
    from cuda_agent.eval.judges import JudgeSettings

    if not (run_dir / "run.json").is_file():
        raise ValueError(f"{run_dir} is not an eval run (no run.json)")
    stored = bundle.read_json(run_dir / "run.json").get("settings", {}).get("judge", {})
    if not stored:
        return _settings(args)
    return JudgeSettings(**{k: v for k, v in stored.items() if k in JudgeSettings.__dataclass_fields__})


def _recheck(args: argparse.Namespace) -> int:
    from cuda_agent.eval.recheck import recheck, recheck_table

    run_dir = Path(args.recheck)
    backend = _backend(args, _run_settings(run_dir, args))
    result = _on_backend(backend, lambda: recheck(run_dir, backend, say, batch=args.batch),
                         "recheck on a GPU machine, or pass --judge-url or --build-only")  # fmt: skip
    if result is None:
        return EXIT_UNUSABLE
    _publish(args, recheck_table(result), f"recheck written to {run_dir / 'recheck.json'}", result["summary"])
    if _unavailable(backend):
        say(f"error: the judge cannot run here: {_unavailable(backend)} (try --build-only or --judge-url)")
        return EXIT_UNUSABLE
    return 0 if result["summary"]["agree"] == result["summary"]["rechecked"] else 1


def _held_out(args: argparse.Namespace) -> int:
    import dataclasses

    from cuda_agent.eval.held_out import RESULT, held_out, held_out_table

    run_dir = Path(args.held_out_shapes)
    if args.build_only:
        raise ValueError("--held-out-shapes verifies kernels on a GPU: --build-only cannot tell a right answer "
                         "from a wrong one (run it on a GPU machine, or pass --judge-url)")  # fmt: skip
    settings = _run_settings(run_dir, args)
    backend = _backend(args, dataclasses.replace(settings, timing=False))  # correctness only
    result = _on_backend(backend, lambda: held_out(run_dir, backend, say),
                         "run --held-out-shapes on a GPU machine, or pass --judge-url")  # fmt: skip
    if result is None:
        return EXIT_UNUSABLE
    _publish(args, held_out_table(result),
             f"held-out shapes written to {run_dir / RESULT}; `cuda-agent eval --report {run_dir}` shows them",
             result["summary"])  # fmt: skip
    return 0


def _on_backend(backend: Any, work: Callable[[], dict], where_instead: str) -> dict | None:
    """`work()` on a judge backend, closed afterwards; None (said in one line) where the judge cannot run
    here, with `where_instead` as the way out."""
    from cuda_agent.eval.recheck import JudgeUnavailableHere

    try:
        return work()
    except JudgeUnavailableHere as exc:
        say(f"error: the judge cannot run here: {exc} ({where_instead})")
        return None
    finally:
        backend.close()


def _publish(args: argparse.Namespace, table: str, written: str, summary: dict) -> None:
    """A finished pass's table (on stderr under --json), where it was written, and its summary as JSON."""
    print(table, file=sys.stderr if args.json else sys.stdout, flush=True)
    say(written)
    if args.json:
        print(json.dumps(summary, sort_keys=True))


def _report_only(args: argparse.Namespace) -> int:
    from cuda_agent.eval import bundle
    from cuda_agent.eval.records import read_records
    from cuda_agent.eval.runner import finish, results_table

    run_dir = Path(args.report)
    if not (run_dir / "records.jsonl").is_file():
        raise ValueError(f"{run_dir} has no records.jsonl: not an eval run")
    meta = bundle.read_json(run_dir / "run.json") if (run_dir / "run.json").is_file() else {}
    sizes = {int(k): v for k, v in (meta.get("level_sizes") or {}).items()} or None
    planned = {k: int(v) for k, v in (meta.get("planned") or {}).items()}
    print(results_table(read_records(run_dir / "records.jsonl"), list(planned.items())), flush=True)
    done = finish(run_dir, level_sizes=sizes, bootstrap=args.bootstrap, seed=args.seed, compare=args.compare,
                  expected=list(planned), say=say)  # fmt: skip
    if args.json:
        print(json.dumps(_summary(run_dir, done, {}, []), sort_keys=True, default=str))
    return 0


# ---- shared ---------------------------------------------------------------------------------------------


def _overrides(args: argparse.Namespace) -> dict[str, dict[str, Any]]:
    return {
        "model": {"name": args.model, "base_url": args.base_url, "api_key": args.api_key,
                  "temperature": args.temperature, "max_tokens": args.max_tokens},
        "agent": {"max_turns": args.max_turns, "context_tokens": args.context_tokens,
                  "max_total_tokens": args.max_total_tokens, "time_limit_s": args.time_limit_s,
                  "cache_seed_dir": args.cache_seed_dir},
        "sandbox": {"isolation": args.isolation},
    }  # fmt: skip


def _note_run(run_dir: Path, meta: dict[str, Any], sizes: dict[int, int] | None, backend: str,
              planned: list[tuple[str, int]], unmatched: list[tuple[str, str]] | None = None) -> None:  # fmt: skip
    """What may differ between invocations of one run (level sizes, judge backend, unmatched folders),
    and the plan (tasks and episodes), which `--report` counts missing records against."""
    from cuda_agent.eval import bundle

    meta = {**meta, "level_sizes": sizes, "backend": backend, "planned": dict(planned)}
    if unmatched is not None:
        meta["unmatched"] = [{"folder": f, "reason": r} for f, r in unmatched]
    bundle.write_json(Path(run_dir) / "run.json", meta)


def _planned(units: list[Any]) -> list[tuple[str, int]]:
    counts: dict[str, int] = {}
    for unit in units:
        counts[unit.task.task_id] = counts.get(unit.task.task_id, 0) + 1
    return list(counts.items())


def _unavailable(backend: Any) -> str | None:
    return getattr(backend, "_unavailable", None)


def _why_no_cache_warm(args: argparse.Namespace, config: Any) -> str | None:
    """Why this run does not prepare the shared build cache before its episodes, or None when it does."""
    later = "episodes build their own precompiled header at their first compile; `cuda-agent cache warm` prepares it"
    if config.cache_seed_dir:
        return f"--cache-seed: the episodes read {config.cache_seed_dir} instead"
    for flag in ("no_cache_warm", "build_only", "judge_url"):
        if getattr(args, flag):
            return f"--{flag.replace('_', '-')} given; {later}"
    return None


def _warm_cache() -> None:
    from cuda_agent.eval.judges import judge_name

    say("shared build cache: checking (the first time on a machine it compiles the PCH, about a minute)")
    try:
        warmed = judge_name("warm_shared", "trusted.cache", "cache")()
    except Exception as exc:  # the episodes then build their own; not a reason to stop the run
        say(f"shared build cache not prepared ({exc}); each episode builds its own")
        return
    state = "ready" if warmed.ok and warmed.pch else f"not usable ({warmed.message.strip()[:200]})"
    say(f"shared build cache {state}: {warmed.root} ({warmed.seconds:.0f} s)")


def _end(args: argparse.Namespace, run_dir: Path, sizes: dict[int, int] | None, planned: list[tuple[str, int]],
         unfinished: dict[str, str], code: int, unavailable: str | None) -> int:  # fmt: skip
    from cuda_agent.eval.records import read_records
    from cuda_agent.eval.runner import finish, results_table

    records = read_records(Path(run_dir) / "records.jsonl")
    print(results_table(records, planned), file=sys.stderr if args.json else sys.stdout, flush=True)
    for key, why in sorted(unfinished.items()):
        say(f"no record for {key}: {why}")
    done = finish(run_dir, level_sizes=sizes, bootstrap=args.bootstrap, seed=args.seed, compare=args.compare,
                  expected=[t for t, _ in planned], say=say)  # fmt: skip
    if args.json:
        print(json.dumps(_summary(run_dir, done, unfinished, planned), sort_keys=True, default=str))
    if unavailable and unfinished:
        say(f"error: the judge cannot run here: {unavailable}; pass --build-only (CPU checks) or --judge-url, "
            "then run the same command again to judge the finished episodes")  # fmt: skip
        return EXIT_UNUSABLE
    if unfinished:
        say(f"{len(unfinished)} unit(s) have no record yet: run the same command again to resume")
    return code


def _summary(run_dir: Path, done: dict[str, Any], unfinished: dict[str, str],
             planned: list[tuple[str, int]]) -> dict[str, Any]:  # fmt: skip
    from cuda_agent.eval.records import read_records

    metrics = done.get("metrics")
    return {"run": str(run_dir), "records": len(read_records(Path(run_dir) / "records.jsonl")),
            "planned": sum(n for _, n in planned), "unfinished": unfinished,
            "metrics": metrics.to_dict() if hasattr(metrics, "to_dict") else None,
            "report": {k: str(v) for k, v in (done.get("paths") or {}).items()}}  # fmt: skip
