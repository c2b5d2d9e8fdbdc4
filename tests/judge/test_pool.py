"""The worker pool and the service's CPU side, with real worker processes (their GPU warm-up skipped:
this machine has no GPU). What must hold: candidate workers are never reused, reference workers are
kept per task and retired on failure, and the GPU lock excludes concurrent users."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from pathlib import Path

import pytest

from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.decide.service import split_cpus
from cuda_agent.judge.trusted.machine import judges_dir, kill_strays, machine_dir, register_judge
from cuda_agent.judge.trusted.pool import WorkerPool


@pytest.fixture
def pool(cpu_pool_factory) -> WorkerPool:
    return cpu_pool_factory(kept_references=1)


def test_each_candidate_gets_a_fresh_process_and_folder(pool: WorkerPool) -> None:
    first = pool.take_candidate()
    second = pool.take_candidate()
    try:
        assert first.warm_error is None and second.warm_error is None
        assert first.worker.pid != second.worker.pid
        assert first.folder != second.folder and first.out_dir.is_dir()
    finally:
        first.close()
        second.close()
    assert first.worker.process.poll() is not None, "a used candidate worker must be killed"
    assert not first.root.exists()


def test_a_candidate_retired_later_is_gone_before_the_next_gpu_lock(pool: WorkerPool) -> None:
    """The teardown runs after the verdict, off the caller's path, but no later verification or timing
    on this GPU starts beside it: gpu_lock waits for every retirement handed over before it."""
    slot = pool.take_candidate()
    assert slot.warm_error is None
    release = threading.Event()
    order: list[str] = []

    def slow_close() -> None:
        release.wait(10)
        slot.close()
        order.append("retired")

    began = time.monotonic()
    pool.retire_later(slow_close)
    assert time.monotonic() - began < 1.0, "retire_later must not wait for the teardown"
    assert slot.worker.process.poll() is None, "not torn down yet: the event holds it"
    threading.Timer(0.3, release.set).start()
    with pool.gpu_lock():
        order.append("locked")
        assert slot.worker.process.poll() is not None and not slot.root.exists()
    assert order == ["retired", "locked"]
    # A teardown that raises does not become the next judgment's error.
    pool.retire_later(lambda: (_ for _ in ()).throw(OSError("already gone")))
    with pool.gpu_lock():
        pass


def test_retire_kills_the_candidate_at_once_and_leaves_only_the_teardown_for_later(pool: WorkerPool) -> None:
    """`retire` SIGKILLs the worker before it returns (no code of the candidate runs beside the next
    one's verification), while the reap and the folder's removal wait for the retirement thread."""
    slot = pool.take_candidate()
    assert slot.warm_error is None
    release = threading.Event()
    pool.retire_later(lambda: release.wait(10))  # the retirement thread is busy: the teardown must wait
    try:
        pool.retire(slot)
        deadline = time.monotonic() + 5
        while _state(str(slot.worker.pid)) not in ("Z", "X", "gone") and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _state(str(slot.worker.pid)) in ("Z", "X", "gone"), "the candidate must be dead when retire returns"
        assert slot.root.exists(), "the teardown itself runs later, off the caller's path"
    finally:
        release.set()
    pool.settle()
    assert not slot.root.exists()


def test_verification_may_start_beside_a_teardown_only_when_its_memory_leaves_room(
    pool: WorkerPool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`gpu_lock(beside_retirement=True)` skips the wait for earlier teardowns only where each was killed
    by `retire` and seen by NVML, and what they still hold is at most half their GPU's free memory; timing
    never does (it takes `gpu_lock()` or `settle`). Without NVML (this machine) it always waits."""
    import cuda_agent.judge.trusted.gpumem as gpumem

    release = threading.Event()
    pool.retire_later(lambda: release.wait(10), dying=4242)
    try:
        assert not pool.retirement_fits(), "no NVML: what the teardown holds is unknown, so wait"
        monkeypatch.setattr(gpumem, "gpu_bytes_and_free", lambda pids: (2 << 30, 3 << 30))
        assert not pool.retirement_fits(), "2 GiB held with 3 GiB free: a candidate like it may not fit"
        monkeypatch.setattr(gpumem, "gpu_bytes_and_free", lambda pids: (1 << 30, 3 << 30))
        assert pool.retirement_fits()
        waits: dict[str, float] = {}
        began = time.monotonic()
        with pool.gpu_lock(waits, beside_retirement=True):
            assert time.monotonic() - began < 1.0 and not release.is_set()
        pool.retire_later(lambda: None)  # an unused spare's close: not seen by NVML, so it is waited for
        assert not pool.retirement_fits()
    finally:
        threading.Timer(0.3, release.set).start()
    waits = {}
    with pool.gpu_lock(waits):  # what timing takes: every teardown ended first
        assert release.is_set()
    assert waits["settle_wait"] >= 0.2


def test_a_retirement_is_timed_part_by_part_and_the_lock_says_what_it_waited_for(pool: WorkerPool) -> None:
    """On the H200 (2026-12-04) an RL verdict spent 0.9 s on the lane outside every stage it reported, and
    the GPU lock's wait for the earlier candidate's retirement was in none. The pool keeps each retirement's
    parts (the worker reaped, its tree, its files, its uid's strays), and the lock adds its waits to the
    stage times it is given."""
    slot = pool.take_candidate()
    assert slot.warm_error is None
    release = threading.Event()

    def slow_close() -> None:
        release.wait(10)
        slot.close()

    pool.retire_later(slow_close)
    threading.Timer(0.3, release.set).start()
    waits: dict[str, float] = {}
    with pool.gpu_lock(waits):
        pass
    assert waits["settle_wait"] >= 0.25 and 0.0 <= waits["gpu_lock_wait"] < 1.0
    assert len(pool.retirements) == 1
    parts = pool.retirements[-1]
    assert set(parts) == {"reap", "tree", "files", "strays"} and all(v >= 0.0 for v in parts.values())
    with pool.gpu_lock(waits):  # nothing to wait for now: the waits add up, by no more than a moment
        pass
    assert waits["settle_wait"] < 0.3 + 1.0


def test_reference_workers_are_kept_per_task_and_retired_when_broken(pool: WorkerPool) -> None:
    with pool.reference("task-a") as slot:
        first_pid = slot.worker.pid
    with pool.reference("task-a") as slot:
        assert slot.worker.pid == first_pid, "a healthy reference worker is reused for its task"
        slot.broken = True
    with pool.reference("task-a") as slot:
        assert slot.worker.pid != first_pid, "a broken reference worker is never reused"
        kept_pid = slot.worker.pid
    with pool.reference("task-b") as slot:
        assert slot.worker.pid != kept_pid, "another task gets its own worker"
    # kept_references=1: task-b's worker pushed task-a's out, and task-a's was killed.
    with pool.reference("task-a") as slot:
        assert slot.worker.pid != kept_pid


def test_a_reference_worker_is_retired_when_the_judgment_raises(pool: WorkerPool) -> None:
    with pytest.raises(RuntimeError), pool.reference("task-a") as slot:
        pid = slot.worker.pid
        raise RuntimeError("judge bug")
    with pool.reference("task-a") as slot:
        assert slot.worker.pid != pid


def test_a_verdict_against_the_candidate_keeps_the_reference_worker(pool: WorkerPool) -> None:
    from cuda_agent.judge.decide.judgment import Stop
    from cuda_agent.judge.decide.verdict import Status, failure

    with pytest.raises(Stop), pool.reference("task-a") as slot:
        pid = slot.worker.pid
        raise Stop(failure(Status.INCORRECT, "wrong result"))
    with pool.reference("task-a") as slot:
        assert slot.worker.pid == pid


def test_the_gpu_lock_lets_one_user_in_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    pools = [WorkerPool(tmp_path), WorkerPool(tmp_path)]  # two judges of the same GPU
    inside, overlaps = [0], [0]
    guard = threading.Lock()

    def use(pool: WorkerPool) -> None:
        for _ in range(5):
            with pool.gpu_lock():
                with guard:
                    inside[0] += 1
                    overlaps[0] += inside[0] > 1
                time.sleep(0.01)
                with guard:
                    inside[0] -= 1

    threads = [threading.Thread(target=use, args=(p,)) for p in pools]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in pools:
        p.close()
    assert overlaps[0] == 0


@pytest.mark.parametrize(
    ("cpus", "lanes", "expect_pinned"), [(range(2), 1, False), (range(16), 1, True), (range(32), 2, True)]
)
def test_cpus_are_split_between_gpu_workers_and_compilers(
    monkeypatch: pytest.MonkeyPatch, cpus: range, lanes: int, expect_pinned: bool
) -> None:
    monkeypatch.setattr("os.sched_getaffinity", lambda _pid: set(cpus))
    lane_cpus, build_cpus = split_cpus(lanes)
    assert len(lane_cpus) == lanes
    if not expect_pinned:
        assert build_cpus is None and lane_cpus == [None] * lanes
        return
    assert build_cpus and all(lane_cpus)
    every = [c for group in lane_cpus if group for c in group]
    assert len(every) == len(set(every)), "lanes share no core"
    assert not set(every) & build_cpus, "compilers never run on a lane's cores"
    assert set(every) | build_cpus == set(cpus)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run processes as another user")
def test_escaped_candidate_processes_are_killed_live_workers_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon left by a candidate (double fork, new session) dies; another judge's worker (a session
    leader started by a root process) lives on."""
    import subprocess

    uid = 54321  # a throwaway user id: nothing else on the machine runs as it

    def as_user() -> None:
        os.setgid(uid)
        os.setuid(uid)

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    register_judge()  # this test process plays the judge that started `worker`
    worker = subprocess.Popen(["sleep", "60"], preexec_fn=as_user, start_new_session=True)
    # The candidate's escape: a daemon in a new session whose parent exits (reparented to init).
    subprocess.run(["sh", "-c", "(setsid sleep 60 &)"], preexec_fn=as_user, check=True)
    time.sleep(0.5)
    try:
        strays = [p for p in os.listdir("/proc") if p.isdigit() and _owner(p) == uid and int(p) != worker.pid]
        assert strays, "the escaped daemon should be running before the reap"
        assert kill_strays(uid, set()) >= 1
        time.sleep(0.2)
        assert worker.poll() is None, "a live worker started by a judge must not be killed"
        assert not [p for p in strays if Path(f"/proc/{p}").exists() and _state(p) != "Z"]
    finally:
        worker.kill()
        kill_strays(uid, set())


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run processes as another user")
def test_a_judge_starting_kills_candidates_left_by_a_judge_that_died(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A candidate of a dead judge (its uid encodes that judge's pid; its group the sandbox user's) dies
    when the next judge registers, stopped (as a timing's freeze leaves it) or not, and so does one whose
    judge's pid now names another process (the registry's start time tells). Live on: a candidate of a
    live judge (this process), and a process whose uid lies in the same range but which is no candidate
    (another group: a directory service's user, say)."""
    import signal
    import subprocess

    from cuda_agent.judge.trusted.sandbox import CANDIDATE_UID_BASE, UIDS_PER_JUDGE, _sandbox_user

    sandbox = _sandbox_user()
    if sandbox is None:
        pytest.skip("no sandbox user can be made here (useradd)")
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    reused = subprocess.Popen(["sleep", "60"])  # a live process whose pid a dead judge had
    judges_dir().mkdir(parents=True)
    (judges_dir() / str(reused.pid)).write_text("judge 1\n")

    def runner(judge_pid: int, gid: int) -> subprocess.Popen[bytes]:
        uid = CANDIDATE_UID_BASE + judge_pid * UIDS_PER_JUDGE + 7

        def as_user() -> None:
            os.setgid(gid)
            os.setuid(uid)

        return subprocess.Popen(["sleep", "60"], preexec_fn=as_user, start_new_session=True)

    gone = [runner(dead.pid, sandbox[1]), runner(dead.pid, sandbox[1]), runner(reused.pid, sandbox[1])]
    live, not_a_candidate = runner(os.getpid(), sandbox[1]), runner(dead.pid, sandbox[1] + 1)
    gone[1].send_signal(signal.SIGSTOP)
    try:
        register_judge()
        for process in gone:
            assert process.wait(timeout=5) == -signal.SIGKILL
        assert live.poll() is None, "a live judge's candidate must not be killed"
        assert not_a_candidate.poll() is None, "a uid in the range is not enough: only the sandbox's group"
        assert reused.poll() is None, "the process that now has a dead judge's pid is not that judge's"
    finally:
        for process in (*gone, live, not_a_candidate, reused):
            process.kill()
            process.wait()


