"""`cuda-agent eval`'s running side: agent episodes on benchmark tasks, judged, recorded, resumable.

A run is a folder (RUN/). Each unit of work is one (task, episode) pair with a stable key
(`level1/19_ReLU#0`). A unit is done when its EvalRecord is in RUN/records.jsonl (appended and fsynced
one line at a time, eval/records.py); before that, its verdict is saved to RUN/verdicts/ and its final
submission to RUN/submissions/ (bundle.py). A killed run restarted with the same command continues where
it stopped, unit by unit:

- recorded                                   -> skipped;
- verdict saved but not recorded             -> recorded from the saved verdict (not judged again);
- episode finished, verdict in its trajectory -> saved and recorded (not judged again);
- episode finished but never judged           -> its workspace is judged (once);
- episode cut off (killed, Ctrl-C)            -> run again from a fresh workspace.

With a remote judge every judgment's idempotency key names the run, the unit and the content, so even
a judgment submitted just before the kill is found again rather than judged twice.
"""

from __future__ import annotations

import hashlib
import secrets
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from cuda_agent.eval import bundle
from cuda_agent.eval.judges import Backend, EpisodeJudge, leased
from cuda_agent.eval.kernelbench import BenchTask
from cuda_agent.eval.records import EvalRecord, append_record, read_records

UNJUDGED = ("unavailable", "judge_error")


class RunMismatch(ValueError):
    """RUN/ was made by a different command (other tasks, model or mode): resuming would mix runs."""


@dataclass(frozen=True)
class Unit:
    """One (task, episode) of a run."""

    task: BenchTask
    episode: int

    @property
    def key(self) -> str:
        return f"{self.task.task_id}#{self.episode}"

    def judgment_key(self, run_id: str) -> str:
        """The prefix of this unit's judgment keys (the remote backend appends the content digest)."""
        return "eval-" + hashlib.sha256(f"{run_id}|{self.key}".encode()).hexdigest()[:24]


def plan(tasks: list[BenchTask], episodes: int) -> list[Unit]:
    return [Unit(t, k) for t in tasks for k in range(episodes)]


# ---- the run folder ---------------------------------------------------------------------------------------


def open_run(run_dir: Path, settings: dict[str, Any]) -> dict[str, Any]:
    """Create RUN/run.json, or check that an existing one was made by the same settings; returns it.

    `settings` holds what must not change across a resume (mode, tasks, episodes, model); the run id
    made here is what the remote judgment keys are derived from."""
    path = Path(run_dir) / "run.json"
    if path.exists():
        existing = bundle.read_json(path)
        if existing.get("format") != bundle.RUN_FORMAT:
            raise RunMismatch(f"{path} is not an eval run ({existing.get('format')!r})")
        differs = [k for k, v in settings.items() if existing.get("settings", {}).get(k) != v]
        if differs:
            raise RunMismatch(f"{run_dir} was made with other settings ({', '.join(sorted(differs))} differ); "
                              "use another --out, or the same options to resume it")  # fmt: skip
        return existing
    data = {"format": bundle.RUN_FORMAT, "run_id": secrets.token_hex(8), "created": time.time(), "settings": settings}
    bundle.write_json(path, data)
    return data


