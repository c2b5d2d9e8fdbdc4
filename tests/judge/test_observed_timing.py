"""Behaving differently when observed (issue 33, class 3): a submission that reads the profiler's state
runs its own kernels in traced rounds and PyTorch's faster ones in untraced rounds. Its traced calls'
kernels keep the GPU busy longer than its untraced calls take, which an honest call (whose events enclose
its kernels) cannot do: decide/observed_timing.py refuses it.

Numbers: the honest figures are those of the H200 stability run's layernorm (tests/judge/data/
h200_stability_v5.json: 0.0740 ms per call), its traced busy time put at 90% of that (kernel time inside
the events, launch gaps outside); the cheat's are an fp16 attention task's (B=4, H=16, S=1024, D=64): a
naive own kernel ~2 ms per call while traced, PyTorch's flash attention ~0.08 ms otherwise. The real
traced/untraced ratios of the honest suite are to be measured on the GPU (`checks.observed_timing`)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from test_traced_rounds import CALLS, OURS, Candidate, Reference, _judgment

from cuda_agent.judge.candidate.kernel_trace import device_busy_us
from cuda_agent.judge.config import TimingConfig
from cuda_agent.judge.decide.judgment import Stop
from cuda_agent.judge.decide.observed_timing import observed_gap, round_busy_ms
from cuda_agent.judge.trusted.device_code import normalise
from cuda_agent.judge.trusted.library_kernels import KernelLists

# Scripted workers sleep for the times they report, and the parent's clock checks them: on the 2-core CI
# machine another test's compilers beside them oversleep those sleeps by milliseconds (scripts/test.sh).
pytestmark = [pytest.mark.alone, pytest.mark.usefixtures("candidate_holds_nothing")]  # conftest.py

DATA = Path(__file__).parent / "data" / "h200_stability_v5.json"


def layernorm_ms() -> float:
    runs = json.loads(DATA.read_text())["results"]["layernorm"]
    return sorted(r["candidate_ms"] for r in runs)[len(runs) // 2]


def test_an_honest_submission_passes() -> None:
    honest = layernorm_ms()
    untraced = [[honest * f for f in (0.99, 1.0, 1.01, 1.0, 1.02, 0.98, 1.0, 1.0, 1.01, 0.99)]] * 20
    gap = observed_gap([0.9 * honest, 0.91 * honest, 0.89 * honest], untraced, TimingConfig())
    assert not gap.refused and gap.ratio == pytest.approx(0.9, rel=0.02)


def test_honest_kernels_only_while_traced_are_refused() -> None:
    untraced = [[0.08] * 10] * 12  # PyTorch's flash attention where nobody looks
    gap = observed_gap([2.05, 1.98, 2.01], untraced, TimingConfig())
    assert gap.refused and gap.ratio == pytest.approx(2.01 / 0.08)
    assert "behaves differently when observed" in gap.reason()


@pytest.mark.parametrize(("busy", "refused"), [(1.1, False), (1.15, False), (1.16, True), (1.2, True)])
def test_the_slack(busy: float, refused: bool) -> None:
    """(1 + 0.15) x 1.0 ms + 0.005 ms: within it honest spread, beyond it refused."""
    gap = observed_gap([busy] * 3, [[1.0] * 10] * 5, TimingConfig())
    assert gap.refused is refused


def test_nothing_to_compare_decides_nothing() -> None:
    assert not observed_gap([], [[0.1] * 10], TimingConfig()).refused
    assert not observed_gap([0.5], [], TimingConfig()).refused
    assert round_busy_ms({"busy_us": None}, 10) is None and round_busy_ms({}, 10) is None
    assert round_busy_ms({"busy_us": float("nan")}, 10) is None
    assert round_busy_ms({"busy_us": 2500.0}, 10) == pytest.approx(0.25)


class _Event:
    def __init__(self, name: str, start: int, end: int) -> None:
        self._name, self._start, self._end = name, start, end

    def device_type(self) -> str:
        return "DeviceType.CUDA"

    def is_async(self) -> bool:
        return False

    def name(self) -> str:
        return self._name

    def start_ns(self) -> int:
        return self._start

    def end_ns(self) -> int:
        return self._end


def test_busy_time_is_the_union_of_the_candidates_device_events() -> None:
    """Overlapping streams count once; the judge's pad/flush (and the fallback's spin and fill) not at all."""
    events = [
        _Event("judge_pad_flush", 0, 100_000),
        _Event("_Z9my_kernelPf", 100_000, 150_000),
        _Event("_Z12side_kernelPf", 120_000, 170_000),  # on a joined side stream, overlapping
        _Event("Memcpy DtoD (Device -> Device)", 180_000, 185_000),
        _Event("_ZN2at4cuda12_GLOBAL__N_111spin_kernelEl", 200_000, 300_000),
    ]
    prof = SimpleNamespace(profiler=SimpleNamespace(kineto_results=SimpleNamespace(events=lambda: events)))
    assert device_busy_us(prof) == pytest.approx(75.0)  # 100-170 and 180-185 us


class TracedHonestOnly(Candidate):
    """Own kernels (2 ms of device time per call) while traced; PyTorch's at 0.25 ms otherwise. Its
    traced rounds' kernel lists are honest, so the coverage gate alone passes it."""

    def __init__(self, pid: int, busy_ms: float) -> None:
        super().__init__(pid)
        self.busy_ms = busy_ms

    def answer(self, command: str, timeout: float, **kw: Any) -> dict[str, Any]:
        reply = super().answer(command, timeout, **kw)
        if command == "time_round" and kw["trace"]:
            time.sleep(CALLS * self.busy_ms / 1000)
            reply["samples"] = [self.busy_ms] * CALLS
            reply["busy_us"] = CALLS * self.busy_ms * 1000
        return reply


@pytest.mark.parametrize(("busy_ms", "refused"), [(0.22, False), (2.0, True)])
def test_the_timing_stage_compares_traced_with_untraced_rounds(tmp_path, monkeypatch, candidate_process,
                                                               busy_ms: float, refused: bool) -> None:  # fmt: skip
    ref, cand = Reference(), TracedHonestOnly(candidate_process.pid, busy_ms)
    made = _judgment(tmp_path, monkeypatch, candidate_process, ref)
    made._coverage_lists = KernelLists(torch=frozenset({normalise("void at::native::gelu_kernel(float*)")}))  # type: ignore[attr-defined]
    assert made.kernel_names == {OURS}
    if not refused:
        made.time(ref, cand)  # type: ignore[arg-type]
        observed = made.checks["observed_timing"]
        assert observed["ratio"] == pytest.approx(0.22 / 0.25) and observed["rounds"][0] >= 3
        return
    with pytest.raises(Stop) as stopped:
        made.time(ref, cand)  # type: ignore[arg-type]
    assert stopped.value.verdict.status.value == "rejected"
    assert "behaves differently when observed" in stopped.value.verdict.reason
