"""Judge every example and adversarial case, spread over all visible GPUs, and check expectations.

One `cuda-agent judge --json` process per GPU (CUDA_VISIBLE_DEVICES), cases dealt round-robin, verdicts
streamed to OUT/verdicts.jsonl as they come, then a table with each case's expectation met or not.
Exit code 0 only when every case met its expectation.

    python scripts/gpu_suite.py [--out DIR] [folders...]   (default: examples tests/adversarial)

The whole suite is ~26 min of one H200 (15 of its heaviest cases took 11 s a case on an H100, 2026-12-06), longer
than a device call (10 min): `--compile-builds 1` makes each cold task's compile baseline one build instead
of three (the baselines were 3-9 s of the 8-17 s an honest case's timing took); `--part K/N` judges every N-th
case from the K-th, one call each, and `--earlier` joins the parts judged before, refusing any judged by
other judge code (a digest of src/ in every verdict line), so the last part's table covers the whole suite:
    python scripts/gpu_suite.py --part 1/4 --out p1
    python scripts/gpu_suite.py --part 2/4 --out p2 --earlier p1/verdicts.jsonl   ... and so on
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "tests" / "gpu"), str(ROOT / "benchmarks")]
from test_judge_gpu import meets  # noqa: E402
from throughput_report import LANE_STAGES, STAGE_ORDER  # noqa: E402

from cuda_agent.commands.judge import add_lane_arguments, lane_arguments_refused  # noqa: E402  (src/, above)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "folders", nargs="*", type=Path, default=[ROOT / "examples", ROOT / "tests" / "adversarial"]
    )
    parser.add_argument("--out", type=Path, default=Path("gpu-suite"))
    parser.add_argument("--gpus", type=int, default=0, help="GPUs to use (default: all visible)")
    parser.add_argument("--part", default="1/1", help="K/N: judge only every N-th case from the K-th (one device call each)")
    parser.add_argument("--earlier", type=Path, nargs="*", default=[],
                        help="verdicts.jsonl of earlier parts, judged by this same judge code: their cases are "
                             "not judged again, and the table covers them too")  # fmt: skip
    parser.add_argument("--warm-beside-timing", action="store_true",
                        help="judge with spares warming beside timing (issue 34's experiment, before it is the default)")  # fmt: skip
    add_lane_arguments(parser)  # passed on to `cuda-agent judge`; the whole suite at depth 2 before it is a default
    parser.add_argument("--compile-builds", type=int, metavar="N",
                        help="the judge's --compile-builds: fewer fresh torch.compile builds per cold task (default "
                             "3). Every case is its own task, so the baselines are much of a suite run; 1 shortens "
                             "it, at the cost of a compile baseline that one unlucky autotuning choice may slow")  # fmt: skip
    args = parser.parse_args()
    if refused := lane_arguments_refused(args.lane_depth, args.lane_preempt):
        parser.error(refused)
    import torch

    gpus = args.gpus or torch.cuda.device_count()
    # Each argument is a suite folder (cases below it) or one case folder (holding expected.json).
    cases = sorted(
        {folder.resolve() for folder in args.folders if (folder / "expected.json").exists()}
        | {p.parent.resolve() for folder in args.folders for p in folder.glob("*/expected.json")}
    )
    digest = judge_digest()
    try:
        earlier = read_earlier(args.earlier, digest)
        part, parts = (int(x) for x in args.part.split("/"))
        if not 1 <= part <= parts:
            raise ValueError(f"--part {args.part}: K must be 1 to N")
    except ValueError as exc:
        print(f"gpu_suite: {exc}")
        return 2
    results: list[tuple[Path, dict, bool]] = [(ROOT / case, verdict, verdict["as_expected"]) for case, verdict in earlier.items()]
    mine = [case for case in cases[part - 1 :: parts] if str(case.relative_to(ROOT)) not in earlier]
    print(f"judge code {digest[:12]}; part {part}/{parts}: {len(mine)} cases to judge, {len(earlier)} from earlier parts",
          flush=True)  # fmt: skip
    shares = [mine[i::gpus] for i in range(gpus)]
    args.out.mkdir(parents=True, exist_ok=True)
    sink = open(args.out / "verdicts.jsonl", "w")  # noqa: SIM115
    lock = threading.Lock()

    def serve(gpu: int, share: list[Path]) -> None:
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": str(gpu), "PYTHONPATH": str(ROOT / "src")}
        # One judge process per GPU share the machine's cores: split the concurrent builds between them.
        builds = str(max(1, len(os.sched_getaffinity(0)) // (2 * gpus)))
        command = [sys.executable, "-m", "cuda_agent.cli", "judge", "--json", "--forward-timeout", "30",
                   "--build-timeout", "60", "--build-workers", builds,
                   *(["--warm-beside-timing"] if args.warm_beside_timing else []),
                   *(["--lane-depth", str(args.lane_depth)] if args.lane_depth != 1 else []),
                   *(["--lane-preempt"] if args.lane_preempt else []),
                   *(["--compile-builds", str(args.compile_builds)] if args.compile_builds else []),
                   *map(str, share)]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
        assert proc.stdout is not None
        for case, line in zip(share, proc.stdout, strict=False):
            verdict = json.loads(line)
            good = meets(json.loads((case / "expected.json").read_text()), verdict)
            with lock:
                results.append((case, verdict, good))
                sink.write(
                    json.dumps({"case": str(case.relative_to(ROOT)), "as_expected": good, "judge_code": digest,
                                **verdict}) + "\n"
                )
                sink.flush()
                print(f"[gpu{gpu}] {'ok ' if good else 'BAD'} {case.parent.name}/{case.name:32s} "
                      f"{verdict['status']:13s} {verdict['reward']:+d} {verdict['reason'][:110]}", flush=True)  # fmt: skip
        proc.wait()

    start = time.time()
    threads = [threading.Thread(target=serve, args=(g, s)) for g, s in enumerate(shares) if s]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    judged = {r[0] for r in results}
    missing = [c for c in cases if c not in judged and (parts == 1 or c in mine)]
    if parts > 1:
        left = [c for c in cases if c not in judged]
        print(f"\nparts so far: {len(judged)} of {len(cases)} cases judged, {len(left)} left for the other parts")
    bad = [r for r in results if not r[2]]
    print(f"\n{len(results)}/{len(cases)} judged on {gpus} GPU(s) in {time.time() - start:.0f} s; "
          f"{len(results) - len(bad)} as expected, {len(bad)} not, {len(missing)} missing")  # fmt: skip
    for case, verdict, _ in bad:
        print(
            f"  NOT AS EXPECTED: {case.name}: {verdict['status']} {verdict['reward']:+d} {verdict['reason'][:300]}"
        )
    for case in missing:
        print(f"  MISSING: {case.name}")
    print("\n" + family_table(results))
    if any("class" in json.loads((case / "expected.json").read_text()) for case, _, _ in results):
        print("\n" + class_table(results))
    print("\n" + lane_table([verdict for _, verdict, _ in results]))
    return 0 if not bad and not missing else 1


# Where the GPU lane's time went (decide/judgment.py's stage_seconds): the lane, its waits and stages, and the
# timing stage's parts (indented), as judge_throughput's report names them. The suite's wall is the lane's,
# so this says what a faster suite needs.
_TIMING_PARTS = STAGE_ORDER[STAGE_ORDER.index(("timing", 0)) + 1 :]
LANE_PARTS = ("lane", *LANE_STAGES, *(f"  {name}" for name, depth in _TIMING_PARTS if depth == 1))


def lane_table(verdicts: list[dict]) -> str:
    """Seconds summed over the verdicts, with how many reached each part and their median."""
    import statistics

    lines = [f"{'lane part':22s} {'seconds':>9s} {'verdicts':>9s} {'median':>8s}", "-" * 51]
    for name in LANE_PARTS:
        values = [float(v["stage_seconds"][name.strip()]) for v in verdicts
                  if isinstance(v.get("stage_seconds"), dict) and name.strip() in v["stage_seconds"]]  # fmt: skip
        if values:
            lines.append(f"{name:22s} {sum(values):9.1f} {len(values):9d} {statistics.median(values):8.3f}")
    return "\n".join(lines)


def judge_digest() -> str:
    """A digest of the judge's code (every file under src/): verdicts of parts judged in other device
    calls may be joined only where it is the same, so a table covers one judge, whatever the calls."""
    digest = hashlib.sha256()
    for path in sorted((ROOT / "src").rglob("*.py")):
        digest.update(str(path.relative_to(ROOT)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def read_earlier(files: list[Path], digest: str) -> dict[str, dict]:
    """Case -> verdict from earlier parts' verdicts.jsonl; ValueError where one was judged by other code."""
    earlier: dict[str, dict] = {}
    for file in files:
        for number, line in enumerate(file.read_text().splitlines(), 1):
            record = json.loads(line)
            if record.get("judge_code") != digest:
                raise ValueError(f"{file}:{number}: judged by other judge code ({str(record.get('judge_code'))[:12]}, "
                                 f"now {digest[:12]}): judge that part again")  # fmt: skip
            earlier[record["case"]] = record
    return earlier


