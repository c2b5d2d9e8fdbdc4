"""Value pretraining: a token-level critic that predicts an episode's milestone reward from its tokens.

The critic is `AutoModelForTokenClassification` with `num_labels=1`, the form verl's critic loads
(`critic.model.path` can point at the saved folder). With gamma = lambda = 1 and a reward only at the
end, the Monte-Carlo return from every state is the episode's reward.

Which positions carry a target: the states the actor acts from, exactly where verl reads its critic.
verl's value of response token t is the head's output at position t - 1 (`values[:, -len-1:-1]`): the
state after everything before t, from which t is generated. So position p carries the target iff token
p + 1 is an assistant token (masks.py: from the template's own rendering): the last token of each assistant
header (the state that has read every tool result so far), then each assistant token but the turn's
last. Tool results and prompts are context, not decisions, and carry none. Some of these states cannot
tell the outcome yet (before the model has written its kernel nothing distinguishes a good episode from
a bad one); they keep their targets, because PPO queries the critic there too, and the best a critic
can do there is the mean return, which the explained variance below counts against it.

Training is HF `Trainer` (only `compute_loss` is ours: the MSE over target positions, averaged over
the batch's target positions). Batches should mix episodes of both outcomes: one episode per step has
a single target, so its gradient mostly moves the constant and the head swings between +1 and -1
(what the first H200 run did: batch 1, loss 0.7 <-> 3.1). The head starts at the best constant (weights
zero, bias the mean target), so training only has to learn what tells episodes apart.

Evaluation on held-out episodes (whole tasks held out, successes and failures on both sides; by
episode only when the data has a single task, `split_kind`), before and
after training (and every `eval_every` steps), reports the value loss and the standard explained
variance 1 - Var(target - value) / Var(target), pooled over every target position of the held-out
episodes (verl's `critic/vf_explained_var`, over the same positions), plus the same figures per
assistant turn, which show where in an episode the critic starts to tell outcomes apart.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cuda_agent.train.arguments import shared_arguments
from cuda_agent.train.curves import loss_points, plot_loss, stderr_logging
from cuda_agent.train.masks import first_assistant_token, max_length_too_short, render
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
    eval_every: int = 0  # also evaluate the held-out episodes every N steps (0: before and after only)
    max_grad_norm: float = 1.0
    head_bias_to_mean: bool = True
    bf16: bool | None = None
    gradient_checkpointing: bool = False
    warmup_steps: int = 0
    logging_steps: int = 1
    seed: int = 0
    save_steps: int = 0  # a resumable checkpoint under out/checkpoint-N every N steps (0: none mid-run)
    resume: str | None = None  # "latest" (the newest checkpoint under out) or a checkpoint folder


def state_positions(assistant_mask: list[int]) -> list[int]:
    """1 at position p iff token p + 1 is the assistant's: the states verl's critic is read at."""
    return [1 if nxt else 0 for nxt in assistant_mask[1:]] + [0]


def turn_index(value_mask: list[int]) -> list[int]:
    """For each position, which assistant turn (0, 1, ...) its target belongs to (-1: none)."""
    out, turn, inside = [], -1, False
    for flag in value_mask:
        if flag and not inside:
            turn += 1
        inside = bool(flag)
        out.append(turn if flag else -1)
    return out


def value_example(tokenizer: Any, row: dict[str, Any], max_length: int | None) -> dict[str, Any]:
    """Token ids, the positions that carry the target (`state_positions` of the assistant mask) and the
    episode's reward, the target at each of them."""
    rendered = render(tokenizer, row["messages"], row["tools"], max_length)
    return {"input_ids": rendered["input_ids"], "value_mask": state_positions(rendered["assistant_masks"]),
            "value_target": float(row["reward"]), "task": row.get("task", "")}  # fmt: skip


