"""A reader-writer lease on each physical GPU, across processes: final judgments alone, tool commands together.

Why: a final judgment times kernels. Anything else running on that GPU meanwhile (another episode's
`utils/compile.sh`, verification, profiling, any command of its) moves the timings: on an H200 an
`eval -j 2` run measured a softmax kernel at 0.20x that judged alone measures 1.5x. The judge's own
lock (judge/trusted/pool.py) keeps judge processes apart, but an agent's commands are not the judge, so
the code that calls the judge (eval's runner, `solve`'s LocalJudge, GRPO's environment, verl's local
judge) takes this lease EXCLUSIVE around each final judgment, and the agent's Bash tool takes it SHARED
around every command (agent/tools/). Tool commands of many episodes still run together; none runs
while a judgment holds the GPU, and a judgment starts only once the commands already running have ended.

Protocol: two lock files per GPU, both taken with flock(2), in a per-user folder (`lease_dir()`):

- `<gpu>.turnstile`: a writer takes it EXCLUSIVE as soon as it asks and keeps it until it releases;
  a reader takes it EXCLUSIVE only for the moment it needs to pass. While a judgment waits for the GPU
  or holds it, no new tool command gets in, so a stream of commands cannot starve it (writer
  preference). flock keeps no queue, so hand-offs are a race; writers poll 10 times as often as
  readers, so at a hand-off the next judgment nearly always wins over queued commands.
- `<gpu>.rw`: writers EXCLUSIVE (after the turnstile, so this only waits for the commands already
  inside), readers SHARED.

A process that dies (killed, crashed) loses its flocks with its file descriptors: no stale lease.
Waits are bounded (`LeaseTimeout` names who holds the GPU, from /proc/locks); holders get a `Lease`
saying how long they waited, which eval's records and verdict files keep (`gpu_lease`).
Readers take every GPU they can see in sorted order and a writer one GPU at a time, so no two holders
wait on each other in a cycle. A thread that already holds a GPU may take it again (nested: a no-op);
asking for exclusive while holding shared would wait on itself and is an error.

GPUs are named by UUID (`nvidia-smi`, else /proc/driver/nvidia), mapped through CUDA_VISIBLE_DEVICES
(indices or UUID prefixes), so two processes that see one GPU under different indices share its lease.
Knobs: `CUDA_AGENT_GPU_LEASE=off` (no leases: each episode has its own GPU), `CUDA_AGENT_GPU_LEASE_DIR`
(the lock folder), `CUDA_AGENT_GPU_LEASE_GPUS` (comma-separated ids of the visible GPUs, instead of
discovery: containers without nvidia-smi), `CUDA_AGENT_GPU_LEASE_TIMEOUT_S` (the default bound, 1800 s),
`CUDA_AGENT_GPU_LEASE_LOG` (a file each lease appends its interval to; `python -m cuda_agent.gpu_lease
audit FILE` checks that no exclusive interval overlapped another on its GPU).

Not covered: other users (the folder is per user, like the judge's lock), processes that never ask
(a notebook running kernels by hand), and a tool command of this user that flocks the files itself:
such a command can delay judgments up to the bound, and the timeout error names it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import json
import os
import re
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ENABLE_ENV, DIR_ENV, GPUS_ENV, TIMEOUT_ENV = (
    "CUDA_AGENT_GPU_LEASE", "CUDA_AGENT_GPU_LEASE_DIR", "CUDA_AGENT_GPU_LEASE_GPUS", "CUDA_AGENT_GPU_LEASE_TIMEOUT_S",
)  # fmt: skip
IN_TOOL_ENV = "CUDA_AGENT_GPU_LEASE_IN_TOOL"  # set in agents' Bash commands: they hold their GPUs already
LOG_ENV = "CUDA_AGENT_GPU_LEASE_LOG"  # a file: one JSON line per lease given back (audit, `python -m ... audit`)
DEFAULT_TIMEOUT_S = 1800.0  # above the longest tool command (600 s) plus a few judgments queued ahead
EXCLUSIVE, SHARED = "exclusive", "shared"
_WRITER_POLL_S, _READER_POLL_S = 0.005, 0.05  # the longest sleep between tries (writers win hand-offs)


class LeaseError(RuntimeError):
    """The lease cannot be used as asked (an unsafe folder, a shared-to-exclusive upgrade)."""


class LeaseTimeout(LeaseError):
    """The GPU was not free within the bound; the message names the holders."""


class LeaseCancelled(LeaseError):
    """The caller's cancel event was set while it waited."""


