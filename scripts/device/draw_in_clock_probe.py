"""Can a timed round's inputs be drawn inside the host clock without widening its margin? (H200 probe.)

The open gap of docs/design/trust_boundary.md: a round's inputs reach the candidate's process before the
parent's clock starts, so a patched set-up can compute the outputs there. Drawing them inside the clock
closes it, if the draw adds no noise to the per-call overhead the clock compares. This probe measures,
per bundled example, in one process with the judge's own Sampler and pad kernel:

- the draw's host time with the GPU idle and with the GPU busy (what a spin before it must hide), and its
  GPU time;
- three loops, interleaved round by round: `outside` (the current protocol: inputs drawn before the
  round), `exposed` (each call's inputs drawn right before its pad, the host's draw time exposed) and
  `covered` (a spin launched first that the draw's host time hides under, then the draw, then the pad):
  the median per-call overhead (wall / calls - median sample) and the margin the host clock would take
  from it (3 robust standard deviations), and the median sample (which must not move).

    PYTHONPATH=src python3 scripts/device/draw_in_clock_probe.py [--rounds 30] [--json F]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import time
from pathlib import Path

EXAMPLES = ["layernorm", "row_softmax", "elementwise_chain", "gemm_bias_relu"]


def robust_margin(values: list[float]) -> float:
    centre = statistics.median(values)
    return 3 * 1.4826 * statistics.median(abs(v - centre) for v in values)


def probe(example: str, rounds: int) -> dict:
    import secrets

    import torch

    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.judge.candidate.sampler import CALIBRATE_EVERY, Sampler, pad_for
    from cuda_agent.task import build_model, import_task_module, load_task

    task = load_task(Path("examples") / example / "model.py")
    module = import_task_module(task, f"probe_{example}")
    model, _ = build_model(module, task.name)
    model = model.cuda().eval()
    sets = [draw_inputs(module, secrets.randbits(62)) for _ in range(2)]
    sampler = Sampler(model, sets)
    sampler.warmup()
    sampler.set_pad(pad_for(sampler.host_ms), sampler.flush_ms)
    kernel, stream = sampler.kernel, sampler.stream

    def spin(ms: float) -> None:
        n16, kernel.n16 = kernel.n16, 0  # no flush: a pure spin to the deadline
        try:
            kernel.launch(stream.cuda_stream, ms)
        finally:
            kernel.n16 = n16

    idle, busy, gpu = [], [], []
    for _ in range(15):
        torch.cuda.synchronize()
        t = time.perf_counter()
        draw_inputs(module, secrets.randbits(62))
        idle.append((time.perf_counter() - t) * 1000)
        torch.cuda.synchronize()
        spin(5.0)
        t = time.perf_counter()
        draw_inputs(module, secrets.randbits(62))
        busy.append((time.perf_counter() - t) * 1000)
        torch.cuda.synchronize()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(stream)
        draw_inputs(module, secrets.randbits(62))
        b.record(stream)
        torch.cuda.synchronize()
        gpu.append(a.elapsed_time(b))
    draw_host = statistics.median(busy)
    cover = pad_for(draw_host)

    def loop(mode: str) -> tuple[float, float]:
        """One round of 10 calls by the sampler's steps; (per-call overhead, median sample)."""
        seeds = [secrets.randbits(62) for _ in range(10)]
        pre = [draw_inputs(module, s) for s in seeds] if mode == "outside" else None
        ev = [[torch.cuda.Event(enable_timing=True) for _ in range(3)] for _ in range(20)]
        torch.cuda.synchronize()
        kept, timed, slot = [], [], 0
        gc.disable()
        t0 = time.perf_counter()
        with torch.no_grad():
            for i in range(10):
                if i % CALIBRATE_EVERY == 0:
                    sampler._calibration_sample(ev[slot])
                    slot += 1
                if mode == "covered":
                    spin(cover)
                args = pre[i] if pre is not None else draw_inputs(module, seeds[i])
                start, end, after = ev[slot]
                sampler._launch_pad(sampler.pad_ms)
                start.record(stream)
                out = model(*args)
                end.record(stream)
                torch.cuda.synchronize()
                after.record(stream)
                kept.append((args, out))
                timed.append(slot)
                slot += 1
            sampler._calibration_sample(ev[slot])
            torch.cuda.synchronize()
        wall = (time.perf_counter() - t0) * 1000
        gc.enable()
        samples = [ev[s][0].elapsed_time(ev[s][1]) for s in timed]
        return wall / 10 - statistics.median(samples), statistics.median(samples)

    modes = ["outside", "exposed", "covered"]
    got: dict[str, list[tuple[float, float]]] = {m: [] for m in modes}
    for _ in range(rounds):
        for m in modes:
            got[m].append(loop(m))
    row = {"example": example, "draw_host_idle_ms": statistics.median(idle), "draw_host_busy_ms": draw_host,
           "draw_host_busy_p90_ms": sorted(busy)[int(0.9 * (len(busy) - 1))], "draw_gpu_ms": statistics.median(gpu),
           "cover_ms": cover, "pad_ms": sampler.pad_ms, "flush_ms": sampler.flush_ms}
    for m in modes:
        over = [o for o, _ in got[m]]
        row[m] = {"overhead_ms": statistics.median(over), "margin_ms": robust_margin(over),
                  "sample_ms": statistics.median(s for _, s in got[m])}
    return row  # this example's sampler, model and sets go with the frame


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--examples", nargs="+", default=EXAMPLES)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    rows = [probe(e, args.rounds) for e in args.examples]
    print(f"{'example':<18} {'draw host':>9} {'busy':>7} {'p90':>7} {'gpu':>7} {'cover':>6} "
          + " ".join(f"{m + ' ovh/margin/sample':>28}" for m in ("outside", "exposed", "covered")))
    for r in rows:
        cells = " ".join(f"{r[m]['overhead_ms']:>9.4f}/{r[m]['margin_ms']:>8.4f}/{r[m]['sample_ms']:>9.4f}"
                         for m in ("outside", "exposed", "covered"))
        print(f"{r['example']:<18} {r['draw_host_idle_ms']:>9.4f} {r['draw_host_busy_ms']:>7.4f} "
              f"{r['draw_host_busy_p90_ms']:>7.4f} {r['draw_gpu_ms']:>7.4f} {r['cover_ms']:>6.3f} {cells}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