class RunBook:
    """The run's records, verdicts and submissions on disk; `finalize` makes a unit done, exactly once."""

    def __init__(self, run_dir: Path) -> None:
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / "records.jsonl"
        self._lock = threading.Lock()
        self.records: dict[str, EvalRecord] = {}
        for record in read_records(self.path):
            self.records.setdefault(f"{record.task_id}#{record.episode}", record)

    def has(self, key: str) -> bool:
        with self._lock:
            return key in self.records

    def saved_verdict(self, unit: Unit) -> dict[str, Any] | None:
        path = self.run_dir / bundle.episode_dir("verdicts", unit.task.slug, unit.episode)
        if not path.is_file():
            return None
        try:
            return bundle.read_json(path)
        except (OSError, ValueError):  # torn by a kill: write_json is atomic, so this is someone's edit
            return None

    def finalize(self, unit: Unit, outcome: dict[str, Any], submission: Path | None) -> EvalRecord:
        """Save the verdict and the submission (when given), then append the record (fsynced)."""
        task = unit.task
        verdict_rel = bundle.episode_dir("verdicts", task.slug, unit.episode)
        if submission is not None and Path(submission).is_dir():
            meta = {"task_id": task.task_id, "level": task.level, "problem": task.problem, "name": task.name,
                    "episode": unit.episode, "source": str(task.path)}  # fmt: skip
            bundle.save_submission(submission, self.run_dir / bundle.episode_dir("submissions", task.slug,
                                   unit.episode), task.task.source, meta)  # fmt: skip
        bundle.write_json(self.run_dir / verdict_rel, {"key": unit.key, **outcome})
        record = EvalRecord.from_verdict(outcome["verdict"], task_id=task.task_id, level=task.level,
                                         problem=task.problem, name=task.name, episode=unit.episode,
                                         verdict_path=verdict_rel,
                                         gpu_wait_s=(outcome.get("gpu_lease") or {}).get("waited_s"))  # fmt: skip
        with self._lock:
            if unit.key in self.records:  # two threads never own one unit; kept as a guard
                return self.records[unit.key]
            append_record(self.path, record)
            self.records[unit.key] = record
        return record


# ---- progress ---------------------------------------------------------------------------------------------


class Progress:
    """Counts, rate and ETA on stderr, one line per finished unit."""

    def __init__(self, total: int, already: int, stream: TextIO = sys.stderr) -> None:
        self.total, self.done, self.new = total, already, 0
        self.start = time.monotonic()
        self.stream = stream
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        with self.lock:
            print(text, file=self.stream, flush=True)

    def finished(self, label: str, record: EvalRecord | None, note: str = "") -> None:
        with self.lock:
            self.done += 1 if record is not None else 0
            self.new += 1
            elapsed = time.monotonic() - self.start
            rate = self.new / elapsed if elapsed > 0 else 0.0
            left = self.total - self.done
            eta = _duration(left / rate) if rate > 0 and left else ("-" if left else "0 s")
            if record is None:
                what = f"not recorded: {note}"
            else:
                what = f"{record.status} {record.reward:+d}"
                if record.speedup_vs_compile is not None:
                    what += f" {record.speedup_vs_eager:.2f}x eager {record.speedup_vs_compile:.2f}x compile"
            print(f"[{self.done}/{self.total}] {rate * 3600:.0f}/h ETA {eta}  {label}: {what}",
                  file=self.stream, flush=True)  # fmt: skip


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


# ---- agent episodes ---------------------------------------------------------------------------------------


