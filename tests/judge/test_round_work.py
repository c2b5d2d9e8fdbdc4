"""Protocol v6 (issue 33, timing classes 4 and 5), on plain numbers and on the pad kernel's text.

Class 4, work moved between the calls of a round: a round's time is its total work over its calls
(`work_per_call`, the mean of its charged samples), so no redistribution lowers it; the speedup is a median
over rounds, so an honest round with one slow call moves nothing. Class 5, L2 warmed after the flush: the
pad kernel spins first and flushes last, and the timed calls' flushes beyond the round's calibration
samples' are charged (work that ran during them shared DRAM with them).
"""

from __future__ import annotations

import random
import re
import statistics
from types import SimpleNamespace

import pytest

from cuda_agent.judge.candidate import sampler as sampler_module
from cuda_agent.judge.candidate.pad import PAD_HOLD_TIMEOUT_NS, PAD_PTX, PAD_SPIN_FLUSH_SHARE
from cuda_agent.judge.candidate.round_result import (
    FLUSH_SLACK_SHARE,
    TAIL_RESOLUTION_MS,
    RoundResult,
    charge_flushes,
    work_per_call,
)
from cuda_agent.judge.candidate.sampler import Sampler
from cuda_agent.judge.decide.stats import HostClock, per_call_overhead, ratio_with_bound, round_time

CALLS = 10
NEVER = HostClock(0.0, float("inf"))  # a clock that never binds: the statistic alone decides


def _honest(rng: random.Random, per_call: float = 0.05, jitter: float = 0.0005) -> list[float]:
    return [per_call + rng.gauss(0, jitter) for _ in range(CALLS)]


def _burst(work: float, marker: float = 0.004) -> list[float]:
    """The issue's burst: call 1 computes at once, calls 2-9 queue and run a marker, call 10 runs the nine
    queued calls (its own included) in one batched launch."""
    return [work] + [marker] * (CALLS - 2) + [9 * work]


# ---- class 4: the round's statistic ------------------------------------------------------------------------
def test_the_burst_that_fooled_the_median_is_timed_by_its_work() -> None:
    work, marker = 0.05, 0.004
    honest = [work] * CALLS
    burst = _burst(work, marker)
    assert statistics.median(burst) == pytest.approx(marker)  # v5's statistic: the marker
    t_honest, _ = round_time(honest, 0.0, NEVER)
    t_burst, _ = round_time(burst, 0.0, NEVER)
    assert t_burst >= t_honest  # the markers are extra work, nothing is saved
    assert t_burst == pytest.approx(work + (CALLS - 2) * marker / CALLS)


def test_no_redistribution_of_a_rounds_work_between_its_calls_lowers_its_time() -> None:
    """Any split of the same total over the calls, however uneven (all of it in one call, in the calls a
    median or a trimmed mean would leave out, in random shares) has the same round time."""
    rng = random.Random(33)
    for _ in range(200):
        samples = _honest(rng)
        total = sum(samples)
        t, charged = round_time(samples, 0.0, NEVER)
        assert not charged
        weights = [rng.random() ** rng.choice([1, 4, 16]) for _ in range(CALLS)]
        moved = [total * w / sum(weights) for w in weights]
        assert round_time(moved, 0.0, NEVER)[0] == pytest.approx(t, rel=1e-12)
        one = [1e-6] * CALLS
        one[rng.randrange(CALLS)] = total - (CALLS - 1) * 1e-6
        assert round_time(one, 0.0, NEVER)[0] == pytest.approx(t, rel=1e-9)


def test_a_trimmed_statistic_would_be_gamed_and_is_not_what_is_used() -> None:
    """Why the plain mean: a mean without the slowest call (a 10% trim) reads almost nothing of a round
    whose work sits in one call; the round's time reads all of it."""
    total = 0.5
    one = [1e-4] * (CALLS - 1) + [total - (CALLS - 1) * 1e-4]
    trimmed = statistics.fmean(sorted(one)[:-1])
    assert trimmed < 0.01 * total / CALLS
    assert round_time(one, 0.0, NEVER)[0] == pytest.approx(total / CALLS)


