"""verl v1's replay buffer, plus each step's count of samples without a verdict (masked out of the loss).

verl 0.9.1's default trainer (`trainer.use_v1=True`) logs, for each step, the metrics its replay buffer's
`sample()` returns beside the batch, and nothing of a sample's `reward_extra_info` (that reaches only the
validation metrics). This subclass changes no sampling decision: after the stock `sample()` it reads the
sampled trajectories' `extra_fields` from TransferQueue (where verl's agent-loop worker stores each
`AgentLoopOutput`) and adds `train.unjudged.unjudged_metrics`: `cuda_agent/samples_total`,
`cuda_agent/unjudged_total`, `cuda_agent/unjudged_fraction` and `cuda_agent/unjudged_total/<status>`.
It plugs in through verl's own extension point (the recipes set it):

    trainer.v1.sampler.custom_sampler.path=pkg://cuda_agent.train.verl.sampler
    trainer.v1.sampler.custom_sampler.name=JudgedReplayBuffer        # trainer.v1.trainer_mode=sync
                                           JudgedReplayBufferAsync   # colocate_async / separate_async

verl passes a custom sampler only the base arguments, so DAPO's `algorithm.filter_groups` is not
available with it (the recipes use GAE without group filtering). TransferQueue comes with verl's
`verl-core` extra (`verl[vllm]`); this module is imported only by a v1 trainer, which needs it anyway.
"""

from __future__ import annotations

from typing import Any

import transfer_queue as tq
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer, ReplayBufferAsync

from cuda_agent.train.unjudged import unjudged_metrics

PREFIX = {"train": "cuda_agent", "val": "val-cuda_agent"}


def step_records(extra_fields: list[Any]) -> list[dict[str, Any]]:
    """Each sample's `reward_extra_info` (an empty dict for a sample without one: counted as unjudged)."""
    out = []
    for fields in extra_fields:
        info = fields.get("reward_extra_info") if isinstance(fields, dict) else None
        out.append(dict(info) if isinstance(info, dict) else {"judged": False, "status": "no_reward_info"})
    return out


class _Counting:
    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[Any, dict]:
        batch, metrics = super().sample(global_steps, partition_id, batch_size)  # type: ignore[misc]
        if batch.keys:
            data = tq.kv_batch_get(
                keys=batch.keys, partition_id=batch.partition_id, select_fields=["extra_fields"]
            )
            records = step_records(data["extra_fields"].tolist())
            metrics.update(unjudged_metrics(records, PREFIX.get(partition_id, f"{partition_id}-cuda_agent")))
        return batch, metrics


class JudgedReplayBuffer(_Counting, ReplayBuffer):
    """The sync trainer's replay buffer, counting unjudged samples into each step's metrics."""


class JudgedReplayBufferAsync(_Counting, ReplayBufferAsync):
    """The async trainers' replay buffer, counting unjudged samples into each step's metrics."""
