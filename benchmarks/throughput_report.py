"""benchmarks/judge_throughput.py's report: issue 34's targets, the summary and stage tables, the lane
accounting, and the PASS/FAIL lines, from the records the phases made (split from judge_throughput.py, which
runs the phases). Imported by it from this folder (on its path); no GPU needed, so tests run it on figures."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from gpu_idle import idle_verdict

# Issue 34's "Done when" bar on an H200; the same phases' bar before it stays printed beside (PREVIOUS).
TARGET_WARM_S = 2.5
TARGET_COLD_BUILD_S = 8.0
TARGET_PER_HOUR = 3000.0
TARGET_AA = 0.02
TARGET_IDLE_SHARE = 0.15
PREVIOUS_TARGET_WARM_S = 5.0
PREVIOUS_TARGET_PER_HOUR = 1000.0

# A GPU lane's stages, with the waits between them (decide/judgment.py, trusted/pool.py gpu_lock).
LANE_STAGES = ("reference_wait", "reference", "settle_wait", "gpu_lock_wait", "worker_wait", "lane_checks", "install",
               "load", "verify", "quiet_wait", "timing")  # fmt: skip
# The stages of a verdict's stage_seconds, in judgment order; parts nested inside another are indented
# (spot checks and baseline windows run inside timing; the reference is prepared while the build runs).
STAGE_ORDER = (("build", 0), ("build_compile", 1), ("build_link", 1), ("reference", 1), ("worker_wait", 0),
               ("load", 0), ("verify", 0),
               ("compare_wait", 1), ("timing", 0), ("timing_setup", 1), ("timed_rounds", 1), ("traced_rounds", 1),
               ("spot_checks", 1), ("baseline_windows", 1), ("baseline_setup", 1), ("baseline_rounds", 1), ("total", 0))  # fmt: skip
COUNTS = ("rounds", "traced_rounds", "spot_checks")


def percentile(values: Iterable[float], q: float) -> float:
    """Linear-interpolated percentile (q in [0, 1]); nan for no values."""
    data = sorted(values)
    if not data:
        return float("nan")
    pos = q * (len(data) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(data) - 1)
    return data[lo] + (data[hi] - data[lo]) * (pos - lo)


def summarize(values: Iterable[float]) -> dict[str, Any]:
    data = list(values)
    if not data:
        return {"n": 0, "p50": None, "p90": None, "mean": None, "min": None, "max": None}
    return {
        "n": len(data),
        "p50": round(percentile(data, 0.5), 4),
        "p90": round(percentile(data, 0.9), 4),
        "mean": round(statistics.fmean(data), 4),
        "min": round(min(data), 4),
        "max": round(max(data), 4),
    }


def fmt(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None or value != value else format(value, spec)


def draw_policy(policy: dict[str, Any]) -> dict[str, Any]:
    """How the timed rounds' inputs were drawn (inside each round, under a cover spin) and what it cost."""
    host = policy.get("draw_host_ms") or {}
    return {"cover_ms": policy.get("draw_cover_ms"), "reference_draw_ms": host.get("reference"),
            "candidate_draw_ms": host.get("candidate"), "pad_ms": policy.get("pad_ms")}  # fmt: skip


def describe(b: dict[str, Any]) -> str:
    if b["status"] != "ok":
        return f"{b['status']} reward {b['reward']}: {b['reason'][:160]}"
    return (f"ok reward {b['reward']}, candidate {fmt(b['candidate_ms'], '.4f')} ms, eager "
            f"{fmt(b['eager_ms'], '.4f')} ms, compile {fmt(b['compile_ms'], '.4f')} ms "
            f"(baselines {b['baseline_source']}), compiled {b['compiled']}")  # fmt: skip


def _shared_preparations(records: list[dict[str, Any]]) -> tuple[int, int]:
    """(verdicts whose reference preparation was shared with an earlier one of the task, verdicts)."""
    judged = [r["verdict"] for r in records if isinstance(r.get("verdict"), dict)]
    return sum(bool(v.get("shared_preparation")) for v in judged), len(judged)


