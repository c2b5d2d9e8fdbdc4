"""The submission's own code as the compiler sees it: preprocessed with the judge's exact flags.

Static rules that match source text are evaded by spelling: a backslash-newline splits `open\\\n(`, token
pasting builds `open ## at`, a macro in an included `.inc` spells `std::basic_ofstream`. Running each
translation unit through the real preprocessor (nvcc -E / g++ -E with the include paths, defines and
standard of the build) resolves all of these; the output's line markers say which file every line came
from, so only lines that come from the submission's own `kernels/` files are kept (PyTorch's and the
system's headers are not the candidate's code), with macro expansions on the line of their use.

`#line` directives (and GNU line markers written in a source) would let a submission claim its lines
belong to a system header; `line_directives` finds them in the raw text so the static checks refuse them.
Results are cached in memory per unit, keyed by the command, the unit's own text and the names of the
stage's files (what `__has_include` can see), and valid while every stage file the unit's line markers say
it read still has the content it had: a change to one `.cu` re-runs the preprocessor on that unit alone,
never on a binding that does not include it (before, any change re-ran every unit: g++ -E over torch's
headers cost a warm judgment 1.5-2.5 s).

Trust boundary: runs in the parent and in compiler children that read the candidate's sources as data, never
running them. Defence in depth: it feeds the static checks (readable reasons); the facts the reward rests on
(attribution, coverage, outputs) come from the binary and the GPU, not from source text.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import threading
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from cuda_agent.judge.common.procs import GIB, Limits, run_limited, scrubbed_env
from cuda_agent.judge.trusted.build import BuildConfig, compile_command, stage_submission
from cuda_agent.judge.trusted.toolchain import discover

_MARKER = re.compile(r'^#\s*(\d+)\s+"((?:[^"\\]|\\.)*)"')
_LINE_DIRECTIVE = re.compile(r"^[ \t]*(?:#|%:)[ \t]*(?:line\b|\d)", re.MULTILINE)
PREPROCESS_TIMEOUT_S = 60.0
_CACHE_SIZE = 256


@dataclass(frozen=True)
class OwnCode:
    """The submission's lines of one preprocessed unit: (file under kernels/, line, code)."""

    lines: tuple[tuple[str, int, str], ...]
    ok: bool
    error: str = ""


_cache: OrderedDict[str, tuple[tuple[tuple[str, str | None], ...], OwnCode]] = OrderedDict()
_lock = threading.Lock()


def preprocess_command(source: Path, tc: object, config: BuildConfig) -> list[str]:
    """The build's compile command for `source`, turned into "preprocess to stdout"."""
    command = compile_command(source, source.with_suffix(".o"), tc, config)  # type: ignore[arg-type]
    out = command.index("-o")
    del command[out : out + 2]
    command[command.index("-c")] = "-E"
    return command


def own_lines(text: str, kernels_root: Path) -> tuple[tuple[str, int, str], ...]:
    """Lines of preprocessor output whose line markers place them in a file under `kernels_root`."""
    root = str(kernels_root.resolve()) + "/"
    kept: list[tuple[str, int, str]] = []
    current: str | None = None
    line = 0
    for raw in text.splitlines():
        marker = _MARKER.match(raw)
        if marker:
            name = os.path.normpath(marker.group(2).encode().decode("unicode_escape"))
            current = name[len(root) :] if name.startswith(root) else None
            line = int(marker.group(1)) - 1
            continue
        line += 1
        if current is not None and raw.strip():
            kept.append((current, line, raw))
    return tuple(kept)


def _unit_key(source: Path, stage: Path, command: list[str]) -> str:
    """What decides a unit's output besides the stage files it reads: the command, its own path and text,
    and which files the stage holds (`__has_include` and include search order depend on existence)."""
    digest = hashlib.sha256("\0".join(a.replace(str(stage), "<stage>") for a in command).encode())
    digest.update(b"\0" + str(source.relative_to(stage)).encode() + b"\0" + source.read_bytes() + b"\0")
    for path in sorted(stage.rglob("*")):
        if path.is_file():
            digest.update(str(path.relative_to(stage)).encode() + b"\0")
    return digest.hexdigest()


def _file_digest(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def stage_dependencies(text: str, stage: Path) -> tuple[tuple[str, str | None], ...]:
    """The stage files the preprocessor read for a unit (from its line markers), with their digests."""
    roots = {str(stage) + "/", str(stage.resolve()) + "/"}
    names: set[str] = set()
    for raw in text.splitlines():
        if not raw.startswith("#"):
            continue
        marker = _MARKER.match(raw)
        if marker:  # files get absolute markers (sources and -I paths are); <built-in> and the like do not
            name = os.path.normpath(marker.group(2).encode().decode("unicode_escape"))
            for root in roots:
                if os.path.isabs(name) and name.startswith(root):
                    names.add(name[len(root) :])
    return tuple((name, _file_digest(stage / name)) for name in sorted(names))


def _still_valid(deps: tuple[tuple[str, str | None], ...], stage: Path) -> bool:
    return all(digest is not None and _file_digest(stage / name) == digest for name, digest in deps)


def _run(source: Path, stage: Path, config: BuildConfig) -> OwnCode:
    command = preprocess_command(source, discover(), config)
    key = _unit_key(source, stage, command)
    with _lock:
        entry = _cache.get(key)
        if entry is not None:
            _cache.move_to_end(key)
    if entry is not None and _still_valid(entry[0], stage):
        return entry[1]
    result = run_limited(
        command,
        cwd=stage,
        env=scrubbed_env({"TMPDIR": str(stage)}),
        timeout=PREPROCESS_TIMEOUT_S,
        limits=Limits(address_space_bytes=8 * GIB, cpu_seconds=int(PREPROCESS_TIMEOUT_S) + 5),
    )
    if result.returncode != 0 or result.timed_out:
        return OwnCode((), False, (result.stderr or "preprocessing timed out")[-2000:])  # not cached: may be load
    deps = stage_dependencies(result.stdout, stage)
    code = OwnCode(own_lines(result.stdout, stage / "kernels"), True)
    if str(source.relative_to(stage)) not in {name for name, _ in deps}:
        return code  # markers not understood (the unit itself is always one): never reuse this result
    with _lock:
        _cache[key] = (deps, code)
        while len(_cache) > _CACHE_SIZE:
            _cache.popitem(last=False)
    return code


def preprocess_submission(kernels_dir: Path, config: BuildConfig | None = None) -> dict[str, OwnCode]:
    """Each top-level source of kernels/ (by its name under kernels/) preprocessed as the build compiles it.

    Raises build.SubmissionError for a kernels/ folder the build would refuse anyway."""
    config = config or BuildConfig()
    with tempfile.TemporaryDirectory(prefix="preprocess-") as tmp:
        stage = Path(tmp)
        sources = [s for s in stage_submission(Path(kernels_dir).resolve(), stage) if s.parent.name == "kernels"]
        with ThreadPoolExecutor(max_workers=max(1, min(len(sources), config.jobs))) as pool:
            done = list(pool.map(lambda s: _run(s, stage, config), sources))
        return {str(s.relative_to(stage / "kernels")): code for s, code in zip(sources, done, strict=True)}


def line_directives(text: str) -> list[int]:
    """Line numbers of `#line` directives or line markers in raw source (after joining spliced lines)."""
    joined = text.replace("\\\r\n", "").replace("\\\n", "")
    return [joined.count("\n", 0, m.start()) + 1 for m in _LINE_DIRECTIVE.finditer(joined)]

