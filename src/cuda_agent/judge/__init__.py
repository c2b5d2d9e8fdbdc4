"""The judge: build a submission, verify it against the reference, time it, and give the reward.

It imports nothing from the agent, synthesis, RL or benchmark code. `judge()` is the entry point.
"""

from cuda_agent.judge.config import JudgeConfig, JudgeUnavailable, TimingConfig
from cuda_agent.judge.verdict import Status, Timing, Verdict

__all__ = ["JudgeConfig", "JudgeUnavailable", "Status", "Timing", "TimingConfig", "Verdict", "judge"]


def judge(*args, **kwargs):
    from cuda_agent.judge.api import judge as _judge

    return _judge(*args, **kwargs)