def test_a_judge_starting_kills_the_sessions_of_workers_a_dead_judge_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The registry lists each judge's start time and its workers (pid, start time). A later judge kills
    the workers of a judge that no longer runs, with everything in their sessions, stopped or not, whoever
    adopted them; it spares a listed pid that now names a process started at another time, the workers of
    a live judge, and every process no judge listed."""
    import signal
    import subprocess

    from cuda_agent.judge.trusted.machine import _start_time, note_worker

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    register_judge()  # this process: a live judge

    def worker() -> subprocess.Popen[bytes]:  # a session of its own, with a child in it
        return subprocess.Popen(["sh", "-c", "sleep 60 & wait"], start_new_session=True)

    listed, stopped, reused, ours, unlisted = (worker() for _ in range(5))
    stopped.send_signal(signal.SIGSTOP)
    dead = subprocess.Popen(["true"])
    dead.wait()
    entry = [f"worker {w.pid} {_start_time(w.pid)}" for w in (listed, stopped)] + [f"worker {reused.pid} 1"]
    (judges_dir() / str(dead.pid)).write_text("\n".join(["judge 1", *entry]) + "\n")
    note_worker(ours.pid)
    time.sleep(0.3)
    children = {w.pid: _session_members(w.pid) - {w.pid} for w in (listed, stopped)}
    assert all(children.values()), "each worker's child should be running before the sweep"
    try:
        register_judge()
        for process in (listed, stopped):
            assert process.wait(timeout=5) == -signal.SIGKILL
        time.sleep(0.2)
        assert not {pid for kids in children.values() for pid in kids if _state(str(pid)) not in ("gone", "Z")}
        for process in (reused, ours, unlisted):
            assert process.poll() is None, "only a dead judge's own workers are killed"
        assert not (judges_dir() / str(dead.pid)).exists() and (judges_dir() / str(os.getpid())).exists()
    finally:
        for process in (listed, stopped, reused, ours, unlisted):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _session_members(session: int) -> set[int]:
    found = set()
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[3]) == session:
                    found.add(int(pid))
            except (OSError, IndexError):
                continue
    return found


def _owner(pid: str) -> int:
    try:
        return Path(f"/proc/{pid}").stat().st_uid
    except OSError:
        return -1


def _state(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def test_send_and_receive_split_a_call_and_replies_must_match_their_request(tmp_path: Path) -> None:
    from cuda_agent.judge.common.channel import WorkerFailure
    from cuda_agent.judge.common.procs import scrubbed_env

    worker = WorkerHandle(
        "cuda_agent.judge.candidate.worker", log_path=tmp_path / "w.log", env=scrubbed_env(), cwd=tmp_path
    )
    try:
        request = worker.send("warm", gpu=False)
        assert worker.receive("warm", request, 120)["ok"]
        worker.send("warm", gpu=False)
        with pytest.raises(WorkerFailure, match="unexpected data"):
            worker.receive("warm", "not-the-request-id", 120)
    finally:
        worker.close()


def test_judge_many_returns_every_build_failure_with_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, judge_cache: Path
) -> None:
    """The batch's CPU side: submissions that fail before the GPU each get their verdict, under their
    own index, and the bound on waiting submissions never blocks the batch (one build worker)."""
    import shutil

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide import service as service_module
    from cuda_agent.judge.decide.service import JudgeService

    monkeypatch.setattr(service_module, "require_gpu", lambda: None)
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(judge_cache))  # the run's PCH: the build beside static needs it
    root = Path(__file__).parents[2]
    no_model_new = tmp_path / "no_model_new"
    shutil.copytree(root / "examples" / "row_softmax", no_model_new)
    (no_model_new / "model_new.py").unlink()
    bad_task = tmp_path / "bad_task"
    shutil.copytree(root / "examples" / "row_softmax", bad_task)
    (bad_task / "model.py").write_text("def get_inputs(:\n")
    cheat = root / "tests" / "adversarial" / "01_cpp_backend_direct"
    items = [no_model_new, bad_task, cheat, bad_task]
    with JudgeService(JudgeConfig(scratch_dir=tmp_path / "scratch"), build_workers=1) as service:
        verdicts = dict(service.judge_many(items))
    assert sorted(verdicts) == [0, 1, 2, 3]
    assert verdicts[0].status.value == "rejected" and "model_new.py" in verdicts[0].reason
    assert verdicts[1].status.value == verdicts[3].status.value == "task_error"
    assert verdicts[2].status.value == "rejected" and "static checks" in verdicts[2].reason
    assert all(v.reward == -1 for v in verdicts.values())


def test_judges_with_different_caches_share_locks_and_registry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GPU locks and the judge registry are machine-wide: judges using different caches (a benchmark
    beside a suite) must see each other, or they share a GPU unawares and reap each other's workers."""
    monkeypatch.delenv("CUDA_AGENT_MACHINE_DIR", raising=False)
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache-a"))
    first = (machine_dir(), judges_dir())
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache-b"))
    assert (machine_dir(), judges_dir()) == first
    assert not str(first[0]).startswith(str(tmp_path))


