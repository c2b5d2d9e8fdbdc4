"""The timing protocol on a real GPU (timing.py): the whole-GPU pad, work on other streams, host launch
overhead, A/A, the drain probe that guards baseline timing, and protocol v6 (issue 33: work moved between
a round's calls, L2 staged during the pad). Run on the device machine."""

from __future__ import annotations

import signal
import statistics
import subprocess
import sys
import time

import pytest

from tests.benchmark_module import load_benchmark

pytestmark = pytest.mark.gpu

SLEEP_CYCLES = 400_000  # torch.cuda._sleep: about 0.2-0.3 ms on an H200


def _median(sampler, rounds: int = 4, samples: int = 10) -> float:
    """The median over rounds of each round's time per call (its work over its calls, protocol v6)."""
    return statistics.median(sampler.round(samples).per_call_ms for _ in range(rounds))


def _sleep_ms() -> float:
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    sampler = Sampler(lambda: torch.cuda._sleep(SLEEP_CYCLES), [[]])
    sampler.warmup()
    return _median(sampler)


def test_pad_kernel_fills_every_sm() -> None:
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    sampler = Sampler(lambda: None, [[]])
    assert sampler.kernel is not None, "the whole-GPU pad kernel did not load (driver API unavailable?)"
    assert sampler.kernel.blocks_per_sm * 1024 >= torch.cuda.get_device_properties(0).max_threads_per_multi_processor
    assert 0.02 < sampler.flush_ms < 1.0  # 256 MB written at several TB/s


def test_side_stream_work_cannot_hide_under_the_flush() -> None:
    """Work on a private stream that does not wait for the timing stream, joined at the end: with the
    pad filling every SM it cannot start before the start event, so it is charged in full. The same
    call timed behind an ordinary flush (zero_ + a one-thread sleep) hides most of it: the test can fail."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    side = torch.cuda.Stream()

    def call() -> None:
        with torch.cuda.stream(side):
            torch.cuda._sleep(SLEEP_CYCLES)
        torch.cuda.current_stream().wait_stream(side)

    alone = _sleep_ms()
    sampler = Sampler(call, [[]], pad_ms=0.5)
    sampler.warmup()
    fair = _median(sampler)
    assert fair >= 0.9 * alone, (fair, alone)
    naive = Sampler(call, [[]], pad_ms=0.5)
    naive.kernel = None  # an ordinary flush and a one-thread pad leave SMs free
    naive.warmup()
    hidden = _median(naive)
    assert hidden < 0.5 * alone, f"the naive protocol should have been fooled ({hidden} vs {alone})"


def test_unjoined_side_stream_tail_is_charged() -> None:
    """Work left running on another stream after the end event is charged (device-wide `after` event)."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    side = torch.cuda.Stream()

    def call() -> None:
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            torch.cuda._sleep(SLEEP_CYCLES)  # never joined back

    alone = _sleep_ms()
    sampler = Sampler(call, [[]])
    sampler.warmup()
    result = sampler.round(10)
    assert statistics.median(result.events_ms) < 0.2 * alone  # the events alone see nothing
    assert statistics.median(result.samples_ms) >= 0.9 * alone
    assert sum(result.escaped_ms) > 0


