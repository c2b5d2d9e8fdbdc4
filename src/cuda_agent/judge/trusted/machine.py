"""Machine-wide state that every judge process on the machine shares, whatever cache each one uses: the
folder of the GPU locks and of the judge registry, the registry itself, the sweep that kills a retired
candidate's escaped processes without touching another judge's live workers (split from pool.py), and the
sweep at a judge's start that kills what a judge that died left running."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from stat import S_ISDIR

from cuda_agent.judge.trusted.build import cache_root
from cuda_agent.judge.trusted.sandbox import CANDIDATE_UID_BASE, UIDS_PER_JUDGE

PID_LIMIT = 1 << 22  # Linux's largest pid_max: candidate uids of every possible judge pid lie below it


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


def register_judge(worker_modules: tuple[str, ...] = ()) -> None:
    """Enter this process in the registry, drop entries of judges that have exited (their pid could
    otherwise be reused by a process whose children would then be spared as a judge's workers), and kill
    what dead judges left running (`kill_orphaned_workers`; `worker_modules`: the judge's own workers)."""
    folder = judges_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name.isdigit() and not Path(f"/proc/{entry.name}").exists():
            with contextlib.suppress(OSError):
                entry.unlink()
    (folder / str(os.getpid())).touch()
    kill_orphaned_workers(worker_modules)


def kill_orphaned_workers(worker_modules: tuple[str, ...] = ()) -> int:
    """SIGKILL every candidate process whose judge has died, and every orphaned worker of this user that
    runs one of `worker_modules` (a reference worker). Returns how many.

    A judge killed mid-judgment (SIGKILL, or SIGTERM from `timeout`, which runs no cleanup) leaves its
    candidates running: one stuck in an endless kernel kept an H100 busy under the next judge's timings
    on 2026-12-07, and one frozen by a timing stays frozen with its GPU memory. With a uid per candidate,
    no later judge's stray sweep reaches them (their uid encodes the dead judge's pid, `candidate_uid`),
    so each judge sweeps them once at its start. A reference worker runs as the judge's own user: it is
    an orphan when init (pid 1) has adopted it, and frozen by a timing it would never read its end of
    file. Kept: candidates whose judge pid still exists, workers that still have their judge, and
    processes in another pid namespace (there the encoded pid names a different process)."""
    own_namespace = _pid_namespace("self")
    init_is_a_judge = (judges_dir() / "1").exists()  # run as a container's init, its live workers' ppid is 1
    markers = [f"from {module} import main".encode() for module in worker_modules]
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        info = _uid_and_stat(entry)
        if info is None or own_namespace is None:
            continue
        if CANDIDATE_UID_BASE <= info[0] < CANDIDATE_UID_BASE + PID_LIMIT * UIDS_PER_JUDGE:
            orphan = not Path(f"/proc/{(info[0] - CANDIDATE_UID_BASE) // UIDS_PER_JUDGE}").exists()
        else:
            adopted = info[1][1] == "1" and not init_is_a_judge
            orphan = adopted and info[0] == os.geteuid() and _runs_any(entry, markers)
        if not orphan or _pid_namespace(entry) != own_namespace:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry), signal.SIGKILL)  # a frozen or stopped process dies of it too
            killed += 1
    return killed


def _runs_any(pid: str, markers: list[bytes]) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return any(marker in command for marker in markers)


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


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