def test_a_machine_folder_others_can_write_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = tmp_path / "world-writable"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(shared))
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    assert machine_dir() == tmp_path / "cache" / "machine"
    shared.chmod(0o755)
    assert machine_dir() == shared


def test_registering_drops_judges_that_have_exited(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import subprocess

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    dead = subprocess.Popen(["true"])
    dead.wait()
    judges_dir().mkdir(parents=True, exist_ok=True)
    (judges_dir() / str(dead.pid)).touch()
    register_judge()
    names = {p.name for p in judges_dir().iterdir()}
    assert str(os.getpid()) in names and str(dead.pid) not in names


def test_a_candidate_taken_early_and_never_used_is_closed(pool: WorkerPool, tmp_path: Path) -> None:
    """A judgment takes its candidate worker while the reference is prepared (the two waits overlap); one
    that ends before it uses the worker (a static-check refusal, a reference failure) closes it, and one
    that used it leaves its retirement to the stage that took it."""
    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.judgment import Judgment
    from cuda_agent.task import load_task

    task = load_task(Path(__file__).parents[2] / "examples" / "row_softmax")
    unused = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "scratch"))
    taken = unused.take_candidate_early(pool)
    slot = taken.result(timeout=120)
    assert slot.worker.process.poll() is None
    unused.cleanup()
    pool.settle()
    assert slot.worker.process.poll() is not None, "an unused candidate worker must not outlive its judgment"

    used = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "scratch"))
    kept = used.take_candidate_early(pool).result(timeout=120)
    used.candidate_taken = True  # candidate_stages took it and retires it itself
    used.cleanup()
    pool.settle()
    try:
        assert kept.worker.process.poll() is None
    finally:
        kept.close()


