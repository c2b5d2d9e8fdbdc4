"""The judgment's timing stage: interleaved rounds, baselines in a frozen window, the parent's clock.

Runs in the parent. Facts it establishes: the candidate's time per call (its samples are claims, bounded
by the host clock around each round -- from the parent's writing the command to the kernel's stamp on the
reply, common/channel.py -- `round_time` and `HostClock`, with GPU work it left
running after a round charged to it; the round's inputs are drawn inside that clock, from seeds sent with
the command, so no work on them can happen before it starts), the eager and torch.compile baselines (timed by the reference
worker, with the candidate's whole process tree frozen and the GPU verified idle, `baselines_window`),
cached baselines only under an HMAC whose key the candidate never sees (trusted/authkey.py), and the
speedups with their lower confidence bounds. A speedup too good to believe is re-timed strictly.
"""

from __future__ import annotations

import contextlib
import secrets
import statistics
import time
from collections.abc import Iterator
from typing import Any

from cuda_agent.judge.candidate.sampler import PROTOCOL_VERSION, pad_for, work_per_call
from cuda_agent.judge.common.channel import WorkerHandle
from cuda_agent.judge.config import DEFAULT_COMPILE_BUILDS
from cuda_agent.judge.decide.calls import _finite, _thread_count
from cuda_agent.judge.decide.observed_timing import observed_gap, round_busy_ms
from cuda_agent.judge.decide.sequential import BOOTSTRAP_ALPHA
from cuda_agent.judge.decide.stats import (
    HostClock,
    baseline_spread,
    median_rse,
    ratio_with_bound,
    reward_threshold,
    round_time,
    stat_of,
    trace_probability,
)
from cuda_agent.judge.decide.timing_figures import (
    draw_cover,
    excess_by_round,
    flush_allowance,
    judgment_clock,
    overhead_split,
    own_overheads,
    running_decisions,
    sequential_decisions,
    split_medians,
)
from cuda_agent.judge.decide.verdict import Status, Timing
from cuda_agent.judge.trusted.authkey import judge_key
from cuda_agent.judge.trusted.baselines import BaselineCache, BaselineRecord, cache_key
from cuda_agent.judge.trusted.freeze import FreezeFailed, ProcessTree


