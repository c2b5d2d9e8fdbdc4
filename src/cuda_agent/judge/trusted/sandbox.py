"""The candidate's sandbox: an unprivileged user, no network, resource limits, a private scratch folder.

Built from the kernel's own mechanisms, applied between fork and exec of the candidate worker:
- a separate unprivileged user (created on first use when the judge runs as root), so the candidate can
  write only to folders it owns (its scratch) and world-writable ones, and cannot touch the judge's files,
  caches or processes, and RLIMIT_NPROC bounds its threads and processes;
- a fresh network namespace (`unshare(CLONE_NEWNET)`, root only before dropping privileges): no network;
- rlimits on open files, file size and core dumps; wall time is enforced by the parent.
Where a mechanism is unavailable (not root, no useradd, unshare refused) the judgment still runs and
`Sandbox.protections` says what was active. Not provided: seccomp filters and Landlock (a candidate can
still read world-readable files), and a GPU memory cap below the device's (the judge checks what the
candidate holds after each call instead).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from cuda_agent.judge.common.channel import package_root
from cuda_agent.judge.common.procs import Limits

SANDBOX_USER = "cuda-agent-sandbox"
CLONE_NEWNET = 0x40000000
PR_CAPBSET_DROP = 24
# Dropped from a candidate that runs as root (no sandbox user): without them it cannot read the judge's
# memory (ptrace, /proc/PID/mem of a non-dumpable process: where the process key of authkey.py lives),
# load kernel modules or touch raw memory.
DROPPED_CAPABILITIES = {"CAP_SYS_MODULE": 16, "CAP_SYS_RAWIO": 17, "CAP_SYS_PTRACE": 19}


def drop_capabilities() -> bool:
    """Remove DROPPED_CAPABILITIES from the bounding set (between fork and exec: gone after exec)."""
    libc = ctypes.CDLL(None, use_errno=True)
    return all(libc.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) == 0 for cap in DROPPED_CAPABILITIES.values())


@dataclass
class Sandbox:
    uid: int | None = None
    gid: int | None = None
    isolate_network: bool = False
    limits: Limits = field(default_factory=Limits)
    protections: dict[str, str] = field(default_factory=dict)

    def preexec(self) -> Callable[[], None]:
        apply_limits = self.limits.preexec()
        uid, gid, isolate = self.uid, self.gid, self.isolate_network

        def run() -> None:
            if isolate:
                libc = ctypes.CDLL(None, use_errno=True)
                if libc.unshare(CLONE_NEWNET) != 0:
                    os._exit(97)  # fail closed: the parent sees the worker die before it answers
            apply_limits()
            if gid is not None and uid is not None:
                os.setgroups([])
                os.setgid(gid)
                os.setuid(uid)
            elif os.geteuid() == 0 and not drop_capabilities():
                os._exit(98)  # fail closed: a root candidate must not keep CAP_SYS_PTRACE

        return run

    def give(self, *paths: Path) -> None:
        """Hand folders to the sandbox user (the candidate may write only there)."""
        if self.uid is None or self.gid is None:
            return
        for path in paths:
            os.chown(path, self.uid, self.gid)
            for child in path.rglob("*"):
                os.chown(child, self.uid, self.gid, follow_symlinks=False)


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


_PROBED: dict[str, object] = {}


def candidates_separated() -> bool | None:
    """Whether this process's candidates run as the sandbox user (None until `candidate_sandbox` probed)."""
    return None if "user" not in _PROBED else _PROBED["user"] is not None


def candidate_sandbox(processes: int = 512, open_files: int = 4096) -> Sandbox:
    """The strongest sandbox this machine allows for a candidate worker."""
    if "user" not in _PROBED:
        root = os.geteuid() == 0
        user = _sandbox_user() if root else None
        _PROBED["user"] = user if user and _user_can_run_judge(*user) else None
        _PROBED["user_reason"] = "" if _PROBED["user"] or not user else " (it cannot run this Python)"
        _PROBED["net"] = root and _can_unshare_network()
    user = _PROBED["user"]
    isolate = bool(_PROBED["net"])
    sandbox = Sandbox(isolate_network=isolate)
    protections = {
        "process": "own process group, killed after the verdict; python -I; scrubbed environment",
        "network": "own network namespace (no interfaces)"
        if isolate
        else "NOT isolated (needs root for unshare)",
    }
    if isinstance(user, tuple):
        sandbox.uid, sandbox.gid = user
        sandbox.limits = Limits(processes=processes, open_files=open_files)
        protections["user"] = f"unprivileged user {SANDBOX_USER} (uid {user[0]}); writes only to its scratch"
        protections["processes"] = f"at most {processes} processes and threads"
    else:
        sandbox.limits = Limits(open_files=open_files)
        protections["user"] = "NOT separated: runs as the judge's user" + str(
            _PROBED.get("user_reason") or " (needs root to drop privileges)"
        )
        if os.geteuid() == 0:
            protections["capabilities"] = "dropped: " + ", ".join(DROPPED_CAPABILITIES)
    protections["not_provided"] = "seccomp, Landlock (reads of world-readable files are possible)"
    sandbox.protections = protections
    return sandbox