def depth_two(records: list[dict[str, Any]]) -> dict[str, Any] | None:
    """At --lane-depth 2: verdicts judged again alone, those timed with another candidate frozen, and with
    --lane-preempt how many were held frozen mid-preparation or mid-verification and for how long in all."""
    judged = [r["verdict"] for r in records if isinstance(r.get("verdict"), dict)]
    alone = sum(bool(v.get("judged_again_alone")) for v in judged)
    beside = sum(bool(v.get("others_frozen")) for v in judged)
    held = [float(v.get("stage_seconds", {}).get("held_frozen", 0.0)) for v in judged]
    waited = sum(bool(v.get("waited_after_freeze")) for v in judged)
    return {"judged_again_alone": alone, "timed_with_another_frozen": beside, "of": len(judged),
            "held_frozen": sum(h > 0 for h in held), "held_frozen_s": round(sum(held), 3),
            "waited_after_freeze": waited} if judged else None  # fmt: skip


def lane_accounting(records: list[dict[str, Any]], wall_s: float | None) -> dict[str, Any] | None:
    """Where a batch's lane time went, per verdict: the median of each lane stage, the mean of "lane" (the
    verdict's whole time on the lane), and what the batch's wall per verdict leaves outside the lanes'
    judgments (a lane waiting for a build, the reference worker's end of a judgment, the verdict's way out).
    With one lane, mean lane + outside = wall per verdict."""
    stages = [r["verdict"]["stage_seconds"] for r in records
              if isinstance(r.get("verdict"), dict) and "lane" in r["verdict"].get("stage_seconds", {})]  # fmt: skip
    if not stages or not wall_s:
        return None
    lane_mean = statistics.fmean(s["lane"] for s in stages)
    per_verdict = wall_s / len(stages)
    return {
        "n": len(stages),
        "medians_s": {k: round(statistics.median(s.get(k, 0.0) for s in stages), 3) for k in LANE_STAGES},
        "lane_mean_s": round(lane_mean, 3),
        "wall_per_verdict_s": round(per_verdict, 3),
        "outside_lane_s": round(per_verdict - lane_mean, 3),
    }


def part_medians(records: list[dict[str, float]]) -> dict[str, Any] | None:
    """The median seconds of each part of a candidate worker's warm-up or retirement (trusted/pool.py
    warmups, retirements) over the run's last workers, and the median of their sums."""
    if not records:
        return None
    parts = sorted({k for r in records for k in r})
    medians = {k: round(statistics.median(r.get(k, 0.0) for r in records), 3) for k in parts}
    return {"n": len(records), **medians, "total": round(statistics.median(sum(r.values()) for r in records), 3)}


def print_lane_accounting(phase: str, lanes: dict[str, Any] | None) -> None:
    if lanes:
        parts = ", ".join(f"{k} {v:.3f}" for k, v in lanes["medians_s"].items())
        print(f"lane, {phase} ({lanes['n']} verdicts; median s): {parts}; lane mean {lanes['lane_mean_s']:.3f} s, "
              f"wall per verdict {lanes['wall_per_verdict_s']:.3f} s, outside the lane {lanes['outside_lane_s']:.3f} s")


