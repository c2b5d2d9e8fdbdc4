"""Build a submission's `kernels/` into the `cuda_extension` Python module.

Only `kernels/` comes from the submission. It is staged next to the judge's own clean `binding.cpp` and
`binding_registry.h` (so `#include "../binding_registry.h"` resolves to ours), each source is compiled
with the judge's flags in parallel, and objects are cached by content (source, every header in the
stage, flags, compiler and torch versions), so a change to one `.cu` recompiles one file.
Compiler messages come back trimmed to the errors, with staging paths rewritten to `kernels/...`.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.procs import GIB, Completed, Limits, run_limited, scrubbed_env
from cuda_agent.judge.toolchain import Toolchain, discover, gencode_flags
from cuda_agent.workspace.files import INFRASTRUCTURE_FILES, template_path

MODULE_NAME = "cuda_extension"
SOURCE_SUFFIXES = (".cu", ".cpp")
HEADER_SUFFIXES = (".h", ".cuh", ".hpp", ".inc", ".inl")
MAX_KERNEL_FILES = 64
MAX_KERNEL_BYTES = 4 << 20
COMPILE_LOG_LINES = 60
COMPILE_LOG_CHARS = 8000


@dataclass(frozen=True)
class BuildConfig:
    arch: str = "9.0"
    optimization: str = "-O3"
    fast_math: bool = True
    jobs: int = max(1, min(8, os.cpu_count() or 1))
    compile_timeout_s: float = 180.0
    total_timeout_s: float = 300.0
    memory_bytes: int = 16 * GIB
    cache_dir: Path | None = None  # object cache; None uses ~/.cache/cuda-agent/objects


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


class SubmissionError(ValueError):
    """kernels/ is unusable as given (no sources, symlinks, oversize files)."""


def cache_root() -> Path:
    """Where the judge caches objects and baselines: $CUDA_AGENT_CACHE or ~/.cache/cuda-agent."""
    return Path(os.environ.get("CUDA_AGENT_CACHE") or Path.home() / ".cache" / "cuda-agent")


def default_cache_dir() -> Path:
    return cache_root() / "objects"


def stage_submission(kernels_dir: Path, stage: Path) -> list[Path]:
    """Copy kernels/ and the judge's infrastructure into `stage`. Returns the staged sources."""
    if not kernels_dir.is_dir():
        raise SubmissionError("no kernels/ folder: put your .cu and _binding.cpp files in kernels/")
    stage.mkdir(parents=True, exist_ok=True)
    for name in INFRASTRUCTURE_FILES:
        shutil.copyfile(template_path(name), stage / name)
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
    return [stage / "binding.cpp", *sources]


def _common_defines(tc: Toolchain) -> list[str]:
    return [
        f"-DTORCH_EXTENSION_NAME={MODULE_NAME}",
        "-DTORCH_API_INCLUDE_EXTENSION_H",
        f"-D_GLIBCXX_USE_CXX11_ABI={tc.cxx11_abi}",
        *[f"-I{d}" for d in tc.include_dirs],
    ]


def compile_command(source: Path, obj: Path, tc: Toolchain, config: BuildConfig) -> list[str]:
    if source.suffix == ".cu":
        return [
            tc.nvcc, "-c", str(source), "-o", str(obj),
            config.optimization, f"-std={tc.cxx_standard}", *gencode_flags(config.arch),
            *(["--use_fast_math"] if config.fast_math else []),
            "-Xcompiler", "-fPIC", "--expt-relaxed-constexpr", "--expt-extended-lambda",
            # torch's own defaults, so that sources written for cpp_extension.load compile the same way
            "-D__CUDA_NO_HALF_OPERATORS__", "-D__CUDA_NO_HALF_CONVERSIONS__",
            "-D__CUDA_NO_BFLOAT16_CONVERSIONS__", "-D__CUDA_NO_HALF2_OPERATORS__",
            f"-ccbin={tc.cxx}", *_common_defines(tc),
        ]  # fmt: skip
    return [
        tc.cxx, "-c", str(source), "-o", str(obj), config.optimization, f"-std={tc.cxx_standard}",
        "-fPIC", "-fvisibility=hidden", "-w" if source.name == "binding.cpp" else "-Wno-unused-function",
        *_common_defines(tc),
    ]  # fmt: skip


def link_command(objects: list[Path], output: Path, tc: Toolchain) -> list[str]:
    rpaths = [f"-Wl,-rpath,{d}" for d in tc.library_dirs]
    return [tc.cxx, "-shared", "-o", str(output), *map(str, objects), *tc.library_files, *rpaths]


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