def test_a_long_lived_service_keeps_more_spares_than_a_one_shot_judge() -> None:
    from cuda_agent.judge.decide.service import LONG_LIVED_SPARE_REFERENCES, LONG_LIVED_SPARES, JudgeService

    assert LONG_LIVED_SPARES > 1 and LONG_LIVED_SPARE_REFERENCES > 1
    for keep_warm, spares, references in ((True, LONG_LIVED_SPARES, LONG_LIVED_SPARE_REFERENCES), (False, 1, 1)):
        service = JudgeService(keep_warm=keep_warm)  # not started: no GPU needed
        try:
            assert [p.spare_candidates for p in service.pools] == [spares]
            assert [p.spare_references for p in service.pools] == [references]
        finally:
            service.close()


@pytest.mark.parametrize("spares", [1, 2])
def test_new_tasks_back_to_back_get_reference_workers_warmed_ahead(cpu_pool_factory, spares: int) -> None:
    """Two tasks the pool keeps no worker for, one right after the other (a suite or an eval over many
    tasks): with two spare reference workers both are served by workers warmed before they were asked
    for; with one, the second waits for the replacement started when the first was taken."""
    from concurrent.futures import wait

    pool = cpu_pool_factory(spare_references=spares, spare_candidates=0, kept_references=4)
    ahead = list(pool._spare_references)
    assert len(ahead) == spares and not wait(ahead, timeout=180).not_done
    warmed = {future.result().worker.pid for future in ahead}
    served = []
    for task in ("task-a", "task-b"):
        with pool.reference(task) as slot:
            served.append(slot.worker.pid)
    assert sum(pid in warmed for pid in served) == spares
    assert len(pool._spare_references) == spares  # each one taken was replaced


