"""Work moved between the calls of a round: the median per call (protocol v5) against the round's work per
call (v6), and what v6's statistic does to honest rounds (issue 33, timing class 4; H200 device probe,
about 40 s).

Part 1, the cheat on a real kernel. A fused elementwise kernel, y = max(x * 1.5 + 0.25, 0) on a 128 MiB
fp32 tensor (one float4 grid-stride pass, compiled here with nvcc to PTX and launched through the driver,
as the judge's pad is), timed by the judge's Sampler on inputs drawn inside each round, two ways:

- `honest`: one launch per call;
- `burst`: the issue's cheat. The first call of a burst (more than 1 ms after the previous call) computes
  at once; calls 2-9 only queue their input and output and run a 4 us marker kernel; call 10 runs the nine
  queued calls in one batched launch (one grid over nine tensors). Every output is complete when the round
  ends (checked here against the honest kernel).

For each: the median over rounds of the median sample (v5's round time) and of the mean sample (v6's), and
burst / honest under each. Must show: v5 ~ marker / kernel (far below 1), v6 about 1 (at least 0.97).

Part 2, honest rounds under both statistics. Eager PyTorch on the bundled examples' tasks (layernorm,
row_softmax, elementwise_chain, drawn inside the round from seeds as in a judgment) and the fused kernel
above: two samplers of the same callable (A and B), rounds interleaved. For each statistic: each sampler's
spread (IQR of round times over their median, %) and the A/A ratio (median over rounds of A / B). Must show:
spreads within the 3% target and A/A within 1 +/- 0.02 under the mean, as under the median.

    PYTHONPATH=src python3 benchmarks/timing_round_redistribution.py [--rounds 40] [--json F]

Writes $OUT/timing_round_redistribution.json when OUT is set (and --json is not).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from cuda_agent.judge.candidate.pad import Driver
from cuda_agent.judge.candidate.sampler import Sampler, work_per_call

EXAMPLES = ["layernorm", "row_softmax", "elementwise_chain"]
ROWS, COLS = 8192, 4096  # the fused kernel's tensor: 128 MiB of fp32
BATCH = 9  # the queued calls one batched launch runs
BURST_GAP_S = 1e-3  # a call more than this after the previous one starts a burst
MARKER_NS = 4000
SPREAD_TARGET, AA_TARGET = 0.03, 0.02

KERNELS_CU = r"""
struct Batch {
    const float4* x[9];
    float4* y[9];
};

__device__ __forceinline__ float4 chain(float4 v) {
    v.x = fmaxf(fmaf(v.x, 1.5f, 0.25f), 0.0f);
    v.y = fmaxf(fmaf(v.y, 1.5f, 0.25f), 0.0f);
    v.z = fmaxf(fmaf(v.z, 1.5f, 0.25f), 0.0f);
    v.w = fmaxf(fmaf(v.w, 1.5f, 0.25f), 0.0f);
    return v;
}

extern "C" __global__ void ew_one(const float4* __restrict__ x, float4* __restrict__ y, long long n4) {
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        __stcs(y + i, chain(__ldcs(x + i)));
}

// One grid over `count` tensors: blockIdx.y picks the tensor.
extern "C" __global__ void ew_batch(Batch b, int count, long long n4) {
    if ((int)blockIdx.y >= count) return;
    const float4* x = b.x[blockIdx.y];
    float4* y = b.y[blockIdx.y];
    const long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride)
        __stcs(y + i, chain(__ldcs(x + i)));
}

