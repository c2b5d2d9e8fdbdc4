"""Candidates share no writable place: real sandboxed children, one after the other, on this machine (root).

The first leaves a file in every world-writable folder, SysV IPC objects and a POSIX shared memory
object; the second, started the same way, must find none of it, and neither may the host. Each still
writes its own folder under /dev/shm, which the parent reads, and reads the judge's files there."""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuda_agent.judge.common.channel import package_root
from cuda_agent.judge.trusted.sandbox import (
    EXIT_NO_PRIVATE_PLACES,
    PrivatePlaces,
    Sandbox,
    _private_places,
    _sandbox_user,
    candidate_sandbox,
    candidate_uid,
    candidates_share_no_place,
)

KEY = 0x63616731  # a fixed SysV key, as a colluding pair of candidates would agree on
MARK = "left-by-an-earlier-candidate"
POSIX_SHM = "/cuda-agent-test-left-behind"
IPC_CREAT, IPC_RMID = 0o1000, 0

CHILD = r"""
import ctypes, json, os, sys
sys.path.insert(0, sys.argv[1])
from cuda_agent.judge.common.judge_files import judge_file
import _posixshmem
covered, sealed, mode, own, other = json.loads(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
KEY, MARK, POSIX_SHM = 0x63616731, "left-by-an-earlier-candidate", "/cuda-agent-test-left-behind"
report = {"uid": os.getuid()}
if mode == "leave":
    for folder in covered:
        try:
            with open(os.path.join(folder, MARK), "w") as handle:
                handle.write("a secret")
            report[folder] = "written"
        except OSError as exc:
            report[folder] = str(exc)
    for path in sealed:  # world-writable files elsewhere (a uv .lock): a mailbox unless sealed
        try:  # opened for writing, never written: the file is the host's
            os.close(os.open(path, os.O_WRONLY | os.O_APPEND))
            report[path] = "writable"
        except OSError as exc:
            report[path] = exc.strerror
    report["shm"] = libc.shmget(KEY, 4096, 0o1000 | 0o666)
    report["sem"] = libc.semget(KEY, 1, 0o1000 | 0o666)
    report["msg"] = libc.msgget(KEY, 0o1000 | 0o666)
    os.close(_posixshmem.shm_open(POSIX_SHM, os.O_CREAT | os.O_RDWR, 0o666))
    report["posix_shm"] = "written"
else:
    report["found"] = [f for f in covered if os.path.exists(os.path.join(f, MARK))]
    report["shm"] = libc.shmget(KEY, 0, 0)
    report["sem"] = libc.semget(KEY, 0, 0)
    report["msg"] = libc.msgget(KEY, 0)
    try:
        os.close(_posixshmem.shm_open(POSIX_SHM, os.O_RDONLY, 0))
        report["posix_shm"] = "found"
    except OSError:
        report["posix_shm"] = "absent"
    report["other_folder"] = os.path.exists(other)
    judge_path = sys.stdin.readline().strip()  # written by the judge after this worker started
    with open(judge_file(judge_path)) as handle:
        report["judge_file"] = handle.read()
    try:
        open(judge_file(judge_path), "w").close()
        report["judge_file_writable"] = True
    except OSError:
        report["judge_file_writable"] = False
with open(os.path.join(own, "mine"), "w") as handle:
    handle.write(mode)
with open("mine") as handle:  # the working folder is the same folder
    report["own"] = handle.read()
print(json.dumps(report))
"""


def _python_for(uid: int) -> str:
    """An interpreter the sandbox user may run (this one may live under /root)."""
    for python in (sys.executable, "/usr/bin/python3"):
        with contextlib.suppress(OSError):
            probe = subprocess.run([python, "-c", "import _posixshmem"], preexec_fn=lambda: os.setuid(uid),
                                   capture_output=True, cwd="/")  # fmt: skip
            if probe.returncode == 0:
                return python
    pytest.skip("no Python the sandbox user can run")


def _separated_sandbox() -> Sandbox:
    """The candidate sandbox with its user and private places: candidate_sandbox() where the sandbox user
    can run the judge's Python, else the same parts assembled (this machine's Python may be under /root)."""
    if os.geteuid() != 0:
        pytest.skip("private places need root (mount and IPC namespaces)")
    sandbox = candidate_sandbox()
    if sandbox.places is not None:
        return sandbox
    user, places = _sandbox_user(), _private_places()
    if user is None or places is None:
        pytest.skip("no sandbox user, or mount/IPC namespaces refused here")
    return Sandbox(uid=candidate_uid(), gid=user[1], isolate_network=sandbox.isolate_network, places=places)