def group_latencies(records: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per group (records' "example"), in first-submitted order: candidates, verdicts reached, those not
    ok, and the seconds from the step's start to the group's first and last verdict (None if unfinished:
    a trainer scores a group only when all its candidates are judged)."""
    groups: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        groups.setdefault(r["example"], []).append(r)
    out = {}
    for name, rows in groups.items():
        done = [
            r["done_at_s"] for r in rows if r.get("verdict") is not None and r.get("done_at_s") is not None
        ]
        out[name] = {
            "n": len(rows),
            "done": len(done),
            "not_ok": sum(1 for r in rows if r.get("verdict") is not None and r["verdict"]["status"] != "ok"),
            "first_s": min(done) if done else None,
            "last_s": max(done) if len(done) == len(rows) else None,
        }
    return out


def share_text(figures: dict[str, Any] | None) -> str:
    if not figures or figures.get("idle_time_share") is None:
        return f"not measured ({(figures or {}).get('note') or 'no samples'})"
    return (
        f"{100 * figures['idle_time_share']:.1f}% of the time (mean utilization {figures['mean_utilization']}%), "
        f"{100 * figures['idle_share']:.1f}% of {figures['samples']} samples at 0%, median gap "
        f"{figures['median_gap_ms']} ms"
    )


def _ok(record: dict[str, Any]) -> bool:
    return record.get("verdict") is not None and record["verdict"]["status"] == "ok"


def finish(report: dict[str, Any], out: Path, bench_s: float) -> int:
    """Summary table, ratios, JSON files and the PASS/FAIL lines. Returns the exit code."""
    original = [r for r in report["original"] if r["ok"]]
    prime, warm, aa_idle = report["prime"], report["warm"], report["aa_idle"]
    batch = report["batch"]["records"]
    batch_wall = report["batch"]["wall_s"]
    aa_name = report["args"]["aa_example"]

    orig_lat = summarize(r["total_s"] for r in original)
    prime_lat = summarize(r["wall_s"] for r in prime)
    warm_lat = summarize(r["wall_s"] for r in warm)
    batch_done = [r for r in batch if r["verdict"] is not None]
    batch_ok = [r for r in batch_done if r["verdict"]["status"] == "ok"]
    per_hour = len(batch_done) / batch_wall * 3600 if batch_wall > 0 and batch_done else 0.0
    orig_per_hour = 3600 / orig_lat["mean"] if orig_lat["mean"] else None

    # "measured" on a fresh cache; with --cache-dir pointing at a warm one, the cold row is not cold
    sources = "/".join(sorted({r["verdict"]["baseline_source"] or "-" for r in prime if _ok(r)})) or "-"

    def rate(s: dict[str, Any]) -> float | None:
        return 3600 / s["mean"] if s["mean"] else None

    print("\n== summary ==")
    header = f"{'path':<46} {'n':>4} {'p50 s':>8} {'p90 s':>8} {'mean s':>8} {'verdicts/h':>11}"
    print(header)
    print("-" * len(header))
    rl = report.get("rl")
    rl_records = rl["records"] if rl else []
    rl_done = [r for r in rl_records if r["verdict"] is not None]
    rl_bad = len(rl_records) - sum(1 for r in rl_done if r["verdict"]["status"] == "ok")
    rl_per_hour = len(rl_done) / rl["wall_s"] * 3600 if rl and rl["wall_s"] > 0 and rl_done else 0.0
    groups = group_latencies(rl_records)
    group_last = summarize(g["last_s"] for g in groups.values() if g["last_s"] is not None)
    rows = [
        ("original one-shot (compile + verify + profile)", orig_lat, rate(orig_lat)),
        (f"ours, cold (baselines {sources})", prime_lat, rate(prime_lat)),
        ("ours, warm (one .cu changed), one at a time", warm_lat, rate(warm_lat)),
        (f"ours, judge_many batch of {len(batch)}", {"n": len(batch_done), "p50": None, "p90": None, "mean": None},
         per_hour),
    ]  # fmt: skip
    if rl:
        rows.append((f"ours, RL-shaped {rl['groups']} x {rl['group_size']} (group: last)", {**group_last,
                     "n": len(rl_done)}, rl_per_hour))  # fmt: skip
    for label, s, r in rows:
        print(
            f"{label:<46} {s['n']:>4} {fmt(s['p50']):>8} {fmt(s['p90']):>8} {fmt(s['mean']):>8} {fmt(r, '.0f'):>11}"
        )

    if original:
        phases = {
            p: statistics.fmean(r["seconds"].get(p, 0.0) for r in original)
            for p in ("compile", "verify", "profile")
        }
        print("original, mean seconds per phase: " + ", ".join(f"{p} {v:.1f}" for p, v in phases.items()))
    failed_original = [r for r in report["original"] if not r["ok"]]
    if failed_original:
        print(f"original path: {len(failed_original)} run(s) failed: "
              + "; ".join(f"{r['example']} in {r['failed_phase']}" for r in failed_original))  # fmt: skip
    by_example = {}
    for name in report["examples"]:
        mine = [r["wall_s"] for r in warm if r["example"] == name]
        by_example[name] = summarize(mine)
        print(f"  warm {name:<20} n {len(mine)}, p50 {fmt(by_example[name]['p50'])} s, "
              f"p90 {fmt(by_example[name]['p90'])} s")  # fmt: skip

    stage_medians = warm_stage_medians(warm)
    print_stage_table(stage_medians)
    call_medians = warm_call_medians(warm)
    print_call_table(call_medians)
    print_host_clock(warm)

    latency_ratio = orig_lat["mean"] / warm_lat["p50"] if orig_lat["mean"] and warm_lat["p50"] else None
    throughput_ratio = per_hour / orig_per_hour if orig_per_hour and per_hour else None
    print(f"latency: original mean {fmt(orig_lat['mean'], '.1f')} s / ours warm median "
          f"{fmt(warm_lat['p50'])} s = {fmt(latency_ratio, '.1f')}x")  # fmt: skip
    print(f"throughput: ours {per_hour:.0f}/h / original {fmt(orig_per_hour, '.0f')}/h = "
          f"{fmt(throughput_ratio, '.1f')}x")  # fmt: skip

    cold = report["cold_build"]
    cold_ok = [r for r in cold if r["ok"]]
    cold_median = statistics.median(r["wall_s"] for r in cold_ok) if cold_ok else None
    print("cold build (.cu + _binding.cpp changed): "
          + ", ".join(f"{r['example']} {r['wall_s']:.2f} s{'' if r['ok'] else ' FAILED'}" for r in cold)
          + f"; median {fmt(cold_median)} s")  # fmt: skip

    idle_times = [r["verdict"]["candidate_ms"] for r in aa_idle if _ok(r) and r["verdict"]["candidate_ms"]]
    busy_times = [r["verdict"]["candidate_ms"] for r in batch
                  if r["example"] == aa_name and _ok(r) and r["verdict"]["candidate_ms"]]  # fmt: skip
    idle_median = statistics.median(idle_times) if idle_times else None
    busy_median = statistics.median(busy_times) if busy_times else None
    aa_ratio = busy_median / idle_median if idle_median and busy_median else None
    print(f"A/A {aa_name}: idle median {fmt(idle_median, '.4f')} ms (n {len(idle_times)}), busy median "
          f"{fmt(busy_median, '.4f')} ms (n {len(busy_times)}) -> ratio {fmt(aa_ratio, '.4f')}")  # fmt: skip
    if rl:
        print(f"RL-shaped step: {len(rl_done)} of {len(rl_records)} verdicts in {rl['wall_s']:.1f} s; per group, "
              "seconds from the step's start to its first and last verdict:")  # fmt: skip
        for name, g in groups.items():
            print(f"  group {name[:34]:<34} n {g['n']}, first {fmt(g['first_s'], '.1f')} s, last "
                  f"{fmt(g['last_s'], '.1f')} s" + (f", {g['not_ok']} not ok" if g["not_ok"] else ""))  # fmt: skip
    shared = {phase: _shared_preparations(records) for phase, records in (("batch", batch), ("rl", rl_records))}
    for phase, (n_shared, n_judged) in shared.items():
        if n_judged:
            print(f"reference preparations shared, {phase}: {n_shared} of {n_judged} verdicts (groups need private "
                  "places, on unless CUDA_AGENT_PRIVATE_PLACES=0: trusted/sandbox.py)")  # fmt: skip
    lanes = {"batch": lane_accounting(batch, batch_wall), "rl": lane_accounting(rl_records, rl["wall_s"] if rl else None)}
    for phase, accounting in lanes.items():
        print_lane_accounting(phase, accounting)
    depth = {phase: depth_two(records) for phase, records in (("batch", batch), ("rl", rl_records))}
    for phase, counts in depth.items():
        if counts and (counts["judged_again_alone"] or counts["timed_with_another_frozen"]):
            print(f"lane depth 2, {phase}: {counts['timed_with_another_frozen']} of {counts['of']} timed with another "
                  f"candidate frozen, {counts['judged_again_alone']} judged again alone"
                  + (f", {counts['held_frozen']} held frozen by another's timing ({counts['held_frozen_s']:.1f} s in all)"
                     if counts["held_frozen"] else "")
                  + (f", a failed drain beside a frozen section waited out in {counts['waited_after_freeze']}"
                     if counts["waited_after_freeze"] else ""))  # fmt: skip
    retired, warmed = part_medians(report.get("retirements") or []), part_medians(report.get("warmups") or [])
    for what, medians in (("warm-up", warmed), ("retirement", retired)):
        if medians:
            print(f"candidate worker {what}, median s over the last {medians['n']}: "
                  + ", ".join(f"{k} {v:.3f}" for k, v in medians.items() if k != "n"))  # fmt: skip
    batch_idle = report["batch"].get("gpu_idle")
    rl_idle = rl["gpu_idle"] if rl else None
    if batch:
        print(f"GPU idle share, batch: {share_text(batch_idle)}")
    if rl:
        print(f"GPU idle share, RL-shaped: {share_text(rl_idle)}")
    print(f"benchmark wall time {bench_s / 60:.1f} min")

    warm_bad = [r for r in warm if not _ok(r)]
    batch_bad = len(batch) - len(batch_ok)
    batch_idle_pass, batch_idle_text = idle_verdict("batch", batch_idle or {}, TARGET_IDLE_SHARE)
    rl_idle_pass, rl_idle_text = idle_verdict("RL-shaped step", rl_idle or {}, TARGET_IDLE_SHARE)
    skipped = {"cold_build": not cold, "throughput": not batch, "aa_ratio": not aa_idle or not batch,
               "rl_throughput": not rl, "gpu_idle_batch": not batch or batch_idle_pass is None,
               "gpu_idle_rl": not rl or rl_idle_pass is None}  # fmt: skip
    checks = {
        "warm_median": (warm_lat["p50"] is not None and warm_lat["p50"] <= TARGET_WARM_S and not warm_bad,
                        f"warm latency median {fmt(warm_lat['p50'])} s (target <= {TARGET_WARM_S:g} s; "
                        f"before issue 34 <= {PREVIOUS_TARGET_WARM_S:g} s)"
                        + (f", {len(warm_bad)} warm verdict(s) not ok" if warm_bad else "")),
        "cold_build": (cold_median is not None and cold_median <= TARGET_COLD_BUILD_S and len(cold_ok) == len(cold),
                       f"cold build median {fmt(cold_median)} s (target <= {TARGET_COLD_BUILD_S:g} s)"
                       + (f", {len(cold) - len(cold_ok)} build(s) failed" if len(cold_ok) != len(cold) else "")),
        "throughput": (per_hour >= TARGET_PER_HOUR and batch_bad == 0 and not report["batch"]["error"],
                       f"batch {per_hour:.0f} verdicts/hour (target >= {TARGET_PER_HOUR:.0f}; before issue 34 "
                       f">= {PREVIOUS_TARGET_PER_HOUR:.0f})"
                       + (f", {batch_bad} of {len(batch)} batch verdicts not ok" if batch_bad else "")
                       + (f", batch error {report['batch']['error']}" if report["batch"]["error"] else "")),
        "aa_ratio": (aa_ratio is not None and abs(aa_ratio - 1) <= TARGET_AA,
                     f"A/A ratio {fmt(aa_ratio, '.4f')} (target 1 +/- {TARGET_AA:g})"),
        "rl_throughput": (rl_per_hour >= TARGET_PER_HOUR and rl_bad == 0 and not (rl or {}).get("error"),
                          f"RL-shaped {len(groups)} tasks x {(rl or {}).get('group_size')}: {rl_per_hour:.0f} "
                          f"verdicts/hour (target >= {TARGET_PER_HOUR:.0f}), slowest group done in "
                          f"{fmt(group_last['max'], '.1f')} s"
                          + (f", {rl_bad} of {len(rl_records)} verdicts not ok" if rl_bad else "")
                          + (f", error {rl['error']}" if rl and rl["error"] else "")),
        "gpu_idle_batch": (bool(batch_idle_pass), batch_idle_text),
        "gpu_idle_rl": (bool(rl_idle_pass), rl_idle_text),
    }  # fmt: skip

    summary = {
        "gpu": report["gpu"],
        "original_latency_s": orig_lat,
        "original_per_hour": None if orig_per_hour is None else round(orig_per_hour, 1),
        "cold_latency_s": prime_lat,
        "warm_latency_s": warm_lat,
        "warm_latency_by_example_s": by_example,
        "batch_per_hour": round(per_hour, 1),
        "batch_wall_s": batch_wall,
        "batch_verdicts": len(batch_done),
        "batch_not_ok": batch_bad,
        "latency_ratio": None if latency_ratio is None else round(latency_ratio, 2),
        "throughput_ratio": None if throughput_ratio is None else round(throughput_ratio, 2),
        "cold_build_median_s": None if cold_median is None else round(cold_median, 3),
        "aa_idle_median_ms": idle_median,
        "aa_busy_median_ms": busy_median,
        "aa_ratio": None if aa_ratio is None else round(aa_ratio, 4),
        "batch_gpu_idle_share": (batch_idle or {}).get("idle_time_share"),
        "batch_gpu_idle_samples_share": (batch_idle or {}).get("idle_share"),
        "rl_shape": [rl["groups"], rl["group_size"]] if rl else None,
        "rl_per_hour": round(rl_per_hour, 1) if rl else None,
        "rl_wall_s": rl["wall_s"] if rl else None,
        "rl_verdicts": len(rl_done) if rl else None,
        "rl_not_ok": rl_bad if rl else None,
        "rl_group_last_s": group_last,
        "rl_groups": groups,
        "rl_gpu_idle_share": (rl_idle or {}).get("idle_time_share"),
        "shared_preparations": {phase: {"shared": a, "of": b} for phase, (a, b) in shared.items()},
        "lane_accounting": lanes,
        "lane_depth_two": depth,
        "retirement_medians_s": retired,
        "warmup_medians_s": warmed,
        "rl_gpu_idle_samples_share": (rl_idle or {}).get("idle_share"),
        "service_start_s": report.get("service_start_s"),
        "benchmark_s": round(bench_s, 1),
        "warm_stage_medians_s": stage_medians,
        "warm_worker_call_medians": call_medians,
        "pass": {k: bool(v[0]) for k, v in checks.items() if not skipped.get(k)},
        "skipped": sorted(k for k, v in skipped.items() if v),
    }
    report["summary"] = summary
    (out / "judge_throughput.json").write_text(json.dumps(report, indent=1, default=str))
    print(
        json.dumps(
            {
                k: v
                for k, v in summary.items()
                if k not in ("warm_latency_by_example_s", "warm_stage_medians_s", "rl_groups")
            },
            default=str,
        )
    )
    print(f"wrote {out / 'judge_throughput.json'} and {out / 'verdicts.jsonl'}")
    for key, (passed, text) in checks.items():
        if skipped.get(key):
            why = text if key.startswith("gpu_idle") and "not measured" in text else "its phase was not run"
            print(f"SKIP: {key} ({why})", flush=True)
        else:
            print(f"{'PASS' if passed else 'FAIL'}: {text}", flush=True)
    return 0 if all(passed for key, (passed, _) in checks.items() if not skipped.get(key)) else 1


def warm_stage_medians(warm: list[dict[str, Any]]) -> dict[str, dict[str, float | None]]:
    """Per example (and 'all'), the median seconds of every stage over the warm verdicts that were ok,
    and the median counts that explain the timing stage (timed rounds, traced rounds, spot checks)."""
    groups: dict[str, list[dict[str, Any]]] = {"all": []}
    for r in warm:
        if _ok(r):
            groups.setdefault(r["example"], []).append(r["verdict"])
            groups["all"].append(r["verdict"])
    medians: dict[str, dict[str, float | None]] = {}
    for name, verdicts in groups.items():
        keys = sorted({k for v in verdicts for k in v["stage_seconds"]})
        row: dict[str, float | None] = {
            k: round(statistics.median(v["stage_seconds"].get(k, 0.0) for v in verdicts), 3) for k in keys
        }
        for count in COUNTS:
            values = [v.get(count) for v in verdicts if v.get(count) is not None]
            row[f"n_{count}"] = statistics.median(values) if values else None
        medians[name] = row
    return medians


def print_stage_table(medians: dict[str, dict[str, float | None]]) -> None:
    """Where warm time goes: one column per example, one row per stage (median seconds)."""
    if not medians.get("all"):
        return
    names = [n for n in medians if n != "all"] + ["all"]
    known = [k for k, _ in STAGE_ORDER]
    extra = sorted({k for row in medians.values() for k in row if k not in known and not k.startswith("n_")})
    rows = [*STAGE_ORDER, *((k, 1) for k in extra)]
    print("\nwarm, median seconds per stage (indented: inside or beside the stage above):")
    print(f"{'stage':<20}" + "".join(f"{n[:16]:>17}" for n in names))
    for key, depth in rows:
        label = ("  " * depth + key)[:20]
        print(f"{label:<20}" + "".join(f"{fmt(medians[n].get(key), '.3f'):>17}" for n in names))
    for count in COUNTS:
        print(
            f"{'n ' + count:<20}" + "".join(f"{fmt(medians[n].get('n_' + count), '.0f'):>17}" for n in names)
        )


def warm_call_medians(warm: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """Per worker command ('reference.compare_timing', 'candidate.time_round', ...), over the warm ok
    verdicts: the median number of calls per judgment, seconds per judgment and milliseconds per call."""
    per: dict[str, list[tuple[int, float]]] = {}
    verdicts = [r["verdict"] for r in warm if _ok(r)]
    for v in verdicts:
        for command, entry in (v.get("worker_calls") or {}).items():
            per.setdefault(command, []).append((int(entry[0]), float(entry[1])))
    out = {}
    for command, entries in per.items():
        entries += [(0, 0.0)] * (len(verdicts) - len(entries))  # judgments that never made this call
        out[command] = {
            "calls": statistics.median(n for n, _ in entries),
            "seconds": round(statistics.median(t for _, t in entries), 4),
            "ms_per_call": round(1000 * sum(t for _, t in entries) / max(1, sum(n for n, _ in entries)), 3),
        }
    return dict(sorted(out.items(), key=lambda kv: -kv[1]["seconds"]))


def print_host_clock(warm: list[dict[str, Any]]) -> None:
    """Per example: the host clock's per-call overhead (the reference's) against the candidate's own, and
    how many of the candidate's rounds the clock charged (an honest kernel should see few)."""
    rows: dict[str, list[dict[str, Any]]] = {}
    for r in warm:
        clock = r["verdict"].get("host_clock") or {}
        if _ok(r) and clock.get("candidate_overhead_ms") is not None:
            rows.setdefault(r["example"], []).append({**clock, **(r["verdict"].get("draw") or {}),
                                                      "rounds": r["verdict"].get("rounds") or 0})  # fmt: skip
    if not rows:
        return
    print("\nwarm, host clock per call (median ms): the reference's overhead + margin vs the candidate's own")
    print("  (flush: the pads' allowance, the reference's, and the candidate's own measurement beside it)")
    print("  (stamped: rounds whose wall ended at the kernel's stamp on the reply, of all, summed; draw: a")
    print(
        "   draw's host time in the reference, the cover spin each call's in-round draw ran under, and the pad)"
    )
    print(f"{'example':<20}{'overhead':>10}{'margin':>8}{'candidate':>11}{'charged':>12}{'flush':>9}{'own':>9}"
          f"{'stamped':>14}{'draw':>9}{'cover':>9}{'pad':>9}")  # fmt: skip
    for name, clocks in rows.items():

        def med(key: str, clocks: list[dict[str, Any]] = clocks) -> float:
            return statistics.median(float(c.get(key) or 0.0) for c in clocks)

        def flush(key: str, clocks: list[dict[str, Any]] = clocks) -> str:
            return _median_of(clocks, "flush_ms", key)

        charged = f"{med('candidate_rounds_charged_by_host_clock'):.0f}/{med('rounds'):.0f}"
        counts = [c["rounds_stamped"] for c in clocks if isinstance(c.get("rounds_stamped"), list)]
        stamped = f"{sum(n for n, _ in counts)}/{sum(t for _, t in counts)}" if counts else "-"
        print(f"{name[:20]:<20}{med('overhead_ms'):>10.4f}{med('margin_ms'):>8.4f}{med('candidate_overhead_ms'):>11.4f}"
              f"{charged:>12}{flush('allowance'):>9}{flush('candidate_measured'):>9}{stamped:>14}"
              f"{med('reference_draw_ms'):>9.3f}{med('cover_ms'):>9.3f}{med('pad_ms'):>9.3f}")  # fmt: skip
    print(
        "\nwarm, where the candidate's per-call overhead exceeds the reference's (median ms over its rounds):"
    )
    print("  timed: every timed round; after frozen: those right after a frozen window; other: the rest")
    print(f"{'example':<20}{'timed':>10}{'after frozen':>14}{'other':>10}")
    for name, clocks in rows.items():
        timed, after, other = (
            _median_of(clocks, "excess_median_ms", k) for k in ("timed", "after_frozen", "other_timed")
        )
        print(f"{name[:20]:<20}{timed:>10}{after:>14}{other:>10}")


def _median_of(clocks: list[dict[str, Any]], field: str, key: str) -> str:
    """The median of `clock[field][key]` over the verdicts' host clocks that have it, printed (or '-')."""
    values = [f[key] for c in clocks if isinstance(f := c.get(field), dict) and f.get(key) is not None]
    return f"{statistics.median(values):.4f}" if values else "-"


def print_call_table(medians: dict[str, dict[str, float]]) -> None:
    """Which worker exchanges the warm judgments waited on (round trips as the parent saw them)."""
    if not medians:
        return
    print("\nwarm, worker round trips per judgment (median; ms per call over all):")
    print(f"{'command':<34}{'calls':>8}{'seconds':>10}{'ms/call':>10}")
    for command, row in medians.items():
        if row["seconds"] >= 0.005:
            print(f"{command[:34]:<34}{row['calls']:>8.0f}{row['seconds']:>10.3f}{row['ms_per_call']:>10.2f}")