extern "C" __global__ void marker(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
"""


class _Batch(ctypes.Structure):
    _fields_ = [("x", ctypes.c_void_p * BATCH), ("y", ctypes.c_void_p * BATCH)]


class Kernels:
    """The probe's kernels, compiled with nvcc to PTX and launched through the driver (project's `Driver`)."""

    THREADS = 256

    def __init__(self) -> None:
        major, minor = torch.cuda.get_device_capability()
        nvcc = shutil.which("nvcc") or str(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / "nvcc")
        with tempfile.TemporaryDirectory() as tmp:
            src, ptx = Path(tmp) / "k.cu", Path(tmp) / "k.ptx"
            src.write_text(KERNELS_CU)
            subprocess.run([nvcc, "--ptx", f"-arch=sm_{major}{minor}", "-O3", "-o", str(ptx), str(src)], check=True)
            text = ptx.read_bytes()
        # The driver calls below need a current context: torch creates the primary one lazily, so make it
        # (and make it current on this thread) first. Without this: cuModuleLoadData's CUresult 201.
        torch.cuda.init()
        torch.empty(1, device="cuda")
        self.driver = Driver()
        lib = self.driver.lib
        self.module = ctypes.c_void_p()
        self.driver.check(lib.cuModuleLoadData(ctypes.byref(self.module), text + b"\0"), "cuModuleLoadData")
        self.funcs = {}
        for name in ("ew_one", "ew_batch", "marker"):
            func = ctypes.c_void_p()
            self.driver.check(lib.cuModuleGetFunction(ctypes.byref(func), self.module, name.encode()), name)
            self.funcs[name] = func
        sms = torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
        self.blocks = sms * 8

    def _launch(self, name: str, grid: tuple[int, int], threads: int, *args: Any) -> None:
        params = (ctypes.c_void_p * len(args))(*(ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in args))
        stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
        self.driver.check(self.driver.lib.cuLaunchKernel(self.funcs[name], grid[0], grid[1], 1, threads, 1, 1, 0,
                                                         stream, params, None), name)  # fmt: skip

    def one(self, x: torch.Tensor, y: torch.Tensor) -> None:
        self._launch("ew_one", (self.blocks, 1), self.THREADS, ctypes.c_void_p(x.data_ptr()),
                     ctypes.c_void_p(y.data_ptr()), ctypes.c_longlong(x.numel() // 4))  # fmt: skip

    def batch(self, pairs: list[tuple[torch.Tensor, torch.Tensor]]) -> None:
        b = _Batch()
        for i, (x, y) in enumerate(pairs):
            b.x[i], b.y[i] = x.data_ptr(), y.data_ptr()
        n4 = ctypes.c_longlong(pairs[0][0].numel() // 4)
        self._launch("ew_batch", (self.blocks, len(pairs)), self.THREADS, b, ctypes.c_int(len(pairs)), n4)

    def marker(self) -> None:
        self._launch("marker", (1, 1), 32, ctypes.c_ulonglong(MARKER_NS))


class Honest:
    def __init__(self, kernels: Kernels) -> None:
        self.kernels = kernels

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.empty_like(x)
        self.kernels.one(x, y)
        return y


class Burst:
    """The issue's cheat: see the module docstring."""

    def __init__(self, kernels: Kernels) -> None:
        self.kernels = kernels
        self.pending: list[tuple[torch.Tensor, torch.Tensor]] = []
        self.last = 0.0

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        now = time.perf_counter()
        starts_burst, self.last = now - self.last > BURST_GAP_S, now
        y = torch.empty_like(x)
        if starts_burst:
            if self.pending:  # a burst that ended early: its queue runs now
                self.kernels.batch(self.pending)
                self.pending = []
            self.kernels.one(x, y)
            return y
        self.pending.append((x, y))
        if len(self.pending) == BATCH:
            self.kernels.batch(self.pending)
            self.pending = []
        else:
            self.kernels.marker()
        return y


def _stats(rounds: list[list[float]]) -> dict[str, float]:
    """Each statistic's round times: their median, their spread (IQR / median)."""
    out = {}
    for name, of in (("median", statistics.median), ("mean", work_per_call)):
        times = [of(r) for r in rounds]
        q = statistics.quantiles(times, n=4, method="inclusive")
        med = statistics.median(times)
        out[f"{name}_ms"], out[f"{name}_spread_pct"] = med, 100 * (q[2] - q[0]) / med
    return out


def cheat_part(kernels: Kernels, rounds: int, samples: int) -> dict[str, Any]:
    def draw(seed: int) -> list[torch.Tensor]:
        gen = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(ROWS, COLS, device="cuda", generator=gen)]

    fns = {"honest": Honest(kernels), "burst": Burst(kernels)}
    samplers = {}
    for name, fn in fns.items():
        sampler = Sampler(fn, [draw(secrets.randbits(62))], draw=draw)
        sampler.warmup()
        samplers[name] = sampler
    pad = max(s.pad_ms for s in samplers.values())
    for s in samplers.values():
        s.set_pad(pad, samplers["honest"].flush_ms, samplers["honest"].cover_ms)
    got: dict[str, list[list[float]]] = {name: [] for name in fns}
    checked = False
    for _ in range(rounds):
        for name, sampler in samplers.items():
            result = sampler.round(samples, seeds=[secrets.randbits(62) for _ in range(samples)])
            got[name].append(result.samples_ms)
            if name == "burst" and not checked:  # the cheat's outputs are all there when its round ends
                for (inputs,), output in sampler.kept:
                    torch.testing.assert_close(output, torch.clamp_min(inputs * 1.5 + 0.25, 0.0))
                checked = True
            sampler.release()
            time.sleep(2 * BURST_GAP_S)  # as between the rounds of a judgment (checks, drains, baselines)
    stats = {name: _stats(r) for name, r in got.items()}
    return {"pad_ms": pad, "samples_of_a_burst_round": got["burst"][-1], **stats,
            "burst_over_honest_median": stats["burst"]["median_ms"] / stats["honest"]["median_ms"],
            "burst_over_honest_mean": stats["burst"]["mean_ms"] / stats["honest"]["mean_ms"]}  # fmt: skip


def _example(name: str) -> tuple[Callable[..., Any], Callable[[int], list[Any]]]:
    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.task import build_model, import_task_module, load_task

    task = load_task(Path("examples") / name / "model.py")
    module = import_task_module(task, f"redistribution_{name}")
    sys.modules[module.__name__] = module
    model, _ = build_model(module, task.name)
    return model.cuda().eval(), lambda seed: draw_inputs(module, seed)


