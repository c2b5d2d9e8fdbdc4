"""Assistant-token masks without `{% generation %}` markers, for the chat-template formats of three model
families, each written out here from its documented format (not copied from a model repository):

- Qwen3: ChatML turns, tools in the system turn inside <tools></tools>, calls as <tool_call> JSON, results
  as user turns of <tool_response> blocks, and thinking blocks (<think>...</think>) kept only on assistant
  turns after the last user query; the last assistant turn always carries one, empty if need be (so the
  format is not prefix-preserving: a turn renders differently once it is no longer the last);
- Llama 3.1: header-delimited turns closed by <|eot_id|>, custom tools offered in the first user turn,
  a call as a bare {"name", "parameters"} JSON assistant turn, results as `ipython` turns;
- Mistral v0.3 (tool calling): [INST] ... [/INST] user turns, the system prompt folded into the last one,
  [AVAILABLE_TOOLS] before it, calls as [TOOL_CALLS] [...] closed by </s>, results as [TOOL_RESULTS].

Each test renders a real tokenizer (the tiny offline BPE with the family's special tokens added) and
checks that the masked tokens spell exactly each assistant turn as the format writes it, end-of-turn
token included, and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cuda_agent.train.masks import assistant_mask, render

QWEN3 = r"""
{%- set ns = namespace(last_query=-1) -%}
{%- for m in messages -%}{%- if m.role == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- if tools -%}
{{- '<|im_start|>system\n' -}}
{%- if messages[0].role == 'system' -%}{{- messages[0].content + '\n\n' -}}{%- endif -%}
{{- '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>' -}}
{%- for tool in tools -%}{{- '\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' -}}
{%- elif messages[0].role == 'system' -%}
{{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' -}}
{%- endif -%}
{%- for m in messages -%}
{%- if m.role == 'user' -%}
{{- '<|im_start|>user\n' + m.content + '<|im_end|>\n' -}}
{%- elif m.role == 'assistant' -%}
{%- set content = m.content or '' -%}
{%- set reasoning = '' -%}
{%- if '</think>' in content -%}
{%- set reasoning = content.split('</think>')[0].split('<think>')[-1].strip('\n') -%}
{%- set content = content.split('</think>')[-1].lstrip('\n') -%}
{%- endif -%}
{{- '<|im_start|>assistant\n' -}}
{%- if loop.index0 > ns.last_query and (loop.last or reasoning) -%}{{- '<think>\n' + reasoning + '\n</think>\n\n' -}}{%- endif -%}
{{- content -}}
{%- for call in (m.tool_calls or []) -%}
{%- if content or not loop.first -%}{{- '\n' -}}{%- endif -%}
{{- '<tool_call>\n{"name": "' + call.function.name + '", "arguments": ' -}}
{%- if call.function.arguments is string -%}{{- call.function.arguments -}}{%- else -%}{{- call.function.arguments | tojson -}}{%- endif -%}
{{- '}\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\n' -}}
{%- elif m.role == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1].role != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\n<tool_response>\n' + m.content + '\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1].role != 'tool' -%}{{- '<|im_end|>\n' -}}{%- endif -%}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\n' -}}{%- endif -%}
"""

LLAMA3 = r"""
{{- bos_token -}}
{%- set system = messages[0].content if messages[0].role == 'system' else '' -%}
{%- set rest = messages[1:] if messages[0].role == 'system' else messages -%}
{{- '<|start_header_id|>system<|end_header_id|>\n\n' -}}
{%- if tools -%}{{- 'Environment: ipython\n' -}}{%- endif -%}
{{- 'Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n' + system + '<|eot_id|>' -}}
{%- set ns = namespace(offered=false) -%}
{%- for m in rest -%}
{%- if m.role == 'user' and tools and not ns.offered -%}
{%- set ns.offered = true -%}
{{- '<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions, please respond with a JSON for a function call with its proper arguments that best answers the given prompt.\n\nRespond in the format {"name": function name, "parameters": dictionary of argument name and its value}.Do not use variables.\n\n' -}}
{%- for tool in tools -%}{{- (tool | tojson(indent=4)) + '\n\n' -}}{%- endfor -%}
{{- m.content + '<|eot_id|>' -}}
{%- elif m.role == 'assistant' and m.tool_calls -%}
{%- set call = m.tool_calls[0].function -%}
{{- '<|start_header_id|>assistant<|end_header_id|>\n\n{"name": "' + call.name + '", "parameters": ' -}}
{%- if call.arguments is string -%}{{- call.arguments -}}{%- else -%}{{- call.arguments | tojson -}}{%- endif -%}
{{- '}<|eot_id|>' -}}
{%- elif m.role == 'tool' -%}
{{- '<|start_header_id|>ipython<|end_header_id|>\n\n' + m.content + '<|eot_id|>' -}}
{%- else -%}
{{- '<|start_header_id|>' + m.role + '<|end_header_id|>\n\n' + m.content + '<|eot_id|>' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}{%- endif -%}
"""

MISTRAL = r"""
{{- bos_token -}}
{%- set system = messages[0].content if messages[0].role == 'system' else '' -%}
{%- set rest = messages[1:] if messages[0].role == 'system' else messages -%}
{%- set ns = namespace(last_user=-1) -%}
{%- for m in rest -%}{%- if m.role == 'user' -%}{%- set ns.last_user = loop.index0 -%}{%- endif -%}{%- endfor -%}
{%- for m in rest -%}
{%- if m.role == 'user' -%}
{%- if tools and loop.index0 == ns.last_user -%}{{- '[AVAILABLE_TOOLS] ' + (tools | tojson) + '[/AVAILABLE_TOOLS]' -}}{%- endif -%}
{{- '[INST] ' -}}{%- if system and loop.index0 == ns.last_user -%}{{- system + '\n\n' -}}{%- endif -%}{{- m.content + '[/INST]' -}}
{%- elif m.role == 'assistant' and m.tool_calls -%}
{{- '[TOOL_CALLS] [' -}}
{%- for call in m.tool_calls -%}
{{- '{"name": "' + call.function.name + '", "arguments": ' -}}
{%- if call.function.arguments is string -%}{{- call.function.arguments -}}{%- else -%}{{- call.function.arguments | tojson -}}{%- endif -%}
{{- ', "id": "' + call.id + '"}' -}}{%- if not loop.last -%}{{- ', ' -}}{%- endif -%}
{%- endfor -%}
{{- ']' + eos_token -}}
{%- elif m.role == 'assistant' -%}
{{- ' ' + (m.content | trim) + eos_token -}}
{%- elif m.role == 'tool' -%}
{{- '[TOOL_RESULTS] {"content": ' + (m.content | tojson) + ', "call_id": "' + m.tool_call_id + '"}[/TOOL_RESULTS]' -}}
{%- endif -%}
{%- endfor -%}
"""

FAMILIES = {
    "qwen3": (QWEN3, {"eos_token": "<|im_end|>"}, ["<|im_start|>", "<think>", "</think>", "<tool_call>", "</tool_call>"]),
    "llama3": (LLAMA3, {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>"},
               ["<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]),
    "mistral": (MISTRAL, {"bos_token": "<s>", "eos_token": "</s>"},
                ["[INST]", "[/INST]", "[TOOL_CALLS]", "[TOOL_RESULTS]", "[/TOOL_RESULTS]", "[AVAILABLE_TOOLS]",
                 "[/AVAILABLE_TOOLS]"]),
}  # fmt: skip

TOOLS = [{"type": "function", "function": {"name": "Bash", "description": "Run a shell command.",
          "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}}]  # fmt: skip
BASH = '{"command": "nvcc --version"}'
WRITE = '{"command": "cat > kernels/relu.cu"}'


def _call(n: int, arguments: str) -> dict:
    return {"id": f"call{n}abcd", "type": "function", "function": {"name": "Bash", "arguments": arguments}}


def _episode(think: bool) -> list[dict]:
    """An agent episode in training shape (train/chat.py): one task, two tool rounds, a final answer."""
    first = "<think>\nCheck the compiler first.\n</think>\n\nLet me look." if think else "Let me look."
    second = "<think>\nWrite it.\n</think>\n\n" if think else ""
    return [
        {"role": "system", "content": "You write CUDA kernels."},
        {"role": "user", "content": "Make ReLU fast."},
        {"role": "assistant", "content": first, "tool_calls": [_call(1, BASH)]},
        {"role": "tool", "tool_call_id": "call1abcd", "content": "Cuda compilation tools, release 12.8"},
        {"role": "assistant", "content": second, "tool_calls": [_call(2, WRITE)]},
        {"role": "tool", "tool_call_id": "call2abcd", "content": "wrote kernels/relu.cu"},
        {"role": "assistant", "content": "Done: one fused kernel."},
    ]


@pytest.fixture(scope="module")
def tokenizers(tiny_model: Path) -> dict:
    from transformers import AutoTokenizer

    out = {}
    for name, (template, specials, extra) in FAMILIES.items():
        tokenizer = AutoTokenizer.from_pretrained(tiny_model)
        tokenizer.add_special_tokens({**specials, "additional_special_tokens": extra})
        tokenizer.chat_template = template
        out[name] = tokenizer
    return out


def _masked_runs(tokenizer, messages, tools) -> tuple[list[str], str]:
    """The text of each run of masked tokens (from the tokenizer's own offsets), and of the unmasked ones."""
    out = assistant_mask(tokenizer, messages, tools)
    text = tokenizer.apply_chat_template(messages, tools=tools, tokenize=False)
    assert out["input_ids"] == list(tokenizer.apply_chat_template(messages, tools=tools, tokenize=True,
                                                                  return_dict=True)["input_ids"])  # fmt: skip
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    runs: list[str] = []
    rest = []
    previous = 0
    for (start, end), bit in zip(offsets, out["assistant_masks"], strict=True):
        if bit and previous:
            runs[-1] += text[start:end]
        elif bit:
            runs.append(text[start:end])
        else:
            rest.append(text[start:end])
        previous = bit
    return runs, "".join(rest)


def test_qwen3_thinking_blocks_tool_calls_and_the_closing_token(tokenizers) -> None:
    runs, rest = _masked_runs(tokenizers["qwen3"], _episode(think=True), TOOLS)
    assert runs == [
        f'<think>\nCheck the compiler first.\n</think>\n\nLet me look.\n<tool_call>\n{{"name": "Bash", "arguments": {BASH}}}\n</tool_call><|im_end|>',
        f'<think>\nWrite it.\n</think>\n\n<tool_call>\n{{"name": "Bash", "arguments": {WRITE}}}\n</tool_call><|im_end|>',
        "<think>\n\n</think>\n\nDone: one fused kernel.<|im_end|>",
    ]  # fmt: skip
    assert (
        "<tool_response>\nCuda compilation tools" in rest and "# Tools" in rest and "Make ReLU fast." in rest
    )
    assert rest.count("<|im_start|>assistant\n") == 3  # the headers are the server's, not the model's


def test_qwen3_turns_before_a_later_user_message_lose_their_thinking(tokenizers) -> None:
    """A user message after the first round (the agent loop's "continue" note): Qwen3's format drops the
    thinking of turns before it, so the rendering of the first turns as a prefix is not the rendering of
    the whole conversation. The mask follows the whole conversation, which is what is trained on."""
    messages = _episode(think=True)
    messages.insert(5, {"role": "user", "content": "Continue, more briefly."})
    runs, _ = _masked_runs(tokenizers["qwen3"], messages, TOOLS)
    assert runs == [
        f'Let me look.\n<tool_call>\n{{"name": "Bash", "arguments": {BASH}}}\n</tool_call><|im_end|>',
        f'<tool_call>\n{{"name": "Bash", "arguments": {WRITE}}}\n</tool_call><|im_end|>',
        "<think>\n\n</think>\n\nDone: one fused kernel.<|im_end|>",
    ]  # fmt: skip


def test_llama3_json_calls_ipython_results_and_eot(tokenizers) -> None:
    runs, rest = _masked_runs(tokenizers["llama3"], _episode(think=False), TOOLS)
    assert runs == [
        f'{{"name": "Bash", "parameters": {BASH}}}<|eot_id|>',
        f'{{"name": "Bash", "parameters": {WRITE}}}<|eot_id|>',
        "Done: one fused kernel.<|eot_id|>",
    ]  # fmt: skip
    assert rest.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>")
    assert "<|start_header_id|>ipython<|end_header_id|>\n\nCuda compilation tools" in rest
    assert rest.count("<|start_header_id|>assistant<|end_header_id|>\n\n") == 3


def test_mistral_tool_calls_results_and_eos(tokenizers) -> None:
    runs, rest = _masked_runs(tokenizers["mistral"], _episode(think=False), TOOLS)
    assert runs == [
        f'[TOOL_CALLS] [{{"name": "Bash", "arguments": {BASH}, "id": "call1abcd"}}]</s>',
        f'[TOOL_CALLS] [{{"name": "Bash", "arguments": {WRITE}, "id": "call2abcd"}}]</s>',
        " Done: one fused kernel.</s>",
    ]  # fmt: skip
    assert (
        rest.startswith("<s>[AVAILABLE_TOOLS] ")
        and "You write CUDA kernels.\n\nMake ReLU fast.[/INST]" in rest
    )
    assert (
        '[TOOL_RESULTS] {"content": "wrote kernels/relu.cu", "call_id": "call2abcd"}[/TOOL_RESULTS]' in rest
    )


def test_a_template_with_generation_markers_gets_the_mask_transformers_gives(tiny_model: Path) -> None:
    """The tiny model's template has `{% generation %}` markers: the prefix-by-prefix mask is the same."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    messages, tools = _episode(think=False), json.dumps(TOOLS)
    theirs = tokenizer.apply_chat_template(messages, tools=TOOLS, tokenize=True, return_dict=True,
                                           return_assistant_tokens_mask=True)  # fmt: skip
    ours = render(tokenizer, messages, tools)
    assert ours["input_ids"] == list(theirs["input_ids"])
    assert ours["assistant_masks"] == list(theirs["assistant_masks"]) and sum(ours["assistant_masks"]) > 20