@contextlib.contextmanager
def _slot(scratch: Path) -> Iterator[tuple[Sandbox, Path, Path]]:
    """A candidate slot laid out as pool.py lays it out: a judge-owned folder and the candidate's in it."""
    root = Path(tempfile.mkdtemp(prefix="cuda-agent-candidate-", dir=scratch))
    folder = root / "candidate"
    folder.mkdir()
    sandbox = _separated_sandbox()
    sandbox.give(folder)
    root.chmod(0o700)
    try:
        yield sandbox, root, folder
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _start(sandbox: Sandbox, root: Path, folder: Path, args: list) -> subprocess.Popen:
    assert sandbox.uid is not None
    env = {"PATH": "/usr/bin:/bin", **sandbox.own(folder, root, root.parent)}
    return subprocess.Popen(
        [_python_for(sandbox.uid), "-I", "-c", CHILD, package_root(), json.dumps(args)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=folder,
        preexec_fn=sandbox.preexec(),
    )  # fmt: skip


def _host_ipc_cleanup() -> None:
    """Remove what a run on an unprotected judge left in the host's IPC namespace."""
    libc = ctypes.CDLL(None, use_errno=True)
    if (ident := libc.shmget(KEY, 0, 0)) >= 0:
        libc.shmctl(ident, IPC_RMID, None)
    if (ident := libc.semget(KEY, 0, 0)) >= 0:
        libc.semctl(ident, 0, IPC_RMID)
    if (ident := libc.msgget(KEY, 0)) >= 0:
        libc.msgctl(ident, IPC_RMID, None)


def test_a_later_candidate_finds_nothing_an_earlier_one_left() -> None:
    scratch = Path("/dev/shm")
    if not scratch.is_dir():
        pytest.skip("no /dev/shm")
    places = _separated_sandbox().places
    assert places is not None
    covered, sealed = list(places.covered), list(places.sealed)
    before = {path: Path(path).read_bytes() for path in sealed}
    assert "/dev/shm" in covered and "/tmp" in covered
    judgment = Path(tempfile.mkdtemp(prefix="cuda-agent-judge-", dir=scratch))
    libc = ctypes.CDLL(None, use_errno=True)
    try:
        with _slot(scratch) as (sandbox_a, root_a, folder_a), _slot(scratch) as (sandbox_b, root_b, folder_b):
            first = _start(sandbox_a, root_a, folder_a, [covered, sealed, "leave", str(folder_a), ""])
            out, err = first.communicate(timeout=120)
            assert first.returncode == 0, err
            left = json.loads(out)
            assert left["uid"] == sandbox_a.uid
            assert all(left[folder] == "written" for folder in covered), left  # it could write there...
            assert all(left[path] == "Read-only file system" for path in sealed), left
            assert min(left["shm"], left["sem"], left["msg"]) >= 0 and left["posix_shm"] == "written"
            assert left["own"] == "leave" and (folder_a / "mine").read_text() == "leave"  # the parent sees it

            second = _start(
                sandbox_b, root_b, folder_b, [covered, sealed, "look", str(folder_b), str(folder_a)]
            )
            # The judgment's files appear after the worker started (a spare is warmed before its judgment).
            judgment.chmod(0o755)
            (judgment / "model.py").write_text("task source")
            out, err = second.communicate(str(judgment / "model.py") + "\n", timeout=120)
            assert second.returncode == 0, err
            seen = json.loads(out)
            assert seen["found"] == [], f"a later candidate read what an earlier one left in {seen['found']}"
            assert seen["shm"] == seen["sem"] == seen["msg"] == -1, "SysV IPC objects are shared"
            assert seen["posix_shm"] == "absent"
            assert seen["other_folder"] is False, "a candidate reached another candidate's folder"
            assert seen["judge_file"] == "task source" and seen["judge_file_writable"] is False
            assert seen["own"] == "look" and (folder_b / "mine").read_text() == "look"
        # ...and the host never saw any of it.
        assert not [f for f in covered if os.path.exists(os.path.join(f, MARK))]
        assert not os.path.exists("/dev/shm" + POSIX_SHM)
        assert {path: Path(path).read_bytes() for path in sealed} == before
        assert libc.shmget(KEY, 0, 0) == -1 and libc.semget(KEY, 0, 0) == -1 and libc.msgget(KEY, 0) == -1
    finally:
        shutil.rmtree(judgment, ignore_errors=True)
        for folder in ("/tmp", "/var/tmp", "/dev/shm", "/run/lock"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(folder, MARK))
        with contextlib.suppress(OSError):
            os.unlink("/dev/shm" + POSIX_SHM)
        _host_ipc_cleanup()


def _scan(root: str, depth: int) -> Iterator[str]:
    """World-writable folders, files and FIFOs below `root` (an independent walk with os.walk, not the
    sandbox's own scan)."""
    base = root.rstrip("/").count("/")
    for path, dirs, names in os.walk(root):
        if path.startswith(("/proc", "/sys")):
            dirs[:] = []
            continue
        info = os.lstat(path)
        if info.st_mode & stat.S_IWOTH:
            yield path
            dirs[:] = []
            continue
        if not info.st_mode & stat.S_IXOTH:
            dirs[:] = []
            continue
        for name in names:
            mode = os.lstat(os.path.join(path, name)).st_mode
            if mode & stat.S_IWOTH and (stat.S_ISREG(mode) or stat.S_ISFIFO(mode)):
                yield os.path.join(path, name)
        if path.count("/") - base >= depth - 1:
            dirs[:] = []


def test_a_live_candidate_cannot_reach_into_another() -> None:
    """The warmed spare that will run the next candidate is alive while a candidate runs: /proc/PID/root
    and cwd of a process of the same uid would lead into its private /tmp and its folder."""
    with (
        _slot(Path("/dev/shm")) as (spare_box, spare_root, spare_folder),
        _slot(Path("/dev/shm")) as (box, root, folder),
    ):
        assert spare_box.uid != box.uid, "two candidates got one uid"
        assert spare_box.uid is not None
        wait = "import os, sys; sys.stdin.readline(); print(os.path.exists('/tmp/planted'), os.path.exists('planted'))"
        env = {"PATH": "/usr/bin:/bin", **spare_box.own(spare_folder, spare_root, spare_root.parent)}
        spare = subprocess.Popen([_python_for(spare_box.uid), "-I", "-c", wait], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True, env=env, cwd=spare_folder,
                                 preexec_fn=spare_box.preexec())  # fmt: skip
        try:
            time.sleep(0.5)  # its namespaces are made before it runs a line
            plant = (
                f"import os\nfor path in ('/proc/{spare.pid}/root/tmp/planted', '/proc/{spare.pid}/cwd/planted'):\n"
                "    try:\n        open(path, 'w').close(); print('PLANTED', path)\n"
                "    except OSError as exc:\n        print('refused', path, exc.strerror)\n"
            )
            assert box.uid is not None
            env = {"PATH": "/usr/bin:/bin", **box.own(folder, root, root.parent)}
            done = subprocess.run([_python_for(box.uid), "-I", "-c", plant], capture_output=True, text=True,
                                  env=env, cwd=folder, preexec_fn=box.preexec(), timeout=60)  # fmt: skip
            assert done.returncode == 0, done.stderr
            assert "PLANTED" not in done.stdout and done.stdout.count("refused") == 2, done.stdout
            assert spare.communicate("\n", timeout=60)[0].split() == ["False", "False"]
        finally:
            spare.kill()
            spare.wait()


def test_every_world_writable_place_of_the_usual_roots_is_covered() -> None:
    places = _separated_sandbox().places
    assert places is not None
    roots = ["/tmp", "/var", "/run", "/dev", "/srv", "/opt", "/home", "/mnt", "/media", "/work", "/"]
    found = {path for root in roots if os.path.isdir(root) for path in _scan(root, 3)}
    assert found, "this machine has world-writable folders (/tmp at least)"
    missed = sorted(p for p in found if not places.hidden(p) and p not in places.sealed)
    assert not missed, f"world-writable places a candidate could share: {missed}"


def test_a_sandbox_that_cannot_be_made_fails_closed() -> None:
    if os.geteuid() != 0:
        pytest.skip("private places need root")
    sandbox = Sandbox(places=PrivatePlaces(covered=("/tmp",), kept=("/nonexistent-cuda-agent-folder",)))
    done = subprocess.run([sys.executable, "-c", "print('ran')"], capture_output=True, text=True,
                          preexec_fn=sandbox.preexec(), cwd="/")  # fmt: skip
    assert done.returncode == EXIT_NO_PRIVATE_PLACES and "ran" not in done.stdout


def test_protections_say_whether_places_are_private() -> None:
    sandbox = candidate_sandbox()
    assert sandbox.protections["private_places"]
    assert candidates_share_no_place() is (sandbox.places is not None)
    if sandbox.places is None:
        assert "NOT" in sandbox.protections["private_places"]
    else:
        assert all(folder in sandbox.protections["private_places"] for folder in sandbox.places.covered)


@pytest.mark.parametrize("setting", [None, "1", "0"])
def test_private_places_and_own_uids_are_on_unless_turned_off(monkeypatch: pytest.MonkeyPatch,
                                                              setting: str | None) -> None:  # fmt: skip
    """Private places and a uid per candidate are on wherever the machine allows them (the whole suite was
    judged right with them on the H200, 2026-12-04); CUDA_AGENT_PRIVATE_PLACES=0 turns them off, and then the
    candidate runs as the shared sandbox user, the verdict says private places are off and how to turn them
    on, and reference groups stay off. The machine's capabilities (a sandbox user that can run Python,
    namespaces) are the probes' answers here."""
    from cuda_agent.judge.trusted import sandbox as sb

    probed_places = sb.PrivatePlaces(("/tmp",))
    monkeypatch.setattr(sb, "_PROBED", {})
    monkeypatch.setattr(sb, "_sandbox_user", lambda: (999, 999))
    monkeypatch.setattr(sb, "_user_can_run_judge", lambda uid, gid: True)
    monkeypatch.setattr(sb, "_can_unshare_network", lambda: True)
    monkeypatch.setattr(sb, "_private_places", lambda: probed_places)
    monkeypatch.setattr(sb.os, "geteuid", lambda: 0)
    if setting is None:
        monkeypatch.delenv(sb.PRIVATE_PLACES_ENV, raising=False)
    else:
        monkeypatch.setenv(sb.PRIVATE_PLACES_ENV, setting)
    made = sb.candidate_sandbox()
    if setting != "0":
        assert made.places == probed_places and made.uid >= sb.CANDIDATE_UID_BASE
        assert made.protections["private_places"].startswith("own mount and IPC namespaces")
        assert sb.candidates_share_no_place() is True
    else:
        assert made.places is None and made.uid == 999
        assert made.protections["private_places"].startswith("off:") and sb.PRIVATE_PLACES_ENV in (
            made.protections["private_places"])
        assert sb.candidates_share_no_place() is False


READER = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from cuda_agent.judge.common.judge_files import judge_file
seen = {}
for name, path in json.loads(sys.argv[2]).items():
    try:
        with open(judge_file(path)) as handle:
            seen[name] = handle.read()
    except OSError as exc:
        seen[name] = type(exc).__name__
print(json.dumps(seen))
"""


def test_a_candidate_reads_a_staged_changed_set_only_once_it_is_linked_in() -> None:
    """The low-bit pair's changed sets are staged with the preparation in the reference slot's folder
    (pool.py: mkdtemp, mode 700, under the judge's scratch root; reference_response.stage_changed): a
    sandboxed candidate can read neither there, and reads set A through the link the judge puts in the
    judgment's input folder just before its call (verify_stage.hand_changed), while set B stays out of reach."""
    scratch = Path("/dev/shm")
    if not scratch.is_dir():
        pytest.skip("no /dev/shm")
    reference_root = Path(tempfile.mkdtemp(prefix="cuda-agent-reference-", dir=scratch))
    judgment = Path(tempfile.mkdtemp(prefix="cuda-agent-judge-", dir=scratch))
    try:
        staged = reference_root / "changed"
        staged.mkdir(mode=0o700)
        for which in (0, 1):
            (staged / f"changed_{which}.tensors").write_text(f"changed set {which}")
        io = judgment / "io"
        io.mkdir()
        for path in (judgment, io):
            path.chmod(0o755)
        os.link(staged / "changed_0.tensors", io / "changed_0.tensors")
        paths = {"linked": str(io / "changed_0.tensors"), "staged_a": str(staged / "changed_0.tensors"),
                 "staged_b": str(staged / "changed_1.tensors")}  # fmt: skip
        with _slot(scratch) as (sandbox, root, folder):
            assert sandbox.uid is not None
            env = {"PATH": "/usr/bin:/bin", **sandbox.own(folder, root, scratch)}
            done = subprocess.run(
                [_python_for(sandbox.uid), "-I", "-c", READER, package_root(), json.dumps(paths)],
                capture_output=True, text=True, env=env, cwd=folder, preexec_fn=sandbox.preexec(), timeout=120,
            )  # fmt: skip
        assert done.returncode == 0, done.stderr
        seen = json.loads(done.stdout)
        assert seen["linked"] == "changed set 0", seen
        assert seen["staged_a"] in ("PermissionError", "FileNotFoundError"), seen
        assert seen["staged_b"] in ("PermissionError", "FileNotFoundError"), seen
    finally:
        shutil.rmtree(reference_root, ignore_errors=True)
        shutil.rmtree(judgment, ignore_errors=True)
