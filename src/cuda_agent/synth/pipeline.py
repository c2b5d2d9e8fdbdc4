"""The synthesis pipeline: compose -> static filter -> decontaminate -> execute -> journal -> parquet.

Composition and the static stages run in this process (they are cheap); execution runs in isolated
workers. Every finished task, accepted or rejected, is appended to `journal.jsonl` (flushed and fsynced)
as soon as it is known, and the parquet is written from the journal, so an interrupted run loses no
accepted task: run it again with the same output folder and it continues where it stopped.

Composition aims at the requested mix *of accepted tasks*: each new task goes to the bucket whose
accepted-plus-expected count is furthest below its share (expected = in flight times that bucket's
acceptance rate so far), and buckets stop once their quota of accepted tasks is met. A time-limited run
therefore keeps the mix at any moment, not only at the end. A run stops at exactly the requested count:
results of tasks still in flight when a bucket's quota is met are journaled as `surplus` (kept, never
exported), and no run waits for them once every quota is met.
"""

from __future__ import annotations

import json
import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from cuda_agent.synth import DEFAULT_MIX
from cuda_agent.synth.catalog import Catalog, CrawlOptions, load_catalog
from cuda_agent.synth.compose import ComposeConfig, ComposeError, Composer
from cuda_agent.synth.dataset import accepted_records, read_journal, write_parquet
from cuda_agent.synth.decontam import BenchmarkIndex, DecontamConfig
from cuda_agent.synth.filters.execute import ExecConfig
from cuda_agent.synth.filters.static import StaticFilter
from cuda_agent.synth.llm import LLMComposer, LLMConfig
from cuda_agent.synth.render import RenderedTask, render

JOURNAL = "journal.jsonl"
PARQUET = "tasks.parquet"
SUMMARY = "summary.json"


@dataclass(frozen=True)
class PipelineConfig:
    """Everything a run needs. `execute=False` stops after the static stages (no processes, no device)."""

    out_dir: Path
    num_tasks: int = 6000
    mix: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_MIX))
    seed: int = 0
    workers: int = 4
    device: str = "cuda"
    cpu_only: bool = False
    execute: bool = True
    band_ms: tuple[float, float] = (1.0, 100.0)
    compile: bool = True
    task_timeout_s: float = 300.0
    max_minutes: float | None = None
    drain_s: float = 120.0
    memory_fraction: float | None = None
    benchmark_dir: Path | None = None
    decontam: DecontamConfig = field(default_factory=DecontamConfig)
    crawl: CrawlOptions = field(default_factory=CrawlOptions)
    compose: ComposeConfig | None = None
    llm: LLMConfig | None = None
    progress: bool = True
    cache_dir: Path | None = None
    max_stale: int = 300

    def exec_config(self) -> ExecConfig:
        if self.cpu_only:
            return ExecConfig(device="cpu", band_ms=None, compile=self.compile)
        return ExecConfig(device=self.device, band_ms=self.band_ms, compile=self.compile)

    def compose_config(self) -> ComposeConfig:
        if self.compose is not None:
            return self.compose
        if self.cpu_only or not self.execute:
            return ComposeConfig.for_cpu()
        return ComposeConfig(band_ms=self.band_ms)


def quotas(mix: dict[str, float], total: int) -> dict[str, int]:
    """Integer quotas per bucket summing to `total` (largest remainder)."""
    norm = sum(v for v in mix.values() if v > 0)
    raw = {b: total * v / norm for b, v in mix.items() if v > 0}
    q = {b: int(v) for b, v in raw.items()}
    for b in sorted(raw, key=lambda b: raw[b] - q[b], reverse=True)[: total - sum(q.values())]:
        q[b] += 1
    return q


