"""Machine-wide state that every judge process on the machine shares, whatever cache each one uses: the
folder of the GPU locks and of the judge registry, the registry itself, the sweep that kills a retired
candidate's escaped processes without touching another judge's live workers (split from pool.py), and the
sweep at a judge's start that kills what a judge that died left running."""

from __future__ import annotations

import contextlib
import grp
import os
import pwd
import re
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from stat import S_ISDIR

from cuda_agent.judge.trusted.build import cache_root
from cuda_agent.judge.trusted.freeze import CGROUP_PARENT, cgroup2_mount, stat_fields
from cuda_agent.judge.trusted.sandbox import CANDIDATE_UID_BASE, SANDBOX_USER, UIDS_PER_JUDGE

PID_LIMIT = 1 << 22  # Linux's largest pid_max: candidate uids of every possible judge pid lie below it


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
    """Enter this process in the registry (its entry: its start time, then each worker it starts, from
    `note_worker`), and kill what judges that have exited left running (`kill_orphaned_workers`). Entries of
    exited judges are dropped once swept: their pid could otherwise be reused by a process whose children
    would then be spared as a judge's workers."""
    folder = judges_dir()
    folder.mkdir(parents=True, exist_ok=True)
    kill_orphaned_workers()
    entry, started = folder / str(os.getpid()), _start_time(os.getpid())
    if _read_entry(entry).start != started:  # absent, or a dead judge's of the same pid
        entry.write_text(f"judge {started}\npidns {_pid_namespace('self')}\n")


ENTRY_COMPACT_BYTES = 64 << 10  # about 700 candidates (a worker and a cgroup line): then only those still running


def note_worker(pid: int | None = None, cgroup: Path | None = None) -> None:
    """Record in this judge's registry entry a worker it started (`pid`, with its start time) or the cgroup
    a candidate worker was put in (`ProcessTree.attach`), so that a later judge can kill the worker and its
    session, and whatever the cgroup still holds (a daemon that left the session included), should this
    one die without closing them. The registry folder is the judge's user's alone (`machine_dir`): no
    candidate can add to it or forge an entry."""
    path = judges_dir() / str(os.getpid())
    with contextlib.suppress(OSError):
        if path.stat().st_size > ENTRY_COMPACT_BYTES:  # a long-lived service: keep the workers still running
            current = _read_entry(path)
            alive = [f"worker {w} {started}" for w, started in current.workers if _start_time(w) == started]
            groups = [f"cgroup {group}" for group in current.cgroups if group.is_dir()]
            head = [f"judge {_start_time(os.getpid())}", f"pidns {_pid_namespace('self')}"]
            path.write_text("\n".join([*head, *alive, *groups]) + "\n")
        with open(path, "a") as entry:
            entry.write((f"worker {pid} {_start_time(pid)}\n" if pid is not None else "")
                        + (f"cgroup {cgroup}\n" if cgroup is not None else ""))  # fmt: skip


