"""Why did the baselines' round-to-round spread grow with the in-round draw? (H200 diagnosis, protocol v4.)

The reward's thresholds are 1.05 x (1 + spread), the spread being the IQR of a baseline's per-round medians
over their median. On the H200 (2026-12-02) the compile baselines of layernorm, row_softmax and the
elementwise chain had spreads of 0.19 / 0.59 / 0.43 % at protocol v3 and 2.0-3.3 / 1.1-2.2 / 0.9-2.0 % at v4,
where every timed round draws each call's inputs inside the round (candidate/sampler.py). This probe times
the same eager and torch.compile callables of one task in one process, rounds of each kind interleaved, so
only the way inputs reach the call differs:

- `rotation`: the v3 baselines: a few fixed sets, copied to fresh memory before each round, one output kept;
- `fresh`: sets drawn from fresh seeds before the round (outside the timed loop), every call kept;
- `in-round`: v4: each call's inputs drawn inside the loop under the cover spin, every call kept;
- `in-round, no cover`: as v4 with the cover set to 0;
- `in-round, drawn first`: the round's ten draws first, under one cover, then the calls as in `fresh`
  (the inputs still exist only inside the round: a candidate for the protocol if the per-call draw is the
  cause);
- `covered, no draw`: the cover spin before every call, but the "draw" hands out sets drawn before the
  round (is it the spin, e.g. power, or the draw's host work?);
- `in-round, pad x2`: v4 with twice the pad (does the call's host enqueue, slower right after a draw's
  Python work, outrun the pad measured without one?).

Each row also gives the call's host enqueue time measured as in warm-up (`host_ms`) and right after a
draw (`host_after_draw_ms`), and each kind's spread of the event times alone (`event_spread_pct`, without
the device-wide tail's charge).

Outcome (H200, 2026-12-02): the event times' spread stayed 0.2-0.9% in every variant; the per-call draw,
and even the cover spin alone, widened the charged tail's; `drawn first` kept v3's spread, and became
protocol v5 (`Sampler.draw_first`). Table in docs/design/timing.md ("Why the draws come first").

Each row: the median sample and the spread (IQR of round medians / median, %) of each kind. If the spread
of `in-round` alone is high, the draw in the loop is the cause; if `fresh` is high too, keeping every call
(or fresh values) is; if all are high, it is this host or GPU now, not the protocol.

    PYTHONPATH=src python3 scripts/device/baseline_spread_probe.py [--examples layernorm ...] [--rounds 40]
        [--profiled] [--json F]
"""

from __future__ import annotations

import argparse
import json
import secrets
import statistics
import sys
import time
from pathlib import Path

EXAMPLES = ["layernorm", "row_softmax", "elementwise_chain"]
KINDS = ["rotation", "fresh", "in-round", "in-round, no cover", "in-round, drawn first", "covered, no draw",
         "in-round, pad x2"]


def spread(medians: list[float]) -> float:
    q = statistics.quantiles(sorted(medians), n=4, method="inclusive")
    return (q[2] - q[0]) / statistics.median(medians)


def host_after_draw(sampler, fn, draw, cover: float, repeats: int = 9) -> float:
    """Median host enqueue time of one call right after a draw, both under a long spin (as in a round)."""
    import torch

    times = []
    for _ in range(repeats):
        torch.cuda.synchronize()
        sampler._launch_cover(4.0 + cover)
        args = draw(secrets.randbits(62))
        began = time.perf_counter()
        with torch.no_grad():
            fn(*args)
        times.append((time.perf_counter() - began) * 1000)
    torch.cuda.synchronize()
    return statistics.median(times)


def probe(example: str, rounds: int, samples: int) -> list[dict]:

    from cuda_agent.judge.candidate.inputs import draw_inputs
    from cuda_agent.judge.candidate.sampler import Sampler, cover_for, pad_for
    from cuda_agent.judge.trusted.reference_worker import compile_build, fresh_compiles
    from cuda_agent.task import build_model, import_task_module, load_task

    task = load_task(Path("examples") / example / "model.py")
    module = import_task_module(task, f"spread_{example}")
    sys.modules[module.__name__] = module  # dynamo imports the module of what it traces by name
    model, _ = build_model(module, task.name)
    model = model.cuda().eval()
    fresh_compiles()
    compiled = compile_build(model, 0)

    def draw(seed: int) -> list:
        return draw_inputs(module, seed)

    sets = [draw(secrets.randbits(62)) for _ in range(4)]
    rows = []
    for name, fn in (("eager", model), ("compile", compiled)):
        sampler = Sampler(fn, sets, draw=draw)
        sampler.warmup()
        pad, cover = pad_for(sampler.host_ms), cover_for(sampler.draw_ms)
        medians: dict[str, list[float]] = {k: [] for k in KINDS}
        event_medians: dict[str, list[float]] = {k: [] for k in KINDS}
        for _ in range(rounds):
            for kind in KINDS:
                sampler.set_pad(2 * pad if kind.endswith("pad x2") else pad, sampler.flush_ms,
                                0.0 if kind.endswith("no cover") else cover)
                sampler.draw_first = kind.endswith("drawn first")
                sampler.draw = draw
                if kind == "rotation":
                    result = sampler.round(samples)
                elif kind == "fresh":
                    result = sampler.round(samples, fresh=[draw(secrets.randbits(62)) for _ in range(samples)])
                elif kind == "covered, no draw":
                    ready = {s: draw(s) for s in (secrets.randbits(62) for _ in range(samples))}
                    sampler.draw = ready.__getitem__
                    result = sampler.round(samples, seeds=list(ready))
                else:
                    result = sampler.round(samples, seeds=[secrets.randbits(62) for _ in range(samples)])
                medians[kind].append(statistics.median(result.samples_ms))
                event_medians[kind].append(statistics.median(result.events_ms))
                sampler.release()
        sampler.draw = draw
        row = {"example": example, "baseline": name, "pad_ms": pad, "cover_ms": cover, "draw_ms": sampler.draw_ms,
               "host_ms": sampler.host_ms, "host_after_draw_ms": host_after_draw(sampler, fn, draw, cover)}
        for kind in KINDS:
            row[kind] = {"median_ms": statistics.median(medians[kind]), "spread_pct": 100 * spread(medians[kind]),
                         "event_spread_pct": 100 * spread(event_medians[kind])}
        rows.append(row)
        del sampler
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", nargs="+", default=EXAMPLES)
    parser.add_argument("--rounds", type=int, default=40)
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--profiled", action="store_true",
                        help="one profiler session first, as the reference worker now has (kernel_trace.warm_profiler)")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if args.profiled:
        from cuda_agent.judge.candidate import kernel_trace

        kernel_trace.warm_profiler()
    rows = [row for example in args.examples for row in probe(example, args.rounds, args.samples)]
    print("spread % of round medians (IQR / median), charged samples [event times alone]")
    print(f"{'example':<18}{'baseline':<9}{'median ms':>10}{'pad':>7}{'host':>7}{'h+draw':>7}"
          + "".join(f"{k:>24}" for k in KINDS))
    for r in rows:
        cells = "".join(f"{r[k]['spread_pct']:>15.2f} [{r[k]['event_spread_pct']:>5.2f}]" for k in KINDS)
        print(f"{r['example']:<18}{r['baseline']:<9}{r['rotation']['median_ms']:>10.4f}{r['pad_ms']:>7.3f}"
              f"{r['host_ms']:>7.3f}{r['host_after_draw_ms']:>7.3f}{cells}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