@dataclass
class Summary:
    """Acceptance by stage and bucket, for the CLI and the benchmark."""

    requested: dict[str, int]
    mix: dict[str, float]
    accepted: Counter = field(default_factory=Counter)
    finished: Counter = field(default_factory=Counter)
    rejected: Counter = field(default_factory=Counter)  # (stage, reason) -> count
    stage_counts: Counter = field(default_factory=Counter)  # tasks that reached each stage
    skipped_stages: Counter = field(default_factory=Counter)  # stages not run (timing under --cpu-only)
    surplus: int = 0  # results that arrived after their bucket's quota was met
    benchmark: dict[str, Any] | None = None  # what decontamination used (path, tasks, digest)
    decontaminated: list[tuple[str, str]] = field(default_factory=list)
    started: float = field(default_factory=time.time)
    first_submit: float | None = None
    ended: float | None = None
    resumed: int = 0
    restarts: int = 0
    exhausted: dict[str, str] = field(default_factory=dict)

    @property
    def total_accepted(self) -> int:
        return sum(self.accepted.values())

    def elapsed(self) -> float:
        return (self.ended or time.time()) - self.started

    def filter_elapsed(self) -> float:
        return (self.ended or time.time()) - (self.first_submit or self.started)

    def to_json(self) -> dict[str, Any]:
        total = max(1, self.total_accepted)
        norm = sum(self.mix.values()) or 1.0
        new = self.total_accepted - self.resumed  # a resumed run's rate counts only what it made itself
        return {
            "accepted": self.total_accepted,
            "accepted_by_bucket": dict(self.accepted),
            "requested_by_bucket": self.requested,
            "requested_mix": {b: self.mix[b] / norm for b in self.mix},
            "accepted_mix": {b: self.accepted.get(b, 0) / total for b in self.mix},
            "rejected": {f"{s}:{r}": n for (s, r), n in sorted(self.rejected.items())},
            "reached_stage": dict(self.stage_counts),
            "skipped_stage": dict(self.skipped_stages),
            "surplus": self.surplus,
            "benchmark": self.benchmark,
            "decontaminated": self.decontaminated,
            "elapsed_s": round(self.elapsed(), 1),
            "filter_elapsed_s": round(self.filter_elapsed(), 1),
            "accepted_per_hour": round(new * 3600 / max(1e-9, self.filter_elapsed()), 1),
            "resumed_accepted": self.resumed,
            "worker_restarts": self.restarts,
            "exhausted_buckets": self.exhausted,
        }

    def format(self) -> str:
        d = self.to_json()
        resumed = f", {self.resumed} resumed from the journal" if self.resumed else ""
        lines = [
            f"accepted {d['accepted']} tasks in {d['elapsed_s']} s{resumed} "
            f"({d['accepted_per_hour']} new per hour through the filter stage, {d['filter_elapsed_s']} s)",
            "acceptance by stage (tasks reaching the stage -> rejected there):",
        ]
        for stage, n in self.stage_counts.items():
            rej = {r: c for (s, r), c in self.rejected.items() if s == stage}
            lines.append(
                f"  {stage:<18} {n:>7}   rejected {sum(rej.values()):>6}  {dict(rej) if rej else ''}"
            )
        for stage, n in self.skipped_stages.items():
            if stage not in self.stage_counts:
                lines.append(f"  {stage:<18} {'-':>7}   skipped on {n} task(s) (not run, not passed)")
        lines.append(f"  {'accepted':<18} {d['accepted']:>7}")
        lines.append("mix: requested -> accepted share (tasks requested -> accepted):")
        for b in self.mix:
            lines.append(
                f"  {b:<14} {100 * d['requested_mix'][b]:6.2f}%  -> {100 * d['accepted_mix'][b]:6.2f}%"
                f"  ({self.requested.get(b, 0)} -> {self.accepted.get(b, 0)})"
            )
        if self.benchmark:
            b = self.benchmark
            lines.append(f"decontaminated against {b['path']} ({b['tasks']} tasks, digest {b['digest'][:12]})")
        else:
            lines.append("NOT decontaminated (no benchmark given): the tasks may include benchmark problems")
        for b, why in self.exhausted.items():
            lines.append(f"bucket {b} exhausted: {why}")
        if self.decontaminated:
            lines.append(f"decontamination dropped {len(self.decontaminated)}:")
            lines += [f"  {n}: {why}" for n, why in self.decontaminated[:50]]
        return "\n".join(lines)