def kill_orphaned_workers() -> int:
    """SIGKILL every worker a judge that has exited left running. Returns how many processes.

    A judge killed mid-judgment (SIGKILL, or SIGTERM without `exit_on_sigterm`) leaves its workers running
    in sessions of their own: a candidate stuck in an endless kernel most likely kept an H100 busy under the
    next run's timings on 2026-12-07, and a worker stopped by a timing stays stopped with its GPU memory.
    Each judge sweeps them at its start, on two kinds of evidence that no candidate and no other user
    controls, never on names or environments:
    - the registry: each judge's entry lists its start time and its workers' pids and start times. For a
      judge no longer running (no process of that pid with that start time), every listed worker still
      running (same pid, same start time) is killed with its whole session (workers lead their own), and
      every candidate cgroup it lists is killed whole (`cgroup.kill`: a daemon that left the session is
      still in it, and a sandboxed candidate cannot move itself out) and removed once empty (one not
      empty within 1 s is listed again, in an entry of the dead judge's start alone, for the next sweep);
    - a candidate's uid encodes its judge's pid (`candidate_uid`): such a process is killed when that judge
      no longer runs (by the registry's start time, or, for a judge of another registry, when no process of
      that pid started before the candidate). Only processes of the sandbox user's own group, never the
      judge's own uid (a real user's uid can lie in the same range), and only where the judge is root.
    Only in this judge's pid namespace (elsewhere the pids name other processes): entries that name
    another are skipped whole."""
    own_namespace = _pid_namespace("self")
    if own_namespace is None:
        return 0
    starts: dict[int, int | None] = {}
    sessions: set[int] = set()
    swept: dict[Path, _Entry] = {}  # the dead judges' entries, by path
    for entry in judges_dir().iterdir() if judges_dir().is_dir() else []:
        if not entry.name.isdecimal():
            continue
        record = _read_entry(entry)  # read once: a judge of the same pid may rewrite it meanwhile
        starts[int(entry.name)] = recorded = record.start
        if record.pidns not in (None, own_namespace):
            continue  # a judge of another pid namespace sharing the registry: its pids are not ours to read
        if recorded is not None and _start_time(entry.name) == recorded:
            continue  # a live judge, this one included
        if recorded is None and Path(f"/proc/{entry.name}").exists():
            continue  # an entry from before entries held start times, its judge still running
        sessions |= {pid for pid, started in record.workers if _start_time(pid) == started}
        swept[entry] = record
        with contextlib.suppress(OSError):
            entry.unlink()
    groups = [group for record in swept.values() for group in record.cgroups]
    for group in groups:  # whatever the cgroup holds, escaped daemons included: none can leave it
        with contextlib.suppress(OSError):
            (group / "cgroup.kill").write_text("1")
    sandbox_gid = _sandbox_group() if os.geteuid() == 0 else None  # only a root judge makes candidate uids
    killed = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        ids = _ids_and_stat(name)
        if ids is None:
            continue
        uid, gid, stat = ids
        orphan = int(stat[3]) in sessions or (  # stat[3]: its session
            gid == sandbox_gid and uid != os.geteuid() and _candidate_of_dead_judge(uid, int(stat[19]), starts)
        )
        if not orphan or _pid_namespace(name) != own_namespace:
            continue
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(name), signal.SIGKILL)  # a cgroup-frozen or stopped process dies of it too
            killed += 1
    not_removed = _remove_emptied(groups)
    for entry, record in swept.items():  # cgroups not yet empty: listed again for the next sweep
        if left := [group for group in record.cgroups if group in not_removed]:
            with contextlib.suppress(OSError), open(entry, "x") as again:  # never over a new judge's entry
                again.write(record.head + "".join(f"cgroup {group}\n" for group in left))
    return killed


def _remove_emptied(groups: list[Path], wait_s: float = 1.0) -> set[Path]:
    """Remove the dead judges' cgroups once their killed members are gone (a cgroup with members cannot be
    removed; waiting at most `wait_s` in all), so they do not pile up on a machine whose judges crash.
    Returns those still there."""
    deadline, left = time.monotonic() + wait_s, set(groups)
    while left:
        for group in list(left):
            with contextlib.suppress(OSError):
                group.rmdir()
            if not group.exists():
                left.discard(group)
        if not left or time.monotonic() > deadline:
            break
        time.sleep(0.02)
    return left


CANDIDATE_CGROUP = re.compile(r"cand-\d+-[0-9a-f]+")  # freeze.create_cgroup's names for a candidate's


@dataclass(frozen=True)
class _Entry:
    """A judge's registry entry, parsed once from one read of its file (a judge of the same pid may rewrite
    it meanwhile: every field comes from the same text)."""

    start: int | None  # the judge's start time (None: no entry, or one from before entries held it)
    pidns: str | None  # the judge's pid namespace (None: an entry from before entries named it)
    workers: list[tuple[int, int]]  # (pid, start time) of each worker it started
    cgroups: list[Path]  # each candidate cgroup it lists that is one `ProcessTree.attach` makes

    @property
    def head(self) -> str:
        """The judge and pidns lines, as an entry listing what a sweep could not yet remove begins."""
        lines = ([f"judge {self.start}"] if self.start is not None else []) + (
            [f"pidns {self.pidns}"] if self.pidns is not None else [])  # fmt: skip
        return "".join(line + "\n" for line in lines)


def _read_entry(path: Path) -> _Entry:
    """The registry entry at `path`, read once (an entry that cannot be read is an empty one)."""
    try:
        return _parse_entry(path.read_text())
    except OSError:
        return _parse_entry("")