def test_host_launch_overhead_is_hidden_up_to_the_pad() -> None:
    """A call that spends 150 us on the host before launching a tiny kernel is timed by the kernel."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    x = torch.zeros(1024, device="cuda")

    def call() -> None:
        end = time.perf_counter() + 150e-6
        while time.perf_counter() < end:
            pass
        x.add_(1)

    sampler = Sampler(call, [[]])
    sampler.warmup()
    assert sampler.host_ms >= 0.14
    assert sampler.pad_ms > sampler.host_ms
    assert _median(sampler) < 0.05  # the kernel, not the host path


def test_a_host_slower_than_at_warm_up_is_still_hidden_by_the_release() -> None:
    """Protocol v7: the pad is sized at warm-up (150 us of host work a call), then the host gets slower (600
    us a call, a busy machine). The pad waits for the host's release, so the events still time the kernel;
    with the release off (v6) the extra host time lands in the events. H200, 2026-12-04: the case behind
    row_softmax's flipping reward (torch.compile's enqueue measured at 0.07 ms, 0.21 ms in the rounds)."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    x = torch.zeros(1024, device="cuda")
    host_us = [150e-6]

    def call() -> None:
        end = time.perf_counter() + host_us[0]
        while time.perf_counter() < end:
            pass
        x.add_(1)

    sampler = Sampler(call, [[]], release=True)
    sampler.warmup()
    assert sampler.release_ok and sampler.kernel is not None and sampler.kernel.release is not None
    assert sampler.pad_ms < 0.5
    host_us[0] = 600e-6
    assert _median(sampler) < 0.05, "the release hides host time beyond the pad"
    sampler.release_ok = False  # v6: the pad's measured length only
    assert _median(sampler) > 0.2, "without the release the late host shows in the events (the test can fail)"


def test_a_call_that_synchronises_inside_gets_no_release_and_no_stall() -> None:
    """A call that waits for the GPU inside would wait for its own pad's release: it gets none, and a round
    of 10 such calls ends in well under the release's bound per call."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    x = torch.zeros(1024, device="cuda")

    def call() -> float:
        x.add_(1)
        return float(x[0].item())  # a synchronisation inside the call

    sampler = Sampler(call, [[]], release=True)
    sampler.warmup()
    assert not sampler.release_ok
    began = time.perf_counter()
    sampler.round(10)
    assert time.perf_counter() - began < 0.05


def test_a_a_same_kernel_twice_agrees_within_two_percent() -> None:
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    x = torch.randn(4096, 4096, device="cuda")
    a, b = Sampler(lambda t: t * 1.5 + 0.25, [[x]]), Sampler(lambda t: t * 1.5 + 0.25, [[x]])
    a.warmup()
    b.warmup()
    pad = max(a.pad_ms, b.pad_ms)
    a.set_pad(pad)
    b.set_pad(pad)
    ratios = []
    for _ in range(8):
        ratios.append(a.round(10).per_call_ms / b.round(10).per_call_ms)
    assert abs(statistics.median(ratios) - 1) <= 0.02, ratios


def test_drain_probe_sees_another_process_keep_the_gpu_busy() -> None:
    """GPU work a frozen candidate left queued is seen until it has run. The helper queues about 1.5 s of
    back-to-back kernels and is then stopped (SIGSTOP, as the freezer stops a candidate's tree), so nothing
    of it runs on the host any more and only its queued GPU work remains.

    The helper used to run its kernels one at a time with a synchronisation between them, which is not the
    hazard: on an H100 (2026-12-07) two probes fell in one of its host gaps and the drain passed after 389 ms
    of busy probes. A frozen process's queue has no host gaps."""
    from cuda_agent.judge.trusted.drain import drain_probe

    idle = drain_probe(None, timeout_s=2.0)
    assert idle["drained"] and idle["busy_ms"] < 5, idle
    busy_code = (
        "import torch\n"
        "torch.cuda.init(); torch.cuda.synchronize()\n"
        "for _ in range(600):\n"
        "    torch.cuda._sleep(5_000_000)\n"  # ~2.5 ms each at ~2 GHz: ~1.5 s queued in all
        "print('ready', flush=True)\n"
        "torch.cuda.synchronize()\n"
    )
    helper = subprocess.Popen([sys.executable, "-c", busy_code], stdout=subprocess.PIPE, text=True)
    try:
        assert helper.stdout is not None and helper.stdout.readline().strip() == "ready"
        helper.send_signal(signal.SIGSTOP)
        seen = drain_probe(idle["idle_ms"], timeout_s=1.0)
        assert not seen["drained"], seen
        after = drain_probe(idle["idle_ms"], timeout_s=5.0)  # the queue runs out while the helper is stopped
        assert after["drained"] and after["busy_ms"] > 0, after
    finally:
        helper.send_signal(signal.SIGCONT)
        helper.wait(timeout=30)


def test_a_context_switch_is_not_charged_but_another_contexts_work_is() -> None:
    """The drain allows its first probe the calibrated switch from another (idle) context: an H200 charged
    0.3-0.6 ms per drain to every honest candidate before. Work that context leaves behind is charged."""
    import torch

    from cuda_agent.judge.trusted.drain import GpuDrain, _SecondContext

    drain = GpuDrain()
    assert drain.switch_ms > 0, drain.calibration
    other = _SecondContext(torch.cuda.current_device())
    try:
        # The first switches after a context is made are slower (H200: a calibration's first sample 0.37 ms
        # against 0.23 for the rest; one such drain was charged 0.30 ms here): a judgment's drains meet
        # contexts that ran for seconds, so the new context is switched to and from a few times first.
        for _ in range(3):
            other.run_kernel()
            drain(timeout_s=2.0)
        charged = []
        for _ in range(5):
            other.run_kernel()  # finished: nothing left behind
            got = drain(timeout_s=2.0)
            assert got["drained"], (got, drain.calibration)
            charged.append(got["busy_ms"])
        # The switch's tail beyond a 12-sample calibration: <= 1% of drains on the H200, <= 0.1 ms each
        # (benchmarks/drain_switch_tail.py, 1200 switches). One such drain in five is allowed, no more.
        assert sum(b > 0 for b in charged) <= 1 and max(charged) < 0.2, (charged, drain.calibration)
        # 3 ms of work left running in the other context when the drain starts: charged (most of it).
        lib = other.lib
        assert lib.cuCtxPushCurrent_v2(other.ctx) == 0
        try:
            import ctypes

            arg = ctypes.c_uint64(3_000_000)
            params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p))
            assert lib.cuLaunchKernel(other.func, 1, 1, 1, 32, 1, 1, 0, None, params, None) == 0
        finally:
            other._pop()
        got = drain(timeout_s=2.0)
        assert got["drained"] and got["busy_ms"] > 1.5, (got, drain.calibration)
    finally:
        other.close()


