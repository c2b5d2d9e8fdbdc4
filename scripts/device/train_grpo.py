"""Agentic GRPO on one GPU: part 1's stages make a fine-tuned tiny model, then `train grpo` trains it online.

Run by scripts/device/train_grpo.sh (which installs carried wheels). Part 1's pieces are reused from
scripts/device/train_rft.py (the scripted relu episode, the seeded build cache, the stage runner), and
every stage is the real command a user runs (`python3 -m cuda_agent.cli ...`):

1. Collect: the scripted policy plays the careful relu episode (write, compile, verify, finish) through
   `cuda-agent solve`, judged for real on this GPU.
2. `train rft-data` -> `train tiny-model` -> `train sft`: the tiny model memorises that episode.
3. `train grpo --tasks relu.py --model SFT`: GRPO with TRL's GRPOTrainer, our ten tools as its
   environment, every rollout rewarded by the local JudgeService on this GPU, for --steps optimiser steps.
4. The figures per step (reward mean, tool calls per rollout, loss, wall time) and a scan of /proc for
   judge processes left behind once training has returned.

Writes OUT/summary.json, OUT/grpo_steps.jsonl, OUT/rollouts.jsonl, OUT/grpo_curve.png, OUT/sft_loss.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts" / "device"))
sys.path.insert(0, str(ROOT / "src"))

import train_rft as rft  # noqa: E402  (part 1's device pieces: scripted episodes, cache seed, stage runner)
from scripted_llm import ScriptedLLM  # noqa: E402  (on the path train_rft puts it)


def become_subreaper() -> bool:
    """Make this process the reaper of its orphans (Linux PR_SET_CHILD_SUBREAPER): a judge worker that
    outlives the trainer, even one that called setsid, is re-parented here instead of to init, so it
    stays countable as ours while other jobs on the machine run judges of their own."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def judge_processes(*, ours_only: bool) -> list[dict[str, object]]:
    """Live processes running judge code: all on the machine, or only this script's descendants."""
    table: dict[int, tuple[int, str, str]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        table[int(entry.name)] = (int(fields[1]), fields[0], cmd)

    def descends_from_us(pid: int) -> bool:
        for _ in range(64):
            parent = table.get(pid, (0, "", ""))[0]
            if parent == os.getpid():
                return True
            if parent <= 1:
                return False
            pid = parent
        return False

    return [{"pid": pid, "cmdline": cmd[:200]} for pid, (_, state, cmd) in sorted(table.items())
            if "cuda_agent.judge" in cmd and state != "Z" and (not ours_only or descends_from_us(pid))]


def on_trainer_prompt(parquet: Path, tokenizer_dir: Path, grpo_argv: list[str]) -> dict[str, object]:
    """Give the kept episode the opening GRPO will show (its system and task messages and its tool schemas,
    token for token): a model that memorised one trajectory reproduces it only after the same prompt.
    The turns after the prompt are the collected ones, unchanged."""
    import argparse as ap

    from transformers import AutoTokenizer

    from cuda_agent.commands.train import add_parser, grpo_settings
    from cuda_agent.train.grpo import load_tasks, trainer_tool_schemas, training_rows
    from cuda_agent.train.rft_data import read_rows, write_parquet

    cli_parser = ap.ArgumentParser()
    add_parser(cli_parser.add_subparsers(dest="command"), "train")
    settings = grpo_settings(cli_parser.parse_args(grpo_argv))
    tasks, _ = load_tasks(settings.tasks)
    prompts = {r["task_name"]: r["prompt"] for r in training_rows(settings, tasks, AutoTokenizer.from_pretrained(tokenizer_dir))[0]}
    tools = json.dumps(trainer_tool_schemas(), ensure_ascii=False)
    rows = read_rows(parquet)
    for row in rows:
        system, user = prompts[row["task"]]
        row["messages"][0]["content"], row["messages"][1]["content"] = system["content"], user["content"]
        row["tools"] = tools
    write_parquet(rows, parquet)
    return {"rows": len(rows), "tasks": sorted(prompts), "tools": [t["function"]["name"] for t in json.loads(tools)]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--work", type=Path, default=Path("/tmp/train_grpo"))
    parser.add_argument("--sft-steps", type=int, default=400)
    parser.add_argument("--steps", type=int, default=3, help="GRPO optimiser steps")
    parser.add_argument("--generations", type=int, default=2, help="rollouts per group")
    parser.add_argument("--max-turns", type=int, default=3, help="model turns per rollout")
    parser.add_argument("--max-completion-length", type=int, default=4096)
    parser.add_argument("--faults", action="store_true",
                        help="inject judge failures and GPU contention (grpo_faults.py): masked, counted, the step goes on")
    args = parser.parse_args()
    out, work = args.out.resolve(), args.work.resolve()
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work, ignore_errors=True)
    (work / "tasks").mkdir(parents=True)
    env = {**os.environ, "CUDA_AGENT_CACHE": str(work / "cache"), "HF_HUB_OFFLINE": "1", "PYTHON": sys.executable,
           "TRL_EXPERIMENTAL_SILENCE": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")])}  # fmt: skip
    os.environ.update({k: env[k] for k in ("CUDA_AGENT_CACHE", "HF_HUB_OFFLINE")})
    stages = rft.Stages(out, env)
    summary = stages.summary
    subreaper = become_subreaper()
    start = time.monotonic()
    import torch
    import transformers
    import trl

    summary["environment"] = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                              "transformers": transformers.__version__, "trl": trl.__version__}  # fmt: skip
    (work / "tasks" / "relu.py").write_text(rft.TASK.format(op="relu"))

    # 1. collect the careful relu episode, judged for real
    t = time.monotonic()
    rft.seed_cache(work, env)
    stages.times["seed_cache"] = round(time.monotonic() - t, 1)
    with ScriptedLLM(rft.policy) as scripted:
        done = stages.run("collect", rft.cli("solve", str(work / "tasks" / "relu.py"), "--model", "scripted",
                                             "--base-url", scripted.url, "--max-tokens", "4096", *rft.BUDGET,
                                             "--runs-dir", str(work / "runs"), "--cache-seed", str(work / "seed"),
                                             "--json"), timeout=300)  # fmt: skip
    summary["collected"] = {r["task"]: {"reward": r["reward"], "judge": (r.get("judge") or {}).get("status"),
                                        "exit": r["exit"], "turns": r["turns"]} for r in rft.json_lines(done.stdout)}  # fmt: skip
    stages.save()

    # 2. part 1: rft-data (the episode whatever its reward: this run is about GRPO's mechanics), tiny model, sft
    done = stages.run("rft_data", rft.cli("train", "rft-data", str(work / "runs"), "--out", str(work / "sft.parquet"),
                                          "--min-reward", "-1", "--task", "relu", "--json"))  # fmt: skip
    summary["rft_data"] = (rft.json_lines(done.stdout) or [{}])[0]
    stages.run("tiny_model", rft.cli("train", "tiny-model", "--out", str(work / "tiny"), "--corpus", str(work / "runs"),
                                     "--json"))  # fmt: skip
    grpo_argv = ["train", "grpo", "--tasks", str(work / "tasks" / "relu.py"), "--model", str(work / "sft"),
                 "--out", str(work / "grpo"), "--num-generations", str(args.generations), "--max-steps", str(args.steps),
                 "--max-turns", str(args.max_turns), "--max-completion-length", str(args.max_completion_length),
                 "--lr", "1e-5", "--time-limit", "300", "--bash-timeout", "120", "--cache-seed", str(work / "seed"),
                 "--json"]  # fmt: skip
    if (work / "sft.parquet").is_file() and (work / "tiny").is_dir():
        summary["sft_prompt"] = on_trainer_prompt(work / "sft.parquet", work / "tiny", grpo_argv)
    done = stages.run("sft", rft.cli("train", "sft", "--data", str(work / "sft.parquet"), "--model", str(work / "tiny"),
                                     "--out", str(work / "sft"), "--max-steps", str(args.sft_steps), "--lr", "1e-3",
                                     "--warmup-steps", "10", "--max-length", "32768", "--no-gradient-checkpointing",
                                     "--logging-steps", "25", "--json"))  # fmt: skip
    sft = (rft.json_lines(done.stdout) or [{}])[0]
    summary["sft"] = {k: v for k, v in sft.items() if k not in ("loss_curve", "settings")}
    if (work / "sft" / "sft_loss.png").is_file():
        shutil.copy(work / "sft" / "sft_loss.png", out / "sft_loss.png")
    stages.save()
    if done.returncode != 0:
        return 1

    # 3. GRPO, every rollout judged by the local JudgeService on this GPU
    command = [sys.executable, str(ROOT / "scripts" / "device" / "grpo_faults.py"), *grpo_argv] if args.faults else rft.cli(*grpo_argv)
    try:
        done = stages.run("grpo", command, timeout=420)
    except subprocess.TimeoutExpired:  # the check below then shows what the killed trainer left running
        print("!! grpo ran past 420 s and was killed", flush=True)
        done = subprocess.CompletedProcess([], returncode=124, stdout="")
    grpo = (rft.json_lines(done.stdout) or [{}])[0]
    time.sleep(1.0)  # let the kernel reap whatever exited with the trainer
    left = judge_processes(ours_only=True)
    elsewhere = [p for p in judge_processes(ours_only=False) if p not in left]
    for name in ("grpo_steps.jsonl", "rollouts.jsonl", "grpo_curve.png", "grpo_summary.json"):
        if (work / "grpo" / name).is_file():
            shutil.copy(work / "grpo" / name, out / name)
    per_step = grpo.get("per_step") or []
    summary["grpo"] = {k: v for k, v in grpo.items() if k not in ("per_step", "settings")}
    summary["grpo_per_step"] = [{k: r.get(k) for k in ("step", "reward_mean", "reward_std", "tool_call_frequency",
                                                       "loss", "judge_statuses", "tool_calls", "step_s", "wall_s")}
                                for r in per_step]  # fmt: skip
    summary["judge_processes_left"] = {"in_trainer": grpo.get("judge_processes_left"), "ours": left,
                                       "subreaper": subreaper, "other_jobs_on_machine": len(elsewhere)}
    summary["wall_s"] = round(time.monotonic() - start, 1)
    judged = sum((r.get("rollouts") or 0) for r in per_step)
    real = sum(n for r in per_step for status, n in (r.get("judge_statuses") or {}).items()
               if status not in ("unavailable", "judge_error"))  # fmt: skip
    summary["done_when"] = {
        "grpo_exit_0": done.returncode == 0,
        "at_least_3_steps": (grpo.get("steps") or 0) >= 3,
        "every_rollout_judged_for_real": judged > 0 and real == judged,
        "per_step_logs": len(per_step) >= 3 and all(r.get("loss") is not None and r.get("reward_mean") is not None
                                                    for r in per_step),
        "no_judge_process_left": not left and not grpo.get("judge_processes_left"),
    }
    if args.faults:
        injected = grpo.get("injected") or []
        raised = [i for i in injected if i["fault"] == "raise"]
        contended = [i for i in injected if i["fault"] == "contention"]
        masked = len(raised) + sum(1 for i in contended if i["final_reward"] is None)
        summary["faults"] = {"injected": injected, "raised": len(raised), "contended": len(contended),
                             "masked_expected": masked, "unjudged": grpo.get("unjudged")}  # fmt: skip
        summary["done_when"].update({
            "at_least_the_steps_asked": (grpo.get("steps") or 0) >= args.steps,
            "faults_injected": bool(raised) and bool(contended),
            "every_fault_masked_and_counted": grpo.get("unjudged") == masked,
            # -1 under contention only where the same workspace earns -1 on a quiet GPU (grpo_faults re-judges)
            "contention_never_minus_1": not any(i.get("minus_1_from_contention", i["final_reward"] == -1)
                                                for i in contended),
            "every_rollout_judged_for_real": judged > 0 and real == judged - len(raised)
                                             - sum(1 for i in contended if i["final_status"] == "judge_error"),
        })  # fmt: skip
    stages.save()
    print("\nstep  reward mean  tool calls/rollout  loss      judge verdicts              step s  total s")
    for r in per_step:
        verdicts = ", ".join(f"{k} {v}" for k, v in sorted((r.get("judge_statuses") or {}).items()))
        print(f"{r['step']:>4}  {_f(r.get('reward_mean')):>11}  {_f(r.get('tool_call_frequency')):>18}  "
              f"{_f(r.get('loss')):<8}  {verdicts:<26}  {r.get('step_s', 0):>6.1f}  {r.get('wall_s', 0):>7.1f}")  # fmt: skip
    print(json.dumps({k: summary[k] for k in ("done_when", "judge_processes_left", "stages_s", "wall_s")}, indent=2))
    return 0 if all(summary["done_when"].values()) else 1


def _f(value: object) -> str:
    return f"{value:+.4f}" if isinstance(value, (int, float)) else "-"


if __name__ == "__main__":
    sys.exit(main())