def _parse_entry(text: str) -> _Entry:
    """An entry's fields from its lines (`judge <start>`, `pidns <ns>`, `worker <pid> <start>`,
    `cgroup <path>`); a malformed line is ignored, and only a candidate cgroup's path is kept: the entry is
    the judge user's own, but a sweep that writes `cgroup.kill` reads nothing it has not checked."""
    start, pidns, workers, cgroups = None, None, [], []
    mount = cgroup2_mount()
    for number, line in enumerate(text.splitlines()):
        kind, _, value = line.partition(" ")  # a cgroup's or namespace's value is taken whole
        fields = line.split()
        if fields[:1] == ["judge"] and number == 0 and len(fields) == 2 and fields[1].isdecimal():
            start = int(fields[1])
        elif kind == "pidns" and pidns is None:
            pidns = value
        elif fields[:1] == ["worker"] and len(fields) == 3 and fields[1].isdecimal() and fields[2].isdecimal():
            workers.append((int(fields[1]), int(fields[2])))
        elif kind == "cgroup" and mount is not None and _is_candidate_cgroup(value, mount):
            cgroups.append(Path(value))
    return _Entry(start, pidns, workers, cgroups)


def _is_candidate_cgroup(value: str, mount: Path) -> bool:
    """Whether a listed path is a `cand-<pid>-<hex>` folder in a `cuda-agent-judge` folder of the cgroup v2
    hierarchy, named without `..` or NUL."""
    group = Path(value)
    return ("\x00" not in value and group.is_absolute() and ".." not in group.parts
            and CANDIDATE_CGROUP.fullmatch(group.name) is not None and group.parent.name == CGROUP_PARENT
            and group.is_relative_to(mount))  # fmt: skip


def _candidate_of_dead_judge(uid: int, started: int, registered: dict[int, int | None]) -> bool:
    """Whether a process of the sandbox group with `uid`, started at `started`, is a candidate whose judge
    no longer runs: the registry's start time for that judge where it has one, else no process of the
    judge's pid that started before the candidate (a judge of another registry; pid reuse)."""
    if not CANDIDATE_UID_BASE <= uid < CANDIDATE_UID_BASE + PID_LIMIT * UIDS_PER_JUDGE:
        return False
    judge = (uid - CANDIDATE_UID_BASE) // UIDS_PER_JUDGE
    judge_started = _start_time(judge)
    if registered.get(judge) is not None:
        return judge_started != registered[judge]
    return judge_started is None or judge_started > started


def _ids_and_stat(pid: int | str) -> tuple[int, int, list[str]] | None:
    """A process's real uid and gid, and its /proc stat fields after the command name."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    stat = stat_fields(pid)
    if stat is None:
        return None
    lines = {line.split(":", 1)[0]: line.split() for line in status.splitlines() if line[:4] in ("Uid:", "Gid:")}
    if "Uid" not in lines or "Gid" not in lines:
        return None
    return int(lines["Uid"][1]), int(lines["Gid"][1]), stat


def _start_time(pid: int | str) -> int | None:
    """When `pid` started (clock ticks since boot), or None where no such process or thread exists."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields is not None and len(fields) > 19 and fields[19].isdigit() else None


def _sandbox_group() -> int | None:
    """The gid of the sandbox user's own group (every candidate's group), or None where the user does not
    exist or its group is a shared one (`useradd` without user groups gives `users`): then no uid in the
    candidate range is taken for a candidate's."""
    with contextlib.suppress(KeyError):
        gid = pwd.getpwnam(SANDBOX_USER).pw_gid
        return gid if grp.getgrgid(gid).gr_name == SANDBOX_USER else None
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
    judges = {int(p.name) for p in judges_dir().glob("*") if p.name.isdecimal()} if judges_dir().is_dir() else set()
    killed = 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        info = _ids_and_stat(entry)
        if info is None or info[0] != uid:
            continue
        stat = info[2]
        ppid, session = int(stat[1]), int(stat[3])  # after the comm field: state, ppid, pgrp, session
        if session in live_sessions:
            continue
        if session == int(entry) and ppid in judges and _ids_and_stat(ppid) is not None:
            continue  # another judge's worker
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(entry), signal.SIGKILL)
            killed += 1
    return killed