# Stages in funnel order, for the summary.
FUNNEL = (
    "compose",
    "static",
    "decontam",
    "load",
    "eager",
    "timing",
    "determinism",
    "degenerate",
    "input_sensitivity",
    "compile",
    "worker",
)


class Pipeline:
    """One resumable synthesis run into `config.out_dir`."""

    def __init__(
        self, config: PipelineConfig, *, catalog: Catalog | None = None, llm_client: Any = None
    ) -> None:
        self.config = config
        self.out = Path(config.out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        # Before the (slow) catalog: a missing or empty benchmark is an error, not a pass that removes nothing.
        self.bench = (
            BenchmarkIndex.from_dir(config.benchmark_dir, config.decontam) if config.benchmark_dir else None
        )
        self.catalog = (
            catalog if catalog is not None else load_catalog(config.crawl, cache_dir=config.cache_dir)
        )
        self.composer = Composer(self.catalog, config.compose_config())
        self.static = StaticFilter(self.catalog.random_op_names())
        self.llm = (
            LLMComposer(self.catalog, config.llm, llm_client, self.composer.config.target)
            if config.llm
            else None
        )
        self.requested = quotas(config.mix, config.num_tasks)
        self.summary = Summary(self.requested, dict(config.mix))
        self.summary.benchmark = self.bench.describe() if self.bench is not None else None
        self._journal_path = self.out / JOURNAL
        self._counter = 0
        self._inflight: dict[str, dict[str, Any]] = {}
        self._inflight_by_bucket: Counter = Counter()
        self._stale: Counter = Counter()
        self._resume()

    # ------------------------------------------------------------------ journal

    def _resume(self) -> None:
        _repair_journal(self._journal_path)
        records = read_journal(self._journal_path)
        for rec in records:
            self._counter = max(self._counter, int(rec.get("index", -1)) + 1)
            self._count(rec, resumed=True)
            if rec.get("status") == "accepted" and rec.get("ast_digest"):
                self.static.seen.add(rec["ast_digest"])

    def _count(self, rec: dict[str, Any], resumed: bool = False) -> None:
        bucket = rec.get("bucket", "")
        stage = rec.get("stage", "")
        self.summary.finished[bucket] += 1
        for s in rec.get("stages", []):
            self.summary.stage_counts[s] += 1
        for s in rec.get("skipped_stages", []):
            self.summary.skipped_stages[s] += 1
        if rec.get("status") == "surplus":
            self.summary.surplus += 1
        elif rec.get("status") == "accepted":
            self.summary.accepted[bucket] += 1
            if resumed:
                self.summary.resumed += 1
        else:
            self.summary.rejected[(stage, rec.get("reason", ""))] += 1
            if stage == "decontam":
                self.summary.decontaminated.append((rec.get("name", ""), rec.get("detail", "")))

    def _write(self, rec: dict[str, Any]) -> None:
        with self._journal_path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        self._count(rec)

    # ------------------------------------------------------------------ scheduling

    def _rate(self, bucket: str) -> float:
        return (self.summary.accepted[bucket] + 1) / (self.summary.finished[bucket] + 2)

    def next_bucket(self) -> str | None:
        """The bucket furthest below its share of accepted tasks, counting expected in-flight acceptances."""
        best, best_key = None, None
        for b, q in self.requested.items():
            if b in self.summary.exhausted:
                continue
            expected = self.summary.accepted[b] + self._inflight_by_bucket[b] * self._rate(b)
            if expected >= q or self.config.mix.get(b, 0) <= 0:
                continue
            key = expected / self.config.mix[b]
            if best_key is None or key < best_key:
                best, best_key = b, key
        return best

    def _done(self) -> bool:
        return all(
            self.summary.accepted[b] >= q or b in self.summary.exhausted for b, q in self.requested.items()
        )

    def _note_static(self, bucket: str, passed: bool) -> None:
        """Count consecutive compose/duplicate failures; a bucket that only repeats itself is exhausted."""
        self._stale[bucket] = 0 if passed else self._stale[bucket] + 1
        if self._stale[bucket] >= self.config.max_stale:
            self.summary.exhausted[bucket] = (
                f"{self._stale[bucket]} compositions in a row failed or were duplicates: the catalog holds "
                "no more distinct tasks of this kind"
            )

    # ------------------------------------------------------------------ stages

    def _compose_one(self, bucket: str) -> tuple[dict[str, Any], RenderedTask | None]:
        index = self._counter
        self._counter += 1
        seed = self.config.seed * 10_000_000 + index
        rec: dict[str, Any] = {"index": index, "seed": seed, "bucket": bucket, "stages": ["compose"]}
        use_llm = self.llm is not None and (index * 0.6180339887) % 1.0 < self.config.llm.fraction  # type: ignore[union-attr]
        try:
            if use_llm:
                rec["composer"] = "llm"
                task = self.llm.compose(bucket, seed)  # type: ignore[union-attr]
                if task is None:
                    raise ComposeError("the model's answer held no code")
            else:
                rec["composer"] = "template"
                comp = self.composer.compose(bucket, seed)
                task = render(comp, self.catalog, name=None)
                rec["est_ms"] = round(comp.est_ms, 4)
        except Exception as exc:
            rec.update(
                status="rejected",
                stage="compose",
                reason="compose_failed",
                detail=f"{type(exc).__name__}: {exc}",
            )
            return rec, None
        rec.update(
            name=f"{index:06d}_{task.name}", code=task.code, ops=list(task.ops), data_source=task.data_source
        )
        return rec, task

    def _static_stages(self, rec: dict[str, Any]) -> bool:
        rec["stages"].append("static")
        verdict, digest = self.static.check(rec["code"])
        rec["ast_digest"] = digest
        if not verdict.ok:
            rec.update(status="rejected", stage="static", reason=verdict.reason, detail=verdict.detail)
            return False
        if self.bench is not None:
            rec["stages"].append("decontam")
            match = self.bench.nearest(rec["code"])
            if match is not None:
                self.static.forget(digest)  # type: ignore[arg-type]
                rec.update(
                    status="rejected", stage="decontam", reason="near_benchmark", detail=match.describe()
                )
                return False
        return True

    def _finish(self, rec: dict[str, Any], result: Any) -> None:
        for stage, note in result.log:
            if str(note).startswith("skipped"):  # not run: neither reached nor passed
                rec.setdefault("skipped_stages", []).append(stage)
            elif stage not in rec["stages"]:
                rec["stages"].append(stage)
        rec.update(
            code=result.code,
            eager_ms=result.eager_ms,
            compile_ms=result.compile_ms,
            gpu=result.device_name if self.config.exec_config().device.startswith("cuda") else "",
            device=self.config.exec_config().device,
            timing="measured" if result.eager_ms is not None else "skipped (cpu-only)",
            log=[list(x) for x in result.log],
            wall_s=round(result.wall_s, 3),
        )
        if result.accepted and self.summary.accepted[rec["bucket"]] >= self.requested.get(rec["bucket"], 0):
            # In flight when the quota filled up: kept in the journal, not part of the requested count.
            rec.update(status="surplus", stage="accepted", reason="quota already met")
            if rec.get("ast_digest"):
                self.static.forget(rec["ast_digest"])
        elif result.accepted:
            rec.update(status="accepted", stage="accepted", reason=None)
        else:
            rec.update(status="rejected", stage=result.stage, reason=result.reason, detail=result.detail)
            if rec.get("ast_digest"):
                self.static.forget(rec["ast_digest"])

    # ------------------------------------------------------------------ run

    def run(self) -> Summary:
        """Run until every bucket's quota is accepted (or the time limit), then write the parquet."""
        cfg = self.config
        deadline = time.time() + cfg.max_minutes * 60 if cfg.max_minutes else None
        bar = _progress(cfg.progress, self.config.num_tasks, self.summary.total_accepted)
        try:
            if not cfg.execute:
                self._run_static(deadline, bar)
            else:
                self._run_execute(deadline, bar)
        finally:
            self.summary.ended = time.time()
            if bar is not None:
                bar.close()
            self.export()
        return self.summary

    def _run_static(self, deadline: float | None, bar: Any) -> None:
        while not self._done() and (deadline is None or time.time() < deadline):
            bucket = self.next_bucket()
            if bucket is None:
                break
            rec, task = self._compose_one(bucket)
            ok = task is not None and self._static_stages(rec)
            self._note_static(bucket, ok)
            if ok:
                rec.update(status="accepted", stage="accepted", timing="not run (static stages only)")
            self._write(rec)
            _tick(bar, self.summary)

    def _run_execute(self, deadline: float | None, bar: Any) -> None:
        from cuda_agent.synth.workers import WorkerPool

        cfg = self.config
        exec_cfg = cfg.exec_config()
        pool = WorkerPool(
            cfg.workers, exec_cfg, task_timeout_s=cfg.task_timeout_s, memory_fraction=cfg.memory_fraction
        )
        try:
            drain_until = None
            while True:
                now = time.time()
                if self._done():
                    break  # what is still in flight could only be surplus: don't wait for it
                stopping = deadline is not None and now >= deadline
                if stopping and drain_until is None:
                    drain_until = now + cfg.drain_s
                if not stopping:
                    # Keep every worker busy plus one queued job each, composing in between polls.
                    while pool.in_flight < 2 * pool.n:
                        bucket = self.next_bucket()
                        if bucket is None:
                            break
                        rec, task = self._compose_one(bucket)
                        ok = task is not None and self._static_stages(rec)
                        self._note_static(bucket, ok)
                        if not ok:
                            self._write(rec)
                            continue
                        job = str(rec["index"])
                        self._inflight[job] = rec
                        self._inflight_by_bucket[bucket] += 1
                        if self.summary.first_submit is None:
                            self.summary.first_submit = time.time()
                        pool.submit(job, rec["code"])
                if not self._inflight or (drain_until is not None and time.time() > drain_until):
                    break
                for job, result in pool.poll(0.5):
                    rec = self._inflight.pop(job, None)
                    if rec is None:
                        continue
                    self._inflight_by_bucket[rec["bucket"]] -= 1
                    self._finish(rec, result)
                    self._write(rec)
                    _tick(bar, self.summary)
        finally:
            self.summary.restarts = pool.restarts
            pool.close()

    def export(self) -> Path:
        """Write `tasks.parquet` and `summary.json` from the journal (all accepted records so far)."""
        records = read_journal(self._journal_path)
        path = write_parquet(accepted_records(records), self.out / PARQUET)
        (self.out / SUMMARY).write_text(json.dumps(self.summary.to_json(), indent=2))
        return path


def _repair_journal(path: Path) -> None:
    """Cut a torn last line (a write interrupted mid-record) so that new records start on a fresh line."""
    if not path.is_file():
        return
    data = path.read_bytes()
    if data and not data.endswith(b"\n"):
        with path.open("r+b") as fh:
            fh.truncate(data.rfind(b"\n") + 1)


def _progress(enabled: bool, total: int, initial: int) -> Any:
    if not enabled:
        return None
    try:
        from tqdm import tqdm
    except ImportError:
        return None
    return tqdm(total=total, initial=initial, desc="accepted", unit="task", dynamic_ncols=True)


def _tick(bar: Any, summary: Summary) -> None:
    if bar is None:
        return
    bar.n = summary.total_accepted
    top = Counter({f"{s}:{r}": n for (s, r), n in summary.rejected.items()}).most_common(2)
    bar.set_postfix_str(
        f"rejected {sum(summary.rejected.values())} " + " ".join(f"{k}={v}" for k, v in top), refresh=False
    )
    bar.refresh()


def with_overrides(config: PipelineConfig, **kw: Any) -> PipelineConfig:
    return replace(config, **kw)