def build_extension(kernels_dir: Path, out_dir: Path, config: BuildConfig | None = None) -> BuildResult:
    """Build `kernels_dir` into `out_dir/cuda_extension.so`. Never raises for a bad submission."""
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
        return _compile_and_link(sources, stage, out_dir, config, start)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def _compile_and_link(
    sources: list[Path], stage: Path, out_dir: Path, config: BuildConfig, start: float
) -> BuildResult:
    tc = discover()
    cache = config.cache_dir or default_cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    limits = Limits(address_space_bytes=config.memory_bytes, cpu_seconds=int(config.compile_timeout_s) + 5)
    env = scrubbed_env({"TMPDIR": str(stage)})

    jobs: list[tuple[Path, Path, list[str]]] = []
    cached: list[str] = []
    objects: list[Path] = []
    for source in sources:
        command = compile_command(source, stage / (source.name + ".o"), tc, config)
        cached_obj = cache / f"{_object_key(source, stage, command, tc)}.o"
        objects.append(cached_obj)
        if cached_obj.exists():
            cached.append(_display(source, stage))
        else:
            jobs.append((source, cached_obj, command))

    def compile_one(job: tuple[Path, Path, list[str]]) -> tuple[Path, Path, Completed]:
        source, cached_obj, command = job
        remaining = config.total_timeout_s - (time.monotonic() - start)
        result = run_limited(
            command,
            cwd=stage,
            env=env,
            timeout=max(1.0, min(config.compile_timeout_s, remaining)),
            limits=limits,
        )
        produced = Path(command[command.index("-o") + 1])
        if result.returncode == 0 and produced.exists():
            tmp = cached_obj.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(produced, tmp)
            os.replace(tmp, cached_obj)  # atomic: concurrent builds never see half an object
        return source, cached_obj, result

    with ThreadPoolExecutor(max_workers=max(1, config.jobs)) as pool:
        results = list(pool.map(compile_one, jobs))

    failures = [(s, r) for s, _, r in results if r.returncode != 0 or r.timed_out]
    full_log = "\n".join(_rewrite_paths(r.stdout + r.stderr, stage) for _, _, r in results).strip()
    commands = tuple(" ".join(c) for _, _, c in jobs)
    compiled = tuple(_display(s, stage) for s, _, _ in results)
    if failures:
        timed_out = any(r.timed_out for _, r in failures)
        if timed_out:
            names = ", ".join(_display(s, stage) for s, r in failures if r.timed_out)
            log = f"compilation of {names} did not finish within {config.compile_timeout_s:.0f} s and was stopped"
        else:
            log = "\n".join(
                line
                for _, r in failures
                for line in trim_compiler_output(_rewrite_paths(r.stdout + r.stderr, stage))
            )
        return BuildResult(False, None, log, full_log, time.monotonic() - start, compiled, tuple(cached),
                           timed_out, commands)  # fmt: skip

    module_path = out_dir / f"{MODULE_NAME}.so"
    tmp_module = out_dir / f".{MODULE_NAME}.{os.getpid()}.so"
    link = link_command(objects, tmp_module, tc)
    remaining = max(5.0, config.total_timeout_s - (time.monotonic() - start))
    linked = run_limited(link, cwd=stage, env=env, timeout=remaining, limits=limits)
    link_log = _rewrite_paths(linked.stdout + linked.stderr, stage)
    if linked.returncode != 0 or not tmp_module.exists():
        log = "link failed:\n" + "\n".join(trim_compiler_output(link_log))
        return BuildResult(False, None, log, full_log + "\n" + link_log, time.monotonic() - start, compiled,
                           tuple(cached), linked.timed_out, (*commands, " ".join(link)))  # fmt: skip
    os.replace(tmp_module, module_path)
    return BuildResult(True, module_path, "", full_log, time.monotonic() - start, compiled, tuple(cached),
                       False, (*commands, " ".join(link)))  # fmt: skip


def _display(source: Path, stage: Path) -> str:
    return str(source.relative_to(stage))


def _rewrite_paths(text: str, stage: Path) -> str:
    return text.replace(str(stage) + "/", "").replace(str(stage), ".")


_ERROR_LINE = re.compile(r"(error|undefined reference|fatal|multiple definition|Error)", re.IGNORECASE)


def trim_compiler_output(text: str) -> list[str]:
    """Keep the lines an agent needs: each error with the source lines the compiler printed under it."""
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    keep: list[str] = []
    for i, line in enumerate(lines):
        if _ERROR_LINE.search(line) and "warning" not in line.lower().split("error")[0]:
            for context in lines[i : i + 3]:
                if context not in keep[-3:]:
                    keep.append(context)
    if not keep:
        keep = lines[-COMPILE_LOG_LINES:]
    if len(keep) > COMPILE_LOG_LINES:
        dropped = len(keep) - COMPILE_LOG_LINES
        keep = [*keep[:COMPILE_LOG_LINES], f"... {dropped} more lines of errors cut"]
    trimmed: list[str] = []
    size = 0
    for line in keep:
        size += len(line) + 1
        if size > COMPILE_LOG_CHARS:
            trimmed.append("... output cut")
            break
        trimmed.append(line)
    return trimmed
