"""Build a submission's `kernels/` into the `cuda_extension` Python module.

Only `kernels/` comes from the submission. It is staged next to the judge's own clean `binding.cpp` and
`binding_registry.h` (so `#include "../binding_registry.h"` resolves to ours), each source is compiled
with the judge's flags in parallel, and objects are cached by content (source, every header in the
stage, flags, compiler and torch versions), so a change to one `.cu` recompiles one file.
Compiler messages come back trimmed to the errors, with staging paths rewritten to `kernels/...`.

Host `.cpp` translation units that include torch or pybind11 are slow to compile: every one parses
`torch/types.h`, `pybind11` and the c10 CUDA headers (most of their compile time). They are compiled with
a precompiled header (PCH) built once from the judge's own `PCH_HEADER` (never from a submission) with
exactly the flags of those units, cached beside the objects and shared by concurrent builds; a unit gets
it through `-include`, so its own `#include`s of the same headers become no-ops. If the PCH cannot be
built, units compile without it (slower, same result). `ensure_pch` lets a service build it ahead of time.
`BuildConfig.read_only_caches` are object caches (an episode's shared layer, see cache.py) where a build
looks the PCH and objects up, uses them in place and never writes; what it compiles goes to `cache_dir`,
whose least recently used entries are pruned beyond `cache_budget_bytes`.
`.cpp` units compile at `-O1` (`BuildConfig.host_optimization`): they are host glue (argument checks,
kernel launches), and measured against -O2/-O3 it cuts what remains of their compile time (instantiating
and emitting pybind11's inline code, which a PCH cannot save) by about a third; `.cu` files keep -O3.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.common.procs import GIB, Completed, Limits, run_limited, scrubbed_env
from cuda_agent.judge.trusted import cache as caches
from cuda_agent.judge.trusted import driver_gate
from cuda_agent.judge.trusted.build_commands import (
    EXTENDED_LAMBDA_FLAG,
    MODULE_NAME,
    compile_command,
    link_command,
)
from cuda_agent.judge.trusted.compiler_log import trim_compiler_output
from cuda_agent.judge.trusted.pch import (
    PCH_NOT_USED,
    Pch,
    build_pch,
    ensure_pch,
    pch_command,
    pch_paths,
    read_only_pch,
    wants_pch,
)
from cuda_agent.judge.trusted.toolchain import Toolchain, discover
from cuda_agent.workspace.files import INFRASTRUCTURE_FILES, template_path

__all__ = ["CANCELLED", "MODULE_NAME", "BuildConfig", "BuildResult", "SubmissionError", "build_extension", "cache_root",
           "compile_command", "default_cache_dir", "ensure_pch", "judge_units", "link_command", "pch_command",
           "stage_submission", "trim_compiler_output"]  # fmt: skip  (commands: build_commands.py; PCH: pch.py)
SOURCE_SUFFIXES = (".cu", ".cpp")
HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".inc", ".inl")
MAX_KERNEL_FILES = 64
MAX_KERNEL_BYTES = 4 << 20


@dataclass(frozen=True)
class BuildConfig:
    arch: str = "9.0"
    optimization: str = "-O3"  # nvcc, for .cu files
    host_optimization: str = "-O1"  # g++, for .cpp files: host glue, see the module docstring
    precompiled_header: bool = True  # compile .cpp units that include torch/pybind11 with the judge's PCH
    # --use_fast_math for .cu files. Off: it silently turns `sinf`/`expf`/`x / y` into `__sinf`/`__expf`/
    # approximate division, which the precision audit then refuses as the kernel's own doing (a sinf on
    # large arguments, 400x the reference's error). A kernel writer who wants the intrinsics writes them,
    # and the audit judges the result (docs/design/static_rules.md, "Build flags").
    fast_math: bool = False
    jobs: int = max(1, min(8, os.cpu_count() or 1))
    compile_timeout_s: float = 180.0
    total_timeout_s: float = 300.0
    memory_bytes: int = 16 * GIB
    cache_dir: Path | None = None  # object cache; None uses ~/.cache/cuda-agent/objects
    # Object caches only read from (an episode's shared layer): never written, never pruned by this build.
    read_only_caches: tuple[Path, ...] = ()
    # Bytes the cache root of `cache_dir` may hold before its least recently used entries go (None: no cap).
    cache_budget_bytes: int | None = field(default_factory=caches.budget_from_env)
    # The judge's own binding.cpp object comes from a folder private to this process (never from a cache a
    # candidate could write). Off only for builds whose result no verdict trusts: the workspace's
    # utils/compile.sh and warming the shared cache, which then reuse it (and the PCH) across processes.
    private_judge_binding: bool = True


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    module_path: Path | None
    log: str  # trimmed compiler output an agent can act on (empty on success)
    full_log: str
    seconds: float
    compiled: tuple[str, ...] = ()  # sources compiled this time
    cached: tuple[str, ...] = ()  # sources whose objects came from the cache
    timed_out: bool = False
    commands: tuple[str, ...] = field(default=(), repr=False)
    # Every .cpp unit that includes torch/pybind11 (compiled now or from the cache) used the judge's PCH.
    pch: bool = False
    pch_note: str = ""  # why the PCH was not used (a fallback, not an error); empty when it was
    # Undefined symbols of each submission object (by source under kernels/): what the linker binds for it,
    # checked by static_checks.check_imports whatever the source spelled (the judge's binding.cpp excluded).
    imports: dict[str, set[str]] = field(default_factory=dict, repr=False)
    # Wall seconds of the build's steps ("compile": all units, in parallel; "link"), for finding slow spots.
    step_seconds: dict[str, float] = field(default_factory=dict)
    # Each unit compiled this time, its compiler's own seconds: which one a cold build waited for.
    unit_seconds: dict[str, float] = field(default_factory=dict)

    def record(self) -> dict[str, object]:
        """What a verdict's `checks.build` says of the build: what was compiled and cached, and the seconds."""
        return {"compiled": list(self.compiled), "cached": list(self.cached), "seconds": dict(self.step_seconds),
                "unit_seconds": dict(self.unit_seconds)}  # fmt: skip