@dataclass
class Lease:
    """A held lease: release it (or leave the `with` block) to let others in."""

    mode: str
    gpus: tuple[str, ...]
    waited_s: float
    what: str = ""
    _handles: list[tuple[str, int]] = field(default_factory=list, repr=False)  # (gpu, fd), release order
    _acquired: float = field(default_factory=time.monotonic, repr=False)
    _wall: float = field(default_factory=time.time, repr=False)  # when it was granted, for the audit log
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)  # release from two threads

    @property
    def held_s(self) -> float:
        return time.monotonic() - self._acquired

    def release(self) -> None:
        """Give the GPUs back (idempotent; any thread may call it)."""
        with self._lock:  # a background shell's watcher and the episode's close may both release
            handles, self._handles = self._handles, []
        if handles and os.environ.get(LOG_ENV):
            _log(self, os.environ[LOG_ENV])
        for _, fd in handles:
            with contextlib.suppress(OSError):
                fcntl.flock(fd, fcntl.LOCK_UN)
            with contextlib.suppress(OSError):
                os.close(fd)

    def to_dict(self) -> dict[str, Any]:
        """What a record keeps: the mode, the GPUs, seconds waited and held."""
        return {"mode": self.mode, "gpus": list(self.gpus), "waited_s": round(self.waited_s, 3),
                "held_s": round(self.held_s, 3)}  # fmt: skip

    def __enter__(self) -> Lease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


# ---- which GPUs ------------------------------------------------------------------------------------------


def enabled() -> bool:
    """Leases are on unless switched off, and inside an agent's tool command, which holds its GPUs shared
    as a whole: a `cuda-agent judge` it runs asking for exclusive use would wait on its own command."""
    if os.environ.get(IN_TOOL_ENV) == "1":
        return False
    return os.environ.get(ENABLE_ENV, "on").strip().lower() not in ("off", "0", "false", "no")


def default_timeout() -> float:
    value = os.environ.get(TIMEOUT_ENV)
    try:
        return float(value) if value else DEFAULT_TIMEOUT_S
    except ValueError:
        raise LeaseError(f"${TIMEOUT_ENV} must be a number of seconds, got {value!r}") from None


def parse_smi(text: str) -> list[tuple[int, str, str]]:
    """(index, uuid, pci bus id) from `nvidia-smi --query-gpu=index,uuid,pci.bus_id --format=csv,noheader`."""
    rows = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3 and parts[0].isdigit():
            rows.append((int(parts[0]), parts[1], parts[2]))
    return sorted(rows)