def family_table(results: list[tuple[Path, dict, bool]]) -> str:
    """One row per kind and family: cases, as expected, and the verdict statuses that caught them."""
    rows: dict[str, dict] = {}
    for case, verdict, good in results:
        expected = json.loads((case / "expected.json").read_text())
        kind = expected.get("kind", "?")
        key = f"{kind} {expected['family']:02d}" if "family" in expected else kind
        row = rows.setdefault(key, {"n": 0, "ok": 0, "statuses": {}, "rewards": {}})
        row["n"] += 1
        row["ok"] += good
        row["statuses"][verdict["status"]] = row["statuses"].get(verdict["status"], 0) + 1
        row["rewards"][verdict["reward"]] = row["rewards"].get(verdict["reward"], 0) + 1
    lines = [f"{'group':12s} {'cases':>5s} {'as expected':>11s}  verdicts", "-" * 72]
    for key in sorted(rows):
        row = rows[key]
        statuses = ", ".join(f"{k} {v}" for k, v in sorted(row["statuses"].items()))
        rewards = ", ".join(f"{r:+d}: {v}" for r, v in sorted(row["rewards"].items()))
        lines.append(f"{key:12s} {row['n']:5d} {row['ok']:11d}  {statuses}  (rewards {rewards})")
    total, ok = sum(r["n"] for r in rows.values()), sum(r["ok"] for r in rows.values())
    lines.append(f"{'all':12s} {total:5d} {ok:11d}")
    return "\n".join(lines)


