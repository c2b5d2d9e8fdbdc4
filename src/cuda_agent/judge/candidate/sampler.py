"""The timing protocol's sampler (docs/design/timing.md): what one timed sample is, in a worker process.

`Sampler` runs inside a worker process. What one sample is, for every contender alike (candidate, eager,
torch.compile):

0. **the draw** (rounds given seeds), once per round at the start of its timed loop: a spin of the same
   judge kernel with no flush (`cover_ms` per call, one length for every contender), then every call's
   inputs drawn from its seed with the task's own `get_inputs()`: their host time passes while the GPU
   spins, their kernels run after it. The inputs of a timed round so come into existence inside the
   parent's clock around the round, never before it. (Protocol v4 drew each call's inputs right before
   its pad; on the H200 that put host work between one call's device-wide synchronisation and the next
   pad, and the baselines' round-to-round spread, all of it in the charged tail and none in the events,
   rose from 0.5-0.9% to 1.0-4.5%: docs/design/timing.md, measured by a probe now in git history.)
1. **the pad**: one judge kernel on the timing stream that fills every thread slot of every SM, spins to
   a deadline and then writes 256 MB (evicting L2) as its last act (protocol v6; v5 flushed first and
   then spun, and a copy-engine copy run during the spin staged a GEMM's weight into L2 for the call).
   The host enqueues the call while the GPU is busy with it, so the call's host launch overhead, up to
   the pad's length, is hidden -- the reward compares device time, the way a call runs inside a model
   whose GPU queue is full, not the Python launch path. Because the pad occupies the whole GPU, a kernel
   the call launches on another stream cannot run under it. Copy engines are not occupied: what they
   stage during the spin the flush evicts, and what runs during the flush shares DRAM with it and
   lengthens it; the pad writes when its flush's second half starts and ends (`FlushStamps`), and the
   timed calls' flushes beyond the round's calibration samples' are charged to the round.
2. start event; the call; end event (all on the timing stream);
3. a device-wide synchronisation (every stream of the context), then an `after` event. `after - end` is
   the synchronisation's round trip plus any work still running on another stream after `end`; the
   round trip is measured in the same round by calibration samples (the same steps around no call), and
   the round's total beyond it (1 us per call of resolution) is charged to the round. There is no
   host-clock slack.

A round's time per call is its total work over its calls (`work_per_call`: the mean of its charged samples,
protocol v6), so no moving of work between the calls of a round lowers it: work a call queues on the timing
stream runs inside a later call's events, work it leaves on another stream inside its own device-wide
tail, and the round's last synchronisation waits for all of it.

`cover_ms` covers the draw's host time the same way (`measure_draw`, the trusted reference's for everyone,
a contender's own report only lengthening it); the draw's GPU work and the cover lie outside the events,
in every contender's wall alike, so the host clock's calibration on the reference's rounds takes them in.

`pad` covers the contender's own host enqueue time, measured during warm-up with the GPU kept busy (the
parent may set one length for all three); a call that synchronises inside cannot be hidden and is charged
whole. The pad kernel spins `pad + 0.2 x flush allowance` after its start and then flushes, the flush
allowance being what writing the 256 MB takes (nominally `1.2 x allowance + pad` in all, as in v5). Each
sampler measures its own (`flush_ms`), but the parent gives every contender of a judgment the trusted
reference's (`set_pad(pad, flush_ms)`): with its own, each process's v5 pad (flush, then a spin to `1.2 x
allowance + pad`) differed by 1.2 x the difference of two noisy flush measurements, and that much per call
(+0.044 ms median over 56 timed H200 verdicts, -0.035 to +0.215) went into the host clock's comparison of the
candidate's per-call overhead with the reference's, charging honest launch-bound kernels at random. Where
the driver API or the pad kernel is unavailable, the pad is `torch.cuda._sleep` and the flush `zero_()`
after it, unmeasured (`Sampler.pad_kind` says which).

Trust boundary: this module is loaded into the candidate's worker, where it is the candidate's to patch;
the samples it reports there are claims, establishing no fact by themselves. The parent bounds them by its
own clock (`decide/stats.py`: `HostClock`, `round_time`) and times baselines with this same code in the
reference worker, a process that never loaded candidate code, with the candidate's whole process tree
frozen and the GPU verified idle (`trusted/drain.py`). There, and only there, its samples are facts.

The statistics over the rounds (`round_time`, `stat_of`, `median_rse`, `ratio_with_bound`, `HostClock`,
`baseline_spread`, `reward_threshold`) run in the parent and live in `decide/stats.py`.

The pad kernel and the lengths of pad and cover live in pad.py; what a round reports and is charged in
round_result.py.
"""