class SubmissionError(ValueError):
    """kernels/ is unusable as given (no sources, symlinks, oversize files)."""


def cache_root() -> Path:
    """Where the judge caches objects and baselines: $CUDA_AGENT_CACHE or ~/.cache/cuda-agent."""
    return caches.cache_root()


def default_cache_dir() -> Path:
    return cache_root() / "objects"


def stage_submission(kernels_dir: Path, stage: Path) -> list[Path]:
    """Copy kernels/ and the judge's infrastructure into `stage`. Returns the staged sources: the judge's
    own units first (`binding.cpp`, the driver gate), then the submission's."""
    if not kernels_dir.is_dir():
        raise SubmissionError("no kernels/ folder: put your .cu and _binding.cpp files in kernels/")
    stage.mkdir(parents=True, exist_ok=True)
    for name in INFRASTRUCTURE_FILES:
        shutil.copyfile(template_path(name), stage / name)
    (stage / driver_gate.UNIT_NAME).write_text(driver_gate.gate_source())
    staged_kernels = stage / "kernels"
    staged_kernels.mkdir(exist_ok=True)
    files = sorted(p for p in kernels_dir.rglob("*") if not p.is_dir())
    if len(files) > MAX_KERNEL_FILES:
        raise SubmissionError(f"kernels/ holds {len(files)} files; at most {MAX_KERNEL_FILES} are allowed")
    sources: list[Path] = []
    for path in files:
        relative = path.relative_to(kernels_dir)
        if path.is_symlink():
            raise SubmissionError(f"kernels/{relative} is a symbolic link; submit regular files only")
        if path.suffix not in SOURCE_SUFFIXES + HEADER_SUFFIXES:
            continue  # notes, backups, build products: not part of the build
        if path.stat().st_size > MAX_KERNEL_BYTES:
            raise SubmissionError(f"kernels/{relative} is larger than {MAX_KERNEL_BYTES >> 20} MiB")
        target = staged_kernels / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        if path.suffix in SOURCE_SUFFIXES and len(relative.parts) == 1:
            sources.append(target)
    if not any(s.suffix == ".cu" for s in sources) and not any(
        s.name.endswith("_binding.cpp") for s in sources
    ):
        raise SubmissionError("kernels/ has no .cu or _binding.cpp source to build")
    return [stage / "binding.cpp", stage / driver_gate.UNIT_NAME, *sources]


def judge_units(stage: Path) -> tuple[Path, Path]:
    """The judge's own units in a stage: linked into every submission, never the submission's code."""
    return stage / "binding.cpp", stage / driver_gate.UNIT_NAME



