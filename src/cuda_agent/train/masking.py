"""TRL's GRPO with samples the judge could not judge masked out of the loss and counted per step.

TRL 1.16 already keeps a rollout whose reward is None out of its group's baseline and gives it a zero
advantage. That is not yet out of the loss: its tokens still count in the normaliser of the token-level
losses (`dapo`, `bnpo`, ...: the loss of the judged samples is diluted by every unjudged token), its KL
term still pulls when `beta` > 0, and nothing in the step's logs says how many there were. So the trainer
this module builds (a subclass: TRL's loop is untouched) takes the batch TRL prepared and, for each rollout
whose environment got no verdict (`CudaKernelEnv._judged`, train/environment.py):
- sets its tool mask (the loss mask TRL multiplies into every loss term) to 0 on every token, and
  recomputes `num_items_in_batch`, the token count the `dapo` normaliser divides by;
- adds `cuda_agent/samples_total`, `cuda_agent/unjudged_total` and `cuda_agent/unjudged_fraction`
  (summed over processes) to the metrics TRL logs for the step.
"""

from __future__ import annotations

from typing import Any


def masking_trainer(base: type) -> type:
    """`base` (TRL's GRPOTrainer) with unjudged rollouts masked; a function so TRL loads only when called."""

    class UnjudgedMaskingGRPOTrainer(base):  # type: ignore[misc, valid-type]
        def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
            output = super()._generate_and_score_completions(inputs)
            judged = [bool(getattr(env, "_judged", True)) for env in (self.environments or [])]
            return mask_unjudged(self, output, judged)

    return UnjudgedMaskingGRPOTrainer


def mask_unjudged(trainer: Any, output: dict[str, Any], judged: list[bool]) -> dict[str, Any]:
    """`output` (TRL's prepared batch, this process's rows) with the rows not `judged` masked, and the
    step's counts added to the trainer's metrics."""
    import torch

    completion_mask = output["completion_mask"]
    device = completion_mask.device
    if len(judged) != completion_mask.size(0):  # rows without our environment: nothing to mask
        judged = [True] * completion_mask.size(0)
    keep = torch.tensor(judged, dtype=completion_mask.dtype, device=device).unsqueeze(1)
    tool_mask = output.get("tool_mask")
    tool_mask = torch.ones_like(completion_mask) if tool_mask is None else tool_mask
    output["tool_mask"] = tool_mask * keep
    loss_mask = completion_mask * output["tool_mask"]
    output["num_items_in_batch"] = trainer.accelerator.gather(loss_mask.sum()).sum()
    counts = torch.tensor([len(judged), len(judged) - sum(judged)], dtype=torch.float32, device=device)
    samples, unjudged = trainer.accelerator.gather(counts).view(-1, 2).sum(dim=0).tolist()
    mode = "train" if trainer.model.training else "eval"
    metrics = trainer._metrics[mode]
    metrics["cuda_agent/samples_total"].append(samples)
    metrics["cuda_agent/unjudged_total"].append(unjudged)
    metrics["cuda_agent/unjudged_fraction"].append(unjudged / samples if samples else 0.0)
    return output
