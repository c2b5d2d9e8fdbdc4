"""Does anything staged into L2 after the judge's flush survive into the timed call? A/B of the v5 and v6
pads (issue 33, timing class 5; H200 device probe, about 20 s).

The call is a GEMV that streams a weight of `--weight-mib` (24 MiB: W (1536, 4096) @ x, cuBLAS through
`torch.mv`): it reads each weight element once and does 2 flops with it, so its time is the weight's read
from DRAM (~4.8 TB/s on an H200, ~5 us) plus launch, and a weight already in L2 (50 MB on an H200; 24 MiB
and the copies' 4 MiB scratch fit) makes it much faster. (The first version timed a GEMM x (8, 4096) @ W^T
of a 16 MiB weight: 0.024 ms on the H200, not bound by its weight read, so staging gained nothing even under
v5 -- 1.06x honest -- and the probe proved nothing; device1/probes of issue 33.) A `warm` row (the honest
call after a pad with no flush) shows what the weight in L2 is worth on this GPU; the probe checks it first.
It is timed by the judge's own Sampler (pads, events, device-wide tail, calibration samples) with two pads:

- `v5`: the pad of protocol v5, flush first, then a spin to the same nominal length (its PTX is kept here);
- `v6`: the protocol's pad (candidate/pad.py: PAD_PTX): spin first, flush last, flush stamped.

and five callables, all computing the same output:

- `honest`: the GEMV alone (the honest cold time every ratio is taken against: honest with the v6 pad);
- `stage at issue`: the call first copies the weight, in 4 MiB chunks, into a scratch buffer on a side
  stream that waits for nothing: the copy engines run it at once, during the pad (the issue's cheat);
- `stage at pad end`: the call queues the GEMV, waits on the host, then issues the same copy so that it
  ends with the pad (10 us before: the host must be done first), i.e. during v6's flush (what the flush
  stamps must charge; the pad's hold keeps every SM until the whole flush is done);
- `stage mid-flush`: the same, ending half a flush earlier;
- `side prefetch`: a reduction over the weight on a side stream that waits for nothing (SM work: it runs
  when the pad's blocks leave: with the hold, all together at the pad's end).

Each row: per call, median over rounds of the events alone, of the charged time (the round's work per call
as the judge takes it: events, tail and flush charges) and of the flush charge, and the charged time over
the honest v6 time. What it must show: `warm` well below 1 (the subject is bound by its weight read, else
the probe shows nothing on this GPU); with the v5 pad `stage at issue` well below 1 (v5 is fooled); with
the v6 pad every staged row's charged ratio at least about 1.

    PYTHONPATH=src python3 benchmarks/timing_l2_staging.py [--rounds 40] [--weight-mib 24] [--json F]

Writes $OUT/timing_l2_staging.json when OUT is set (and --json is not).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate.pad import PAD_SPIN_FLUSH_SHARE, PadKernel, flush_buffer, pad_for
from cuda_agent.judge.candidate.sampler import Sampler

# Protocol v5's pad (candidate/sampler.py before v6): the flush, then a spin to `total_ns` after the start.
V5_PAD_PTX = r"""
.version 7.0
.target sm_70
.address_size 64

.visible .entry judge_pad_flush(
	.param .u64 p_buf,
	.param .u64 p_n16,
	.param .u64 p_total_ns
)
.maxnreg 32
{
	.reg .pred %p<3>;
	.reg .b32 %r<6>;
	.reg .b64 %rd<14>;

	mov.u64 %rd10, %globaltimer;
	ld.param.u64 %rd1, [p_buf];
	ld.param.u64 %rd2, [p_n16];
	ld.param.u64 %rd3, [p_total_ns];
	add.u64 %rd11, %rd10, %rd3;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mov.u32 %r3, %tid.x;
	mov.u32 %r4, %nctaid.x;
	mul.wide.u32 %rd4, %r1, %r2;
	cvt.u64.u32 %rd5, %r3;
	add.u64 %rd6, %rd4, %rd5;
	mul.wide.u32 %rd7, %r4, %r2;
	mov.u32 %r5, 0;
FLUSH:
	setp.ge.u64 %p1, %rd6, %rd2;
	@%p1 bra SPIN;
	shl.b64 %rd8, %rd6, 4;
	add.u64 %rd9, %rd1, %rd8;
	st.global.v4.u32 [%rd9], {%r5, %r5, %r5, %r5};
	add.u64 %rd6, %rd6, %rd7;
	bra FLUSH;
SPIN:
	mov.u64 %rd12, %globaltimer;
	setp.lt.u64 %p2, %rd12, %rd11;
	@%p2 bra SPIN;
	ret;
}
"""
PADS = ("v5", "v6")
CHUNK_BYTES = 4 << 20
# A late copy is issued this much before it would end with the pad, so that the call's host part returns
# (and its end event is queued) before the pad ends: later, the events would hold the host's wait.
HOST_LEAD_MS = 0.01


class V5Pad:
    """The v5 kernel behind the Sampler's pad interface: where v6 spins `spin_ms` and then flushes (about
    the allowance), v5 flushed and then spun to `spin_ms + allowance` after its start: the same nominal
    length. It stamps nothing (no flush charge)."""

    def __init__(self, allowance_ms: float) -> None:
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        self.kernel = PadKernel(flush_buffer(), sms, ptx=V5_PAD_PTX)
        self.allowance_ms = allowance_ms

    def launch(self, stream: int, spin_ms: float, flush: bool = True, stamps: int = 0, release: int = 0) -> None:
        # `release` (v7's wait for the host) is 0 here: the probe's Samplers are made without release.
        self.kernel.launch(stream, spin_ms + (self.allowance_ms if flush else 0.0), flush)

    def new_stamps(self, slots: int) -> None:
        return None


class NoFlushPad(V5Pad):
    """The pad's spin of the same nominal length with no flush: the `warm` row, the weight left in L2."""

    def launch(self, stream: int, spin_ms: float, flush: bool = True, stamps: int = 0, release: int = 0) -> None:
        self.kernel.launch(stream, spin_ms + (self.allowance_ms if flush else 0.0), False)


