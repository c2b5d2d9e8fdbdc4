"""A tiny model made offline, for tests and for the end-to-end RFT run: tokenizer, chat template, weights.

No hub download is possible in CI or on the GPU box, so the model is built here: a byte-level BPE
trained with `tokenizers` on our own text (SKILL.md, the workspace files, the agent's prompts and tool
schemas, plus any trajectories given), our own chat template, and a random-init Qwen2-style causal LM.
Everything is saved with `save_pretrained`, so the code that loads it (`from_pretrained(path)`) is the
code users run with real models.

The template speaks the ChatML / Hermes tool-call convention (`<|im_start|>role`, `<tool_call>{json}
</tool_call>`, `<|im_end|>`) because that is what transformers recognises for a `qwen2` model: `transformers
serve` parses generated tool calls into OpenAI `tool_calls` with it, and TRL finds the `{% generation %}`
markers it needs for assistant-only loss. The assistant's `<|im_end|>` is inside the generation block, so
the model is trained to stop.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BOS, EOS, PAD = "<|endoftext|>", "<|im_end|>", "<|pad|>"
SPECIAL_TOKENS = [BOS, "<|im_start|>", EOS, PAD, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]

# The model is asked for calls as one JSON object per <tool_call> block; arguments are rendered with
# `tojson` (no key sorting, non-ASCII kept) because that is also how a server re-renders the arguments it
# parsed back from a previous turn, so training and serving see the same bytes.
CHAT_TEMPLATE = """\
{%- set rest = messages -%}
{{- '<|im_start|>system\\n' -}}
{%- if messages and messages[0].role == 'system' -%}
{{- messages[0].content -}}
{%- set rest = messages[1:] -%}
{%- else -%}
{{- 'You write CUDA kernels.' -}}
{%- endif -%}
{%- if tools -%}
{{- '\\n\\n# Tools\\n\\nCall a tool with <tool_call>{\"name\": <tool>, \"arguments\": <object>}</tool_call>. The tools:' -}}
{%- for tool in tools -%}
{{- '\\n' -}}{{- (tool.function if tool.function is defined else tool) | tojson -}}
{%- endfor -%}
{%- endif -%}
{{- '<|im_end|>\\n' -}}
{%- for message in rest -%}
{%- if message.role == 'assistant' -%}
{{- '<|im_start|>assistant\\n' -}}
{%- generation -%}
{%- set text = message.content if message.content is string else '' -%}
{{- text -}}
{%- for call in (message.tool_calls or []) -%}
{%- set fn = call.function if call.function is defined else call -%}
{%- if text or not loop.first -%}{{- '\\n' -}}{%- endif -%}
{{- '<tool_call>\\n{\"name\": ' -}}{{- fn.name | tojson -}}{{- ', \"arguments\": ' -}}
{%- if fn.arguments is string -%}{{- fn.arguments -}}{%- else -%}{{- fn.arguments | tojson -}}{%- endif -%}
{{- '}\\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>' -}}
{%- endgeneration -%}
{{- '\\n' -}}
{%- elif message.role == 'tool' -%}
{{- '<|im_start|>tool\\n<tool_response>\\n' -}}{{- message.content -}}{{- '\\n</tool_response><|im_end|>\\n' -}}
{%- else -%}
{{- '<|im_start|>' + message.role + '\\n' -}}{{- message.content -}}{{- '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}
"""


@dataclass(frozen=True)
class TinySpec:
    """Sizes of the tiny model. The defaults give 13.9M parameters (the BPE learns about 2,400 tokens from
    the built-in corpus, below `vocab_size`, which is a cap; README.md states the count); tests use smaller
    ones."""

    vocab_size: int = 8192
    hidden_size: int = 384
    layers: int = 6
    heads: int = 6
    kv_heads: int = 2
    intermediate_size: int = 1536
    max_positions: int = 32768
    seed: int = 0


def builtin_corpus() -> list[str]:
    """Our own text: what the model will read in every episode (SKILL.md, workspace files, prompts, tools)."""
    from cuda_agent.agent.config import AgentConfig
    from cuda_agent.agent.prompts import system_prompt, task_prompt
    from cuda_agent.agent.tools import default_tools
    from cuda_agent.workspace.materialize import TEMPLATE_DIR

    texts = [p.read_text(encoding="utf-8") for p in sorted(TEMPLATE_DIR.rglob("*")) if p.is_file()
             and p.suffix in (".md", ".py", ".sh", ".cpp", ".h")]  # fmt: skip
    texts.append(system_prompt(TEMPLATE_DIR, "/workspace", AgentConfig(), {"network": "isolated"}))
    texts.append(task_prompt("task", "import torch\n", "/workspace"))
    texts.extend(json.dumps(t.schema()) for t in default_tools())
    return texts


def trajectory_texts(paths: Iterable[Path]) -> list[str]:
    """Message contents and tool-call arguments of trajectory files, as extra tokenizer corpus."""
    from cuda_agent.train.rft_data import iter_records

    texts: list[str] = []
    for _, record in iter_records(paths):
        for message in record.get("messages") or []:
            if isinstance(message.get("content"), str):
                texts.append(message["content"])
            for call in message.get("tool_calls") or []:
                texts.append(str((call.get("function") or {}).get("arguments") or ""))
    return texts


def train_tokenizer(texts: list[str], vocab_size: int) -> Any:
    """A byte-level BPE (any byte sequence encodes) with our special tokens, as a `Qwen2Tokenizer`.

    `AutoTokenizer` loads a tokenizer saved next to a `qwen2` config as `Qwen2Tokenizer`, which rebuilds
    its normalizer and pre-tokenizer from its own settings; training with exactly those settings (taken
    from the class, not restated here) keeps the trained merges valid whichever class loads the files.
    """
    from tokenizers import (
        AddedToken,
        Regex,
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        trainers,
    )
    from transformers.models.qwen2 import tokenization_qwen2

    bpe = Tokenizer(models.BPE())
    bpe.normalizer = normalizers.NFC()
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(tokenization_qwen2.PRETOKENIZE_REGEX), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])  # fmt: skip
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    trained = json.loads(bpe.to_str())["model"]
    merges = [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in trained["merges"]]
    tokenizer = tokenization_qwen2.Qwen2Tokenizer(
        vocab=trained["vocab"], merges=merges, unk_token=None, bos_token=BOS, eos_token=EOS, pad_token=PAD,
        model_max_length=1 << 20,
    )  # fmt: skip
    tokenizer.add_tokens([AddedToken(t, special=True, normalized=False) for t in SPECIAL_TOKENS], special_tokens=True)
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def build_tiny_model(out: Path, spec: TinySpec = TinySpec(), extra_texts: Iterable[str] = ()) -> dict[str, Any]:
    """Train the tokenizer, make a random-init Qwen2ForCausalLM and save both under `out`."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    out = Path(out)
    tokenizer = train_tokenizer(builtin_corpus() + list(extra_texts), spec.vocab_size)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.layers,
        num_attention_heads=spec.heads,
        num_key_value_heads=spec.kv_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(spec.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        do_sample=False,
    )
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    params = sum(p.numel() for p in model.parameters())
    return {"path": str(out), "parameters": params, "vocab_size": len(tokenizer), "layers": spec.layers,
            "hidden_size": spec.hidden_size}  # fmt: skip
