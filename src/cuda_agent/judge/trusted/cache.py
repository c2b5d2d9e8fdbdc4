"""The judge's build caches on disk: where they are, shared read-only layers, LRU pruning, a census.

A cache root (`$CUDA_AGENT_CACHE`, default ~/.cache/cuda-agent) holds `objects/` (content-keyed `.o`
files, and `objects/pch/<digest>/` with the judge's precompiled header, ~570 MB) and `baselines/`.

Episodes share what does not depend on their code. A *shared* root (`cuda-agent cache warm`, default
~/.cache/cuda-agent/shared, or the folder `solve --cache-seed` names) is written only by a trusted host
process (never from inside an episode) with the judge's PCH and the objects of the judge's own units
(`binding.cpp`, the driver gate), and is handed to each episode's builds as a read-only layer
(`$CUDA_AGENT_SHARED_CACHE`): a build looks an object or the PCH up there, uses it in place (no copy, no
link, so nothing in the episode's workspace is the same file as a shared entry), and writes only to its
own cache. The default shared root's PCH is itself a hard link of the judge's own (`link_judge_pch`), so a
machine that judges and runs episodes keeps one ~570 MB file, not two. An episode so adds only its own objects (~1 MB per compile) instead of a PCH of its own.
Entries are content-addressed (their names are digests of everything they are made from: header text,
compiler, flags, torch), written to a temporary name and renamed (readers see a whole entry or none), and
made read-only (files 0444, folders 0755) in the shared root. The judge's final verdicts never read a shared layer: a forged entry
there could only mislead the agent's own compiles, and under bubblewrap the layer is read-only anyway.

Caches are capped: after a build that wrote to a cache, at most once a minute, the least recently used
entries beyond its budget (`$CUDA_AGENT_CACHE_BUDGET`, default 20G; a build's hits refresh an entry's
time) are removed, never one used within the last `GRACE_S` seconds (a build may be about to link it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import stat
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # build.py imports this module
    from cuda_agent.judge.trusted.build import BuildConfig

SHARED_ENV = "CUDA_AGENT_SHARED_CACHE"
BUDGET_ENV = "CUDA_AGENT_CACHE_BUDGET"
DEFAULT_BUDGET = 20 << 30
GRACE_S = 600.0  # an entry used this recently is never pruned
PRUNE_EVERY_S = 60.0
_STAMP = ".last-prune"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)


def cache_root() -> Path:
    """Where the judge caches objects and baselines: $CUDA_AGENT_CACHE or ~/.cache/cuda-agent."""
    return Path(os.environ.get("CUDA_AGENT_CACHE") or Path.home() / ".cache" / "cuda-agent")


def default_shared_root() -> Path:
    """The machine's shared read-only layer for episodes: `cache_root()/shared`."""
    return cache_root() / "shared"


def shared_caches_from_env(environ: Mapping[str, str] | None = None) -> tuple[Path, ...]:
    """Object folders of the read-only layers in $CUDA_AGENT_SHARED_CACHE (cache roots, `:`-separated) of
    `environ` (default: this process's environment; an episode passes the environment it gives commands)."""
    roots = [r for r in (os.environ if environ is None else environ).get(SHARED_ENV, "").split(os.pathsep) if r.strip()]
    return tuple(Path(r) / "objects" for r in roots)


def parse_size(text: str) -> int:
    """'20G', '500M', '1.5GiB', '123' (bytes) -> bytes."""
    match = _SIZE.match(str(text))
    if not match:
        raise ValueError(f"bad size {text!r}: expected a number with an optional K, M, G or T suffix")
    number, unit = float(match.group(1)), match.group(2).lower()
    return int(number * (1 << {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}[unit]))


def budget_from_env() -> int:
    value = os.environ.get(BUDGET_ENV)
    return parse_size(value) if value else DEFAULT_BUDGET


def format_size(count: int) -> str:
    size = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} GiB"


# ---- entries: what can be pruned as one piece -------------------------------------------------------
@dataclass(frozen=True)
class Entry:
    kind: str  # "object", "pch", "baseline", "other"
    path: Path  # a file, or a PCH folder
    bytes: int
    last_used: float  # mtime: set when written, refreshed by `touch` on a hit


def _tree_bytes(path: Path) -> tuple[int, float]:
    total, newest = 0, 0.0
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        with contextlib.suppress(OSError):
            info = item.lstat()
            if stat.S_ISREG(info.st_mode):
                total += info.st_size
                newest = max(newest, info.st_mtime)
    return total, newest


