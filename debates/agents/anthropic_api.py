"""The Anthropic backend: `AsyncAnthropic().messages.create(stream=True)` with structured output through `output_config`
(forced tool choice returns 400 on current models), prompt caching and exact cost per call.

Request layout (the order is the cache's prefix order: system, then messages):
  system   [rules + topic + material]                      <- breakpoint 1: shared by every seat of the run
  user     [turn 1] [turn 2] ... [turn n]                   <- breakpoint 2 on the last turn: shared by the stage
           [persona + task]                                 <- per seat, after every breakpoint
Lengths, ranges and counts that the API moves into descriptions are validated by the engine (schema + protocol)
after the call; an invalid answer is repaired once, then the turn fails."""

from __future__ import annotations

import functools
import json
import logging
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import anthropic
from pydantic import BaseModel

from debates.agents.base import AgentRequest, BackendError, Delta, Result
from debates.agents.catalog import anthropic_unavailable_reason
from debates.agents.pricing import call_estimate, model_accepts_temperature, tokens_estimate, usage_priced
from debates.agents.remote import (
    ClientPerLoop,
    body_error,
    connection_error,
    payload_parse,
    repair_messages,
    status_error,
    timed_out,
    tls_context,
)
from debates.agents.usage import Usage
from debates.platform.conf import conf

log = logging.getLogger("debates.agents")

PROVIDER = "Anthropic"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
EPHEMERAL = {"type": "ephemeral"}
# Below this the prefix may not be cached at all (512-4,096 tokens depending on the model): not worth a warm-up.
MIN_WARM_TOKENS = 1024


def _base_url() -> str:
    return os.environ.get("ANTHROPIC_BASE_URL") or "https://api.anthropic.com"


def _new_client() -> anthropic.AsyncAnthropic:
    return anthropic.AsyncAnthropic(
        max_retries=conf("SDK_MAX_RETRIES"),
        timeout=conf("API_TIMEOUT_SECONDS"),
        # The SDK's aiohttp transport: reading a stream costs a third to a half of the CPU of the httpx one (README).
        http_client=anthropic.DefaultAioHttpClient(verify=tls_context()),
    )


@functools.lru_cache(maxsize=256)
def _output_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """A step's JSON schema as the API takes it, built once per schema class (every call of a step sends it; the SDK
    only serialises it)."""
    return anthropic.transform_schema(schema)


def request_params(request: AgentRequest) -> dict[str, Any]:
    prompt = request.prompt()
    system = [{"type": "text", "text": prompt.shared, "cache_control": EPHEMERAL}]
    content: list[dict[str, Any]] = [{"type": "text", "text": block} for block in prompt.transcript]
    if content:
        content[-1]["cache_control"] = EPHEMERAL
    content.append({"type": "text", "text": f"{prompt.persona}\n\n{prompt.task}"})
    output_config: dict[str, Any] = {
        "format": {"type": "json_schema", "schema": _output_schema(request.step.schema)}
    }
    if request.effort:
        output_config["effort"] = request.effort
    params: dict[str, Any] = {
        "model": request.model,
        "max_tokens": request.max_tokens,
        "system": system,
        "messages": [{"role": "user", "content": content}, *repair_messages(request)],
        "output_config": output_config,
    }
    if request.temperature is not None and model_accepts_temperature(request.model):
        params["temperature"] = request.temperature
    return params


def usage_from(raw: Mapping[str, Any] | None, model: str) -> Usage:
    """A response's `usage`, as its JSON has it."""
    if raw is None:
        return Usage()
    details = raw.get("output_tokens_details") or {}
    creation = raw.get("cache_creation") or {}
    usage = Usage(
        input_tokens=raw.get("input_tokens") or 0,
        output_tokens=raw.get("output_tokens") or 0,
        cache_write_tokens=raw.get("cache_creation_input_tokens") or 0,
        cache_read_tokens=raw.get("cache_read_input_tokens") or 0,
        thinking_tokens=details.get("thinking_tokens") or 0,
    )
    return usage_priced(model, usage, cache_write_1h_tokens=creation.get("ephemeral_1h_input_tokens") or 0)


@dataclass
class _Answer:
    """A streamed message as its raw events' JSON builds it, as the SDK's own accumulation does: the model and
    usage of `message_start`; a `message_delta`'s stop reason and its usage counts, which are cumulative totals
    (they overwrite; one left out keeps its earlier value)."""

    model: str
    text: list[str] = field(default_factory=list)
    usage: dict[str, Any] | None = None
    stop_reason: str | None = None

    def take(self, event: Mapping[str, Any]) -> None:
        if event["type"] == "message_start":
            self.model = event["message"].get("model") or self.model
            self.usage = dict(event["message"].get("usage") or {})
            return
        self.stop_reason = event["delta"].get("stop_reason")
        counts = {name: value for name, value in (event.get("usage") or {}).items() if value is not None}
        self.usage = {**(self.usage or {}), **counts}


