"""Value pretraining: a token-level critic that predicts an episode's milestone reward from its tokens.

The critic is `AutoModelForTokenClassification` with `num_labels=1`, the form verl's critic loads
(`critic.model.path` can point at the saved folder). With gamma = lambda = 1 and a reward only at the
end, the Monte-Carlo return at every token is the episode's reward, so the target at each assistant
token is that reward and the loss is the MSE over assistant tokens only (what the environment said is
context, not a decision). Training sees successful AND failed episodes; a critic that only saw
successes would learn a constant.

Training is HF `Trainer` (only `compute_loss` is ours: the masked MSE). Evaluation on held-out episodes,
before and after training, reports the value loss and the explained variance
1 - Var(target - value) / Var(target) over their assistant tokens.
"""

from __future__ import annotations

import json
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuda_agent.train.arguments import shared_arguments
from cuda_agent.train.curves import loss_points, plot_loss, stderr_logging
from cuda_agent.train.masks import render
from cuda_agent.train.rft_data import read_rows


@dataclass(frozen=True)
class ValueSettings:
    data: Path
    model: str
    out: Path
    epochs: float = 3.0
    max_steps: int = -1
    learning_rate: float = 5e-5
    batch_size: int = 1
    grad_accum: int = 1
    max_length: int | None = 32_768
    eval_fraction: float = 0.25
    head_bias_to_mean: bool = True
    bf16: bool | None = None
    gradient_checkpointing: bool = False
    warmup_steps: int = 0
    logging_steps: int = 1
    seed: int = 0


def value_example(tokenizer: Any, row: dict[str, Any], max_length: int | None) -> dict[str, Any]:
    """Token ids, the assistant mask and the episode's reward (the target at every masked token)."""
    rendered = render(tokenizer, row["messages"], row["tools"], max_length)
    return {"input_ids": rendered["input_ids"], "value_mask": rendered["assistant_masks"],
            "value_target": float(row["reward"]), "task": row.get("task", "")}  # fmt: skip


def split_episodes(rows: list[dict[str, Any]], eval_fraction: float, seed: int) -> tuple[list, list]:
    """Held-out episodes drawn from the successes (reward > 0) and from the failures: each side with two
    or more episodes gives at least one to the held-out set and keeps at least one for training (a side
    seen once stays in training), so the explained variance is measured across both."""
    if len(rows) < 2:
        raise ValueError(f"value training needs at least 2 episodes (one held out); got {len(rows)}")
    if not 0 < eval_fraction < 1:
        raise ValueError("--eval-fraction must be between 0 and 1")
    rng = random.Random(seed)
    by_reward: dict[bool, list[int]] = {}
    for index, row in enumerate(rows):
        by_reward.setdefault(float(row["reward"]) > 0, []).append(index)
    held: set[int] = set()
    for indices in by_reward.values():
        rng.shuffle(indices)
        take = round(len(indices) * eval_fraction)
        if len(indices) >= 2:
            take = max(1, min(take, len(indices) - 1))
        held.update(indices[:take])
    if not held:
        held.add(rng.randrange(len(rows)))
    train = [r for i, r in enumerate(rows) if i not in held]
    return train, [r for i, r in enumerate(rows) if i in held]