def test_one_slow_call_moves_its_round_but_not_the_median_over_rounds() -> None:
    """An honest round with one slow call (a clock dip, a preempted synchronisation): its round time rises
    by a tenth of the delay; the speedup, a median over rounds, does not move."""
    rng = random.Random(7)
    baseline = [statistics.fmean(_honest(rng, 0.1)) for _ in range(40)]
    rounds = [_honest(rng) for _ in range(40)]
    times = [round_time(r, 0.0, NEVER)[0] for r in rounds]
    slow = [list(r) for r in rounds]
    slow[5][3] += 1.0  # 1 ms more in one call of one round: 20x the call
    slow_times = [round_time(r, 0.0, NEVER)[0] for r in slow]
    assert slow_times[5] == pytest.approx(times[5] + 1.0 / CALLS)
    point, low = ratio_with_bound(baseline, times, paired=True)
    slow_point, slow_low = ratio_with_bound(baseline, slow_times, paired=True)
    assert slow_point == pytest.approx(point, rel=0.005) and slow_low == pytest.approx(low, rel=0.01)


def test_the_host_clocks_overhead_is_the_wall_beyond_every_sample() -> None:
    """`per_call_overhead` subtracts the round's work per call: a round with a slow call has the same host
    overhead as one without (v5 subtracted the median and counted the slow call as host time)."""
    samples = [0.05] * (CALLS - 1) + [0.55]
    wall = 2.0 + sum(samples) + CALLS * 0.08  # set-up 2 ms, 0.08 ms of host time per call
    assert per_call_overhead(wall, 2.0, samples) == pytest.approx(0.08)
    clock = HostClock.from_reference([(wall, 2.0, samples)] * 5)
    assert clock.overhead_ms == pytest.approx(0.08)


def test_the_host_clock_still_charges_a_round_beyond_its_samples() -> None:
    """The mean does not replace the clock: samples that claim less than the round's wall allows (forged,
    or work outside every event) are charged by it as before."""
    clock = HostClock(overhead_ms=0.08, margin_ms=0.03)
    claimed = [0.01] * CALLS
    wall = CALLS * (0.25 + 0.08)  # the calls really took 0.25 ms each
    t, charged = round_time(claimed, wall, clock)
    assert charged and t == pytest.approx(0.25 - 0.03)


def test_work_per_call_is_the_rounds_time_in_every_consumer() -> None:
    result = RoundResult(_burst(0.05), 5.0)
    assert result.per_call_ms == pytest.approx(work_per_call(result.samples_ms))
    assert work_per_call([]) != work_per_call([])  # nan: an empty round has no time


# ---- the round's charges: device-wide tail and flush, netted over the round ------------------------------
class _Stamps:
    def __init__(self, flushes: list[float | None]) -> None:
        self.flushes = flushes

    def address(self, slot: int) -> int:
        return 8192 + 16 * slot

    def flush_ms(self) -> list[float | None]:
        return list(self.flushes)


def test_flushes_longer_than_the_calibration_samples_are_charged_to_the_round() -> None:
    calibration, timed = [0, 4, 8], [1, 2, 3, 5, 6, 7]
    flushes: list[float | None] = [0.1] * 9
    assert charge_flushes(_Stamps(flushes), timed, calibration) == (pytest.approx(0.1), 0.0)
    # a copy that shared DRAM with two of the flushes: 12 us and 9 us longer, charged less the slack (2% of
    # the calibrated flush per call: the calibration's own error counts once per call)
    flushes[2], flushes[6] = 0.112, 0.109
    _, charge = charge_flushes(_Stamps(flushes), timed, calibration)
    assert charge == pytest.approx(0.021 - len(timed) * FLUSH_SLACK_SHARE * 0.1)
    # within the slack: a copy that lengthened the round's flushes by under 2% each goes uncharged
    small: list[float | None] = [0.1] * 9
    small[2] = 0.1 + 0.9 * len(timed) * FLUSH_SLACK_SHARE * 0.1
    assert charge_flushes(_Stamps(small), timed, calibration)[1] == 0.0
    # jitter either side nets out over the round (a per-call clip would charge its positive half)
    jitter: list[float | None] = [0.1, 0.1015, 0.0985, 0.1012, 0.1, 0.0988, 0.1, 0.1, 0.1]
    assert charge_flushes(_Stamps(jitter), timed, calibration)[1] == 0.0
    # no stamps (the fallback pad) or a slot the pad never wrote: no measurement, no charge
    assert charge_flushes(None, timed, calibration) == (0.0, 0.0)
    assert charge_flushes(_Stamps([None] * 9), timed, calibration) == (0.0, 0.0)


