"""Disk an episode adds and the time of its first compile: shared read-only cache vs per-episode copies.

Each simulated episode lays out a workspace for a bundled task, puts in the example's kernels and runs
the workspace's own `bash utils/compile.sh` once (its first compile), like an agent's first build. Layouts,
measured in the same run on the same machine:

- `copy` (the old `solve --cache-seed`): the warmed judge cache is copied into the episode's private cache;
- `cold` (the old default, no seed): the episode's private cache starts empty and builds its own PCH;
- `shared` (now): the episode's private cache starts empty and the warmed cache is a read-only layer
  (`$CUDA_AGENT_SHARED_CACHE`), read in place.

Prints a table (disk added per episode, first-compile seconds, 100-episode extrapolation) and the ratios
of `shared` against the old layouts; `--json` for one JSON object. Usage:

    python benchmarks/episode_cache_disk.py [--episodes 2] [--no-cold] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from cuda_agent.judge.trusted.cache import SHARED_ENV, warm_shared  # noqa: E402
from cuda_agent.task import load_task  # noqa: E402
from cuda_agent.workspace import materialize  # noqa: E402

EXAMPLE = ROOT / "examples" / "elementwise_chain"
TARGET_BYTES_PER_100 = 1 << 30


def _bytes(path: Path) -> int:
    return sum(p.lstat().st_size for p in path.rglob("*") if p.is_file() and not p.is_symlink())


def episode(work: Path, name: str, layout: str, seed: Path) -> dict[str, float]:
    """One episode's workspace and first compile; returns the disk it added and the compile time."""
    ws = materialize(load_task(EXAMPLE / "model.py"), work / name / "workspace")
    shutil.copytree(EXAMPLE / "kernels", ws / "kernels", dirs_exist_ok=True)
    shutil.copyfile(EXAMPLE / "model_new.py", ws / "model_new.py")
    base = _bytes(ws)
    private = ws / ".cache" / "cuda-agent"
    env = {**os.environ, "PYTHON": sys.executable, "CUDA_AGENT_CACHE": str(private)}
    env.pop(SHARED_ENV, None)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), env.get("PYTHONPATH")]))
    if layout == "copy":
        shutil.copytree(seed, private, dirs_exist_ok=True)
    elif layout == "shared":
        env[SHARED_ENV] = str(seed)
    began = time.monotonic()
    done = subprocess.run(["bash", "utils/compile.sh"], cwd=ws, env=env, capture_output=True, text=True,
                          timeout=900)  # fmt: skip
    seconds = time.monotonic() - began
    if done.returncode != 0:
        raise SystemExit(f"{layout} episode {name}: compile.sh failed:\n{done.stdout}\n{done.stderr}")
    return {"bytes_added": _bytes(ws) - base, "first_compile_s": seconds, "own_pch": (private / "objects" / "pch").exists()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--episodes", type=int, default=2, help="episodes per layout (default 2)")
    parser.add_argument("--no-cold", action="store_true", help="skip the cold layout (it compiles a PCH each)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    layouts = ["copy", "shared"] + ([] if args.no_cold else ["cold"])
    with tempfile.TemporaryDirectory(prefix="cuda-agent-cache-bench-") as tmp:
        work = Path(tmp)
        began = time.monotonic()
        warmed = warm_shared(work / "seed")
        warm_s = time.monotonic() - began
        if not (warmed.ok and warmed.pch):
            raise SystemExit(f"warming the shared cache failed: {warmed.message}")
        print(f"warmed the shared cache once in {warm_s:.1f} s ({_bytes(warmed.root) / 2**20:.0f} MiB)",
              file=sys.stderr)  # fmt: skip
        results: dict[str, list[dict[str, float]]] = {layout: [] for layout in layouts}
        for index in range(args.episodes):  # interleaved, so machine load hits every layout alike
            for layout in layouts:
                if layout == "cold" and index > 0:
                    continue  # one cold episode shows it; each costs a whole PCH compile
                run = episode(work, f"{layout}-{index}", layout, warmed.root)
                results[layout].append(run)
                print(f"  {layout:6s} episode {index}: +{run['bytes_added'] / 2**20:7.1f} MiB, first compile "
                      f"{run['first_compile_s']:5.1f} s", file=sys.stderr)  # fmt: skip

    summary = {}
    for layout, runs in results.items():
        per = statistics.mean(r["bytes_added"] for r in runs)
        summary[layout] = {
            "episodes": len(runs), "bytes_per_episode": per, "gb_per_100_episodes": per * 100 / 1e9,
            "first_compile_s": statistics.median(r["first_compile_s"] for r in runs),
            "own_pch": any(r["own_pch"] for r in runs),
        }  # fmt: skip
    shared = summary["shared"]
    ratios = {f"disk_{old}_over_shared": summary[old]["bytes_per_episode"] / max(1.0, shared["bytes_per_episode"])
              for old in layouts if old != "shared"}  # fmt: skip
    ratios.update({f"first_compile_{old}_over_shared": summary[old]["first_compile_s"] / shared["first_compile_s"]
                   for old in layouts if old != "shared"})  # fmt: skip
    target_met = shared["bytes_per_episode"] * 100 < TARGET_BYTES_PER_100 and not shared["own_pch"]
    report = {"warm_s": warm_s, "layouts": summary, "ratios": ratios, "target_100_episodes_under_1GB": target_met}
    if args.json:
        print(json.dumps(report, sort_keys=True))
        return 0 if target_met else 1
    print(f"{'layout':8s} {'episodes':>8s} {'MiB/episode':>12s} {'GB/100 episodes':>16s} {'first compile s':>16s}")
    for layout, row in summary.items():
        print(f"{layout:8s} {row['episodes']:8d} {row['bytes_per_episode'] / 2**20:12.1f} "
              f"{row['gb_per_100_episodes']:16.2f} {row['first_compile_s']:16.1f}")  # fmt: skip
    for name, value in ratios.items():
        print(f"{name}: {value:.1f}x")
    print(f"target (100 compiling episodes add < 1 GB, first compile reuses the shared PCH): "
          f"{'met' if target_met else 'NOT met'}")  # fmt: skip
    return 0 if target_met else 1


if __name__ == "__main__":
    sys.exit(main())
