"""Judge every adversarial case and check its verdict against expected.json.

    python tests/adversarial/run_suite.py                  # all cases (needs a GPU)
    python tests/adversarial/run_suite.py 01_ 06_side      # cases whose folder name starts with these
    python tests/adversarial/run_suite.py --check          # no GPU: validate the case folders only
    python tests/adversarial/run_suite.py --build-only     # no GPU: also compile every case
    python tests/adversarial/run_suite.py --json out.json  # save every verdict

Expectations (expected.json):
  accept         status "ok" and reward >= min_reward              (honest submissions)
  reject         reward == -1, any failing status                  (cheats that must fail)
  honest_timing  reward <= max_reward (so -1 also passes)          (timing cheats: no unearned speedup)

Exit status 0 when every case met its expectation, 1 otherwise, 2 on bad arguments.
Honest cases run last, so they also show that the judge recovered from whatever the cheats did.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
EXPECT_KINDS = {"accept", "reject", "honest_timing"}


def find_cases(prefixes: list[str]) -> list[Path]:
    cases = sorted(p.parent for p in HERE.glob("*/expected.json"))
    if prefixes:
        cases = [c for c in cases if any(c.name.startswith(p) for p in prefixes)]
    # cheats first, honest ones last
    return sorted(
        cases, key=lambda c: (json.loads((c / "expected.json").read_text())["kind"] == "honest", c.name)
    )


def check_layout(case: Path) -> list[str]:
    """Problems with a case folder that need no GPU to find."""
    problems = []
    try:
        expected = json.loads((case / "expected.json").read_text())
    except (OSError, ValueError) as exc:
        return [f"expected.json unreadable: {exc}"]
    if expected.get("expect") not in EXPECT_KINDS:
        problems.append(f"expect must be one of {sorted(EXPECT_KINDS)}")
    if expected.get("kind") not in ("cheat", "honest"):
        problems.append("kind must be cheat or honest")
    if expected.get("kind") == "cheat" and not isinstance(expected.get("family"), int):
        problems.append("a cheat needs an integer family")
    if expected.get("expect") == "accept" and "min_reward" not in expected:
        problems.append("accept needs min_reward")
    if expected.get("expect") == "honest_timing" and "max_reward" not in expected:
        problems.append("honest_timing needs max_reward")
    if not expected.get("description"):
        problems.append("no description")
    for name in ("model.py", "model_new.py"):
        if not (case / name).is_file():
            problems.append(f"no {name}")
    if not any((case / "kernels").glob("*.cu")) and not any((case / "kernels").glob("*_binding.cpp")):
        problems.append("kernels/ has no .cu or _binding.cpp")
    try:
        from cuda_agent.task import check_task_runs, load_task

        check_task_runs(load_task(case / "model.py"))
    except Exception as exc:  # report any task problem
        problems.append(f"model.py: {exc}")
    return problems


def meets(expected: dict, verdict: dict) -> bool:
    reward, status = verdict["reward"], verdict["status"]
    if expected["expect"] == "accept":
        return status == "ok" and reward >= expected["min_reward"]
    if expected["expect"] == "reject":
        return reward == -1
    return reward <= expected["max_reward"]


def want(expected: dict) -> str:
    if expected["expect"] == "accept":
        return f"ok, >= {expected['min_reward']:+d}"
    if expected["expect"] == "reject":
        return "-1"
    return f"<= {expected['max_reward']:+d}"


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("prefixes", nargs="*", help="only cases whose folder name starts with one of these")
    parser.add_argument("--check", action="store_true", help="validate the case folders only (no GPU)")
    parser.add_argument("--build-only", action="store_true", help="validate and compile every case (no GPU)")
    parser.add_argument("--json", type=Path, help="write all verdicts to this file")
    parser.add_argument("--arch", help="CUDA architecture (default: the visible GPU, else 9.0)")
    parser.add_argument("--forward-timeout", type=float, default=60.0)
    args = parser.parse_args()

    cases = find_cases(args.prefixes)
    if not cases:
        print("no cases matched", file=sys.stderr)
        return 2
    bad = {c.name: p for c in cases if (p := check_layout(c))}
    for name, problems in bad.items():
        print(f"LAYOUT {name}: {'; '.join(problems)}")
    if args.check:
        print(f"{len(cases) - len(bad)}/{len(cases)} case folders valid")
        return 1 if bad else 0

    from cuda_agent.judge.build import BuildConfig, build_extension
    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.toolchain import default_arch

    build = BuildConfig(arch=args.arch or default_arch())
    if args.build_only:
        import tempfile

        failed = 0
        for case in cases:
            with tempfile.TemporaryDirectory() as out:
                result = build_extension(case / "kernels", Path(out), build)
            print(f"{'built ' if result.ok else 'FAILED'} {case.name} ({result.seconds:.0f} s)")
            if not result.ok:
                failed += 1
                print("  " + result.log.replace("\n", "\n  ")[:2000])
        return 1 if failed or bad else 0

    from cuda_agent.judge.api import judge

    config = JudgeConfig(build=build, forward_timeout_s=args.forward_timeout)
    results = []
    wrong = 0
    print(f"{'case':40s} {'fam':>3s} {'expect':14s} {'want':9s} {'status':14s} {'reward':>6s}  result")
    for case in cases:
        expected = json.loads((case / "expected.json").read_text())
        start = time.monotonic()
        verdict = judge(case, config=config).to_dict()
        ok = meets(expected, verdict)
        wrong += not ok
        family = str(expected.get("family", "-"))
        print(
            f"{case.name:40s} {family:>3s} {expected['expect']:14s} {want(expected):9s} {verdict['status']:14s} "
            f"{verdict['reward']:+6d}  {'pass' if ok else 'FAIL'} ({time.monotonic() - start:.0f} s)",
            flush=True,
        )
        if not ok:
            print(f"    reason: {verdict['reason'][:400]}")
        results.append({"case": case.name, "expected": expected, "verdict": verdict, "meets": ok})
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    print(f"\n{len(cases) - wrong}/{len(cases)} cases met their expectation")
    return 1 if wrong or bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
