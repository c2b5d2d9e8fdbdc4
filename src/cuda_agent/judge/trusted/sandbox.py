"""The candidate's sandbox: an unprivileged user, no network, private writable places, resource limits.

Built from the kernel's own mechanisms, applied between fork and exec of the candidate worker:
- a separate unprivileged user (the group `cuda-agent-sandbox`, created on first use when the judge runs
  as root, and a uid of its own per candidate, `candidate_uid`), so the candidate can write only to
  folders it owns (its scratch) and world-writable ones, and cannot touch the judge's files, caches or
  processes, nor another candidate's processes (their /proc entries, which lead into their folders and
  namespaces, and signals), and RLIMIT_NPROC bounds its threads and processes;
- a fresh network namespace (`unshare(CLONE_NEWNET)`, root only before dropping privileges): no network;
- private writable places (`PrivatePlaces`, with the sandbox user only): a mount namespace of its own in
  which every world-writable folder (`world_writable`: /tmp, /var/tmp, /dev/shm, /run/lock, ... as found
  on this machine) is covered by a fresh, size-bounded tmpfs and every world-writable file elsewhere (a
  uv `.lock`, say) is read-only, and an IPC namespace of its own (SysV shared memory, semaphores, message
  queues; POSIX message queues). Without it one candidate could leave a world-readable file or a segment
  that a later one reads (the sticky bit guards only against deleting). Its own folder stays at its path
  (bound back into the tmpfs); the slot's folder above it is the judge's, mode 700, so no other candidate
  reaches it; the judge's scratch root (where a judgment's task, state and input files appear after the
  worker started) is seen read-only at another path (common/judge_files.py). Nothing else is writable
  for a candidate: every other folder it can reach is neither world-writable nor its own; /proc and /sys
  take no files. So candidates share no writable place, and reusing one input set across a group of
  candidates of a task passes nothing between them (docs/design/trust_boundary.md);
- rlimits on open files, file size and core dumps; wall time is enforced by the parent.
Where a mechanism is unavailable (not root, no useradd, unshare refused) the judgment still runs and
`Sandbox.protections` says what was active. Not provided: seccomp filters and Landlock (a candidate can
still read world-readable files), and a GPU memory cap below the device's (the judge checks what the
candidate holds after each call instead).
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import json
import os
import pwd
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISDIR, S_ISFIFO, S_ISREG

from cuda_agent.judge.common.channel import package_root
from cuda_agent.judge.common.judge_files import JUDGE_FILES_ENV
from cuda_agent.judge.common.procs import Limits

SANDBOX_USER = "cuda-agent-sandbox"
# Each candidate runs as a uid of its own, in the sandbox user's group: processes of one uid may open each
# other's /proc/PID/root, cwd, fd and mem (so reach another candidate's private places, or plant files in
# the warmed spare that will run the next candidate) and signal each other. The uid is made of this judge
# process's pid and a counter, so no two live candidates on the machine share one; it needs no passwd
# entry (USER, LOGNAME and HOME are set for it).
# Private places and a uid per candidate are on wherever the machine allows them (root, mount and IPC
# namespaces): the whole adversarial suite was judged as before with them on the H200 (2026-12-04).
# CUDA_AGENT_PRIVATE_PLACES=0 turns them off (and reference groups with them, decide/reference_group.py),
# for a machine where a candidate needs a shared place the judge does not know of.
PRIVATE_PLACES_ENV = "CUDA_AGENT_PRIVATE_PLACES"


def private_places_enabled() -> bool:
    return os.environ.get(PRIVATE_PLACES_ENV, "") != "0"


CANDIDATE_UID_BASE = 1 << 28
UIDS_PER_JUDGE = 512  # a judge process reuses a uid after this many candidates (the old one long gone)
_UID_COUNTER = itertools.count()
CLONE_NEWNET = 0x40000000
CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
# Exit codes of a worker whose sandbox could not be made (fail closed: it dies before it answers).
EXIT_NO_NETWORK_NAMESPACE, EXIT_CAPABILITIES, EXIT_NO_PRIVATE_PLACES = 97, 98, 96
# Each covered folder's fresh tmpfs: bounded, so a candidate cannot fill the host's memory through it.
PRIVATE_TMPFS = "size=512m,nr_inodes=65536,mode=1777"
# The slot folder above the candidate's own: judge-owned, holds only the candidate's folder.
OWN_ROOT_TMPFS = "size=64k,nr_inodes=16,mode=0755"
JUDGE_FILES_DIR = ".cuda-agent-judge-files"  # where a hidden scratch root is seen, in the folder covering it
# World-writable folders and files are looked for this many levels below / and below every mount point, through
# folders the sandbox user may search (a folder behind one it may not search is out of its reach).
SCAN_DEPTH = 6  # 0.2 s once per judge process on the machine this was written on
NOT_SCANNED = ("/proc", "/sys")  # pseudo filesystems: no files can be created in them
PR_CAPBSET_DROP = 24
# Dropped from a candidate that runs as root (no sandbox user): without them it cannot read the judge's
# memory (ptrace, /proc/PID/mem of a non-dumpable process: where the process key of authkey.py lives),
# load kernel modules or touch raw memory.
DROPPED_CAPABILITIES = {"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_PTRACE": 19}


def drop_capabilities() -> bool:
    """Remove DROPPED_CAPABILITIES from the bounding set (between fork and exec: gone after exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return all(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 for cap in DROPPED_CAPABILITIES.values())


def world_writable(depth: int = SCAN_DEPTH) -> tuple[list[str], list[str]]:
    """Folders where any user may create files, and files (and FIFOs) any user may write, found from / and
    every mount point down to `depth` levels, through folders others may search. Sticky folders count:
    every candidate is the same user, so the sticky bit guards nothing between them. What lies below a
    found folder is covered with it and not listed."""
    roots = ["/"]
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4])  # \040: a space
            roots.append(point)
    folders: set[str] = set()
    files: set[str] = set()
    seen: set[tuple[int, int]] = set()
    stack = [(root, depth) for root in roots]
    while stack:
        path, left = stack.pop()
        if any(_under(path, p) for p in NOT_SCANNED):
            continue
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not S_ISDIR(info.st_mode) or (info.st_dev, info.st_ino) in seen:
            continue
        seen.add((info.st_dev, info.st_ino))
        if info.st_mode & 0o002:
            folders.add(path)
        elif left > 0 and info.st_mode & 0o001:
            with contextlib.suppress(OSError), os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        stack.append((entry.path, left - 1))
                    elif not entry.is_symlink():
                        mode = entry.stat(follow_symlinks=False).st_mode
                        if mode & 0o002 and (S_ISREG(mode) or S_ISFIFO(mode)):
                            files.add(entry.path)

    def top(paths: set[str]) -> list[str]:
        return sorted(p for p in paths if not any(_under(p, q) and p != q for q in folders))

    return top(folders), top(files)


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _mount(libc: ctypes.CDLL, source: str | None, target: str, fstype: str | None, flags: int,
           data: str | None = None) -> None:  # fmt: skip
    encoded = [None if x is None else x.encode() for x in (source, target, fstype, data)]
    if libc.mount(encoded[0], encoded[1], encoded[2], ctypes.c_ulong(flags), encoded[3]) != 0:
        raise OSError(ctypes.get_errno(), f"mount {source} on {target}")


