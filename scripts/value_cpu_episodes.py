"""The device run's value data, rebuilt on a CPU machine: the 44 scripted episodes of
scripts/device/train_rft.py played through `cuda-agent solve --no-judge` with the real tools.

Why: `train value` is the one stage of the RFT device run whose result depends on the data's detail
(which tokens tell a good episode from a bad one), so its failures must be reproducible without a GPU.
What runs for real here: the agent loop, the scripted model over HTTP, the workspace tools and nvcc
(sloppy kernels fail to compile with the real compiler error; careful and hasty ones compile).
What differs from the H200: verification and profiling report that there is no GPU, so a careful and a
hasty kernel are told apart only by the code the model wrote (on the device the verification's PASS or
FAIL also says it); that makes this data harder for the critic, not easier. A CPU cannot judge, so each
episode gets the verdict the H200's judge gave its submission that morning (careful ok +1, sloppy
compile_error -1, hasty incorrect -1: /work/shared_dev/rft/summary.json, `judgments`), recorded in the
trajectory as `judge.reason`.

    .venv/bin/python scripts/value_cpu_episodes.py --work /tmp/value_cpu   # about 5 min on 2 cores
    .venv/bin/python -m cuda_agent.cli train rft-data /tmp/value_cpu/runs --out v.parquet \
        --min-reward -1 --any-exit --keep-duplicates

A device run copies its own collected episodes to OUT/value_trajectories.tar.gz (and value.parquet):
`tar xzf` it and point rft-data at runs/ to study a device failure as it happened.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEVICE_VERDICTS = {"careful": ("ok", 1), "sloppy": ("compile_error", -1), "hasty": ("incorrect", -1)}


def load_train_rft():
    spec = importlib.util.spec_from_file_location("train_rft", ROOT / "scripts" / "device" / "train_rft.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["train_rft"] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def give_device_verdicts(runs: Path, episodes: dict) -> dict[str, int]:
    """Write into each trajectory the verdict the H200 gave its behaviour's submission."""
    from cuda_agent.agent import load_trajectory
    from cuda_agent.agent.trajectory import dumps

    rewards = {}
    for path in sorted(runs.glob("*/trajectory.jsonl")):
        record = load_trajectory(path)
        name = path.parent.name  # solve's run folder is the task's name
        behaviour = episodes[name].behaviour
        status, reward = DEVICE_VERDICTS[behaviour]
        record["judge"] = {"status": status, "reward": reward, "verdict": None,
                           "reason": f"H200 verdict of the {behaviour} submission (CPU stand-in)"}  # fmt: skip
        record["reward"] = reward
        path.write_text(dumps(record) + "\n")
        rewards[name] = reward
    return rewards


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/value_cpu"))
    parser.add_argument("-j", "--concurrency", type=int, default=2)
    parser.add_argument("--isolation", default="none",
                        help="Bash sandbox (none, as on the device, which has no bwrap: the builds then run at the "
                        "workspace's own path and hit the seeded cache)")
    args = parser.parse_args()
    rft = load_train_rft()
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    (work / "tasks").mkdir(parents=True)
    env = {**os.environ, "CUDA_AGENT_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1", "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    for name, episode in rft.EPISODES.items():
        (work / "tasks" / f"{name}.py").write_text(rft.TASK.format(op=episode.op))
    start = time.monotonic()
    rft.seed_cache(work, env)
    print(f"seeded the build cache in {time.monotonic() - start:.0f} s", flush=True)
    with rft.ScriptedLLM(rft.policy) as scripted:
        done = subprocess.run(rft.cli("solve", str(work / "tasks"), "--model", "scripted", "--base-url", scripted.url,
                                      "--max-tokens", "4096", *rft.BUDGET, "--runs-dir", str(work / "runs"), "-j",
                                      str(args.concurrency), "--cache-seed", str(work / "seed"), "--no-judge", "--json",
                                      "--isolation", args.isolation),
                              env=env, cwd=ROOT, stdout=subprocess.PIPE, text=True, timeout=3600)  # fmt: skip
    rows = rft.json_lines(done.stdout)
    rewards = give_device_verdicts(work / "runs", rft.EPISODES)
    print(json.dumps({"episodes": len(rows), "exits": sorted({r.get("exit") for r in rows}),
                      "rewarded": sum(1 for r in rewards.values() if r > 0), "failed": sum(1 for r in rewards.values() if r < 0),
                      "wall_s": round(time.monotonic() - start, 1), "runs": str(work / "runs")}))  # fmt: skip
    return 0 if len(rows) == len(rft.EPISODES) else 1


if __name__ == "__main__":
    sys.exit(main())
