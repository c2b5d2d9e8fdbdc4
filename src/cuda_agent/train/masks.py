"""One conversation through the chat template: token ids and the mask of the assistant's tokens.

The mask comes from the template's `{% generation %}` markers (transformers' `return_assistant_tokens_mask`),
the same mechanism TRL's assistant-only loss uses, so SFT and the value head agree on what "the model's
tokens" are: each assistant turn's text and tool calls and its closing `<|im_end|>`, nothing the
environment said.
"""

from __future__ import annotations

import json
from typing import Any


def render(tokenizer: Any, messages: list[dict[str, Any]], tools: Any, max_length: int | None = None) -> dict[str, list[int]]:
    """{"input_ids", "assistant_masks"} of one conversation, cut to `max_length` tokens when given."""
    if isinstance(tools, str):
        tools = json.loads(tools)
    out = tokenizer.apply_chat_template(
        messages, tools=tools or None, tokenize=True, return_dict=True, return_assistant_tokens_mask=True
    )
    ids, mask = list(out["input_ids"]), list(out["assistant_masks"])
    if len(ids) != len(mask):
        raise ValueError(f"the chat template gave {len(ids)} tokens but a mask of {len(mask)}")
    if not any(mask):
        raise ValueError("the chat template marked no assistant tokens: it needs {% generation %} markers")
    if max_length is not None:
        ids, mask = ids[:max_length], mask[:max_length]
    return {"input_ids": ids, "assistant_masks": mask}


def first_assistant_token(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> int:
    """Where the first token the loss trains on sits: the length of the prompt before the assistant's
    first reply. A `max_length` at or below it leaves the conversation nothing to learn from."""
    mask = render(tokenizer, messages, tools)["assistant_masks"]
    return mask.index(1)


def max_length_too_short(max_length: int, starts: list[int]) -> str:
    """The one-line message for a `--max-length` that cuts every conversation before its first assistant
    token (`starts`: each conversation's `first_assistant_token`)."""
    earliest = min(starts)
    return (f"--max-length {max_length} cuts all {len(starts)} conversation(s) before their first assistant token "
            f"(the earliest starts at token {earliest}): nothing to train on; pass --max-length above {earliest}")
