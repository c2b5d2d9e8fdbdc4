"""The judge's warm build stage on a CPU: one `.cu` changed, objects and PCH cached.

    python benchmarks/judge_build_stage.py [--examples row_softmax layernorm] [--reps 3]

Per example and rep, a fresh variant (a comment appended to its first kernels/*.cu, so exactly one file
recompiles) goes through two paths in the same run, alternating so machine load falls on both alike:

  baseline: what the build stage did before (issue 12 stop 14): the static source rules with the
            preprocessor's cache emptied first (it was keyed on the whole stage, so any change re-ran g++ -E
            over torch's headers for every unit) and then, after them, `build_extension`;
  ours:     `Judgment.build_only()` as a judgment runs it: the static rules beside the build, the
            preprocessor re-run only on the changed unit.

Prints a table (median seconds per path and example), the ratio baseline / ours, and writes
judge_build_stage.json to --out. Needs nvcc and g++ (no GPU). Both paths share one object cache under
--out (warmed by a first untimed build of each example).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))


def variant(example: Path, root: Path, tag: str) -> Path:
    dest = root / tag / example.name
    shutil.copytree(example, dest, ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    first = sorted((dest / "kernels").glob("*.cu"))[0]
    with first.open("a", encoding="utf-8") as handle:
        handle.write(f"\n// variant {uuid.uuid4()}\n")
    return dest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--examples", nargs="+", default=["row_softmax", "gemm_bias_relu"])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="object cache (default: a fresh one under --out; the PCH then compiles first)")  # fmt: skip
    args = parser.parse_args()

    from cuda_agent.judge.config import JudgeConfig
    from cuda_agent.judge.decide.judgment import Judgment
    from cuda_agent.judge.trusted import preprocess
    from cuda_agent.judge.trusted.build import BuildConfig, build_extension
    from cuda_agent.judge.trusted.static_checks import check_kernel_sources, check_model_new
    from cuda_agent.task import load_task

    out = args.out or Path(tempfile.mkdtemp(prefix="judge-build-stage-"))
    out.mkdir(parents=True, exist_ok=True)
    work = out / "variants"
    build = BuildConfig(cache_dir=args.cache_dir or out / "objects")
    config = JudgeConfig(build=build, scratch_dir=out / "scratch")
    times: dict[str, dict[str, list[float]]] = {}

    def baseline(sub: Path) -> float:
        began = time.monotonic()
        preprocess._cache.clear()  # the old whole-stage key missed on every change
        assert not check_model_new((sub / "model_new.py").read_text())
        assert not check_kernel_sources(sub / "kernels")
        result = build_extension(sub / "kernels", out / "scratch" / f"b-{uuid.uuid4().hex[:8]}", build)
        assert result.ok, result.log
        return time.monotonic() - began

    def ours(sub: Path) -> float:
        judgment = Judgment(sub, load_task(sub / "model.py"), config)
        began = time.monotonic()
        try:
            verdict = judgment.build_only()
            if verdict is not None:
                raise RuntimeError(f"{sub.name}: build_only gave {verdict.status.value}: {verdict.reason[:300]}")
            return time.monotonic() - began
        finally:
            judgment.cleanup()

    for name in args.examples:
        example = REPO / "examples" / name
        print(f"[{name}] warming the object cache ...", flush=True)
        ours(variant(example, work, f"warm-{name}"))
        times[name] = {"baseline": [], "ours": []}
        for rep in range(args.reps):
            order = [("baseline", baseline), ("ours", ours)]
            if rep % 2:
                order.reverse()
            for label, run in order:
                took = run(variant(example, work, f"{label}-{name}-{rep}"))
                times[name][label].append(took)
                print(f"  [{name} {rep + 1}/{args.reps}] {label}: {took:.2f} s", flush=True)
    shutil.rmtree(work, ignore_errors=True)

    print(f"\n{'example':<20} {'baseline p50 s':>15} {'ours p50 s':>11} {'ratio':>7}")
    summary: dict[str, Any] = {}
    for name, per in times.items():
        b, o = statistics.median(per["baseline"]), statistics.median(per["ours"])
        summary[name] = {"baseline_s": per["baseline"], "ours_s": per["ours"], "baseline_p50": b, "ours_p50": o,
                         "ratio": b / o}  # fmt: skip
        print(f"{name:<20} {b:>15.2f} {o:>11.2f} {b / o:>6.2f}x")
    (out / "judge_build_stage.json").write_text(json.dumps(summary, indent=1))
    print(f"wrote {out / 'judge_build_stage.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
