"""The agent: a ReAct loop in which an OpenAI-compatible model works in a CUDA-Agent workspace.

Modules, one job each:
  config.py      settings (model endpoint, budgets, sandbox) from defaults, file, environment, options
  llm.py         ModelClient protocol and the openai-SDK client with retries
  tools/         the ten workspace tools (Bash, BashOutput, KillBash, Read, Write, Edit, MultiEdit, Glob,
                 Grep, NotebookEdit), the workspace boundary and the Bash sandbox
  loop.py        the loop: run -> step -> query -> execute, exits as exceptions
  progress.py    what the agent's own compile/verify/profile runs said
  printer.py     the loop's events as progress lines (what `solve` and `eval --verbose` print)
  prompts.py     system prompt (SKILL.md + environment) and task prompt
  trajectory.py  the one-line JSON episode record, rewritten as the episode goes
  judging.py     Judge protocol and the local judge: the episode's reward
  episode.py     run_episode: all of the above for one task
"""

from cuda_agent.agent.config import AgentConfig, ConfigError, ModelConfig, load_config
from cuda_agent.agent.episode import EpisodeResult, run_episode
from cuda_agent.agent.judging import Judge, JudgeOutcome, LocalJudge
from cuda_agent.agent.llm import ModelClient, ModelError, ModelResponse, OpenAIClient
from cuda_agent.agent.loop import Agent, AgentExit
from cuda_agent.agent.trajectory import TrajectoryWriter, load_trajectory, strip_timings

__all__ = [
    "Agent",
    "AgentConfig",
    "AgentExit",
    "ConfigError",
    "EpisodeResult",
    "Judge",
    "JudgeOutcome",
    "LocalJudge",
    "ModelClient",
    "ModelConfig",
    "ModelError",
    "ModelResponse",
    "OpenAIClient",
    "TrajectoryWriter",
    "load_config",
    "load_trajectory",
    "run_episode",
    "strip_timings",
]
