"""Judging on a Ray cluster: builds as CPU tasks anywhere, GPU stages on one judge actor per GPU.

- A build is a Ray task (`num_cpus=1`, spread over the nodes) that lays the submission out, runs the
  judge's CPU part (static checks, build; `check_on_cpu` in build-only mode) and returns the built
  extension's bytes. A failed build is final there and never occupies a GPU.
- Each GPU has a `JudgeLane` actor (`num_gpus=1`, restarted by Ray when it dies) wrapping a one-lane
  `JudgeService`; it takes the shipped extension and runs the GPU stages (reference, verify, time) with
  warm workers. In build-only mode (no GPUs needed: logical GPUs show the placement on CPU machines) the
  lane checks the shipped extension's digest and gives the CPU verdict.
- A task or actor that dies (its worker, its node) or does not answer in time: the judgment goes back to
  the queue and another lane (or the same one once Ray has restarted it) takes it, at most `max_attempts`
  times, then it ends as `judge_error` with the reason. The lane waits until its actor answers again
  before it takes more work. The first outcome is the only one recorded (jobs.py and the store), so a
  judgment is never given two verdicts, whatever a presumed-dead actor sends later.

How the extension reaches the GPU: as bytes in Ray's object store (an extension is a few MB). The GPU
side takes it with `Judgment.adopt_build`, the same code that ends a local build (binary checks again).
"""

from __future__ import annotations

import contextlib
import hashlib
import queue
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from cuda_agent.judge import JudgeConfig, JudgeUnavailable
from cuda_agent.service.executors import Began, Job, Report, began_always, judge_error, outcome_of
from cuda_agent.service.submission import Submission
from cuda_agent.task import Task, TaskError, load_task

NAMESPACE = "cuda-agent-judge"


def _lay_out(blob: bytes, folder: Path) -> Task | None:
    submission = Submission.from_blob(blob)
    submission.write_to(folder)
    try:
        return load_task(folder / "model.py", name=submission.task_name or "task")
    except TaskError:
        return None


def build_on_cpu(blob: bytes, config: JudgeConfig, build_only: bool) -> dict[str, Any]:
    """The CPU part of a judgment (runs as a Ray task): {"final": outcome} when it ends the judgment,
    else {"module": bytes, "record": what the GPU side adopts}; "node" says where it ran."""
    import ray

    node = ray.get_runtime_context().get_node_id()
    with tempfile.TemporaryDirectory(prefix="cuda-agent-ray-build-") as tmp:
        folder = Path(tmp) / "submission"
        task = _lay_out(blob, folder)
        if build_only:
            from cuda_agent.judge import check_on_cpu

            verdict, result = check_on_cpu(folder, task, config, out_dir=Path(tmp) / "build")
            module = result.module_path.read_bytes() if result and result.ok and result.module_path else None
            return {"node": node, "module": module, "record": {"cpu_outcome": outcome_of(verdict)}}
        from cuda_agent.judge import Judgment
        from cuda_agent.judge.decide.service import _resolve_task

        resolved, failed = _resolve_task(folder, task)
        if failed is not None:
            return {"node": node, "final": outcome_of(failed)}
        judgment = Judgment(folder, resolved, config)  # type: ignore[arg-type]
        try:
            verdict = judgment.build_only()
            if verdict is not None:
                return {"node": node, "final": outcome_of(verdict)}
            record = {"checks": dict(judgment.checks), "stages": dict(judgment.stages),
                      "compile_log": judgment.compile_log, "imports": judgment.imports}  # fmt: skip
            return {"node": node, "module": Path(judgment.module_file).read_bytes(), "record": record}
        finally:
            judgment.cleanup()


