"""`cuda-agent train {rft-data,sft,value,tiny-model,grpo}`: the stages of the training recipe.

  rft-data    trajectories from `solve` -> parquet of kept episodes (table of kept / dropped by reason)
  judge-runs  judge `solve --no-judge` episodes once per distinct final submission, verdicts into each
  sft         RFT on that parquet with TRL's SFTTrainer (assistant-only loss); `accelerate launch` for GPUs
  value       critic pretraining (token-level value head, MSE to the episode's reward on assistant tokens)
  tiny-model  build a tiny offline model (own BPE, chat template, random Qwen2 weights) for tests and demos
  grpo        online agentic RL on one GPU: TRL's GRPOTrainer, our tools as its environment, the judge's reward
  verl-data   tasks -> verl's RL parquet (stage 1 single-turn or stage 4 agent rows) for recipes/cuda_agent/

Training engines import only when a command runs. Every command prints a short summary and can write
it as JSON (`--json`); bad arguments or data exit 2 with a message naming the fix.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


def add_parser(subparsers: argparse._SubParsersAction, name: str) -> None:
    parser = subparsers.add_parser(name, help="build training data and train (RFT, value pretraining)",
                                   description="Training stages of the CUDA Agent recipe.")  # fmt: skip
    stages = parser.add_subparsers(dest="stage", metavar="STAGE", required=True)

    data = stages.add_parser("rft-data", help="trajectories -> parquet of kept episodes",
                             description="Keep episodes by reward and filters; write messages + tools as parquet.")  # fmt: skip
    data.add_argument("trajectories", nargs="+", type=Path, help="trajectory .jsonl files or solve --runs-dir folders")
    data.add_argument("--out", type=Path, required=True, help="parquet file to write")
    data.add_argument("--min-reward", type=float, default=2.0, help="keep episodes with at least this reward")
    data.add_argument("--max-reward", type=float, help="and at most this reward")
    data.add_argument("--per-task", type=int, help="keep at most N episodes per task (the best ones)")
    data.add_argument("--max-tokens", type=int, default=131_072, help="drop episodes longer than this (tokens)")
    data.add_argument("--exits", default="finished,submitted",
                      help="exit statuses kept, comma-separated")
    data.add_argument("--any-exit", action="store_true", help="keep every exit status (value data)")
    data.add_argument("--task", action="append", dest="tasks", help="keep only this task (repeatable)")
    data.add_argument("--keep-duplicates", action="store_true", help="keep episodes with the same final kernel")
    data.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    data.set_defaults(handler=run_rft_data)

    verdicts = stages.add_parser("judge-runs", help="judge `solve --no-judge` episodes, once per distinct submission",
                                 description="Group finished, unjudged episodes by task and final files; judge one "
                                 "workspace per group and write its verdict and reward into every episode of it.")  # fmt: skip
    verdicts.add_argument("trajectories", nargs="+", type=Path, help="trajectory files or solve --runs-dir folders")
    verdicts.add_argument("--judge-url", help="judge on a `cuda-agent serve` server (token in $CUDA_AGENT_JUDGE_TOKEN)")
    verdicts.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    verdicts.set_defaults(handler=run_judge_runs)

    sft = stages.add_parser("sft", help="RFT with TRL's SFTTrainer (assistant-only loss)",
                            description="Fine-tune a causal LM on rft-data parquet. Several GPUs: "
                            "accelerate launch --config_file <fsdp.yaml> -m cuda_agent.cli train sft ...")  # fmt: skip
    _common(sft, default_lr=1e-5)
    sft.add_argument("--dtype", default="auto", help="weights dtype when loading (auto, bfloat16, float32)")
    sft.add_argument("--no-gradient-checkpointing", action="store_true")
    sft.set_defaults(handler=run_sft)

    value = stages.add_parser("value", help="pretrain a token-level critic on rewarded and failed episodes",
                              description="Train AutoModelForTokenClassification (num_labels=1) to predict the "
                              "episode's milestone reward at every assistant token.")  # fmt: skip
    _common(value, default_lr=5e-5)
    value.add_argument("--eval-fraction", type=float, default=0.25, help="episodes held out for evaluation")
    value.add_argument("--eval-every", type=int, default=0,
                       help="also evaluate the held-out episodes every N steps (0: before and after only)")
    value.add_argument("--max-grad-norm", type=float, default=1.0, help="gradient clipping")
    value.add_argument("--gradient-checkpointing", action="store_true")
    value.add_argument("--save-steps", type=int, default=0,
                       help="write a resumable checkpoint under --out every N steps, the two newest kept (0: none)")
    value.add_argument("--resume", metavar="latest|DIR",
                       help="continue from the newest checkpoint under --out (latest) or from a checkpoint folder")
    value.set_defaults(handler=run_value)

    tiny = stages.add_parser("tiny-model", help="build a tiny offline model (tokenizer, template, weights)",
                             description="Train a byte-level BPE on our own text (plus trajectories given), "
                             "attach the chat template, save a random-init Qwen2 model.")  # fmt: skip
    tiny.add_argument("--out", type=Path, required=True)
    tiny.add_argument("--corpus", nargs="*", type=Path, default=[], help="trajectory files/folders added to the corpus")
    tiny.add_argument("--vocab-size", type=int, default=8192)
    tiny.add_argument("--hidden-size", type=int, default=384)
    tiny.add_argument("--layers", type=int, default=6)
    tiny.add_argument("--heads", type=int, default=6)
    tiny.add_argument("--kv-heads", type=int, default=2)
    tiny.add_argument("--intermediate-size", type=int, default=1536)
    tiny.add_argument("--seed", type=int, default=0)
    tiny.add_argument("--json", action="store_true")
    tiny.set_defaults(handler=run_tiny)

    grpo = stages.add_parser("grpo", help="agentic GRPO on one GPU (TRL GRPOTrainer, our tools, the judge's reward)",
                             description="Online RL with TRL's GRPOTrainer: each rollout is a multi-turn episode "
                             "with the ten workspace tools, rewarded by the judge (local JudgeService or --judge-url). "
                             "TRL has no PPO with a critic any more; the critic path is verl (recipes/cuda_agent).")  # fmt: skip
    grpo.add_argument("--tasks", nargs="+", required=True,
                      help="task .py files, task folders (e.g. a KernelBench level), Ops-6K or synth .parquet files")
    grpo.add_argument("--model", required=True, help="model folder or hub id (loaded with from_pretrained)")
    grpo.add_argument("--out", type=Path, required=True, help="folder for the trained model and the logs")
    grpo.add_argument("--judge-url", help="judge on a `cuda-agent serve` server (token in $CUDA_AGENT_JUDGE_TOKEN); "
                      "default: a local JudgeService on this GPU")  # fmt: skip
    grpo.add_argument("--judge-timeout", type=float, default=900.0,
                      help="seconds a remote judgment may take before the judge counts as down")
    grpo.add_argument("--num-generations", type=int, default=4, help="rollouts per task in a group")
    grpo.add_argument("--prompts-per-step", type=int, default=1, help="tasks per optimiser step")
    grpo.add_argument("--max-steps", type=int, default=150, help="optimiser steps (150 is the paper's stage 4)")
    grpo.add_argument("--lr", type=float, default=1e-6, help="learning rate")
    grpo.add_argument("--grad-accum", type=int, default=1)
    grpo.add_argument("--max-completion-length", type=int, default=16_384,
                      help="tokens of one rollout after the prompt, tool results included")
    grpo.add_argument("--max-turns", type=int, default=16, help="model turns per rollout")
    grpo.add_argument("--time-limit", type=float, default=1800.0, help="seconds of Bash per rollout")
    grpo.add_argument("--temperature", type=float, default=1.0)
    grpo.add_argument("--beta", type=float, default=0.0, help="KL coefficient (0: no reference model)")
    grpo.add_argument("--loss-type", default="dapo", help="TRL's loss_type (dapo, grpo, dr_grpo, ...)")
    grpo.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                      help="bf16 mixed precision (default: when the GPU supports it)")
    grpo.add_argument("--gradient-checkpointing", action="store_true")
    grpo.add_argument("--cache-seed", dest="cache_seed_dir", help="judge cache folder the rollouts' compiles read")
    grpo.add_argument("--bash-timeout", type=float, default=300.0, help="seconds a Bash command may run when the model sets no timeout")
    grpo.add_argument("--seed", type=int, default=0)
    grpo.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")
    grpo.set_defaults(handler=run_grpo)

    verl = stages.add_parser("verl-data", help="tasks -> verl RL parquet (recipes/cuda_agent/ stages 1 and 4)",
                             description="Convert tasks (an Ops-6K or `cuda-agent synth` parquet, task files or "
                             "folders, a KernelBench checkout) into verl's RL parquet: OUT/train.parquet and "
                             "OUT/val.parquet.")  # fmt: skip
    verl.add_argument("tasks", nargs="+", help="task parquet, .py file, folder of tasks, or KernelBench/KernelBench")
    verl.add_argument("--out", type=Path, required=True, help="folder for train.parquet (and val.parquet)")
    verl.add_argument("--format", choices=("single_turn", "agent"), default="agent",
                      help="single_turn: stage 1 (one response, reward function); agent: stage 4 (CudaAgentLoop)")
    verl.add_argument("--val-size", type=int, default=0, help="tasks held out at random into val.parquet")
    verl.add_argument("--seed", type=int, default=0, help="seed of the held-out draw")
    verl.add_argument("--tokenizer", help="count every prompt (tool schemas included) with this model's tokenizer "
                      "(a folder or hub id: the recipe's MODEL / ACTOR)")  # fmt: skip
    verl.add_argument("--max-prompt-tokens", type=int, default=8192,
                      help="with --tokenizer: the prompt limit (the recipe's PROMPT_LEN, verl's data.max_prompt_length)")
    verl.add_argument("--overlong", choices=("filter", "refuse"), default="filter",
                      help="a prompt over the limit: skip its task with the count (filter) or write nothing (refuse)")
    verl.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    verl.set_defaults(handler=run_verl_data)


def _common(parser: argparse.ArgumentParser, default_lr: float) -> None:
    parser.add_argument("--data", type=Path, required=True, help="parquet written by `cuda-agent train rft-data`")
    parser.add_argument("--model", required=True, help="model folder or hub id (loaded with from_pretrained)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the trained model and its summary")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--max-steps", type=int, default=-1, help="> 0: train this many steps (overrides --epochs)")
    parser.add_argument("--lr", type=float, default=default_lr, help="learning rate")
    parser.add_argument("--batch-size", type=int, default=1, help="per device")
    parser.add_argument("--grad-accum", type=int, default=1)
    parser.add_argument("--max-length", type=int, default=32_768, help="tokens per conversation (longer: cut)")
    parser.add_argument("--warmup-steps", type=int, default=0)
    parser.add_argument("--bf16", action=argparse.BooleanOptionalAction, default=None,
                        help="bf16 mixed precision (default: when the GPU supports it)")  # fmt: skip
    parser.add_argument("--logging-steps", type=int, default=1, help="log the loss every N steps")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print the summary as JSON on stdout")


def _fail(message: str) -> int:
    print(f"error: {message}", file=sys.stderr)
    return 2


def _emit(summary: dict[str, Any], as_json: bool, lines: list[str]) -> None:
    if as_json:
        print(json.dumps(summary), flush=True)
    print("\n".join(lines), file=sys.stderr, flush=True)


def run_rft_data(args: argparse.Namespace) -> int:
    from cuda_agent.train.rft_data import Filters, select, write_parquet

    exits = None if args.any_exit else tuple(e.strip() for e in args.exits.split(",") if e.strip())
    filters = Filters(min_reward=args.min_reward, max_reward=args.max_reward, exits=exits,
                      max_tokens=args.max_tokens, per_task=args.per_task, dedupe=not args.keep_duplicates,
                      tasks=tuple(args.tasks) if args.tasks else None)  # fmt: skip
    if args.per_task is not None and args.per_task < 1:
        return _fail("--per-task must be at least 1")
    try:
        rows, report = select(args.trajectories, filters)
    except (FileNotFoundError, OSError) as e:
        return _fail(str(e))
    write_parquet(rows, args.out)
    summary = {**report.to_dict(), "out": str(args.out)}
    lines = [report.table(), f"wrote {len(rows)} row(s) to {args.out}"]
    if not rows:
        lines.append("nothing kept: loosen --min-reward / --exits, or check that the episodes were judged")
    _emit(summary, args.json, lines)
    return 0


def run_judge_runs(args: argparse.Namespace) -> int:
    import os

    from cuda_agent.train.verdicts import judge_distinct

    if args.judge_url:
        if not os.environ.get("CUDA_AGENT_JUDGE_TOKEN"):
            return _fail("--judge-url needs the judge server's token in $CUDA_AGENT_JUDGE_TOKEN")
        from cuda_agent.service.client import RemoteJudge

        judge = RemoteJudge(args.judge_url)
    else:
        from cuda_agent.agent.judging import LocalJudge

        judge = LocalJudge()
    try:
        report = judge_distinct(args.trajectories, judge, progress=lambda line: print(line, file=sys.stderr, flush=True))
    except (FileNotFoundError, OSError) as e:
        return _fail(str(e))
    _emit(report.to_dict(), args.json, [report.table()])
    return 0


def _check_data(args: argparse.Namespace) -> str | None:
    if args.max_length < 1:
        return f"--max-length must be at least 1 token (got {args.max_length})"
    if not args.data.is_file():
        return f"no such data file: {args.data} (write it with `cuda-agent train rft-data ... --out {args.data}`)"
    return None


def run_sft(args: argparse.Namespace) -> int:
    from cuda_agent.train.sft import SFTSettings, run_sft

    problem = _check_data(args)
    if problem:
        return _fail(problem)
    settings = SFTSettings(data=args.data, model=args.model, out=args.out, epochs=args.epochs, max_steps=args.max_steps,
                           learning_rate=args.lr, batch_size=args.batch_size, grad_accum=args.grad_accum,
                           max_length=args.max_length, bf16=args.bf16, warmup_steps=args.warmup_steps,
                           gradient_checkpointing=not args.no_gradient_checkpointing, seed=args.seed,
                           logging_steps=args.logging_steps,
                           dtype=args.dtype)  # fmt: skip
    try:
        summary = run_sft(settings)
    except (ValueError, OSError) as e:
        return _fail(str(e))
    _emit(summary, args.json, [
        f"sft: {summary['rows']} conversation(s), {summary['steps']} step(s), loss {summary['first_loss']:.4g} -> "
        f"{summary['last_loss']:.4g}, {summary['wall_s']:.0f} s; model in {summary['out']}",
    ])  # fmt: skip
    return 0


def run_value(args: argparse.Namespace) -> int:
    from cuda_agent.train.value import ValueSettings, run_value

    problem = _check_data(args)
    if problem:
        return _fail(problem)
    settings = ValueSettings(data=args.data, model=args.model, out=args.out, epochs=args.epochs,
                             max_steps=args.max_steps, learning_rate=args.lr, batch_size=args.batch_size,
                             grad_accum=args.grad_accum, max_length=args.max_length, eval_fraction=args.eval_fraction,
                             bf16=args.bf16, gradient_checkpointing=args.gradient_checkpointing,
                             warmup_steps=args.warmup_steps, seed=args.seed, logging_steps=args.logging_steps,
                             eval_every=args.eval_every, max_grad_norm=args.max_grad_norm,
                             save_steps=args.save_steps, resume=args.resume)  # fmt: skip
    try:
        summary = run_value(settings)
    except (ValueError, OSError) as e:
        return _fail(str(e))
    before, after = summary["heldout_before"], summary["heldout_after"]
    _emit(summary, args.json, [
        f"value: {summary['train_episodes']} train / {summary['heldout_episodes']} held-out episode(s), "
        f"{summary['steps']} step(s), {summary['wall_s']:.0f} s; critic in {summary['out']}",
        f"held-out value loss {before['value_loss']:.4g} -> {after['value_loss']:.4g}, explained variance "
        f"{before['explained_variance']:.3f} -> {after['explained_variance']:.3f}",
    ])  # fmt: skip
    return 0


def run_tiny(args: argparse.Namespace) -> int:
    from cuda_agent.train.tiny import TinySpec, build_tiny_model, trajectory_texts

    spec = TinySpec(vocab_size=args.vocab_size, hidden_size=args.hidden_size, layers=args.layers, heads=args.heads,
                    kv_heads=args.kv_heads, intermediate_size=args.intermediate_size, seed=args.seed)  # fmt: skip
    if spec.hidden_size % spec.heads or spec.heads % spec.kv_heads:
        return _fail("--hidden-size must be a multiple of --heads, and --heads a multiple of --kv-heads")
    try:
        extra = trajectory_texts(args.corpus) if args.corpus else []
    except (FileNotFoundError, OSError) as e:
        return _fail(str(e))
    info = build_tiny_model(args.out, spec, extra)
    _emit(info, args.json, [f"tiny model: {info['parameters'] / 1e6:.1f}M parameters, vocabulary {info['vocab_size']}, "
                            f"in {info['path']}"])  # fmt: skip
    return 0


def run_grpo(args: argparse.Namespace) -> int:
    import os

    from cuda_agent.train.grpo import run_grpo

    if args.judge_url and not os.environ.get("CUDA_AGENT_JUDGE_TOKEN"):
        return _fail("--judge-url needs the judge server's token in $CUDA_AGENT_JUDGE_TOKEN")
    if args.num_generations < 2:
        return _fail("--num-generations must be at least 2: GRPO compares rollouts within a group")
    if args.max_steps < 1 or args.max_turns < 1 or args.prompts_per_step < 1:
        return _fail("--max-steps, --max-turns and --prompts-per-step must be at least 1")
    try:
        summary = run_grpo(grpo_settings(args))
    except (ValueError, OSError) as e:
        return _fail(str(e))
    rewards = [r["reward_mean"] for r in summary["per_step"] if isinstance(r.get("reward_mean"), (int, float))]
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(summary["judge_statuses"].items())) or "none"
    lines = [f"grpo: {len(summary['tasks'])} task(s), {summary['steps']} step(s), {summary['rollouts']} rollout(s) "
             f"judged ({statuses}), {summary['wall_s']:.0f} s; model in {summary['out']}"]  # fmt: skip
    if rewards:
        lines.append(f"reward mean per step: {' '.join(f'{r:+.2f}' for r in rewards)}")
    if summary["judge_processes_left"]:
        lines.append(f"warning: {len(summary['judge_processes_left'])} judge process(es) still running")
    _emit(summary, args.json, lines)
    return 0


def grpo_settings(args: argparse.Namespace) -> Any:
    """The `GRPOSettings` of parsed `train grpo` arguments (also what scripts use to render its prompts)."""
    from cuda_agent.train.grpo import GRPOSettings

    return GRPOSettings(tasks=tuple(args.tasks), model=args.model, out=args.out, judge_url=args.judge_url,
                        judge_timeout_s=args.judge_timeout,
                        num_generations=args.num_generations,
                        prompts_per_step=args.prompts_per_step, max_steps=args.max_steps, learning_rate=args.lr,
                        grad_accum=args.grad_accum, max_completion_length=args.max_completion_length,
                        max_turns=args.max_turns, temperature=args.temperature, beta=args.beta,
                        loss_type=args.loss_type, bf16=args.bf16, gradient_checkpointing=args.gradient_checkpointing,
                        cache_seed_dir=args.cache_seed_dir, bash_timeout_s=args.bash_timeout, seed=args.seed,
                        rollout_time_limit_s=args.time_limit)  # fmt: skip


def run_verl_data(args: argparse.Namespace) -> int:
    from cuda_agent.train.verl.data import PromptLimit, convert, table

    if args.val_size < 0:
        return _fail("--val-size must be 0 or more")
    try:
        limit = PromptLimit(args.tokenizer, args.max_prompt_tokens, args.overlong) if args.tokenizer else None
        report = convert(args.tasks, args.out, fmt=args.format, val_size=args.val_size, seed=args.seed, limit=limit)
    except (OSError, ValueError) as e:
        return _fail(str(e))
    if not report.written:
        _emit(report.to_dict(), args.json, [table(report), "no task could be loaded: nothing written"])
        return 2
    _emit(report.to_dict(), args.json, [table(report)])
    return 0
