"""Which timed round is traced for the coverage gate is the parent's secret (issue 12, class 3).

Against scripted workers and a real process standing in for the candidate (it is frozen while baselines
run): the traced round is chosen by `secrets` for each round, at no fixed place (not always the last, not
always the first), asked for with the same command and argument names as every other round, and
its samples are not part of the timing. A submission honest only on the round that used to be traced (the
last one) is caught when ATen runs in a traced round.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from fake_workers import RoundTrips

from cuda_agent.judge.config import JudgeConfig, TimingConfig
from cuda_agent.judge.decide.judgment import Judgment, Stop
from cuda_agent.judge.decide.verdict import Environment
from cuda_agent.judge.trusted.device_code import normalise
from cuda_agent.judge.trusted.freeze import ProcessTree
from cuda_agent.judge.trusted.library_kernels import KernelLists
from cuda_agent.judge.trusted.pool import ReferenceSlot
from cuda_agent.task import Task

# Scripted workers sleep for the times they report, and the parent's clock checks them: on the 2-core CI
# machine another test's compilers beside them oversleep those sleeps by milliseconds (scripts/test.sh).
pytestmark = [pytest.mark.alone, pytest.mark.usefixtures("candidate_holds_nothing")]  # conftest.py

CALLS = 10
OURS = "void ew_kernel<4>(float const*, float*, long)"
ATEN = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int, float*)"


class Reference(RoundTrips):
    """Baselines of fixed cost; each call sleeps for what its samples claim, as a GPU would."""

    pid = 1

    def answer(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        if command == "time_setup":
            return {"ok": True, "host_ms": {"eager": 0.01, "compile": 0.01}, "compile_builds_ms": [0.5]}
        if command == "time_pad":
            return {"ok": True}
        if command == "time_round":
            ms = 1.0 if kw["mode"] == "eager" else 0.5
            time.sleep(CALLS * ms / 1000)
            return {"ok": True, "samples": [ms] * CALLS, "setup_ms": 0.0}
        if command == "drain":
            return {"ok": True, "drained": True, "busy_ms": 0.0}
        raise AssertionError(f"unexpected reference command {command}")


class Candidate(RoundTrips):
    """Records every command in order. In the rounds `aten_rounds` (0-based) its calls run PyTorch's
    kernel instead of its own."""

    def __init__(self, pid: int, aten_rounds: frozenset[int] = frozenset()) -> None:
        self.pid = pid
        self.aten_rounds = aten_rounds
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.rounds = 0

    def answer(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        self.commands.append((command, kw))
        if command == "time_setup":
            return {"ok": True, "warmup_ms": 0.3, "host_ms": 0.01}
        if command in ("time_pad", "prepare_round", "check_after_timing"):
            return {"ok": True}
        if command == "time_round":
            cheating = self.rounds in self.aten_rounds
            self.rounds += 1
            time.sleep(CALLS * 0.25 / 1000)
            reply: dict[str, Any] = {"ok": True, "samples": [0.25] * CALLS, "escaped_ms": 0.0}
            if kw["trace"]:  # the worker adds the kernels of a traced round
                reply["kernels"] = {ATEN if cheating else OURS: 2.5 * 1000}
            return reply
        raise AssertionError(f"unexpected candidate command {command}")


def _judgment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proc: subprocess.Popen, ref: Reference,
              **timing: Any) -> Judgment:  # fmt: skip
    monkeypatch.setenv("CUDA_AGENT_CACHE", str(tmp_path / "cache"))
    config = JudgeConfig(scratch_dir=tmp_path / "scratch", cache_dir=tmp_path / "baselines",
                         timing=TimingConfig(**{"min_samples": 30, "min_gpu_ms": 1.0, "max_rounds": 8, **timing}))  # fmt: skip
    made = Judgment(tmp_path, Task(name="t", source="x = 1\n", path=tmp_path / "model.py"), config)
    made.environment = Environment(gpu="G", compute_capability="9.0", driver="1", torch="t", cuda="c")
    made.io_dir = made.out_dir = tmp_path
    made.input_files = False
    made.threads_after_load = 10**6
    made.candidate_tree = ProcessTree(proc.pid, tmp_path)
    made.candidate_separate_user = True
    made.reference_slot = ReferenceSlot(ref, tmp_path)  # type: ignore[arg-type]
    made.check_round = lambda *args, **kw: True  # type: ignore[method-assign]  (outputs: other tests)
    made.kernel_names = {OURS}
    made._coverage_lists = KernelLists(torch=frozenset({normalise(ATEN)}))  # type: ignore[attr-defined]  (real ones: test_what_runs.py)
    made.reference_ops = {"gelu"}
    made.imports = {"kernels/ew.cu": {"__cudaLaunchKernel"}}
    return made


def _rounds(cand: Candidate) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """(prepare_round payload, time_round payload) of every round, in order."""
    out, prepared = [], None
    for command, kw in cand.commands:
        if command == "prepare_round":
            prepared = kw
        elif command == "time_round":
            assert prepared is not None, "a timed round without its set-up before it"
            out.append((prepared, kw))
            prepared = None
    return out


def test_the_traced_round_is_chosen_at_no_fixed_place(tmp_path, monkeypatch, candidate_process) -> None:
    positions: set[tuple[int, int]] = set()  # (index of a traced round, rounds in that judgment)
    for attempt in range(12):
        ref, cand = Reference(), Candidate(candidate_process.pid)
        made = _judgment(tmp_path / str(attempt), monkeypatch, candidate_process, ref)
        timing = made.time(ref, cand)  # type: ignore[arg-type]
        rounds = _rounds(cand)
        traced = [i for i, (_, kw) in enumerate(rounds) if kw["trace"]]
        assert len(traced) >= made.config.timing.min_traced_rounds and made.checks["traced_timed_rounds"] == len(traced)
        # every round is asked for alike: the same command and argument names (the seeds with it), and the
        # set-up before it says nothing of tracing
        assert {frozenset(kw) for _, kw in rounds} == {frozenset({"samples", "keep", "trace", "seeds"})}
        assert {frozenset(prepared) for prepared, _ in rounds} == {frozenset({"samples", "inputs_path"})}
        # traced rounds are evidence, not measurements
        assert timing.rounds == len(rounds) - len(traced)
        positions |= {(i, len(rounds)) for i in traced}
    assert any(i < n - 1 for i, n in positions), f"the traced round was always the last: {positions}"
    assert len({i for i, _ in positions}) >= 3, f"the traced round sits at few places: {positions}"


def test_aten_before_the_round_that_used_to_be_traced_is_caught(tmp_path, monkeypatch, candidate_process) -> None:
    """PyTorch's kernel in the first three rounds, its own afterwards: against a fixed traced round after
    the timing rounds this always passed. Traced at random, round by round (share 0.5 here), one of the
    first three is traced in 7 judgments of 8, and then it is refused."""
    caught = 0
    for attempt in range(6):
        ref, cand = Reference(), Candidate(candidate_process.pid, aten_rounds=frozenset({0, 1, 2}))
        made = _judgment(tmp_path / str(attempt), monkeypatch, candidate_process, ref, traced_round_share=0.5)
        try:
            made.time(ref, cand)  # type: ignore[arg-type]
        except Stop as stop:
            assert stop.verdict.status.value == "rejected"
            assert "ran none of your kernels" in stop.verdict.reason
            caught += 1
            continue
        traced = [i for i, (_, kw) in enumerate(_rounds(cand)) if kw["trace"]]
        assert traced and min(traced) >= 3, "a traced ATen round was let through"
    assert caught >= 1


def test_a_traced_round_without_kernels_is_refused(tmp_path, monkeypatch, candidate_process) -> None:
    """A worker patched to drop the kernel list from its reply fails closed."""
    made = _judgment(tmp_path, monkeypatch, candidate_process, Reference())
    with pytest.raises(Stop) as stopped:
        made.gate_timed_round({"ok": True, "samples": [0.25] * CALLS}, CALLS)
    assert "ran none of your kernels" in stopped.value.verdict.reason


def test_the_chance_of_tracing_follows_the_rounds_timing_will_take() -> None:
    """About max(3, 0.2 x rounds) traced: a 60-round judgment of a tiny kernel traces ~12 (a fixed 0.35
    traced ~32, ~1.5 s of an H200 warm judgment with their checks), a 3-round one of a slow kernel one
    round in two, and before any round the chance is the few-round one's."""
    from cuda_agent.judge.decide.stats import trace_probability

    tc = TimingConfig()  # 10 calls a round, >= 30 samples, >= 100 ms of GPU time, <= 60 rounds
    assert trace_probability(None, tc) == pytest.approx(0.5)
    tiny = trace_probability(0.4, tc)  # 0.04 ms calls: 250 rounds wanted, 60 allowed
    assert tiny == pytest.approx(12 / 72)
    assert 60 * tiny / (1 - tiny) == pytest.approx(12)  # expected traced rounds among 60 timed ones
    assert trace_probability(27.0, tc) == pytest.approx(3 / 7)  # 4 rounds: the floor of 3 traced
    assert trace_probability(500.0, tc) == pytest.approx(0.5)  # 3 rounds (min samples): capped at 1/2
    # a cheat on more than half of the rounds escapes a 60-round judgment with well under 1%
    assert (1 - tiny) ** 30 < 0.01


