"""`CudaSingleTurnLoop`: stage 1's one response (verl's `single_turn_agent`), judged inside the loop.

verl's own single-turn loop leaves the reward to the reward function (reward.py), which can only return
a number: a response the judge could not judge would score `failure_reward` and train like any other.
This loop generates exactly as verl's does (it is a subclass and calls it), then scores the response with
the same `compute_score` (part 1's parser, then the judge) and, when there is no verdict, masks the
response out of the loss (train/unjudged.py). An exception anywhere in the loop is a masked sample with
`rollout_error` and its reason, not the end of the step. With the score set here, verl does not call the
reward function again for these rows.

Registered as agent name "cuda_agent_single_turn" (configs/agent_loop.yaml; the stage-1 rows name it).
"""

from __future__ import annotations

import logging
import time
from typing import Any

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

from cuda_agent.agent.judging import JudgeOutcome
from cuda_agent.train.unjudged import ROLLOUT_ERROR
from cuda_agent.train.verl import SINGLE_TURN_NAME
from cuda_agent.train.verl.judging import score_outcome, settings_from_env
from cuda_agent.train.verl.reward import compute_score

log = logging.getLogger("cuda_agent.train.verl")


@register(SINGLE_TURN_NAME)
class CudaSingleTurnLoop(SingleTurnAgentLoop):
    """Settings: the agent-loop YAML entry's keyword arguments, else the judge's environment variables."""

    def __init__(self, *args: Any, judge_url: str | None = None, judge_timeout_s: float | None = None,
                 failure_reward: float | None = None, workdir: str | None = None, **kwargs: Any) -> None:  # fmt: skip
        kwargs.pop("tools", None)
        kwargs.pop("name", None)
        super().__init__(*args, **kwargs)
        self.score_kwargs = {"judge_url": judge_url or None, "judge_timeout_s": judge_timeout_s,
                             "failure_reward": failure_reward, "workdir": workdir}  # fmt: skip

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput:
        try:
            output = await super().run(sampling_params, **kwargs)
        except Exception as exc:  # one broken sample is masked, never the end of the step
            log.exception("a stage-1 generation raised; its sample is masked out of the loss")
            return await self._failed(exc, kwargs)
        started = time.monotonic()
        text = self.tokenizer.decode(output.response_ids, skip_special_tokens=True)
        info = await compute_score(data_source=str(kwargs.get("data_source") or ""), solution_str=text,
                                   extra_info=kwargs.get("extra_info"), **self.score_kwargs)  # fmt: skip
        output.metrics.compute_score = time.monotonic() - started
        output.reward_score = info["score"]
        output.extra_fields["reward_extra_info"] = info
        if not info["judged"]:  # no verdict, no reward: no loss reads this response
            output.response_mask = [0] * len(output.response_mask)
        return output

    async def _failed(self, exc: Exception, kwargs: dict[str, Any]) -> AgentLoopOutput:
        settings = settings_from_env(failure_reward=self.score_kwargs["failure_reward"])
        outcome = JudgeOutcome(
            ROLLOUT_ERROR, None, f"the single-turn loop raised {type(exc).__name__}: {exc}"
        )
        info = score_outcome(outcome, settings.failure_reward, where="a stage-1 row").info
        filler = next(
            (t for t in (self.tokenizer.eos_token_id, self.tokenizer.pad_token_id) if isinstance(t, int)), 0
        )
        try:
            prompt_ids = list(await self.ct_build_initial_tokens(list(kwargs.get("raw_prompt") or [])))
        except Exception:  # a prompt the template cannot render: the sample is masked either way
            prompt_ids = []
        logprobs = [0.0] if getattr(self.rollout_config, "calculate_log_probs", False) else None
        return AgentLoopOutput(prompt_ids=prompt_ids or [filler], response_ids=[filler], response_mask=[0],
                               response_logprobs=logprobs, reward_score=info["score"], num_turns=2,
                               metrics={}, extra_fields={"reward_extra_info": info, "turn_scores": [],
                                                         "tool_rewards": []})  # fmt: skip
