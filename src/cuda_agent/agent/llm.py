"""The model client: one chat-completions call, against any OpenAI-compatible server.

`ModelClient` is the seam: the loop only needs `complete(messages, tools, ...) -> ModelResponse`, so RL
code can plug in its own sampler (a local engine, a policy under training) without an HTTP server.
`OpenAIClient` is the production implementation: the official `openai` SDK pointed at any `base_url`
(vLLM, SGLang, hosted APIs), with its own retry loop so that every retry is counted in the trajectory
and a server that says "context length exceeded" ends the episode cleanly instead of being retried.

`check_server` is the preflight `solve` runs once before a batch (and again when an episode ends with a
model error): the models endpoint, then a one-token request with a tool, so a dead server, a wrong model
name or a server started without tool calling is reported in seconds with its URL, not after minutes of
retries per task. A request in flight is abandoned as soon as the run's cancel event is set.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
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

    def __init__(
        self, message: str, *, transient: bool = False, context_overflow: bool = False, cancelled: bool = False
    ) -> None:
        super().__init__(message)
        self.transient = transient
        self.context_overflow = context_overflow
        self.cancelled = cancelled  # the run was cancelled while the request was in flight


class ServerUnusable(Exception):
    """The model server cannot serve the agent; the message names the URL, what failed and what to do."""


# Sent with the preflight request, so servers' logs (and test doubles) can tell it from real turns.
PREFLIGHT_HEADER = "X-Cuda-Agent-Preflight"

_TOOL_CALLING_HELP = (
    "the server must accept tools with tool_choice 'auto': start vLLM with "
    "`vllm serve MODEL --enable-auto-tool-choice --tool-call-parser PARSER` and SGLang with "
    "`python -m sglang.launch_server --model-path MODEL --tool-call-parser PARSER` "
    "(PARSER matching the model's chat template, e.g. hermes in vLLM or qwen25 in SGLang for Qwen models)"
)


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
        cancel: threading.Event | None = None,
        on_retry: Callable[[int, float, ModelError], None] | None = None,
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
        self._cancel = cancel
        self._on_retry = on_retry

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
                completion = self._create(request)
                return self._response(completion, attempt)
            except ModelError as e:
                if e.cancelled:
                    raise
                error = e
            except self._openai.APIError as e:
                error = self._classify(e)
                error.__cause__ = e
            if not error.transient or attempt >= self.config.max_retries:
                if attempt:
                    raise ModelError(f"{error} (after {attempt} retries)", context_overflow=error.context_overflow)
                raise error
            delay = self._backoff(attempt, error)
            if self._on_retry is not None:
                self._on_retry(attempt + 1, delay, error)
            if self._cancel is not None:
                if self._cancel.wait(delay):
                    raise ModelError("the run was cancelled while waiting to retry the model", cancelled=True)
            else:
                self._sleep(delay)
            attempt += 1

    def _create(self, request: dict[str, Any]) -> Any:
        """The SDK call; with a cancel event it runs in a daemon thread that is abandoned on cancel, so Ctrl-C
        does not wait for a long generation to end (the SDK's blocking read cannot be interrupted)."""
        if self._cancel is None:
            return self._client.chat.completions.create(**request)
        if self._cancel.is_set():
            raise ModelError("the run was cancelled", cancelled=True)
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["value"] = self._client.chat.completions.create(**request)
            except BaseException as e:  # handed to the waiting thread
                box["error"] = e
            finally:
                done.set()

        threading.Thread(target=work, name="model-request", daemon=True).start()
        while not done.wait(0.1):
            if self._cancel.is_set():
                raise ModelError("the run was cancelled while the model was answering", cancelled=True)
        if "error" in box:
            raise box["error"]
        return box["value"]

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


def check_server(config: ModelConfig, *, timeout_s: float = 20.0) -> str:
    """Check once that `config`'s server answers and can serve the agent; return a one-line description.

    Raises `ServerUnusable` naming the URL and the error: unreachable, the model not served there, or a
    server that refuses tool calls (vLLM without `--enable-auto-tool-choice`, for one).
    """
    import openai

    url = config.base_url or "(no URL)"
    client = openai.OpenAI(base_url=config.base_url, api_key=config.api_key or "EMPTY", max_retries=0,
                           timeout=timeout_s)  # fmt: skip
    served: list[str] | None = None
    try:
        served = [m.id for m in client.models.list()]
    except openai.APIConnectionError as e:
        raise ServerUnusable(f"cannot reach the model server at {url}: {_connection_detail(e)}; start the server "
                             "or pass the right --base-url") from e  # fmt: skip
    except openai.APIStatusError as e:
        if e.status_code in (401, 403):
            raise ServerUnusable(f"the model server at {url} refused the API key ({e.status_code}): {e.message}; "
                                 "set CUDA_AGENT_API_KEY or --api-key") from e  # fmt: skip
        served = None  # some servers have no models endpoint: the request below decides
    except openai.APIError:
        served = None
    if served is not None and served and config.name not in served:
        raise ServerUnusable(f"the model server at {url} does not serve model {config.name!r}; it serves: "
                             f"{', '.join(served[:10])}; pass one of these as --model")  # fmt: skip
    tool = {"type": "function", "function": {"name": "noop", "description": "Does nothing.",
                                             "parameters": {"type": "object", "properties": {}}}}  # fmt: skip
    try:
        client.chat.completions.create(
            model=config.name,
            messages=[{"role": "user", "content": "Reply with OK."}],
            tools=[tool],
            tool_choice="auto",
            max_tokens=1,
            extra_headers={PREFLIGHT_HEADER: "1"},
        )
    except openai.APIConnectionError as e:
        raise ServerUnusable(f"the model server at {url} did not answer a one-token request: "
                             f"{_connection_detail(e)}") from e  # fmt: skip
    except openai.APIStatusError as e:
        text = str(e.message)
        hint = ""
        if e.status_code in (400, 422) and "tool" in text.lower():
            hint = f"; {_TOOL_CALLING_HELP}"
        elif e.status_code == 404:
            hint = "; check --model and --base-url (it usually ends in /v1)"
        raise ServerUnusable(f"the model server at {url} refused a one-token request with model {config.name!r} "
                             f"({e.status_code}): {text}{hint}") from e  # fmt: skip
    except openai.APIError as e:
        raise ServerUnusable(f"the model server at {url} sent an unusable answer: {e}") from e
    finally:
        client.close()
    return f"{url} serves {config.name}" + (f" (of {len(served)} models)" if served and len(served) > 1 else "")


def _connection_detail(e: Exception) -> str:
    """The SDK says only 'Connection error.'; the cause (refused, timed out, unknown host) is what helps."""
    detail = str(e)
    cause = e.__cause__ or e.__context__
    while cause is not None and (cause.__cause__ or cause.__context__) is not None and not str(cause):
        cause = cause.__cause__ or cause.__context__
    if cause is not None and str(cause):
        detail = f"{detail.rstrip('.')}: {cause}"
    return detail


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
