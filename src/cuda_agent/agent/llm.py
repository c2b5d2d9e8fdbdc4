"""The model client: one chat-completions call, against any OpenAI-compatible server.

`ModelClient` is the seam: the loop only needs `complete(messages, tools, ...) -> ModelResponse`, so RL
code can plug in its own sampler (a local engine, a policy under training) without an HTTP server.
`OpenAIClient` is the production implementation: the official `openai` SDK pointed at any `base_url`
(vLLM, SGLang, hosted APIs), with its own retry loop so that every retry is counted in the trajectory
and a server that says "context length exceeded" ends the episode cleanly instead of being retried.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from cuda_agent.agent.config import ModelConfig

_CONTEXT_OVERFLOW_HINTS = (
    "context length",
    "context_length",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "reduce the length",
)


class ModelError(Exception):
    """The model could not answer. `context_overflow` marks a conversation that no longer fits."""

    def __init__(self, message: str, *, transient: bool = False, context_overflow: bool = False) -> None:
        super().__init__(message)
        self.transient = transient
        self.context_overflow = context_overflow


@dataclass(frozen=True)
class ModelResponse:
    """One assistant turn.

    `message` is an OpenAI chat-format assistant message (role, content, tool_calls and, when the server
    returns one, reasoning_content); `usage` is what the server reported, or None if it reported nothing.
    """

    message: dict[str, Any]
    finish_reason: str | None
    usage: dict[str, int] | None
    retries: int = 0
    model: str | None = None


class ModelClient(Protocol):
    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ModelResponse: ...


class OpenAIClient:
    """`ModelClient` over the `openai` SDK; retries transient failures with exponential backoff."""

    def __init__(
        self,
        config: ModelConfig,
        *,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not config.name:
            raise ValueError("no model name: pass --model, set CUDA_AGENT_MODEL or [model] name in the config")
        import openai

        self.config = config
        self._openai = openai
        self._client = openai.OpenAI(
            base_url=config.base_url,
            # Local servers (vLLM, SGLang) accept any key; the SDK refuses to start without one.
            api_key=config.api_key or "EMPTY",
            max_retries=0,  # retries happen here, where they are counted
            timeout=config.request_timeout_s,
        )
        self._sleep = sleep
        self._rng = rng or random.Random()

    def complete(
        self,
        messages: list[dict[str, Any]],
        tools: list[dict[str, Any]],
        *,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> ModelResponse:
        request = self._request(messages, tools, max_tokens, timeout)
        attempt = 0
        while True:
            try:
                completion = self._client.chat.completions.create(**request)
                return self._response(completion, attempt)
            except ModelError as e:
                error = e
            except self._openai.APIError as e:
                error = self._classify(e)
                error.__cause__ = e
            if not error.transient or attempt >= self.config.max_retries:
                if attempt:
                    raise ModelError(f"{error} (after {attempt} retries)", context_overflow=error.context_overflow)
                raise error
            self._sleep(self._backoff(attempt, error))
            attempt += 1

    def _request(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], max_tokens: int | None, timeout: float | None
    ) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {
            "model": cfg.name,
            "messages": [self._outgoing(m) for m in messages],
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
            if cfg.parallel_tool_calls is not None:
                request["parallel_tool_calls"] = cfg.parallel_tool_calls
        if max_tokens is not None:
            request["max_tokens"] = max_tokens
        for key in ("temperature", "top_p", "seed"):
            value = getattr(cfg, key)
            if value is not None:
                request[key] = value
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        if timeout is not None:
            request["timeout"] = max(1.0, min(timeout, cfg.request_timeout_s))
        return request

    def _outgoing(self, message: dict[str, Any]) -> dict[str, Any]:
        if self.config.send_reasoning or "reasoning_content" not in message:
            return message
        return {k: v for k, v in message.items() if k != "reasoning_content"}

    def _response(self, completion: Any, retries: int) -> ModelResponse:
        choices = getattr(completion, "choices", None) or []
        if not choices:
            raise ModelError("the server returned no choices", transient=True)
        choice = choices[0]
        usage = None
        if getattr(completion, "usage", None) is not None:
            u = completion.usage
            prompt = int(getattr(u, "prompt_tokens", 0) or 0)
            completion_tokens = int(getattr(u, "completion_tokens", 0) or 0)
            total = int(getattr(u, "total_tokens", 0) or 0) or prompt + completion_tokens
            usage = {"prompt_tokens": prompt, "completion_tokens": completion_tokens, "total_tokens": total}
        return ModelResponse(
            message=assistant_message(choice.message),
            finish_reason=getattr(choice, "finish_reason", None),
            usage=usage,
            retries=retries,
            model=getattr(completion, "model", None),
        )

    def _classify(self, e: Exception) -> ModelError:
        openai = self._openai
        status = getattr(e, "status_code", None)
        text = str(e)
        if isinstance(e, openai.APIConnectionError):  # includes timeouts
            return ModelError(f"cannot reach the model server: {text}", transient=True)
        if isinstance(e, openai.APIStatusError):
            if status in (408, 409, 425, 429) or (status is not None and status >= 500):
                return ModelError(f"model server error {status}: {text}", transient=True)
            overflow = status in (400, 413, 422) and any(h in text.lower() for h in _CONTEXT_OVERFLOW_HINTS)
            return ModelError(f"model server refused the request ({status}): {text}", context_overflow=overflow)
        return ModelError(f"{type(e).__name__}: {text}", transient=isinstance(e, openai.APIResponseValidationError))

    def _backoff(self, attempt: int, error: ModelError) -> float:
        cause = error.__cause__ or error.__context__
        response = getattr(cause, "response", None)
        if response is not None:
            with contextlib.suppress(TypeError, ValueError, AttributeError):
                return min(self.config.retry_max_s, float(response.headers.get("retry-after")))
        delay = min(self.config.retry_max_s, self.config.retry_base_s * (2**attempt))
        return delay * (0.5 + self._rng.random() / 2)


def assistant_message(message: Any) -> dict[str, Any]:
    """An SDK message object (or a plain dict) as an OpenAI chat-format assistant message dict."""
    data = message if isinstance(message, dict) else _to_dict(message)
    out: dict[str, Any] = {"role": "assistant", "content": data.get("content")}
    reasoning = data.get("reasoning_content") or data.get("reasoning")
    if isinstance(reasoning, str) and reasoning:
        out["reasoning_content"] = reasoning
    calls = []
    for call in data.get("tool_calls") or []:
        call = call if isinstance(call, dict) else _to_dict(call)
        function = call.get("function") or {}
        function = function if isinstance(function, dict) else _to_dict(function)
        arguments = function.get("arguments")
        if arguments is not None and not isinstance(arguments, str):
            arguments = json.dumps(arguments)
        calls.append(
            {
                "id": call.get("id") or "",
                "type": "function",
                "function": {"name": function.get("name") or "", "arguments": arguments or ""},
            }
        )
    if calls:
        out["tool_calls"] = calls
    return out


def _to_dict(obj: Any) -> dict[str, Any]:
    if hasattr(obj, "model_dump"):
        data = obj.model_dump(exclude_none=False)
        extra = getattr(obj, "model_extra", None) or {}
        return {**data, **extra}
    return dict(vars(obj))
