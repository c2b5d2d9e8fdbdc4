"""Where an evaluation's judgments run: the warm local `JudgeService`, a `cuda-agent serve` server, or
the CPU checks only (`--build-only`). One interface for the three, so the runner, `--submissions` and
`--recheck` never care which.

Every judgment carries a key naming what is judged (run, task, episode, content). The remote backend
sends it as the idempotency key, so a killed and resumed run finds the judgment its predecessor already
made instead of judging it again; locally a judgment that was cut off by the kill left no verdict, and
the runner keeps every verdict it got on disk before it counts the episode as done.

Outcomes are `JudgeOutcome` dicts (status, reward, reason, verdict): `unavailable` and `judge_error`
mean no verdict was reached (no GPU, the judge failed), which the runner leaves for a later resume.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from cuda_agent import gpu_lease
from cuda_agent.agent.judging import JUDGE_ERROR, UNAVAILABLE, JudgeOutcome
from cuda_agent.task import Task

Item = tuple[Path, Task, str]  # (submission folder, its task, the judgment's key)


def judge_name(name: str, *modules: str) -> Any:
    """A judge name from the package's public exports, else from the modules (under cuda_agent.judge)
    that define it: the judge is being reorganised into subpackages by trust, and its public names are
    the stable interface."""
    package = importlib.import_module("cuda_agent.judge")
    if hasattr(package, name):
        return getattr(package, name)
    for module in modules:
        try:
            return getattr(importlib.import_module(f"cuda_agent.judge.{module}"), name)
        except (ImportError, AttributeError):
            continue
    raise ImportError(f"cuda_agent.judge exports no {name}")


@dataclass(frozen=True)
class JudgeSettings:
    """What the judge is asked to apply: recorded in the run's bundle and reused by --recheck."""

    atol: float = 1e-2
    rtol: float = 1e-2
    timing: bool = True
    precision_audit: bool = True
    arch: str | None = None
    compile_mode: str = "default"  # the torch.compile baseline's (judge/trusted/compile_modes.py)

    def config(self, *, build_only: bool = False) -> Any:
        JudgeConfig = judge_name("JudgeConfig", "config")
        TimingConfig = judge_name("TimingConfig", "config")
        BuildConfig = judge_name("BuildConfig", "trusted.build", "build")
        default_arch = judge_name("default_arch", "trusted.toolchain", "toolchain")
        build = BuildConfig(arch=self.arch or default_arch())
        if build_only:  # no reward rests on a CPU build: the binding object may come from the cache
            import dataclasses

            build = dataclasses.replace(build, private_judge_binding=False)
        return JudgeConfig(atol=self.atol, rtol=self.rtol, build=build, time_candidate=self.timing,
                           precision_audit=self.precision_audit,
                           timing=TimingConfig(compile_mode=self.compile_mode))  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        data = {"atol": self.atol, "rtol": self.rtol, "timing": self.timing,
                "precision_audit": self.precision_audit, "arch": self.arch}  # fmt: skip
        # Only when not the default: a run made before the option had none, and resumes (runner.open_run
        # compares these settings) with the same command; another mode is another run.
        if self.compile_mode != "default":
            data["compile_mode"] = self.compile_mode
        return data


class Backend(Protocol):
    name: str

    def gpus(self) -> list[str]: ...  # the physical GPUs of this host its judgments run on ([]: none)

    def judge(self, folder: Path, task: Task, key: str) -> dict[str, Any]: ...

    def judge_many(self, items: Sequence[Item]) -> Iterator[tuple[int, dict[str, Any]]]: ...

    def close(self) -> None: ...


def outcome_of(verdict: Any) -> dict[str, Any]:
    data = verdict.to_dict() if hasattr(verdict, "to_dict") else dict(verdict)
    import json

    data = json.loads(json.dumps(data, default=lambda v: getattr(v, "value", str(v))))  # enums -> values
    return {"status": data["status"], "reward": data["reward"], "reason": data.get("reason", ""), "verdict": data}


def no_verdict(status: str, reason: str) -> dict[str, Any]:
    return {"status": status, "reward": None, "reason": reason, "verdict": None}


