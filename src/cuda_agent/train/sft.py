"""RFT: fine-tune the actor on kept trajectories with TRL's `SFTTrainer`, loss on the assistant's tokens only.

The data is what `cuda-agent train rft-data` writes (`messages` + `tools`), rendered here by the model's
own chat template into `input_ids` and `assistant_masks` (masks.py: prefix by prefix, so any template
works, with or without `{% generation %}` markers, which TRL's own `assistant_only_loss` would need);
TRL builds the labels from that mask, truncates to `max_length` and drops conversations left without an
assistant token. bf16 when the GPU supports it, gradient checkpointing on. The same function runs
under `accelerate launch --config_file <fsdp.yaml>` on several GPUs: TRL and accelerate read the
distributed setup from the environment the launcher prepares.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuda_agent.train.arguments import shared_arguments
from cuda_agent.train.curves import loss_points, plot_loss, stderr_logging
from cuda_agent.train.masks import max_length_too_short, render
from cuda_agent.train.rft_data import read_rows


@dataclass(frozen=True)
class SFTSettings:
    data: Path
    model: str
    out: Path
    epochs: float = 3.0
    max_steps: int = -1  # > 0 overrides epochs
    learning_rate: float = 1e-5
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int | None = 32_768
    bf16: bool | None = None  # None: when the GPU supports it
    gradient_checkpointing: bool = True
    warmup_steps: int = 0
    scheduler: str = "cosine"
    logging_steps: int = 1
    seed: int = 0
    dtype: str = "auto"  # weights as loaded; "bfloat16" for large models


def conversations(path: Path, tokenizer: Any) -> Any:
    """The parquet rows as an in-memory `datasets.Dataset` of `input_ids` + `assistant_masks`, rendered
    by the model's chat template (nothing is cached on disk)."""
    from datasets import Dataset

    rows = read_rows(path)
    if not rows:
        raise ValueError(f"{path} holds no rows: nothing to train on (check the filters of rft-data)")
    return Dataset.from_list([render(tokenizer, r["messages"], r["tools"]) for r in rows])


def check_kept(trainer: Any, dataset: Any, max_length: int | None) -> None:
    """TRL drops a conversation that `max_length` cuts before its first assistant token (nothing left to
    train on). All dropped: a ValueError naming the length that would do, not the sampler's "num_samples=0"
    from deep inside the trainer. Some dropped: say how many."""
    kept = len(trainer.train_dataset)
    if kept == len(dataset) or max_length is None:
        return
    if kept == 0:
        raise ValueError(max_length_too_short(max_length, [row["assistant_masks"].index(1) for row in dataset]))
    print(f"[sft] {len(dataset) - kept} of {len(dataset)} conversation(s) end before their first assistant token "
          f"at --max-length {max_length}: trained on the other {kept}", file=sys.stderr, flush=True)  # fmt: skip


def run_sft(settings: SFTSettings) -> dict[str, Any]:
    """Train, save the model and tokenizer under `out`, write `sft_summary.json` and `sft_loss.png` there."""
    from transformers import AutoTokenizer
    from trl import SFTConfig, SFTTrainer

    start = time.monotonic()
    out = Path(settings.out)
    tokenizer = AutoTokenizer.from_pretrained(settings.model)
    dataset = conversations(Path(settings.data), tokenizer)
    arguments = shared_arguments(settings)
    bf16 = arguments["bf16"]
    config = SFTConfig(
        **arguments,
        max_length=settings.max_length,
        assistant_only_loss=False,  # the dataset's own assistant_masks make the labels (TRL's would need markers)
        lr_scheduler_type=settings.scheduler,
        model_init_kwargs={"dtype": settings.dtype},
    )
    trainer = SFTTrainer(model=settings.model, args=config, train_dataset=dataset, processing_class=tokenizer)
    check_kept(trainer, dataset, settings.max_length)
    stderr_logging(trainer, "sft")
    result = trainer.train()
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    points = loss_points(trainer.state.log_history)
    summary = {
        "model": settings.model,
        "out": str(out),
        "rows": len(dataset),
        "steps": trainer.state.global_step,
        "train_loss": result.training_loss,
        "train_s": round(float(result.metrics.get("train_runtime", 0.0)), 3),  # the optimiser loop alone
        "first_loss": points[0][1] if points else None,
        "last_loss": points[-1][1] if points else None,
        "loss_curve": points,
        "bf16": bf16,
        "wall_s": round(time.monotonic() - start, 2),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
    }
    if trainer.is_world_process_zero():
        plot_loss(points, out / "sft_loss.png", f"SFT loss ({len(dataset)} trajectories)")
        (out / "sft_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
