"""Errors that mean the judge could not run (as opposed to a verdict on a submission)."""

from cuda_agent.judge.config import JudgeUnavailable

__all__ = ["JudgeUnavailable"]