class JudgeLane:
    """One GPU's judge (a Ray actor with num_gpus=1): a one-lane JudgeService kept warm."""

    def __init__(self, config: JudgeConfig, build_only: bool) -> None:
        import ray

        self.config, self.build_only = config, build_only
        self.node = ray.get_runtime_context().get_node_id()
        self.service = None
        if not build_only:
            from cuda_agent.judge import JudgeService

            self.service = JudgeService(config, keep_warm=True)
            self.service.start()

    def ping(self) -> str:
        return self.node

    def judge(self, blob: bytes, module: bytes | None, record: dict[str, Any]) -> dict[str, Any]:
        if self.build_only:
            outcome = dict(record["cpu_outcome"])
            if module is not None and outcome.get("verdict"):
                checks = outcome["verdict"].setdefault("checks", {})
                checks["shipped_extension"] = {"bytes": len(module), "sha256": hashlib.sha256(module).hexdigest()}
            return {"node": self.node, "outcome": outcome}
        from cuda_agent.judge import Judgment, Stop

        with tempfile.TemporaryDirectory(prefix="cuda-agent-ray-lane-") as tmp:
            folder = Path(tmp) / "submission"
            task = _lay_out(blob, folder)
            judgment = Judgment(folder, task, self.config)  # type: ignore[arg-type]
            try:
                try:
                    _adopt_build(judgment, module, record)
                except Stop as stop:  # the shipped binary failed its checks here: a verdict, not a retry
                    verdict = judgment.finish(stop.verdict)
                else:
                    verdict = judgment.run_built(self.service.pools[0])  # type: ignore[union-attr]
            finally:
                judgment.cleanup()
        return {"node": self.node, "outcome": outcome_of(verdict)}


def _adopt_build(judgment: Any, module: bytes | None, record: dict[str, Any]) -> None:
    """Leave `judgment` as its own `build()` would have: the static checks and the build ran on the build
    node over the same files; `Judgment.adopt_build` checks the shipped binary again here and takes it."""
    from cuda_agent.judge import MODULE_NAME

    assert module is not None
    target = judgment.scratch / "build" / f"{MODULE_NAME}.so"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(module)
    judgment.checks.update(record["checks"])
    judgment.stages.update(record["stages"])
    judgment.compile_log = record.get("compile_log", "")
    judgment.adopt_build(target, record["imports"])