def subject(weight: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """What every variant computes: a GEMV, bound by reading `weight` once."""
    return torch.mv(weight, x)


class Calls:
    """The GEMV and the ways of staging its weight, as callables of x."""

    def __init__(self, weight: torch.Tensor, spin_ms: float, flush_ms: float) -> None:
        self.weight = weight
        self.side = torch.cuda.Stream()
        self.scratch = torch.empty(CHUNK_BYTES // 4, dtype=torch.float32, device="cuda")
        self.flat = weight.view(-1)
        self.spin_ms, self.flush_ms = spin_ms, flush_ms
        self.copy_ms = self._copy_time()

    def _stage(self) -> None:
        n = self.scratch.numel()
        with torch.cuda.stream(self.side):
            for first in range(0, self.flat.numel(), n):
                part = self.flat[first : first + n]
                self.scratch[: part.numel()].copy_(part)  # cudaMemcpyAsync D2D: the copy engines

    def _copy_time(self) -> float:
        times = []
        for _ in range(7):
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            a.record(self.side)
            self._stage()
            b.record(self.side)
            torch.cuda.synchronize()
            times.append(a.elapsed_time(b))
        return statistics.median(times)

    def honest(self, x: torch.Tensor) -> torch.Tensor:
        return subject(self.weight, x)

    def stage_at_issue(self, x: torch.Tensor) -> torch.Tensor:
        self._stage()
        return subject(self.weight, x)

    def _stage_ending(self, before_pad_end_ms: float) -> Callable[[torch.Tensor], torch.Tensor]:
        def call(x: torch.Tensor) -> torch.Tensor:
            entered = time.perf_counter()
            y = subject(self.weight, x)  # queued behind the pad first: the host is done before it ends
            issue_at = entered + (self.spin_ms + self.flush_ms - self.copy_ms - before_pad_end_ms) / 1000
            while time.perf_counter() < issue_at:
                pass
            self._stage()
            return y

        return call

    def side_prefetch(self, x: torch.Tensor) -> torch.Tensor:
        with torch.cuda.stream(self.side):
            self.weight.sum()  # reads the whole weight on SMs, waiting for nothing
        return subject(self.weight, x)

    def variants(self) -> dict[str, Callable[[torch.Tensor], torch.Tensor]]:
        return {
            "honest": self.honest,
            "stage at issue": self.stage_at_issue,
            "stage at pad end": self._stage_ending(HOST_LEAD_MS),
            "stage mid-flush": self._stage_ending(self.flush_ms / 2),
            "side prefetch": self.side_prefetch,
        }


def run(rounds: int, samples: int, weight_mib: int, k: int) -> dict[str, Any]:
    torch.manual_seed(0)
    n = (weight_mib << 20) // (4 * k)
    weight = torch.randn(n, k, device="cuda")
    x = torch.randn(k, device="cuda")
    probe = Sampler(lambda a: subject(weight, a), [[x]])
    probe.warmup()
    allowance = probe.flush_ms
    # One pad for every row, long enough for the host to wait inside it before issuing a late copy.
    pad = max(pad_for(probe.host_ms), 0.25)
    calls = Calls(weight, pad + PAD_SPIN_FLUSH_SHARE * allowance, allowance)
    reference = calls.honest(x)
    samplers: dict[tuple[str, str], Sampler] = {}
    for name, fn in calls.variants().items():
        torch.testing.assert_close(fn(x), reference)  # every variant computes the same output
        torch.cuda.synchronize()
        for kind in PADS:
            sampler = Sampler(fn, [[x]])
            sampler.warmup()
            if kind == "v5":
                sampler.kernel = V5Pad(allowance)  # type: ignore[assignment]
            sampler.set_pad(pad, allowance)
            samplers[(name, kind)] = sampler
    warm = Sampler(calls.honest, [[x]])
    warm.warmup()
    warm.kernel = NoFlushPad(allowance)  # type: ignore[assignment]
    warm.set_pad(pad, allowance)
    samplers[("honest", "warm")] = warm
    got: dict[tuple[str, str], dict[str, list[float]]] = {
        key: {"events": [], "charged": [], "flush_charge": [], "flush": []} for key in samplers
    }
    for _ in range(rounds):  # interleaved, so power and clocks drift alike for every row
        for key, sampler in samplers.items():
            result = sampler.round(samples)
            got[key]["events"].append(statistics.fmean(result.events_ms))
            got[key]["charged"].append(result.per_call_ms)
            got[key]["flush_charge"].append(result.flush_charged_ms / samples)
            got[key]["flush"].append(result.flush_ms)
            sampler.release()
    honest = statistics.median(got[("honest", "v6")]["charged"])
    rows = []
    for (name, kind), values in got.items():
        med = {k: statistics.median(v) for k, v in values.items()}
        rows.append({"variant": name, "pad": kind, "events_ms": med["events"], "charged_ms": med["charged"],
                     "flush_charge_ms": med["flush_charge"], "flush_ms": med["flush"],
                     "ratio_events": med["events"] / honest, "ratio_charged": med["charged"] / honest})  # fmt: skip
    return {
        "gpu": torch.cuda.get_device_name(), "weight_mib": weight_mib, "gemv": [n, k], "rounds": rounds,
        "samples": samples, "pad_ms": pad, "flush_allowance_ms": allowance, "copy_ms": calls.copy_ms,
        "honest_v6_ms": honest, "rows": rows,
    }  # fmt: skip


def verdicts(result: dict[str, Any]) -> list[tuple[str, bool]]:
    row = {(r["variant"], r["pad"]): r for r in result["rows"]}
    staged = ("stage at issue", "stage at pad end", "stage mid-flush", "side prefetch")
    return [
        ("the subject is bound by its weight read: warm (no flush) < 0.8 x honest",
         row[("honest", "warm")]["ratio_charged"] < 0.8),
        ("v5 pad: the copy during the pad warms L2 (stage at issue < 0.9 x honest)",
         row[("stage at issue", "v5")]["ratio_charged"] < 0.9),
        ("v6 pad: no staging is charged less than 0.95 x honest",
         all(row[(v, "v6")]["ratio_charged"] >= 0.95 for v in staged)),
        ("v6 pad costs the honest call at most 3% over v5's",
         row[("honest", "v6")]["charged_ms"] <= 1.03 * row[("honest", "v5")]["charged_ms"]),
    ]  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--weight-mib", type=int, default=24)
    parser.add_argument("--k", type=int, default=4096)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    began = time.monotonic()
    result = run(args.rounds, args.samples, args.weight_mib, args.k)
    print(f"{result['gpu']}: GEMV {result['gemv']} ({result['weight_mib']} MiB weight), pad {result['pad_ms']:.3f} ms, "
          f"flush allowance {result['flush_allowance_ms']:.4f} ms, staging copy {result['copy_ms']:.4f} ms, "
          f"honest (v6) {result['honest_v6_ms']:.4f} ms per call")  # fmt: skip
    print(f"{'variant':<18}{'pad':<5}{'events ms':>11}{'charged ms':>12}{'flush chg':>11}{'flush ms':>10}"
          f"{'events/honest':>15}{'charged/honest':>16}")  # fmt: skip
    for r in result["rows"]:
        print(f"{r['variant']:<18}{r['pad']:<5}{r['events_ms']:>11.4f}{r['charged_ms']:>12.4f}"
              f"{r['flush_charge_ms']:>11.4f}{r['flush_ms']:>10.4f}{r['ratio_events']:>15.3f}{r['ratio_charged']:>16.3f}")  # fmt: skip
    checks = verdicts(result)
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    result["verdicts"] = [{"check": text, "ok": ok} for text, ok in checks]
    result["seconds"] = round(time.monotonic() - began, 1)
    out = args.json or (Path(os.environ["OUT"]) / "timing_l2_staging.json" if os.environ.get("OUT") else None)
    if out is not None:
        out.write_text(json.dumps(result, indent=1))
        print(f"wrote {out}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