def entries(root: Path) -> list[Entry]:
    """Every prunable entry under a cache root (objects/*.o, objects/pch/*/, baselines/*)."""
    found: list[Entry] = []
    objects = root / "objects"
    if objects.is_dir():
        for item in objects.iterdir():
            if item.name == "pch" and item.is_dir():
                for folder in item.iterdir():
                    if folder.is_dir():
                        size, newest = _tree_bytes(folder)
                        found.append(Entry("pch", folder, size, newest))
            elif item.is_file() and item.suffix == ".o":
                with contextlib.suppress(OSError):
                    info = item.stat()
                    found.append(Entry("object", item, info.st_size, info.st_mtime))
    baselines = root / "baselines"
    if baselines.is_dir():
        for item in baselines.rglob("*"):
            if item.is_file():
                with contextlib.suppress(OSError):
                    info = item.stat()
                    found.append(Entry("baseline", item, info.st_size, info.st_mtime))
    return found


def touch(path: Path) -> None:
    """Mark an entry as just used (LRU). Silently nothing where the cache is read-only to us."""
    with contextlib.suppress(OSError):
        os.utime(path)


# ---- pruning ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pruned:
    removed: int
    freed: int
    kept_bytes: int


def prune(root: Path, budget: int, *, grace_s: float = GRACE_S, kinds: Iterable[str] | None = None) -> Pruned:
    """Remove least recently used entries of `root` until it holds at most `budget` bytes.

    Entries used within `grace_s` seconds stay (a concurrent build may be about to link them); a PCH folder
    is removed only while holding its lock (no build is making it then). Safe to run beside builds."""
    wanted = set(kinds) if kinds is not None else None
    found = sorted(entries(root), key=lambda e: e.last_used)
    total = sum(e.bytes for e in found)
    removed = freed = 0
    now = time.time()
    for entry in found:
        if total <= budget:
            break
        if (wanted is not None and entry.kind not in wanted) or now - entry.last_used < grace_s:
            continue
        if _remove(entry):
            removed += 1
            freed += entry.bytes
            total -= entry.bytes
    return Pruned(removed, freed, total)


def _remove(entry: Entry) -> bool:
    try:
        if entry.kind != "pch":
            entry.path.unlink()
            return True
        with _try_lock(entry.path / ".lock") as locked:
            if not locked:
                return False
            doomed = entry.path.with_name(f".{entry.path.name}.removing.{os.getpid()}")
            os.replace(entry.path, doomed)  # readers see the whole PCH or none
        _make_writable(doomed)
        shutil.rmtree(doomed, ignore_errors=True)
        return True
    except OSError:
        return False


@contextlib.contextmanager
def _try_lock(path: Path) -> Iterator[bool]:
    try:
        handle = open(path, "a+b")  # noqa: SIM115 - closed below
    except OSError:
        yield False
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
    finally:
        handle.close()


def maybe_prune(objects_dir: Path, budget: int | None) -> Pruned | None:
    """After a build wrote to `objects_dir`: prune its cache root, at most once per PRUNE_EVERY_S."""
    if budget is None:
        return None
    root = objects_dir.parent
    stamp = objects_dir / _STAMP
    try:
        if time.time() - stamp.stat().st_mtime < PRUNE_EVERY_S:
            return None
    except FileNotFoundError:
        pass
    except OSError:
        return None
    with contextlib.suppress(OSError):
        stamp.touch()
    return prune(root, budget)


def clear(root: Path, kinds: Iterable[str] | None = None) -> Pruned:
    """Remove every entry (of `kinds`) of a cache root, used recently or not."""
    return prune(root, 0, grace_s=0.0, kinds=kinds)


# ---- read-only layers ----------------------------------------------------------------------------------
def seal(path: Path) -> None:
    """Make a finished shared entry read-only: files 0444, folders 0755 (never group/world-writable)."""
    items = [path, *path.rglob("*")] if path.is_dir() else [path]
    for item in items:
        with contextlib.suppress(OSError):
            if item.is_symlink():
                continue
            if item.is_dir():
                item.chmod(0o755)
            elif item.name != ".lock":  # the lock is opened for writing by the next build in this root
                item.chmod(0o444)