def test_fresh_compile_builds_are_distinct_and_timed() -> None:
    """Each torch.compile build of the reference worker compiles afresh and stays valid."""
    import torch

    from cuda_agent.judge.trusted.reference_worker import compile_build, fresh_compiles

    model = torch.nn.Sequential(torch.nn.Linear(256, 256), torch.nn.GELU()).cuda().eval()
    x = torch.randn(64, 256, device="cuda")
    fresh_compiles()
    builds = [compile_build(model, k) for k in range(2)]
    with torch.no_grad():
        outs = [b(x) for b in builds]
        expected = model(x)
    for out in outs:
        torch.testing.assert_close(out, expected, atol=1e-4, rtol=1e-4)
    codes = {(getattr(b, "_torchdynamo_orig_callable", None) or b.__wrapped__).__code__ for b in builds}
    assert len(codes) == 2


def _seeded_samplers(fn_honest, fn_cheat, draw_honest, draw_cheat):
    """Two samplers drawing their inputs inside the round, with one pad, flush allowance and cover."""
    from cuda_agent.judge.candidate.sampler import Sampler, cover_for

    first = draw_honest(1)
    honest = Sampler(fn_honest, [first], draw=draw_honest)
    cheat = Sampler(fn_cheat, [first], draw=draw_cheat)
    for sampler in (honest, cheat):
        sampler.warmup()
    pad = max(honest.pad_ms, cheat.pad_ms)
    cover = cover_for(honest.draw_ms)
    for sampler in (honest, cheat):
        sampler.set_pad(pad, honest.flush_ms, cover)
    return honest, cheat