def test_a_warm_spare_is_out_of_reach_of_other_processes_of_the_sandbox_user(tmp_path: Path) -> None:
    """Spares wait beside a running candidate under the same sandbox user; each makes itself undumpable at
    warm-up, before any candidate code exists, so a candidate cannot read or plant anything in the next
    one's memory. Shown with two processes of one unprivileged user: the one that called make_undumpable is
    out of the other's reach, while one that did not is readable (where the kernel allows same-user reads
    at all: Yama's ptrace_scope 0)."""
    import pwd
    import subprocess

    from cuda_agent.judge.common.channel import WorkerHandle
    from cuda_agent.judge.common.procs import scrubbed_env
    from cuda_agent.judge.trusted.pool import CANDIDATE_WORKER

    worker = WorkerHandle(CANDIDATE_WORKER, log_path=tmp_path / "worker.log", env=scrubbed_env(), cwd=tmp_path)
    try:
        assert worker.call("warm", 120, gpu=False).get("undumpable") is True
    finally:
        worker.close()
    python = "/usr/bin/python3"  # the project's interpreter may sit where another user cannot run it
    if os.geteuid() != 0 or not os.access(python, os.X_OK):
        pytest.skip("needs root and a system python3 to run the processes as another user")
    nobody = pwd.getpwnam("nobody")

    def as_nobody() -> None:
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)

    src = str(Path(__file__).parents[2] / "src")
    readable = {}
    for undumpable in (True, False):
        code = (f"import sys, time; sys.path.insert(0, {src!r}); from cuda_agent.judge.common.procs import "
                f"make_undumpable; {'make_undumpable(); ' if undumpable else ''}print('ready', flush=True); "
                "time.sleep(30)")  # fmt: skip
        target = subprocess.Popen([python, "-I", "-c", code], preexec_fn=as_nobody, cwd="/",
                                  stdout=subprocess.PIPE, text=True)  # fmt: skip
        try:
            assert target.stdout is not None and target.stdout.readline().strip() == "ready"
            probe = subprocess.run(
                [python, "-I", "-c", f"open('/proc/{target.pid}/mem', 'rb').read(0)"],
                preexec_fn=as_nobody, capture_output=True, text=True, timeout=60, cwd="/",
            )  # fmt: skip
            readable[undumpable] = probe.returncode == 0
        finally:
            target.kill()
            target.wait()
    assert readable[True] is False, "an undumpable process must be out of reach of its own user"
    scope = Path("/proc/sys/kernel/yama/ptrace_scope")
    if not scope.exists() or scope.read_text().strip() == "0":
        assert readable[False] is True, "the control: a dumpable process is readable by its user here"


