"""verl integration, the cluster path of the CUDA Agent recipe (stages 1 and 4 on verl 0.9.1).

Plug-ins to verl's stock trainer through its own extension points; nothing here forks its loop:
  judging.py      the rollout's judge: this node's JudgeService or a judge server (RemoteJudge) by URL,
                  bounded in time, never raising; a sample without a verdict is masked (train/unjudged.py)
  agent_loop.py   CudaAgentLoop (verl AgentLoopBase, agent name "cuda_agent"): our ten tools over a fresh
                  workspace, token-in/token-out through verl's server manager, milestone reward at the end
  reward.py       stage 1's custom reward function (async): part 1's single-turn parser, then the judge
  single_turn_loop.py  CudaSingleTurnLoop ("cuda_agent_single_turn"): verl's single-turn loop, scored
                  in the loop by reward.py's function so that a response without a verdict is masked
  sampler.py      verl v1's replay buffer plus the step's count of unjudged (masked) samples
  data.py         tasks (Ops-6K parquet, `cuda-agent synth` output, a KernelBench folder) -> verl RL parquet
  configs/agent_loop.yaml   what `actor_rollout_ref.rollout.agent.agent_loop_config_path` points at

This package imports no verl at import time (only agent_loop.py needs it), so `cuda-agent train verl-data`
runs in the project's own environment; verl itself lives in `.venv-verl` (scripts/setup_verl.sh) because
it pins transformers<5.11. The recipe that uses all of this is recipes/cuda_agent/.
"""

from __future__ import annotations

from pathlib import Path

AGENT_NAME = "cuda_agent"
SINGLE_TURN_NAME = "cuda_agent_single_turn"
AGENT_LOOP_CONFIG = Path(__file__).resolve().parent / "configs" / "agent_loop.yaml"
# verl's `reward.custom_reward_function.path` accepts `pkg://module`: no file path to keep in sync.
REWARD_FUNCTION_PATH = "pkg://cuda_agent.train.verl.reward"
REWARD_FUNCTION_NAME = "compute_score"
VERL_VERSION = "0.9.1"

__all__ = [
    "AGENT_LOOP_CONFIG",
    "AGENT_NAME",
    "REWARD_FUNCTION_NAME",
    "REWARD_FUNCTION_PATH",
    "SINGLE_TURN_NAME",
    "VERL_VERSION",
]
