"""The depth-2 lane's discipline (trusted/lane_share.py, decide/lane_queue.py), on real threads and real
processes: what may enter beside what, what a timing freezes, that teardowns wait for a timing, and that a
failure beside another judgment is judged again alone. The GPU itself is tests/gpu/test_lane_depth_gpu.py."""

from __future__ import annotations

import fcntl
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from cuda_agent.judge.config import JudgeConfig
from cuda_agent.judge.decide.lane_queue import BuiltQueue
from cuda_agent.judge.trusted import gpumem, lane_share
from cuda_agent.judge.trusted.freeze import FreezeFailed, ProcessTree
from cuda_agent.judge.trusted.lane_share import JudgeAlone, LaneShare, depth_refused
from cuda_agent.judge.trusted.pool import WorkerPool


def _state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _share(tmp_path: Path) -> LaneShare:
    return LaneShare(2, tmp_path / "gpu.lock")


def _admit_all(_: set[int]) -> bool:
    return True


def _entered_within(
    share: LaneShare, key: int, task: str, seconds: float, admit=_admit_all
) -> threading.Event:
    """Start a thread that enters `share` as judgment `key` and stays until the returned event's `leave`."""
    entered = threading.Event()
    entered.leave = threading.Event()  # type: ignore[attr-defined]

    def run() -> None:
        with share.judgment(key, task, admit):
            entered.set()
            entered.leave.wait(10)  # type: ignore[attr-defined]

    threading.Thread(target=run, daemon=True).start()
    entered.wait(seconds)
    return entered


def test_two_judgments_of_different_tasks_share_the_lane_and_know_it(tmp_path: Path) -> None:
    share = _share(tmp_path)
    first = _entered_within(share, 1, "task-a", 2)
    second = _entered_within(share, 2, "task-b", 2)
    try:
        assert first.is_set() and second.is_set() and share.in_flight == 2
        assert share.beside_another(1) and share.beside_another(2)
        third = _entered_within(share, 3, "task-c", 0.3)
        assert not third.is_set(), "depth 2: a third judgment waits for a permit"
    finally:
        first.leave.set()  # type: ignore[attr-defined]
        second.leave.set()  # type: ignore[attr-defined]
    assert third.wait(2), "a permit given back lets the waiting judgment in"
    third.leave.set()  # type: ignore[attr-defined]


def test_a_judgment_waits_while_its_task_is_in_flight_or_the_others_memory_leaves_no_room(
    tmp_path: Path,
) -> None:
    share = _share(tmp_path)
    first = _entered_within(share, 1, "task-a", 2)
    share.note_worker(1, 4242)
    same_task = _entered_within(share, 2, "task-a", 0.3)
    assert not same_task.is_set(), "one reference worker answers one judgment of a task at a time"
    seen: list[set[int]] = []
    room = threading.Event()

    def admit(pids: set[int]) -> bool:
        seen.append(pids)
        return room.is_set()

    other_task = _entered_within(share, 3, "task-b", 0.3, admit)
    assert not other_task.is_set() and seen and seen[-1] == {4242}, (
        "admission reads the other judgment's workers"
    )
    room.set()
    assert other_task.wait(2)
    assert not share.beside_another(1) or share.beside_another(3)
    for event in (first, other_task):
        event.leave.set()  # type: ignore[attr-defined]
    assert same_task.wait(2)
    same_task.leave.set()  # type: ignore[attr-defined]


def test_judged_alone_waits_for_every_flight_and_lets_none_in(tmp_path: Path) -> None:
    share = _share(tmp_path)
    first = _entered_within(share, 1, "task-a", 2)
    alone_in = threading.Event()
    alone_out = threading.Event()

    def run_alone() -> None:
        with share.alone(9, "task-z"):
            alone_in.set()
            alone_out.wait(10)

    threading.Thread(target=run_alone, daemon=True).start()
    assert not alone_in.wait(0.3), "alone waits for the judgment in flight"
    later = _entered_within(share, 2, "task-b", 0.3)
    assert not later.is_set(), "a judgment waiting to be alone stops new ones from entering"
    first.leave.set()  # type: ignore[attr-defined]
    assert alone_in.wait(2) and share.is_alone(9) and not share.beside_another(9)
    assert not later.wait(0.3), "nothing enters while one is judged alone"
    alone_out.set()
    assert later.wait(2)
    later.leave.set()  # type: ignore[attr-defined]


