"""The judge's secret for authenticating what it caches (baseline records), kept out of the candidate's reach.

Trust boundary: a cached record is believed only if its HMAC verifies under a key the candidate process
never sees -- not in its environment or arguments, not in a file its user can read, not in memory it can
read. Which key that is depends on the deployment:

- **machine key** (`key_mode() == "machine"`): the candidate runs as another user (the sandbox user of a
  root judge). The key is generated once per machine in a folder of the judge's user (0700) as a 0600 file
  owned by the judge; a file or folder with any other owner or wider permissions is never trusted (it is
  replaced). Records then survive judge restarts.
- **process key** (`"process"`): the candidate runs as the judge's own user, so any file the judge can read
  it can read too. The key then lives only in this process's memory, and the process is made
  non-dumpable (`PR_SET_DUMPABLE 0`), so a process of the same user cannot read that memory through
  /proc/PID/mem or ptrace (a root candidate loses CAP_SYS_PTRACE in its sandbox, see sandbox.py).
  Records then verify only within this judge process; a new process re-measures its baselines.

A record that fails verification is ignored (and re-measured), never trusted.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from cuda_agent.judge.common.procs import make_undumpable

KEY_BYTES = 32


class KeyUnavailable(RuntimeError):
    """No trustworthy key could be set up here (e.g. the key folder belongs to someone else)."""


def default_key_dir() -> Path:
    from cuda_agent.judge.trusted.build import cache_root

    return cache_root() / "private"


def _private_dir(folder: Path) -> Path:
    """`folder`, created 0700 and checked to be ours and closed to everybody else."""
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
        raise KeyUnavailable(f"{folder} is not a folder of the judge's user: refusing to keep a key there")
    if info.st_mode & 0o077:
        folder.chmod(0o700)
    return folder


def _trusted_file(path: Path) -> bool:
    try:
        info = path.lstat()
    except OSError:
        return False
    return (
        stat.S_ISREG(info.st_mode)
        and info.st_uid == os.geteuid()
        and not info.st_mode & 0o077
        and info.st_size == KEY_BYTES
    )


def machine_key(folder: Path | None = None) -> bytes:
    """The per-machine key file (created on first use, 0600, owned by the judge)."""
    folder = _private_dir(folder or default_key_dir())
    path = folder / "cache-hmac.key"
    if not _trusted_file(path):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # wrong owner, permissions or size: never trust, replace
        tmp = folder / f".cache-hmac.{os.getpid()}.{secrets.token_hex(4)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        try:
            os.write(fd, secrets.token_bytes(KEY_BYTES))
        finally:
            os.close(fd)
        try:
            os.link(tmp, path)  # first writer wins; everyone then reads the same key
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    if not _trusted_file(path):
        raise KeyUnavailable(f"{path} is not a 0600 key file of the judge's user")
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        return os.read(fd, KEY_BYTES)
    finally:
        os.close(fd)


@functools.cache
def process_key() -> bytes:
    """A key that exists only in this process's memory (which is made unreadable to its user)."""
    make_undumpable()
    return secrets.token_bytes(KEY_BYTES)


def key_mode(candidate_separate_user: bool) -> str:
    """"machine" when the candidate runs as another user than the judge, else "process"."""
    return "machine" if candidate_separate_user else "process"


def judge_key(candidate_separate_user: bool, folder: Path | None = None) -> tuple[bytes, str]:
    """The key to sign and verify cached records with, and a sentence saying where it lives."""
    if key_mode(candidate_separate_user) == "machine":
        try:
            return machine_key(folder), "machine key (0600 file of the judge's user, unreadable by the candidate)"
        except (OSError, KeyUnavailable):
            pass  # fall back to the process key: still unforgeable, just not persistent
    return process_key(), "process key (in this judge's non-dumpable memory only; re-measured per process)"


def sign(key: bytes, payload: bytes) -> str:
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def verify(key: bytes, payload: bytes, mac: object) -> bool:
    return isinstance(mac, str) and hmac.compare_digest(sign(key, payload), mac)
