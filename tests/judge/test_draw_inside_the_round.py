"""A timed round's inputs come into existence inside the round (candidate/sampler.py, issue 12's set-up gap).

The parent's clock brackets the command that times a round. A round's inputs used to be drawn by an
earlier command (`draw_round`), so a patched set-up could compute the round's outputs before the clock
started and the timed calls only hand them back. Now the seeds travel with the timed command and the
sampler draws each call's inputs inside its timed loop, under a spin of the GPU (the cover) that hides the
draw's host time: these tests run the real Sampler and CandidateWorker code with the GPU replaced by a
recorder, and check the order of what happens.
"""

from __future__ import annotations

import gc
from types import SimpleNamespace
from typing import Any

import pytest

from cuda_agent.judge.candidate import sampler as sampler_module
from cuda_agent.judge.candidate import worker as worker_module
from cuda_agent.judge.candidate.pad import COVER_MAX_MS
from cuda_agent.judge.candidate.sampler import Sampler, cover_for


class _Recorder:
    """Stands in for torch and the pad kernel: every GPU step is appended to `log`."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []
        recorder = self

        class Event:
            def __init__(self, enable_timing: bool = False) -> None:
                self.name = f"ev{len([e for e in recorder.log if e[0] == 'event'])}"
                recorder.log.append(("event",))

            def record(self, stream: Any = None) -> None:
                recorder.log.append(("record",))

            def elapsed_time(self, other: Any) -> float:
                return 0.05

        class NoGrad:
            def __enter__(self) -> None:
                return None

            def __exit__(self, *exc: Any) -> None:
                return None

        self.cuda = SimpleNamespace(Event=Event, synchronize=lambda: self.log.append(("sync",)))
        self.no_grad = NoGrad

    def launch(self, stream: int, spin_ms: float, flush: bool = True, stamps: int = 0, release: int = 0) -> None:
        self.log.append(("pad" if flush else "cover", round(spin_ms, 4)))

    def new_stamps(self, slots: int) -> SimpleNamespace:
        """The pad's flush stamps (none measured here: no charge)."""
        return SimpleNamespace(address=lambda slot: 4096 + 16 * slot, flush_ms=lambda: [None] * slots)


def _sampler(recorder: _Recorder, drawn: list[int]) -> Sampler:
    made = Sampler.__new__(Sampler)
    made.torch = recorder  # type: ignore[assignment]
    made.kernel = recorder  # type: ignore[assignment]
    made._cudart = None
    made.stream = SimpleNamespace(cuda_stream=7)
    made.flush_allowance_ms = 0.08
    made.pad_ms, made.cover_ms, made.draw_first = 0.1, 0.6, False
    made.kept, made._round_copies, made._prepared = [], {}, None
    made.arg_sets = [["warm-up set"]]

    def draw(seed: int) -> list[Any]:
        recorder.log.append(("draw", seed, gc.isenabled()))
        drawn.append(seed)
        return [f"inputs of {seed}"]

    def fn(*args: Any) -> str:
        recorder.log.append(("call", args[0]))
        return f"output for {args[0]}"

    made.draw, made.fn = draw, fn
    return made


def test_a_seeded_round_draws_each_call_inside_its_timed_loop_under_the_cover() -> None:
    recorder, drawn = _Recorder(), []
    made = _sampler(recorder, drawn)
    made.prepare(4)  # the set-up, outside the parent's clock: events only
    assert drawn == [] and made._prepared is not None and made._prepared.calls == [] and made._prepared.seeds is None
    recorder.log.clear()
    result = made.round(4, seeds=[11, 12, 13, 14])
    steps = [e for e in recorder.log if e[0] in ("cover", "draw", "pad", "call")]
    # calibration samples (a pad without a call) come before calls 0 and 3 and at the end
    assert steps == [
        ("pad", 0.116), ("cover", 0.6), ("draw", 11, False), ("pad", 0.116), ("call", "inputs of 11"),
        ("cover", 0.6), ("draw", 12, False), ("pad", 0.116), ("call", "inputs of 12"),
        ("cover", 0.6), ("draw", 13, False), ("pad", 0.116), ("call", "inputs of 13"),
        ("pad", 0.116), ("cover", 0.6), ("draw", 14, False), ("pad", 0.116), ("call", "inputs of 14"),
        ("pad", 0.116),
    ]  # fmt: skip
    # the draws ran inside the timed loop (the collector is off exactly there), and on again after
    assert gc.isenabled()
    assert made.kept == [([f"inputs of {s}"], f"output for inputs of {s}") for s in (11, 12, 13, 14)]
    assert result.cover_ms == 0.6 and result.reply()["cover_ms"] == 0.6 and len(result.samples_ms) == 4
    # the next set-up releases this round's calls before anything else happens
    made.prepare(4)
    assert made.kept == []


def test_inputs_drawn_before_the_round_run_without_a_cover() -> None:
    recorder, drawn = _Recorder(), []
    made = _sampler(recorder, drawn)
    result = made.round(2, fresh=[["a"], ["b"]])
    assert drawn == [] and not any(e[0] == "cover" and e[1] > 0 for e in recorder.log)  # 0: the set-up's claim
    assert [k for k, _ in made.kept] == [["a"], ["b"]] and result.cover_ms == 0.0


def test_a_round_on_seeds_needs_a_draw() -> None:
    made = _sampler(_Recorder(), [])
    made.draw = None
    with pytest.raises(RuntimeError, match="draw"):
        made.round(2, seeds=[1, 2])