class AnthropicBackend:
    name = "anthropic"
    label = "Anthropic"

    def __init__(self) -> None:
        self._clients = ClientPerLoop(_new_client)

    def _client(self) -> anthropic.AsyncAnthropic:
        return self._clients.get(
            unavailable_reason=anthropic_unavailable_reason(), base_url=_base_url(), key_variable=KEY_VARIABLE
        )

    def _error(self, error: Exception, model: str, usage: Usage) -> BackendError:
        if isinstance(error, anthropic.APIStatusError):
            error_type, message = body_error(error.body)
            return status_error(
                provider=PROVIDER,
                key_variable=KEY_VARIABLE,
                status=error.status_code,
                error_type=error_type,
                message=message or error.message,
                model=model,
                usage=usage,
            )
        if isinstance(error, anthropic.APIConnectionError):
            return connection_error(
                provider=PROVIDER,
                base_url=_base_url(),
                error=error,
                timeout=isinstance(error, anthropic.APITimeoutError) and timed_out(error),
            )
        return BackendError(f"The Anthropic SDK failed: {error}", kind="sdk", usage=usage)

    def estimate(self, request: AgentRequest) -> Usage:
        params = request_params(request)
        sent = [params["system"][0]["text"], *(b["text"] for b in params["messages"][0]["content"])]
        sent += [str(m["content"]) for m in params["messages"][1:]]  # a repair's answer and errors
        return call_estimate(request.model, "\n\n".join(sent), request.max_tokens)

    async def stream(self, request: AgentRequest) -> AsyncIterator[Delta | Result]:
        params = request_params(request)
        client = self._client()
        usage = Usage()  # as reported so far: a call that fails mid-stream was still billed for its prompt
        # The events' JSON, through the SDK's documented `post` for custom requests: `messages.create` would build
        # a pydantic event from each (a union validated per chunk: a quarter of a stream's CPU, README), and the
        # answer needs only its text, model, stop reason and usage. Retries, errors and SSE stay the SDK's.
        message = _Answer(model=request.model)
        try:
            events = await client.post(
                "/v1/messages",
                body={**params, "stream": True},
                cast_to=object,
                stream=True,
                stream_cls=anthropic.AsyncStream[object],  # each event's dict as decoded, not copied
            )
            async with events:
                async for item in events:
                    event = cast(dict[str, Any], item)
                    kind = event["type"]
                    if kind == "content_block_delta":
                        delta = event["delta"]
                        if delta["type"] == "text_delta":
                            message.text.append(delta["text"])
                            yield Delta(delta["text"])
                    elif kind in ("message_start", "message_delta"):
                        message.take(event)
                        usage = usage_from(message.usage, request.model)
        except anthropic.AnthropicError as error:
            raise self._error(error, request.model, usage) from error
        except Exception as error:  # the HTTP client's own errors, e.g. a connection dropped mid-answer
            raise connection_error(
                provider=PROVIDER, base_url=_base_url(), error=error, timeout=False, usage=usage
            ) from error
        if message.stop_reason is None:  # the stream ended without message_stop: the answer is incomplete
            raise BackendError(
                "The connection to Anthropic closed before the answer was complete; the partial answer was "
                "discarded and the turn is retried.",
                kind="connection",
                usage=usage,
            )
        if message.stop_reason == "refusal":
            raise BackendError(
                "The model refused to answer this turn (stop_reason: refusal).",
                retryable=False,
                kind="refusal",
                usage=usage,
            )
        text = "".join(message.text)
        payload = payload_parse(
            text, truncated=message.stop_reason == "max_tokens", max_tokens=request.max_tokens, usage=usage
        )
        yield Result(text=text, payload=payload, usage=usage, model=message.model or request.model)

    async def warm(self, requests: Sequence[AgentRequest]) -> Usage:
        """One cache write for a stage's shared prefix (rules, material, transcript so far) before its parallel
        calls, which then all read it: a cache entry is only visible once a response has begun, so N calls
        sent together would otherwise each pay a write. A `max_tokens=0` call only populates the cache."""
        groups: dict[str, list[dict[str, Any]]] = {}
        if anthropic_unavailable_reason():
            return Usage()  # each call will fail the run with the reason
        for request in requests:
            if tokens_estimate(request.prompt().prefix) < MIN_WARM_TOKENS:
                continue
            params = request_params(request)
            identity = json.dumps(
                [params["model"], params["system"], params["messages"][0]["content"][:-1]], sort_keys=True
            )
            groups.setdefault(identity, []).append(params)
        total = Usage()
        for members in groups.values():
            if len(members) < 2:
                continue
            first = members[0]
            prefix = first["messages"][0]["content"][:-1]
            try:
                message = await self._client().messages.create(
                    model=first["model"],
                    max_tokens=0,
                    system=first["system"],
                    messages=[
                        {"role": "user", "content": [*prefix, {"type": "text", "text": "(cache warm-up)"}]}
                    ],
                    output_config=first["output_config"],
                )
            # An optimisation only: the calls themselves write the cache if it failed.
            except Exception as error:
                log.warning(
                    "cache warm-up failed (%r); the stage's calls will write the cache themselves", error
                )
                continue
            total = total + usage_from(message.usage.to_dict(), first["model"])
        return total