def test_two_judgments_wanting_to_be_alone_do_not_deadlock(tmp_path: Path) -> None:
    share = _share(tmp_path)
    done: list[int] = []

    def run_alone(key: int) -> None:
        with share.alone(key, f"task-{key}"):
            assert share.in_flight == 1
            time.sleep(0.05)
        done.append(key)

    threads = [threading.Thread(target=run_alone, args=(k,)) for k in (1, 2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(5)
    assert sorted(done) == [1, 2]


@pytest.fixture
def sleeper() -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    yield proc
    proc.kill()
    proc.wait()


def test_a_timing_freezes_every_other_candidate_and_thaws_it_after(
    tmp_path: Path, sleeper: subprocess.Popen
) -> None:
    share = _share(tmp_path)
    own = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    try:
        share.add_candidate(1, own.pid, ProcessTree(own.pid))
        share.add_candidate(2, sleeper.pid, ProcessTree(sleeper.pid))
        with share.others_frozen(1) as frozen:
            assert frozen == 1
            assert _state(sleeper.pid) in "Tt", (
                "the other judgment's candidate runs no code while one is timed"
            )
            assert _state(own.pid) not in "Tt", "the timed candidate itself is not frozen"
        assert _state(sleeper.pid) not in "Tt", "thawed once the timing ends"
        share.drop_candidate(sleeper.pid)
        with share.others_frozen(1) as frozen:
            assert frozen == 0, "a killed candidate is no longer frozen by anyone"
    finally:
        own.kill()
        own.wait()


def test_a_candidate_that_cannot_be_frozen_sends_the_timed_judgment_to_be_judged_alone(
    tmp_path: Path, sleeper: subprocess.Popen, monkeypatch: pytest.MonkeyPatch
) -> None:
    share = _share(tmp_path)
    tree = ProcessTree(sleeper.pid)

    def refuse(timeout: float = 5.0) -> None:
        raise FreezeFailed("kept multiplying")

    monkeypatch.setattr(tree, "freeze", refuse)
    share.add_candidate(2, sleeper.pid, tree)
    with pytest.raises(JudgeAlone, match="could not be frozen: kept multiplying"), share.others_frozen(1):
        pytest.fail("the timing must not start")


def test_the_lanes_of_one_process_share_the_machine_lock_other_processes_wait_on(tmp_path: Path) -> None:
    share = _share(tmp_path)
    probe = "import fcntl,sys; h=open(sys.argv[1],'a'); fcntl.flock(h, fcntl.LOCK_EX|fcntl.LOCK_NB)"

    def other_process_gets_it() -> bool:
        return (
            subprocess.run([sys.executable, "-c", probe, str(share.lock_path)], check=False).returncode == 0
        )

    with share.machine_hold():
        with share.machine_hold():  # the second lane of this process does not wait for the first
            assert not other_process_gets_it()
        assert not other_process_gets_it(), "held while any lane of this process is in a GPU section"
    assert other_process_gets_it(), "given back by the last lane to leave"
    with open(share.lock_path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free in this process too
        fcntl.flock(handle, fcntl.LOCK_UN)


def test_a_lane_takes_the_oldest_judgment_it_can_take() -> None:
    queue: BuiltQueue[str | None] = BuiltQueue()
    for item in ("a1", "a2", "b1", None):
        queue.put(item)
    assert queue.get(lambda item: item is None or not item.startswith("a")) == "b1"
    assert queue.get() == "a1"
    got: list[str | None] = []
    waiter = threading.Thread(target=lambda: got.append(queue.get(lambda item: item == "c1")))
    waiter.start()
    time.sleep(0.2)
    assert not got, "nothing it can take: it waits"
    queue.put("c1")
    waiter.join(2)
    assert got == ["c1"]
    assert queue.drain() == ["a2", None] and queue.drain() == []


def test_lane_depth_is_one_or_two_and_refused_in_one_line() -> None:
    assert JudgeConfig().lane_depth == 1
    assert JudgeConfig(lane_depth=2).lane_depth == 2
    with pytest.raises(ValueError, match="1 or 2 judgments per GPU"):
        JudgeConfig(lane_depth=3)


def test_depth_two_needs_private_places_and_nvml(monkeypatch: pytest.MonkeyPatch) -> None:
    assert "writable place" in depth_refused(False)
    monkeypatch.setattr(lane_share, "gpu_bytes_and_free", lambda pids: None)
    assert "NVML" in depth_refused(True)
    monkeypatch.setattr(lane_share, "gpu_bytes_and_free", lambda pids: (0, 0))
    assert depth_refused(True) == ""


def test_at_depth_two_a_teardown_waits_for_the_timing_and_its_candidate_stays_frozen_until_killed(
    cpu_pool_factory, tmp_path: Path
) -> None:
    pool: WorkerPool = cpu_pool_factory(kept_references=1)
    pool.share = _share(tmp_path)
    slot = pool.take_candidate()
    assert slot.warm_error is None
    pool.share.add_candidate(7, slot.worker.pid, slot.tree or ProcessTree(slot.worker.pid))
    timing_ends = threading.Event()
    in_timing = threading.Event()

    def timing() -> None:
        with pool.quiet.timing(), pool.share.others_frozen(8):  # another judgment's timed window
            in_timing.set()
            timing_ends.wait(10)

    timer = threading.Thread(target=timing)
    timer.start()
    assert in_timing.wait(5)
    pool.retire(slot)
    time.sleep(0.4)
    tree = pool.share._candidates[slot.worker.pid][1]
    assert slot.worker.process.poll() is None and tree._is_stopped(slot.worker.pid), (
        "no teardown during a timing: the finished candidate waits, frozen (SIGSTOP, or its cgroup frozen)"
    )
    timing_ends.set()
    timer.join(5)
    pool.settle()
    assert slot.worker.process.poll() is not None and not slot.root.exists()
    with pool.share.others_frozen(8) as frozen:
        assert frozen == 0


def test_a_failure_beside_another_judgment_is_judged_again_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The service's side of it: the first verdict is dropped, the submission built again and judged with
    every permit, and the second verdict says why. Judgment's GPU part is replaced (no GPU here)."""
    from cuda_agent.judge.decide import service as service_module
    from cuda_agent.judge.decide.judgment import Judgment
    from cuda_agent.judge.decide.service import JudgeService
    from cuda_agent.judge.decide.verdict import Status, Verdict, failure

    runs: list[tuple[str, bool, int]] = []

    def run_built(self: Judgment, pool: WorkerPool) -> Verdict:
        assert pool.share is not None
        alone = pool.share.is_alone(id(self))
        runs.append((self.submission.name, alone, pool.share.in_flight))
        if not alone and self.submission.name == "oom":
            self.alone_again = "runtime_error beside another judgment: CUDA out of memory"
            return failure(Status.RUNTIME_ERROR, "CUDA out of memory")
        return Verdict(reward=2, status=Status.OK, reason="ok", checks=dict(self.checks))

    monkeypatch.setattr(service_module, "require_gpu", lambda: None)
    monkeypatch.setattr(Judgment, "build_only", lambda self: None)
    monkeypatch.setattr(Judgment, "run_built", run_built)
    monkeypatch.setattr(lane_share, "gpu_bytes_and_free", lambda pids: (0, 1))  # depth 2 is taken
    monkeypatch.setattr(gpumem, "gpu_bytes_and_free", lambda pids: (0, 1))  # and the second one admitted
    monkeypatch.setattr(WorkerPool, "candidates_share_no_place", lambda self: True)
    monkeypatch.setattr(WorkerPool, "start", lambda self: None)
    root = Path(__file__).parents[2] / "examples"
    from cuda_agent.task import load_task

    items = []
    for name, example in (("oom", "row_softmax"), ("other", "layernorm")):
        folder = tmp_path / name
        folder.mkdir()
        items.append((folder, load_task(root / example / "model.py")))
    service = JudgeService(JudgeConfig(scratch_dir=tmp_path / "scratch", lane_depth=2), build_workers=2)
    service.start()
    try:
        verdicts = dict(service.judge_many(items))
    finally:
        service.close()
    assert service.lane_depth_note == ""
    assert verdicts[0].status == Status.OK and verdicts[1].status == Status.OK
    assert verdicts[0].checks["judged_again_alone"].startswith("runtime_error beside another judgment")
    assert ("oom", True, 1) in runs, "judged again with every permit: nothing else in flight"
    assert "judged_again_alone" not in verdicts[1].checks


def test_at_depth_two_a_reference_workers_end_of_judgment_waits_for_a_timing(
    cpu_pool_factory, tmp_path: Path
) -> None:
    """The reference worker's end of a judgment frees GPU memory (and may close a worker pushed out of the
    kept ones): at depth 2 a reader, so it never runs while the other judgment is timed."""
    pool: WorkerPool = cpu_pool_factory(kept_references=1)
    pool.share = _share(tmp_path)
    timing_ends = threading.Event()
    in_timing = threading.Event()
    ended = threading.Event()

    def timing() -> None:
        with pool.quiet.timing():
            in_timing.set()
            timing_ends.wait(10)

    def judgment() -> None:
        with pool.reference("task-a"):
            assert in_timing.wait(5)
        ended.set()

    threads = [threading.Thread(target=timing), threading.Thread(target=judgment)]
    threads[0].start()
    assert in_timing.wait(5)
    threads[1].start()
    assert not ended.wait(0.5), "the end of the judgment waits while another candidate is timed"
    timing_ends.set()
    assert ended.wait(10)
    for thread in threads:
        thread.join(5)
    pool.share = None
    with pool.reference("task-a") as slot:
        assert slot.warm_error is None, "kept for its task as at depth 1"


def test_a_batch_asked_for_depth_two_says_why_it_ran_one_per_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from cuda_agent.judge.decide.service import JudgeService

    service = JudgeService(JudgeConfig(scratch_dir=tmp_path / "scratch", lane_depth=2), keep_warm=False)
    monkeypatch.setattr(WorkerPool, "candidates_share_no_place", lambda self: False)
    assert service._share_lanes(service.pools) == 1
    assert "writable place" in service.lane_depth_note and all(p.share is None for p in service.pools)
    monkeypatch.setattr(WorkerPool, "candidates_share_no_place", lambda self: True)
    monkeypatch.setattr(lane_share, "gpu_bytes_and_free", lambda pids: None)
    assert service._share_lanes(service.pools) == 1 and "NVML" in service.lane_depth_note
    monkeypatch.setattr(lane_share, "gpu_bytes_and_free", lambda pids: (0, 1))
    assert service._share_lanes(service.pools) == 2 and service.lane_depth_note == ""
    assert all(p.share is not None and p.share.depth == 2 for p in service.pools)


# ---- lane_preempt: a timing freezes the other judgment's readers instead of waiting for them ------------


def _spin_worker(tmp_path: Path, name: str):
    from cuda_agent.judge.common.channel import WorkerHandle
    from cuda_agent.judge.common.procs import scrubbed_env

    worker = WorkerHandle(
        "cuda_agent.judge.common.spin_worker",
        log_path=tmp_path / f"{name}.log",
        env=scrubbed_env(),
        cwd=tmp_path,
    )
    worker.call("spin", 60, ms=1.0)  # started and answering
    return worker


def _start_timing(window) -> threading.Event:
    """A timing started on another thread; the event is set once it entered `window` (it then ends)."""
    entered = threading.Event()

    def timing() -> None:
        with window.timing():
            entered.set()

    threading.Thread(target=timing, daemon=True).start()
    return entered


def test_a_timing_waits_for_a_warm_up_but_not_for_a_preemptible_reader() -> None:
    from cuda_agent.judge.trusted.quiet_window import QuietWindow

    window = QuietWindow()
    with window.reading():
        assert _start_timing(window).wait(2), "a reader the writer freezes does not hold a timing back"
    with window.warming():
        entered = _start_timing(window)
        assert not entered.wait(0.3), "a warm-up (it cannot be frozen) is still waited for"
    assert entered.wait(2)  # no reader starts during a timing: test_quiet_window.py


def test_with_preempt_a_timing_freezes_the_other_judgments_reference_mid_call_and_its_limit_excludes_it(
    tmp_path: Path,
) -> None:
    """The other judgment's reference worker is frozen where it stands, inside a call; the call's time limit
    counts only the time it ran, so a sibling's long timing is not its timeout. Without the share's
    preempt the reference is not registered and nothing of it is frozen."""
    share = LaneShare(3, tmp_path / "gpu.lock", preempt=True)  # three permits: one with nothing registered
    ours, theirs = _entered_within(share, 1, "task-a", 2), _entered_within(share, 2, "task-b", 2)
    idle = _entered_within(share, 3, "task-c", 2)
    reference = _spin_worker(tmp_path, "reference")
    try:
        share.add_reference(2, reference)
        replies: list[object] = []

        def call() -> None:  # 0.6 s of work under a 1 s limit, frozen 1.2 s of it
            try:
                replies.append(reference.call("spin", 1.0, ms=600))
            except Exception as exc:  # the test reports what it got
                replies.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        time.sleep(0.2)
        with share.others_frozen(1) as frozen:
            assert frozen == 1 and _state(reference.pid) in "Tt", "frozen mid-call"
            time.sleep(1.2)
        caller.join(5)
        assert isinstance(replies[0], dict), f"the time held frozen counted against its limit: {replies[0]}"
        assert share.held_s(2) >= 1.2 and share.held_s(1) == 0.0
        assert share.held_s(3) == 0.0, "a judgment none of whose workers was stopped was not held"
        share.drop_reference(reference)
        assert reference.pauses is None
        with share.others_frozen(1) as frozen:
            assert frozen == 0, "a reference given back to the pool is nobody's to freeze"
    finally:
        for entered in (ours, theirs, idle):
            entered.leave.set()  # type: ignore[attr-defined]
        reference.close()
    plain = _share(tmp_path)
    with plain.judgment(3, "task-c", _admit_all):
        plain.add_reference(3, reference)
        assert not plain._references, "without preempt a reference is waited for, never frozen"


def test_without_the_pause_clock_a_frozen_call_would_time_out(tmp_path: Path) -> None:
    """The control for the test above: the same call, frozen by hand with no clock attached, fails."""
    from cuda_agent.judge.common.channel import WorkerFailure

    worker = _spin_worker(tmp_path, "plain")
    tree = ProcessTree(worker.pid)
    try:
        failed: list[BaseException] = []

        def call() -> None:
            try:
                worker.call("spin", 1.0, ms=600)
            except WorkerFailure as exc:
                failed.append(exc)

        caller = threading.Thread(target=call)
        caller.start()
        time.sleep(0.2)
        tree.freeze()
        time.sleep(1.2)
        tree.thaw()
        caller.join(5)
        assert failed and failed[0].kind == "timeout"
    finally:
        worker.close()


def test_lane_preempt_needs_depth_two_in_config_and_commands() -> None:
    with pytest.raises(ValueError, match="needs lane_depth 2"):
        JudgeConfig(lane_preempt=True)
    assert JudgeConfig(lane_depth=2, lane_preempt=True).lane_preempt
    result = subprocess.run(
        [sys.executable, "-m", "cuda_agent.cli", "judge", "--lane-preempt", "--task", "x", "."],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 2 and "needs --lane-depth 2" in result.stderr


@pytest.mark.parametrize("preempt", [False, True])
def test_a_pools_preemptible_reading_holds_a_timing_back_only_without_preempt(
    cpu_pool_factory, tmp_path: Path, preempt: bool
) -> None:
    pool: WorkerPool = cpu_pool_factory(kept_references=1)
    pool.share = LaneShare(2, tmp_path / "gpu.lock", preempt=preempt)
    with pool.gpu_lock(reading=True, preemptible=True):  # another judgment's verification under way
        entered = _start_timing(pool.quiet)
        assert entered.wait(5 if preempt else 0.5) is preempt, "with preempt the timing freezes the reader"
    assert entered.wait(2)
    with pool.gpu_lock(reading=True):  # a teardown or a reference's end: never frozen, always waited for
        entered = _start_timing(pool.quiet)
        assert not entered.wait(0.3)
    assert entered.wait(2)
    pool.share = None


def test_with_preempt_a_judgment_registers_its_workers_before_their_first_gpu_section_and_drops_its_reference(
    cpu_pool_factory, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a writer freezes must be registered before it can run GPU work that is not waited for: the
    reference before its preparation (and given back however the judgment ends), the candidate before the
    section that loads it. The stages themselves are replaced (no GPU here)."""
    import contextlib

    from cuda_agent.judge.decide.judgment import Judgment
    from cuda_agent.judge.decide.verdict import Status
    from cuda_agent.task import load_task

    pool: WorkerPool = cpu_pool_factory(kept_references=1)
    share = pool.share = LaneShare(2, tmp_path / "gpu.lock", preempt=True)
    task = load_task(Path(__file__).parents[2] / "examples" / "row_softmax" / "model.py")
    config = JudgeConfig(scratch_dir=tmp_path / "scratch", lane_depth=2, lane_preempt=True)
    judgment = Judgment(tmp_path, task, config)
    judgment.built = True
    seen: dict[str, bool] = {}
    handles: list = []

    def prepare(self: Judgment, pool: WorkerPool, slot) -> None:
        handles.append(slot.worker)
        seen["reference at its preparation"] = (
            slot.worker.pid in share._references and slot.worker.pauses is not None
        )

    def stages(self: Judgment, pool: WorkerPool, ref_slot, taken) -> None:
        cand = taken.result().worker
        opened = pool.gpu_lock

        @contextlib.contextmanager
        def gpu_lock(*args, **kwargs):
            registered = cand.pid in share._candidates and cand.pauses is share._flights[id(self)].pauses
            seen.setdefault("candidate at its first GPU section", registered)
            with opened(*args, **kwargs):
                yield

        monkeypatch.setattr(pool, "gpu_lock", gpu_lock)
        monkeypatch.setattr(Judgment, "load_candidate", lambda self, cand, ref: None)

        def verify(self: Judgment, ref, cand) -> None:
            raise RuntimeError("a verification that fails")

        monkeypatch.setattr(Judgment, "verify", verify)
        self.candidate_taken = True
        pool_slot = taken.result()
        self.exits.callback(pool.retire, pool_slot)
        return self.shared_gpu_part(pool, ref_slot.worker, cand)

    monkeypatch.setattr(Judgment, "prepare_reference", prepare)
    monkeypatch.setattr(Judgment, "candidate_stages", stages)
    with share.judgment(id(judgment), task.digest, _admit_all):
        verdict = judgment.run_built(pool)
    pool.settle()
    assert verdict.status == Status.RUNTIME_ERROR and "a verification that fails" in verdict.reason
    assert seen == {"reference at its preparation": True, "candidate at its first GPU section": True}
    assert not share._references and handles[0].pauses is None, "given back with the judgment, failed or not"
    pool.share = None
    judgment.cleanup()


@pytest.mark.parametrize(
    ("preempt", "drains", "outcome"),
    [
        (True, [False, True], "timed after waiting"),  # the section ended: its queued work with it
        (True, [False, False], "alone"),  # busy even then: judged again alone, as without preempt
        (False, [False], "alone"),
    ],
)
def test_a_drain_that_fails_beside_a_frozen_section_first_waits_for_it_where_the_share_preempts(
    cpu_pool_factory,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    sleeper: subprocess.Popen,
    preempt: bool,
    drains: list[bool],
    outcome: str,
) -> None:
    """A frozen judgment's queued GPU work can outlast the writer's drain. With preempt the writer then
    thaws it and waits for its section to end (the discipline without preempt) before draining again;
    only a second failure, or any failure without preempt, sends the timed judgment to be judged alone."""
    from cuda_agent.judge.decide.judgment import Judgment
    from cuda_agent.task import load_task

    pool: WorkerPool = cpu_pool_factory(kept_references=1)
    share = pool.share = LaneShare(2, tmp_path / "gpu.lock", preempt=preempt)
    task = load_task(Path(__file__).parents[2] / "examples" / "row_softmax" / "model.py")
    judgment = Judgment(tmp_path, task, JudgeConfig(scratch_dir=tmp_path / "scratch", lane_depth=2))
    answers, seen = iter(drains), []

    def reference_call(self: Judgment, ref, command: str, timeout: float, **kwargs) -> dict:
        assert command == "drain"
        seen.append((pool.quiet.reading_now, _state(sleeper.pid) in "Tt"))
        return {"drained": next(answers)}

    monkeypatch.setattr(Judgment, "_reference_call", reference_call)
    monkeypatch.setattr(Judgment, "time", lambda self, ref, cand: "timed")
    section_on, leave = threading.Event(), threading.Event()

    def sibling() -> None:  # another judgment, its candidate registered, in a section a writer may freeze
        with share.judgment(2, "task-b", _admit_all):
            share.add_candidate(2, sleeper.pid, ProcessTree(sleeper.pid))
            with pool.gpu_lock(reading=True, preemptible=True):
                section_on.set()
                time.sleep(0.8)
            leave.wait(10)

    thread = threading.Thread(target=sibling)
    thread.start()
    assert section_on.wait(5)
    try:
        with share.judgment(id(judgment), task.digest, _admit_all):
            if outcome == "alone":
                with pytest.raises(JudgeAlone, match="stayed busy"):
                    judgment._writer(pool, share, None, None)  # type: ignore[arg-type]
            else:
                assert judgment._writer(pool, share, None, None) == "timed"  # type: ignore[arg-type]
    finally:
        leave.set()
        thread.join(5)
    assert all(stopped for _, stopped in seen), "every drain ran with the other candidate frozen"
    if preempt:
        assert seen[0][0] == 1, "the first drain did not wait for the other judgment's section"
        if len(seen) > 1:
            assert seen[1][0] == 0 and judgment.checks["lane_waited_after_freeze"], "then waited for it"
    else:
        assert seen == [(0, True)], "without preempt the writer waited for the section before draining once"
    share.drop_candidate(sleeper.pid)
    pool.share = None
    judgment.cleanup()
