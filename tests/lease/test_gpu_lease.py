"""cuda_agent.gpu_lease over real processes: exclusive holders never overlap, shared ones do, a waiting
writer keeps new readers out (writer preference), a killed holder frees the GPU, waits are bounded and
name the holder, unsafe folders are refused; and the Bash tool really waits for a judgment."""

from __future__ import annotations

import itertools
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cuda_agent import gpu_lease
from cuda_agent.agent.tools import ToolBox, ToolContext, build_sandbox
from cuda_agent.agent.tools.sandbox import SandboxPolicy

WORKER = Path(__file__).with_name("lease_worker.py")
GPU = "GPU-test-0000"


@pytest.fixture
def leases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "leases"
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(folder))
    return folder


class Worker:
    """lease_worker.py in a subprocess; `wait_for("held")` blocks until it says so."""

    def __init__(self, mode: str, hold_s: float | str, log: Path, timeout_s: float = 30.0) -> None:
        self.proc = subprocess.Popen([sys.executable, str(WORKER), mode, GPU, str(hold_s), str(log), str(timeout_s)],
                                     stdout=subprocess.PIPE, text=True, env=os.environ.copy())  # fmt: skip
        self.pid = self.proc.pid

    def wait_for(self, word: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.proc.stdout.readline()
            if line.strip() == word:
                return
            if not line and self.proc.poll() is not None:
                raise AssertionError(f"worker {self.pid} exited {self.proc.returncode} before {word!r}")
        raise AssertionError(f"worker {self.pid} did not say {word!r} in {timeout} s")

    def finish(self, timeout: float = 60.0) -> int:
        code = self.proc.wait(timeout)
        self.proc.stdout.close()
        return code


def intervals(log: Path) -> dict[int, dict]:
    return {line["pid"]: line for line in map(json.loads, log.read_text().splitlines())}


def wait_until(predicate, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.02)


def test_exclusive_holders_never_overlap(leases: Path, tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    workers = [Worker(gpu_lease.EXCLUSIVE, 0.3, log) for _ in range(3)]
    assert [w.finish() for w in workers] == [0, 0, 0]
    spans = sorted((line["start"], line["end"]) for line in intervals(log).values())
    assert len(spans) == 3
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end, spans  # one at a time
    assert (leases.stat().st_mode & 0o777) == 0o700
    assert all((p.stat().st_mode & 0o777) == 0o600 for p in leases.iterdir())


def test_shared_holders_overlap_and_a_writer_waits_for_all_of_them(leases: Path, tmp_path: Path, monkeypatch) -> None:
    log, go = tmp_path / "log.jsonl", tmp_path / "go"
    monkeypatch.setenv(gpu_lease.LOG_ENV, str(tmp_path / "audit.jsonl"))
    readers = [Worker(gpu_lease.SHARED, f"until:{go}", log) for _ in range(2)]
    for r in readers:
        r.wait_for("held")  # both at once
    writer = Worker(gpu_lease.EXCLUSIVE, 0.1, log)
    writer.wait_for("asking")
    time.sleep(0.8)
    go.touch()
    assert [w.finish() for w in (*readers, writer)] == [0, 0, 0]
    lines = intervals(log)
    a, b = (lines[r.pid] for r in readers)
    assert max(a["start"], b["start"]) < min(a["end"], b["end"])  # both held it at once
    assert lines[writer.pid]["start"] >= max(a["end"], b["end"])
    summary = gpu_lease.audit(tmp_path / "audit.jsonl")  # what every lease logged when it was given back
    assert summary["conflicts"] == [] and summary["shared"]["count"] == 2 and summary["exclusive"]["count"] == 1
    assert summary["exclusive"]["waited_s_max"] > 0.5  # it waited for the readers
    assert gpu_lease.main(["audit", str(tmp_path / "audit.jsonl")]) == 0


def test_the_audit_finds_an_exclusive_interval_beside_another(tmp_path: Path) -> None:
    log = tmp_path / "audit.jsonl"
    rows = [("exclusive", [GPU], 0.0, 2.0), ("shared", [GPU], 1.5, 3.0), ("shared", ["other"], 0.5, 1.0),
            ("shared", [GPU], 2.0, 4.0)]  # fmt: skip
    log.write_text("".join(json.dumps({"pid": 1, "mode": m, "gpus": g, "what": "", "granted": a, "released": b,
                                       "waited_s": 0.0}) + "\n" for m, g, a, b in rows))  # fmt: skip
    summary = gpu_lease.audit(log)
    assert len(summary["conflicts"]) == 1 and summary["conflicts"][0]["b"]["granted"] == 1.5
    assert gpu_lease.main(["audit", str(log)]) == 1 and gpu_lease.main(["audit"]) == 2


def test_a_waiting_writer_keeps_new_readers_out(leases: Path, tmp_path: Path) -> None:
    """R1 holds shared; W asks for exclusive; R2 asks for shared after W: R2 must wait for W to finish
    (without the turnstile R2 would join R1 at once and, in a stream of readers, W would starve)."""
    log, go = tmp_path / "log.jsonl", tmp_path / "go"
    r1 = Worker(gpu_lease.SHARED, f"until:{go}", log)
    r1.wait_for("held")
    w = Worker(gpu_lease.EXCLUSIVE, 0.5, log)
    w.wait_for("asking")
    wait_until(lambda: any(f"pid {w.pid} " in h and "in line" in h for h in gpu_lease.holders(leases, GPU)))
    r2 = Worker(gpu_lease.SHARED, 0.1, log)
    r2.wait_for("asking")
    time.sleep(0.5)  # r2 is trying now; had it been let in, it would be holding beside r1
    go.touch()
    assert [x.finish() for x in (r1, w, r2)] == [0, 0, 0]
    lines = intervals(log)
    assert lines[w.pid]["start"] >= lines[r1.pid]["end"]
    assert lines[r2.pid]["start"] >= lines[w.pid]["end"], "a reader got in ahead of a waiting writer"
    assert lines[r2.pid]["asked"] < lines[r1.pid]["end"]  # it did ask while the GPU was still shared


def test_a_killed_holder_frees_the_gpu(leases: Path, tmp_path: Path) -> None:
    holder = Worker(gpu_lease.EXCLUSIVE, 600, tmp_path / "log.jsonl")
    holder.wait_for("held")
    with pytest.raises(gpu_lease.LeaseTimeout):
        gpu_lease.acquire([GPU], gpu_lease.SHARED, timeout_s=0.2)
    holder.proc.send_signal(signal.SIGKILL)
    assert holder.finish() == -signal.SIGKILL
    with gpu_lease.acquire([GPU], gpu_lease.EXCLUSIVE, timeout_s=5) as lease:
        assert lease.waited_s < 5


def test_a_bounded_wait_names_the_holder(leases: Path, tmp_path: Path) -> None:
    holder = Worker(gpu_lease.EXCLUSIVE, 600, tmp_path / "log.jsonl")
    holder.wait_for("held")
    try:
        started = time.monotonic()
        with pytest.raises(gpu_lease.LeaseTimeout) as caught:
            gpu_lease.acquire([GPU], gpu_lease.EXCLUSIVE, timeout_s=0.5, what="the final judgment t#0")
        assert 0.5 <= time.monotonic() - started < 5
        message = str(caught.value)
        assert f"GPU {GPU} was not free for the final judgment t#0 within 0.5 s" in message
        assert f"pid {holder.pid} (" in message and "lease_worker.py" in message and "holds it exclusive" in message
        assert gpu_lease.TIMEOUT_ENV in message
    finally:
        holder.proc.kill()
        holder.finish()
    # a timed-out writer left nothing behind: the GPU is free at once
    with gpu_lease.acquire([GPU], gpu_lease.EXCLUSIVE, timeout_s=1):
        pass


def test_unsafe_lock_folders_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    open_folder = tmp_path / "open"
    open_folder.mkdir(mode=0o755)
    open_folder.chmod(0o755)
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(open_folder))
    with pytest.raises(gpu_lease.LeaseError, match="mode 700"):
        gpu_lease.acquire([GPU], gpu_lease.SHARED, timeout_s=1)
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(private)
    monkeypatch.setenv(gpu_lease.DIR_ENV, str(link))
    with pytest.raises(gpu_lease.LeaseError, match="not a link"):
        gpu_lease.acquire([GPU], gpu_lease.SHARED, timeout_s=1)
    assert gpu_lease.acquire([], gpu_lease.EXCLUSIVE).gpus == ()  # no GPU: nothing to take, no folder needed


def test_one_thread_nests_but_never_upgrades(leases: Path) -> None:
    with gpu_lease.hold([GPU], gpu_lease.EXCLUSIVE) as outer:
        with gpu_lease.hold([GPU], gpu_lease.SHARED) as inner:  # e.g. a judge wrapper inside another
            assert inner.waited_s < 0.5
        with gpu_lease.hold([GPU], gpu_lease.EXCLUSIVE):
            pass
        # still held by `outer` after the nested blocks ended: another thread cannot get in
        got: list[BaseException] = []
        thread = threading.Thread(target=lambda: _try(got))
        thread.start()
        thread.join()
        assert isinstance(got[0], gpu_lease.LeaseTimeout)
    assert outer.gpus == (GPU,)
    with gpu_lease.hold([GPU], gpu_lease.SHARED):
        upgrade = gpu_lease.hold([GPU], gpu_lease.EXCLUSIVE)
        with pytest.raises(gpu_lease.LeaseError, match="would wait on itself"):
            upgrade.__enter__()


def _try(out: list[BaseException]) -> None:
    try:
        gpu_lease.acquire([GPU], gpu_lease.SHARED, timeout_s=0.2)
    except BaseException as exc:  # handed to the test thread
        out.append(exc)


def test_gpu_names_follow_cuda_visible_devices(monkeypatch: pytest.MonkeyPatch) -> None:
    smi = "0, GPU-aaaa-1111, 00000000:18:00.0\n1, GPU-bbbb-2222, 00000000:2A:00.0\n"
    assert gpu_lease.parse_smi(smi) == [(0, "GPU-aaaa-1111", "00000000:18:00.0"),
                                        (1, "GPU-bbbb-2222", "00000000:2A:00.0")]  # fmt: skip
    monkeypatch.setattr(gpu_lease, "machine_gpus", lambda: ("GPU-aaaa-1111", "GPU-bbbb-2222"))
    monkeypatch.delenv(gpu_lease.GPUS_ENV, raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert gpu_lease.visible_gpus() == ["GPU-aaaa-1111", "GPU-bbbb-2222"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert gpu_lease.visible_gpus() == ["GPU-bbbb-2222"] and gpu_lease.gpus_of(None) == ["GPU-bbbb-2222"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "GPU-aaaa,0")  # a UUID prefix names the same GPU as index 0
    assert gpu_lease.visible_gpus() == ["GPU-aaaa-1111", "GPU-aaaa-1111"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,7,1")  # CUDA stops at the first invalid index
    assert gpu_lease.visible_gpus() == ["GPU-aaaa-1111"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_lease.visible_gpus() == []
    monkeypatch.setenv(gpu_lease.GPUS_ENV, "x, y")
    assert gpu_lease.visible_gpus() == ["x", "y"] and gpu_lease.gpus_of([1]) == ["y"]
    monkeypatch.setenv(gpu_lease.ENABLE_ENV, "off")
    assert gpu_lease.tool_gpus() == [] and gpu_lease.judgment().__enter__().gpus == ()


def _tools(tmp_path: Path) -> ToolBox:
    root = tmp_path / "ws"
    root.mkdir()
    sandbox = build_sandbox(root, SandboxPolicy(isolation="none"))
    return ToolBox(ToolContext(workspace=sandbox.workspace, sandbox=sandbox, gpus=(GPU,)))


def test_bash_waits_while_a_judgment_holds_the_gpu(leases: Path, tmp_path: Path, monkeypatch) -> None:
    tools = _tools(tmp_path)
    go = tmp_path / "go"
    judgment = Worker(gpu_lease.EXCLUSIVE, f"until:{go}", tmp_path / "log.jsonl")
    judgment.wait_for("held")
    threading.Timer(1.5, go.touch).start()  # the judgment ends 1.5 s after the command asked
    result = tools.execute("Bash", {"command": "date +%s.%N"})
    assert judgment.finish() == 0
    assert result.status == "ok" and result.meta["gpu_wait_s"] >= 1.0
    assert result.content.startswith("[waited ") and "final judgment" in result.content.splitlines()[0]
    ran_at = float(result.content.splitlines()[1])
    assert ran_at >= intervals(tmp_path / "log.jsonl")[judgment.pid]["end"]  # it ran after, not during

    holder = Worker(gpu_lease.EXCLUSIVE, 600, tmp_path / "log2.jsonl")
    holder.wait_for("held")
    monkeypatch.setenv(gpu_lease.TIMEOUT_ENV, "0.3")
    try:
        refused = tools.execute("Bash", {"command": "touch ran"})
    finally:
        holder.proc.kill()
        holder.finish()
    assert refused.status == "error" and refused.content.startswith("The command did not run: GPU ")
    assert f"pid {holder.pid}" in refused.content and not (tmp_path / "ws" / "ran").exists()


def test_a_background_shell_holds_the_gpu_until_it_ends(leases: Path, tmp_path: Path) -> None:
    tools = _tools(tmp_path)
    go = tmp_path / "go"
    started = tools.execute("Bash", {"command": f"while [ ! -e {go} ]; do sleep 0.02; done",
                                     "run_in_background": True})  # fmt: skip
    assert started.status == "ok"
    threading.Timer(1.0, go.touch).start()
    with gpu_lease.acquire([GPU], gpu_lease.EXCLUSIVE, timeout_s=20) as lease:
        assert lease.waited_s >= 0.9 and go.exists()  # given back only when the shell ended
    tools.execute("Bash", {"command": "sleep 600", "run_in_background": True})
    tools.context.close()  # the episode ends: its shells die and give the GPU back at once
    with gpu_lease.acquire([GPU], gpu_lease.EXCLUSIVE, timeout_s=2) as lease:
        assert lease.waited_s < 2