class ValueCollator:
    """Right-pads a batch; padding is outside the mask."""

    def __init__(self, pad_id: int) -> None:
        self.pad_id = pad_id

    def __call__(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
        import torch

        width = max(len(e["input_ids"]) for e in examples)

        def pad(values: list, fill: Any) -> list:
            return list(values) + [fill] * (width - len(values))

        return {
            "input_ids": torch.tensor([pad(e["input_ids"], self.pad_id) for e in examples]),
            "attention_mask": torch.tensor([pad([1] * len(e["input_ids"]), 0) for e in examples]),
            "value_mask": torch.tensor([pad(e["value_mask"], 0) for e in examples], dtype=torch.float32),
            "value_targets": torch.tensor([[e["value_target"]] * width for e in examples], dtype=torch.float32),
        }


def start_at_mean(model: Any, examples: list[dict[str, Any]]) -> float | None:
    """Set the value head's bias to the mean target over the training tokens, so training starts from
    the best constant (loss = the targets' variance) and the gradient goes into telling episodes apart
    rather than into finding the mean; returns the bias, or None for a head without one."""
    import torch

    head = getattr(model, "score", None) or getattr(model, "classifier", None)
    if head is None or getattr(head, "bias", None) is None:
        return None
    tokens = sum(sum(e["value_mask"]) for e in examples)
    mean = sum(sum(e["value_mask"]) * e["value_target"] for e in examples) / max(tokens, 1)
    with torch.no_grad():
        head.bias.fill_(mean)
    return float(mean)


def masked_mse(values: Any, targets: Any, mask: Any) -> Any:
    return (((values.float() - targets) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)


def make_trainer_class() -> type:
    from transformers import Trainer

    class ValueTrainer(Trainer):
        """HF Trainer whose loss is the MSE between the value head and the return, on assistant tokens."""

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:  # fmt: skip
            mask = inputs.pop("value_mask")
            targets = inputs.pop("value_targets")
            outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
            loss = masked_mse(outputs.logits[..., 0], targets, mask)
            return (loss, outputs) if return_outputs else loss

    return ValueTrainer


def evaluate_values(model: Any, examples: list[dict[str, Any]], collator: ValueCollator) -> dict[str, float]:
    """Value loss and explained variance over the assistant tokens of `examples`."""
    import torch

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    values, targets, episodes = [], [], []
    with torch.no_grad():
        for example in examples:
            batch = collator([example])
            logits = model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)).logits
            keep = batch["value_mask"][0].bool()
            values.append(logits[0, :, 0].float().cpu()[keep])
            targets.append(batch["value_targets"][0][keep])
            episodes.append({"task": example.get("task", ""), "target": example["value_target"],
                             "mean_value": round(float(values[-1].mean()), 4),
                             "last_value": round(float(values[-1][-1]), 4)})  # fmt: skip
    model.train(was_training)
    v, t = torch.cat(values), torch.cat(targets)
    var = float(t.var(unbiased=False))
    return {
        "value_loss": float(((v - t) ** 2).mean()),
        "explained_variance": (1.0 - float((t - v).var(unbiased=False)) / var) if var > 0 else float("nan"),
        "tokens": int(t.numel()),
        "episodes": len(examples),
        "per_episode": episodes,  # the critic's mean and final value on each episode's assistant tokens
    }


def run_value(settings: ValueSettings) -> dict[str, Any]:
    """Train the critic, save it under `out` with `value_summary.json` and `value_loss.png`."""
    from transformers import AutoModelForTokenClassification, AutoTokenizer, TrainingArguments

    start = time.monotonic()
    out = Path(settings.out)
    rows = read_rows(Path(settings.data))
    rewards = sorted({float(r["reward"]) for r in rows})
    if len(rewards) < 2:
        raise ValueError(f"{settings.data}: every episode has reward {rewards}; the critic needs successes AND "
                         "failures (write the data with `rft-data --min-reward -1 --any-exit`)")  # fmt: skip
    tokenizer = AutoTokenizer.from_pretrained(settings.model)
    train_rows, eval_rows = split_episodes(rows, settings.eval_fraction, settings.seed)
    train = [value_example(tokenizer, r, settings.max_length) for r in train_rows]
    held = [value_example(tokenizer, r, settings.max_length) for r in eval_rows]
    model = AutoModelForTokenClassification.from_pretrained(settings.model, num_labels=1)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.config.pad_token_id = pad_id
    head_bias = start_at_mean(model, train) if settings.head_bias_to_mean else None
    collator = ValueCollator(pad_id)
    arguments = shared_arguments(settings)
    bf16 = arguments["bf16"]
    args = TrainingArguments(**arguments, remove_unused_columns=False)
    trainer = make_trainer_class()(model=model, args=args, train_dataset=train, data_collator=collator)
    stderr_logging(trainer, "value")
    before = evaluate_values(trainer.model, held, collator)
    trainer.train()
    after = evaluate_values(trainer.model, held, collator)
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    points = loss_points(trainer.state.log_history)
    summary = {
        "model": settings.model,
        "out": str(out),
        "train_episodes": len(train),
        "heldout_episodes": len(held),
        "split": {"train": [r.get("task", "") for r in train_rows], "heldout": [r.get("task", "") for r in eval_rows],
                  "heldout_rewards": [float(r["reward"]) for r in eval_rows]},
        "head_bias": head_bias,
        "rewards": rewards,
        "steps": trainer.state.global_step,
        "heldout_before": before,
        "heldout_after": after,
        "first_loss": points[0][1] if points else None,
        "last_loss": points[-1][1] if points else None,
        "loss_curve": points,
        "bf16": bf16,
        "wall_s": round(time.monotonic() - start, 2),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
    }
    if trainer.is_world_process_zero():
        extra = {"held-out value loss": [(0, before["value_loss"]), (trainer.state.global_step, after["value_loss"])]}
        plot_loss(points, out / "value_loss.png", f"value loss ({len(train)} episodes)", extra)
        (out / "value_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