def test_work_done_at_the_draw_is_inside_the_host_clock() -> None:
    """The set-up gap of issue 12, closed: a timed call's inputs are drawn inside its round, so a candidate
    that computes the output the moment the inputs exist (a patched draw) does that work inside the parent's
    clock. Its samples say ~0 (the timed call only hands the output back); the host clock, calibrated on
    honest rounds of the same draw, charges the work back. Drawn before the round, as the judge did until
    2026-12-02, the same trick was free (the `fresh` rounds below: the clock sees nothing)."""
    import secrets

    import torch

    from cuda_agent.judge.decide.stats import HostClock, per_call_overhead, round_time

    n = 64 << 20  # 256 MB: the gelu is ~0.15 ms, well past launch overhead and the clock's margin

    def draw(seed: int) -> list:
        g = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(n, device="cuda", generator=g)]

    made: dict[int, torch.Tensor] = {}

    def draw_and_precompute(seed: int) -> list:
        inputs = draw(seed)
        made[id(inputs[0])] = torch.nn.functional.gelu(inputs[0])  # the patched draw does the work here
        return inputs

    def hand_back(x: torch.Tensor) -> torch.Tensor:
        ready = made.pop(id(x), None)  # warm-up sets were not drawn by the patched draw
        return ready if ready is not None else torch.nn.functional.gelu(x)

    honest, cheat = _seeded_samplers(torch.nn.functional.gelu, hand_back, draw, draw_and_precompute)
    assert honest.draw_ms > 0 and honest.cover_ms > honest.draw_ms
    reference = []
    for _ in range(6):
        result = honest.round(10, seeds=[secrets.randbits(62) for _ in range(10)])
        reference.append((result.wall_ms, result.setup_ms, result.samples_ms))
        honest.release()
    clock = HostClock.from_reference(reference)
    true_ms = statistics.median(statistics.median(s) for _, _, s in reference)
    charged, claimed = [], []
    for _ in range(6):
        result = cheat.round(10, seeds=[secrets.randbits(62) for _ in range(10)])
        t, _ = round_time(result.samples_ms, result.wall_ms, clock)
        charged.append(t)
        claimed.append(statistics.median(result.samples_ms))
        cheat.release()
    assert statistics.median(claimed) < 0.3 * true_ms, (claimed, true_ms)  # the samples alone are fooled
    # charged back to within the clock's margin (its bound is wall / calls - overhead - margin)
    assert statistics.median(charged) >= 0.9 * true_ms - clock.margin_ms, (charged, true_ms, clock)
    # Drawn before the round instead (the old protocol), the precomputation is outside the clock.
    free = []
    for _ in range(4):
        sets = [draw_and_precompute(secrets.randbits(62)) for _ in range(10)]
        torch.cuda.synchronize()
        result = cheat.round(10, fresh=sets)
        free.append(round_time(result.samples_ms, result.wall_ms, clock)[0])
        overhead = per_call_overhead(result.wall_ms, 0.0, result.samples_ms)
        cheat.release()
    assert statistics.median(free) < 0.3 * true_ms, (free, true_ms, overhead)


def test_the_cover_hides_the_draws_host_time() -> None:
    """A draw that spends 300 us on the host before its kernels: inside the round, under the cover, the
    per-call overhead the host clock compares stays as steady as with inputs drawn before the round."""
    import secrets

    import torch

    from cuda_agent.judge.decide.stats import per_call_overhead

    x0 = torch.randn(1 << 20, device="cuda")

    def draw(seed: int) -> list:
        end = time.perf_counter() + 300e-6
        while time.perf_counter() < end:
            pass
        return [x0 + (seed % 7)]

    sampler, _ = _seeded_samplers(torch.relu, torch.relu, draw, draw)
    assert sampler.draw_ms >= 0.28 and sampler.cover_ms >= 1.25 * 0.28
    seeded, fresh = [], []
    for _ in range(12):
        r = sampler.round(10, seeds=[secrets.randbits(62) for _ in range(10)])
        seeded.append((r.wall_ms, r.setup_ms, r.samples_ms))
        sets = [draw(secrets.randbits(62)) for _ in range(10)]
        r = sampler.round(10, fresh=sets)
        fresh.append((r.wall_ms, r.setup_ms, r.samples_ms))
    # The per-call overhead's own spread (the margin before its floor, decide/stats.py).
    def spread(rounds: list) -> float:
        per_call = [per_call_overhead(wall, setup, s) for wall, setup, s in rounds]
        centre = statistics.median(per_call)
        return 3 * 1.4826 * statistics.median(abs(x - centre) for x in per_call)

    covered, before = spread(seeded), spread(fresh)
    assert covered <= max(2.5 * before, 0.02), (covered, before)


