"""Optional LLM composer: asks a model behind an OpenAI-compatible API to fuse sampled operators.

The template composer only writes straight chains; a model can write the wiring people write (residuals,
scales, two branches). It gets the same operator sequence the template composer would sample and the
KernelBench format, and its output goes through exactly the same static, decontamination and execution
filters, so a wrong or lazy answer costs a rejection, never a bad task. Any OpenAI-compatible server works
through the `openai` SDK's `base_url`; tests pass a fake client.
"""

from __future__ import annotations

import os
import random
import re
from dataclasses import dataclass
from typing import Any

from cuda_agent.synth.catalog import Catalog
from cuda_agent.synth.compose import bucket_length
from cuda_agent.synth.render import RenderedTask

PROMPT = """Write a PyTorch reference task in KernelBench format that fuses these operators, in this order,
into one nn.Module: {ops}.

Rules:
- Define `class Model(nn.Module)` with `__init__` taking the sizes it needs and `forward` applying the ops.
- Define module-level integer size constants, including `batch_size`, then `get_inputs()` returning a list
  of input tensors made with torch.randn using `batch_size`, and `get_init_inputs()` returning the
  `__init__` arguments.
- Import only torch, torch.nn as nn, torch.nn.functional as F and math. No random ops (no dropout, no
  torch.rand* in forward), no printing, deterministic output that depends on the inputs.
- Choose sizes so that one forward pass takes roughly {target_ms:.0f} ms on a modern data-centre GPU.
Answer with one ```python code block and nothing else."""

_CODE = re.compile(r"```(?:python)?\s*\n(.*?)```", re.DOTALL)


@dataclass(frozen=True)
class LLMConfig:
    """Where the model is. `api_key` falls back to $OPENAI_API_KEY (or a placeholder for local servers)."""

    model: str
    base_url: str | None = None
    api_key: str | None = None
    fraction: float = 1.0
    temperature: float = 0.8
    max_tokens: int = 2048


def make_client(config: LLMConfig) -> Any:
    from openai import OpenAI

    key = config.api_key or os.environ.get("OPENAI_API_KEY") or "not-needed"
    return OpenAI(base_url=config.base_url, api_key=key)


def extract_code(text: str) -> str | None:
    m = _CODE.search(text or "")
    if m:
        return m.group(1).strip() + "\n"
    return text.strip() + "\n" if text and "class Model" in text else None


class LLMComposer:
    """Composes one task per call by prompting the model with sampled op names."""

    def __init__(
        self, catalog: Catalog, config: LLMConfig, client: Any = None, target_ms: float = 5.0
    ) -> None:
        self.catalog = catalog
        self.config = config
        self.client = client if client is not None else make_client(config)
        self.target_ms = target_ms
        self._torch = [e.name for e in catalog.select(source="torch") if not e.random]
        self._tf = [e.name for e in catalog.select(source="transformers") if not e.random]

    def sample_ops(self, bucket: str, seed: int) -> list[str]:
        rng = random.Random(seed)
        pool = self._tf if bucket == "transformers" and self._tf else self._torch
        return [rng.choice(pool) for _ in range(bucket_length(bucket))]

    def compose(self, bucket: str, seed: int) -> RenderedTask | None:
        """A task for `bucket`, or None when the model's answer holds no code."""
        ops = self.sample_ops(bucket, seed)
        prompt = PROMPT.format(ops=", ".join(ops), target_ms=self.target_ms)
        reply = self.client.chat.completions.create(
            model=self.config.model,
            messages=[{"role": "user", "content": prompt}],
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            seed=seed,
        )
        code = extract_code(reply.choices[0].message.content or "")
        if code is None:
            return None
        name = "llm_" + "_".join(re.sub(r"\W+", "", o.rsplit(".", 1)[-1]) for o in ops)
        return RenderedTask(name, code, tuple(ops), bucket)
