"""The fake LLM server, driven by the real Anthropic and OpenAI SDKs (no database)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from debates.agents.base import AgentRequest
from debates.agents.prompts import prompt_render
from debates.agents.simulated import simulated_payload
from debates.contract import RunView, Step
from debates.devtools.fake_llm import FakeLLMServer, Fault, simulated_reply, token_count
from debates.protocols.cross_examination.schema import Analysis

MODEL = "claude-test"
REPLY = "The fake model says hello, and then it says a little more."
BIG = "Shared rules and material. " * 100  # 2,700 chars = 675 tokens, above the 512 minimum
SMALL = "Too short to cache. " * 10  # 50 tokens


def reply(body: dict[str, Any], api: str) -> str:
    return REPLY


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    with FakeLLMServer(responder=reply) as fake:
        yield fake


def client(server: FakeLLMServer, **kwargs: Any) -> AsyncAnthropic:
    return AsyncAnthropic(api_key="test", base_url=server.url, **{"max_retries": 0, **kwargs})


def cached_system(text: str = BIG, **cache_control: Any) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral", **cache_control}}]


async def stream_usage(
    api: AsyncAnthropic, *, system: Any = None, content: Any = "Hello", **kwargs: Any
) -> anthropic.types.Usage:
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 200,
        "messages": [{"role": "user", "content": content}],
    }
    if system is not None:
        params["system"] = system
    async with api.messages.stream(**params, **kwargs) as stream:
        message = await stream.get_final_message()
    return message.usage


# Anthropic: stream format ----------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_stream_parses_with_usage(server: FakeLLMServer) -> None:
    deltas = []
    async with client(server).messages.stream(
        model=MODEL, max_tokens=200, system=cached_system(), messages=[{"role": "user", "content": "Hello"}]
    ) as stream:
        async for text in stream.text_stream:
            deltas.append(text)
        message = await stream.get_final_message()

    assert len(deltas) > 1
    assert "".join(deltas) == REPLY == message.content[0].text  # type: ignore[union-attr]
    assert message.model == MODEL
    assert message.stop_reason == "end_turn"
    usage = message.usage
    assert usage.cache_creation_input_tokens == token_count(BIG)
    assert usage.cache_read_input_tokens == 0
    assert usage.cache_creation is not None
    assert usage.cache_creation.ephemeral_5m_input_tokens == token_count(BIG)
    assert usage.cache_creation.ephemeral_1h_input_tokens == 0
    assert usage.input_tokens == token_count("Hello")
    assert usage.output_tokens == token_count(REPLY)
    assert usage.output_tokens_details is not None
    assert usage.output_tokens_details.thinking_tokens == 0
    [recorded] = server.requests
    assert (recorded.api, recorded.status, recorded.fault, recorded.text) == ("anthropic", 200, "", REPLY)
    assert recorded.body["stream"] is True
    assert recorded.usage["cache_creation_input_tokens"] == token_count(BIG)


@pytest.mark.asyncio
async def test_anthropic_max_tokens_zero_prewarms_and_long_replies_are_truncated(
    server: FakeLLMServer,
) -> None:
    api = client(server)
    warm = await api.messages.create(
        model=MODEL, max_tokens=0, system=cached_system(), messages=[{"role": "user", "content": "Hello"}]
    )
    assert warm.content == []
    assert warm.stop_reason == "max_tokens"
    assert warm.usage.output_tokens == 0
    assert warm.usage.cache_creation_input_tokens == token_count(BIG)

    short = await api.messages.create(
        model=MODEL, max_tokens=3, system=cached_system(), messages=[{"role": "user", "content": "Hello"}]
    )
    assert short.stop_reason == "max_tokens"
    assert short.content[0].text == REPLY[:12]  # type: ignore[union-attr]
    assert short.usage.cache_read_input_tokens == token_count(BIG)


# Anthropic: prompt-cache emulation ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_cache_sequential_requests_write_then_read(server: FakeLLMServer) -> None:
    api = client(server)
    first = await stream_usage(api, system=cached_system(), content="Question one")
    second = await stream_usage(api, system=cached_system(), content="A different question")

    assert (first.cache_creation_input_tokens, first.cache_read_input_tokens) == (token_count(BIG), 0)
    assert (second.cache_creation_input_tokens, second.cache_read_input_tokens) == (0, token_count(BIG))
    assert second.input_tokens == token_count("A different question")

    server.cache_clear()
    third = await stream_usage(api, system=cached_system(), content="Question one")
    assert (third.cache_creation_input_tokens, third.cache_read_input_tokens) == (token_count(BIG), 0)


@pytest.mark.asyncio
async def test_cache_parallel_requests_before_any_response_all_write() -> None:
    with FakeLLMServer(responder=reply, ttft=0.3) as server:
        api = client(server)
        usages = await asyncio.gather(
            *(stream_usage(api, system=cached_system(), content=f"Seat {n}") for n in range(3))
        )
        assert [u.cache_creation_input_tokens for u in usages] == [token_count(BIG)] * 3
        assert [u.cache_read_input_tokens for u in usages] == [0, 0, 0]

        after = await stream_usage(api, system=cached_system(), content="Judge")
        assert (after.cache_creation_input_tokens, after.cache_read_input_tokens) == (0, token_count(BIG))


@pytest.mark.asyncio
async def test_cache_prefix_below_minimum_is_never_cached(server: FakeLLMServer) -> None:
    api = client(server)
    for _ in range(2):
        usage = await stream_usage(api, system=cached_system(SMALL))
        assert (usage.cache_creation_input_tokens, usage.cache_read_input_tokens) == (0, 0)
        assert usage.input_tokens == token_count(SMALL) + token_count("Hello")


@pytest.mark.asyncio
async def test_cache_twenty_block_lookback(server: FakeLLMServer) -> None:
    api = client(server)

    def blocks(count: int) -> list[dict[str, Any]]:
        # `count` message blocks after the system block; the breakpoint is on the last one
        items: list[dict[str, Any]] = [{"type": "text", "text": f"Turn {n:02d}."} for n in range(count)]
        items[-1]["cache_control"] = {"type": "ephemeral"}
        return items

    await stream_usage(api, system=cached_system())  # writes the system block (block 0)
    # Breakpoint on block 19: the lookback covers blocks 19..0, so it finds block 0.
    near = await stream_usage(api, system=[{"type": "text", "text": BIG}], content=blocks(19))
    assert near.cache_read_input_tokens == token_count(BIG)
    assert near.cache_creation_input_tokens == 19 * token_count("Turn 10.")

    server.cache_clear()
    await stream_usage(api, system=cached_system())
    # Breakpoint on block 20: the lookback covers blocks 20..1, so block 0 is out of reach.
    far = await stream_usage(api, system=[{"type": "text", "text": BIG}], content=blocks(20))
    assert far.cache_read_input_tokens == 0
    assert far.cache_creation_input_tokens == token_count(BIG) + 20 * token_count("Turn 10.")


@pytest.mark.asyncio
async def test_cache_breakpoints_ttl_and_top_level(server: FakeLLMServer) -> None:
    api = client(server)
    system = [
        {"type": "text", "text": BIG, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        {"type": "text", "text": "Persona of seat one. " * 40},
    ]
    persona_tokens = token_count("Persona of seat one. " * 40)
    # Top-level cache_control marks the last block (the user message) as a 5m breakpoint.
    first = await stream_usage(api, system=system, cache_control={"type": "ephemeral"})
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == token_count(BIG)
    assert first.cache_creation.ephemeral_5m_input_tokens == persona_tokens + token_count("Hello")
    assert first.input_tokens == 0

    again = await stream_usage(api, system=system, cache_control={"type": "ephemeral"})
    assert again.cache_read_input_tokens == token_count(BIG) + persona_tokens + token_count("Hello")
    assert again.cache_creation_input_tokens == 0

    other_seat = await stream_usage(api, system=[system[0], {"type": "text", "text": "Seat two."}])
    assert other_seat.cache_read_input_tokens == token_count(BIG)

    too_many = [{"type": "text", "text": f"b{n}", "cache_control": {"type": "ephemeral"}} for n in range(5)]
    with pytest.raises(anthropic.BadRequestError) as caught:
        await stream_usage(api, system=too_many)
    assert caught.value.status_code == 400
    assert caught.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]


# Anthropic: faults -------------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_529_is_retried_transparently(server: FakeLLMServer) -> None:
    server.faults.append(Fault("status", status=529, retry_after_ms=10))
    usage = await stream_usage(client(server, max_retries=2))

    assert usage.output_tokens == token_count(REPLY)
    assert [r.status for r in server.requests] == [529, 200]
    assert [r.fault for r in server.requests] == ["status:529", ""]
    assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0", "1"]
    assert server.faults[0].times == 0


@pytest.mark.asyncio
async def test_anthropic_status_error_body_when_retries_run_out(server: FakeLLMServer) -> None:
    server.faults.append(
        Fault(
            "status",
            status=429,
            error_type="rate_limit_error",
            message="Slow down",
            retry_after=0.01,
            times=2,
        )
    )
    with pytest.raises(anthropic.RateLimitError) as caught:
        await stream_usage(client(server, max_retries=1))
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "rate_limit_error", "message": "Slow down"},
        "request_id": "req_fake",
    }
    assert len(server.requests) == 2


@pytest.mark.asyncio
async def test_anthropic_refuses_a_schema_property_name_the_api_refuses(server: FakeLLMServer) -> None:
    schema = {
        "type": "object",
        "properties": {"Team familiarity": {"type": "string"}},
        "required": ["Team familiarity"],
        "additionalProperties": False,
    }
    with pytest.raises(anthropic.BadRequestError) as caught:
        await client(server).messages.create(
            model="claude-sonnet-5-5",
            max_tokens=50,
            messages=[{"role": "user", "content": "hi"}],
            output_config={"format": {"type": "json_schema", "schema": schema}},
        )
    assert "Property keys should match pattern" in str(caught.value)
    assert server.requests[0].status == 400


@pytest.mark.asyncio
async def test_anthropic_midstream_error_after_partial_text(server: FakeLLMServer) -> None:
    server.faults.append(Fault("midstream", after_chars=20))
    received: list[str] = []

    async def consume() -> None:
        async with client(server, max_retries=2).messages.stream(
            model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "Hello"}]
        ) as stream:
            async for text in stream.text_stream:
                received.append(text)

    with pytest.raises(anthropic.APIStatusError) as caught:
        await consume()

    error = caught.value
    assert not isinstance(error, anthropic.OverloadedError)
    assert error.status_code == 200
    assert isinstance(error.body, dict)
    assert error.body["error"]["type"] == "overloaded_error"
    assert "".join(received) == REPLY[:20]
    [recorded] = server.requests  # not retried
    assert (recorded.fault, recorded.text) == ("midstream:overloaded_error", REPLY[:20])


@pytest.mark.asyncio
async def test_fault_match_api_times_and_text(server: FakeLLMServer) -> None:
    server.faults += [
        Fault("status", status=500, match="seat-bo", retry_after_ms=1),
        Fault("text", text="{not json", api="anthropic", times=2),
        Fault("status", api="openai", times=5),
    ]
    api = client(server, max_retries=1)
    async with api.messages.stream(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "I am seat-bo"}]
    ) as stream:
        assert await stream.get_final_text() == "{not json"
    async with api.messages.stream(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "I am seat-cy"}]
    ) as stream:
        assert await stream.get_final_text() == "{not json"
    async with api.messages.stream(
        model=MODEL, max_tokens=200, messages=[{"role": "user", "content": "I am seat-bo"}]
    ) as stream:
        assert await stream.get_final_text() == REPLY
    assert [r.fault for r in server.requests] == ["status:500", "text", "text", ""]
    assert [f.times for f in server.faults] == [0, 0, 5]


@pytest.mark.asyncio
async def test_random_faults_are_seeded_and_recorded() -> None:
    outcomes = []
    codes: set[int] = set()
    for _ in range(2):
        with FakeLLMServer(responder=reply, fault_rate=0.5, fault_seed=3) as fake:
            api = client(fake)
            for _ in range(12):
                try:
                    await stream_usage(api)
                except anthropic.APIStatusError as error:
                    codes.add(error.status_code)
            outcomes.append([r.fault for r in fake.requests])
    assert outcomes[0] == outcomes[1]
    assert codes <= {200, 429, 529}
    assert {f for f in outcomes[0] if f} <= {
        "random:overloaded",
        "random:rate_limit",
        "random:midstream",
        "random:drop",
    }
    assert "" in outcomes[0]
    assert any(f.startswith("random:") for f in outcomes[0])


# OpenAI --------------------------------------------------------------------------------------------------------


def openai_client(server: FakeLLMServer, **kwargs: Any) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="test", base_url=server.url + "/v1", **{"max_retries": 0, **kwargs})


OPENAI_SYSTEM = "Long shared instructions for every seat. " * 110  # 4,510 chars = 1,127 tokens


async def openai_stream(api: AsyncOpenAI, question: str) -> tuple[str, Any]:
    stream = await api.chat.completions.create(
        model="gpt-test",
        messages=[{"role": "system", "content": OPENAI_SYSTEM}, {"role": "user", "content": question}],
        stream=True,
        stream_options={"include_usage": True},
        response_format={"type": "json_object"},
    )
    text, usage = "", None
    async for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            text += chunk.choices[0].delta.content
        if chunk.usage is not None:
            usage = chunk.usage
    return text, usage


@pytest.mark.asyncio
async def test_openai_stream_usage_and_prefix_cache(server: FakeLLMServer) -> None:
    api = openai_client(server)
    text, first = await openai_stream(api, "First question?")
    assert text == REPLY
    assert first.prompt_tokens == token_count(OPENAI_SYSTEM) + token_count("First question?")
    assert first.completion_tokens == token_count(REPLY)
    assert first.total_tokens == first.prompt_tokens + first.completion_tokens
    assert first.prompt_tokens_details.cached_tokens == 0
    assert first.completion_tokens_details.reasoning_tokens == 0

    _, second = await openai_stream(api, "Second question?")
    assert second.prompt_tokens_details.cached_tokens == token_count(OPENAI_SYSTEM)
    _, repeat = await openai_stream(api, "Second question?")
    assert repeat.prompt_tokens_details.cached_tokens == repeat.prompt_tokens

    recorded = server.requests[0]
    assert (recorded.api, recorded.path, recorded.status) == ("openai", "/v1/chat/completions", 200)
    assert recorded.body["response_format"] == {"type": "json_object"}
    assert recorded.usage["prompt_tokens_details"]["cached_tokens"] == 0


@pytest.mark.asyncio
async def test_openai_short_prefix_is_not_cached(server: FakeLLMServer) -> None:
    api = openai_client(server)
    for _ in range(2):
        completion = await api.chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": SMALL}]
        )
        assert completion.choices[0].message.content == REPLY
        assert completion.usage is not None
        assert completion.usage.prompt_tokens_details is not None
        assert completion.usage.prompt_tokens_details.cached_tokens == 0


@pytest.mark.asyncio
async def test_openai_status_retry_and_midstream_error(server: FakeLLMServer) -> None:
    server.faults.append(Fault("status", status=503, error_type="server_error", retry_after_ms=10))
    text, _ = await openai_stream(openai_client(server, max_retries=1), "Retried?")
    assert text == REPLY
    assert [r.status for r in server.requests] == [503, 200]
    assert server.requests[1].headers["x-stainless-retry-count"] == "1"

    server.faults.append(Fault("midstream", error_type="server_error", message="Boom", after_chars=15))
    received: list[str] = []

    async def consume() -> None:
        stream = await openai_client(server, max_retries=2).chat.completions.create(
            model="gpt-test", messages=[{"role": "user", "content": "Hi"}], stream=True
        )
        async for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                received.append(chunk.choices[0].delta.content)

    with pytest.raises(openai.APIError) as caught:
        await consume()
    # openai 3.54 raises the base APIError (no status_code) with the inner error object as `body`.
    assert not isinstance(caught.value, openai.APIStatusError)
    assert caught.value.type == "server_error"
    assert caught.value.body == {"message": "Boom", "type": "server_error", "param": None, "code": None}
    assert "".join(received) == REPLY[:15]
    assert len(server.requests) == 3


# simulated_reply -----------------------------------------------------------------------------------------------

MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about "
    "20 percent. Costs < benefits according to the city's own evaluation. Public support rose above 50 percent "
    "after the trial. Singapore has priced road use since 1975."
)


def analysis_request(seed: int) -> AgentRequest:
    step = Step(
        key="r1/analysis/analyst-ada",
        seat="analyst-ada",
        stage="r1",
        task="analysis",
        schema=Analysis,
        sees=(),
        context={"analyst": "analyst-ada", "name": "Ada", "lens": "economics"},
    )
    view = RunView(
        run_id=1,
        topic="Should <cities> charge for congestion?",
        material=MATERIAL,
        seed=seed,
        config=Analysis.model_construct(),
        seats={},
        turns={},
    )
    return AgentRequest(step=step, view=view, protocol="cross-examination", options={}, attempt=1)


def test_simulated_reply_answers_a_rendered_analysis_prompt() -> None:
    request = analysis_request(seed=7)
    prompt = prompt_render(protocol="cross-examination", step=request.step, view=request.view)
    anthropic_body = {
        "system": [{"type": "text", "text": prompt.shared, "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": prompt.persona + "\n\n" + prompt.task}]}
        ],
    }
    openai_body = {
        "messages": [
            {"role": "system", "content": prompt.shared},
            {"role": "user", "content": prompt.persona + "\n\n" + prompt.task},
        ]
    }
    expected = simulated_payload(request)
    for body, api in ((anthropic_body, "anthropic"), (openai_body, "openai")):
        text = simulated_reply(body, api, seed=7)
        Analysis.model_validate_json(text)
        assert json.loads(text) == expected
    assert simulated_reply(anthropic_body, "anthropic", seed=8) != simulated_reply(
        anthropic_body, "anthropic", seed=7
    )
    assert json.loads(simulated_reply({"messages": [{"role": "user", "content": "hi"}]}, "openai")) == {
        "text": "ok"
    }


@pytest.mark.asyncio
async def test_default_responder_streams_the_simulated_payload() -> None:
    request = analysis_request(seed=1)
    prompt = prompt_render(protocol="cross-examination", step=request.step, view=request.view)
    with FakeLLMServer(chunk_chars=40) as server:
        async with client(server).messages.stream(
            model=MODEL,
            max_tokens=4000,
            system=[{"type": "text", "text": prompt.shared}],
            messages=[{"role": "user", "content": prompt.persona + "\n\n" + prompt.task}],
        ) as stream:
            text = await stream.get_final_text()
    assert Analysis.model_validate_json(text).model_dump(mode="json") == simulated_payload(request)