def _make_writable(path: Path) -> None:
    for item in [path, *path.rglob("*")]:
        with contextlib.suppress(OSError):
            if not item.is_symlink():
                item.chmod(item.stat().st_mode | stat.S_IWUSR)


# ---- census -------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Area:
    """One row of `cuda-agent cache`: a cache (root, kind) with its size and use."""

    name: str
    root: Path
    kind: str
    count: int
    bytes: int
    oldest: float | None
    newest: float | None
    # Of `bytes`, those of files an earlier row already counted (hard links: the shared root's PCH is the
    # judge's file, see `link_judge_pch`); on disk once, so totals leave them out.
    linked: int = 0

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "root": str(self.root), "kind": self.kind, "count": self.count,
                "bytes": self.bytes, "linked_bytes": self.linked, "oldest": self.oldest, "newest": self.newest}  # fmt: skip


def census(roots: dict[str, Path]) -> list[Area]:
    """Per named root and kind: entry count, bytes, oldest and newest use."""
    areas: list[Area] = []
    seen: set[tuple[int, int]] = set()  # (device, inode) of every file counted so far
    for name, root in roots.items():
        by_kind: dict[str, list[Entry]] = {}
        for entry in entries(root):
            by_kind.setdefault(entry.kind, []).append(entry)
        for kind in ("pch", "object", "baseline"):
            items = by_kind.get(kind, [])
            times = [e.last_used for e in items]
            linked = sum(_counted_before(e.path, seen) for e in items)
            areas.append(Area(name, root, kind, len(items), sum(e.bytes for e in items),
                              min(times) if times else None, max(times) if times else None, linked))  # fmt: skip
    return areas


def _counted_before(path: Path, seen: set[tuple[int, int]]) -> int:
    """Bytes of the files of `path` (a file or a PCH folder) whose inode is in `seen`; adds the others."""
    linked = 0
    for item in [path, *path.rglob("*")] if path.is_dir() else [path]:
        with contextlib.suppress(OSError):
            info = item.lstat()
            if stat.S_ISREG(info.st_mode):
                key = (info.st_dev, info.st_ino)
                if key in seen:
                    linked += info.st_size
                seen.add(key)
    return linked


def episode_caches(runs_dir: Path) -> dict[str, Path]:
    """The private caches of the episodes under a `solve --runs-dir` folder (<task>/workspace/.cache/...)."""
    found: dict[str, Path] = {}
    if runs_dir.is_dir():
        for objects in sorted(runs_dir.glob("*/workspace/.cache/cuda-agent/objects")):
            found[f"episode:{objects.parents[3].name}"] = objects.parent
    return found


# ---- warming a shared root (trusted host processes only) -----------------------------------------------
# The smallest submission that makes a build produce the judge's PCH and its binding.cpp object: a binding
# unit of its own (the stage has no headers of a submission, like most episodes' kernels/).
WARM_BINDING = """\
// cuda-agent cache warm: builds the judge's precompiled header and binding.cpp object.
#include "../binding_registry.h"
static int cuda_agent_warm() { return 0; }
static void register_warm(pybind11::module& m) { m.def("cuda_agent_warm", &cuda_agent_warm); }
REGISTER_BINDING(cuda_agent_warm, register_warm);
"""


@dataclass(frozen=True)
class Warmed:
    root: Path
    ok: bool
    seconds: float
    compiled: tuple[str, ...]
    pch: bool
    message: str