from __future__ import annotations

import ctypes
import gc
import random
import secrets
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from cuda_agent.judge.candidate.pad import (
    COVER_MAX_MS,
    PAD_MAX_MS,
    PAD_MIN_MS,
    PAD_SPIN_FLUSH_SHARE,
    cover_for,
    flush_buffer,
    pad_for,
    pad_kernel,
    release,
    release_target,
    sleep_cycles_per_ms,
)
from cuda_agent.judge.candidate.round_result import RoundResult, charge_beyond, charge_flushes, work_per_call
from cuda_agent.judge.common.cudart import cuda_runtime

# v3: no GC in a timed loop; v4: inputs drawn in the round; v5: drawn first; v6: a round's time is its work
# over its calls, the pad flushes last, work during the flush charged; v7: the pad waits for the host (pad.py).
PROTOCOL_VERSION = "fatpad-devwide-v7"
WARMUP_MIN_CALLS = 5
WARMUP_MIN_MS = 25.0
COMPILE_WARMUP_CALLS = 3
CALIBRATE_EVERY = 3  # a calibration sample (no call) after every this many timed calls

# sampler.py's public names, pad's and round_result's included that the parent's stages import from here.
__all__ = [
    "COMPILE_WARMUP_CALLS",
    "PROTOCOL_VERSION",
    "RoundResult",
    "Sampler",
    "cover_for",
    "pad_for",
    "work_per_call",
]


@dataclass
class _Round:
    """A round set up before its clock starts: the event slots, and what its calls are called on."""

    samples: int
    events: list[list[Any]]
    setup_ms: float
    calls: list[Any] = field(default_factory=list)  # input sets (drawn before, or rotation copies)
    order: list[int] = field(default_factory=list)  # rotation: which set each call uses
    keep: int = 0  # rotation: the call whose output is kept (`last`)
    keep_all: bool = False  # fresh or drawn inputs: every call's inputs and output are kept (`kept`)
    seeds: list[int] | None = None  # drawn inside the round, one call each
    stamps: Any = None  # FlushStamps: each slot's flush, as its pad measured it (None: not measured)


