"""Freezing a candidate's whole process tree (freeze.py): setsid children and double-forked daemons too.

Each test starts a real process tree: a session leader (like a candidate worker) whose code starts a
`setsid` child and a double-forked grandchild; every process ticks a counter file. Frozen, no counter may
move; thawed, all move again; closed, all are gone.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuda_agent.judge.trusted.freeze import ProcessTree, create_cgroup

TREE = r"""
import os, sys, time
folder = sys.argv[1]
def tick(name):
    path = os.path.join(folder, name)
    deadline = time.monotonic() + 60
    n = 0
    while time.monotonic() < deadline:
        n += 1
        with open(path, "w") as f:
            f.write(str(n))
        time.sleep(0.005)
    os._exit(0)
if os.fork() == 0:          # a setsid child: leaves the worker's session and process group
    os.setsid()
    tick("setsid_child")
if os.fork() == 0:          # a double fork: the grandchild is orphaned (reparented) and in its own session
    os.setsid()
    if os.fork() == 0:
        tick("daemon")
    os._exit(0)
tick("worker")
"""

NAMES = ("worker", "setsid_child", "daemon")


def _counts(folder: Path) -> dict[str, int]:
    out = {}
    for name in NAMES:
        try:
            out[name] = int((folder / name).read_text() or 0)
        except (OSError, ValueError):
            out[name] = -1
    return out


def _start(folder: Path) -> subprocess.Popen:
    folder.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", TREE, str(folder)], cwd=folder, start_new_session=True)
    deadline = time.monotonic() + 20
    while min(_counts(folder).values()) < 1:
        assert time.monotonic() < deadline, "the test tree did not start"
        time.sleep(0.01)
    return proc


def _moving(folder: Path, wait: float = 0.15) -> set[str]:
    """Which counters advance within `wait` s."""
    before = _counts(folder)
    time.sleep(wait)
    after = _counts(folder)
    return {n for n in NAMES if after[n] != before[n]}


def _all_move(folder: Path, expected: set[str], within: float = 5.0) -> set[str]:
    """Which of `expected` advance within `within` s (polled: the machine may be busy)."""
    before = _counts(folder)
    moved: set[str] = set()
    deadline = time.monotonic() + within
    while moved != expected and time.monotonic() < deadline:
        time.sleep(0.02)
        now = _counts(folder)
        moved |= {n for n in expected if now[n] != before[n]}
    return moved


def _check_tree(tree: ProcessTree, folder: Path, proc: subprocess.Popen) -> None:
    try:
        assert _all_move(folder, set(NAMES)) == set(NAMES)
        report = tree.freeze()
        assert len(report.stopped) >= 3, report
        time.sleep(0.02)  # a tick in flight when the freeze landed
        assert _moving(folder) == set(), "a process of the tree kept running while frozen"
        tree.thaw()
        assert _all_move(folder, set(NAMES)) == set(NAMES), "thaw did not resume every process"
    finally:
        tree.close()
        proc.wait(timeout=10)
    time.sleep(0.05)
    assert _moving(folder) == set(), "close left a process of the tree alive"


def test_killpg_misses_the_setsid_child(tmp_path: Path) -> None:
    """The old freeze (SIGSTOP to the process group): the setsid child and the daemon keep running."""
    folder = tmp_path / "cand"
    proc = _start(folder)
    tree = ProcessTree(proc.pid, folder)
    try:
        os.killpg(proc.pid, signal.SIGSTOP)
        time.sleep(0.02)
        assert _all_move(folder, {"setsid_child", "daemon"}) == {"setsid_child", "daemon"}
        assert _moving(folder) <= {"setsid_child", "daemon"}
        os.killpg(proc.pid, signal.SIGCONT)
    finally:
        tree.close()
        proc.wait(timeout=10)


def test_proc_walk_freezes_setsid_child_and_daemon(tmp_path: Path) -> None:
    folder = tmp_path / "cand"
    proc = _start(folder)
    tree = ProcessTree(proc.pid, folder.resolve())  # no cgroup: the /proc walk alone
    assert tree.cgroup is None
    _check_tree(tree, folder, proc)


def test_cgroup_freezes_the_whole_tree(tmp_path: Path) -> None:
    probe = create_cgroup("probe")
    if probe is None:
        pytest.skip("no writable cgroup v2 here (needs root or a delegated cgroup)")
    probe.rmdir()
    folder = tmp_path / "cand"
    folder.mkdir()
    # Attach before the tree forks, as the pool does before any candidate code runs: wait on a pipe.
    read_end, write_end = os.pipe()
    code = f"import os; os.read({read_end}, 1); exec(compile({TREE!r}, 'tree', 'exec'))"
    proc = subprocess.Popen([sys.executable, "-c", code, str(folder)], cwd=folder, start_new_session=True,
                            pass_fds=(read_end,))  # fmt: skip
    os.close(read_end)
    tree = ProcessTree.attach(proc.pid, folder)
    assert tree.cgroup is not None
    os.write(write_end, b"!")
    os.close(write_end)
    deadline = time.monotonic() + 20
    while min(_counts(folder).values()) < 1:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    # Every process of the tree is in the cgroup, whatever its session or parent.
    assert len(tree.cgroup_members()) >= 3
    report = tree.freeze()
    assert report.method.startswith("cgroup v2 freeze")
    tree.thaw()
    _check_tree(tree, folder, proc)
    assert tree.cgroup is None


def test_walk_spares_other_workers_of_the_judge(tmp_path: Path) -> None:
    """A second worker started by this process (a warm spare) is not part of the candidate's tree."""
    folder = tmp_path / "cand"
    proc = _start(folder)
    spare = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"], start_new_session=True)
    tree = ProcessTree(proc.pid, folder.resolve())
    try:
        assert spare.pid not in tree.walk()
        assert proc.pid in tree.walk()
    finally:
        tree.close()
        proc.wait(timeout=10)
        spare.kill()
        spare.wait()