class _Event:
    """A CUDA event stand-in: `elapsed_time` to another reads the table of (from, to) pairs."""

    def __init__(self, table: dict[tuple[int, int], float], key: int) -> None:
        self.table, self.key = table, key

    def elapsed_time(self, other: _Event) -> float:
        return self.table[(self.key, other.key)]


def _sampler_with_round(events: list[float], tails: list[float], roundtrip: float, flushes: list[float | None]):
    """A bare Sampler whose prepared round's events read as given: calibration slots first (one before every
    three calls and one at the end, as the timed loop places them), timed slots in between."""
    n = len(events)
    timed, calibration, slot = [], [], 0
    for i in range(n):
        if i % sampler_module.CALIBRATE_EVERY == 0:
            calibration.append(slot)
            slot += 1
        timed.append(slot)
        slot += 1
    calibration.append(slot)
    table: dict[tuple[int, int], float] = {}
    made_events = []
    for s in range(slot + 1):
        start, end, after = 3 * s, 3 * s + 1, 3 * s + 2
        if s in timed:
            i = timed.index(s)
            table[(start, end)], table[(end, after)] = events[i], roundtrip + tails[i]
        else:
            table[(start, end)], table[(end, after)] = 0.001, roundtrip
        made_events.append([_Event(table, start), _Event(table, end), _Event(table, after)])

    def loop(plan, timed_out, calibration_out) -> None:
        timed_out.extend(timed)
        calibration_out.extend(calibration)

    made = Sampler.__new__(Sampler)
    made.pad_ms, made.cover_ms = 0.1, 0.0
    made._prepared = sampler_module._Round(n, made_events, 0.0, stamps=_Stamps(flushes))
    made.arg_sets, made._round_copies = [[]], {}
    made.torch = SimpleNamespace(cuda=SimpleNamespace(synchronize=lambda: None))
    made._timed_loop = loop  # type: ignore[method-assign]
    return made, timed, calibration


def test_a_rounds_samples_are_its_events_plus_its_charges_and_sum_to_its_work() -> None:
    events = [0.05, 0.004, 0.004, 0.05, 0.004, 0.004, 0.004, 0.004, 0.004, 0.3]
    tails = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.05]  # 50 us still running after call 10's end
    flushes: list[float | None] = [0.1] * 15
    made, timed, _ = _sampler_with_round(events, tails, 0.01, flushes)
    flushes[timed[0]] = 0.13  # and 30 us of DRAM traffic under call 1's flush
    result = made.round(10)
    tail = 0.05 - 10 * TAIL_RESOLUTION_MS
    flush_charge = 0.03 - 10 * FLUSH_SLACK_SHARE * 0.1
    assert sum(result.samples_ms) == pytest.approx(sum(events) + tail + flush_charge)
    assert result.reply()["escaped_ms"] == pytest.approx(tail) and result.flush_charged_ms == pytest.approx(flush_charge)
    assert result.reply()["flush_ms"] == pytest.approx(0.1)
    assert result.per_call_ms == pytest.approx((sum(events) + tail + flush_charge) / 10)


def test_an_honest_rounds_jitter_in_tail_and_flush_is_not_charged() -> None:
    rng = random.Random(5)
    events = [0.05] * 10
    tails = [rng.uniform(-0.0008, 0.0008) for _ in range(10)]
    flushes: list[float | None] = [0.1 + rng.uniform(-0.0008, 0.0008) for _ in range(15)]
    made, _, _ = _sampler_with_round(events, tails, 0.01, flushes)
    result = made.round(10)
    assert result.samples_ms == pytest.approx(events) and result.flush_charged_ms == 0.0


# ---- class 5: the pad kernel flushes last ----------------------------------------------------------------
def _instructions(ptx: str) -> list[str]:
    body = ptx[ptx.index("{", ptx.index(".entry")) + 1 : ptx.rindex("}")]
    lines = [re.sub(r"//.*", "", line).strip() for line in body.splitlines()]
    return [line for line in lines if line and not line.startswith(".reg")]


def _loops(lines: list[str]) -> list[tuple[int, int]]:
    """(first, last) line of every backward branch's loop: a label and a later `bra` to it."""
    found = []
    for i, line in enumerate(lines):
        target = re.search(r"\bbra(?:\.uni)?\s+(\w+)\s*;", line)
        if target:
            label = next((j for j, other in enumerate(lines) if other == f"{target.group(1)}:"), None)
            if label is not None and label < i:
                found.append((label, i))
    return found


