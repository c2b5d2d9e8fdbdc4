"""OpenAIClient over real HTTP: request shape, usage, retries with backoff, errors that end episodes."""

from __future__ import annotations

import pytest
from scripted_llm import Reply, ScriptedLLM, call

from cuda_agent.agent.config import ModelConfig
from cuda_agent.agent.llm import ModelError, OpenAIClient

TOOLS = [{"type": "function", "function": {"name": "Read", "description": "d", "parameters": {"type": "object"}}}]
MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]


def client(server: ScriptedLLM, sleeps: list[float] | None = None, **kw) -> OpenAIClient:
    config = ModelConfig(name="scripted", base_url=server.url, api_key="k", **kw)
    return OpenAIClient(config, sleep=(sleeps.append if sleeps is not None else lambda s: None))


def test_request_carries_tools_budget_and_sampling_settings() -> None:
    with ScriptedLLM([lambda r: Reply(content="hi")]) as server:
        response = client(server, temperature=0.3, top_p=0.9, seed=7, extra_body={"top_k": 20}).complete(
            MESSAGES, TOOLS, max_tokens=123)  # fmt: skip
    sent = server.requests[0]
    assert sent["model"] == "scripted" and sent["messages"] == MESSAGES
    assert sent["tools"] == TOOLS and sent["tool_choice"] == "auto"
    assert sent["max_tokens"] == 123 and sent["temperature"] == 0.3 and sent["top_p"] == 0.9
    assert sent["seed"] == 7 and sent["top_k"] == 20
    assert "parallel_tool_calls" not in sent
    assert response.message == {"role": "assistant", "content": "hi"}
    assert response.finish_reason == "stop" and response.retries == 0
    assert response.usage is not None and response.usage["total_tokens"] > 0


def test_tool_calls_and_reasoning_come_back_in_chat_format() -> None:
    reply = Reply(tool_calls=[call("Read", "c1", file_path="model.py")], reasoning="think first")
    with ScriptedLLM([lambda r: reply]) as server:
        response = client(server).complete(MESSAGES, TOOLS)
    assert response.message == {
        "role": "assistant",
        "content": None,
        "reasoning_content": "think first",
        "tool_calls": [{"id": "c1", "type": "function",
                        "function": {"name": "Read", "arguments": '{"file_path": "model.py"}'}}],
    }  # fmt: skip
    assert response.finish_reason == "tool_calls"


def test_reasoning_is_not_sent_back_unless_configured() -> None:
    history = [*MESSAGES, {"role": "assistant", "content": "a", "reasoning_content": "secret"}]
    with ScriptedLLM([lambda r: Reply(content="x")]) as server:
        client(server).complete(history, TOOLS)
        client(server, send_reasoning=True).complete(history, TOOLS)
    assert "reasoning_content" not in server.requests[0]["messages"][2]
    assert server.requests[1]["messages"][2]["reasoning_content"] == "secret"


def test_missing_usage_is_reported_as_none() -> None:
    with ScriptedLLM([lambda r: Reply(content="x", usage=False)]) as server:
        assert client(server).complete(MESSAGES, TOOLS).usage is None


def test_transient_errors_are_retried_with_growing_backoff() -> None:
    failures = iter([503, 429, 500])

    def flaky(request):
        status = next(failures, 200)
        return Reply(content="finally") if status == 200 else Reply(status=status, error="busy")

    sleeps: list[float] = []
    with ScriptedLLM(flaky) as server:
        response = client(server, sleeps, retry_base_s=1.0).complete(MESSAGES, TOOLS)
    assert response.message["content"] == "finally" and response.retries == 3
    assert len(server.requests) == 4
    assert 0.5 <= sleeps[0] <= 1.0 and 1.0 <= sleeps[1] <= 2.0 and 2.0 <= sleeps[2] <= 4.0


def test_retries_give_up_after_the_configured_number() -> None:
    sleeps: list[float] = []
    with ScriptedLLM(lambda r: Reply(status=503, error="down")) as server, pytest.raises(ModelError, match=r"after 2 retries") as info:
        client(server, sleeps, max_retries=2).complete(MESSAGES, TOOLS)
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert not info.value.context_overflow


def test_context_overflow_is_recognised_and_not_retried() -> None:
    message = "This model's maximum context length is 131072 tokens. However, you requested 140000 tokens."
    with ScriptedLLM(lambda r: Reply(status=400, error=message)) as server, pytest.raises(ModelError) as info:
        client(server).complete(MESSAGES, TOOLS)
    assert info.value.context_overflow and not info.value.transient
    assert len(server.requests) == 1


def test_auth_errors_are_not_retried() -> None:
    with ScriptedLLM(lambda r: Reply(status=401, error="bad key")) as server, pytest.raises(ModelError, match="401") as info:
        client(server).complete(MESSAGES, TOOLS)
    assert not info.value.transient and not info.value.context_overflow and len(server.requests) == 1


def test_an_unreachable_server_is_a_transient_error() -> None:
    config = ModelConfig(name="m", base_url="http://127.0.0.1:9/v1", max_retries=1, request_timeout_s=5)
    sleeps: list[float] = []
    with pytest.raises(ModelError, match="cannot reach the model server"):
        OpenAIClient(config, sleep=sleeps.append).complete(MESSAGES, TOOLS)
    assert len(sleeps) == 1


def test_a_model_name_is_required() -> None:
    with pytest.raises(ValueError, match="no model name"):
        OpenAIClient(ModelConfig(name=""))
