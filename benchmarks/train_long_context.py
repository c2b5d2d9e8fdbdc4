"""Stages 3a (SFT, TRL) and 3b (value pretraining, HF Trainer) on real model architectures at agent-episode
context lengths (issue 31): tokens per second, peak GPU memory, the longest context that fits, loss curves.

No weights can be downloaded, and none are needed to measure this: each model is built at random from its
published configuration (Qwen3-0.6B and Qwen3-1.7B: layers, widths, heads, the 151,936-token vocabulary
whose logits dominate SFT's memory) and saved in bf16 as the published checkpoints are. The tokenizer is a
byte-level BPE trained here on our own text, carrying Qwen3's chat template (thinking blocks, Hermes tool
calls; the text written out in tests/train/test_masks.py from Qwen's documented format), so the masks and
the conversations are what a Qwen3 user's are. Episodes are agent-shaped (system prompt with the tool
schemas, a task, assistant turns that think and call tools, long tool results) and at least `--tokens`
long; half end +3, half -1, over four tasks (value pretraining holds out whole tasks).

Each run is the real stage (`cuda_agent.train.sft.run_sft`, `cuda_agent.train.value.run_value`: what
`cuda-agent train sft|value` call) in a child process of its own, so an out-of-memory error ends that run
only and every run starts from an empty GPU:

1. `--steps` optimiser steps at `--tokens` tokens (batch 1, bf16, gradient checkpointing): tokens/s of
   the optimiser loop, peak memory allocated and reserved, the loss curve;
2. the longest context: `--probe` lengths, 2 steps each, in order, none tried after one fails. Attention's
   cost grows with the square of the context and both models have the same attention width (16 heads of
   128), so a step at 262,144 tokens takes minutes on an H200; the default stops at 131,072.

    python benchmarks/train_long_context.py [--models qwen3-0.6b,qwen3-1.7b] [--stages sft,value]
        [--tokens 32768] [--steps 20] [--probe 65536,131072] [--out DIR] [--scale gpu|cpu]

Writes OUT/train_long_context.json and OUT/train_long_context_loss.png; prints a table. `--scale cpu`
shrinks the models and lengths so the whole flow runs on a CPU (a test does). Needs trl and datasets
(the device script train_grpo.sh says how to carry their wheels).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

# Published configurations (the models' config.json), the fields that set size and memory.
ARCHITECTURES: dict[str, dict[str, Any]] = {
    "qwen3-0.6b": {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
                   "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128},
    "qwen3-1.7b": {"hidden_size": 2048, "intermediate_size": 6144, "num_hidden_layers": 28,
                   "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128},
}  # fmt: skip
SHARED = {"vocab_size": 151_936, "max_position_embeddings": 40_960, "rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6,
          "tie_word_embeddings": True, "hidden_act": "silu"}  # fmt: skip
# --scale cpu: the same code on models and contexts a CPU trains in seconds.
CPU_SHRINK = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 2,
              "num_key_value_heads": 1, "head_dim": 32, "vocab_size": 4096}  # fmt: skip
TASKS = ("relu_fused", "layernorm_rows", "gemm_bias_gelu", "softmax_online")


def build_tokenizer(out: Path) -> Any:
    """Our byte-level BPE with Qwen3's special tokens and chat template, saved under `out`."""
    from cuda_agent.train.tiny import builtin_corpus, train_tokenizer
    from tests.train.test_masks import FAMILIES

    template, specials, extra = FAMILIES["qwen3"]
    tokenizer = train_tokenizer(builtin_corpus(), 8192)
    tokenizer.add_special_tokens({**specials, "additional_special_tokens": extra})
    tokenizer.chat_template = template
    tokenizer.save_pretrained(out)
    return tokenizer


def build_model(name: str, out: Path, tokenizer: Any, cpu: bool) -> dict[str, Any]:
    """A random Qwen3 of the published configuration, saved in bf16 with the tokenizer beside it."""
    import torch
    from transformers import Qwen3Config, Qwen3ForCausalLM

    fields = {**SHARED, **ARCHITECTURES[name], **(CPU_SHRINK if cpu else {})}
    config = Qwen3Config(**fields, pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id,
                         bos_token_id=tokenizer.bos_token_id)  # fmt: skip
    torch.manual_seed(0)
    model = Qwen3ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return {"parameters": sum(p.numel() for p in model.parameters()), "config": fields}


