"""Machine-wide state that every judge process on the machine shares, whatever cache each one uses: the
folder of the GPU locks and of the judge registry, the registry itself, and the sweep that kills a retired
candidate's escaped processes without touching another judge's live workers (split from pool.py)."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from stat import S_ISDIR

from cuda_agent.judge.trusted.build import cache_root


def _uid_and_stat(pid: int | str) -> tuple[int, list[str]] | None:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    uid_line = next((line.split() for line in status.splitlines() if line.startswith("Uid:")), None)
    return (int(uid_line[1]), stat) if uid_line else None


def machine_dir() -> Path:
    """State every judge process on this machine shares, whatever cache each one uses: the GPU locks
    and the judge registry. (Under each judge's own cache, two judges with different caches took the
    same GPU at once and killed each other's warming workers as strays.)

    `$CUDA_AGENT_MACHINE_DIR`, else /dev/shm/cuda-agent-<uid> (or /tmp/...). It must belong to this user
    and be writable by nobody else: a candidate (another user) that could add a registry entry could
    keep an escaped process alive. A folder failing that is not used; a private one under the cache is."""
    chosen = os.environ.get("CUDA_AGENT_MACHINE_DIR")
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    folder = Path(chosen) if chosen else base / f"cuda-agent-{os.geteuid()}"
    with contextlib.suppress(OSError):
        folder.mkdir(mode=0o755, parents=True, exist_ok=True)
        info = folder.lstat()
        if S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and not info.st_mode & 0o022:
            return folder
    fallback = cache_root() / "machine"
    fallback.mkdir(parents=True, exist_ok=True)
    return fallback


def judges_dir() -> Path:
    """Where judge processes on this machine register themselves (a file named by their pid)."""
    return machine_dir() / "judges"


def register_judge() -> None:
    """Enter this process in the registry, and drop entries of judges that have exited (their pid could
    otherwise be reused by a process whose children would then be spared as a judge's workers)."""
    folder = judges_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name.isdigit() and not Path(f"/proc/{entry.name}").exists():
            with contextlib.suppress(OSError):
                entry.unlink()
    (folder / str(os.getpid())).touch()


def kill_strays(uid: int, live_sessions: set[int]) -> int:
    """SIGKILL every process of `uid` that is not part of a live candidate worker. Returns how many.

    Kept: processes in one of this judge's `live_sessions`, and candidate workers of any judge process
    on the machine: session leaders whose parent is a registered judge. An escaped daemon (setsid, a
    double fork) is neither: its parent is init, a subreaper or the candidate itself."""
    judges = {int(p.name) for p in judges_dir().glob("*") if p.name.isdigit()} if judges_dir().is_dir() else set()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        info = _uid_and_stat(entry)
        if info is None or info[0] != uid:
            continue
        stat = info[1]
        ppid, session = int(stat[1]), int(stat[3])  # after the comm field: state, ppid, pgrp, session
        if session in live_sessions:
            continue
        if session == int(entry) and ppid in judges and _uid_and_stat(ppid) is not None:
            continue  # another judge's worker
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
    return killed