@functools.lru_cache(maxsize=1)
def machine_gpus() -> tuple[str, ...]:
    """UUIDs of the machine's GPUs in index order (PCI bus order); () when none can be found."""
    smi = shutil.which("nvidia-smi")
    if smi:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            done = subprocess.run([smi, "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=30, check=False)  # fmt: skip
            rows = parse_smi(done.stdout) if done.returncode == 0 else []
            if rows:
                return tuple(uuid for _, uuid, _ in rows)
    found = []  # the driver's own listing, one folder per PCI bus id
    root = Path("/proc/driver/nvidia/gpus")
    for folder in sorted(root.iterdir()) if root.is_dir() else []:
        with contextlib.suppress(OSError):
            info = (folder / "information").read_text()
            match = re.search(r"GPU UUID:\s*(\S+)", info)
            found.append(match.group(1) if match else f"pci-{folder.name}")
    return tuple(found)


def visible_gpus() -> list[str]:
    """Ids of the GPUs this process (and the commands it starts) can use, in CUDA's order."""
    override = os.environ.get(GPUS_ENV)
    if override is not None:
        return [g.strip() for g in override.split(",") if g.strip()]
    everything = list(machine_gpus())
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        if not everything and Path("/dev/nvidiactl").exists():  # a GPU we cannot name: name it by index
            minors = sorted(
                int(p.name[6:]) for p in Path("/dev").glob("nvidia[0-9]*") if p.name[6:].isdigit()
            )
            return [f"index-{m}" for m in minors]
        return everything
    chosen = []
    for entry in (e.strip() for e in visible.split(",")):
        if not entry:
            break
        if entry.isdigit():
            if int(entry) >= len(everything) and everything:
                break  # CUDA stops at the first invalid entry
            chosen.append(everything[int(entry)] if everything else f"index-{entry}")
        else:
            match = [u for u in everything if u.startswith(entry)] if not entry.startswith("MIG-") else []
            chosen.append(match[0] if len(match) == 1 else entry)
    return chosen


def gpus_of(devices: Sequence[int] | None) -> list[str]:
    """The physical GPUs behind visible device indices (default: the first, as the judge's default)."""
    visible = visible_gpus()
    return [visible[d] for d in (devices if devices else [0]) if 0 <= d < len(visible)]


# ---- the lock folder -------------------------------------------------------------------------------------


def lease_dir() -> Path:
    """`$CUDA_AGENT_GPU_LEASE_DIR`, else /dev/shm/cuda-agent-gpu-leases-<uid> (or /tmp/...), mode 700.

    It must be this user's and closed to everyone else: anyone who can open a lock file can flock it and
    hold every judgment up. A folder failing that is refused, never used."""
    chosen = os.environ.get(DIR_ENV)
    base = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")
    folder = Path(chosen) if chosen else base / f"cuda-agent-gpu-leases-{os.geteuid()}"
    with contextlib.suppress(FileExistsError):
        folder.mkdir(mode=0o700, parents=bool(chosen))
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o077:
        raise LeaseError(f"GPU lease folder {folder} must be a folder (not a link) of uid {os.geteuid()} that only "
                         f"it can open (mode 700); it is uid {info.st_uid}, mode {oct(info.st_mode & 0o7777)}. "
                         f"Fix it (chmod 700) or point ${DIR_ENV} elsewhere")  # fmt: skip
    return folder


def _file_name(gpu: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", gpu)


def _open(folder: Path, gpu: str, suffix: str) -> int:
    flags = os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    return os.open(folder / f"{_file_name(gpu)}.{suffix}", flags, 0o600)


# ---- holding ---------------------------------------------------------------------------------------------

_held = threading.local()  # gpu -> mode, for the context-managed leases of this thread


def _thread_modes() -> dict[str, str]:
    if not hasattr(_held, "modes"):
        _held.modes = {}
    return _held.modes


def _flock(fd: int, mode: int, deadline: float, poll: float, cancel: threading.Event | None) -> bool:
    """flock with a deadline (flock itself has none): tries with LOCK_NB, sleeping up to `poll` between."""
    sleep = 0.001
    while True:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            pass
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if cancel is not None and cancel.is_set():
            raise LeaseCancelled("stopped while waiting for the GPU: the run was cancelled")
        time.sleep(min(sleep, poll, left))
        sleep *= 2


def holders(folder: Path, gpu: str) -> list[str]:
    """Who has the GPU's lock files locked now, from /proc/locks ('pid 123 (python -m ...) holds it
    shared'); best effort, [] where /proc/locks cannot be read."""
    roles = {"rw": "holds it", "turnstile": "is in line for it (or passing)"}
    try:
        files = {s: os.stat(folder / f"{_file_name(gpu)}.{s}") for s in roles}
        inodes = {f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}": s for s, st in files.items()}
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return []
    out = set()
    for parts in (line.split() for line in lines):
        if len(parts) < 6 or parts[1] != "FLOCK":  # waiters ("->") are not listed: nobody here blocks
            continue
        inode = parts[5]
        if inode in inodes:
            try:
                cmd = (
                    Path(f"/proc/{parts[4]}/cmdline")
                    .read_bytes()
                    .replace(b"\0", b" ")
                    .decode(errors="replace")
                )
            except OSError:
                cmd = "?"
            how = "shared" if parts[3] == "READ" else "exclusive"
            out.add(f"pid {parts[4]} ({' '.join(cmd.split())[:120]}) {roles[inodes[inode]]} {how}")
    return sorted(out)


def acquire(gpus: Sequence[str], mode: str, *, timeout_s: float | None = None, folder: Path | None = None,
            what: str = "", cancel: threading.Event | None = None) -> Lease:  # fmt: skip
    """Take `gpus` in `mode` (EXCLUSIVE or SHARED) within `timeout_s`; raises LeaseTimeout naming the holders.

    The returned Lease is not tied to this thread (a background shell's is released by whoever sees it
    end); use `hold()` for a `with` block that may nest."""
    if mode not in (EXCLUSIVE, SHARED):
        raise ValueError(f"mode must be {EXCLUSIVE!r} or {SHARED!r}, got {mode!r}")
    timeout_s = default_timeout() if timeout_s is None else timeout_s
    gpus = tuple(sorted(set(gpus)))
    lease = Lease(mode, gpus, 0.0, what)
    if not gpus:
        return lease
    folder = folder or lease_dir()
    start = time.monotonic()
    deadline = start + timeout_s
    try:
        for gpu in gpus:
            turnstile, rw = _open(folder, gpu, "turnstile"), _open(folder, gpu, "rw")
            poll = _WRITER_POLL_S if mode == EXCLUSIVE else _READER_POLL_S
            try:
                ok = _flock(turnstile, fcntl.LOCK_EX, deadline, poll, cancel)
                if ok:
                    ok = _flock(
                        rw, fcntl.LOCK_EX if mode == EXCLUSIVE else fcntl.LOCK_SH, deadline, poll, cancel
                    )
            except BaseException:
                for fd in (rw, turnstile):
                    os.close(fd)
                raise
            if not ok:
                for fd in (rw, turnstile):
                    os.close(fd)
                who = holders(folder, gpu)
                raise LeaseTimeout(
                    f"GPU {gpu} was not free for {what or mode + ' use'} within {timeout_s:g} s "
                    f"({'held by ' + '; '.join(who) if who else 'holders unknown'}); "
                    f"raise ${TIMEOUT_ENV} or find what keeps it (lock files in {folder})"
                )
            if mode == SHARED:  # through the turnstile: let the next one pass
                fcntl.flock(turnstile, fcntl.LOCK_UN)
                os.close(turnstile)
                lease._handles.insert(0, (gpu, rw))
            else:  # the turnstile stays shut until the judgment ends (released after rw)
                lease._handles[:0] = [(gpu, rw), (gpu, turnstile)]
    except BaseException:
        lease.release()
        raise
    lease.waited_s = time.monotonic() - start
    lease._acquired, lease._wall = time.monotonic(), time.time()
    return lease


@contextlib.contextmanager
def hold(gpus: Sequence[str], mode: str, *, timeout_s: float | None = None, folder: Path | None = None,
         what: str = "", cancel: threading.Event | None = None) -> Iterator[Lease]:  # fmt: skip
    """`acquire` as a `with` block; nested blocks of one thread on a GPU it holds take nothing again."""
    modes = _thread_modes()
    new = [g for g in sorted(set(gpus)) if g not in modes]
    if mode == EXCLUSIVE and any(modes.get(g) == SHARED for g in gpus):
        raise LeaseError(f"this thread holds GPU(s) {', '.join(gpus)} shared; asking for exclusive use would wait "
                         "on itself (judge after the tool command ends)")  # fmt: skip
    lease = acquire(new, mode, timeout_s=timeout_s, folder=folder, what=what, cancel=cancel)
    lease.gpus = tuple(sorted(set(gpus)))
    for gpu in new:
        modes[gpu] = mode
    try:
        yield lease
    finally:
        for gpu in new:
            modes.pop(gpu, None)
        lease.release()


def judgment(gpus: Sequence[str] | None = None, *, timeout_s: float | None = None,
             what: str = "a final judgment") -> contextlib.AbstractContextManager[Lease]:  # fmt: skip
    """EXCLUSIVE on `gpus` (default: the first visible GPU) around a final judgment's GPU work; an empty
    lease when leases are off or there is no GPU."""
    chosen = list(gpus) if gpus is not None else gpus_of(None)
    return hold(chosen if enabled() else [], EXCLUSIVE, timeout_s=timeout_s, what=what)


def tool_gpus() -> list[str]:
    """What a tool command can touch: every visible GPU (none when leases are off)."""
    return visible_gpus() if enabled() else []


# ---- audit -----------------------------------------------------------------------------------------------


def _log(lease: Lease, path: str) -> None:
    """Append the lease's interval (one write of one line: O_APPEND keeps lines of many processes whole)."""
    line = {"pid": os.getpid(), "mode": lease.mode, "gpus": list(lease.gpus), "what": lease.what,
            "granted": lease._wall, "released": time.time(), "waited_s": round(lease.waited_s, 4)}  # fmt: skip
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, (json.dumps(line) + "\n").encode())
        finally:
            os.close(fd)


def audit(path: Path) -> dict[str, Any]:
    """What an audit log ($CUDA_AGENT_GPU_LEASE_LOG) shows: per mode the count, waits and time held, and
    every pair of intervals on one GPU that the protocol forbids (exclusive beside anything)."""
    leases = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    conflicts = []
    for i, a in enumerate(leases):
        for b in leases[i + 1 :]:
            if EXCLUSIVE not in (a["mode"], b["mode"]) or not set(a["gpus"]) & set(b["gpus"]):
                continue
            if a["granted"] < b["released"] and b["granted"] < a["released"]:
                conflicts.append({"a": a, "b": b})
    summary: dict[str, Any] = {"leases": len(leases), "conflicts": conflicts}
    for mode in (EXCLUSIVE, SHARED):
        mine = [x for x in leases if x["mode"] == mode]
        waits = sorted(x["waited_s"] for x in mine)
        summary[mode] = {
            "count": len(mine),
            "waited_s_total": round(sum(waits), 3),
            "waited_s_max": waits[-1] if waits else 0.0,
            "held_s_total": round(sum(x["released"] - x["granted"] for x in mine), 3),
        }
    return summary


def main(argv: list[str] | None = None) -> int:
    """`python -m cuda_agent.gpu_lease audit LOG`: the summary as JSON; exit 1 when intervals conflict."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "audit":
        print("usage: python -m cuda_agent.gpu_lease audit LOG  (LOG: the file $CUDA_AGENT_GPU_LEASE_LOG named)",
              file=sys.stderr)  # fmt: skip
        return 2
    if not Path(args[1]).is_file():
        print(f"no audit log at {args[1]}: nothing took a lease with ${LOG_ENV} set (did the run start?)",
              file=sys.stderr)  # fmt: skip
        return 2
    summary = audit(Path(args[1]))
    print(json.dumps(summary, indent=1))
    for mode in (EXCLUSIVE, SHARED):
        m = summary[mode]
        print(f"{mode}: {m['count']} lease(s), waited {m['waited_s_total']} s in all (at most {m['waited_s_max']} s), "
              f"held {m['held_s_total']} s", file=sys.stderr)  # fmt: skip
    print(f"conflicts (exclusive beside another holder on one GPU): {len(summary['conflicts'])}", file=sys.stderr)
    return 1 if summary["conflicts"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
