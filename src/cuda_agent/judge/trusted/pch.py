"""The judge's precompiled header for `.cpp` units that include torch or pybind11 (see build.py's docstring).

Built once from the judge's own `PCH_HEADER` (never from a submission) with exactly the flags of those
units (build_commands.py), content-keyed in the object cache, shared by concurrent builds under a file
lock; a PCH that fails to compile is recorded and builds go on without it. `ensure_pch` lets a service
build it ahead of its first submission.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from cuda_agent.judge.common.procs import Limits, run_limited, scrubbed_env
from cuda_agent.judge.trusted.build_commands import cxx_flags
from cuda_agent.judge.trusted.toolchain import Toolchain, discover

if TYPE_CHECKING:
    from cuda_agent.judge.trusted.build import BuildConfig

# The headers that (nearly) every kernels/*_binding.cpp includes, directly or through binding_registry.h.
# torch/extension.h (torch/all.h) is left out on purpose: no bundled source needs it, and a PCH does not
# save the template instantiation and code a header forces into every unit, which for it is large.
PCH_NAME = "torch_binding_pch.h"
PCH_HEADER = """\
// torch_binding_pch.h -- the judge's precompiled header for .cpp units (see cuda_agent.judge.trusted.build).
#ifndef CUDA_AGENT_TORCH_BINDING_PCH_H
#define CUDA_AGENT_TORCH_BINDING_PCH_H
#include <cuda_runtime.h>
#include <torch/types.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <ATen/cuda/CUDAContext.h>
#endif
"""
# A .cpp unit gets the PCH only when it includes one of these (a plain cuBLAS or C++ helper would pay
# for loading and instantiating headers it never asked for).
PCH_USERS = re.compile(r"^\s*#\s*include\s*[<\"](?:torch/|pybind11/|c10/|ATen/|(?:\.\./)?binding_registry\.h)",
                        re.MULTILINE)  # fmt: skip
PCH_NOT_USED = f"{PCH_NAME}.gch: not used because"  # what -Winvalid-pch prints when g++ rejects it


@dataclass(frozen=True)
class Pch:
    header: Path | None  # what to -include; the .gch lies beside it. None: compile without the PCH
    note: str = ""  # why there is none
    command: tuple[str, ...] = ()  # the command that built it, when this call built it
    log: str = ""


def pch_paths(tc: Toolchain, config: BuildConfig, cache: Path) -> tuple[Path, Path, Path]:
    """The judge's PCH header, its .gch beside it, and the record of a failed compile."""
    folder = pch_folder(tc, config, cache, PCH_HEADER)
    return folder / PCH_NAME, folder / (PCH_NAME + ".gch"), folder / "failed.log"


def pch_folder(tc: Toolchain, config: BuildConfig, cache: Path, text: str) -> Path:
    """Content-keyed home of one PCH: its header text, the toolchain and the exact g++ flags."""
    digest = hashlib.sha256()
    for part in (text, tc.fingerprint(), tc.cxx, *cxx_flags(tc, config)):
        digest.update(part.encode())
        digest.update(b"\0")
    return cache / "pch" / digest.hexdigest()[:40]


def read_only_pch(tc: Toolchain, config: BuildConfig) -> Path | None:
    """The judge's PCH header in a read-only layer, when one holds the finished .gch for these flags."""
    for layer in config.read_only_caches:
        header, gch, _ = pch_paths(tc, config, layer)
        if gch.is_file() and header.is_file():
            return header
    return None


def pch_command(header: Path, gch: Path, tc: Toolchain, config: BuildConfig) -> list[str]:
    """Compile the PCH header with the flags of the .cpp units (see `compile_command`)."""
    return [tc.cxx, "-x", "c++-header", str(header), "-o", str(gch), *cxx_flags(tc, config),
            "-Wno-unused-function"]  # fmt: skip


def ensure_pch(config: BuildConfig | None = None) -> Path | None:
    """Build the judge's PCH for `config` unless it is cached; return the header to `-include`, or None.

    Builds reach for it themselves; a judge service calls this at start-up so that the first submission
    does not wait for it (it takes ~1.5x as long as one binding unit without it). Safe to call from several
    threads or processes at once: one builds it, the others wait for it. Never raises for a compiler
    failure: a PCH that does not compile is recorded in the cache and builds go on without it.
    """
    from cuda_agent.judge.trusted.build import BuildConfig, default_cache_dir  # build imports this module

    config = config or BuildConfig()
    if not config.precompiled_header:
        return None
    cache = config.cache_dir or default_cache_dir()
    return build_pch(discover(), config, cache, config.compile_timeout_s).header


def build_pch(tc: Toolchain, config: BuildConfig, cache: Path, timeout: float) -> Pch:
    text = PCH_HEADER  # the judge's own header: nothing of a submission reaches the PCH
    header, gch, failed = pch_paths(tc, config, cache)
    folder = header.parent
    if gch.exists():
        return Pch(header)
    if failed.exists():
        return Pch(None, "precompiled header failed to compile earlier (see " + str(failed) + ")")
    deadline = time.monotonic() + timeout
    folder.mkdir(parents=True, exist_ok=True)
    with file_lock(folder / ".lock", deadline) as held:
        if not held:
            return Pch(None, "timed out waiting for another build to finish the precompiled header")
        if gch.exists():  # another build made it while we waited
            return Pch(header)
        if failed.exists():
            return Pch(None, "precompiled header failed to compile (see " + str(failed) + ")")
        for stale in folder.glob("tmp-*"):  # left by a killed build: only the lock holder writes here
            shutil.rmtree(stale, ignore_errors=True)
        if not header.exists():
            write_atomic(header, text.encode())
        work = Path(tempfile.mkdtemp(prefix="tmp-", dir=folder))
        try:
            command = pch_command(header, work / (PCH_NAME + ".gch"), tc, config)
            result = run_limited(
                command,
                cwd=work,
                env=scrubbed_env({"TMPDIR": str(work)}),
                timeout=max(1.0, deadline - time.monotonic()),
                limits=Limits(address_space_bytes=config.memory_bytes, cpu_seconds=int(timeout) + 5),
            )
            log = (result.stdout + result.stderr).strip()
            built = work / (PCH_NAME + ".gch")
            if result.returncode == 0 and not result.timed_out and built.exists():
                os.replace(built, gch)  # atomic: others see no .gch or a whole one
                return Pch(header, "", tuple(command), log)
            if result.timed_out:  # may be a busy machine: try again next build
                note = f"precompiled header did not compile within {timeout:.0f} s"
            else:
                note = f"precompiled header failed to compile (exit {result.returncode})"
                if "out of memory" not in log and "memory exhausted" not in log:
                    write_atomic(failed, (" ".join(command) + "\n" + log + "\n").encode())
            return Pch(None, note, tuple(command), log)
        finally:
            shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def file_lock(path: Path, deadline: float) -> Iterator[bool]:
    """Hold an exclusive lock on `path` (threads and processes alike); yields False if past `deadline`."""
    with open(path, "a+b") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    yield False
                    return
                time.sleep(0.2)
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def wants_pch(source: Path) -> bool:
    return source.suffix == ".cpp" and bool(PCH_USERS.search(source.read_text(errors="replace")))