def _flush_loops(lines: list[str]) -> list[tuple[int, int]]:
    return [(a, b) for a, b in _loops(lines) if any(line.startswith("st.global") for line in lines[a : b + 1])]


def _spin_loops(lines: list[str]) -> list[tuple[int, int]]:
    """Loops that read %globaltimer and poll no memory: the spin to the deadline."""
    return [(a, b) for a, b in _loops(lines)
            if any("%globaltimer" in line for line in lines[a : b + 1])
            and not any(line.startswith(("ld.", "atom.")) for line in lines[a : b + 1])]  # fmt: skip


def test_the_pad_kernel_spins_first_and_flushes_last() -> None:
    """Parsed from PAD_PTX: the only loop that reads %globaltimer and no memory (the spin) ends before the
    loops that store (the flush, in two halves) begin, every store is in them, and after the last nothing
    but the hold waits, which stores nothing: the start event follows the last store."""
    assert re.search(r"\.visible\s+\.entry\s+judge_pad_flush\s*\(", PAD_PTX), "coverage treats the name as neutral"
    lines = _instructions(PAD_PTX)
    spins = _spin_loops(lines)
    flushes = _flush_loops(lines)
    assert len(spins) == 1 and len(flushes) == 2 and not set(spins) & set(flushes), (spins, flushes)
    assert spins[0][1] < flushes[0][0], "the flush must come after the spin"
    stores = [i for i, line in enumerate(lines) if line.startswith("st.global")]
    assert all(any(a <= i <= b for a, b in flushes) for i in stores), "every L2-evicting store is in the flush"
    after = lines[flushes[-1][1] + 1 :]
    assert len(_loops(after)) == 1 and after[-1] == "ret;", after  # the hold
    assert not any(line.startswith(("st.global", "prefetch", "ld.global.nc")) for line in after)
    reads = [line for line in after if line.startswith("ld.global") or line.startswith("ld.volatile")]
    assert reads == ["ld.volatile.global.u64 %rd25, [%rd18];"], "the hold reads its counter only"


def _holds_until_every_block_flushed(lines: list[str]) -> bool:
    """After the flush: one counter add per block (thread 0), a wait for the next multiple of the grid
    (nctaid) polling the counter, bounded by PAD_HOLD_TIMEOUT_NS, then every thread at a barrier, then ret."""
    flushes = _flush_loops(lines)
    adds = [i for i, line in enumerate(lines) if line.startswith("atom.global.add.u64")]
    if not flushes or len(adds) != 1 or adds[0] < flushes[-1][1] or "@%p5 bra RELEASE;" not in lines:
        return False
    guard = lines.index("@%p5 bra RELEASE;")
    if not (flushes[-1][1] < guard < adds[0] and "setp.ne.u32 %p5, %r3, 0;" in lines[:guard]):
        return False
    loops = _loops(lines[adds[0] :])
    if len(loops) != 1:
        return False
    first, last = adds[0] + loops[0][0], adds[0] + loops[0][1]
    target = ["cvt.u64.u32 %rd22, %r4;", "div.u64 %rd23, %rd19, %rd22;", "add.u64 %rd23, %rd23, 1;",
              "mul.lo.u64 %rd23, %rd23, %rd22;"]  # fmt: skip
    return (lines[adds[0] + 1 : adds[0] + 5] == target and "mov.u32 %r4, %nctaid.x;" in lines
            and "mov.u32 %r3, %tid.x;" in lines and lines[first] == "HOLD:"
            and "ld.volatile.global.u64 %rd25, [%rd18];" in lines[first:last]
            and f"add.u64 %rd24, %rd24, {PAD_HOLD_TIMEOUT_NS};" in lines[adds[0] : first]
            and lines[last + 1 :] == ["RELEASE:", "barrier.sync 0;", "ret;"])  # fmt: skip


def test_the_pad_kernel_holds_every_block_until_the_whole_flush_is_done() -> None:
    """H200, v6 without the hold: SMs freed as the flush's blocks finished ran a side-stream kernel before
    the start event (11% of it hidden). After the flush every block adds 1 to the launch counter once
    (thread 0), waits there for the next multiple of the grid, and all its threads wait at a barrier for
    it: no block exits before every block of the grid finished its flush."""
    assert _holds_until_every_block_flushed(_instructions(PAD_PTX))