def split_episodes(rows: list[dict[str, Any]], eval_fraction: float, seed: int) -> tuple[list, list]:
    """Held-out episodes, whole tasks at a time: episodes of one task share their prompt and usually most of
    their turns, so a task on both sides lets the critic score held-out episodes by remembering their
    training twins, and the explained variance then measures memory, not judgment. Where the rows name
    two or more tasks, whole tasks are held out (`split_by_task`); with one task (or none named) the split
    falls back to episodes (`split_by_episode`) and `split_kind` says so."""
    if len(rows) < 2:
        raise ValueError(f"value training needs at least 2 episodes (one held out); got {len(rows)}")
    if not 0 < eval_fraction < 1:
        raise ValueError("--eval-fraction must be between 0 and 1")
    if split_kind(rows) == "task":
        return split_by_task(rows, eval_fraction, seed)
    return split_by_episode(rows, eval_fraction, seed)


def split_kind(rows: list[dict[str, Any]]) -> str:
    """"task" when every row names its task and there are at least two, else "episode"."""
    tasks = {str(r.get("task") or "") for r in rows}
    return "task" if "" not in tasks and len(tasks) >= 2 else "episode"


def split_by_task(rows: list[dict[str, Any]], eval_fraction: float, seed: int) -> tuple[list, list]:
    """Whole tasks held out, about `eval_fraction` of the episodes, training keeping at least one task.
    First one task with a success and one with a failure go to the held-out side, each only where another
    task with that outcome stays in training, so the explained variance is measured across both
    outcomes and the critic has seen both; then tasks in a seeded order until the share is reached."""
    rng = random.Random(seed)
    by_task: dict[str, list[int]] = {}
    for index, row in enumerate(rows):
        by_task.setdefault(str(row["task"]), []).append(index)
    tasks = sorted(by_task)
    rng.shuffle(tasks)
    outcomes = {t: {float(rows[i]["reward"]) > 0 for i in by_task[t]} for t in tasks}
    target = max(1, round(len(rows) * eval_fraction))
    held: list[str] = []
    for outcome in (True, False):
        if any(outcome in outcomes[t] for t in held):
            continue
        having = [t for t in tasks if t not in held and outcome in outcomes[t]]
        if len(having) >= 2 and len(held) < len(tasks) - 1:
            held.append(having[0])
    for task in tasks:
        if sum(len(by_task[t]) for t in held) >= target or len(held) >= len(tasks) - 1:
            break
        if task not in held:
            held.append(task)
    chosen = {i for t in held for i in by_task[t]}
    return [r for i, r in enumerate(rows) if i not in chosen], [r for i, r in enumerate(rows) if i in chosen]


def split_by_episode(rows: list[dict[str, Any]], eval_fraction: float, seed: int) -> tuple[list, list]:
    """Held-out episodes drawn from the successes (reward > 0) and from the failures: each side with two
    or more episodes gives at least one to the held-out set and keeps at least one for training (a side
    seen once stays in training), so the explained variance is measured across both."""
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
    """Zero the value head's weights and set its bias to the mean target over the training positions, so
    the critic starts as the best constant (loss = the targets' variance, explained variance 0) and the
    gradient goes into telling episodes apart rather than into finding the mean. (A bias alone is not
    enough: a random head on a model's hidden states adds an offset of its own, -0.93 on the tiny model.)
    The head's weights get a gradient at once (the hidden states), the body from the next step on.
    Returns the bias, or None for a head without one."""
    import torch

    head = getattr(model, "score", None) or getattr(model, "classifier", None)
    if head is None or getattr(head, "bias", None) is None:
        return None
    tokens = sum(sum(e["value_mask"]) for e in examples)
    mean = sum(sum(e["value_mask"]) * e["value_target"] for e in examples) / max(tokens, 1)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.fill_(mean)
    return float(mean)


def masked_mse(values: Any, targets: Any, mask: Any) -> Any:
    return (((values.float() - targets) ** 2) * mask).sum() / mask.sum().clamp(min=1.0)