class RayExecutor:
    """Judgments on a Ray cluster (`address`: None to use a connected or new local Ray, else as ray.init)."""

    def __init__(self, address: str | None, config: JudgeConfig | None = None, build_only: bool = False,
                 max_attempts: int = 3, build_timeout_s: float = 1800.0, lane_timeout_s: float = 3600.0,
                 ping_timeout_s: float = 10.0) -> None:  # fmt: skip
        self.address, self.config, self.build_only = address, config or JudgeConfig(), build_only
        self.max_attempts = max_attempts
        self.build_timeout_s, self.lane_timeout_s, self.ping_timeout_s = build_timeout_s, lane_timeout_s, ping_timeout_s
        self.lanes = 0
        self._busy = 0
        self._lock = threading.Lock()
        self._todo: queue.Queue[tuple[Job, int] | None] = queue.Queue()  # (job, Ray attempts so far)
        self._built: queue.Queue[tuple[Job, int, dict[str, Any]] | None] = queue.Queue()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.trail: dict[str, dict[str, list[str]]] = {}  # job id -> nodes of each build / lane attempt

    def start(self, report: Report, began: Began = began_always) -> None:
        import ray

        self._report, self._began = report, began
        if not ray.is_initialized():
            ray.init(address=self.address, namespace=NAMESPACE, log_to_driver=False)
        gpus = int(ray.cluster_resources().get("GPU", 0))
        if gpus < 1:
            raise JudgeUnavailable("the Ray cluster has no GPUs (nodes started without --num-gpus?)")
        self._build_task = ray.remote(num_cpus=1, max_retries=0, scheduling_strategy="SPREAD")(build_on_cpu)
        lane_class = ray.remote(num_gpus=1, max_restarts=-1, max_task_retries=0)(JudgeLane)
        self._actors = [lane_class.remote(self.config, self.build_only) for _ in range(gpus)]
        self.lanes = gpus
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        for index in range(min(cpus, 64)):
            self._spawn(self._builder, f"ray-build-{index}")
        for index, actor in enumerate(self._actors):
            self._spawn(self._lane, f"ray-lane-{index}", actor)

    def _spawn(self, target: Any, name: str, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def submit(self, job: Job) -> None:
        self._todo.put((job, 0))

    def busy(self) -> int:
        return self._busy

    def close(self, timeout_s: float = 30.0) -> None:
        """Stop the builder and lane threads and wait for them (at most `timeout_s` in all), so that none
        calls into Ray after the caller shuts Ray down (Ray's core worker can abort the whole process then;
        the suspected cause of a CI run's SIGABRT a minute after its test cluster was gone)."""
        self._stop.set()
        for _ in self._threads:
            self._todo.put(None)
            self._built.put(None)
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    # ---- the two stages -----------------------------------------------------------------------------
    def _note(self, job: Job, stage: str, node: str) -> None:
        with self._lock:
            self.trail.setdefault(job.id, {"build": [], "lane": []})[stage].append(node)

    def _retry(self, job: Job, tries: int, why: str, built: dict[str, Any] | None = None) -> None:
        """A Ray failure: try again unless the judgment has had its tries (a lane failure keeps the
        build, whose bytes the driver already holds: another lane takes it)."""
        if tries >= self.max_attempts:
            self._finish(job, judge_error(f"the judge died {tries} times judging this ({why}); not retried"), tries)
            return
        print(f"judgment {job.id}: {why}; retrying ({tries}/{self.max_attempts})", file=sys.stderr, flush=True)
        if built is None:
            self._todo.put((job, tries))
        else:
            self._built.put((job, tries, built))

    def _finish(self, job: Job, outcome: dict[str, Any], tries: int) -> None:
        with self._lock:
            trail = self.trail.pop(job.id, {"build": [], "lane": []})
        self._report(job.id, {**outcome, "judged_on": trail, "ray_tries": tries + 1})

    def _builder(self) -> None:
        import ray

        while not self._stop.is_set():
            item = self._todo.get()
            if item is None:
                return
            job, tries = item
            if tries == 0 and not self._began(job.id):  # a Ray retry is the same attempt of the server's
                continue
            ref = self._build_task.remote(job.submission.to_blob(), self.config, self.build_only)
            try:
                built = ray.get(ref, timeout=self.build_timeout_s)
            except Exception as exc:  # worker or node died, timed out, or the task raised
                with contextlib.suppress(Exception):  # gone with its node, or already failed
                    ray.cancel(ref, force=True)
                self._retry(job, tries + 1, f"build task failed: {type(exc).__name__}: {_short(exc)}")
                continue
            self._note(job, "build", built["node"])
            if "final" in built:
                self._finish(job, built["final"], tries)
            else:
                self._built.put((job, tries, built))

    def _lane(self, actor: Any) -> None:
        import ray

        while not self._stop.is_set():
            item = self._built.get()
            if item is None:
                return
            job, tries, built = item
            with self._lock:
                self._busy += 1
            try:
                answer = ray.get(actor.judge.remote(job.submission.to_blob(), built.get("module"), built["record"]),
                                 timeout=self.lane_timeout_s)  # fmt: skip
            except Exception as exc:
                self._retry(job, tries + 1, f"GPU lane failed: {type(exc).__name__}: {_short(exc)}", built)
                self._wait_alive(actor)
                continue
            finally:
                with self._lock:
                    self._busy -= 1
            self._note(job, "lane", answer["node"])
            self._finish(job, answer["outcome"], tries)

    def _wait_alive(self, actor: Any) -> None:
        """Until Ray has restarted this lane's actor (it may wait for a node with a free GPU)."""
        import ray

        delay = 0.5
        while not self._stop.is_set():
            try:
                ray.get(actor.ping.remote(), timeout=self.ping_timeout_s)
                return
            except Exception:
                time.sleep(delay)
                delay = min(delay * 2, 10)


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else ""
