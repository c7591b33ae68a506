"""The OpenAI-compatible backend, through the openai SDK: OpenAI itself or a local server (Ollama, vLLM,
llama.cpp server) at OPENAI_BASE_URL. Structured output through a JSON-schema response format where the server
supports it (DISPUTA OPENAI_RESPONSE_FORMAT: json_schema | json_object | none; without json_schema the schema is
spelled out in the prompt); the engine validates and repairs exactly as for Anthropic.

The shared prefix (rules, material, transcript so far) is the system message, so servers with automatic prefix
caching reuse it across seats; the persona and task are the user message."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Sequence
from typing import Any

import openai

from debates.agents.base import AgentRequest, BackendError, Delta, Result
from debates.agents.catalog import OFFICIAL_OPENAI_BASE_URL, openai_base_url, openai_unavailable_reason
from debates.agents.pricing import call_estimate, model_accepts_temperature, usage_priced
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

PROVIDER = "the OpenAI-compatible server"
KEY_VARIABLE = "OPENAI_API_KEY"


def _new_client() -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(
        base_url=openai_base_url(),
        # Local servers need no key, but the SDK insists on one.
        api_key=os.environ.get("OPENAI_API_KEY") or "no-key-needed",
        max_retries=conf("SDK_MAX_RETRIES"),
        timeout=conf("API_TIMEOUT_SECONDS"),
        # As the Anthropic backend's: the SDK's aiohttp transport, and the process's one TLS context.
        http_client=openai.DefaultAioHttpClient(verify=tls_context()),
    )


def request_params(request: AgentRequest) -> dict[str, Any]:
    mode = conf("OPENAI_RESPONSE_FORMAT")
    prompt = request.prompt(schema_in_text=mode != "json_schema")
    params: dict[str, Any] = {
        "model": request.model,
        "messages": [
            {"role": "system", "content": prompt.prefix},
            {"role": "user", "content": f"{prompt.persona}\n\n{prompt.task}"},
            *repair_messages(request),
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    # OpenAI's reasoning models refuse `max_tokens`; local servers may not know `max_completion_tokens`.
    params[
        "max_completion_tokens" if openai_base_url().rstrip("/") == OFFICIAL_OPENAI_BASE_URL else "max_tokens"
    ] = request.max_tokens
    if request.temperature is not None and model_accepts_temperature(request.model):
        params["temperature"] = request.temperature
    if mode == "json_schema":
        params["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": request.step.schema.__name__,
                "schema": request.step.schema.model_json_schema(),
                "strict": False,
            },
        }
    elif mode == "json_object":
        params["response_format"] = {"type": "json_object"}
    return params


def usage_from(raw: Any, model: str) -> Usage:
    if raw is None:
        return Usage()
    prompt_details = getattr(raw, "prompt_tokens_details", None)
    completion_details = getattr(raw, "completion_tokens_details", None)
    cached = (getattr(prompt_details, "cached_tokens", 0) or 0) if prompt_details else 0
    usage = Usage(
        input_tokens=(raw.prompt_tokens or 0) - cached,
        output_tokens=raw.completion_tokens or 0,
        cache_read_tokens=cached,
        thinking_tokens=(getattr(completion_details, "reasoning_tokens", 0) or 0)
        if completion_details
        else 0,
    )
    return usage_priced(model, usage)


class OpenAICompatibleBackend:
    name = "openai"
    label = "OpenAI-compatible"

    def __init__(self) -> None:
        self._clients = ClientPerLoop(_new_client)

    def _client(self) -> openai.AsyncOpenAI:
        return self._clients.get(
            unavailable_reason=openai_unavailable_reason(),
            base_url=openai_base_url(),
            key_variable=KEY_VARIABLE,
        )

    def _error(self, error: Exception, model: str) -> BackendError:
        if isinstance(error, openai.APIStatusError):
            error_type, message = body_error(error.body)
            return status_error(
                provider=PROVIDER,
                key_variable=KEY_VARIABLE,
                status=error.status_code,
                error_type=error_type,
                message=message or error.message,
                model=model,
                usage=Usage(),
            )
        if isinstance(error, openai.APIConnectionError):
            return connection_error(
                provider=PROVIDER,
                base_url=openai_base_url(),
                error=error,
                timeout=isinstance(error, openai.APITimeoutError) and timed_out(error),
            )
        if isinstance(error, openai.APIError):  # an error chunk inside a 200 stream
            error_type, message = body_error(error.body)
            return status_error(
                provider=PROVIDER,
                key_variable=KEY_VARIABLE,
                status=200,
                error_type=error_type,
                message=message or error.message,
                model=model,
                usage=Usage(),
            )
        return BackendError(f"The openai SDK failed: {error}", kind="sdk")

    def estimate(self, request: AgentRequest) -> Usage:
        messages = request_params(request)["messages"]
        return call_estimate(
            request.model, "\n\n".join(str(m["content"]) for m in messages), request.max_tokens
        )

    async def stream(self, request: AgentRequest) -> AsyncIterator[Delta | Result]:
        params = request_params(request)
        client = self._client()
        parts: list[str] = []
        finish_reason = ""
        raw_usage = None
        model = request.model
        try:
            stream = await client.chat.completions.create(**params)
            async for chunk in stream:
                model = chunk.model or model
                if chunk.usage is not None:
                    raw_usage = chunk.usage
                for choice in chunk.choices:
                    if choice.delta and choice.delta.content:
                        parts.append(choice.delta.content)
                        yield Delta(choice.delta.content)
                    if choice.finish_reason:
                        finish_reason = choice.finish_reason
        except openai.OpenAIError as error:
            raise self._error(error, request.model) from error
        usage = usage_from(raw_usage, request.model)
        text = "".join(parts)
        if finish_reason == "content_filter":
            raise BackendError(
                "The server's content filter stopped this turn (finish_reason: content_filter).",
                retryable=False,
                kind="refusal",
                usage=usage,
            )
        payload = payload_parse(
            text, truncated=finish_reason == "length", max_tokens=request.max_tokens, usage=usage
        )
        yield Result(text=text, payload=payload, usage=usage, model=model)

    async def warm(self, requests: Sequence[AgentRequest]) -> Usage:
        return Usage()  # prefix caching is automatic on these servers: nothing to write ahead