@dataclass(frozen=True)
class PrivatePlaces:
    """The candidate's own mount and IPC namespaces (computed in the parent, `apply`d between fork and exec,
    as root). `covered`: world-writable folders, each under a fresh tmpfs. `own_root`/`own_folder`: the
    slot's judge-owned folder and the candidate's folder in it, which stays writable at its path.
    `sealed`: world-writable files (and FIFOs) elsewhere, each bound read-only onto itself (one that is
    gone is skipped: only its folder's owner could make it again). `scratch`: the judge's scratch root,
    seen read-only at `view` where a covered folder hides it. `kept`:
    folders the worker needs to start (its Python, the judge's package) that a covered folder hides: bound
    back read-only at their paths."""

    covered: tuple[str, ...]
    sealed: tuple[str, ...] = ()
    kept: tuple[str, ...] = ()
    own_root: str | None = None
    own_folder: str | None = None
    scratch: str | None = None

    def hidden(self, path: str) -> bool:
        return any(_under(path, folder) for folder in self.covered)

    @property
    def view(self) -> str | None:
        """Where the scratch root is seen, when a covered folder hides it."""
        if self.scratch is None or not self.hidden(self.scratch):
            return None
        cover = next(folder for folder in self.covered if _under(self.scratch, folder))
        return str(Path(cover) / JUDGE_FILES_DIR)

    def apply(self) -> None:
        """Make the namespaces (raises OSError; the caller fails closed)."""
        libc = ctypes.CDLL(None, use_errno=True)
        view = self.view
        binds = [(path, path, True) for path in self.kept]
        if view is not None and self.scratch is not None:
            binds.append((self.scratch, view, True))
        if self.own_folder is not None:
            binds.append((self.own_folder, self.own_folder, False))
        if libc.unshare(CLONE_NEWNS | CLONE_NEWIPC) != 0:
            raise OSError(ctypes.get_errno(), "unshare(CLONE_NEWNS | CLONE_NEWIPC)")
        _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)  # nothing below propagates to the host
        # Opened in the new namespace (a bind's source must be one of its mounts) before anything is
        # covered: afterwards these paths lead into the fresh tmpfs.
        opened = [
            (os.open(src, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC), dst, ro) for src, dst, ro in binds
        ]
        for path in self.sealed:
            with contextlib.suppress(FileNotFoundError):
                # A FIFO on a read-only mount still carries data: /dev/null goes over it instead.
                source = "/dev/null" if S_ISFIFO(os.lstat(path).st_mode) else path
                opened.append((os.open(source, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC), path, True))
        umask = os.umask(0o022)  # the folders made below must be searchable by the sandbox user
        try:
            for folder in self.covered:
                _mount(libc, "tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, PRIVATE_TMPFS)
            if self.own_root is not None:  # the judge's folder above the candidate's: nothing else in it
                os.makedirs(self.own_root, exist_ok=True)
                _mount(libc, "tmpfs", self.own_root, "tmpfs", MS_NOSUID | MS_NODEV, OWN_ROOT_TMPFS)
            for fd, target, read_only in opened:
                self._bind(libc, fd, target, read_only)
            if self.own_folder is not None:
                os.chdir(self.own_folder)
        finally:
            os.umask(umask)
            for fd, _, _ in opened:
                os.close(fd)

    @staticmethod
    def _bind(libc: ctypes.CDLL, fd: int, target: str, read_only: bool) -> None:
        if not os.path.lexists(target):
            os.makedirs(target)
        _mount(libc, f"/proc/self/fd/{fd}", target, None, MS_BIND)
        if read_only:
            _mount(libc, None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


@dataclass
class Sandbox:
    uid: int | None = None
    gid: int | None = None
    isolate_network: bool = False
    limits: Limits = field(default_factory=Limits)
    protections: dict[str, str] = field(default_factory=dict)
    places: PrivatePlaces | None = None

    def own(self, folder: Path, root: Path | None = None, scratch: Path | None = None) -> dict[str, str]:
        """The candidate's folder, kept writable at its path in its mount namespace. `root`: a folder of
        the judge's above it that must then be the judge's alone (mode 700: no other candidate reaches
        `folder` through it). `scratch`: where the judge writes files for the worker after it starts,
        seen read-only. Returns the environment entries the worker needs (its user's name: its uid has no
        passwd entry; where the judge's files are seen)."""
        user = {"USER": SANDBOX_USER, "LOGNAME": SANDBOX_USER} if self.uid is not None else {}
        if self.places is None:
            return user
        self.places = PrivatePlaces(
            self.places.covered,
            self.places.sealed,
            self.places.kept,
            str(root) if root else None,
            str(folder),
            str(scratch) if scratch else None,
        )
        view = self.places.view
        return {**user, JUDGE_FILES_ENV: json.dumps([str(scratch), view])} if view else user

    def preexec(self) -> Callable[[], None]:
        apply_limits = self.limits.preexec()
        uid, gid, isolate, places = self.uid, self.gid, self.isolate_network, self.places

        def run() -> None:
            if isolate:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.unshare(CLONE_NEWNET) != 0:
                    os._exit(EXIT_NO_NETWORK_NAMESPACE)  # fail closed: the parent sees the worker die
            if places is not None:
                try:
                    places.apply()
                except Exception:
                    os._exit(EXIT_NO_PRIVATE_PLACES)  # fail closed: never a candidate in the shared places
            apply_limits()
            if gid is not None and uid is not None:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            elif os.geteuid() == 0 and not drop_capabilities():
                os._exit(EXIT_CAPABILITIES)  # fail closed: a root candidate must not keep CAP_SYS_PTRACE

        return run

    def give(self, *paths: Path) -> None:
        """Hand folders to the sandbox user (the candidate may write only there)."""
        if self.uid is None or self.gid is None:
            return
        for path in paths:
            os.chown(path, self.uid, self.gid)
            for child in path.rglob("*"):
                os.chown(child, self.uid, self.gid, follow_symlinks=False)


def candidate_uid() -> int:
    """A uid for one candidate that no other live candidate on this machine has (see CANDIDATE_UID_BASE)."""
    return CANDIDATE_UID_BASE + os.getpid() * UIDS_PER_JUDGE + next(_UID_COUNTER) % UIDS_PER_JUDGE


def _sandbox_user() -> tuple[int, int] | None:
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(SANDBOX_USER)
        return entry.pw_uid, entry.pw_gid
    useradd = shutil.which("useradd")
    if not useradd:
        return None
    created = subprocess.run(
        [useradd, "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SANDBOX_USER],
        capture_output=True, timeout=30,
    )  # fmt: skip
    if created.returncode != 0:
        return None
    entry = pwd.getpwnam(SANDBOX_USER)
    return entry.pw_uid, entry.pw_gid


def _user_can_run_judge(uid: int, gid: int) -> bool:
    """Can the sandbox user start this interpreter and import torch and the judge? (A Python under
    /root, say, is not readable by other users; then user separation is off and the verdict says so.)"""
    root = package_root()
    code = f"import sys; sys.path.insert(0, {root!r}); import torch, cuda_agent.judge.candidate.worker"

    def drop() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    try:
        probe = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, timeout=180,
                               preexec_fn=drop, cwd="/")  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return False
    return probe.returncode == 0


def _can_unshare_network() -> bool:
    """Probe in a throwaway child: unshare needs CAP_SYS_ADMIN and a kernel that allows it."""
    probe = subprocess.run(
        ["python3", "-c", "import ctypes,sys; sys.exit(ctypes.CDLL(None).unshare(0x40000000) != 0)"],
        capture_output=True, timeout=30,
    )  # fmt: skip
    return probe.returncode == 0


def _needed_folders() -> list[str]:
    """Folders a worker reads to start: its Python and the judge's package (and CUDA MPS's pipes, where an
    MPS daemon serves the GPU). Where a covered folder holds one, it is bound back read-only."""
    folders = {sys.prefix, sys.base_prefix, package_root(), os.path.dirname(os.path.realpath(sys.executable))}
    folders.add(os.environ.get("CUDA_MPS_PIPE_DIRECTORY", "/tmp/nvidia-mps"))
    return sorted(os.path.realpath(f) for f in folders if os.path.isdir(f))


def _private_places() -> PrivatePlaces | None:
    """The places to cover on this machine, if a throwaway child can make them (root, a kernel that
    allows mount and IPC namespaces)."""
    folders, files = world_writable()
    places = PrivatePlaces(tuple(folders), tuple(files))
    kept = tuple(f for f in _needed_folders() if places.hidden(f))
    places = PrivatePlaces(places.covered, places.sealed, kept)

    def make() -> None:
        try:
            places.apply()
        except Exception:
            os._exit(EXIT_NO_PRIVATE_PLACES)

    try:
        probe = subprocess.run([sys.executable, "-I", "-c", "pass"], capture_output=True, timeout=60,
                               preexec_fn=make, cwd="/")  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return places if probe.returncode == 0 else None


_PROBED: dict[str, object] = {}


def candidates_separated() -> bool | None:
    """Whether this process's candidates run as the sandbox user (None until `candidate_sandbox` probed)."""
    return None if "user" not in _PROBED else _PROBED["user"] is not None


def candidates_share_no_place() -> bool | None:
    """Whether this process's candidates get private places (None until `candidate_sandbox` probed): only
    then may work be reused across candidates of a group (docs/design/trust_boundary.md)."""
    return None if "places" not in _PROBED else _PROBED["places"] is not None


def candidate_sandbox(processes: int = 512, open_files: int = 4096) -> Sandbox:
    """The strongest sandbox this machine allows for a candidate worker."""
    if "user" not in _PROBED:
        root = os.geteuid() == 0
        user = _sandbox_user() if root else None
        _PROBED["user"] = user if user and _user_can_run_judge(*user) else None
        _PROBED["user_reason"] = "" if _PROBED["user"] or not user else " (it cannot run this Python)"
        _PROBED["net"] = root and _can_unshare_network()
        # Private places only matter between candidates of the sandbox user: a candidate running as the
        # judge's user can write wherever the judge can.
        _PROBED["places"] = _private_places() if _PROBED["user"] and private_places_enabled() else None
    user = _PROBED["user"]
    isolate = bool(_PROBED["net"])
    places = _PROBED["places"] if isinstance(_PROBED["places"], PrivatePlaces) else None
    sandbox = Sandbox(isolate_network=isolate, places=places)
    protections = {
        "process": "own process group, killed after the verdict; python -I; scrubbed environment",
        "network": "own network namespace (no interfaces)"
        if isolate
        else "NOT isolated (needs root for unshare)",
    }
    if isinstance(user, tuple):
        own_uid = _PROBED["places"] is not None
        sandbox.uid, sandbox.gid = (candidate_uid() if own_uid else user[0]), user[1]
        sandbox.limits = Limits(processes=processes, open_files=open_files)
        protections["user"] = (
            f"unprivileged uid {sandbox.uid} of its own, group {SANDBOX_USER}; writes only to its scratch"
            if own_uid else f"unprivileged user {SANDBOX_USER} (uid {user[0]}); writes only to its scratch"
        )
        protections["processes"] = f"at most {processes} processes and threads"
    else:
        sandbox.limits = Limits(open_files=open_files)
        protections["user"] = "NOT separated: runs as the judge's user" + str(
            _PROBED.get("user_reason") or " (needs root to drop privileges)"
        )
        if os.geteuid() == 0:
            protections["capabilities"] = "dropped: " + ", ".join(DROPPED_CAPABILITIES)
    if places is not None:
        protections["private_places"] = (
            "own mount and IPC namespaces: a fresh tmpfs over every world-writable folder ("
            + ", ".join(places.covered)
            + f"), {len(places.sealed)} world-writable files made read-only, its own folder kept, the "
            "judge's scratch read-only; SysV IPC and POSIX message queues of its own"
        )
    elif isinstance(user, tuple) and not private_places_enabled():
        protections["private_places"] = (
            f"off: candidates share /tmp, /dev/shm and SysV IPC ({PRIVATE_PLACES_ENV}=0 turned private places"
            " off; unset it to turn them on)"
        )
    elif isinstance(user, tuple):
        protections["private_places"] = (
            "NOT private: candidates share /tmp, /dev/shm and SysV IPC (mount or IPC namespaces refused)"
        )
    else:
        protections["private_places"] = "NOT private: the candidate runs as the judge's user"
    protections["not_provided"] = "seccomp, Landlock (reads of world-readable files are possible)"
    sandbox.protections = protections
    return sandbox