def test_the_cover_hides_a_draws_host_time_within_bounds() -> None:
    assert cover_for(0.4) == pytest.approx(1.25 * 0.4 + 0.05)
    assert cover_for(0.0) == 0.0  # a draw that waits for the GPU inside: no spin can hide it
    assert cover_for(100.0) == COVER_MAX_MS
    made = _sampler(_Recorder(), [])
    made.set_pad(0.3, 0.09, cover_ms=50.0)
    assert made.cover_ms == COVER_MAX_MS and made.pad_ms == 0.3 and made.flush_allowance_ms == 0.09
    made.set_pad(0.3)  # the parent's pad alone keeps the cover it set
    assert made.cover_ms == COVER_MAX_MS


class _FakeSampler:
    """What the candidate worker asks of its sampler, recorded."""

    def __init__(self, log: list[tuple[Any, ...]]) -> None:
        self.log = log

    def prepare(self, samples: int) -> float:
        self.log.append(("prepare", samples))
        return 0.0

    def round(self, samples: int, keep: int | None = None, fresh: Any = None, seeds: Any = None) -> Any:
        self.log.append(("round", samples, None if fresh is None else len(fresh), seeds))
        return sampler_module.RoundResult([0.05] * samples, 1.0)


def _candidate_worker(log: list[tuple[Any, ...]]) -> worker_module.CandidateWorker:
    made = worker_module.CandidateWorker()
    made.sampler = _FakeSampler(log)  # type: ignore[assignment]
    made.inputs = SimpleNamespace(get=lambda seed, path: log.append(("draw", seed)) or [seed])  # type: ignore[assignment]
    made.check_settings = lambda when: None  # type: ignore[method-assign]
    return made


def test_the_candidate_workers_set_up_has_no_input_and_its_timed_round_gets_the_seeds() -> None:
    log: list[tuple[Any, ...]] = []
    made = _candidate_worker(log)
    made.prepare_round(3)
    assert log == [("prepare", 3)]
    made.time_round(3, keep=1, seeds=[5, 6, 7])
    assert log[1:] == [("round", 3, None, [5, 6, 7])], "the seeds must reach the sampler's loop, not a draw before it"


def test_a_traced_round_draws_before_its_trace(monkeypatch) -> None:
    """The trace is the coverage gate's evidence: the draw's own kernels (torch's random generators) must
    not be in it. A traced round's samples are not used, so its inputs are drawn before the loop."""
    log: list[tuple[Any, ...]] = []
    made = _candidate_worker(log)

    def traced(call: Any, busy: list[float] | None = None) -> tuple[Any, dict[str, float]]:
        log.append(("trace begins",))
        if busy is not None:
            busy.append(5.0)
        return call(), {"k": 1.0}

    monkeypatch.setattr(worker_module.kernel_trace, "traced", traced)
    made.prepare_round(2)
    reply = made.time_round(2, trace=True, seeds=[8, 9])
    assert log == [("prepare", 2), ("draw", 8), ("draw", 9), ("trace begins",), ("round", 2, 2, None)]
    assert reply["kernels"] == {"k": 1.0}
    assert reply["busy_us"] == 5.0  # the traced round's device time travels with its kernels


def test_a_round_drawn_first_draws_every_call_inside_the_loop_before_the_first_call() -> None:
    """The variant the spread probe compares (Sampler.draw_first): the round's draws under one cover at the
    start of the timed loop, then the calls; still nothing of the round before the loop."""
    recorder, drawn = _Recorder(), []
    made = _sampler(recorder, drawn)
    made.draw_first = True
    made.prepare(3)
    assert drawn == []
    recorder.log.clear()
    made.round(3, seeds=[21, 22, 23])
    steps = [e for e in recorder.log if e[0] in ("cover", "draw", "pad", "call")]
    assert steps[:4] == [("cover", 1.8), ("draw", 21, False), ("draw", 22, False), ("draw", 23, False)]
    assert [e for e in steps[4:] if e[0] in ("cover", "draw")] == []
    assert [e[1] for e in steps if e[0] == "call"] == ["inputs of 21", "inputs of 22", "inputs of 23"]


def test_the_settings_check_runs_in_the_set_up_and_after_timing_never_inside_the_round() -> None:
    """The check of PyTorch's settings and classes costs ~0.05-0.07 ms: between the loop and the reply it
    was host time in the candidate's clocked round that the reference's rounds do not have. It runs in the
    next round's set-up and once after timing instead, so a round that changed something is still named."""
    log: list[tuple[Any, ...]] = []
    made = _candidate_worker(log)
    made.check_settings = lambda when: log.append(("check", when))  # type: ignore[method-assign]
    made.prepare_round(3)
    made.time_round(3, keep=0, seeds=[1, 2, 3])
    made.check_after_timing()
    assert log == [("check", "a timed forward"), ("prepare", 3), ("round", 3, None, [1, 2, 3]),
                   ("check", "a timed forward")]


def test_the_set_up_claims_the_gpu_for_this_process_before_the_clock() -> None:
    """The set-up (outside the parent's clock) launches one empty judge kernel and waits for it, so the
    GPU's switch from the other worker's context is paid there and not by the round's first kernel."""
    recorder, drawn = _Recorder(), []
    made = _sampler(recorder, drawn)
    made.prepare(3)
    steps = [e for e in recorder.log if e[0] != "event"]
    assert steps == [("cover", 0.0), ("sync",)], steps
    recorder.log.clear()
    made.round(3, seeds=[1, 2, 3])
    assert ("cover", 0.0) not in recorder.log, "the round itself must not pay for the claim"