def warm_shared(root: Path | None = None, arch: str | None = None, share_with: Path | None = None) -> Warmed:
    """Put the judge's PCH and its own objects (binding.cpp, the driver gate) into the shared root `root`
    and seal them read-only.

    Call from a trusted process (the `solve` host, `cuda-agent cache warm`), never from inside an episode.
    Content-addressed and idempotent: a second call finds everything and compiles nothing.

    The PCH (~570 MB) is the judge's own file, hard linked (`link_judge_pch`): `share_with` is the judge's
    objects folder, by default its own (`cache_root()/objects`) when `root` is the default shared root;
    a root elsewhere (tests, `--root`, `solve --cache-seed`) gets a PCH of its own unless told."""
    import tempfile

    from cuda_agent.judge.trusted.build import BuildConfig, build_extension, default_cache_dir
    from cuda_agent.judge.trusted.toolchain import default_arch

    if share_with is None and (root is None or _same_path(Path(root), default_shared_root())):
        share_with = default_cache_dir()
    root = Path(root) if root is not None else default_shared_root()
    objects = root / "objects"
    objects.mkdir(parents=True, exist_ok=True)
    for folder in (root, objects):
        folder.chmod(0o755)
    # Once per machine and toolchain, off any agent's clock: generous time limits, so a busy machine still
    # ends with a PCH rather than a fallback.
    config = BuildConfig(arch=arch or default_arch(), cache_dir=objects, cache_budget_bytes=None,
                         private_judge_binding=False, compile_timeout_s=900.0, total_timeout_s=1200.0)  # fmt: skip
    if share_with is not None:
        link_judge_pch(objects, share_with, config)  # the build below then finds the PCH in place
    with tempfile.TemporaryDirectory(prefix="cuda-agent-warm-") as work:
        kernels = Path(work) / "kernels"
        kernels.mkdir()
        (kernels / "cuda_agent_warm_binding.cpp").write_text(WARM_BINDING)
        result = build_extension(kernels, Path(work) / "out", config)
    for item in objects.iterdir():
        if item.suffix == ".o" or item.name == "pch":
            seal(item)
    message = "" if result.ok else (result.log or result.full_log)[-2000:]
    if result.ok and not result.pch:
        message = f"built without the precompiled header: {result.pch_note}"
    return Warmed(root, result.ok, result.seconds, result.compiled, result.pch, message)


def link_judge_pch(objects: Path, judge_objects: Path, config: BuildConfig) -> bool:
    """Make the shared layer's PCH (in `objects`) a hard link of the judge's own (in `judge_objects`,
    compiled there first when missing): one ~570 MB file on disk for both instead of two. True when linked.

    The direction is the point: the judge's process makes the file and it is linked outward; a shared
    entry is never linked into the judge's cache, because the judge's builds never read a layer an episode
    might have written (the module docstring). Sealing the shared entry makes the judge's file read-only
    too, which the judge never rewrites (a PCH is content-addressed and only ever created). A hard link
    cannot cross file systems: then nothing is compiled here and the shared layer builds its own as before."""
    from dataclasses import replace

    from cuda_agent.judge.trusted.build import ensure_pch

    judge_objects.mkdir(parents=True, exist_ok=True)
    if judge_objects.stat().st_dev != objects.stat().st_dev:
        return False
    header = ensure_pch(replace(config, cache_dir=judge_objects))
    if header is None:  # the judge's PCH failed to compile: the shared build records why
        return False
    folder = objects / header.parent.relative_to(judge_objects)
    folder.mkdir(parents=True, exist_ok=True)
    for source in (header, header.with_name(header.name + ".gch")):  # the .gch last: readers look for it
        target = folder / source.name
        if target.exists() and os.path.samefile(source, target):
            continue
        staged = folder / f".{source.name}.{os.getpid()}.link"
        with contextlib.suppress(FileNotFoundError):
            staged.unlink()
        try:
            os.link(source, staged)
        except OSError:
            return False
        os.replace(staged, target)  # a reader sees the old whole file or the link
    return True


def _same_path(a: Path, b: Path) -> bool:
    return os.path.abspath(os.path.expanduser(a)) == os.path.abspath(os.path.expanduser(b))


# ---- episodes ------------------------------------------------------------------------------------------
def prepare_episode_cache(private_root: Path, workspace: Path, seed: Path | None = None) -> dict[str, str]:
    """Set up an episode's judge caches; returns what its commands' environment adds for them.

    Its private cache (`private_root`, inside the workspace) starts with a copy of the seed's `baselines/`
    (small files an episode may add to); the seed's objects and PCH (or, without a seed, the machine's
    shared root, when warmed) are not copied but handed over read-only as `$CUDA_AGENT_SHARED_CACHE`.
    A layer inside the workspace is refused: the episode could write it."""
    private_root.mkdir(parents=True, exist_ok=True)
    layer = Path(seed) if seed else default_shared_root()
    resolved, inside = layer.resolve(), workspace.resolve()
    if resolved == inside or inside in resolved.parents:
        raise ValueError(f"the shared cache {layer} is inside the workspace {workspace}; an episode could write it")
    if seed and (layer / "baselines").is_dir():
        shutil.copytree(layer / "baselines", private_root / "baselines", dirs_exist_ok=True)
    env: dict[str, str] = {}
    if (layer / "objects").is_dir():
        env[SHARED_ENV] = str(resolved)
    return env
