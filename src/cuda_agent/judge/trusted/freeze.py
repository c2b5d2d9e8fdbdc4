"""Stopping a candidate's whole process tree while the baselines are timed, and killing it afterwards.

A process group is not a process tree: a candidate's child that calls `setsid()` leaves the group (and a
double fork leaves the parent chain), and `killpg(SIGSTOP)` misses it. So `ProcessTree` holds a worker
and everything it ever starts by two independent means:

1. **a cgroup v2 of its own** (`cgroup.freeze`, `cgroup.kill`) where the judge may create one (root, or a
   delegated subtree). Children inherit the cgroup whatever they do with sessions and parents, and a
   sandboxed (unprivileged) candidate cannot move itself out. `freeze()` waits for `frozen 1`.
2. **a walk of /proc**, always, on top of the cgroup: the worker, every descendant by parent pid, every
   process in its session or process group, every process whose working folder is inside the
   candidate's folder. Each is sent
   SIGSTOP, and the walk repeats until it finds nobody new (stopped processes cannot fork), then waits for
   each to show state T.

`freeze()` returns a `FreezeReport` saying what was stopped and how, for the verdict's checks. A tree that
cannot be frozen is a failure the caller turns into a verdict (fail closed).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_PARENT = "cuda-agent-judge"


def cgroup2_mount() -> Path | None:
    """Where the unified (v2) hierarchy is mounted, if anywhere."""
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        parts = line.split()
        if len(parts) >= 3 and parts[2] == "cgroup2":
            return Path(parts[1])
    return None


def _own_cgroup(mount: Path) -> Path | None:
    try:
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            if line.startswith("0::"):
                return mount / line[3:].lstrip("/")
    except OSError:
        pass
    return None


def create_cgroup(tag: str) -> Path | None:
    """A fresh cgroup v2 under the hierarchy's root (root) or our own delegated cgroup; None if neither."""
    mount = cgroup2_mount()
    if mount is None or not (mount / "cgroup.procs").exists():
        return None
    for base in (mount, _own_cgroup(mount)):
        if base is None:
            continue
        parent = base / CGROUP_PARENT
        try:
            parent.mkdir(exist_ok=True)
            group = parent / f"{tag}-{secrets.token_hex(4)}"
            group.mkdir()
        except OSError:
            continue
        if (group / "cgroup.freeze").exists():
            return group
        with contextlib.suppress(OSError):
            group.rmdir()
    return None