class TimingStage:
    """The timing stage (mixed into `Judgment`)."""

    def time(self, ref: WorkerHandle, cand: WorkerHandle) -> Timing:
        """Interleaved rounds of candidate, eager and torch.compile, by the protocol of candidate/sampler.py: device
        time with host launch overhead hidden by one pad for all three, every stream of the context
        waited for, the parent's clock as a bound on every round, work still running after a candidate
        round charged to it, baselines timed with the candidate's process tree frozen on an idle GPU."""
        start = time.monotonic()
        tc = self.config.timing
        assert self.environment is not None
        secret, where = judge_key(self.candidate_separate_user)
        cache = BaselineCache(self.config.cache_dir, secret=secret)
        round_calls = self.round_plan.calls if self.round_plan.reduced else None  # a round of another size
        builds = None if tc.compile_builds == DEFAULT_COMPILE_BUILDS else tc.compile_builds  # default: old names
        key = cache_key(self.task.digest, self.environment.key(), tc.compile_mode, tc.pad_release, round_calls, builds)
        cached = cache.get(key)
        self.checks["baseline_cache"] = {"authenticated_by": where, "refused_records": cache.rejected}
        with self.timed("timing_setup"):
            setup = self._candidate_call(
                cand, "time_setup", self.config.timing_timeout_s, "warm-up before timing", **self.warmup_args()
            )  # fmt: skip
        # Warm-up may start the runtime's own threads (seen: +3 on an H200): count from here on.
        self.threads_after_load = max(self.threads_after_load, _thread_count(cand.pid))
        self.check_memory_at_rest(ref, cand)  # before the reference's warm-ups and rounds need the GPU
        hosts = {"candidate": _finite(setup.get("host_ms"))}
        builds_ms: list[float] = []
        if cached is None:
            # `baseline_setup`: the compile builds and warm-ups, inside the frozen window (on a cold task
            # most of the lane: 5.6 s of 11.7 s at the median of 33 cases, H200, 2026-12-04).
            with self.baselines_window(cand, ref), self.timed("baseline_setup"):
                made = self._reference_call(
                    ref, "time_setup", self.config.compile_baseline_timeout_s, modes=["eager", "compile"],
                    compile_builds=tc.compile_builds, build_windows=tc.build_windows,
                    samples=self.round_plan.calls, compile_mode=tc.compile_mode, release=tc.pad_release,
                )  # fmt: skip
            hosts.update({k: _finite(v) for k, v in made["host_ms"].items()})
            builds_ms = [float(x) for x in made["compile_builds_ms"]]
            pad = pad_for(max(hosts.values()))
        else:
            builds_ms = list(cached.compile_builds_ms)
            pad = max(cached.pad_ms, pad_for(hosts["candidate"]))  # never shorter than the baselines had
            # Eager rounds for the host clock only (see `_clock_round`); the pad as the candidate's.
            with self.timed("baseline_setup"):
                made = self._reference_call(ref, "clock_setup", self.config.compile_baseline_timeout_s, pad_ms=pad)
        # The reference's flush allowance for every contender's pad (candidate/sampler.py): each process's
        # own made the pads, and so the per-call overheads the host clock compares, differ by its noise.
        # One cover for every contender's draws too: the reference's draw time, or the candidate's claim
        # where that is longer (a longer cover only lengthens every contender's walls alike).
        flush = flush_allowance(made)
        draws, cover = draw_cover(made, setup)
        self._reference_call(ref, "time_pad", 60, pad_ms=pad, flush_ms=flush, cover_ms=cover, release=tc.pad_release)
        self._candidate_call(cand, "time_pad", 60, "setting the timing pad", pad_ms=pad, flush_ms=flush,
                             cover_ms=cover, release=tc.pad_release)  # fmt: skip
        rounds: dict[str, list[list[float]]] = {"candidate": [], "eager": [], "compile": []}
        walls: dict[str, list[float]] = {"candidate": [], "eager": [], "compile": []}
        reference_rounds: list[tuple[float, float, list[float]]] = []  # eager ones: for the HostClock
        outstanding_ms = 0.0  # GPU work found running after candidate rounds, charged to them
        escaped_ms = 0.0  # work the candidate worker itself reported past its end events
        flush_work_ms = 0.0  # and during its pads' flushes (a copy staging L2 for the call, v6)
        traced_rounds = 0
        traced_busy: list[float] = []  # device busy ms per call of each traced round
        owed_trace = False  # timing is done but fewer than min_traced_rounds were traced: the next ones are
        trace_p = trace_probability(None, tc, self.round_plan.calls)  # most rounds measure
        after_frozen: list[int] = []  # timed rounds that followed a frozen window (diagnostics)
        # Diagnostics: where each contender's per-call host overhead goes (`overhead_split`). The compiled baseline
        # runs in the reference's process: an offset between its rounds and eager's is the callable's, not
        # the process's.
        split: dict[str, list[tuple[float, float, float]]] = {"candidate": [], "reference": [], "reference_compile": []}
        froze_last = False
        decided_early = False  # both rewards' questions answered by the confidence sequence (tc.sequential)
        # Early stops only against cached baselines: a judgment that measures them runs the full budget,
        # because its baseline rounds are cached and become the baseline of every later judgment of the
        # task (stopped at 9 rounds, they would make every later reward of the task noisier).
        sequential = tc.sequential and cached is not None
        while True:
            share = 1.0 if owed_trace else trace_p
            round_began = time.monotonic()
            reply, samples, wall_ms, traced = self._candidate_round(cand, ref, "timing", trace_share=share)
            part = "traced_rounds" if traced else "timed_rounds"  # set-up + round, for finding slow spots
            self.stages[part] = self.stages.get(part, 0.0) + time.monotonic() - round_began
            if traced:
                # Coverage evidence, not a measurement (tracing costs time): its samples are not used, its
                # outputs are checked at the same secret share as any round's (wrong outputs are what the
                # checks look for, in any round), and the window after it only measures leftovers.
                with self.baselines_window(cand, ref, freeze=False):
                    pass
                self.check_round(ref, cand, self.config.timed_check_share)
                self.gate_timed_round(reply, len(samples))
                if (busy := round_busy_ms(reply, len(samples))) is not None:
                    traced_busy.append(busy)  # compared with untraced rounds below (observed_timing.py)
                traced_rounds += 1
                if owed_trace and traced_rounds >= tc.min_traced_rounds:
                    break
                froze_last = False
                continue
            escaped_ms += _finite(reply.get("escaped_ms"))
            flush_work_ms += _finite(reply.get("flush_charged_ms"))
            split["candidate"].append(overhead_split(reply, wall_ms, samples))
            n = len(rounds["candidate"])  # timed rounds before this one
            clock_round = cached is not None and (n < tc.clock_rounds_first or n % tc.clock_round_every == 0)
            if froze_last:
                after_frozen.append(n)
            froze_last = cached is None or clock_round
            with self.baselines_window(cand, ref, freeze=froze_last) as busy_ms:
                # Work of the candidate's still on the GPU after its round: its calls' cost.
                outstanding_ms += busy_ms
                samples = [s + busy_ms / len(samples) for s in samples]
                rounds["candidate"].append(samples)
                walls["candidate"].append(wall_ms + busy_ms)
                baseline_began = time.monotonic()  # `baseline_rounds`: a cold task's eager and compile rounds
                for who in ([] if cached else ["eager", "compile"]):
                    reply = self._reference_call(ref, "time_round", self.config.timing_timeout_s, mode=who,
                                                 samples=self.round_plan.calls)  # fmt: skip
                    wall_ms = self._round_wall(ref)
                    got = self._samples(who, reply, wall_ms)
                    rounds[who].append(got)
                    walls[who].append(wall_ms)
                    split["reference" if who == "eager" else "reference_compile"].append(overhead_split(reply, wall_ms, got))
                    if who == "eager":
                        reference_rounds.append((wall_ms, _finite(reply.get("setup_ms")), got))
                if not cached:
                    self.stages["baseline_rounds"] = self.stages.get("baseline_rounds", 0.0) + time.monotonic() - baseline_began
                if clock_round:
                    reference_rounds.append(self._clock_round(ref))
            trace_p = trace_probability(statistics.median(sum(r) for r in rounds["candidate"]), tc, self.round_plan.calls)
            # The first round is always checked, later ones at random (the candidate cannot tell which),
            # and the last one before timing ends.
            checked = self.check_round(ref, cand, 1.0 if len(rounds["candidate"]) == 1 else self.config.timed_check_share)
            contenders = ["candidate"] if cached else ["candidate", "eager", "compile"]
            if sequential and not decided_early and len(rounds["candidate"]) >= tc.sequential_min_rounds:
                running = running_decisions(rounds, walls, cached, reference_rounds)
                decided_early = all(d.answer != "open" for d in running.values())
            if len(rounds["candidate"]) >= tc.max_rounds or decided_early or self._timing_done(rounds, contenders):
                if not checked:
                    self.check_round(ref, cand)
                if traced_rounds >= tc.min_traced_rounds:
                    break
                owed_trace = True
        self.checks["traced_timed_rounds"] = traced_rounds
        gap = observed_gap(traced_busy, rounds["candidate"], tc)  # traced calls against untraced ones
        self.checks["observed_timing"] = gap.summary()
        if gap.refused:
            raise self.fail(Status.REJECTED, gap.reason())
        # The last round's settings check (the others ran in the next round's set-up, off the clock).
        self._candidate_call(cand, "check_after_timing", 60, "the check after timing")
        self.check_leftovers(cand, "timing")
        if cached is None:
            self.host_clock = HostClock.from_reference(reference_rounds)
            # The reference is trusted: its rounds are their samples' work per call (the mean, v6). The host
            # clock is there to catch forged or escaped work; on the baselines it only added this host's
            # jitter to their rounds and spread (reward thresholds of 1.11-1.15 instead of ~1.06 on an H200).
            eager_rounds = [work_per_call(r) for r in rounds["eager"]]
            compile_rounds = [work_per_call(r) for r in rounds["compile"]]
            cached = BaselineRecord(
                eager_samples=[s for r in rounds["eager"] for s in r],
                compile_samples=[s for r in rounds["compile"] for s in r],
                eager_rounds=eager_rounds, compile_rounds=compile_rounds,
                overhead_ms=self.host_clock.overhead_ms, overhead_margin_ms=self.host_clock.margin_ms,
                compile_builds_ms=builds_ms, eager_spread=baseline_spread(eager_rounds),
                compile_spread=baseline_spread(compile_rounds), pad_ms=pad,
            )  # fmt: skip
            cache.put(key, cached)
            paired, source = True, "measured"
        else:
            # This judgment's own calibration: the host's per-call overhead drifts (CPU frequency, load,
            # wake-up latency), so one kept from another judgment charges or spares the wrong rounds. The
            # margin is the wider of this judgment's (few rounds) and the cached one's.
            self.host_clock = judgment_clock(reference_rounds, cached)
            paired, source = False, "cached"
        charged = [round_time(r, w, self.host_clock) for r, w in zip(rounds["candidate"], walls["candidate"], strict=True)]
        cand_rounds = [t for t, _ in charged]
        own = own_overheads(rounds["candidate"], walls["candidate"])
        self.checks["host_clock"] = {
            **self.checks.get("host_clock", {}),
            "overhead_ms": round(self.host_clock.overhead_ms, 5),
            "margin_ms": round(self.host_clock.margin_ms, 5),
            "candidate_rounds_charged_by_host_clock": sum(by_clock for _, by_clock in charged),
            # The candidate's own per-call overhead by the same measure as `overhead_ms` (wall / calls -
            # the round's work per call): an honest candidate whose figure sits above overhead + margin is
            # charged for host time, not GPU time (seen on the H200: ReLU charged 38 of 60 rounds).
            "candidate_overhead_ms": round(statistics.median(own), 5) if own else None,
            # The pads' flush allowance (the reference's) beside the candidate's own claim of its flush
            # time: the gap between them is what each process's own pads used to differ by.
            "flush_ms": {"allowance": None if flush is None else round(flush, 4),
                         "candidate_measured": flush_allowance(setup)},
            "outstanding_gpu_work_ms": round(outstanding_ms, 4),
            "work_after_end_events_ms": round(escaped_ms, 4),
            "work_during_pad_flush_ms": round(flush_work_ms, 4),
            **excess_by_round(own, after_frozen, self.host_clock.overhead_ms),
            "split_ms": split_medians(split),
        }
        eager_rounds, compile_rounds = cached.eager_rounds, cached.compile_rounds
        alpha = BOOTSTRAP_ALPHA if sequential else 0.05
        s_eager, s_eager_low = ratio_with_bound(eager_rounds, cand_rounds, paired=paired, alpha=alpha)
        s_comp, s_comp_low = ratio_with_bound(compile_rounds, cand_rounds, paired=paired, alpha=alpha)
        if sequential:
            # The confidence sequence's bounds on the final (clock-charged) rounds. Stopped early, they alone
            # decide (the bootstrap is not valid at a time chosen by looking); at the full budget the larger
            # of the two bounds, 1% + 4% (decide/sequential.py).
            seq = sequential_decisions(cand_rounds, {"eager": eager_rounds, "compile": compile_rounds}, paired=paired)
            s_eager_low = seq["eager"].low if decided_early else max(s_eager_low, seq["eager"].low)
            s_comp_low = seq["compile"].low if decided_early else max(s_comp_low, seq["compile"].low)
            self.checks["sequential"] = {"stopped_early": decided_early, **{k: d.summary() for k, d in seq.items()}}
        if s_comp_low > tc.plausible_speedup:
            # Too good to take on trust: time again, checking the output of every round, and keep the
            # slower of the two measurements.
            recheck = self.recheck_rounds(cand, ref)
            self.checks["plausibility_recheck_ms"] = round(statistics.median(recheck), 5)
            if statistics.median(recheck) > statistics.median(cand_rounds):
                cand_rounds = recheck
                paired = False
                s_eager, s_eager_low = ratio_with_bound(eager_rounds, cand_rounds, paired=False)
                s_comp, s_comp_low = ratio_with_bound(compile_rounds, cand_rounds, paired=False)
        # The figures reported are over rounds, each round's time its work per call (v6): the median of
        # all per-call samples would report a submission that moves work between calls by its cheap calls.
        cand_stat = stat_of(cand_rounds)
        eager_stat = stat_of(eager_rounds)
        compile_stat = stat_of(compile_rounds)
        self.stages["timing"] = time.monotonic() - start
        policy = {
            "measures": ("device time per call: each round's total over its calls (each call between its own "
                         "events after the pad), host launch overhead hidden by the pad, which waits for the host's release, every "
                         "stream"),
            "pad_release": made.get("pad_release") if tc.pad_release else "off (TimingConfig.pad_release: v6 pads)",
            "pad_ms": round(pad, 4), "flush_allowance_ms": None if flush is None else round(flush, 4), "host_enqueue_ms": {k: round(v, 4) for k, v in hosts.items()},
            "inputs": ("drawn by the reference before each round, read in its set-up (a task whose inputs a seed "
                       "does not reproduce)") if self.input_files else "drawn inside each timed round, from seeds sent with it",
            "draw_cover_ms": round(cover, 4), "draw_host_ms": {k: round(v, 4) for k, v in draws.items()},
            "compile_mode": tc.compile_mode, "compile_builds_ms": [round(b, 5) for b in builds_ms],
            "eager_spread": round(cached.eager_spread, 4), "compile_spread": round(cached.compile_spread, 4),
            "stopping": ("confidence sequence (1%), bootstrap (4%) at the full budget" if sequential
                         else "fixed budget, bootstrap (5%)" + ("; baselines measured here, so no early stop"
                                                                 if tc.sequential else "")),
        }  # fmt: skip
        return Timing(
            candidate_ms=cand_stat.median, eager_ms=eager_stat.median, compile_ms=compile_stat.median,
            speedup_vs_eager=s_eager, speedup_vs_compile=s_comp,
            speedup_vs_eager_low=s_eager_low, speedup_vs_compile_low=s_comp_low,
            candidate=cand_stat, eager=eager_stat, compile=compile_stat,
            rounds=len(cand_rounds), baseline_source=source, protocol=PROTOCOL_VERSION,
            eager_threshold=reward_threshold(cached.eager_spread),
            compile_threshold=reward_threshold(cached.compile_spread), policy=policy,
        )  # fmt: skip

    def _clock_round(self, ref: WorkerHandle) -> tuple[float, float, list[float]]:
        """One eager reference round timed by this process's clock, inside a frozen window: the host clock's
        calibration when the baselines are cached (their rounds are not timed again). Returns (wall ms,
        set-up ms, samples) like the baseline rounds it stands in for."""
        reply = self._reference_call(ref, "time_round", self.config.timing_timeout_s, mode="eager",
                                     samples=self.round_plan.calls)  # fmt: skip
        wall_ms = self._round_wall(ref)
        return wall_ms, _finite(reply.get("setup_ms")), self._samples("eager", reply, wall_ms)

    def _round_wall(self, worker: WorkerHandle) -> float:
        """The host clock of the round just answered: from the parent's command to the kernel's stamp on
        the reply (common/channel.py), counted in `checks.host_clock.rounds_stamped` ([stamped, all])."""
        counts = self.checks.setdefault("host_clock", {}).setdefault("rounds_stamped", [0, 0])
        counts[0] += bool(worker.last_reply_stamped)
        counts[1] += 1
        return worker.last_round_trip_ms

    def _samples(self, who: str, reply: dict, wall_ms: float) -> list[float]:
        """A round's samples, refused when they cannot be true by this process's clock."""
        try:
            samples = [float(x) for x in reply["samples"]]
        except (KeyError, TypeError, ValueError):
            samples = []
        if len(samples) != self.round_plan.calls or not all(0 < s < 1e9 for s in samples) or sum(samples) > wall_ms:
            raise self.fail(Status.REJECTED, f"{who} timing samples are impossible for the host clock")
        return samples

    def _candidate_round(
        self, cand: WorkerHandle, ref: WorkerHandle, purpose: str, trace_share: float = 0.0
    ) -> tuple[dict[str, Any], list[float], float, bool]:
        """One timed round of the candidate on fresh content: its reply, its checked samples, the parent's
        wall time of the round in ms, and whether it was traced.

        The round's seeds travel with the command that times it: its inputs are drawn inside the round,
        inside this process's clock, so the set-up before it (`prepare_round`, outside the clock) has
        nothing to compute on (input-file mode excepted, see `new_round`). Whether the round is traced for
        the coverage gate (with probability `trace_share`) is decided here, by `secrets`, and sent with the
        same command, so nothing the candidate holds before the round (the round's place in the order, the
        commands so far) tells. Every round is asked for with the same command and argument names (`trace`
        only differs in value)."""
        content = self.new_round(ref)
        keep = secrets.randbelow(self.round_plan.calls)
        # The round's set-up outside the clock: this process cannot check what the candidate says it cost,
        # and it holds no input of the round (they are drawn inside `time_round`).
        self._candidate_call(cand, "prepare_round", 60, purpose, samples=self.round_plan.calls,
                             inputs_path=content.get("inputs_path"))  # fmt: skip
        traced = trace_share >= 1.0 or (trace_share > 0 and secrets.randbelow(1 << 20) < trace_share * (1 << 20))
        reply = self._candidate_call(cand, "time_round", self.config.timing_timeout_s, purpose,
                                     samples=self.round_plan.calls, keep=keep, trace=traced,
                                     seeds=content.get("seeds"))  # fmt: skip
        wall_ms = self._round_wall(cand)
        return reply, self._samples("candidate", reply, wall_ms), wall_ms, traced

    def recheck_rounds(self, cand: WorkerHandle, ref: WorkerHandle) -> list[float]:
        tc = self.config.timing
        medians = []
        for _ in range(tc.recheck_rounds):
            _, samples, wall_ms, _ = self._candidate_round(cand, ref, "re-timing")
            with self.baselines_window(cand, ref, freeze=False) as busy_ms:
                wall_ms += busy_ms
            # Charge the host clock, not the events, on this strict pass (no margin).
            host_per_call = self.host_clock.bound(wall_ms, len(samples)) + self.host_clock.margin_ms
            medians.append(max(work_per_call(samples) + busy_ms / len(samples), host_per_call))
            self.check_round(ref, cand)
        return medians

    @contextlib.contextmanager
    def baselines_window(self, cand: WorkerHandle, ref: WorkerHandle, freeze: bool = True) -> Iterator[float]:
        """The candidate's whole process tree frozen and the GPU verified idle: what the reference runs
        inside is timed on a GPU the candidate cannot touch. Yields how long the GPU stayed busy after
        the candidate's last reply (its work, charged to its round by the caller).

        First the trusted reference probes the GPU while the candidate is still running (anything busy
        now is work the candidate left behind: a second context, a helper process, a patched timer), then
        the tree is frozen (cgroup v2 where available, and SIGSTOP of every process found in /proc,
        setsid children included), then the GPU must drain: work queued before the freeze keeps running,
        and must end before a baseline is timed. `freeze=False` (no baseline to time: cached ones) only
        measures the work left behind."""
        with self.timed("baseline_windows"):
            first = self._reference_call(ref, "drain", 60, timeout_s=2.0)
            if "drain_probe" not in self.checks and first.get("idle_ms") is not None:
                self.checks["drain_probe"] = {"idle_ms": round(_finite(first.get("idle_ms")), 4),
                                              "switch_ms": round(_finite(first.get("switch_ms")), 4)}  # fmt: skip
            if not freeze:
                yield _finite(first.get("busy_ms"))
                return
            try:
                report = self.tree_of(cand).freeze()
            except FreezeFailed as exc:
                raise self.fail(Status.REJECTED, f"the judge could not freeze the candidate's processes: {exc}") from None
        try:
            with self.timed("baseline_windows"):
                second = self._reference_call(ref, "drain", 60, timeout_s=self.config.timing.drain_timeout_s)
            if not second["drained"]:
                raise self.fail(
                    Status.REJECTED,
                    f"the GPU stayed busy for {self.config.timing.drain_timeout_s:g} s after every process of the "
                    "candidate was frozen: GPU work queued outside forward (a helper process, a second "
                    "context, deferred kernels) is not allowed",
                )
            self.checks["baseline_freeze"] = f"{report.method}; GPU verified idle before each baseline round"
            # Frozen, the candidate can hold no more than NVML reads now: a hog kept from its round would run
            # the reference's round out of memory, a task_error instead of its own runtime_error.
            self.check_memory_at_rest(ref, cand)
            yield _finite(first.get("busy_ms")) + _finite(second.get("busy_ms"))
        finally:
            self.tree_of(cand).thaw()

    def tree_of(self, cand: WorkerHandle) -> ProcessTree:
        """The candidate's process tree: the pool's (with its cgroup), else one found by /proc alone."""
        tree = getattr(self, "candidate_tree", None)
        if tree is None or tree.pid != cand.pid:
            tree = self.candidate_tree = ProcessTree(cand.pid, getattr(self, "candidate_dir", None))
        return tree

    def _timing_done(self, rounds: dict[str, list[list[float]]], contenders: list[str]) -> bool:
        tc = self.config.timing
        done = True
        for who in contenders:
            samples = [s for r in rounds[who] for s in r]
            total = sum(samples)
            if total >= tc.max_gpu_ms:
                return True
            times = [work_per_call(r) for r in rounds[who]]
            if len(samples) < tc.min_samples or total < tc.min_gpu_ms or median_rse(times) > tc.target_rse:
                done = False
        return done
