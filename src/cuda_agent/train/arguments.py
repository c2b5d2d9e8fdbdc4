"""The `TrainingArguments` fields that SFT and value pretraining share, read from either's settings.

One place for the run's schedule, precision and logging, and for what these runs never do (experiment
trackers, tqdm bars: progress goes to stderr through `curves.stderr_logging`). Checkpoints mid-run only
where the settings ask for them (`save_steps`), the two newest kept.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def bf16_default() -> bool:
    """bf16 when the GPU supports it (an H100/H200 does; a CPU run trains in fp32)."""
    import torch

    return bool(torch.cuda.is_available() and torch.cuda.is_bf16_supported())


def shared_arguments(settings: Any) -> dict[str, Any]:
    """Keyword arguments for `TrainingArguments` (or TRL's `SFTConfig`, its subclass) from settings that
    carry out, epochs, max_steps, learning_rate, batch_size, grad_accum, bf16 (None: `bf16_default()`),
    gradient_checkpointing, warmup_steps, logging_steps and seed."""
    return {
        "output_dir": str(Path(settings.out)),
        "num_train_epochs": settings.epochs,
        "max_steps": settings.max_steps,
        "learning_rate": settings.learning_rate,
        "per_device_train_batch_size": settings.batch_size,
        "gradient_accumulation_steps": settings.grad_accum,
        "bf16": bf16_default() if settings.bf16 is None else settings.bf16,
        "gradient_checkpointing": settings.gradient_checkpointing,
        "warmup_steps": settings.warmup_steps,
        "logging_steps": settings.logging_steps,
        **checkpointing(getattr(settings, "save_steps", 0)),
        "report_to": "none",
        "seed": settings.seed,
        "disable_tqdm": True,
    }


def checkpointing(save_steps: int) -> dict[str, Any]:
    """A resumable checkpoint (model, optimizer, scheduler, RNG, trainer state) every `save_steps` steps,
    the two newest kept; none mid-run for 0."""
    if save_steps <= 0:
        return {"save_strategy": "no"}
    return {"save_strategy": "steps", "save_steps": save_steps, "save_total_limit": 2}