def episode(rng: random.Random, corpus: list[str], tokens: int, chars_per_token: float) -> list[dict[str, Any]]:
    """An agent episode of about `tokens` tokens: eight rounds of thinking, a tool call carrying code and a
    long tool result, then a final answer. The text is cut from our own files, so it tokenises like the
    workspace an agent reads."""
    def text(n_tokens: int) -> str:
        n = int(n_tokens * chars_per_token)
        pieces: list[str] = []
        while sum(map(len, pieces)) < n:
            doc = rng.choice(corpus)
            start = rng.randrange(max(1, len(doc) - 2000))
            pieces.append(doc[start:start + rng.randint(400, 2000)])
        return "".join(pieces)[:n]

    rounds = 8
    per_round = tokens // rounds
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You write CUDA kernels. " + text(400)},
                                      {"role": "user", "content": "Make this model faster.\n" + text(300)}]  # fmt: skip
    for n in range(rounds):
        arguments = json.dumps({"path": f"kernels/k{n}.cu", "content": text(per_round // 4)})
        messages.append({"role": "assistant", "content": f"<think>\n{text(per_round // 8)}\n</think>\n\nNext step.",
                         "tool_calls": [{"id": f"call{n}", "type": "function",
                                         "function": {"name": "Write", "arguments": arguments}}]})  # fmt: skip
        messages.append({"role": "tool", "tool_call_id": f"call{n}", "content": text(per_round - per_round // 4 - per_round // 8)})
    messages.append({"role": "assistant", "content": "Done: the fused kernel is in place."})
    return messages


def write_data(path: Path, tokenizer: Any, tokens: int, rows: int = 8) -> dict[str, Any]:
    """`rows` episodes of at least `tokens` tokens (rendered by the chat template), as rft-data parquet."""
    from cuda_agent.agent.tools import default_tools
    from cuda_agent.train.masks import render
    from cuda_agent.train.rft_data import write_parquet
    from cuda_agent.train.tiny import builtin_corpus

    corpus = builtin_corpus()
    sample = "".join(corpus)[:200_000]
    chars_per_token = len(sample) / len(tokenizer(sample, add_special_tokens=False)["input_ids"])
    tools = json.dumps([t.schema() for t in default_tools()], ensure_ascii=False)
    rng = random.Random(0)
    out, lengths, assistant = [], [], []
    for i in range(rows):
        want = tokens
        while True:
            messages = episode(rng, corpus, want, chars_per_token)
            rendered = render(tokenizer, messages, tools)
            if len(rendered["input_ids"]) >= tokens:
                break
            want = int(want * 1.1 * tokens / len(rendered["input_ids"]))
        lengths.append(len(rendered["input_ids"]))
        assistant.append(rendered["assistant_masks"].count(1))
        out.append({"task": TASKS[i % len(TASKS)], "task_digest": "", "reward": 3.0 if i % 2 == 0 else -1.0,
                    "judge_status": "ok" if i % 2 == 0 else "incorrect", "exit": "finished", "turns": 9,
                    "tokens": lengths[-1], "kernel_digest": f"k{i}", "source": "synthetic", "messages": messages,
                    "tools": tools})  # fmt: skip
    write_parquet(out, path)
    return {"rows": rows, "tokens_min": min(lengths), "tokens_max": max(lengths),
            "assistant_share": round(assistant[0] / lengths[0], 3)}  # the first episode's


def child(args: argparse.Namespace) -> int:
    """One stage run, in this process: its figures as one JSON line on stdout (fits false on OOM)."""
    import torch

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    record: dict[str, Any] = {"stage": args.one, "tokens": args.tokens, "steps": args.steps}
    try:
        if args.one == "sft":
            from cuda_agent.train.sft import SFTSettings, run_sft

            summary = run_sft(SFTSettings(data=args.data, model=str(args.model), out=args.run_dir, max_steps=args.steps,
                                          max_length=args.tokens, learning_rate=1e-4, logging_steps=1, warmup_steps=0,
                                          gradient_checkpointing=True, dtype="bfloat16"))  # fmt: skip
        else:
            from cuda_agent.train.value import ValueSettings, run_value

            summary = run_value(ValueSettings(data=args.data, model=str(args.model), out=args.run_dir, max_steps=args.steps,
                                              max_length=args.tokens, learning_rate=1e-5, logging_steps=1,
                                              gradient_checkpointing=True))  # fmt: skip
        record.update(fits=True, train_s=summary["train_s"], wall_s=summary["wall_s"], loss_curve=summary["loss_curve"],
                      tokens_per_s=round(args.steps * args.tokens / summary["train_s"], 1) if summary["train_s"] else None,
                      bf16=summary["bf16"])  # fmt: skip
        if args.one == "value":
            record["heldout_after"] = summary["heldout_after"]
    except torch.OutOfMemoryError as e:
        record.update(fits=False, error=f"out of memory: {str(e).splitlines()[0][:200]}")
    if cuda:
        record["peak_allocated_gib"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        record["peak_reserved_gib"] = round(torch.cuda.max_memory_reserved() / 2**30, 2)
        record["gpu_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    print(json.dumps(record), flush=True)
    return 0


def run_child(stage: str, model: Path, data: Path, tokens: int, steps: int, run_dir: Path, timeout: float) -> dict[str, Any]:
    command = [sys.executable, __file__, "--one", stage, "--model", str(model), "--data", str(data),
               "--tokens", str(tokens), "--steps", str(steps), "--run-dir", str(run_dir)]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "TOKENIZERS_PARALLELISM": "false", "HF_HUB_OFFLINE": "1"}  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"stage": stage, "tokens": tokens, "fits": None, "error": f"did not finish within {timeout:.0f} s"}
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    if done.returncode != 0 or not lines:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        fits = False if "OutOfMemory" in done.stderr or "out of memory" in done.stderr else None
        return {"stage": stage, "tokens": tokens, "fits": fits, "error": f"exit {done.returncode}: {tail}"}
    return json.loads(lines[-1])


def plot(results: list[dict[str, Any]], path: Path) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    stages = sorted({r["stage"] for r in results})
    fig, axes = plt.subplots(1, len(stages), figsize=(6 * len(stages), 4), dpi=120, squeeze=False)
    for ax, stage in zip(axes[0], stages, strict=True):
        for r in results:
            if r["stage"] == stage and r.get("loss_curve"):
                ax.plot([s for s, _ in r["loss_curve"]], [v for _, v in r["loss_curve"]],
                        label=f"{r['model']} ({r['tokens']:,} tokens)")  # fmt: skip
        ax.set_title({"sft": "SFT (stage 3a, TRL)", "value": "value pretraining (stage 3b)"}.get(stage, stage))
        ax.set_xlabel("optimiser step")
        ax.set_ylabel("training loss")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return str(path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default="qwen3-0.6b,qwen3-1.7b")
    parser.add_argument("--stages", default="sft,value")
    parser.add_argument("--tokens", type=int, default=None, help="context of the timed runs (default 32768; cpu 4096: the ten tool schemas alone are about 3,000 tokens)")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps of the timed runs (default 20; cpu 3)")
    parser.add_argument("--probe", default=None, help="context lengths tried for the longest that fits")
    parser.add_argument("--scale", choices=("gpu", "cpu"), default="gpu")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per run")
    parser.add_argument("--out", type=Path, default=Path("train-long-context"))
    parser.add_argument("--work", type=Path, default=Path("/tmp/train_long_context"))
    parser.add_argument("--one", choices=("sft", "value"), help=argparse.SUPPRESS)
    parser.add_argument("--model", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--run-dir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        return child(args)
    cpu = args.scale == "cpu"
    tokens = args.tokens or (4096 if cpu else 32_768)
    steps = args.steps or (3 if cpu else 20)
    probes = [int(x) for x in (args.probe or ("6144" if cpu else "65536,131072")).split(",") if x]
    models = [m for m in args.models.split(",") if m]
    unknown = [m for m in models if m not in ARCHITECTURES]
    if unknown:
        parser.error(f"unknown model(s) {unknown}; choose from {sorted(ARCHITECTURES)}")
    stages = [s for s in args.stages.split(",") if s]
    args.out.mkdir(parents=True, exist_ok=True)
    args.work.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    tokenizer = build_tokenizer(args.work / "tokenizer")
    data = {n: args.work / f"episodes_{n}.parquet" for n in [tokens, max(probes, default=tokens)]}
    shapes = {n: write_data(path, tokenizer, n) for n, path in data.items()}
    print(f"[data] {json.dumps(shapes)} ({time.monotonic() - began:.0f} s)", file=sys.stderr, flush=True)
    results: list[dict[str, Any]] = []
    longest: dict[str, dict[str, Any]] = {}
    built: dict[str, Any] = {}

    def report(figure: str | None = None) -> dict[str, Any]:
        """Written after every run, so a run cut by the device's time limit keeps what it measured."""
        out = {"models": {n: {"parameters": b["parameters"], "config": b["config"]} for n, b in built.items()},
               "data": shapes, "tokens": tokens, "steps": steps, "probes": probes, "runs": results,
               "longest": longest, "plot": figure, "scale": args.scale,
               "seconds": round(time.monotonic() - began, 1)}  # fmt: skip
        (args.out / "train_long_context.json").write_text(json.dumps(out, indent=1))
        return out
    for name in models:
        model_dir = args.work / name
        built[name] = build_model(name, model_dir, tokenizer, cpu)
        print(f"[{name}] {built[name]['parameters'] / 1e9:.3f}B parameters", file=sys.stderr, flush=True)
        for stage in stages:
            run = run_child(stage, model_dir, data[tokens], tokens, steps, args.work / f"run_{name}_{stage}", args.timeout)
            run["model"] = name
            results.append(run)
            report()
            print(f"[{name} {stage}] {tokens:,} tokens x {steps} steps: {_short(run)}", file=sys.stderr, flush=True)
            fits = [tokens] if run.get("fits") else []
            failed: int | None = None
            for length in probes:
                probe = run_child(stage, model_dir, data[max(probes)], length, 2, args.work / f"probe_{name}_{stage}", args.timeout)
                print(f"[{name} {stage}] probe {length:,} tokens: {_short(probe)}", file=sys.stderr, flush=True)
                if not probe.get("fits"):
                    failed = length
                    longest[f"{name}/{stage}"] = {"fits": max(fits, default=None), "fails": length,
                                                  "why": probe.get("error")}  # fmt: skip
                    report()
                    break
                fits.append(length)
                longest[f"{name}/{stage}"] = {"fits": length, "fails": None, "peak_allocated_gib": probe.get("peak_allocated_gib"),
                                              "tokens_per_s": probe.get("tokens_per_s")}  # fmt: skip
                report()
            if failed is None and not probes:
                longest[f"{name}/{stage}"] = {"fits": max(fits, default=None), "fails": None}
    report(plot(results, args.out / "train_long_context_loss.png"))
    print(f"\n{'model':12s} {'stage':6s} {'tokens':>8s} {'steps':>5s} {'tokens/s':>10s} {'peak GiB':>9s} "
          f"{'first->last loss':>18s}  longest that fits (first that does not)")  # fmt: skip
    for r in results:
        curve = r.get("loss_curve") or []
        losses = f"{curve[0][1]:.3f}->{curve[-1][1]:.3f}" if curve else "-"
        span = longest.get(f"{r['model']}/{r['stage']}", {})
        print(f"{r['model']:12s} {r['stage']:6s} {r['tokens']:8,d} {steps:5d} {r.get('tokens_per_s') or '-':>10} "
              f"{r.get('peak_allocated_gib', '-'):>9} {losses:>18s}  {span.get('fits')} ({span.get('fails')})")  # fmt: skip
    ok = all(r.get("fits") for r in results)
    print(f"\n{'all runs trained' if ok else 'some runs failed'}; {args.out / 'train_long_context.json'}", file=sys.stderr)
    return 0 if ok else 1


def _short(record: dict[str, Any]) -> str:
    if not record.get("fits"):
        return f"did not fit or failed: {record.get('error')}"
    return (f"{record.get('tokens_per_s')} tokens/s, peak {record.get('peak_allocated_gib', '-')} GiB, "
            f"train {record.get('train_s')} s")


if __name__ == "__main__":
    sys.exit(main())
