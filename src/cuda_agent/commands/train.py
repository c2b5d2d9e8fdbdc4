"""`cuda-agent train {rft-data,sft,value,tiny-model}`: the data and offline stages of the training recipe.

  rft-data    trajectories from `solve` -> parquet of kept episodes (table of kept / dropped by reason)
  sft         RFT on that parquet with TRL's SFTTrainer (assistant-only loss); `accelerate launch` for GPUs
  value       critic pretraining (token-level value head, MSE to the episode's reward on assistant tokens)
  tiny-model  build a tiny offline model (own BPE, chat template, random Qwen2 weights) for tests and demos

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
    data.add_argument("--min-reward", type=float, default=2.0, help="keep episodes with at least this reward (2)")
    data.add_argument("--max-reward", type=float, help="and at most this reward")
    data.add_argument("--per-task", type=int, help="keep at most N episodes per task (the best ones)")
    data.add_argument("--max-tokens", type=int, default=131_072, help="drop episodes longer than this (tokens)")
    data.add_argument("--exits", default="finished,submitted",
                      help="exit statuses kept, comma-separated (default: finished,submitted)")
    data.add_argument("--any-exit", action="store_true", help="keep every exit status (value data)")
    data.add_argument("--task", action="append", dest="tasks", help="keep only this task (repeatable)")
    data.add_argument("--keep-duplicates", action="store_true", help="keep episodes with the same final kernel")
    data.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    data.set_defaults(handler=run_rft_data)

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
    value.add_argument("--gradient-checkpointing", action="store_true")
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


def _common(parser: argparse.ArgumentParser, default_lr: float) -> None:
    parser.add_argument("--data", type=Path, required=True, help="parquet written by `cuda-agent train rft-data`")
    parser.add_argument("--model", required=True, help="model folder or hub id (loaded with from_pretrained)")
    parser.add_argument("--out", type=Path, required=True, help="folder for the trained model and its summary")
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--max-steps", type=int, default=-1, help="> 0: train this many steps (overrides --epochs)")
    parser.add_argument("--lr", type=float, default=default_lr, help=f"learning rate (default {default_lr:g})")
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


def _check_data(args: argparse.Namespace) -> str | None:
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
                             warmup_steps=args.warmup_steps, seed=args.seed, logging_steps=args.logging_steps)  # fmt: skip
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