class LocalBackend:
    """The host's GPUs through one long-lived `JudgeService` (warm workers, pipelined builds); its
    judgments hold their GPU alone through `leased()`."""

    name = "local"

    def __init__(self, settings: JudgeSettings, devices: list[int] | None = None) -> None:
        self.settings = settings
        self.devices = devices
        self._service: Any = None
        self._unavailable: str | None = None
        self._lock = threading.Lock()

    def _get(self) -> Any:
        with self._lock:
            if self._service is None and self._unavailable is None:
                JudgeService = judge_name("JudgeService", "decide.service", "service")
                JudgeUnavailable = judge_name("JudgeUnavailable", "config")
                service = JudgeService(self.settings.config(), devices=self.devices, keep_warm=True)
                try:
                    service.start()
                except JudgeUnavailable as exc:
                    self._unavailable = str(exc)
                else:
                    self._service = service
            return self._service

    def gpus(self) -> list[str]:
        """The physical GPUs this backend's judgments run on (none when leases are off)."""
        return gpu_lease.gpus_of(self.devices) if gpu_lease.enabled() else []

    def judge(self, folder: Path, task: Task, key: str) -> dict[str, Any]:
        service = self._get()
        if service is None:
            return no_verdict(UNAVAILABLE, self._unavailable or "no GPU")
        try:
            return outcome_of(service.judge(Path(folder), task))
        except Exception as exc:  # the judge failing is recorded, never a lost episode
            return no_verdict(JUDGE_ERROR, f"{type(exc).__name__}: {exc}")

    def judge_many(self, items: Sequence[Item]) -> Iterator[tuple[int, dict[str, Any]]]:
        service = self._get()
        if service is None:
            for index in range(len(items)):
                yield index, no_verdict(UNAVAILABLE, self._unavailable or "no GPU")
            return
        for index, verdict in service.judge_many([(Path(f), t) for f, t, _ in items]):
            yield index, outcome_of(verdict)

    def close(self) -> None:
        if self._service is not None:
            self._service.close()


class RemoteBackend:
    """A `cuda-agent serve` server (token in $CUDA_AGENT_JUDGE_TOKEN), with this run's keys."""

    name = "remote"

    def __init__(self, url: str, concurrency: int = 8) -> None:
        from cuda_agent.service.client import RemoteJudge

        self.client = RemoteJudge(url, concurrency=concurrency)
        self.url = self.client.url
        self.concurrency = concurrency

    def gpus(self) -> list[str]:
        return []  # judged on the server's GPUs: a server on this host leases them itself, or should

    def judge(self, folder: Path, task: Task, key: str) -> dict[str, Any]:
        from cuda_agent.service.client import RemoteJudgeError
        from cuda_agent.service.submission import SubmissionRejected, from_folder

        try:
            record = self.client.wait(self.client.submit(from_folder(Path(folder), task), key=key))
        except RemoteJudgeError as exc:
            return no_verdict(UNAVAILABLE, str(exc))
        except SubmissionRejected as exc:  # too large, bad paths: the server would refuse it too
            return no_verdict(JUDGE_ERROR, f"submission refused: {exc}")
        if record.get("verdict") is None:
            return no_verdict(record.get("status") or JUDGE_ERROR, record.get("reason", "no verdict"))
        return {"status": record["status"], "reward": record.get("reward"), "reason": record.get("reason", ""),
                "verdict": record["verdict"]}  # fmt: skip

    def judge_many(self, items: Sequence[Item]) -> Iterator[tuple[int, dict[str, Any]]]:
        with ThreadPoolExecutor(self.concurrency, thread_name_prefix="eval-remote") as pool:
            futures = {pool.submit(self.judge, *item): index for index, item in enumerate(items)}
            for future in as_completed(futures):
                yield futures[future], future.result()

    def close(self) -> None:
        self.client.close()


