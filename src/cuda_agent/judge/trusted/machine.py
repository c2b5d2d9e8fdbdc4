"""Machine-wide state that every judge process on the machine shares, whatever cache each one uses: the
folder of the GPU locks and of the judge registry, the registry itself, the sweep that kills a retired
candidate's escaped processes without touching another judge's live workers (split from pool.py), and the
sweep at a judge's start that kills what a judge that died left running."""

from __future__ import annotations

import contextlib
import functools
import os
import pwd
import signal
from pathlib import Path
from stat import S_ISDIR

from cuda_agent.judge.trusted.build import cache_root
from cuda_agent.judge.trusted.sandbox import CANDIDATE_UID_BASE, SANDBOX_USER, UIDS_PER_JUDGE

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


def register_judge() -> None:
    """Enter this process in the registry, drop entries of judges that have exited (their pid could
    otherwise be reused by a process whose children would then be spared as a judge's workers), and kill
    what dead judges left running (`kill_orphaned_workers`)."""
    folder = judges_dir()
    folder.mkdir(parents=True, exist_ok=True)
    for entry in folder.iterdir():
        if entry.name.isdigit() and not Path(f"/proc/{entry.name}").exists():
            with contextlib.suppress(OSError):
                entry.unlink()
    (folder / str(os.getpid())).touch()
    kill_orphaned_workers()


# In every worker's environment (WorkerPool._env): which judge started it, as "pid:start time", so that a
# later judge can tell its workers from a dead judge's whatever adopted them (init, a subreaper).
JUDGE_ID_ENV = "CUDA_AGENT_JUDGE_ID"


@functools.cache
def judge_id() -> str:
    """This process as a judge: its pid and its start time (a reused pid has a later one)."""
    return f"{os.getpid()}:{_start_time(os.getpid())}"


def kill_orphaned_workers() -> int:
    """SIGKILL every worker a dead judge left running. Returns how many.

    A judge killed mid-judgment (SIGKILL, or SIGTERM from `timeout` without `exit_on_sigterm`) leaves its
    workers running in sessions of their own: a candidate stuck in an endless kernel most likely kept an
    H100 busy under the next run's timings on 2026-12-07, and a worker stopped by a timing stays stopped with
    its GPU memory. Each judge sweeps them once at its start. Two kinds of evidence, neither a name:
    - a candidate's uid encodes its judge's pid (`candidate_uid`): an orphan when no process of that pid
      started before the candidate did. Only processes of the sandbox user's group, never the judge's own
      uid (a real user's uid can lie in the same range), and only where the judge is root;
    - any worker of the judge's own user or of the shared sandbox user carries `JUDGE_ID_ENV`: an orphan
      when no process has that pid and start time any more.
    Only in this judge's pid namespace (elsewhere the pids name other processes). Left: a process that
    dropped both kinds of evidence, which the dead judge's own stray sweep had no chance to reach."""
    own_namespace = _pid_namespace("self")
    if own_namespace is None:
        return 0
    me, sandbox = os.geteuid(), _sandbox_ids()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        ids = _ids_and_stat(entry)
        if ids is None:
            continue
        uid, gid, stat = ids
        in_range = CANDIDATE_UID_BASE <= uid < CANDIDATE_UID_BASE + PID_LIMIT * UIDS_PER_JUDGE
        if in_range and me == 0 and uid != me and sandbox is not None and gid == sandbox[1]:
            judge_started = _start_time((uid - CANDIDATE_UID_BASE) // UIDS_PER_JUDGE)
            orphan = judge_started is None or judge_started > int(stat[19])  # stat[19]: its start time
        elif uid == me or (sandbox is not None and uid == sandbox[0]):
            started_by = _judge_id_of(entry)
            orphan = started_by is not None and not _judge_alive(started_by)
        else:
            continue
        if not orphan or _pid_namespace(entry) != own_namespace:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry), signal.SIGKILL)  # a cgroup-frozen or stopped process dies of it too
            killed += 1
    return killed


def _ids_and_stat(pid: int | str) -> tuple[int, int, list[str]] | None:
    """A process's real uid and gid, and its /proc stat fields after the command name."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    lines = {line.split(":", 1)[0]: line.split() for line in status.splitlines() if line[:4] in ("Uid:", "Gid:")}
    if "Uid" not in lines or "Gid" not in lines:
        return None
    return int(lines["Uid"][1]), int(lines["Gid"][1]), stat


def _start_time(pid: int | str) -> int | None:
    """When `pid` started (clock ticks since boot), or None where no such process or thread exists."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[19])
    except (OSError, IndexError, ValueError):
        return None


def _judge_id_of(pid: str) -> str | None:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    prefix = f"{JUDGE_ID_ENV}=".encode()
    found = next((item[len(prefix) :] for item in environ.split(b"\0") if item.startswith(prefix)), None)
    return found.decode(errors="replace") if found is not None else None


def _judge_alive(identity: str) -> bool:
    """Whether the judge `pid:start time` still runs (a malformed value counts as alive: nothing is killed
    on a claim the sweep cannot read)."""
    pid, _, started = identity.partition(":")
    if not (pid.isdigit() and started.isdigit()):
        return True
    return _start_time(pid) == int(started)


def _sandbox_ids() -> tuple[int, int] | None:
    """The shared sandbox user's uid and gid (its group is every candidate's), if the user exists."""
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(SANDBOX_USER)
        return entry.pw_uid, entry.pw_gid
    return None


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