@pytest.mark.parametrize("beside", [False, True])
def test_a_spares_gpu_warm_up_waits_for_timing_unless_the_experiment_is_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, beside: bool
) -> None:
    """`quiet` keeps a spare's GPU warm-up (context, CUPTI) out of timing; JudgeConfig.warm_beside_timing
    (an experiment, off) lets it run beside, to measure on the GPU what that costs and saves."""
    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    pool = WorkerPool(tmp_path, warm_beside_timing=beside)
    seen: list[tuple[bool, bool]] = []

    class Worker:
        def call(self, command: str, timeout: float, gpu: bool) -> dict:
            seen.append((gpu, pool.quiet.warming_now == 1))
            return {"ok": True, **({"seconds": {"cuda_init": 0.4, "profiler": 0.9}} if gpu else {})}

    try:
        assert pool._warm(Worker(), pool.warmups) is None  # type: ignore[arg-type]
    finally:
        pool.close()
    assert seen == [(False, False), (True, not beside)]
    # Its parts, for judge_throughput's account of the lane (the worker's own seconds among them).
    assert set(pool.warmups[-1]) == {"import", "quiet_wait", "gpu", "cuda_init", "profiler"}
    assert pool.warmups[-1]["profiler"] == 0.9


def test_a_spare_that_failed_to_warm_is_started_again_not_blamed_on_the_next_candidate(
    cpu_pool_factory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Spares warm while other candidates run; one that filled the GPU's memory made a spare's CUDA context
    fail (H100 suite, 2026-12-07), and the judgment that took it gave its own candidate -1. A spare whose
    warm-up failed is now replaced by a worker started afresh; only a second failure reaches the verdict."""
    warm = WorkerPool._warm
    failures = {"left": 2}  # the first reference spare and the first candidate spare

    def fail_twice(self: WorkerPool, worker: WorkerHandle, times: object = None) -> str | None:
        if failures["left"] > 0:
            failures["left"] -= 1
            return "AcceleratorError: CUDA error: out of memory"
        return warm(self, worker, times)

    monkeypatch.setattr(WorkerPool, "_warm", fail_twice)
    pool = cpu_pool_factory(spare_references=1, spare_candidates=1, replenish=False)
    spare_reference = pool._spare_references[0].result()
    spare_candidate = pool._spares.queue[0].result()
    assert spare_reference.warm_error and spare_candidate.warm_error  # both spares failed to warm
    with pool.reference("task-a") as slot:
        assert slot.warm_error is None and slot.worker.pid != spare_reference.worker.pid
    assert spare_reference.worker.process.poll() is not None  # the failed one is gone
    candidate = pool.candidate_warmed_or_again(pool.take_candidate())
    assert candidate.warm_error is None and candidate.worker.pid != spare_candidate.worker.pid
    pool.retire(candidate)
    pool.settle()
    assert spare_candidate.worker.process.poll() is not None
    assert [retry["again"] for retry in pool.warm_retries] == [True, True]


def test_a_worker_that_fails_to_start_twice_says_so(cpu_pool_factory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(WorkerPool, "_warm", lambda self, worker, times=None: "CUDA error: out of memory")
    pool = cpu_pool_factory(spare_references=1, spare_candidates=0, replenish=False)
    with pool.reference("task-a") as slot:
        assert slot.warm_error.startswith("CUDA error: out of memory (started twice; the first try: CUDA error")


def test_a_long_lived_judges_registry_entry_keeps_only_its_running_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past ENTRY_COMPACT_BYTES the entry is rewritten with the workers still running, so a service that
    starts workers for days keeps a small entry, and the sweep still finds every live one."""
    import subprocess

    from cuda_agent.judge.trusted import machine

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    monkeypatch.setattr(machine, "ENTRY_COMPACT_BYTES", 200)
    register_judge()
    running = subprocess.Popen(["sleep", "60"])
    try:
        machine.note_worker(running.pid)
        for _ in range(20):
            ended = subprocess.Popen(["true"])
            ended.wait()
            machine.note_worker(ended.pid)
        entry = judges_dir() / str(os.getpid())
        record = machine._read_entry(entry)
        workers = [pid for pid, _ in record.workers]
        assert running.pid in workers and len(workers) < 12, workers
        assert record.start == machine._start_time(os.getpid())
    finally:
        running.kill()
        running.wait()


def test_a_judge_starting_kills_and_removes_the_cgroups_a_dead_judge_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead judge's entry lists its candidates' cgroups: a later judge kills everything in them, a daemon
    that left every listed session included, and removes them. Left as they are: a live judge's cgroup, one
    reached through `..` or not named as a candidate's, a folder outside the cgroup hierarchy, and every
    cgroup of an entry from another pid namespace (its pids are not this judge's to read)."""
    import subprocess

    from cuda_agent.judge.trusted.freeze import create_cgroup
    from cuda_agent.judge.trusted.machine import note_worker

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    register_judge()  # this process: a live judge
    groups = [create_cgroup(tag) for tag in ("cand-1", "cand-2", "keep", "cand-4")]
    if None in groups:
        pytest.skip("needs a cgroup v2 hierarchy this user may create cgroups in")
    dead_group, live_group, unnamed, other_ns = groups
    daemon, ours, kept, foreign = (subprocess.Popen(["sleep", "60"], start_new_session=True) for _ in range(4))
    decoy = tmp_path / "cuda-agent-judge" / "cand-3-abcd"  # a listed path outside the cgroup hierarchy
    decoy.mkdir(parents=True)
    try:
        for group, process in zip(groups, (daemon, ours, kept, foreign), strict=True):
            (group / "cgroup.procs").write_text(str(process.pid))
        note_worker(ours.pid)
        note_worker(cgroup=live_group)
        dead, gone = (subprocess.Popen(["true"]) for _ in range(2))
        dead.wait()
        gone.wait()
        through_dots = dead_group.parent / ".." / dead_group.parent.name / live_group.name
        listed = [dead_group, decoy, through_dots, unnamed]
        (judges_dir() / str(dead.pid)).write_text("judge 1\n" + "".join(f"cgroup {g}\n" for g in listed))
        (judges_dir() / str(gone.pid)).write_text(f"judge 1\npidns pid:[1]\ncgroup {other_ns}\n")
        register_judge()
        assert daemon.wait(timeout=5) == -9, "the daemon in the dead judge's cgroup should be killed"
        assert not dead_group.exists(), "the dead judge's emptied cgroup should be removed"
        for process, group in ((ours, live_group), (kept, unnamed), (foreign, other_ns)):
            assert process.poll() is None and group.is_dir(), f"{group.name} should be left as it is"
        assert decoy.is_dir() and not any(decoy.iterdir()), "a folder outside the hierarchy is neither written nor removed"
        assert (judges_dir() / str(gone.pid)).exists(), "another pid namespace's entry is not this judge's to drop"
        assert "cgroup " in (judges_dir() / str(os.getpid())).read_text()
    finally:
        for process in (daemon, ours, kept, foreign):
            process.kill()
            process.wait()
        for group in groups:
            for _ in range(100):
                if group is None or not group.exists():
                    break
                try:
                    group.rmdir()
                except OSError:
                    time.sleep(0.01)


def test_a_dead_judges_cgroup_not_yet_empty_is_listed_again_for_the_next_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cgroup that cannot be removed within the sweep's second (here: it holds a cgroup of its own) keeps a
    dead judge's entry listing it alone, and the next judge's sweep removes it once it can."""
    import subprocess

    from cuda_agent.judge.trusted import machine
    from cuda_agent.judge.trusted.freeze import create_cgroup
    from cuda_agent.judge.trusted.machine import _read_entry

    monkeypatch.setenv("CUDA_AGENT_MACHINE_DIR", str(tmp_path / "machine"))
    register_judge()
    group = create_cgroup("cand-5")
    if group is None:
        pytest.skip("needs a cgroup v2 hierarchy this user may create cgroups in")
    inner = group / "inner"
    try:
        inner.mkdir()
        dead = subprocess.Popen(["true"])
        dead.wait()
        entry = judges_dir() / str(dead.pid)
        own = machine._pid_namespace("self")
        entry.write_text(f"judge 1\npidns {own}\nworker {dead.pid} 1\ncgroup {group}\n")
        register_judge()
        listed_again = _read_entry(entry)
        assert group.is_dir() and listed_again.cgroups == [group] and not listed_again.workers
        assert (listed_again.start, listed_again.pidns) == (1, own), "listed again under the dead judge's head"
        inner.rmdir()
        register_judge()
        assert not group.exists() and not entry.exists()
    finally:
        for folder in (inner, group):
            with contextlib.suppress(OSError):
                folder.rmdir()


@pytest.mark.parametrize("text,start,pidns,workers", [
    ("judge 7\npidns pid:[1]\nworker 10 20\n", 7, "pid:[1]", [(10, 20)]),
    ("judge\t7\nworker\t10\t20\n worker 11 21\n", 7, None, [(10, 20), (11, 21)]),  # any whitespace
    ("pidns pid:[1]\njudge 7\n", None, "pid:[1]", []),  # a start only on the first line
    ("judge 7\npidns pid:[1]\npidns pid:[2]\n", 7, "pid:[1]", []),  # the first namespace line
    ("judge 7 8\nworker 1\nworker 1 2 3\nworker x 2\nworker \u00b2 2\n", None, None, []),  # malformed
    ("judge \u00b2\n", None, None, []),  # a digit int() cannot read is no start
    ("", None, None, []),
])  # fmt: skip
def test_a_registry_entry_is_parsed_by_its_lines(text: str, start: int | None, pidns: str | None,
                                                 workers: list[tuple[int, int]]) -> None:  # fmt: skip
    """The sweep's evidence, read once: the judge's start from the first line only, the first namespace
    line, each well-formed worker line; whatever else an entry holds is ignored, never raised on."""
    from cuda_agent.judge.trusted import machine

    record = machine._parse_entry(text)
    assert (record.start, record.pidns, record.workers) == (start, pidns, workers)
    assert machine._parse_entry(record.head).start == record.start
    assert machine._parse_entry(record.head).pidns == record.pidns
