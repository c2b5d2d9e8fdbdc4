"""`judge()`: build, verify, time and reward one submission; `Judgment`: the story of one judgment.

Stages, each its own function, each ending the judgment with a verdict when it fails:
build (CPU) -> reference (inputs, outputs, degeneracy audit; prepared while the build runs) -> load the
candidate into a pre-started sandboxed worker -> verify (input sets + a repeat, op gate, comparison by the
reference worker) -> memory check -> timing (interleaved rounds, host-clock cross-check) -> reward.
Workers come from a `WorkerPool` (see pool.py); `JudgeService` (service.py) keeps one alive across
judgments and runs many submissions with builds in parallel and GPU work serialised.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cuda_agent.judge.authkey import judge_key
from cuda_agent.judge.baselines import BaselineCache, BaselineRecord, cache_key
from cuda_agent.judge.build import MODULE_NAME, build_extension
from cuda_agent.judge.channel import WorkerFailure, WorkerHandle
from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable
from cuda_agent.judge.coverage import (
    CoverageReport,
    binary_attribution,
    coverage_report,
    linked_libraries,
    merge,
)
from cuda_agent.judge.freeze import FreezeFailed, ProcessTree
from cuda_agent.judge.gpumem import process_gpu_bytes
from cuda_agent.judge.pool import CandidateSlot, ReferenceSlot, WorkerPool, pin_current_thread
from cuda_agent.judge.reward import milestone_reward
from cuda_agent.judge.static_checks import check_imports, check_kernel_sources, check_model_new
from cuda_agent.judge.static_checks import describe as describe_findings
from cuda_agent.judge.timing import (
    PROTOCOL_VERSION,
    HostClock,
    baseline_spread,
    median_rse,
    pad_for,
    ratio_with_bound,
    reward_threshold,
    round_time,
    stat_of,
)
from cuda_agent.judge.verdict import (
    Environment,
    Status,
    Timing,
    Verdict,
    failed_stage,
    failure,
    stage_outcomes,
)
from cuda_agent.task import Task


class Stop(Exception):
    """Ends a judgment early with its verdict. A verdict about the candidate says nothing against the
    reference worker, which the pool keeps (`keeps_workers`) unless a call to it failed."""

    keeps_workers = True

    def __init__(self, verdict: Verdict) -> None:
        super().__init__(verdict.reason)
        self.verdict = verdict


def judge(submission: Path, task: Task | None = None, config: JudgeConfig | None = None) -> Verdict:
    """Judge the submission folder (`model_new.py` + `kernels/`) against `task` (default: its model.py).

    One-shot: its workers start while the build runs and are gone afterwards. Callers that judge
    repeatedly should keep a `JudgeService` instead, whose workers are already warm."""
    from cuda_agent.judge.service import JudgeService

    with JudgeService(config, keep_warm=False) as service:
        return service.judge(Path(submission), task)


def require_gpu() -> None:
    try:
        import torch
    except ImportError as exc:  # pragma: no cover
        raise JudgeUnavailable(f"torch is not importable: {exc}") from exc
    if not torch.cuda.is_available():
        raise JudgeUnavailable("no CUDA GPU is visible: the judge needs one to verify and time kernels")


def scratch_root(config: JudgeConfig) -> Path:
    if config.scratch_dir:
        return config.scratch_dir
    shm = Path("/dev/shm")
    return shm if shm.is_dir() and os.access(shm, os.W_OK) else Path(tempfile.gettempdir())


@dataclass
class Judgment:
    submission: Path
    task: Task
    config: JudgeConfig
    stages: dict[str, float] = field(default_factory=dict)
    checks: dict[str, Any] = field(default_factory=dict)
    compile_log: str = ""
    environment: Environment | None = None

    def __post_init__(self) -> None:
        root = scratch_root(self.config)
        root.mkdir(parents=True, exist_ok=True)
        self.scratch = Path(tempfile.mkdtemp(prefix="cuda-agent-judge-", dir=root))
        self.exits = ExitStack()
        self.built = False
        self.started = time.monotonic()

    # ---- the story -------------------------------------------------------------------------------
    def run(self, pool: WorkerPool) -> Verdict:
        """The whole judgment. The reference is prepared on the GPU while the build runs on the CPU."""

        def story() -> Verdict:
            with ExitStack() as held:

                def reference() -> ReferenceSlot:  # waits for a warm worker, then prepares: off the build's path
                    slot = held.enter_context(pool.reference(self.task.digest))
                    self.prepare_reference(pool, slot)
                    return slot

                with ThreadPoolExecutor(1, initializer=pin_current_thread, initargs=(pool.cpus,)) as ex:
                    prepared = ex.submit(reference)
                    try:
                        self.build()
                    finally:
                        futures_wait([prepared])  # a build failure wins over a reference failure
                ref = prepared.result()
                return self.candidate_stages(pool, ref)

        return self._guarded(story)

    def build_only(self) -> Verdict | None:
        """The CPU part alone (static checks, build): a verdict when it fails, else None."""
        try:
            self.build()
            return None
        except Stop as stop:
            return self.finish(stop.verdict)
        except Exception as exc:  # fail closed
            return self.finish(failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})"))

    def run_built(self, pool: WorkerPool) -> Verdict:
        """The GPU part of a judgment whose `build_only()` passed (the batch pipeline's GPU lane)."""

        def story() -> Verdict:
            assert self.built, "build_only() first"
            with pool.reference(self.task.digest) as ref:
                self.prepare_reference(pool, ref)
                return self.candidate_stages(pool, ref)

        return self._guarded(story)

    def candidate_stages(self, pool: WorkerPool, ref_slot: ReferenceSlot) -> Verdict:
        # Rules that depend on what the reference runs (cuBLAS only for a GEMM, cuDNN only for a conv).
        findings = check_kernel_sources(self.submission / "kernels", self.reference_ops)
        findings += check_imports(self.imports, self.reference_ops)
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        waited = time.monotonic()
        slot = pool.take_candidate()  # warmed before this candidate existed; used for it alone
        self.stages["worker_wait"] = time.monotonic() - waited
        self.exits.callback(slot.close)
        if slot.warm_error:
            raise self.fail(
                Status.RUNTIME_ERROR, f"the judge could not start a candidate worker: {slot.warm_error}"
            )
        self.install(slot)
        ref, cand = ref_slot.worker, slot.worker
        with pool.gpu_lock():
            self.load_candidate(cand, ref)
            self.verify(ref, cand)
            if not self.config.time_candidate:
                return self.verdict_ok(None)
            with pool.quiet:  # no worker warm-up in this process touches the GPU while timing runs
                timing = self.time(ref, cand)
        return self.verdict_ok(timing)

    def _guarded(self, story: Callable[[], Verdict]) -> Verdict:
        try:
            return story()
        except Stop as stop:
            return self.finish(stop.verdict)
        except Exception as exc:  # fail closed: a judge bug is never a reward
            return self.finish(failure(Status.RUNTIME_ERROR, f"judge error ({type(exc).__name__}: {exc})"))
        finally:
            self.exits.close()

    def finish(self, verdict: Verdict) -> Verdict:
        """Attach what every verdict carries: stage times, checks, environment, tolerance, log."""
        return Verdict(
            reward=verdict.reward,
            status=verdict.status,
            reason=verdict.reason,
            compile_log=verdict.compile_log or self.compile_log,
            timing=verdict.timing,
            environment=self.environment,
            tolerance={"atol": self.config.atol, "rtol": self.config.rtol},
            checks=dict(self.checks),
            stage_seconds={
                k: round(v, 3) for k, v in {**self.stages, "total": time.monotonic() - self.started}.items()
            },
            task=self.task.name,
            stages=stage_outcomes(
                failed_stage(verdict, self.stages, self.config.time_candidate),
                () if self.config.time_candidate else ("timing",),
            ),
        )

    @contextlib.contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the block's wall time to `stages[stage]` (parts inside a stage, for finding slow spots)."""
        began = time.monotonic()
        try:
            yield
        finally:
            self.stages[stage] = self.stages.get(stage, 0.0) + time.monotonic() - began

    def fail(self, status: Status, reason: str, **extra: Any) -> Stop:
        return Stop(failure(status, reason, **extra))

    # ---- stages ------------------------------------------------------------------------------------
    def build(self) -> None:
        start = time.monotonic()
        model_new = self.submission / "model_new.py"
        if not model_new.is_file():
            raise self.fail(Status.REJECTED, "no model_new.py in the submission: write class ModelNew there")
        findings = check_model_new(model_new.read_text(errors="replace"))
        if (self.submission / "kernels").is_dir():
            findings += check_kernel_sources(self.submission / "kernels")
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        self.checks["static"] = "passed"
        result = build_extension(self.submission / "kernels", self.scratch / "build", self.config.build)
        self.stages["build"] = time.monotonic() - start
        self.checks["build"] = {"compiled": list(result.compiled), "cached": list(result.cached)}
        if not result.ok:
            self.compile_log = result.log
            status = Status.TIMEOUT if result.timed_out else Status.COMPILE_ERROR
            first = next((ln for ln in result.log.splitlines() if "error" in ln.lower()), result.log[:300])
            raise self.fail(status, f"build failed: {first.strip()}", compile_log=result.log)
        self.adopt_build(result.module_path, result.imports)

    def adopt_build(self, module_file: Path, imports: dict[str, set[str]]) -> None:
        """Check the built extension and take it as the candidate: the end of `build()`, and all of it for
        an extension built from this submission on another node (service/ray_pool.py ships one from a CPU
        build task to a GPU lane); the binary checks then run again where it is judged."""
        self.imports = imports
        findings = check_imports(imports)  # what the linker binds, whatever the source spelled
        if findings:
            raise self.fail(Status.REJECTED, f"static checks failed: {describe_findings(findings)}")
        self.model_new_file = self.submission / "model_new.py"
        self.module_file = module_file
        # Attribution from the built binary (device_code.py), never from the source text.
        self.kernel_names, reserved = binary_attribution(module_file)
        self.checks["device_kernels"] = len({n for n in self.kernel_names if "(" in n or not n.startswith("_Z")})
        if reserved:
            raise self.fail(
                Status.REJECTED,
                f"kernels/ defines kernels in PyTorch's or a library's namespace ({', '.join(reserved[:3])}); "
                "their launches could not be told from PyTorch's own: rename them",
            )
        self.built = True

    def install(self, slot: CandidateSlot) -> None:
        """Put the candidate into its worker's folder: only these two files of the submission get there."""
        shutil.copyfile(self.model_new_file, slot.folder / "model_new.py")
        shutil.copyfile(self.module_file, slot.folder / f"{MODULE_NAME}.so")
        self.candidate_dir = slot.folder
        self.out_dir = slot.out_dir  # the only place the candidate writes
        self.checks["sandbox"] = slot.sandbox.protections
        # Frozen while baselines run, counted for leftovers: the worker and all it starts (freeze.py).
        self.candidate_tree = slot.tree or ProcessTree(slot.worker.pid, slot.folder)
        self.candidate_separate_user = slot.sandbox.uid is not None

    def prepare_reference(self, pool: WorkerPool, slot: ReferenceSlot) -> None:
        """Fresh secret seeds, inputs, weights and reference outputs for this judgment (GPU, locked)."""
        start = time.monotonic()
        self.reference_slot = slot
        if slot.warm_error:
            slot.broken = True
            raise self.fail(
                Status.RUNTIME_ERROR, f"the judge could not start its reference worker: {slot.warm_error}"
            )
        self.io_dir = self.scratch / "io"  # written by the reference worker, read by the candidate
        self.io_dir.mkdir()
        for path in (self.scratch, self.io_dir):
            path.chmod(0o755)  # readable by the sandbox user; writable only by the judge
        self.task_file = self.scratch / "model.py"
        self.task_file.write_text(self.task.source)
        with pool.gpu_lock():
            reply = self._prepare(slot)
        self.stages["reference"] = time.monotonic() - start
        self._check_prepared(reply)

    def _prepare(self, slot: ReferenceSlot) -> dict:
        ref = slot.worker
        self.input_seeds = [secrets.randbits(62) for _ in range(self.config.input_sets)]
        reply = self._reference_call(
            ref, "prepare", self.config.prepare_timeout_s,
            task_path=str(self.task_file), workdir=str(self.io_dir), init_seed=secrets.randbits(62),
            input_seeds=self.input_seeds, timing_seed=secrets.randbits(62),
            atol=self.config.atol, rtol=self.config.rtol, precision_audit=self.config.precision_audit,
        )  # fmt: skip
        if slot.environment is None:
            env = self._reference_call(ref, "environment", 60)
            env.pop("ok", None)
            slot.environment = env
        self.environment = Environment(**slot.environment)
        return reply

    def _check_prepared(self, reply: dict) -> None:
        if reply["degenerate"]:
            raise self.fail(
                Status.TASK_ERROR,
                f"degenerate task: {', '.join(reply['degenerate'])} passes as the output on every input set "
                f"at atol={self.config.atol:g}, rtol={self.config.rtol:g}; the task cannot tell a right answer "
                "from a trivial one",
            )
        self.checks["degeneracy_audit"] = "passed"
        self.reference_ops = set(reply["ops"])
        self.input_prints: list[str] = reply["input_prints"]
        self.checks["parameter_audit"] = reply.get("parameter_audit", {})
        self.checks["precision_audit"] = (
            f"{reply.get('precision', 'off')}, k = {self.config.precision_k:g}"
            if self.config.precision_audit else "off (tolerance only)"
        )  # fmt: skip
        self.input_files = False  # inputs drawn from seeds by the candidate worker (inputs.py)
        self.checks["inputs"] = "drawn from secret seeds in each worker"

    # ---- inputs: drawn from seeds by the candidate, or files when a seed does not reproduce them ----
    def input_args(self, set_index: int) -> dict[str, Any]:
        if self.input_files:
            return {"inputs_path": str(self.io_dir / f"inputs_{set_index}.tensors")}
        return {"inputs_seed": self.input_seeds[set_index]}

    def warmup_args(self) -> dict[str, Any]:
        """Warm-up sets of their own: fresh seeds (or, in input-file mode, the first input file)."""
        if self.input_files:
            return {"warmup_path": str(self.io_dir / "inputs_0.tensors")}
        return {"warmup_seeds": [secrets.randbits(62) for _ in range(2)]}

    def precision_k(self) -> float | None:
        return self.config.precision_k if self.config.precision_audit else None

    # ---- timed calls: fresh content for every call, the checked ones chosen after the round -------------
    def draw_round(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """Give the candidate the next round's inputs, one set per call, from seeds made now for this
        round alone (or a file of sets the reference drew, in input-file mode). Outside the host clock
        that brackets `time_round`."""
        samples = self.config.timing.samples_per_round
        self.round_seeds = [secrets.randbits(62) for _ in range(samples)]
        if self.input_files:
            made = self._reference_call(ref, "draw_round", self.config.prepare_timeout_s,
                                        seeds=self.round_seeds, workdir=str(self.io_dir))  # fmt: skip
            args: dict[str, Any] = {"inputs_path": made["path"]}
        else:
            args = {"seeds": self.round_seeds}
        self._candidate_call(cand, "draw_round", self.config.forward_timeout_s, "drawing timed inputs", **args)

    def check_round(self, ref: WorkerHandle, cand: WorkerHandle, share: float = 1.0) -> bool:
        """After a round: with probability `share` (decided now, by this process), compare the outputs
        of `timed_checks_per_round` calls chosen now with the reference on those calls' inputs. The
        candidate kept every call's output and could not tell, while it ran, whether the round or which
        call would be asked for. Returns whether the round was checked."""
        if share < 1.0 and secrets.randbelow(1 << 20) >= share * (1 << 20):
            return False
        chosen = list(range(len(self.round_seeds)))
        picks = []
        for _ in range(min(self.config.timed_checks_per_round, len(chosen))):
            picks.append(chosen.pop(secrets.randbelow(len(chosen))))
        for index in picks:
            self.spot_check(ref, cand, index)
        return True

    def switch_to_input_files(self, ref: WorkerHandle, what: str) -> None:
        """The candidate worker drew other inputs than the reference (a task whose get_inputs() a seed does
        not reproduce, or a candidate meddling with its own draw): the rest of this judgment uses input
        files the reference writes, and the caller runs its call again."""
        self._reference_call(ref, "save_inputs", self.config.prepare_timeout_s, workdir=str(self.io_dir))
        self.input_files = True
        self.checks["inputs"] = f"files written by the reference (the candidate worker drew different {what})"

    def load_candidate(self, cand: WorkerHandle, ref: WorkerHandle) -> None:
        start = time.monotonic()
        self.free_before = self._reference_call(ref, "free_memory", 60)["free"]
        self.choose_output_channel(ref, cand)
        self._candidate_call(
            cand, "load", self.config.startup_timeout_s, "loading the candidate",
            module_dir=str(self.candidate_dir), state_path=str(self.io_dir / "state.pt"),
            task_path=str(self.task_file),
        )  # fmt: skip
        self.threads_after_load = _thread_count(cand.pid)
        self.checks["candidate_threads_after_load"] = self.threads_after_load
        self.stages["load"] = time.monotonic() - start

    # ---- outputs: through shared memory (shared_outputs.py), or files where that is unavailable ------
    def choose_output_channel(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """Shared memory when both workers can use it on this machine (probed with a secret nonce before
        any candidate code is loaded), else files."""
        nonce = secrets.randbits(62)
        reply = self._candidate_call(cand, "share_probe", 60, "opening its output buffers", nonce=nonce)
        path, reason = reply.get("shared_path"), str(reply.get("reason", ""))
        self.shared_outputs = False
        if isinstance(path, str) and self._owns(cand, path):
            read = self._reference_call(ref, "read_probe", 60, path=path)
            self.shared_outputs = read.get("values") == [nonce]
            reason = str(read.get("reason") or "the reference read other values")
        self.checks["outputs"] = "shared memory (sealed memfd)" if self.shared_outputs else f"files ({reason})"

    @staticmethod
    def _owns(cand: WorkerHandle, path: str) -> bool:
        """A shared buffer must be one of this candidate worker's own descriptors, nobody else's."""
        return re.fullmatch(rf"/proc/{cand.pid}/fd/\d+", path) is not None

    def handed_over(self, cand: WorkerHandle, reply: dict, file: Path) -> dict[str, Any]:
        """Where the reference reads the outputs of the call that gave `reply`."""
        if not self.shared_outputs:
            return {"path": str(file), "shared": False}
        path = reply.get("shared_path")
        if not isinstance(path, str) or not self._owns(cand, path):
            raise self.fail(Status.REJECTED, "the candidate worker handed over its outputs outside its own buffers")
        return {"path": path, "shared": True}

    def verify(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """Run the input sets; the reference compares output k while the candidate computes k + 1."""
        start = time.monotonic()
        n = self.config.input_sets
        traced: list[dict[str, float]] = []  # the kernels of every verification call (coverage gate)
        # The five sets, then the first again from a fresh copy: the same input must give the same output.
        order = [*range(n), 0]
        pending: tuple[str, str] | None = None  # (request id, label) of the comparison in flight

        def settle() -> None:
            """Take the comparison in flight out of `pending`, then wait for it: a verdict it raises must
            not leave it there for the drain below, which would wait for a reply already read."""
            nonlocal pending
            done, pending = pending, None
            if done:
                self._settle_comparison(ref, done)

        try:
            for run_index, set_index in enumerate(order):
                label = f"input set {set_index + 1}" if run_index < n else "the repeated input set 1"
                output_path = self.out_dir / f"outputs_{run_index}.tensors"
                while True:
                    reply = self._candidate_call(
                        cand, "run", self.config.forward_timeout_s, f"forward on {label}",
                        output_path=str(output_path), poison=True, shared=self.shared_outputs, trace=True,
                        **self.input_args(set_index),
                    )  # fmt: skip
                    if self.input_files or reply["input_print"] == self.input_prints[set_index]:
                        break
                    settle()  # the reference takes one request at a time
                    self.switch_to_input_files(ref, "inputs")
                if not traced:  # CUPTI starts its threads with the first traced call: count from here on
                    self.threads_after_load = max(self.threads_after_load, _thread_count(cand.pid))
                traced.append(reply.get("kernels") or {})
                if reply["forbidden"]:
                    ops = ", ".join(f"{k} x{v}" for k, v in sorted(reply["forbidden"].items()))
                    raise self.fail(
                        Status.REJECTED,
                        f"forward ran PyTorch compute ops ({ops}); only allocation (torch.empty*), views and "
                        "cuda_extension calls are allowed: implement these in your kernels",
                    )
                own = process_gpu_bytes(cand.pid)
                if own is None:  # the fallback asks the reference: settle its comparison first
                    settle()
                # Before comparing: a memory hog must not starve the reference worker.
                self.check_memory(ref, cand, own)
                settle()
                request = self._reference_send(
                    ref, "compare", ref_index=set_index, **self.handed_over(cand, reply, output_path),
                    atol=self.config.atol, rtol=self.config.rtol, aliases=reply.get("aliases"),
                    precision_k=self.precision_k(),
                )  # fmt: skip
                pending = (request, label)
            settle()
        finally:
            if pending:  # the judgment ended with a comparison in flight: drain it or retire the worker
                try:
                    ref.receive("compare", pending[0], self.config.prepare_timeout_s)
                except WorkerFailure:
                    self.reference_slot.broken = True
        self.checks["verified_input_sets"] = n
        self.checks["repeat_determinism"] = "passed"
        self.checks["op_gate"] = "passed"
        self.check_leftovers(cand, "its forward calls")
        self.check_coverage(traced)
        self.stages["verify"] = time.monotonic() - start

    def _settle_comparison(self, ref: WorkerHandle, pending: tuple[str, str]) -> None:
        request, label = pending
        with self.timed("compare_wait"):  # what the pipelining did not hide
            verdict = self._reference_result(
                "compare", lambda: ref.receive("compare", request, self.config.prepare_timeout_s)
            )
        self.note_error_ratio(verdict)  # refused ones too: the record shows how far off they were
        if not verdict["match"]:
            raise self.fail(Status.INCORRECT, f"wrong result on {label}: {verdict['reason']}")

    def check_memory(self, ref: WorkerHandle, cand: WorkerHandle, own: int | None = None) -> None:
        """GPU memory the candidate holds after a call: its own (NVML, context included) where NVML can
        tell, else the device-wide drop in free memory since before it was loaded."""
        if own is not None:
            held, self.checks["gpu_memory_source"] = own, "nvml"
        else:  # device-wide delta since before the load
            held = self.free_before - self._reference_call(ref, "free_memory", 60)["free"]
            self.checks["gpu_memory_source"] = "device_free_delta"
        self.checks["candidate_gpu_memory_bytes"] = max(
            held, self.checks.get("candidate_gpu_memory_bytes", 0)
        )
        if held > self.config.candidate_gpu_memory_bytes:
            raise self.fail(
                Status.RUNTIME_ERROR,
                f"the candidate holds {held / 2**30:.1f} GiB of GPU memory after its forward call (limit "
                f"{self.config.candidate_gpu_memory_bytes / 2**30:.0f} GiB): free what you allocate",
            )

    def time(self, ref: WorkerHandle, cand: WorkerHandle) -> Timing:
        """Interleaved rounds of candidate, eager and torch.compile, by the protocol of timing.py: device
        time with host launch overhead hidden by one pad for all three, every stream of the context
        waited for, the parent's clock as a bound on every round, work still running after a candidate
        round charged to it, baselines timed with the candidate's process tree frozen on an idle GPU."""
        start = time.monotonic()
        tc = self.config.timing
        assert self.environment is not None
        secret, where = judge_key(self.candidate_separate_user)
        cache = BaselineCache(self.config.cache_dir, secret=secret)
        key = cache_key(self.task.digest, self.environment.key())
        cached = cache.get(key)
        self.checks["baseline_cache"] = {"authenticated_by": where, "refused_records": cache.rejected}
        setup = self._candidate_call(
            cand, "time_setup", self.config.timing_timeout_s, "warm-up before timing", **self.warmup_args()
        )  # fmt: skip
        # Warm-up may start the runtime's own threads (seen: +3 on an H200): count from here on.
        self.threads_after_load = max(self.threads_after_load, _thread_count(cand.pid))
        hosts = {"candidate": _finite(setup.get("host_ms"))}
        builds_ms: list[float] = []
        if cached is None:
            with self.baselines_window(cand, ref):
                made = self._reference_call(
                    ref, "time_setup", self.config.compile_baseline_timeout_s, modes=["eager", "compile"],
                    compile_builds=tc.compile_builds, build_windows=tc.build_windows,
                    samples=tc.samples_per_round,
                )  # fmt: skip
            hosts.update({k: _finite(v) for k, v in made["host_ms"].items()})
            builds_ms = [float(x) for x in made["compile_builds_ms"]]
            pad = pad_for(max(hosts.values()))
            self._reference_call(ref, "time_pad", 60, pad_ms=pad)
        else:
            builds_ms = list(cached.compile_builds_ms)
            pad = max(cached.pad_ms, pad_for(hosts["candidate"]))  # never shorter than the baselines had
        self._candidate_call(cand, "time_pad", 60, "setting the timing pad", pad_ms=pad)
        rounds: dict[str, list[list[float]]] = {"candidate": [], "eager": [], "compile": []}
        walls: dict[str, list[float]] = {"candidate": [], "eager": [], "compile": []}
        reference_rounds: list[tuple[float, float, list[float]]] = []  # for the HostClock
        outstanding_ms = 0.0  # GPU work found running after candidate rounds, charged to them
        escaped_ms = 0.0  # work the candidate worker itself reported past its end events
        for _ in range(tc.max_rounds):
            reply, samples, wall_ms = self._candidate_round(cand, ref, "timing")
            escaped_ms += _finite(reply.get("escaped_ms"))
            with self.baselines_window(cand, ref, freeze=cached is None) as busy_ms:
                # Work of the candidate's still on the GPU after its round: its calls' cost.
                outstanding_ms += busy_ms
                samples = [s + busy_ms / len(samples) for s in samples]
                rounds["candidate"].append(samples)
                walls["candidate"].append(wall_ms + busy_ms)
                for who in ([] if cached else ["eager", "compile"]):
                    began = time.perf_counter()
                    reply = self._reference_call(ref, "time_round", self.config.timing_timeout_s, mode=who,
                                                 samples=tc.samples_per_round)  # fmt: skip
                    wall_ms = (time.perf_counter() - began) * 1000
                    got = self._samples(who, reply, wall_ms)
                    rounds[who].append(got)
                    walls[who].append(wall_ms)
                    reference_rounds.append((wall_ms, _finite(reply.get("setup_ms")), got))
            # The first round is always checked, later ones at random (the candidate cannot tell which),
            # and the last one before timing ends.
            checked = self.check_round(ref, cand, 1.0 if len(rounds["candidate"]) == 1 else self.config.timed_check_share)
            if self._timing_done(rounds, ["candidate"] if cached else ["candidate", "eager", "compile"]):
                if not checked:
                    self.check_round(ref, cand)
                break
        self.check_timed_coverage(ref, cand)
        self.check_leftovers(cand, "timing")
        if cached is None:
            self.host_clock = HostClock.from_reference(reference_rounds)
            eager_rounds = [round_time(r, w, self.host_clock)[0] for r, w in zip(rounds["eager"], walls["eager"], strict=True)]
            compile_rounds = [round_time(r, w, self.host_clock)[0] for r, w in zip(rounds["compile"], walls["compile"], strict=True)]
            cached = BaselineRecord(
                eager_samples=[s for r in rounds["eager"] for s in r],
                compile_samples=[s for r in rounds["compile"] for s in r],
                eager_rounds=eager_rounds, compile_rounds=compile_rounds,
                overhead_ms=self.host_clock.overhead_ms, overhead_margin_ms=self.host_clock.margin_ms,
                compile_builds_ms=builds_ms, eager_spread=baseline_spread(eager_rounds),
                compile_spread=baseline_spread(compile_rounds), pad_ms=pad,
            )  # fmt: skip
            cache.put(key, cached)
            paired, source = True, "measured"
        else:
            self.host_clock = HostClock(cached.overhead_ms, cached.overhead_margin_ms)
            paired, source = False, "cached"
        charged = [round_time(r, w, self.host_clock) for r, w in zip(rounds["candidate"], walls["candidate"], strict=True)]
        cand_rounds = [t for t, _ in charged]
        cand_samples = [s for r in rounds["candidate"] for s in r]
        self.checks["host_clock"] = {
            "overhead_ms": round(self.host_clock.overhead_ms, 5),
            "margin_ms": round(self.host_clock.margin_ms, 5),
            "candidate_rounds_charged_by_host_clock": sum(by_clock for _, by_clock in charged),
            "outstanding_gpu_work_ms": round(outstanding_ms, 4),
            "work_after_end_events_ms": round(escaped_ms, 4),
        }
        eager_rounds, compile_rounds = cached.eager_rounds, cached.compile_rounds
        s_eager, s_eager_low = ratio_with_bound(eager_rounds, cand_rounds, paired=paired)
        s_comp, s_comp_low = ratio_with_bound(compile_rounds, cand_rounds, paired=paired)
        if s_comp_low > tc.plausible_speedup:
            # Too good to take on trust: time again, checking the output of every round, and keep the
            # slower of the two measurements.
            recheck = self.recheck_rounds(cand, ref)
            self.checks["plausibility_recheck_ms"] = round(statistics.median(recheck), 5)
            if statistics.median(recheck) > statistics.median(cand_rounds):
                cand_rounds = recheck
                cand_samples = recheck
                paired = False
                s_eager, s_eager_low = ratio_with_bound(eager_rounds, cand_rounds, paired=False)
                s_comp, s_comp_low = ratio_with_bound(compile_rounds, cand_rounds, paired=False)
        cand_stat = stat_of(cand_samples)
        eager_stat = stat_of(cached.eager_samples)
        compile_stat = stat_of(cached.compile_samples)
        self.stages["timing"] = time.monotonic() - start
        policy = {
            "measures": "device time per call, host launch overhead hidden up to the pad, every stream",
            "pad_ms": round(pad, 4), "host_enqueue_ms": {k: round(v, 4) for k, v in hosts.items()},
            "compile_builds_ms": [round(b, 5) for b in builds_ms],
            "eager_spread": round(cached.eager_spread, 4), "compile_spread": round(cached.compile_spread, 4),
        }  # fmt: skip
        return Timing(
            candidate_ms=cand_stat.median, eager_ms=eager_stat.median, compile_ms=compile_stat.median,
            speedup_vs_eager=s_eager, speedup_vs_compile=s_comp,
            speedup_vs_eager_low=s_eager_low, speedup_vs_compile_low=s_comp_low,
            candidate=cand_stat, eager=eager_stat, compile=compile_stat,
            rounds=len(cand_rounds), baseline_source=source, protocol=PROTOCOL_VERSION,
            eager_threshold=reward_threshold(cached.eager_spread),
            compile_threshold=reward_threshold(cached.compile_spread), policy=policy,
        )  # fmt: skip

    def _samples(self, who: str, reply: dict, wall_ms: float) -> list[float]:
        """A round's samples, refused when they cannot be true by this process's clock."""
        tc = self.config.timing
        try:
            samples = [float(x) for x in reply["samples"]]
        except (KeyError, TypeError, ValueError):
            samples = []
        if len(samples) != tc.samples_per_round or not all(0 < s < 1e9 for s in samples) or sum(samples) > wall_ms:
            raise self.fail(Status.REJECTED, f"{who} timing samples are impossible for the host clock")
        return samples

    def _candidate_round(
        self, cand: WorkerHandle, ref: WorkerHandle, purpose: str
    ) -> tuple[dict[str, Any], list[float], float]:
        """One timed round of the candidate on fresh content (drawn outside the host clock), the call it
        keeps for a possible check chosen in secret: its reply, its checked samples and the parent's wall
        time of the round in ms."""
        tc = self.config.timing
        self.draw_round(ref, cand)
        began = time.perf_counter()
        reply = self._candidate_call(cand, "time_round", self.config.timing_timeout_s, purpose,
                                     samples=tc.samples_per_round,
                                     keep=secrets.randbelow(tc.samples_per_round))  # fmt: skip
        wall_ms = (time.perf_counter() - began) * 1000
        return reply, self._samples("candidate", reply, wall_ms), wall_ms

    def recheck_rounds(self, cand: WorkerHandle, ref: WorkerHandle) -> list[float]:
        tc = self.config.timing
        medians = []
        for _ in range(tc.recheck_rounds):
            _, samples, wall_ms = self._candidate_round(cand, ref, "re-timing")
            with self.baselines_window(cand, ref, freeze=False) as busy_ms:
                wall_ms += busy_ms
            # Charge the host clock, not the events, on this strict pass (no margin).
            host_per_call = self.host_clock.bound(wall_ms, len(samples)) + self.host_clock.margin_ms
            medians.append(max(statistics.median(samples) + busy_ms / len(samples), host_per_call))
            self.check_round(ref, cand)
        return medians

    @contextlib.contextmanager
    def baselines_window(self, cand: WorkerHandle, ref: WorkerHandle, freeze: bool = True) -> Iterator[float]:
        """The candidate's whole process tree frozen and the GPU verified idle: what the reference runs
        inside is timed on a GPU the candidate cannot touch. Yields how long the GPU stayed busy after
        the candidate's last reply (its work, charged to its round by the caller).

        First the trusted reference probes the GPU while the candidate is still running (anything busy
        now is work the candidate left behind: a second context, a helper process, a patched timer), then
        the tree is frozen (cgroup v2 where available, and SIGSTOP of every process found in /proc,
        setsid children included), then the GPU must drain: work queued before the freeze keeps running,
        and must end before a baseline is timed. `freeze=False` (no baseline to time: cached ones) only
        measures the work left behind."""
        with self.timed("baseline_windows"):
            first = self._reference_call(ref, "drain", 60, timeout_s=2.0)
            if not freeze:
                yield _finite(first.get("busy_ms"))
                return
            try:
                report = self.tree_of(cand).freeze()
            except FreezeFailed as exc:
                raise self.fail(Status.REJECTED, f"the judge could not freeze the candidate's processes: {exc}") from None
        try:
            with self.timed("baseline_windows"):
                second = self._reference_call(ref, "drain", 60, timeout_s=self.config.timing.drain_timeout_s)
            if not second["drained"]:
                raise self.fail(
                    Status.REJECTED,
                    f"the GPU stayed busy for {self.config.timing.drain_timeout_s:g} s after every process of the "
                    "candidate was frozen: GPU work queued outside forward (a helper process, a second "
                    "context, deferred kernels) is not allowed",
                )
            self.checks["baseline_freeze"] = f"{report.method}; GPU verified idle before each baseline round"
            yield _finite(first.get("busy_ms")) + _finite(second.get("busy_ms"))
        finally:
            self.tree_of(cand).thaw()

    def tree_of(self, cand: WorkerHandle) -> ProcessTree:
        """The candidate's process tree: the pool's (with its cgroup), else one found by /proc alone."""
        tree = getattr(self, "candidate_tree", None)
        if tree is None or tree.pid != cand.pid:
            tree = self.candidate_tree = ProcessTree(cand.pid, getattr(self, "candidate_dir", None))
        return tree

    def spot_check(self, ref: WorkerHandle, cand: WorkerHandle, index: int) -> None:
        """Compare the output of timed call `index` of the last round with the reference's on its inputs."""
        path = self.out_dir / "timed_output.tensors"
        with self.timed("spot_checks"):
            reply = self._candidate_call(cand, "dump_call", self.config.forward_timeout_s,
                                         "saving a timed output", index=index, output_path=str(path),
                                         shared=self.shared_outputs)  # fmt: skip
            verdict = self._reference_call(
                ref, "compare_timing", self.config.prepare_timeout_s, seed=self.round_seeds[index],
                **self.handed_over(cand, reply, path), atol=self.config.atol, rtol=self.config.rtol,
                aliases=reply.get("aliases"), precision_k=self.precision_k(),
            )  # fmt: skip
        self.note_error_ratio(verdict)
        if not verdict["match"]:
            raise self.fail(Status.INCORRECT, f"a timed call returned a wrong result: {verdict['reason']}")
        self.checks["timed_spot_checks"] = self.checks.get("timed_spot_checks", 0) + 1

    def note_error_ratio(self, verdict: dict) -> None:
        """The largest precision-audit ratio seen (candidate error / reference error), for the record."""
        ratio = verdict.get("error_ratio")
        if isinstance(ratio, int | float):
            self.checks["precision_error_ratio"] = round(max(float(ratio), self.checks.get("precision_error_ratio", 0.0)), 3)

    def check_leftovers(self, cand: WorkerHandle, when: str) -> None:
        """No threads or processes may outlive a call: count them from /proc, outside the candidate."""
        threads = _thread_count(cand.pid)
        children = self.tree_of(cand).walk() - {cand.pid}  # setsid children and daemons too (freeze.py)
        baseline = self.threads_after_load
        self.checks[f"candidate_threads_after_{when.split()[-1]}"] = threads
        if children:
            raise self.fail(
                Status.REJECTED, f"the candidate left {len(children)} process(es) running after {when}"
            )
        if threads > baseline + self.config.thread_slack:
            raise self.fail(
                Status.REJECTED,
                f"the candidate started {threads - baseline} thread(s) that outlived {when}: all work must "
                "finish inside forward, on the current stream",
            )

    def check_coverage(self, traced: list[dict[str, float]]) -> None:
        """Most GPU time of the verification calls (every one was traced) must be in the submitted kernels
        (cuBLAS/cuDNN where the task has them), attributed by the built binary (coverage.py)."""
        report = coverage_report(merge(traced), self.kernel_names, self.reference_ops, calls=len(traced),
                                 libraries=linked_libraries(self.imports))  # fmt: skip
        self.checks["coverage"] = report.summary()
        self._gate_coverage(report, "forward")

    def check_timed_coverage(self, ref: WorkerHandle, cand: WorkerHandle) -> None:
        """One more round of timed calls, made exactly like the others (fresh inputs, the same sampler and
        arguments), traced: a submission honest on the verification calls and calling PyTorch (or nothing)
        on timed calls is seen here. Its samples are not used (tracing costs time); its outputs are checked
        like every round's."""
        tc = self.config.timing
        with self.timed("coverage"):
            draw = getattr(self, "draw_round", None)  # rounds with fresh content for every call
            if draw is not None:
                draw(ref, cand)
            reply = self._candidate_call(cand, "profile_round", self.config.timing_timeout_s, "timing",
                                         samples=tc.samples_per_round,
                                         keep=secrets.randbelow(tc.samples_per_round))  # fmt: skip
            check = getattr(self, "check_round", None) or getattr(self, "spot_check", None)
            if check is not None:
                check(ref, cand)
        report = coverage_report(reply.get("kernels") or {}, self.kernel_names, self.reference_ops,
                                 calls=tc.samples_per_round, libraries=linked_libraries(self.imports))  # fmt: skip
        self.checks["coverage_timed"] = report.summary()
        if report.submitted_us + report.library_us + report.copies_us <= 0:
            raise self.fail(Status.REJECTED, "a round of timed calls ran none of your kernels (only "
                            f"{report.describe_foreign()}): every call must compute its output")  # fmt: skip
        self._gate_coverage(report, "timed calls'")

    def _gate_coverage(self, report: CoverageReport, what: str) -> None:
        if not report.observed:
            raise self.fail(Status.RUNTIME_ERROR, f"the coverage gate saw no GPU kernels in {what} (profiler "
                            "unavailable, or forward launches nothing)")  # fmt: skip
        if report.share < self.config.min_coverage:
            raise self.fail(
                Status.REJECTED,
                f"only {100 * report.share:.0f}% of {what} GPU time is in your kernels; the rest is in "
                f"{report.describe_foreign()}: implement the work in kernels/",
            )

    def _timing_done(self, rounds: dict[str, list[list[float]]], contenders: list[str]) -> bool:
        tc = self.config.timing
        done = True
        for who in contenders:
            samples = [s for r in rounds[who] for s in r]
            total = sum(samples)
            if total >= tc.max_gpu_ms:
                return True
            medians = [statistics.median(r) for r in rounds[who]]
            if len(samples) < tc.min_samples or total < tc.min_gpu_ms or median_rse(medians) > tc.target_rse:
                done = False
        return done

    def verdict_ok(self, timing: Timing | None) -> Verdict:
        reward = milestone_reward(
            True,
            timing.speedup_vs_eager_low if timing else None,
            timing.speedup_vs_compile_low if timing else None,
            eager_threshold=timing.eager_threshold if timing else None,
            compile_threshold=timing.compile_threshold if timing else None,
        )
        if timing:
            reason = (
                f"correct on {self.config.input_sets} input sets; {timing.candidate_ms:.4g} ms vs eager "
                f"{timing.eager_ms:.4g} ms ({timing.speedup_vs_eager:.2f}x) and torch.compile "
                f"{timing.compile_ms:.4g} ms ({timing.speedup_vs_compile:.2f}x)"
            )
        else:
            reason = f"correct on {self.config.input_sets} input sets (not timed)"
        return self.finish(Verdict(reward=reward, status=Status.OK, reason=reason, timing=timing))

    # ---- calls that turn worker trouble into verdicts ---------------------------------------------
    def _candidate_call(self, cand: WorkerHandle, command: str, timeout: float, what: str, **kw: Any) -> dict:
        try:
            reply = cand.call(command, timeout, **kw)
        except WorkerFailure as exc:
            if exc.kind == "timeout":
                raise self.fail(
                    Status.TIMEOUT,
                    f"{what} did not finish within {timeout:.0f} s (an endless loop in a kernel or a deadlock?)",
                ) from None
            detail = _last_error_line(exc.log_tail)
            raise self.fail(
                Status.RUNTIME_ERROR,
                f"the candidate {exc} ({what})" + (f": {detail}" if detail else ""),
            ) from None
        if not reply.get("ok") and reply.get("error") == "RuleViolation":
            raise self.fail(Status.REJECTED, str(reply.get("message", ""))[:1500])
        if not reply.get("ok"):
            message = reply.get("message", "")
            if reply.get("error") == "OutOfMemoryError" or "out of memory" in message.lower():
                message = "CUDA out of memory: " + message.splitlines()[0][:300]
            raise self.fail(Status.RUNTIME_ERROR, f"{what} failed: {reply.get('error')}: {message[:1500]}")
        return reply

    def _reference_call(self, ref: WorkerHandle, command: str, timeout: float, **kw: Any) -> dict:
        return self._reference_result(command, lambda: ref.call(command, timeout, **kw))

    def _reference_send(self, ref: WorkerHandle, command: str, **kw: Any) -> str:
        try:
            return ref.send(command, **kw)
        except WorkerFailure as exc:
            self.reference_slot.broken = True
            raise self.fail(Status.TASK_ERROR, f"the reference worker {exc} during {command}") from None

    def _reference_result(self, command: str, exchange: Callable[[], Any]) -> Any:
        try:
            reply = exchange()
        except WorkerFailure as exc:
            self.reference_slot.broken = True  # never reused after a failure
            raise self.fail(
                Status.TASK_ERROR,
                f"the reference worker {exc} during {command}: {_last_error_line(exc.log_tail)}",
            ) from None
        if not reply.get("ok"):
            self.reference_slot.broken = True
            raise self.fail(
                Status.TASK_ERROR,
                f"the reference failed during {command}: {reply.get('error')}: {reply.get('message', '')[:1500]}",
            )
        return reply

    def cleanup(self) -> None:
        self.exits.close()
        if not self.config.keep_scratch:
            shutil.rmtree(self.scratch, ignore_errors=True)


def _last_error_line(log: str) -> str:
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    for line in reversed(lines):
        if any(w in line for w in ("Error", "error", "Abort", "abort", "Segmentation", "terminate")):
            return line[:500]
    return lines[-1][:500] if lines else ""


def _thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _finite(value: Any) -> float:
    """A worker's number, or 0.0 when it is not a finite non-negative float (a reply is never trusted)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0.0
    return number if 0.0 <= number < 1e9 else 0.0
