"""Training: the CUDA Agent recipe's data and offline stages (single-turn format, RFT, value pretraining)
and, on one GPU, online agentic GRPO with TRL.

Modules, one job each (none imports a training engine at module level, so the judge, agent and synthesis
work without TRL or transformers installed; the engines load inside the functions that need them):
  single_turn.py  one-shot prompt, parser from one response to a workspace, (task, response) -> reward
  chat.py         trajectory messages -> training messages (OpenAI chat turns, canonical tool-call JSON)
  rft_data.py     trajectories -> filtered, deduplicated parquet rows with `messages` and `tools`
  tiny.py         a tiny offline model: byte-level BPE, our chat template, random-init Qwen2 config
  masks.py        chat-template rendering with the assistant-token mask shared by SFT and value
  sft.py          RFT: TRL SFTTrainer, assistant-only loss
  value.py        critic pretraining: token-level value head, MSE on assistant tokens, HF Trainer
  curves.py       loss curve PNGs from a trainer's log history
  environment.py  GRPO environment for TRL: a rollout's workspace, the ten tools as methods, the judge's reward
  grpo.py         `train grpo`: TRL GRPOTrainer over that environment, the judge seam, per-step logs
"""