def make_trainer_class() -> type:
    from transformers import Trainer

    class ValueTrainer(Trainer):
        """HF Trainer whose loss is the MSE between the value head and the return at the target positions.
        The loss is a mean over the micro-batch, so the Trainer must divide it by the accumulation steps:
        it would not for a model whose forward takes **kwargs (it then expects a loss summed over
        `num_items_in_batch`), hence `model_accepts_loss_kwargs = False`."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.model_accepts_loss_kwargs = False

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:  # fmt: skip
            mask = inputs.pop("value_mask")
            targets = inputs.pop("value_targets")
            outputs = model(input_ids=inputs["input_ids"], attention_mask=inputs["attention_mask"])
            loss = masked_mse(outputs.logits[..., 0], targets, mask)
            return (loss, outputs) if return_outputs else loss

    return ValueTrainer


def explained_variance(values: Any, targets: Any) -> float:
    """1 - Var(targets - values) / Var(targets) (population variances); NaN when the targets are constant."""
    var = float(targets.var(unbiased=False))
    return 1.0 - float((targets - values).var(unbiased=False)) / var if var > 0 else float("nan")


def evaluate_values(model: Any, examples: list[dict[str, Any]], collator: ValueCollator) -> dict[str, Any]:
    """Value loss and explained variance pooled over the target positions of `examples`, per episode its
    mean and final value, and per assistant turn the loss, the explained variance and the mean value by
    target (turns past an episode's last count in no row for it)."""
    import torch

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    values, targets, turns, episodes = [], [], [], []
    with torch.no_grad():
        for example in examples:
            batch = collator([example])
            logits = model(input_ids=batch["input_ids"].to(device), attention_mask=batch["attention_mask"].to(device)).logits
            keep = batch["value_mask"][0].bool()
            values.append(logits[0, :, 0].float().cpu()[keep])
            targets.append(batch["value_targets"][0][keep])
            turns.append(torch.tensor(turn_index(example["value_mask"]))[keep])
            episodes.append({"task": example.get("task", ""), "target": example["value_target"],
                             "mean_value": round(float(values[-1].mean()), 4),
                             "last_value": round(float(values[-1][-1]), 4)})  # fmt: skip
    model.train(was_training)
    v, t, k = torch.cat(values), torch.cat(targets), torch.cat(turns)
    by_turn = []
    for turn in range(int(k.max()) + 1 if k.numel() else 0):
        at = k == turn
        means = {f"{float(r):g}": round(float(v[at & (t == r)].mean()), 4) for r in t[at].unique()}
        ev = explained_variance(v[at], t[at])  # NaN (None in JSON) for a turn only one outcome reaches
        by_turn.append({"turn": turn, "positions": int(at.sum()), "value_loss": round(float(((v[at] - t[at]) ** 2).mean()), 4),
                        "explained_variance": None if math.isnan(ev) else round(ev, 4),
                        "mean_value_by_target": means})  # fmt: skip
    return {
        "value_loss": float(((v - t) ** 2).mean()),
        "explained_variance": explained_variance(v, t),
        "tokens": int(t.numel()),
        "episodes": len(examples),
        "per_episode": episodes,  # the critic's mean and final value on each episode's target positions
        "by_turn": by_turn,
    }


def heldout_callback(held: list[dict[str, Any]], collator: ValueCollator, every: int, curve: list) -> Any:
    """A TrainerCallback that appends (step, held-out value loss, explained variance) every `every` steps."""
    from transformers import TrainerCallback

    class HeldOut(TrainerCallback):
        def on_step_end(self, args: Any, state: Any, control: Any, model: Any = None, **kwargs: Any) -> None:
            if state.global_step % every == 0 and model is not None:
                result = evaluate_values(model, held, collator)
                curve.append((state.global_step, result["value_loss"], result["explained_variance"]))
                print(f"[value] step {state.global_step}: held-out value loss {result['value_loss']:.4g}, explained "
                      f"variance {result['explained_variance']:.3f}", file=sys.stderr, flush=True)  # fmt: skip

    return HeldOut()


def step_counter() -> Any:
    """A TrainerCallback counting the optimiser steps this process takes (a resumed run starts at the
    checkpoint's step; the count says how many were trained now)."""
    from transformers import TrainerCallback

    class StepCounter(TrainerCallback):
        steps = 0

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            self.steps += 1

    return StepCounter()


def resume_target(settings: ValueSettings) -> str | bool | None:
    """What `Trainer.train(resume_from_checkpoint=...)` takes: True for the newest checkpoint under `out`
    (a clear error when there is none), a folder, or None for a fresh run."""
    if not settings.resume:
        return None
    if settings.resume == "latest":
        from transformers.trainer_utils import get_last_checkpoint

        if not Path(settings.out).is_dir() or get_last_checkpoint(str(settings.out)) is None:
            raise ValueError(f"--resume latest: no checkpoint-N folder under {settings.out} (write them with --save-steps)")
        return True
    if not (Path(settings.resume) / "trainer_state.json").is_file():
        raise ValueError(f"--resume {settings.resume}: not a checkpoint folder (no trainer_state.json)")
    return str(settings.resume)


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
    if settings.max_length is not None and not any(any(e["value_mask"]) for e in train):
        starts = [first_assistant_token(tokenizer, r["messages"], r["tools"]) for r in train_rows]
        raise ValueError(max_length_too_short(settings.max_length, starts))
    model = AutoModelForTokenClassification.from_pretrained(settings.model, num_labels=1)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.config.pad_token_id = pad_id
    head_bias = start_at_mean(model, train) if settings.head_bias_to_mean else None
    collator = ValueCollator(pad_id)
    arguments = shared_arguments(settings)
    bf16 = arguments["bf16"]
    args = TrainingArguments(**arguments, remove_unused_columns=False, max_grad_norm=settings.max_grad_norm)
    trainer = make_trainer_class()(model=model, args=args, train_dataset=train, data_collator=collator)
    stderr_logging(trainer, "value")
    before = evaluate_values(trainer.model, held, collator)
    heldout_curve = [(0, before["value_loss"], before["explained_variance"])]
    if settings.eval_every > 0:
        trainer.add_callback(heldout_callback(held, collator, settings.eval_every, heldout_curve))
    counter = step_counter()
    trainer.add_callback(counter)
    result = trainer.train(resume_from_checkpoint=resume_target(settings))
    after = evaluate_values(trainer.model, held, collator)
    if heldout_curve[-1][0] != trainer.state.global_step:
        heldout_curve.append((trainer.state.global_step, after["value_loss"], after["explained_variance"]))
    trainer.save_model(str(out))
    tokenizer.save_pretrained(str(out))
    points = loss_points(trainer.state.log_history)
    summary = {
        "model": settings.model,
        "out": str(out),
        "train_episodes": len(train),
        "heldout_episodes": len(held),
        "split": {"by": split_kind(rows), "train": [r.get("task", "") for r in train_rows], "heldout": [r.get("task", "") for r in eval_rows],
                  "heldout_rewards": [float(r["reward"]) for r in eval_rows]},
        "head_bias": head_bias,
        "rewards": rewards,
        "steps": trainer.state.global_step,
        "steps_run": counter.steps,  # optimiser steps taken by this process (fewer than `steps` when resumed)
        "resumed": settings.resume,
        "heldout_before": before,
        "heldout_after": after,
        "first_loss": points[0][1] if points else None,
        "last_loss": points[-1][1] if points else None,
        "loss_curve": points,
        "heldout_curve": [{"step": st, "value_loss": round(lo, 4), "explained_variance": round(ev, 4)}
                          for st, lo, ev in heldout_curve],
        "bf16": bf16,
        "train_s": round(float(result.metrics.get("train_runtime", 0.0)), 3),  # the optimiser loop alone
        "wall_s": round(time.monotonic() - start, 2),
        "settings": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(settings).items()},
    }
    if trainer.is_world_process_zero():
        extra = {"held-out value loss": [(st, lo) for st, lo, _ in heldout_curve]}
        plot_loss(points, out / "value_loss.png", f"value loss ({len(train)} episodes)", extra)
        (out / "value_summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return summary