def class_table(results: list[tuple[Path, dict, bool]]) -> str:
    """Issue 12's cases by attack class (expected.json "class", 1-10): one line per case, then totals."""
    lines = [f"{'class':5s} {'case':44s} {'expect':14s} {'status':13s} {'reward':>6s}  as expected", "-" * 96]
    per_class: dict[int, list[bool]] = {}
    for case, verdict, good in sorted(results, key=lambda r: (_class_of(r[0]), r[0].name)):
        expected = json.loads((case / "expected.json").read_text())
        if "class" not in expected:
            continue
        per_class.setdefault(expected["class"], []).append(good)
        want = expected["expect"] + (f" <={expected['max_reward']}" if "max_reward" in expected else "")
        lines.append(f"{expected['class']:5d} {case.name:44s} {want:14s} {verdict['status']:13s} "
                     f"{verdict['reward']:+6d}  {'yes' if good else 'NO'}")  # fmt: skip
    lines.append("-" * 96)
    lines.append("by class: " + ", ".join(f"{k}: {sum(v)}/{len(v)}" for k, v in sorted(per_class.items())))
    return "\n".join(lines)


def _class_of(case: Path) -> int:
    return int(json.loads((case / "expected.json").read_text()).get("class", 0))


if __name__ == "__main__":
    sys.exit(main())
