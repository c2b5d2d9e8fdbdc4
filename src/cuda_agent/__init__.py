"""cuda-agent: train and run LLM agents that write CUDA kernels faster than torch.compile.

The package mirrors the system's architecture: `task` (references), `workspace` (the agent's folder),
`judge` (build, verify, time, reward), `agent` (ReAct loop), `synth` (data), `commands` (the CLI).
The judge imports nothing from the agent, synthesis, RL or benchmark code.
"""

__version__ = "0.1.0"