def test_a_pad_without_the_hold_fails_the_parse() -> None:
    """The test can fail: v6 as first run on the H200 (blocks exit right after their flush part), and a
    hold whose thread 0 leaves while the others do not wait (no barrier) are refused."""
    lines = _instructions(PAD_PTX)
    assert not _holds_until_every_block_flushed([*lines[:lines.index("setp.ne.u32 %p5, %r3, 0;")], "ret;"])
    assert not _holds_until_every_block_flushed([*[line for line in lines if line != "RELEASE:"][:-2], "ret;"])


def test_the_pad_kernel_stamps_its_flushs_second_half_between_barriers() -> None:
    """The second half's first start and last end, one atomic each per block and only where stamps were
    given: the earliest block's timer read between the halves, the latest block's after the last store."""
    lines = _instructions(PAD_PTX)
    (_, first_last), (second_first, second_last) = _flush_loops(lines)
    mins = [i for i, line in enumerate(lines) if "atom.global.min.u64" in line]
    maxes = [i for i, line in enumerate(lines) if "atom.global.max.u64" in line]
    assert len(mins) == 1 and len(maxes) == 1
    assert first_last < mins[0] < second_first and maxes[0] > second_last
    barriers = [i for i, line in enumerate(lines) if line.startswith("barrier.sync")]
    assert any(first_last < b < mins[0] for b in barriers) and any(second_last < b < maxes[0] for b in barriers)
    assert lines[mins[0]].startswith("@%p") and lines[maxes[0]].startswith("@%p"), "guarded: thread 0, stamps given"
    halves = [line for line in lines if line.startswith("shr.u64")]
    assert len(halves) == 1 and halves[0].endswith(", 1;"), "the halves split the buffer's 16-byte words in two"


def test_the_old_order_fails_the_parse() -> None:
    """The test can fail: v5's order (the flush, then the spin to the deadline) is refused by the same parse."""
    lines = _instructions(PAD_PTX)
    spin, spin_end = lines.index("SPIN:"), next(i for i, line in enumerate(lines) if "bra SPIN;" in line)
    v5 = lines[:spin] + lines[spin_end + 1 : -1] + lines[spin : spin_end + 1] + ["ret;"]  # spin moved last
    spins = _spin_loops(v5)
    assert len(spins) == 1 and not spins[0][1] < _flush_loops(v5)[0][0]


class _Kernel:
    def __init__(self) -> None:
        self.launches: list[tuple[float, bool, int]] = []

    def launch(self, stream: int, spin_ms: float, flush: bool = True, stamps: int = 0, release: int = 0) -> None:
        self.launches.append((round(spin_ms, 6), flush, stamps))


def test_each_pad_spins_for_the_pad_then_flushes_with_its_stamps() -> None:
    """The sampler's pad: spin `pad + 0.2 x allowance` (v5's nominal length with the flush), then the flush,
    with the slot's stamps; the claim and the cover never flush."""
    made = Sampler.__new__(Sampler)
    made.kernel, made._cudart = _Kernel(), None  # type: ignore[assignment]
    made.stream = SimpleNamespace(cuda_stream=3)
    made.flush_allowance_ms, made.pad_ms = 0.09, 0.3
    made._launch_pad(made.pad_ms, 4096)
    made._launch_cover(0.5)
    made._claim_gpu()
    spin = 0.3 + PAD_SPIN_FLUSH_SHARE * 0.09
    assert made.kernel.launches == [(round(spin, 6), True, 4096), (0.5, False, 0), (0.0, False, 0)]


# ---- the baselines' cache ------------------------------------------------------------------------------
def test_baselines_cached_under_one_protocol_are_never_read_under_another(monkeypatch) -> None:
    """v5 records hold per-round medians, v6 rounds are means, v7 pads wait for the host's release: the cache
    key carries the protocol."""
    from cuda_agent.judge.trusted import baselines

    v6 = baselines.cache_key("task", "env")
    monkeypatch.setattr(baselines, "PROTOCOL_VERSION", "fatpad-devwide-v5")
    assert baselines.cache_key("task", "env") != v6
    assert sampler_module.PROTOCOL_VERSION.endswith("v7")
    # Pads that waited for the host's release and pads that did not are cached apart too.
    assert baselines.cache_key("task", "env", pad_release=True) != baselines.cache_key("task", "env")

