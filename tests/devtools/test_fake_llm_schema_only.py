"""The fake LLM server's schema-only mode (a model that honours the schema and nothing else), driven by the real
Anthropic and OpenAI SDKs (no database)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal

import anthropic
import jsonschema
import pytest
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI
from pydantic import BaseModel, Field

from debates.devtools.fake_llm import FakeLLMServer, schema_of
from debates.protocols.cross_examination.schema import Analysis

MODEL = "fake-model"


class Pick(BaseModel):
    ref: Literal["arg-001", "arg-002", "arg-003"]
    why: str = Field(min_length=3, max_length=400)


class Verdict(BaseModel):
    picks: list[Pick] = Field(min_length=1, max_length=3)
    score: int = Field(ge=1, le=5)
    scores: dict[str, int]
    note: str | None = None


SCHEMAS = [Verdict, Analysis]


def anthropic_client(server: FakeLLMServer) -> AsyncAnthropic:
    return AsyncAnthropic(api_key="test", base_url=server.url, max_retries=0)


def openai_client(server: FakeLLMServer) -> AsyncOpenAI:
    return AsyncOpenAI(api_key="test", base_url=server.openai_url, max_retries=0)


async def anthropic_json(server: FakeLLMServer, schema: dict[str, Any], prompt: str = "Anything.") -> Any:
    async with anthropic_client(server).messages.stream(
        model=MODEL,
        max_tokens=4000,
        messages=[{"role": "user", "content": prompt}],
        output_config={"format": {"type": "json_schema", "schema": schema}},
    ) as stream:
        message = await stream.get_final_message()
    assert message.stop_reason == "end_turn"
    return json.loads("".join(b.text for b in message.content if b.type == "text"))


async def openai_json(server: FakeLLMServer, schema: dict[str, Any], *, stream: bool = True) -> Any:
    params: dict[str, Any] = {
        "model": MODEL,
        "messages": [{"role": "user", "content": "Anything."}],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "Answer", "schema": schema, "strict": False},
        },
    }
    api = openai_client(server)
    if not stream:
        completion = await api.chat.completions.create(**params)
        return json.loads(completion.choices[0].message.content or "")
    parts = []
    async for chunk in await api.chat.completions.create(**params, stream=True):
        parts += [c.delta.content for c in chunk.choices if c.delta and c.delta.content]
    return json.loads("".join(parts))


@pytest.mark.parametrize("model", SCHEMAS, ids=lambda m: m.__name__)
def test_anthropic_answers_validate_against_the_schema_sent(model: type[BaseModel]) -> None:
    schema = anthropic.transform_schema(model)  # what the Anthropic backend sends
    with FakeLLMServer(mode="schema-only", seed=5) as server:
        for n in range(3):
            jsonschema.validate(asyncio.run(anthropic_json(server, schema, f"prompt {n}")), schema)


@pytest.mark.parametrize("model", SCHEMAS, ids=lambda m: m.__name__)
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_openai_answers_validate_against_the_schema_sent(model: type[BaseModel], stream: bool) -> None:
    schema = model.model_json_schema()  # what the OpenAI-compatible backend sends
    with FakeLLMServer(mode="schema-only", seed=5) as server:
        answer = asyncio.run(openai_json(server, schema, stream=stream))
    jsonschema.validate(answer, schema)


def test_a_forced_anthropic_tool_is_answered_with_a_valid_tool_use_block() -> None:
    schema = Verdict.model_json_schema()

    async def call(server: FakeLLMServer, stream: bool) -> anthropic.types.Message:
        params: dict[str, Any] = {
            "model": MODEL,
            "max_tokens": 4000,
            "messages": [{"role": "user", "content": "Anything."}],
            "tools": [
                {"name": "other", "input_schema": {"type": "object"}},
                {"name": "submit", "input_schema": schema},
            ],
            "tool_choice": {"type": "tool", "name": "submit"},
        }
        if not stream:
            return await anthropic_client(server).messages.create(**params)
        async with anthropic_client(server).messages.stream(**params) as running:
            return await running.get_final_message()

    with FakeLLMServer(mode="schema-only", seed=2) as server:
        for stream in (True, False):
            message = asyncio.run(call(server, stream))
            assert message.stop_reason == "tool_use"
            (block,) = message.content
            assert block.type == "tool_use" and block.name == "submit"
            jsonschema.validate(block.input, schema)


def test_answers_are_deterministic_for_a_seed_and_differ_across_seeds() -> None:
    schema = anthropic.transform_schema(Analysis)
    answers: dict[int, list[Any]] = {}
    for seed in (1, 1, 2, 3):
        with FakeLLMServer(mode="schema-only", seed=seed) as server:
            answer = asyncio.run(anthropic_json(server, schema))
            assert answer == asyncio.run(anthropic_json(server, schema))  # the same request, the same answer
            answers.setdefault(seed, []).append(answer)
    assert answers[1][0] == answers[1][1]
    assert len({json.dumps(answers[s][0], sort_keys=True) for s in (1, 2, 3)}) == 3


def test_the_prompt_is_ignored_but_a_different_request_gets_a_different_answer() -> None:
    schema = Verdict.model_json_schema()
    with FakeLLMServer(mode="schema-only", seed=4) as server:
        first = asyncio.run(anthropic_json(server, schema, "Please answer with score 3."))
        second = asyncio.run(anthropic_json(server, schema, "Another prompt."))
    for answer in (first, second):
        jsonschema.validate(answer, schema)
    assert first != second


def test_a_request_without_a_schema_gets_prose() -> None:
    async def both(server: FakeLLMServer) -> tuple[str, str]:
        message = await anthropic_client(server).messages.create(
            model=MODEL, max_tokens=500, messages=[{"role": "user", "content": 'Answer {"text": "json"}.'}]
        )
        completion = await openai_client(server).chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": "Hello"}]
        )
        text = "".join(b.text for b in message.content if b.type == "text")
        return text, completion.choices[0].message.content or ""

    with FakeLLMServer(mode="schema-only", seed=1) as server:
        for text in asyncio.run(both(server)):
            assert len(text.split()) >= 5 and text.endswith(".")
            with pytest.raises(json.JSONDecodeError):
                json.loads(text)


def test_json_object_mode_gets_a_json_object() -> None:
    async def call(server: FakeLLMServer) -> str:
        completion = await openai_client(server).chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Hello"}],
            response_format={"type": "json_object"},
        )
        return completion.choices[0].message.content or ""

    with FakeLLMServer(mode="schema-only", seed=1) as server:
        assert isinstance(json.loads(asyncio.run(call(server))), dict)


def test_where_the_schema_travels() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    found = schema_of({"output_format": {"type": "json_schema", "schema": schema}}, "anthropic")
    assert found is not None and found.schema == schema and found.shape == "text"
    found = schema_of(
        {"tools": [{"name": "t", "input_schema": schema}], "tool_choice": {"type": "any"}}, "anthropic"
    )
    assert found is not None and (found.shape, found.tool) == ("tool", "t")
    assert schema_of({"tools": [{"name": "t", "input_schema": schema}]}, "anthropic") is None  # not forced
    assert schema_of({"messages": []}, "openai") is None


def test_an_unknown_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown mode"):
        FakeLLMServer(mode="obedient")  # type: ignore[arg-type]
