"""Prometheus metrics of the judge server, in a registry of its own (one per app, so tests and several
servers in one process do not mix): queue depth, judgments running, GPU lanes (busy and total), verdicts
by status, stage latencies from each verdict's `stage_seconds`, submit-to-verdict latency, refused
requests by reason, and the standard process metrics (memory, open files, CPU)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest

STAGE_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 20, 40, 80, 160, 320, 640)


class Metrics:
    def __init__(self, queued: Callable[[], float], running: Callable[[], float],
                 lanes_busy: Callable[[], float], lanes: Callable[[], float]) -> None:  # fmt: skip
        self.registry = CollectorRegistry()
        r = self.registry
        ProcessCollector(registry=r)  # process_*: resident memory, open files (and their limit), CPU seconds
        Gauge("cuda_agent_judge_queue_depth", "Accepted judgments waiting to start", registry=r).set_function(queued)
        Gauge("cuda_agent_judge_running", "Judgments being judged now", registry=r).set_function(running)
        Gauge("cuda_agent_judge_lanes_busy", "GPU lanes judging now", registry=r).set_function(lanes_busy)
        Gauge("cuda_agent_judge_lanes", "GPU lanes (or CPU workers in build-only mode)", registry=r).set_function(lanes)
        self.verdicts = Counter("cuda_agent_judge_verdicts", "Verdicts reached, by status", ["status"], registry=r)
        self.stages = Histogram(
            "cuda_agent_judge_stage_seconds", "Time per judgment stage (from the verdicts)", ["stage"],
            buckets=STAGE_BUCKETS, registry=r,
        )  # fmt: skip
        self.latency = Histogram(
            "cuda_agent_judge_latency_seconds", "Submit-to-verdict time", buckets=STAGE_BUCKETS, registry=r
        )
        self.refused = Counter("cuda_agent_judge_refused", "Requests refused, by reason", ["reason"], registry=r)
        self.accepted = Counter("cuda_agent_judge_accepted", "Judgments accepted", registry=r)
        self.retries = Counter("cuda_agent_judge_retries", "Judgments dispatched again after their judge died",
                               registry=r)  # fmt: skip

    def observe(self, outcome: dict[str, Any], latency_s: float | None) -> None:
        self.verdicts.labels(outcome["status"]).inc()
        verdict = outcome.get("verdict") or {}
        for stage, seconds in (verdict.get("stage_seconds") or {}).items():
            if isinstance(seconds, int | float):
                self.stages.labels(stage).observe(seconds)
        if latency_s is not None:
            self.latency.observe(latency_s)

    def render(self) -> bytes:
        return generate_latest(self.registry)
