"""What the Anthropic and OpenAI-compatible backends share: error messages that name the cause and what to do,
the repair request, reading the final JSON, and one SDK client per event loop."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import logging
import os
import re
import ssl
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import httpx2

from debates.agents.base import AgentRequest, BackendError, InvalidOutput
from debates.agents.usage import Usage

log = logging.getLogger("debates.agents")

REPAIR_TEXT_LIMIT = 20_000


def repair_instruction(request: AgentRequest) -> str:
    assert request.repair is not None
    errors = "\n".join(f"- {error}" for error in request.repair.errors)
    return (
        "Your previous answer (above) was rejected by the validator:\n"
        f"{errors}\n"
        "Answer again with one corrected JSON object for the same task, matching the schema. JSON only."
    )


def repair_messages(request: AgentRequest) -> list[dict[str, Any]]:
    """The conversation continued after an invalid answer: the answer, then what was wrong with it."""
    if request.repair is None:
        return []
    return [
        {"role": "assistant", "content": request.repair.text[:REPAIR_TEXT_LIMIT] or "(empty)"},
        {"role": "user", "content": repair_instruction(request)},
    ]


def payload_parse(text: str, *, truncated: bool, max_tokens: int, usage: Usage) -> dict[str, Any]:
    if truncated:
        raise InvalidOutput(
            text,
            [
                f"the answer was cut off at max_tokens ({max_tokens}) before the JSON was complete; "
                "raise max_tokens for this role in DISPUTA_ROLES or ask for less"
            ],
            usage=usage,
        )
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidOutput(text, [f"not valid JSON ({error})"], usage=usage) from None
    if not isinstance(payload, dict):
        raise InvalidOutput(text, [f"expected a JSON object, got {type(payload).__name__}"], usage=usage)
    return payload


KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY")
KEY_PATTERN = re.compile(r"\b(sk-[A-Za-z0-9_\-*.]{6,})")


def scrub(text: str) -> str:
    """Keep keys out of causes (they are stored and shown): providers echo a masked key in some errors, and a
    proxy may echo it whole."""
    for name in KEY_VARIABLES:
        value = os.environ.get(name, "")
        if len(value) >= 8:
            text = text.replace(value, "[key redacted]")
    return KEY_PATTERN.sub("[key redacted]", text)


def url_shown(url: str) -> str:
    """A base URL without any user:password part."""
    parts = urlsplit(url)
    return (
        urlunsplit(parts._replace(netloc=parts.hostname + (f":{parts.port}" if parts.port else "")))
        if parts.hostname
        else url
    )


def status_error(
    *,
    provider: str,
    key_variable: str,
    status: int,
    error_type: str,
    message: str,
    model: str,
    usage: Usage,
) -> BackendError:
    """A failed call, classified by HTTP status and the error body's type (a mid-stream error arrives with
    status 200 and only its body says what it was)."""
    detail = scrub(f"{error_type}: {message}" if error_type else message)
    opening = provider[:1].upper() + provider[1:]  # "the OpenAI-compatible server" opens a sentence too
    if status == 401:
        return BackendError(
            f"{opening} rejected the API key (401 {detail}). Set a valid {key_variable} in the server's "
            "environment and restart the server.",
            retryable=False,
            fatal=True,
            kind="auth",
            usage=usage,
        )
    if status == 402 or error_type in ("billing_error", "insufficient_quota"):
        return BackendError(
            f"{opening} refused the call for billing reasons ({status} {detail}). Add credit or check the "
            "account's billing, then re-run.",
            retryable=False,
            fatal=True,
            kind="billing",
            usage=usage,
        )
    if status == 403:
        return BackendError(
            f"The API key may not use this model or feature (403 {detail}). Choose another model or check the "
            "key's permissions.",
            retryable=False,
            fatal=True,
            kind="permission",
            usage=usage,
        )
    if status == 404:
        return BackendError(
            f"Model {model!r} was not found at {provider} (404 {detail}). Choose a model the server offers.",
            retryable=False,
            fatal=True,
            kind="not_found",
            usage=usage,
        )
    if status == 429 or error_type == "rate_limit_error":
        return BackendError(
            f"Rate limited by {provider} ({status} {detail}), still after the SDK's own retries. The turn is "
            "retried after a pause; if it keeps happening, run fewer seats in parallel or raise the rate limit.",
            kind="rate_limit",
            usage=usage,
        )
    if status == 529 or error_type == "overloaded_error":
        where = "mid-stream; the partial answer was discarded" if status == 200 else f"HTTP {status}"
        return BackendError(
            f"{opening} is overloaded ({where}). The turn is retried after a pause.",
            kind="overloaded",
            usage=usage,
        )
    if status == 200:
        return BackendError(
            f"The stream from {provider} broke off mid-turn ({detail}); the partial answer was discarded and the "
            "turn is retried.",
            kind="stream_error",
            usage=usage,
        )
    if status >= 500 or status in (408, 409):
        return BackendError(
            f"{opening} had a server error ({status} {detail}). The turn is retried after a pause.",
            kind="server_error",
            usage=usage,
        )
    return BackendError(
        f"{opening} rejected the request ({status} {detail}). This turn cannot succeed as sent; the protocol "
        "goes on without it.",
        retryable=False,
        kind="bad_request",
        usage=usage,
    )


def timed_out(error: BaseException) -> bool:
    """Whether a timeout is behind an SDK's error: its aiohttp transport reports a refused connection as a connect
    timeout (openai's copy maps every `ClientConnectionError` so), but keeps the real timeout as the cause."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, TimeoutError):  # asyncio's and aiohttp's timeouts are TimeoutErrors
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def connection_error(
    *, provider: str, base_url: str, error: BaseException, timeout: bool, usage: Usage | None = None
) -> BackendError:
    if timeout:
        return BackendError(
            f"{provider[:1].upper() + provider[1:]} did not answer in time ({url_shown(base_url)}). The turn is "
            "retried; raise DISPUTA_API_TIMEOUT_SECONDS if long answers are expected.",
            kind="timeout",
            usage=usage,
        )
    return BackendError(
        f"The connection to {provider} at {url_shown(base_url)} failed ({type(error).__name__}); any partial "
        "answer was discarded and the turn is retried. If it keeps failing, check the network or the address.",
        kind="connection",
        usage=usage,
    )


def body_error(body: object) -> tuple[str, str]:
    """(type, message) from an API error body (Anthropic `{"error": {"type", "message"}}` or OpenAI's)."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return str(inner.get("type") or inner.get("code") or ""), str(inner.get("message") or "")
    return "", ""


class Closable(Protocol):
    def close(self) -> Awaitable[None]: ...


class ClientPerLoop[C: Closable]:
    """SDK clients hold connection pools bound to the event loop that created them; `clients_held` closes them."""

    def __init__(self, factory: Callable[[], C]) -> None:
        self._factory = factory
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[tuple[str, ...], C]] = (
            weakref.WeakKeyDictionary()
        )
        _pools.add(self)

    def get(self, *, unavailable_reason: str, base_url: str, key_variable: str) -> C:
        """The client for this endpoint and key (a change of either builds a new one); a backend that cannot be
        used fails the run with the reason."""
        if unavailable_reason:
            raise BackendError(unavailable_reason, retryable=False, fatal=True, kind="auth")
        key_hash = hashlib.sha256(os.environ.get(key_variable, "").encode()).hexdigest()
        per_loop = self._clients.setdefault(asyncio.get_running_loop(), {})
        if (base_url, key_hash) not in per_loop:
            per_loop[(base_url, key_hash)] = self._factory()
        return per_loop[(base_url, key_hash)]

    def take(self, loop: asyncio.AbstractEventLoop) -> list[C]:
        """The loop's clients, taken out: a run starting on the loop from now on builds new ones."""
        return list(self._clients.pop(loop, {}).values())


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context of every model client of this process: the one the SDKs build by default (their HTTP
    library's, which honours SSL_CERT_FILE and uses the system's store on macOS and Windows), built once. Building
    one loads the CA bundle: when every run built its own (with its client), that was a tenth of a server's CPU on
    the SDK path (py-spy, `bench cpu`)."""
    return httpx2.create_ssl_context()


_pools: weakref.WeakSet[ClientPerLoop[Any]] = weakref.WeakSet()
_holders: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, int] = weakref.WeakKeyDictionary()


@contextlib.asynccontextmanager
async def clients_held() -> AsyncIterator[None]:
    """Keeps this event loop's model clients while anything on it holds them; the last holder closes them. A loop
    made for one run (a worker's task, `run_debate`) would otherwise leave an open aiohttp session to the garbage
    collector, which logs "Unclosed client session". A server's loop keeps them for its life (`clients_kept`)."""
    loop = asyncio.get_running_loop()
    clients_kept(loop)
    try:
        yield
    finally:
        _holders[loop] -= 1
        if not _holders[loop]:
            del _holders[loop]
            # Every pool's clients taken out before the first await: a run starting meanwhile builds its own.
            closing = [client for pool in list(_pools) for client in pool.take(loop)]
            for client in closing:
                try:
                    await client.close()
                except Exception as error:  # its connections are dropped with the session anyway
                    log.warning("closing a model client failed: %r", error)


def clients_kept(loop: asyncio.AbstractEventLoop) -> None:
    """One more holder of the loop's model clients, never let go by itself: a server's loop keeps them (and their
    open connections) for its whole life, from one run to the next."""
    _holders[loop] = _holders.get(loop, 0) + 1