def _object_key(source: Path, stage: Path, command: list[str], tc: Toolchain) -> str:
    """Content key of one object: its source, every header in the stage, the command and the toolchain."""
    digest = hashlib.sha256()
    digest.update(tc.fingerprint().encode())
    digest.update("\0".join(_relocatable(command, stage)).encode())
    digest.update(source.read_bytes())
    for header in sorted(stage.rglob("*")):
        if header.suffix in HEADER_SUFFIXES:
            digest.update(str(header.relative_to(stage)).encode())
            digest.update(header.read_bytes())
    return digest.hexdigest()


def _relocatable(command: list[str], stage: Path) -> list[str]:
    return [arg.replace(str(stage), "<stage>") for arg in command if not arg.endswith(".o")]


_Plan = tuple[list[str], Path, bool]  # compile command, cached object, built with the PCH


def build_extension(
    kernels_dir: Path, out_dir: Path, config: BuildConfig | None = None, cancel: threading.Event | None = None
) -> BuildResult:
    """Build `kernels_dir` into `out_dir/cuda_extension.so`. Never raises for a bad submission.

    Setting `cancel` (from another thread: the static checks running beside the build found a reason
    to refuse) kills the compilers still running and starts no more; the result is then not ok, its log
    says it was cancelled, and nothing half-built is cached. The shared PCH is never cancelled."""
    config = config or BuildConfig()
    start = time.monotonic()
    # Compilers run with the stage as their working folder: every path they get must be absolute.
    kernels_dir, out_dir = Path(kernels_dir).resolve(), Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix="stage-", dir=out_dir))
    try:
        try:
            sources = stage_submission(kernels_dir, stage)
        except SubmissionError as exc:
            return BuildResult(False, None, str(exc), str(exc), time.monotonic() - start)
        return _compile_and_link(sources, stage, out_dir, config, start, cancel)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


CANCELLED = "build cancelled: the judgment was already decided"


def _finished(future: Future, cancel: threading.Event | None) -> bool:
    """Wait for `future`; False as soon as `cancel` is set instead."""
    while True:
        try:
            future.result(timeout=None if cancel is None else 0.05)
            return True
        except FutureTimeout:
            if cancel is not None and cancel.is_set():
                return False
        except Exception:
            return True  # its result() raises it for the caller