class Sampler:
    """Times one callable over argument sets on one CUDA stream, by the protocol in the module docstring.

    `draw` (seed -> argument list) makes rounds given seeds draw each call's inputs inside the round."""

    def __init__(self, fn: Callable[..., Any], arg_sets: Sequence[Sequence[Any]], pad_ms: float | None = None,
                 draw: Callable[[int], Sequence[Any]] | None = None, release: bool = False) -> None:  # fmt: skip
        import torch

        self.torch = torch
        self.fn = fn
        self.draw = draw
        self.arg_sets = [list(a) for a in arg_sets]
        self.stream = torch.cuda.current_stream()
        self.flush_buffer = flush_buffer()
        self._next = 0
        self.last: tuple[int, Any] = (-1, None)  # (input set, output) of the kept timed call
        self.kept: list[tuple[Any, Any]] = []  # (inputs, output) of every call of a round with fresh inputs
        self._round_copies: dict[int, list[Any]] = {}
        self._prepared: _Round | None = None  # a round set up by `prepare`
        self._cudart = cuda_runtime()
        if self._cudart is not None:
            self._cudart.cudaDeviceSetLimit(CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE, ctypes.c_size_t(0))
        self.kernel = pad_kernel()
        self.pad_kind = "whole-GPU pad kernel" if self.kernel is not None else "zero_() + torch.cuda._sleep"
        self.flush_ms = self._measure_flush()
        self.flush_allowance_ms = self.flush_ms  # the pad's flush share: the parent sets one for all
        self.host_ms = 0.0
        self.draw_ms = 0.0  # host time of one draw with the GPU busy (`measure_draw`)
        self.pad_ms = pad_ms if pad_ms is not None else PAD_MIN_MS
        self.cover_ms = 0.0
        # Rounds on seeds: the whole round's draws first, under one cover (the protocol), or, to compare on a
        # GPU, each call's draw right before its pad (v4; docs/design/timing.md, "Why the draws come first").
        self.draw_first = True
        self._pad_fixed = pad_ms is not None
        self.release_wanted = release  # v7 (pad.py), asked by its maker or set_pad: pads wait for the host

    release_ok = False  # ... where asked and warm-up saw no synchronisation inside a call (measure_host)

    # ---- the pad ------------------------------------------------------------------------------------
    def _launch_pad(self, pad_ms: float, stamps: int = 0, release: int = 0) -> None:
        """Keep the whole GPU busy for `pad_ms` (and a fifth of the flush allowance), then flush L2, on the
        timing stream: the flush is the last thing before the start event. `stamps`: where the pad writes
        its flush's start and end (FlushStamps); `release`: a target the spin also waits for (pad.py)."""
        if self._cudart is not None:
            # Persisting lines survive ordinary evictions, so they are reset explicitly.
            self._cudart.cudaCtxResetPersistingL2Cache()
        spin_ms = pad_ms + PAD_SPIN_FLUSH_SHARE * self.flush_allowance_ms
        if self.kernel is not None:
            self.kernel.launch(self.stream.cuda_stream, spin_ms, flush=True, stamps=stamps, release=release)
            return
        with self.torch.cuda.stream(self.stream):
            if spin_ms > 0:
                self.torch.cuda._sleep(int(spin_ms * sleep_cycles_per_ms()))
            self.flush_buffer.zero_()

    def _launch_cover(self, cover_ms: float) -> None:
        """Keep the whole GPU busy for `cover_ms` without flushing, on the timing stream: a draw's host
        time passes under it, and its kernels run after it."""
        if cover_ms > 0:
            self._spin(cover_ms)

    def _spin(self, total_ms: float) -> None:
        """The judge kernel with no flush, spinning `total_ms` after its start, on the timing stream."""
        if self.kernel is not None:
            self.kernel.launch(self.stream.cuda_stream, total_ms, flush=False)
            return
        with self.torch.cuda.stream(self.stream):
            self.torch.cuda._sleep(int(total_ms * sleep_cycles_per_ms()))

    def _measure_flush(self) -> float:
        torch = self.torch
        times = []
        for _ in range(5):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record(self.stream)
            if self.kernel is not None:
                self.kernel.launch(self.stream.cuda_stream, 0.0)
            else:
                with torch.cuda.stream(self.stream):
                    self.flush_buffer.zero_()
            b.record(self.stream)
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        return min(times)

    def set_pad(self, pad_ms: float, flush_ms: float | None = None, cover_ms: float | None = None,
                release: bool | None = None) -> None:  # fmt: skip
        """One pad, flush allowance (the reference's), draw cover and release (v7) for every contender of a
        judgment (the parent decides); a missing flush, cover or release: the sampler's own."""
        if release is not None:
            self.release_wanted, self.release_ok = bool(release), bool(release) and getattr(self, "host_ms", 0.0) > 0
        self.pad_ms = min(PAD_MAX_MS, max(PAD_MIN_MS, float(pad_ms)))
        if flush_ms is not None:
            self.flush_allowance_ms = min(PAD_MAX_MS, max(0.0, float(flush_ms)))
        if cover_ms is not None:
            self.cover_ms = min(COVER_MAX_MS, max(0.0, float(cover_ms)))
        self._pad_fixed = True

    def _args(self) -> list[Any]:
        """The next argument set in rotation (warm-up only; timed rounds draw theirs at random)."""
        self._next += 1
        return self.arg_sets[(self._next - 1) % len(self.arg_sets)]

    def warmup(self, min_calls: int = WARMUP_MIN_CALLS, min_ms: float = WARMUP_MIN_MS) -> float:
        """Call until both minimums are met, then measure the host enqueue time and the draw's host time
        (and, unless the parent fixed them, choose the pad and the cover from them). Returns the mean ms
        per call seen during warm-up."""
        torch = self.torch
        calls = 0
        start = time.perf_counter()
        while True:
            with torch.no_grad():
                self.fn(*self._args())
            torch.cuda.synchronize()
            calls += 1
            elapsed = (time.perf_counter() - start) * 1000
            if (calls >= min_calls and elapsed >= min_ms) or calls >= 10_000:
                break
        self.host_ms = self.measure_host()
        self.release_ok = getattr(self, "release_wanted", False) and self.host_ms > 0  # 0: a sync inside
        self.draw_ms = self.measure_draw() if self.draw is not None else 0.0
        if not self._pad_fixed:
            self.pad_ms = pad_for(self.host_ms)
            self.cover_ms = cover_for(self.draw_ms)
        return elapsed / calls

    def measure_host(self, repeats: int = 5) -> float:
        """Median host time to enqueue one call while the GPU is busy with a long pad. A call that waits
        for the GPU inside (a synchronisation) cannot be hidden: it reports 0 and gets the minimum pad."""
        torch = self.torch
        busy_ms = 2 * PAD_MAX_MS
        times = []
        for _ in range(repeats):
            args = self._args()
            torch.cuda.synchronize()
            self._launch_pad(busy_ms)
            began = time.perf_counter()
            with torch.no_grad():
                self.fn(*args)
            times.append((time.perf_counter() - began) * 1000)
            torch.cuda.synchronize()
        host = statistics.median(times)
        return 0.0 if host >= 0.8 * busy_ms else host

    def measure_draw(self, repeats: int = 7) -> float:
        """Median host time of one draw (fresh seeds) while the GPU is busy: what the cover must hide. All
        repeats run under one long spin (their kernels queue behind it), so measuring costs one spin; a
        draw that waits for the GPU inside cannot be hidden: it reports 0 and gets no cover."""
        assert self.draw is not None
        torch = self.torch
        busy_ms = 2 * COVER_MAX_MS
        torch.cuda.synchronize()
        self._launch_cover(busy_ms)
        launched = time.perf_counter()
        times = []
        for _ in range(repeats):
            began = time.perf_counter()
            self.draw(secrets.randbits(62))
            done = time.perf_counter()
            times.append((done - began) * 1000)
            if (done - launched) * 1000 > 0.5 * busy_ms:  # the spin may end before the next one
                break
        torch.cuda.synchronize()
        host = statistics.median(times)
        return 0.0 if host >= 0.4 * busy_ms else host

    def _claim_gpu(self) -> None:
        """One empty launch of the judge kernel (waited for by the caller): the GPU switches to this
        process's context now, in the set-up, and not at the round's first kernel. Candidate and reference
        take turns on the GPU, and the first kernel after the other context's work waits for the switch
        (H200: a probe's 0.10-0.13 ms became 0.29-0.56 ms, trusted/drain.py); every candidate round began
        right after the reference's probes, while the reference's calibration rounds never followed the
        candidate's work, so the switch was in the candidate's clocked wall alone."""
        self._spin(0.0)

    # ---- a round --------------------------------------------------------------------------------------
    def release(self) -> None:
        """Drop the last round's kept inputs and outputs (and rotation copies)."""
        self.kept, self._round_copies = [], {}

    def prepare(self, samples: int) -> float:
        """What a round needs before its first call and that no input decides (the last round's kept
        calls released, CUDA events), done now so that the parent can keep it outside the clock it times the
        round with: set-up charged as per-call cost made an honest candidate look 10-20 us per call slower
        than itself on an H200. Returns the set-up's ms."""
        torch = self.torch
        began = time.perf_counter()
        self.release()
        n_cal = -(-samples // CALIBRATE_EVERY) + 1  # one before every CALIBRATE_EVERY calls, one at the end
        events = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(samples + n_cal)]
        stamps = self.kernel.new_stamps(samples + n_cal) if self.kernel is not None else None
        self._claim_gpu()
        torch.cuda.synchronize()
        setup_ms = (time.perf_counter() - began) * 1000
        self._prepared = _Round(samples, events, setup_ms, stamps=stamps)
        return setup_ms

    def round(self, samples: int, keep: int | None = None, fresh: Sequence[Sequence[Any]] | None = None,
              seeds: Sequence[int] | None = None) -> RoundResult:  # fmt: skip
        """Time `samples` calls, on one of three kinds of input:
        - `seeds` (one per call, needs `draw`): the calls' inputs are drawn inside the round, under the
          cover, all first (`draw_first`, the protocol) or each right before its pad; every call's inputs
          and output are kept (`kept`) for checks chosen afterwards. Nothing of the round's content exists
          before the round.
        - `fresh` (one input set per call, drawn before the round): call i gets `fresh[i]`, all kept.
        - neither: the sampler's own sets in a random order, copied to fresh memory first (outside the timed
          loop), so an output cache keyed on addresses or call order misses; `keep` names the call whose
          output is kept (`last`).
        A round `prepare`d beforehand uses those events (its set-up then outside this call)."""
        calls = len(seeds) if seeds is not None else len(fresh) if fresh is not None else samples
        prepared, self._prepared = self._prepared, None
        if prepared is not None and prepared.samples == calls:
            prepared.setup_ms = 0.0  # made before this call: outside whatever clock brackets it
        else:
            self.prepare(calls)
            prepared, self._prepared = self._prepared, None
        assert prepared is not None
        began = time.perf_counter()
        if seeds is not None:
            if self.draw is None:
                raise RuntimeError("a round on seeds needs the sampler's draw")
            prepared.seeds, prepared.calls, prepared.keep_all = list(seeds), [None] * len(seeds), True
        elif fresh is not None:
            prepared.calls, prepared.keep_all = [list(a) for a in fresh], True
        else:
            prepared.order = [random.randrange(len(self.arg_sets)) for _ in range(samples)]
            self._round_copies = {k: _fresh(self.arg_sets[k]) for k in sorted(set(prepared.order))}
            prepared.calls = [self._round_copies[k] for k in prepared.order]
            prepared.keep = samples - 1 if keep is None else keep
            self.torch.cuda.synchronize()
        prepared.setup_ms += (time.perf_counter() - began) * 1000
        timed: list[int] = []
        calibration: list[int] = []
        # No collection inside the loop (as timeit does): a generation-2 pass over torch's objects costs
        # milliseconds, which would land in one round's host wall at random, in whichever process.
        collecting = gc.isenabled()
        gc.disable()
        host_start = time.perf_counter()
        try:
            self._timed_loop(prepared, timed, calibration)
        finally:
            if collecting:
                gc.enable()
        wall_ms = (time.perf_counter() - host_start) * 1000
        ev = prepared.events
        n = len(timed)
        roundtrip = statistics.median(ev[s][1].elapsed_time(ev[s][2]) for s in calibration)
        events = [ev[s][0].elapsed_time(ev[s][1]) for s in timed]
        # Work still running on any stream after a call's end event (`after - end` beyond the round trip),
        # and work that ran during a pad's flush (a flush longer than the calibration samples'), each over
        # the whole round: only the round's total is charged (`work_per_call`), so per-call jitter nets out.
        tail = charge_beyond([ev[s][1].elapsed_time(ev[s][2]) for s in timed], roundtrip, n)
        flush, flush_charge = charge_flushes(prepared.stamps, timed, calibration)
        charged = [e + (tail + flush_charge) / n for e in events]
        cover = self.cover_ms if prepared.seeds is not None else 0.0
        return RoundResult(charged, wall_ms, events, [tail / n] * n, roundtrip, prepared.setup_ms, self.pad_ms,
                           cover, flush, flush_charge)  # fmt: skip

    def _timed_loop(self, plan: _Round, timed: list[int], calibration: list[int]) -> None:
        """The calls of a round between their pads and events (`round`), filling `timed` and `calibration`
        with the event slots of timed and calibration samples. A round on seeds draws its calls' inputs
        under the cover spin: all of them before the first call (`draw_first`), or each before its pad."""
        torch, stream, ev = self.torch, self.stream, plan.events
        slot = 0
        seeds = plan.seeds
        if seeds is not None and self.draw_first:
            self._launch_cover(self.cover_ms * len(seeds))  # each call's share bounded by COVER_MAX_MS
            plan.calls, seeds = [self.draw(seed) for seed in seeds], None  # type: ignore[misc]
        with torch.no_grad():
            for i, args in enumerate(plan.calls):
                if i % CALIBRATE_EVERY == 0:
                    calibration.append(slot)
                    self._calibration_sample(ev[slot], _stamp_address(plan.stamps, slot))
                    slot += 1
                if seeds is not None:
                    self._launch_cover(self.cover_ms)
                    args = self.draw(seeds[i])  # type: ignore[misc]
                start, end, after = ev[slot]
                target = release_target(self.kernel, self.release_ok)
                self._launch_pad(self.pad_ms, _stamp_address(plan.stamps, slot), target)
                start.record(stream)
                result = self.fn(*args)
                end.record(stream)
                release(self.kernel, target)  # the call is enqueued: its host time is over before the flush
                torch.cuda.synchronize()  # device-wide: every stream of this context
                after.record(stream)
                timed.append(slot)
                slot += 1
                if plan.keep_all:
                    self.kept.append((args, result))
                elif i == plan.keep:
                    self.last = (plan.order[i], result)
                del result
            calibration.append(slot)
            self._calibration_sample(ev[slot], _stamp_address(plan.stamps, slot))
            torch.cuda.synchronize()

    def _calibration_sample(self, events: list[Any], stamps: int = 0) -> None:
        """The same steps as a timed sample around no call: measures the synchronisation round trip and
        the pad's flush with nothing else on the GPU."""
        start, end, after = events
        target = release_target(self.kernel, self.release_ok)
        self._launch_pad(self.pad_ms, stamps, target)
        start.record(self.stream)
        end.record(self.stream)
        release(self.kernel, target)
        self.torch.cuda.synchronize()
        after.record(self.stream)


CUDA_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06


def _stamp_address(stamps: Any, slot: int) -> int:
    return stamps.address(slot) if stamps is not None else 0


def _fresh(args: list[Any]) -> list[Any]:
    return [a.clone() if hasattr(a, "clone") and hasattr(a, "is_cuda") else a for a in args]