class AgentRunner:
    """Runs every unit not yet recorded, `concurrency` episodes at once, judging through `backend`."""

    def __init__(self, run_dir: Path, run_id: str, units: list[Unit], backend: Backend, config: Any, *,
                 concurrency: int = 1, verbose: bool = False, say: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.run_dir = Path(run_dir)
        self.run_id = run_id
        self.units = units
        self.backend = leased(backend)  # final judgments hold their GPU alone: -j N is safe on one GPU
        self.config = config
        self.concurrency = max(1, concurrency)
        self.verbose = verbose
        self.book = RunBook(run_dir)
        self.cancel = threading.Event()
        self.server_gone: str | None = None
        self._server_lock = threading.Lock()
        self.unfinished: dict[str, str] = {}  # key -> why it has no record yet
        self.progress = Progress(len(units), sum(1 for u in units if self.book.has(u.key)))
        self.say = say or self.progress.line

    def run(self) -> int:
        todo = [u for u in self.units if not self.book.has(u.key)]
        skipped = len(self.units) - len(todo)
        self.say(f"{len(self.units)} episode(s) planned, {skipped} already recorded, {len(todo)} to run, "
                 f"{min(self.concurrency, max(1, len(todo)))} at a time; judge: {self.backend.name}")  # fmt: skip
        if not todo:
            return 0
        pool = ThreadPoolExecutor(self.concurrency, thread_name_prefix="eval-episode")
        futures: dict[Future, Unit] = {pool.submit(self.unit, u): u for u in todo}
        pending = set(futures)
        try:
            while pending:
                _, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
        except KeyboardInterrupt:
            self.say("interrupted: stopping the episodes; the same command resumes the run")
            self.cancel.set()
            wait(pending)
        finally:
            pool.shutdown(wait=True)
        for future, unit in futures.items():
            error = future.exception()
            if error is not None:
                self.unfinished[unit.key] = f"crashed: {type(error).__name__}: {error}"
                self.progress.finished(unit.key, None, self.unfinished[unit.key])
        if self.server_gone:
            self.say(f"stopped: {self.server_gone}; run the same command again to resume")
        return 1 if self.unfinished or self.cancel.is_set() else 0

    def unit(self, unit: Unit) -> None:
        if self.cancel.is_set():
            self.unfinished[unit.key] = self.server_gone or "the run was stopped before it started"
            return
        saved = self.book.saved_verdict(unit)
        folder = self.run_dir / bundle.episode_dir("episodes", unit.task.slug, unit.episode)
        workspace, trajectory = folder / "workspace", folder / "trajectory.jsonl"
        if saved is not None and saved.get("verdict"):
            self._done(unit, saved, workspace, "verdict saved before the stop; recorded (not judged again)")
            return
        outcome = self._resume(unit, workspace, trajectory)
        if outcome is None:
            outcome = self._episode(unit, workspace, trajectory)
        if outcome is None:
            return
        if outcome.get("verdict"):
            self._done(unit, outcome, workspace)
        else:
            self.unfinished[unit.key] = f"{outcome.get('status')}: {outcome.get('reason', '')}"
            self.progress.finished(unit.key, None, self.unfinished[unit.key])

    def _done(self, unit: Unit, outcome: dict[str, Any], workspace: Path, note: str = "") -> None:
        record = self.book.finalize(unit, outcome, workspace if workspace.is_dir() else None)
        if note:
            self.say(f"{unit.key}: {note}")
        self.progress.finished(unit.key, record)

    def _resume(self, unit: Unit, workspace: Path, trajectory: Path) -> dict[str, Any] | None:
        """The outcome of an episode that already finished (judging it if it never was), else None."""
        from cuda_agent.agent.trajectory import load_trajectory

        if not trajectory.is_file():
            return None
        try:
            record = load_trajectory(trajectory)
        except (OSError, ValueError):
            return None
        exit_status = (record.get("exit") or {}).get("status")
        if record.get("state") != "finished" or exit_status in ("cancelled", "interrupted"):
            where = "while judging" if exit_status and record.get("state") == "running" else f"({exit_status or 'running'})"
            self.say(f"{unit.key}: was cut off {where}; running it again")
            return None
        judged = record.get("judge") or {}
        if judged.get("verdict"):
            self.say(f"{unit.key}: finished and judged before the stop; recorded (not judged again)")
            return judged
        if judged.get("status") in UNJUDGED and workspace.is_dir():
            self.say(f"{unit.key}: finished but never judged ({judged.get('status')}); judging its workspace")
            outcome = self.backend.judge(workspace, unit.task.task, unit.judgment_key(self.run_id))
            from cuda_agent.agent.trajectory import rewrite_record

            record.update(judge=outcome, reward=outcome.get("reward"))
            rewrite_record(trajectory, record)
            return outcome
        return None  # not judged for a reason of its own (the model failed at once): run it again

    def _episode(self, unit: Unit, workspace: Path, trajectory: Path) -> dict[str, Any] | None:
        from cuda_agent.agent.episode import run_episode
        from cuda_agent.agent.llm import OpenAIClient
        from cuda_agent.agent.printer import ProgressPrinter

        if self.cancel.is_set():
            self.unfinished[unit.key] = self.server_gone or "the run was stopped"
            return None
        judge = EpisodeJudge(self.backend, unit.judgment_key(self.run_id))
        client = OpenAIClient(self.config.model, cancel=self.cancel)
        observer = ProgressPrinter(unit.key, self.say, lambda p: None) if self.verbose else None
        self.say(f"{unit.key}: episode started")
        result = run_episode(unit.task.task, workspace, self.config, client=client, judge=judge,
                             trajectory_path=trajectory, observer=observer, cancel=self.cancel,
                             overwrite=True)  # fmt: skip
        if result.exit_status == "model_error":
            self._recheck_server(result.exit_message)
        if result.exit_status == "cancelled":
            self.unfinished[unit.key] = "cancelled"
            return None
        return judge.outcome or result.outcome.to_dict()

    def _recheck_server(self, error: str) -> None:
        from cuda_agent.agent.llm import ServerUnusable, check_server

        with self._server_lock:
            if self.server_gone:
                return
            try:
                check_server(self.config.model)
            except ServerUnusable as exc:
                self.server_gone = f"the model server stopped answering ({exc})"
                self.say(f"error: {self.server_gone}; stopping the episodes in flight")
                self.cancel.set()


# ---- the end of a run -----------------------------------------------------------------------------------


def results_table(records: list[EvalRecord], planned: list[tuple[str, int]] | None = None) -> str:
    """Per task: episodes recorded, how many passed, the best reward and speedups (best of K), and the
    first episode's status (what pass@1 counts); then one line per level, and why any cell reads n/a."""
    from cuda_agent.eval.metrics import UNMEASURED, passed_count

    by_task: dict[str, list[EvalRecord]] = {}
    for record in sorted(records, key=lambda r: (r.level, r.problem, r.task_id, r.episode)):
        by_task.setdefault(record.task_id, []).append(record)
    headers = ("task", "episodes", "passed", "first", "best reward", "best vs eager", "best vs compile")
    rows = [headers]
    for task_id, rs in by_task.items():
        ok = [r for r in rs if r.passed]
        best = max(rs, key=lambda r: (r.reward, r.speedup_vs_compile or 0.0))
        rows.append((task_id, str(len(rs)), passed_count(rs), rs[0].status, f"{best.reward:+d}",
                     _x(max((r.speedup_vs_eager for r in ok if r.speedup_vs_eager), default=None)),
                     _x(max((r.speedup_vs_compile for r in ok if r.speedup_vs_compile), default=None))))  # fmt: skip
    for task_id, count in planned or []:
        if task_id not in by_task:
            rows.append((task_id, f"0/{count}", "-", "not recorded", "-", "-", "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    for level in sorted({r.level for r in records}):
        rs = [r for r in records if r.level == level]
        first = [r for r in rs if r.episode == 0]
        known = not any(r.status in UNMEASURED for r in rs)
        mean = f"{sum(r.reward for r in rs) / len(rs):+.2f}" if known else "n/a"
        lines.append(f"level {level}: {len({r.task_id for r in rs})} task(s), {len(rs)} record(s), "
                     f"first episode passed {passed_count(first)}, mean reward {mean}")  # fmt: skip
    lines += [f"n/a: {n} episode(s) {why}" for why, n in _unmeasured(records)]
    return "\n".join(lines)


def _unmeasured(records: list[EvalRecord]) -> list[tuple[str, int]]:
    """(why, how many) for each unmeasured status among `records` (metrics.UNMEASURED)."""
    from cuda_agent.eval.metrics import UNMEASURED

    counts = [(why, sum(r.status == status for r in records)) for status, why in UNMEASURED.items()]
    return [(why, n) for why, n in counts if n]


def _x(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def finish(run_dir: Path, *, level_sizes: dict[int, int] | None, bootstrap: int = 1000, seed: int = 0,
           compare: Path | None = None, expected: list[str] | None = None,
           say: Callable[[str], None] | None = None) -> dict[str, Any]:  # fmt: skip
    """Metrics and report of everything RUN/records.jsonl holds (H17b's compute_metrics/write_report);
    `expected` tasks without a record count as failures."""
    say = say or (lambda line: print(line, file=sys.stderr, flush=True))
    records = read_records(Path(run_dir) / "records.jsonl")
    bundle.write_manifest(run_dir)
    from cuda_agent.eval.metrics import compute_metrics

    metrics = compute_metrics(records, level_sizes=level_sizes, bootstrap=bootstrap, seed=seed,
                              expected_tasks=expected or None)  # fmt: skip
    say(metrics_table(metrics))
    if metrics.compile_modes:  # which torch.compile baseline "vs compile" means (eval --compile-mode)
        say("compile baseline: torch.compile " + ", ".join(f"{m} ({n} timed)" for m, n in metrics.compile_modes.items()))
    try:
        from cuda_agent.eval.report import write_report
    except ImportError as exc:  # the plots need matplotlib: keep the numbers, say what is missing
        path = bundle.write_json(Path(run_dir) / "metrics.json", metrics.to_dict())
        say(f"report not written ({exc}; pip install matplotlib, then `cuda-agent eval --report {run_dir}`)")
        return {"metrics": metrics, "paths": {"metrics.json": path}}
    paths = write_report(Path(run_dir), records, metrics, compare_run=compare)
    for name, path in sorted(paths.items()):
        say(f"{name}: {path}")
    return {"metrics": metrics, "paths": paths}


METRIC_COLUMNS = (("pass", "pass_rate"), ("> eager", "faster_than_eager"), ("> compile", "faster_than_compile"),
                  ("> compile +5%", "faster_than_compile_credited"), ("geo vs eager", "geomean_vs_eager_correct"),
                  ("geo vs compile", "geomean_vs_compile_correct"), ("mean reward", "mean_reward"))  # fmt: skip


def metrics_table(metrics: Any, selection: str = "pass@1") -> str:
    """Table 1 of the run, per level and overall (rates in %, geomeans as x, 95% bootstrap interval)."""
    rows = [("level", "tasks", *(label for label, _ in METRIC_COLUMNS))]
    for key, row in metrics.tables[selection].items():
        cells = []
        for _, column in METRIC_COLUMNS:
            m = row.metrics.get(column)
            if m is None or m.value is None:
                cells.append("n/a" if m is not None and m.unmeasured else "-")
            elif column.startswith("geomean"):
                cells.append(f"{m.value:.2f}x")
            elif column == "mean_reward":
                cells.append(f"{m.value:+.2f}")
            else:
                ci = f" [{m.low * 100:.0f}-{m.high * 100:.0f}]" if m.low is not None and m.high is not None else ""
                cells.append(f"{m.value * 100:.0f}%{ci}")
        rows.append((key, str(row.tasks), *cells))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return f"Table 1 ({selection}; rates with 95% bootstrap intervals)\n" + "\n".join(lines) + "\n" + \
        fast_p_table(metrics, selection)  # fmt: skip


def fast_p_table(metrics: Any, selection: str = "pass@1") -> str:
    """KernelBench's fast_p, overall: vs each baseline, all kernels and those at precision parity."""
    from cuda_agent.eval.metrics import BASELINES, FAST_P, fast_column

    overall = metrics.tables[selection]["overall"].metrics
    rows = [("fast_p, overall", *(f"p={p:g}" for p in FAST_P))]
    for baseline in BASELINES:
        for parity in (False, True):
            cells = [overall.get(fast_column(p, baseline, parity)) for p in FAST_P]
            label = f"  vs {baseline}" + (", precision parity" if parity else "")
            rows.append((label, *("n/a" if c is None or c.value is None else f"{c.value * 100:.0f}%" for c in cells)))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)