def _compile_and_link(
    sources: list[Path], stage: Path, out_dir: Path, config: BuildConfig, start: float,
    cancel: threading.Event | None = None,
) -> BuildResult:  # fmt: skip
    tc = discover()
    cache = config.cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    limits = Limits(address_space_bytes=config.memory_bytes, cpu_seconds=int(config.compile_timeout_s) + 5)
    env = scrubbed_env({"TMPDIR": str(stage)})

    # Which units take the PCH, and where it is (or will be): its folder is a pure function of the
    # judge's header, the toolchain and the flags, so objects made with it can be found in the cache
    # before it exists, and an all-cached build never waits for it.
    # The judge's own units: never from (or through) a shared cache, unless no verdict trusts this build.
    private = set(judge_units(stage)) if config.private_judge_binding else set()
    wanting = {s for s in sources if config.precompiled_header and s not in private and wants_pch(s)}
    pch = Pch(None)
    planned: Path | None = None
    shared_pch = read_only_pch(tc, config) if wanting else None
    if shared_pch is not None:  # a shared layer has it: used in place, nothing to build or wait for
        pch, planned = Pch(shared_pch), shared_pch
    elif wanting:
        header, gch, failed = pch_paths(tc, config, cache)
        if failed.exists():
            pch = Pch(None, f"precompiled header failed to compile earlier (see {failed})")
        else:
            planned = header
            caches.touch(gch)

    def plan(source: Path, header: Path | None) -> _Plan:
        use = header if source in wanting else None
        command = compile_command(source, stage / (source.name + ".o"), tc, config, use)
        name = f"{_object_key(source, stage, command, tc)}.o"
        if source in private:
            # Linked into every submission: a forged object in a cache the candidate can write would run
            # in all later ones. Compiled once per judge process, without the shared PCH, into a folder
            # only this process knows (_private_objects).
            return command, _private_objects() / name, False
        found = next((layer / name for layer in config.read_only_caches if (layer / name).is_file()), None)
        if found is None:
            found = cache / name
            caches.touch(found)  # a hit is a use (LRU); a miss touches nothing
        return command, found, use is not None

    plans = {source: plan(source, planned) for source in sources}
    pending = [s for s in sources if not plans[s][1].exists()]
    waits_for_pch = [s for s in pending if plans[s][2] and shared_pch is None]

    ran: dict[Path, list[str]] = {}  # the command each compiled unit last ran (for the build's log)

    def run_compiler(command: list[str]) -> Completed:
        if cancel is not None and cancel.is_set():
            return Completed(-9, "", CANCELLED, 0.0, False)
        remaining = config.total_timeout_s - (time.monotonic() - start)
        return run_limited(
            command,
            cwd=stage,
            env=env,
            timeout=max(1.0, min(config.compile_timeout_s, remaining)),
            limits=limits,
            cancel=cancel,
        )

    def compile_one(source: Path, command: list[str], cached_obj: Path) -> Completed:
        ran[source] = command
        result = run_compiler(command)
        if source.suffix == ".cu" and result.returncode != 0 and EXTENDED_LAMBDA_FLAG in result.stdout + result.stderr:
            # Cached under the plain command's key: the same source needs the flag every time.
            command = compile_command(source, Path(command[command.index("-o") + 1]), tc, config, extended_lambda=True)
            ran[source] = command
            result = run_compiler(command)
        produced = Path(command[command.index("-o") + 1])
        if result.returncode == 0 and produced.exists():
            tmp = cached_obj.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
            shutil.copyfile(produced, tmp)
            os.replace(tmp, cached_obj)  # atomic: concurrent builds never see half an object
        return result

    futures: dict[Path, Future[Completed]] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, config.jobs))
    pch_future = None
    try:
        if waits_for_pch:  # the PCH builds while the .cu files compile
            remaining = config.total_timeout_s - (time.monotonic() - start)
            pch_timeout = max(1.0, min(config.compile_timeout_s, remaining))
            pch_future = pool.submit(build_pch, tc, config, cache, pch_timeout)
        for source in pending:
            if source not in waits_for_pch:
                futures[source] = pool.submit(compile_one, source, *plans[source][:2])
        if pch_future is not None and _finished(pch_future, cancel):
            pch = pch_future.result()
            for source in waits_for_pch:
                if pch.header is None:  # fall back: compile (or find cached) without it
                    plans[source] = plan(source, None)
                    if plans[source][1].exists():
                        continue
                futures[source] = pool.submit(compile_one, source, *plans[source][:2])
        results = [(s, futures[s].result()) for s in sources if s in futures]
        results = [(s, ran.get(s, plans[s][0]), r) for s, r in results]
    finally:
        # Cancelled: the shared PCH (never cancelled) finishes in the background for later builds.
        pool.shutdown(wait=not (cancel is not None and cancel.is_set()))
    if futures or pch.command:  # this build wrote to its cache: keep the cache within its budget
        caches.maybe_prune(cache, config.cache_budget_bytes)

    cached = [_display(s, stage) for s in sources if s not in futures]
    if cancel is not None and cancel.is_set():
        return BuildResult(False, None, CANCELLED, CANCELLED, time.monotonic() - start,
                           tuple(_display(s, stage) for s in futures), tuple(cached))  # fmt: skip
    objects = [plans[s][1] for s in sources]
    rejected = next((line for _, _, r in results for line in (r.stdout + r.stderr).splitlines()
                     if PCH_NOT_USED in line), None)  # fmt: skip
    if rejected:
        pch = Pch(None, f"g++ did not take the precompiled header: {rejected.strip()}", pch.command)
    used_pch = bool(wanting) and rejected is None and all(plans[s][2] for s in wanting)
    pch_note = "" if used_pch or not wanting else (pch.note or "precompiled header disabled")
    failures = [(s, r) for s, _, r in results if r.returncode != 0 or r.timed_out]
    full_log = "\n".join(_rewrite_paths(r.stdout + r.stderr, stage) for _, _, r in results).strip()
    if pch_note:
        full_log = f"note: .cpp sources compiled without the precompiled header: {pch_note}\n{full_log}"
    pch_commands = [" ".join(pch.command)] if pch.command else []
    commands = (*pch_commands, *(" ".join(c) for _, c, _ in results))
    compiled = tuple(_display(s, stage) for s, _, _ in results)
    if failures:
        timed_out = any(r.timed_out for _, r in failures)
        if timed_out:
            names = ", ".join(_display(s, stage) for s, r in failures if r.timed_out)
            log = f"compilation of {names} did not finish within {_limit_reached(config, start)} and was stopped"
        else:
            log = "\n".join(
                line
                for _, r in failures
                for line in trim_compiler_output(_rewrite_paths(r.stdout + r.stderr, stage))
            )
        return BuildResult(False, None, log, full_log, time.monotonic() - start, compiled, tuple(cached),
                           timed_out, commands, used_pch, pch_note)  # fmt: skip

    module_path = out_dir / f"{MODULE_NAME}.so"
    tmp_module = out_dir / f".{MODULE_NAME}.{os.getpid()}.so"
    link = link_command(objects, tmp_module, tc)
    remaining = max(5.0, config.total_timeout_s - (time.monotonic() - start))
    link_began = time.monotonic()
    linked = run_limited(link, cwd=stage, env=env, timeout=remaining, limits=limits, cancel=cancel)
    steps = {"compile": round(link_began - start, 3), "link": round(time.monotonic() - link_began, 3)}
    link_log = _rewrite_paths(linked.stdout + linked.stderr, stage)
    if linked.returncode != 0 or not tmp_module.exists():
        log = "link failed:\n" + "\n".join(trim_compiler_output(link_log))
        return BuildResult(False, None, log, full_log + "\n" + link_log, time.monotonic() - start, compiled,
                           tuple(cached), linked.timed_out, (*commands, " ".join(link)), used_pch,
                           pch_note, step_seconds=steps)  # fmt: skip
    os.replace(tmp_module, module_path)
    from cuda_agent.judge.trusted.device_code import imported_symbols

    # What the judge's own binding.cpp imports is what this toolchain's headers (pybind11, torch/extension.h)
    # make every binding import: torch 2.11's headers, for one, pull PyObject_CallObject into each object.
    # Those symbols say nothing about the submission, so they are subtracted; the rules judge only the rest
    # (a submission that calls them on purpose is left to the source rules on the preprocessed text).
    judge_binding, gate = judge_units(stage)
    toolchain_baseline = imported_symbols(plans[judge_binding][1]) if judge_binding in plans else set()
    imports = {
        _display(s, stage): imported_symbols(plans[s][1]) - toolchain_baseline
        for s in sources
        if s not in (judge_binding, gate)
    }
    # What the linked extension still imports of the names the gate defines: nothing, unless a call got
    # past the gate (a versioned reference, a new variant); static_checks.check_imports refuses it.
    imports[driver_gate.LINKED_MODULE] = {s for s in imported_symbols(module_path) if _base(s) in driver_gate.GATED}
    return BuildResult(True, module_path, "", full_log, time.monotonic() - start, compiled, tuple(cached),
                       False, (*commands, " ".join(link)), used_pch, pch_note, imports, steps,
                       {_display(s, stage): round(r.seconds, 3) for s, _, r in results})  # fmt: skip


def _base(symbol: str) -> str:
    """A symbol without its version (`cudaSetDevice@libcudart.so.13` -> `cudaSetDevice`)."""
    return symbol.split("@", 1)[0]


@functools.cache
def _private_objects() -> Path:
    """A 0700 folder of this judge process for the objects of its own sources (removed at exit)."""
    folder = Path(tempfile.mkdtemp(prefix="cuda-agent-judge-objects-"))
    atexit.register(shutil.rmtree, folder, True)
    return folder


def _display(source: Path, stage: Path) -> str:
    return str(source.relative_to(stage))


def _rewrite_paths(text: str, stage: Path) -> str:
    return text.replace(str(stage) + "/", "").replace(str(stage), ".")


def _limit_reached(config: BuildConfig, start: float) -> str:
    """Which limit stopped a compilation: a unit gets the smaller of the per-file limit and what is left of
    the build's total, and the message names the one that applied (it once named an 800 s per-file limit
    when the 300 s total had stopped the build)."""
    if time.monotonic() - start >= config.total_timeout_s - 1.0:
        return f"the build's total limit of {config.total_timeout_s:.0f} s"
    return f"{config.compile_timeout_s:.0f} s"
