"""Is the reward reproducible? Judge a few honest examples cold several times and compare.

Each run is a fresh `JudgeService` (new reference workers, so torch.compile builds from scratch; the
judge's compile builds run with inductor's caches off) with a fresh, empty baseline cache. For every
example the table shows, per run: candidate, eager and torch.compile times, the lower bound of the
speedup over torch.compile, the threshold it had to beat (1.05 widened by the baseline's spread) and the
reward. The summary checks the issue-12 targets:

- torch.compile baseline spread over the cold runs (max - min) / median <= 3%;
- the same reward in every run;
- A/A: each run's candidate time over the median of all runs within 1 +/- 0.02.

    PYTHONPATH=src python benchmarks/compile_baseline_stability.py [--runs 5] [--json out.json] [examples...]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_EXAMPLES = ["examples/layernorm", "examples/row_softmax", "examples/elementwise_chain"]
SPREAD_TARGET = 0.03
AA_TARGET = 0.02


def judge_cold(
    examples: list[Path], runs: int, builds: int | None, sink: Path | None, fixed_budget: bool = False,
    pad_release: bool | None = None,
) -> dict[str, list[dict]]:
    from dataclasses import replace

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.service import JudgeService

    results: dict[str, list[dict]] = {e.name: [] for e in examples}
    for run in range(runs):
        with tempfile.TemporaryDirectory(prefix="cold-baselines-") as cache:
            config = JudgeConfig(cache_dir=Path(cache))
            if builds:
                config = replace(config, timing=replace(config.timing, compile_builds=builds))
            if fixed_budget:
                config = replace(config, timing=replace(config.timing, sequential=False))
            if pad_release is not None:
                config = replace(config, timing=replace(config.timing, pad_release=pad_release))
            began = time.monotonic()
            with JudgeService(config) as service:
                for example in examples:
                    verdict = service.judge(example)
                    t = verdict.timing
                    row = {"run": run + 1, "reward": verdict.reward, "status": verdict.status.value,
                           "reason": verdict.reason[:200]}  # fmt: skip
                    if t is not None:
                        row.update(
                            candidate_ms=t.candidate_ms, eager_ms=t.eager_ms, compile_ms=t.compile_ms,
                            speedup_vs_compile_low=t.speedup_vs_compile_low,
                            speedup_vs_eager_low=t.speedup_vs_eager_low,
                            compile_threshold=t.compile_threshold, eager_threshold=t.eager_threshold,
                            compile_iqr=t.compile.relative_iqr, policy=t.policy,
                            host_clock=_clock_facts(verdict.checks.get("host_clock") or {}),
                            sequential=verdict.checks.get("sequential"),
                        )  # fmt: skip
                    results[example.name].append(row)
                    print(_line(example.name, row), flush=True)
            print(f"  run {run + 1} took {time.monotonic() - began:.0f} s", flush=True)
        if sink:  # after every run: a time limit that stops the benchmark keeps what was measured
            sink.write_text(json.dumps({"results": results, "complete": run + 1 == runs}, indent=1))
    return results


def _clock_facts(clock: dict) -> dict:
    """What the host clock did to the candidate's rounds: a reward that moves between cold runs of one
    honest kernel is most often rounds charged for host time, not a baseline that moved."""
    excess = clock.get("excess_median_ms") or {}
    return {"charged": clock.get("candidate_rounds_charged_by_host_clock"),
            "rounds": len(clock.get("round_excess_ms") or []), "overhead_ms": clock.get("overhead_ms"),
            "margin_ms": clock.get("margin_ms"), "excess_median_ms": excess.get("timed"),
            "round_excess_ms": clock.get("round_excess_ms"), "split_ms": clock.get("split_ms")}  # fmt: skip


def _line(name: str, row: dict) -> str:
    if "compile_ms" not in row:
        return f"{name:20s} run {row['run']}  {row['status']:13s} reward {row['reward']:+d}  {row['reason']}"
    builds = ", ".join(f"{b:.4f}" for b in row["policy"].get("compile_builds_ms", []))
    clock = row.get("host_clock") or {}
    return (f"{name:20s} run {row['run']}  cand {row['candidate_ms']:.4f}  eager {row['eager_ms']:.4f}  "
            f"compile {row['compile_ms']:.4f} (IQR {100 * row['compile_iqr']:.1f}%, builds {builds})  "
            f"low x{row['speedup_vs_compile_low']:.3f} > {row['compile_threshold']:.3f}?  "
            f"reward {row['reward']:+d}  charged {clock.get('charged')}/{clock.get('rounds')} "
            f"(excess {clock.get('excess_median_ms')} ms, margin {clock.get('margin_ms')})")  # fmt: skip


def summarise(results: dict[str, list[dict]]) -> tuple[list[str], bool]:
    lines = [
        f"{'example':20s} {'compile spread':>14s} {'rewards':>12s} {'A/A range':>18s}  verdict",
        "-" * 80,
    ]
    ok_all = True
    for name, rows in results.items():
        timed = [r for r in rows if "compile_ms" in r]
        if len(timed) != len(rows) or not rows:
            lines.append(f"{name:20s} not every run was timed: {[r['status'] for r in rows]}")
            ok_all = False
            continue
        compile_ms = [r["compile_ms"] for r in timed]
        spread = (max(compile_ms) - min(compile_ms)) / statistics.median(compile_ms)
        rewards = [r["reward"] for r in timed]
        cand = [r["candidate_ms"] for r in timed]
        aa = [c / statistics.median(cand) for c in cand]
        good = spread <= SPREAD_TARGET and len(set(rewards)) == 1 and all(abs(a - 1) <= AA_TARGET for a in aa)
        ok_all &= good
        lines.append(f"{name:20s} {100 * spread:13.2f}% {','.join(map(str, rewards)):>12s} "
                     f"{min(aa):.4f}-{max(aa):.4f}  {'PASS' if good else 'FAIL'}")  # fmt: skip
    lines.append(f"targets: compile spread <= {100 * SPREAD_TARGET:.0f}%, one reward per example, "
                 f"A/A within 1 +/- {AA_TARGET}")  # fmt: skip
    return lines, ok_all


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("examples", nargs="*", type=Path, default=[ROOT / e for e in DEFAULT_EXAMPLES])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument(
        "--compile-builds", type=int, help="fresh torch.compile builds per judgment (default: the judge's)"
    )
    parser.add_argument(
        "--fixed-budget-timing",
        action="store_true",
        help="time every judgment for the full budget (TimingConfig.sequential off; issue 34)",
    )
    parser.add_argument(
        "--pad-release",
        choices=("on", "off"),
        default=None,
        help="pads wait for the host's release (protocol v7) or spin their measured length only (v6); "
        "default: the judge's (TimingConfig.pad_release: on)",
    )
    args = parser.parse_args()
    missing = [e for e in args.examples if not (e / "model_new.py").is_file()]
    if missing:
        print(f"error: not a submission folder: {', '.join(map(str, missing))}", file=sys.stderr)
        return 2
    results = judge_cold(args.examples, args.runs, args.compile_builds, args.json, args.fixed_budget_timing,
                         pad_release=None if args.pad_release is None else args.pad_release == "on")
    lines, ok = summarise(results)
    print("\n" + "\n".join(lines))
    if args.json:
        args.json.write_text(json.dumps({"results": results, "summary": lines, "pass": ok}, indent=1))
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