class BuildOnlyBackend:
    """The checks a CPU can make (task, static checks, build); status `built`, reward 0 when all pass."""

    name = "build-only"

    def __init__(self, settings: JudgeSettings, workers: int = 1) -> None:
        self.config = settings.config(build_only=True)
        self.workers = max(1, workers)

    def gpus(self) -> list[str]:
        return []  # the CPU checks: nothing timed

    def judge(self, folder: Path, task: Task, key: str) -> dict[str, Any]:
        check_on_cpu = judge_name("check_on_cpu", "decide.cpu_checks", "cpu_checks")
        try:
            verdict, _ = check_on_cpu(Path(folder), task, self.config)
        except Exception as exc:
            return no_verdict(JUDGE_ERROR, f"{type(exc).__name__}: {exc}")
        return outcome_of(verdict)

    def judge_many(self, items: Sequence[Item]) -> Iterator[tuple[int, dict[str, Any]]]:
        with ThreadPoolExecutor(self.workers, thread_name_prefix="eval-cpu") as pool:
            futures = {pool.submit(self.judge, *item): index for index, item in enumerate(items)}
            for future in as_completed(futures):
                yield futures[future], future.result()

    def close(self) -> None:
        pass


class LeasedBackend:
    """A backend whose judgments hold their GPUs alone (cuda_agent.gpu_lease, exclusive), from before
    the build to the verdict: no episode's tool command, in this process or another, runs on them while
    a judgment is timed. This is what makes `eval -j N` on one GPU measure what a serial run measures
    (an H200 `-j 2` run without it read a softmax kernel at 0.20x that alone measures 1.49x).

    A batch (`judge_many`: --submissions, --recheck) holds them for the whole batch, which keeps the
    service's pipelining of CPU builds against GPU stages. Outcomes carry `gpu_lease` (gpus, waited_s,
    held_s), kept in the run's verdict files and records. A GPU that does not come free within the
    bound is a `judge_error` outcome naming who holds it, which a resume judges again."""

    def __init__(self, inner: Backend, gpus: list[str]) -> None:
        self.inner = inner
        self._gpus = list(gpus)
        self.name = inner.name

    def gpus(self) -> list[str]:
        return list(self._gpus)

    def judge(self, folder: Path, task: Task, key: str) -> dict[str, Any]:
        try:
            with gpu_lease.hold(self._gpus, gpu_lease.EXCLUSIVE, what=f"the final judgment {key}") as lease:
                outcome = self.inner.judge(folder, task, key)
                return {**outcome, "gpu_lease": lease.to_dict()}
        except gpu_lease.LeaseError as exc:
            return no_verdict(JUDGE_ERROR, str(exc))

    def judge_many(self, items: Sequence[Item]) -> Iterator[tuple[int, dict[str, Any]]]:
        try:
            lease = gpu_lease.acquire(self._gpus, gpu_lease.EXCLUSIVE, what=f"a batch of {len(items)} judgments")
        except gpu_lease.LeaseError as exc:
            for index in range(len(items)):
                yield index, no_verdict(JUDGE_ERROR, str(exc))
            return
        with lease:
            for index, outcome in self.inner.judge_many(items):
                yield index, {**outcome, "gpu_lease": lease.to_dict()}

    def close(self) -> None:
        self.inner.close()

    def __getattr__(self, name: str) -> Any:  # what callers read of the backend (`_unavailable`)
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)


def leased(backend: Backend) -> Backend:
    """`backend` with its judgments holding their GPUs alone; as it is when it judges on none here."""
    if isinstance(backend, LeasedBackend):
        return backend
    gpus = backend.gpus() if hasattr(backend, "gpus") else []
    return LeasedBackend(backend, gpus) if gpus else backend


def make_backend(settings: JudgeSettings, *, judge_url: str | None = None, build_only: bool = False,
                 workers: int = 1, devices: list[int] | None = None) -> Backend:  # fmt: skip
    if judge_url:
        return RemoteBackend(judge_url, concurrency=max(2, workers))
    if build_only:
        return BuildOnlyBackend(settings, workers=workers)
    return LocalBackend(settings, devices=devices)


class EpisodeJudge:
    """The agent's `Judge` seam for one episode, over a backend and that episode's key; it remembers the
    outcome dict so the runner can keep the verdict it got."""

    def __init__(self, backend: Backend, key: str) -> None:
        self.backend = backend
        self.key = key
        self.outcome: dict[str, Any] | None = None

    def __call__(self, workspace: Path, task: Task) -> JudgeOutcome:
        self.outcome = self.backend.judge(workspace, task, self.key)
        o = self.outcome
        return JudgeOutcome(o["status"], o.get("reward"), o.get("reason", ""), o.get("verdict"), o.get("gpu_lease"))
