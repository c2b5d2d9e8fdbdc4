"""One conversation through the chat template: token ids and the mask of the assistant's tokens.

The stock templates of Qwen3, Llama 3.x, Mistral and most open models carry no `{% generation %}`
markers (transformers' `return_assistant_tokens_mask` needs them), and the SFT stage saves the model's
template as it is. So the mask is computed from the template's own rendering, prefix by prefix:
- the whole conversation is rendered to text once (what is trained on: the token ids are exactly
  `apply_chat_template`'s);
- an assistant turn starts where the template's generation prompt ends: the rendering of the messages
  before it with `add_generation_prompt=True` (the header the server writes before the model speaks:
  `<|im_start|>assistant\\n`, `<|start_header_id|>assistant<|end_header_id|>\\n\\n`, ...). Where the
  template is not prefix-preserving (Qwen3 renders a turn differently once it is no longer the last),
  the header is searched for after the previous turn instead;
- it ends at the template's end-of-turn text (found by rendering a two-message probe: `<|im_end|>`,
  `<|eot_id|>`, `</s>`, `<end_of_turn>`), which the model generates and so is trained on; the
  separator after it (a newline) is not;
- the tokens whose text starts inside a turn are the assistant's (the tokenizer's character offsets).
That is each assistant turn's text, thinking blocks and tool calls, and its end-of-turn token; nothing the
environment said. A template that has `{% generation %}` markers gets the same mask (tests compare them).
"""

from __future__ import annotations

import json
from typing import Any

PROBE_USER, PROBE_ASSISTANT = "cuda-agent probe question", "cuda-agent probe answer"


class MaskError(ValueError):
    """The chat template's rendering could not be split into assistant turns; the text says where."""


def _text(tokenizer: Any, messages: list[dict[str, Any]], tools: Any, generation_prompt: bool = False) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False,
                                         add_generation_prompt=generation_prompt)  # fmt: skip


def end_of_turn(tokenizer: Any) -> str:
    """The text the template writes after an assistant message's content (stripped of whitespace)."""
    probe = [{"role": "user", "content": PROBE_USER}, {"role": "assistant", "content": PROBE_ASSISTANT}]
    text = _text(tokenizer, probe, None)
    at = text.rfind(PROBE_ASSISTANT)
    marker = text[at + len(PROBE_ASSISTANT):].strip() if at >= 0 else ""  # fmt: skip
    if not marker:
        raise MaskError(
            "the chat template writes nothing after an assistant message: cannot tell where turns end"
        )
    return marker


def assistant_spans(
    tokenizer: Any, messages: list[dict[str, Any]], tools: Any
) -> tuple[str, list[tuple[int, int]]]:
    """The conversation's rendered text and the [start, end) character span of each assistant turn."""
    full = _text(tokenizer, messages, tools)
    marker = end_of_turn(tokenizer)
    spans: list[tuple[int, int]] = []
    position = 0
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        before = _text(tokenizer, messages[:index], tools) if index else ""
        prompted = _text(tokenizer, messages[:index], tools, generation_prompt=True)
        if full.startswith(prompted) and len(prompted) >= position:
            start = len(prompted)
        else:  # not prefix-preserving here: find the generation prompt after the previous turn
            header = prompted[len(before) :] if prompted.startswith(before) else ""
            found = full.find(header, position) if header.strip() else -1
            if found < 0:
                raise MaskError(f"message {index}: the template's rendering of the conversation does not contain "
                                "the assistant header its generation prompt writes")  # fmt: skip
            start = found + len(header)
        end = full.find(marker, start)
        if end < 0:
            raise MaskError(f"message {index}: no {marker!r} after the assistant turn")
        spans.append((start, end + len(marker)))
        position = end + len(marker)
    return full, spans


def assistant_mask(tokenizer: Any, messages: list[dict[str, Any]], tools: Any) -> dict[str, list[int]]:
    """{"input_ids", "assistant_masks"}: the conversation's tokens and 1 on those of assistant turns."""
    full, spans = assistant_spans(tokenizer, messages, tools)
    encoded = tokenizer(full, add_special_tokens=False, return_offsets_mapping=True)
    ids, offsets = list(encoded["input_ids"]), encoded["offset_mapping"]
    mask = [0] * len(ids)
    span = 0
    for i, (start, _) in enumerate(offsets):
        while span < len(spans) and start >= spans[span][1]:
            span += 1
        if span < len(spans) and spans[span][0] <= start < spans[span][1]:
            mask[i] = 1
    return {"input_ids": ids, "assistant_masks": mask}


def render(
    tokenizer: Any, messages: list[dict[str, Any]], tools: Any, max_length: int | None = None
) -> dict[str, list[int]]:
    """{"input_ids", "assistant_masks"} of one conversation, cut to `max_length` tokens when given."""
    if isinstance(tools, str):
        tools = json.loads(tools)
    out = assistant_mask(tokenizer, messages, tools)
    ids, mask = out["input_ids"], out["assistant_masks"]
    if not any(mask):
        raise MaskError("the conversation has no assistant tokens to train on")
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
    return (
        f"--max-length {max_length} cuts all {len(starts)} conversation(s) before their first assistant token "
        f"(the earliest starts at token {earliest}): nothing to train on; pass --max-length above {earliest}"
    )