# ---- protocol v6 (issue 33) ----------------------------------------------------------------------------------
def test_work_moved_between_the_calls_of_a_round_is_timed_by_the_rounds_work() -> None:
    """Class 4: call 1 of a burst computes, calls 2-9 queue behind a 4 us marker, call 10 runs the nine in
    one batched launch. The median sample (v5) is the marker; the round's work per call is the kernel's.
    (The probe also checks that the burst's outputs are complete when its round ends.)"""
    probe = load_benchmark("timing_round_redistribution")
    result = probe.cheat_part(probe.Kernels(), rounds=8, samples=10)
    assert result["burst_over_honest_median"] < 0.5, result  # the test can fail: v5's statistic is fooled
    assert result["burst_over_honest_mean"] >= 0.97, result


def test_a_copy_staged_during_the_pad_is_evicted_by_the_flush() -> None:
    """Class 5: a copy-engine copy of a GEMV's 24 MiB weight, issued by the call (it runs during the pad).
    With v5's pad (flush, then spin) it warms L2 for the call; with v6's (spin, then flush) it is evicted
    and the call reads the weight as cold as an honest one. A copy timed to end with the pad runs during
    v6's flush: what it stages there is charged through the flush's stamps. (A GEMM of a 16 MiB weight,
    0.024 ms on the H200, was not bound by its weight read: v5 was not fooled, 1.06x, and the test showed
    nothing; the `warm` row, the call after a pad without flush, checks the subject first.)"""
    probe = load_benchmark("timing_l2_staging")
    result = probe.run(rounds=10, samples=10, weight_mib=24, k=4096)
    row = {(r["variant"], r["pad"]): r for r in result["rows"]}
    for variant in ("stage at issue", "stage at pad end", "stage mid-flush", "side prefetch"):
        assert row[(variant, "v6")]["ratio_charged"] >= 0.95, (variant, result)
    assert row[("honest", "v6")]["flush_ms"] > 0.02, result  # the stamps were written and read
    # Whether this GPU makes the probe a subject at all: the weight in L2 must be worth something, and v5's
    # pad must be fooled by it. On an H200 both held; on an H100 (2026-12-07) the GEMV read its 24 MiB
    # weight only 9% faster from L2 (0.91) and every staging copy cost more than it saved under either pad
    # (1.9-2.4x charged), so there v6's rows above are all the test can show.
    warm, fooled = row[("honest", "warm")]["ratio_charged"], row[("stage at issue", "v5")]["ratio_charged"]
    if warm >= 0.8:
        pytest.xfail(f"the weight in L2 is worth too little on this GPU ({warm:.2f} of a cold read) to fool v5")
    assert fooled < 0.9, result  # the test can fail: v5 is fooled where L2 pays


def test_an_honest_rounds_flushes_are_not_charged() -> None:
    """Nothing of an honest call runs during its pads: its flushes are the calibration samples' and the
    round is charged nothing for them (a few rounds in 20 at most, by jitter beyond the slack, 2% of the
    flush per call, and then little)."""
    import torch

    from cuda_agent.judge.candidate.sampler import Sampler

    x = torch.randn(4096, 4096, device="cuda")
    sampler = Sampler(lambda t: t * 1.5 + 0.25, [[x]])
    sampler.warmup()
    results = [sampler.round(10) for _ in range(20)]
    assert all(r.flush_ms > 0.02 for r in results), [r.flush_ms for r in results]
    charged = [r.flush_charged_ms for r in results]
    assert sum(c > 0 for c in charged) <= 5 and max(charged) / 10 < 0.005, charged
    assert all(r.per_call_ms == pytest.approx(statistics.fmean(r.samples_ms)) for r in results)