def stat_fields(pid: int | str) -> list[str] | None:
    """/proc/PID/stat after the command name: state, ppid, pgrp, session, ... (raw reads: a walk reads
    one per process, several times per timing round)."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
        try:
            raw = os.read(fd, 1024)
        finally:
            os.close(fd)
        return raw.rsplit(b")", 1)[1].decode().split()
    except (OSError, IndexError):
        return None


def _cwd_inside(pid: int | str, folder: Path) -> bool:
    try:
        cwd = Path(os.readlink(f"/proc/{pid}/cwd"))
    except OSError:
        return False
    return cwd == folder or folder in cwd.parents


@dataclass
class FreezeReport:
    method: str  # "cgroup v2 freeze + SIGSTOP of the /proc walk", or "SIGSTOP of the /proc walk"
    stopped: list[int] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> str:
        return f"{len(self.stopped)} process(es) stopped by {self.method} in {1000 * self.seconds:.1f} ms"


class FreezeFailed(RuntimeError):
    """Some process of the tree could not be stopped in time."""


@dataclass
class ProcessTree:
    """A worker process (`pid`) and every process it starts. `folder`: the candidate's own folder.

    Not a criterion: the sandbox user. Other judges' candidate workers on the machine run as that user
    too (the pool's `kill_strays` tells them apart when a candidate retires)."""

    pid: int
    folder: Path | None = None
    cgroup: Path | None = None
    _stopped: set[int] = field(default_factory=set)

    @classmethod
    def attach(cls, pid: int, folder: Path | None = None) -> ProcessTree:
        """Start tracking `pid` (before it runs any candidate code): into a cgroup of its own if possible."""
        tree = cls(pid, folder.resolve() if folder else None)
        group = create_cgroup(f"cand-{pid}")
        if group is not None:
            try:
                (group / "cgroup.procs").write_text(str(pid))
                tree.cgroup = group
            except OSError:
                with contextlib.suppress(OSError):
                    group.rmdir()
        return tree

    # ---- who belongs to the tree ----------------------------------------------------------------------
    def cgroup_members(self) -> set[int]:
        if self.cgroup is None:
            return set()
        members: set[int] = set()
        for procs in [self.cgroup / "cgroup.procs", *self.cgroup.glob("**/cgroup.procs")]:
            with contextlib.suppress(OSError, ValueError):
                members |= {int(x) for x in procs.read_text().split()}
        return members

    def walk(self) -> set[int]:
        """Every live process of the tree found in /proc (see the module docstring for the criteria)."""
        if self.pid <= 2 or self.pid == os.getpid():
            return set()  # never init, kthreadd or the judge itself, whatever a caller passed
        table: dict[int, list[str]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit() and int(entry) != os.getpid():
                fields = stat_fields(entry)
                if fields and fields[0] not in ("Z", "X"):
                    table[int(entry)] = fields
        members = {p for p in self.cgroup_members() if p in table}
        if self.pid in table:
            members.add(self.pid)
        judge = os.getpid()
        # Other workers of this judge (session leaders it started itself) are never part of this tree.
        others = {pid for pid, f in table.items() if pid != self.pid and int(f[1]) == judge and int(f[3]) == pid}
        for pid, fields in table.items():
            if pid not in others and self._belongs(pid, fields, table):
                members.add(pid)
        grew = True
        while grew:  # descendants by parent pid, however they changed session or group
            children = {pid for pid, f in table.items() if int(f[1]) in members} - members - others
            grew = bool(children)
            members |= children
        return members

    def _belongs(self, pid: int, fields: list[str], table: dict[int, list[str]]) -> bool:
        """In the worker's process group or session, or an orphan or session leader (what a double fork
        leaves: the parent chain is cut there) working in the candidate's folder. (Reading every
        process's cwd would cost a syscall each; descendants are found by parent pid anyway.)"""
        if self.pid in (int(fields[2]), int(fields[3])):
            return True
        ppid = int(fields[1])
        orphan_or_leader = ppid <= 1 or ppid not in table or int(fields[3]) == pid
        return orphan_or_leader and self.folder is not None and _cwd_inside(pid, self.folder)

    def members(self) -> set[int]:
        return self.walk()

    # ---- freeze / thaw / kill ----------------------------------------------------------------------------
    def freeze(self, timeout: float = 5.0) -> FreezeReport:
        """Stop every process of the tree; returns once each is verifiably stopped (or raises)."""
        began = time.monotonic()
        method = "SIGSTOP of the /proc walk"
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                (self.cgroup / "cgroup.freeze").write_text("1")
                method = "cgroup v2 freeze + SIGSTOP of the /proc walk"
        deadline = began + timeout
        while True:  # stopped processes cannot fork: repeat until a walk finds nobody new
            members = self.walk()
            new = members - self._stopped
            for pid in sorted(new):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGSTOP)
                self._stopped.add(pid)
            if not new:
                break
            if time.monotonic() > deadline:
                self.thaw()
                raise FreezeFailed(f"the candidate's processes kept multiplying for {timeout:g} s")
        while running := [p for p in members if not self._is_stopped(p)]:
            if time.monotonic() > deadline:
                self.thaw()
                raise FreezeFailed(f"{len(running)} process(es) of the candidate did not stop within {timeout:g} s")
            time.sleep(0.0005)
        if self.cgroup is not None and not self._cgroup_frozen(deadline):
            self.thaw()
            raise FreezeFailed("the candidate's cgroup did not report frozen")
        return FreezeReport(method, sorted(members), time.monotonic() - began)

    def _is_stopped(self, pid: int) -> bool:
        fields = stat_fields(pid)
        if fields is None or fields[0] in ("Z", "X"):
            return True  # gone
        if fields[0] in ("T", "t"):
            return True
        return pid in self.cgroup_members() and self._cgroup_says_frozen()

    def _cgroup_says_frozen(self) -> bool:
        if self.cgroup is None:
            return False
        try:
            return "frozen 1" in (self.cgroup / "cgroup.events").read_text()
        except OSError:
            return False

    def _cgroup_frozen(self, deadline: float) -> bool:
        while not self._cgroup_says_frozen():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.001)
        return True

    def thaw(self) -> None:
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                (self.cgroup / "cgroup.freeze").write_text("0")
        for pid in sorted(self._stopped):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGCONT)
        self._stopped.clear()

    def kill_once(self) -> int:
        """SIGKILL the whole tree once (cgroup.kill where available, and every process one walk finds),
        without waiting: what `kill` repeats until the walk finds nobody. Returns the signals sent."""
        killed = 0
        if self.cgroup is not None:
            with contextlib.suppress(OSError):
                (self.cgroup / "cgroup.kill").write_text("1")
        for pid in self.walk():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
                killed += 1
        return killed

    def kill(self) -> int:
        """SIGKILL the whole tree (cgroup.kill where available, and every process the walk finds), until a
        walk finds nobody (at most five rounds)."""
        killed = 0
        for _ in range(5):
            sent = self.kill_once()
            killed += sent
            if not sent:
                break
            time.sleep(0.01)
        self._stopped.clear()
        return killed

    def close(self) -> None:
        """Kill what is left and remove the cgroup."""
        self.kill()
        if self.cgroup is not None:
            for _ in range(100):
                try:
                    self.cgroup.rmdir()
                    break
                except OSError:
                    time.sleep(0.01)
            self.cgroup = None