def honest_part(kernels: Kernels, examples: list[str], rounds: int, samples: int) -> list[dict[str, Any]]:
    def fused_draw(seed: int) -> list[torch.Tensor]:
        gen = torch.Generator(device="cuda").manual_seed(seed)
        return [torch.randn(ROWS, COLS, device="cuda", generator=gen)]

    subjects = [("fused elementwise", Honest(kernels), fused_draw)]
    subjects += [(f"{name} (eager)", *_example(name)) for name in examples]
    rows = []
    for label, fn, draw in subjects:
        pair = []
        for _ in "AB":
            sampler = Sampler(fn, [draw(secrets.randbits(62))], draw=draw)
            sampler.warmup()
            pair.append(sampler)
        pad = max(s.pad_ms for s in pair)
        for s in pair:
            s.set_pad(pad, pair[0].flush_ms, pair[0].cover_ms)
        got: list[list[list[float]]] = [[], []]
        for _ in range(rounds):
            for i, sampler in enumerate(pair):
                got[i].append(sampler.round(samples, seeds=[secrets.randbits(62) for _ in range(samples)]).samples_ms)
                sampler.release()
        row: dict[str, Any] = {"subject": label, "pad_ms": pad}
        for stat, of in (("median", statistics.median), ("mean", work_per_call)):
            a, b = ([of(r) for r in rounds_] for rounds_ in got)
            row[stat] = {"ms": statistics.median(a), "aa": statistics.median(x / y for x, y in zip(a, b, strict=True)),
                         "spread_pct": [_stats(g)[f"{stat}_spread_pct"] for g in got]}  # fmt: skip
        rows.append(row)
        del pair
        torch.cuda.empty_cache()
    return rows


def verdicts(result: dict[str, Any]) -> list[tuple[str, bool]]:
    cheat = result["cheat"]
    checks = [
        ("v5 (median) is fooled by the burst: burst / honest < 0.5", cheat["burst_over_honest_median"] < 0.5),
        ("v6 (mean) times the burst by its work: burst / honest >= 0.97", cheat["burst_over_honest_mean"] >= 0.97),
    ]
    for row in result["honest"]:
        mean = row["mean"]
        checks.append((f"{row['subject']}: spread under the mean <= 3% and A/A within 1 +/- 0.02",
                       max(mean["spread_pct"]) <= 100 * SPREAD_TARGET and abs(mean["aa"] - 1) <= AA_TARGET))  # fmt: skip
    return checks


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--examples", nargs="*", default=EXAMPLES)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    began = time.monotonic()
    kernels = Kernels()
    result: dict[str, Any] = {"gpu": torch.cuda.get_device_name(), "rounds": args.rounds, "samples": args.samples}
    result["cheat"] = cheat_part(kernels, args.rounds, args.samples)
    result["honest"] = honest_part(kernels, args.examples, args.rounds, args.samples)
    cheat = result["cheat"]
    print(f"{result['gpu']}: part 1, the burst on the fused elementwise kernel ({ROWS}x{COLS} fp32), "
          f"{args.rounds} rounds of {args.samples}")  # fmt: skip
    print(f"{'':<10}{'median/call ms':>16}{'mean/call ms':>14}{'spread med %':>14}{'spread mean %':>15}")
    for name in ("honest", "burst"):
        s = cheat[name]
        print(f"{name:<10}{s['median_ms']:>16.4f}{s['mean_ms']:>14.4f}{s['median_spread_pct']:>14.2f}"
              f"{s['mean_spread_pct']:>15.2f}")  # fmt: skip
    print(f"burst / honest: v5 (median) {cheat['burst_over_honest_median']:.3f}, "
          f"v6 (mean) {cheat['burst_over_honest_mean']:.3f}; a burst round's samples: "
          f"{', '.join(f'{x:.4f}' for x in cheat['samples_of_a_burst_round'])}")  # fmt: skip
    print("part 2, honest rounds: round time (ms), A/A (median of A/B over rounds), spread of A and B (%)")
    print(f"{'subject':<26}{'median: ms':>11}{'A/A':>8}{'spreads':>14}{'mean: ms':>11}{'A/A':>8}{'spreads':>14}")
    for r in result["honest"]:
        m, a = r["median"], r["mean"]
        print(f"{r['subject']:<26}{m['ms']:>11.4f}{m['aa']:>8.4f}{m['spread_pct'][0]:>7.2f}{m['spread_pct'][1]:>7.2f}"
              f"{a['ms']:>11.4f}{a['aa']:>8.4f}{a['spread_pct'][0]:>7.2f}{a['spread_pct'][1]:>7.2f}")  # fmt: skip
    checks = verdicts(result)
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    result["verdicts"] = [{"check": text, "ok": ok} for text, ok in checks]
    result["seconds"] = round(time.monotonic() - began, 1)
    out = args.json or (Path(os.environ["OUT"]) / "timing_round_redistribution.json" if os.environ.get("OUT") else None)
    if out is not None:
        out.write_text(json.dumps(result, indent=1))
        print(f"wrote {out}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