class SlowAfterTrace(Candidate):
    """An honest candidate whose round right after a traced one costs 20 ms more host time (the profiler's
    aftermath, as on the H200): 2 ms per call beyond its events."""

    def __init__(self, pid: int) -> None:
        super().__init__(pid)
        self.last_traced = False

    def answer(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        if command == "time_round":
            if self.last_traced:
                time.sleep(0.020)
            self.last_traced = bool(kw["trace"])
        return super().answer(command, timeout, **kw)


def test_each_verdict_says_which_rounds_carried_the_excess(tmp_path, monkeypatch, candidate_process) -> None:
    """The candidate's per-call overhead beyond the reference's, round by round (`round_excess_ms`), with
    the rounds right after a frozen window named: the slow rounds after each trace are the ones above 1 ms
    per call, and the host clock charged them. (On the H200, 2026-12-02, the honest excess was neither
    after traces nor after frozen windows but judgment-wide: this is how that was seen.)"""
    for attempt in range(20):  # which rounds are traced is random: until one is followed by a timed round
        cand = SlowAfterTrace(candidate_process.pid)
        made = _judgment(tmp_path / str(attempt), monkeypatch, candidate_process, Reference(), traced_round_share=0.5,
                         max_rounds=12)  # fmt: skip
        timing = made.time(made.reference_slot.worker, cand)  # type: ignore[arg-type]
        rounds = _rounds(cand)
        traced = [i for i, (_, kw) in enumerate(rounds) if kw["trace"]]
        followed = sum(1 for i in traced if i + 1 < len(rounds) and i + 1 not in traced)
        if followed:
            break
    assert followed >= 1, "no timed round followed a traced one in 20 judgments"
    clock = made.checks["host_clock"]
    assert len(clock["round_excess_ms"]) == timing.rounds
    assert len([x for x in clock["round_excess_ms"] if x > 1.0]) == followed
    assert clock["candidate_rounds_charged_by_host_clock"] >= followed
    # baselines measured in this judgment: every timed round but the first follows a frozen window,
    # except where a traced round (not frozen) came between
    assert set(clock["after_frozen_rounds"]) <= set(range(1, timing.rounds))
    assert len(clock["after_frozen_rounds"]) >= timing.rounds - 1 - len(traced)
    assert set(clock["excess_median_ms"]) == {"timed", "after_frozen", "other_timed"}
