"""A local fake LLM server speaking the real wire formats of the Anthropic Messages API and the OpenAI Chat
Completions API (both with SSE streaming), so the real SDKs can be driven against it through `base_url`.

    with FakeLLMServer(ttft=0.05) as server:
        client = AsyncAnthropic(api_key="test", base_url=server.url)
        openai = AsyncOpenAI(api_key="test", base_url=server.url + "/v1")

`respx` cannot intercept the Anthropic SDK 2.x (it is built on `httpx2`), hence a real socket server: stdlib
`ThreadingHTTPServer` on 127.0.0.1, one daemon thread per request, HTTP/1.0 responses (streams carry no
content-length and end when the connection closes).

What the server emulates, and what it was checked against (anthropic 2.12.0, openai 3.54.0):

- Anthropic `POST /v1/messages`, streaming and not. `message_delta.usage` is cumulative and carries
  `output_tokens_details.thinking_tokens` (both `Usage` and `MessageDeltaUsage` accept it). `max_tokens=0` is
  accepted by the SDK (documented as cache pre-warming) and answered with `content: []`,
  `stop_reason: "max_tokens"`, `output_tokens: 0`. A reply longer than `max_tokens` is truncated with
  `stop_reason: "max_tokens"`.
- Anthropic prompt caching: tools -> system -> messages blocks, at most 4 breakpoints (more is a 400), top-level
  `cache_control` = the last block, 20-block lookback, a minimum cacheable prefix (`min_cache_tokens`), 5m/1h TTLs
  refreshed on read, and an entry visible to other requests only once the writing response has begun.
- Anthropic errors. An HTTP error status (408/409/429/>=500) is retried by the SDK, honouring `retry-after-ms`
  then `retry-after`; each attempt carries `x-stainless-retry-count`. A mid-stream `event: error` is NOT
  retried: the SDK raises a plain `anthropic.APIStatusError` (not `OverloadedError`) with `status_code == 200`
  and `body == {"type": "error", "error": {"type": "overloaded_error", "message": ...}}` (the parsed SSE data),
  after the partial text has been delivered.
- OpenAI `POST /v1/chat/completions`, streaming (`stream_options.include_usage` adds the usage chunk) and not,
  with automatic prefix caching over whole messages (>= 1024 tokens). A mid-stream `data: {"error": {...}}`
  chunk makes openai 3.54 raise `openai.APIError` - the base class, NOT an `APIStatusError`, so it has no
  `status_code` - with `body == {"message": ..., "type": ..., ...}` (the inner error object) and `.type` set
  from it (`openai/_streaming.py`); it is not retried. HTTP error statuses are retried like Anthropic's.

Token counts are `max(1, len(text) // 4)`; never rely on them being realistic, only on them being consistent.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import re
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, cast

from pydantic import BaseModel

from debates.agents.base import AgentRequest
from debates.agents.prompts import context_expand
from debates.agents.simulated import simulated_payload
from debates.contract import RunView, Step

Responder = Callable[[dict[str, Any], str], str]

CACHE_TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}
CACHE_LOOKBACK_BLOCKS = 20
CACHE_MAX_BREAKPOINTS = 4
OPENAI_MIN_CACHE_TOKENS = 1024
OPENAI_CACHE_TTL_SECONDS = 300.0


def token_count(text: str) -> int:
    return max(1, len(text) // 4)


@dataclass
class Fault:
    """A scripted failure. `times` counts down as the fault is applied; at 0 it is used up."""

    kind: Literal["status", "midstream", "drop", "text"]
    status: int = 529  # for "status": HTTP status to return
    error_type: str = "overloaded_error"  # Anthropic error type / OpenAI error type
    message: str = "Overloaded"
    retry_after_ms: int | None = None  # sets header retry-after-ms
    retry_after: float | None = None  # sets header retry-after (seconds)
    # for "midstream": send this many reply chars, then the error event; for "drop" (Anthropic only): send them,
    # then half an event, and close the connection, as a network failure mid-answer would
    after_chars: int = 20
    text: str = ""  # for "text": reply with this text instead of the responder's (e.g. invalid JSON)
    match: str = ""  # only requests whose prompt text contains this substring ("" = any)
    api: str = ""  # "anthropic" | "openai" | "" = both
    times: int = 1  # applies to this many matching requests, then is used up


@dataclass
class RecordedRequest:
    api: str  # "anthropic" | "openai"
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]  # the parsed JSON request body
    status: int = 0  # HTTP status sent
    # "" or the fault applied: "status:529", "midstream:overloaded_error", "text", "random:overloaded",
    # "random:rate_limit", "random:midstream", "random:drop"; "responder" when the responder raised (answered with a 500).
    fault: str = ""
    usage: dict[str, Any] = field(default_factory=dict)  # final usage, in the API's own field names
    text: str = ""  # reply text sent (possibly partial)


class _RequestError(Exception):
    def __init__(self, status: int, error_type: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = error_type
        self.message = message


# ---------------------------------------------------------------------------------------------------------------
# Prompt text and the simulated responder


def _content_texts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            if isinstance(block.get("text"), str):
                texts.append(block["text"])
            elif "content" in block:  # tool_result
                texts += _content_texts(block["content"])
    return texts


def prompt_text(body: Mapping[str, Any], api: str) -> str:
    """All prompt text of a request: Anthropic system + message text blocks, or all OpenAI message contents."""
    parts: list[str] = []
    if api == "anthropic":
        parts += _content_texts(body.get("system"))
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            parts += _content_texts(message.get("content"))
    return "\n\n".join(parts)


class _AnySchema(BaseModel):
    """Stands in for the step's schema and the run's config: the simulated agent reads neither."""


_STEP_RE = re.compile(r"<step\s([^>]*?)/?>")
_ATTR_RE = re.compile(r'([\w-]+)="([^"]*)"')


def _tag_json(text: str, tag: str, start: int, default: Any) -> Any:
    # The JSON inside data blocks never contains a raw `<` (prompts.data_json escapes it).
    match = re.compile(rf"<{tag}>([^<]*)</{tag}>").search(text, start)
    if match is None:
        return default
    try:
        return json.loads(match.group(1))
    except ValueError:
        return default


def simulated_reply(
    body: Mapping[str, Any], api: str, *, options: Mapping[str, Any] | None = None, seed: int = 1
) -> str:
    """What the simulated agent would answer to a prompt rendered by `debates.agents.prompts.prompt_render`."""
    text = prompt_text(body, api)
    step_match = _STEP_RE.search(text)
    if step_match is None:
        return json.dumps({"text": "ok"})
    attrs = dict(_ATTR_RE.findall(step_match.group(1)))

    payloads = {
        key: json.loads(payload)
        for key, payload in re.findall(r'<turn key="([^"]+)"[^>]*>(.*?)</turn>', text, re.S)
    }
    context = context_expand(_tag_json(text, "context", step_match.end(), {}), payloads)
    topic = _tag_json(text, "topic", 0, "")
    material = _tag_json(text, "material", 0, "")

    key = attrs.get("key", "")
    step = Step(
        key=key,
        seat=attrs.get("seat", ""),
        stage=key.split("/")[0],
        task=attrs.get("task", ""),
        schema=_AnySchema,
        context=context if isinstance(context, dict) else {},
    )
    view = RunView(
        run_id=0,
        topic=str(topic),
        material=str(material),
        seed=seed,
        config=_AnySchema(),
        seats={},
        turns={},
    )
    request = AgentRequest(
        step=step, view=view, protocol=attrs.get("protocol", ""), options=options or {}, attempt=1
    )
    return json.dumps(simulated_payload(request), ensure_ascii=False)


# ---------------------------------------------------------------------------------------------------------------
# Prompt-cache emulation


@dataclass
class _Block:
    identity: str
    tokens: int
    cache_control: dict[str, Any] | None


@dataclass
class _CacheEntry:
    expires: float
    ttl: float


@dataclass
class _CachePlan:
    total: int = 0
    read: int = 0
    creation_5m: int = 0
    creation_1h: int = 0
    writes: list[tuple[str, float]] = field(default_factory=list)  # (prefix hash, ttl seconds)

    @property
    def creation(self) -> int:
        return self.creation_5m + self.creation_1h

    @property
    def uncached(self) -> int:
        return self.total - self.read - self.creation


def _anthropic_blocks(body: Mapping[str, Any]) -> list[_Block]:
    """The cacheable prefix in order tools -> system -> messages. A block's identity is its JSON without
    `cache_control`, tagged with where it sits (tool, system, or message role, and whether it opens a message)."""
    blocks: list[_Block] = []

    def add(where: str, opens: bool, block: Any) -> None:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        if not isinstance(block, dict):
            block = {"value": block}
        cache_control = block.get("cache_control")
        bare = {k: v for k, v in block.items() if k != "cache_control"}
        identity = json.dumps([where, opens, bare], sort_keys=True, ensure_ascii=False)
        is_text = bare.get("type") == "text" and isinstance(bare.get("text"), str)
        measured = bare["text"] if is_text else json.dumps(bare, sort_keys=True, ensure_ascii=False)
        blocks.append(
            _Block(
                identity, token_count(measured), cache_control if isinstance(cache_control, dict) else None
            )
        )

    for tool in body.get("tools") or []:
        add("tool", False, tool)
    system = body.get("system")
    if system:
        for index, block in enumerate([system] if isinstance(system, str) else list(system)):
            add("system", index == 0, block)
    for message in body.get("messages") or []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        items = [content] if isinstance(content, str) else list(content or [])
        for index, block in enumerate(items):
            add(str(message.get("role", "")), index == 0, block)
    return blocks


def _prefix_hashes(seed: str, identities: list[str]) -> list[str]:
    hashes, digest = [], hashlib.sha256(seed.encode()).hexdigest()
    for identity in identities:
        digest = hashlib.sha256((digest + "\x00" + identity).encode()).hexdigest()
        hashes.append(digest)
    return hashes


# ---------------------------------------------------------------------------------------------------------------
# The server


def _chunks(text: str, size: int) -> list[str]:
    size = max(1, size)
    return [text[i : i + size] for i in range(0, len(text), size)]


def _random_fault(kind: str, api: str) -> Fault:
    if kind == "rate_limit":
        if api == "openai":
            return Fault("status", 429, "requests", "Rate limit reached for requests", retry_after_ms=10)
        return Fault("status", 429, "rate_limit_error", "Rate limited", retry_after_ms=10)
    if kind == "drop":  # the connection closes mid-answer (Anthropic only)
        return Fault("drop")
    if kind == "midstream":
        if api == "openai":
            return Fault("midstream", error_type="server_error", message="The server had an error.")
        return Fault("midstream")
    if api == "openai":
        return Fault("status", 503, "server_error", "The server is overloaded or not ready yet.")
    return Fault("status", 529, "overloaded_error", "Overloaded")


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, owner: FakeLLMServer) -> None:
        self.owner = owner
        super().__init__(("127.0.0.1", 0), _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    disable_nagle_algorithm = True  # small SSE writes must not wait for delayed ACKs

    def do_POST(self) -> None:
        cast(_HTTPServer, self.server).owner._handle(self)

    def do_GET(self) -> None:
        body = json.dumps({"type": "error", "error": {"type": "not_found_error", "message": "Not found"}})
        data = body.encode()
        self.send_response(404)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class FakeLLMServer:
    """See the module docstring. `url` is the Anthropic base_url; the OpenAI base_url is `url + "/v1"`."""

    def __init__(
        self,
        *,
        responder: Responder | None = None,
        chunk_chars: int = 12,
        chunk_delay: float = 0.0,
        ttft: float = 0.0,
        min_cache_tokens: int = 512,
        fault_rate: float = 0.0,
        fault_seed: int = 0,
        model_echo: bool = True,
    ) -> None:
        self.responder = responder
        self.chunk_chars = chunk_chars
        self.chunk_delay = chunk_delay
        self.ttft = ttft
        self.min_cache_tokens = min_cache_tokens
        self.fault_rate = fault_rate
        self.model_echo = model_echo
        self.url = ""
        self.requests: list[RecordedRequest] = []
        self.faults: list[Fault] = []
        self.sim_options: dict[str, Any] = {}
        self.sim_seed = 1
        self._rng = random.Random(fault_seed)
        self._lock = threading.Lock()
        self._ids = itertools.count(1)
        self._cache: dict[str, _CacheEntry] = {}  # Anthropic prefix hash -> entry
        self._openai_cache: dict[str, tuple[float, int]] = {}  # message-prefix hash -> (expires, tokens)
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------------------------

    @property
    def openai_url(self) -> str:
        return self.url + "/v1"

    def start(self) -> FakeLLMServer:
        if self._httpd is None:
            self._httpd = _HTTPServer(self)
            port = self._httpd.server_address[1]
            self.url = f"http://127.0.0.1:{port}"
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd = None
            self._thread = None

    def __enter__(self) -> FakeLLMServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def cache_clear(self) -> None:
        with self._lock:
            self._cache.clear()
            self._openai_cache.clear()

    # request plumbing ------------------------------------------------------------------------------------------

    def _handle(self, h: _Handler) -> None:
        path = h.path.split("?", 1)[0].rstrip("/")
        api = {"/v1/messages": "anthropic", "/v1/chat/completions": "openai"}.get(path, "")
        headers = {k.lower(): v for k, v in h.headers.items()}
        try:
            raw = h.rfile.read(int(headers.get("content-length") or 0))
            body = json.loads(raw or b"{}")
        except ValueError:
            body = None
        record = RecordedRequest(
            api=api, path=h.path, headers=headers, body=body if isinstance(body, dict) else {}
        )
        with self._lock:
            self.requests.append(record)
        try:
            if not api:
                self._send_error(h, record, "anthropic", 404, "not_found_error", f"Unknown path {path}")
            elif not isinstance(body, dict):
                self._send_error(
                    h, record, api, 400, "invalid_request_error", "The body is not a JSON object."
                )
            elif api == "anthropic":
                self._serve_anthropic(h, record, body)
            else:
                self._serve_openai(h, record, body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client went away mid-response; the record keeps what was sent

    def _request_id(self) -> str:
        return f"req_fake{next(self._ids):06d}"

    def _start_response(
        self, h: _Handler, record: RecordedRequest, status: int, content_type: str, extra: Mapping[str, str]
    ) -> None:
        record.status = status
        h.send_response(status, "Overloaded" if status == 529 else None)
        h.send_header("content-type", content_type)
        request_id = self._request_id()
        h.send_header("request-id", request_id)
        h.send_header("x-request-id", request_id)
        for name, value in extra.items():
            h.send_header(name, value)

    def _send_json(
        self,
        h: _Handler,
        record: RecordedRequest,
        status: int,
        payload: Any,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        data = json.dumps(payload, ensure_ascii=False).encode()
        self._start_response(h, record, status, "application/json", extra or {})
        h.send_header("content-length", str(len(data)))
        h.end_headers()
        h.wfile.write(data)

    def _send_error(
        self,
        h: _Handler,
        record: RecordedRequest,
        api: str,
        status: int,
        error_type: str,
        message: str,
        extra: Mapping[str, str] | None = None,
    ) -> None:
        if api == "openai":
            code = "rate_limit_exceeded" if status == 429 else error_type
            payload: dict[str, Any] = {
                "error": {"message": message, "type": error_type, "param": None, "code": code}
            }
        else:
            payload = {
                "type": "error",
                "error": {"type": error_type, "message": message},
                "request_id": "req_fake",
            }
        self._send_json(h, record, status, payload, extra)

    def _send_fault_status(self, h: _Handler, record: RecordedRequest, api: str, fault: Fault) -> None:
        extra: dict[str, str] = {}
        if fault.retry_after_ms is not None:
            extra["retry-after-ms"] = str(fault.retry_after_ms)
        if fault.retry_after is not None:
            seconds = fault.retry_after
            extra["retry-after"] = str(int(seconds)) if float(seconds).is_integer() else str(seconds)
        self._send_error(h, record, api, fault.status, fault.error_type, fault.message, extra)

    def _fault_for(self, api: str, prompt: str, stream: bool) -> tuple[Fault | None, str]:
        """The first matching scripted fault (used up as it applies), else maybe a random one."""
        with self._lock:
            for fault in self.faults:
                if fault.times <= 0 or (fault.api and fault.api != api):
                    continue
                if fault.match and fault.match not in prompt:
                    continue
                if fault.kind in ("midstream", "drop") and not stream:
                    continue  # a non-streaming response has no middle
                fault.times -= 1
                if fault.kind == "status":
                    return fault, f"status:{fault.status}"
                if fault.kind == "midstream":
                    return fault, f"midstream:{fault.error_type}"
                if fault.kind == "drop":
                    return fault, "drop"
                return fault, "text"
            if self.fault_rate > 0 and self._rng.random() < self.fault_rate:
                kind = self._rng.choice(("overloaded", "rate_limit", "midstream", "drop"))
                if kind in ("midstream", "drop") and not stream:
                    kind = "overloaded"
                if kind == "drop" and api != "anthropic":
                    kind = "midstream"
                return _random_fault(kind, api), f"random:{kind}"
        return None, ""

    def _reply(self, body: dict[str, Any], api: str, fault: Fault | None) -> str:
        if fault is not None and fault.kind == "text":
            return fault.text
        if self.responder is not None:
            return self.responder(body, api)
        return simulated_reply(body, api, options=self.sim_options, seed=self.sim_seed)

    def _model(self, body: Mapping[str, Any]) -> str:
        model = body.get("model")
        return str(model) if self.model_echo and model else "fake-llm"

    def _pace(self, index: int) -> None:
        if index and self.chunk_delay > 0:
            time.sleep(self.chunk_delay)

    # Anthropic -------------------------------------------------------------------------------------------------

    def _anthropic_plan(self, body: Mapping[str, Any], now: float) -> _CachePlan:
        blocks = _anthropic_blocks(body)
        breakpoints: dict[int, dict[str, Any]] = {
            i: block.cache_control for i, block in enumerate(blocks) if block.cache_control is not None
        }
        top = body.get("cache_control")
        if isinstance(top, dict) and blocks and len(blocks) - 1 not in breakpoints:
            breakpoints[len(blocks) - 1] = top
        if len(breakpoints) > CACHE_MAX_BREAKPOINTS:
            raise _RequestError(
                400,
                "invalid_request_error",
                f"A maximum of {CACHE_MAX_BREAKPOINTS} blocks with cache_control may be provided. "
                f"Found {len(breakpoints)}.",
            )
        cumulative = list(itertools.accumulate(block.tokens for block in blocks))
        hashes = _prefix_hashes(str(body.get("model", "")), [block.identity for block in blocks])
        plan = _CachePlan(total=cumulative[-1] if cumulative else 0)
        hit = -1
        with self._lock:
            for b in sorted(breakpoints):
                for j in range(b, max(-1, b - CACHE_LOOKBACK_BLOCKS), -1):
                    entry = self._cache.get(hashes[j])
                    if entry is not None and entry.expires > now:
                        hit = max(hit, j)
                        break
            if hit >= 0:
                entry = self._cache[hashes[hit]]
                entry.expires = max(entry.expires, now + entry.ttl)  # a read refreshes the TTL
        plan.read = cumulative[hit] if hit >= 0 else 0
        written_up_to = plan.read
        for b in sorted(breakpoints):
            if b <= hit or cumulative[b] < self.min_cache_tokens:
                continue  # already cached, or below the minimum cacheable prefix: silently not cached
            ttl = "1h" if breakpoints[b].get("ttl") == "1h" else "5m"
            segment, written_up_to = cumulative[b] - written_up_to, cumulative[b]
            if ttl == "1h":
                plan.creation_1h += segment
            else:
                plan.creation_5m += segment
            plan.writes.append((hashes[b], CACHE_TTL_SECONDS[ttl]))
        return plan

    def _cache_commit(self, plan: _CachePlan, now: float) -> None:
        """Entries become visible to other requests once the writing response has begun."""
        with self._lock:
            for digest, ttl in plan.writes:
                entry = self._cache.get(digest)
                if entry is None or entry.expires <= now + ttl:
                    self._cache[digest] = _CacheEntry(expires=now + ttl, ttl=ttl)
            current = time.monotonic()
            for digest in [d for d, e in self._cache.items() if e.expires <= current]:
                del self._cache[digest]

    @staticmethod
    def _anthropic_usage(plan: _CachePlan, output_tokens: int) -> dict[str, Any]:
        return {
            "input_tokens": plan.uncached,
            "cache_creation_input_tokens": plan.creation,
            "cache_read_input_tokens": plan.read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": plan.creation_5m,
                "ephemeral_1h_input_tokens": plan.creation_1h,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }

    def _serve_anthropic(self, h: _Handler, record: RecordedRequest, body: dict[str, Any]) -> None:
        started = time.monotonic()
        stream = body.get("stream") is True
        fault, record.fault = self._fault_for("anthropic", prompt_text(body, "anthropic"), stream)
        if fault is not None and fault.kind == "status":
            self._send_fault_status(h, record, "anthropic", fault)
            return
        try:
            plan = self._anthropic_plan(body, started)
        except _RequestError as err:
            self._send_error(h, record, "anthropic", err.status, err.error_type, err.message)
            return
        max_tokens = body.get("max_tokens")
        text, stop_reason = "", "max_tokens"
        if max_tokens != 0:
            try:
                text = self._reply(body, "anthropic", fault)
            except Exception as err:  # a broken responder is a test bug: fail loudly, do not retry
                record.fault = "responder"
                self._send_error(
                    h, record, "anthropic", 500, "api_error", repr(err), {"x-should-retry": "false"}
                )
                return
            stop_reason = "end_turn"
            if isinstance(max_tokens, int) and token_count(text) > max_tokens:
                text, stop_reason = text[: max_tokens * 4], "max_tokens"
        output_tokens = 0 if max_tokens == 0 else token_count(text)
        message_id = f"msg_fake{next(self._ids):06d}"
        model = self._model(body)
        usage = self._anthropic_usage(plan, output_tokens)
        final_usage = {**usage, "output_tokens_details": {"thinking_tokens": 0}}

        if self.ttft > 0:
            time.sleep(self.ttft)
        if not stream:
            pieces = _chunks(text, self.chunk_chars)
            for index in range(len(pieces)):
                self._pace(index)
            self._cache_commit(plan, started)
            record.text, record.usage = text, final_usage
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": text}] if text else [],
                "stop_reason": stop_reason,
                "stop_sequence": None,
                "usage": final_usage,
            }
            self._send_json(h, record, 200, message)
            return

        def event(name: str, data: Mapping[str, Any]) -> None:
            h.wfile.write(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())

        self._cache_commit(plan, started)
        record.usage = {**usage, "output_tokens": 1}
        self._start_response(h, record, 200, "text/event-stream", {"cache-control": "no-cache"})
        h.end_headers()
        start_message: dict[str, Any] = {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**usage, "output_tokens": 1},
        }
        event("message_start", {"type": "message_start", "message": start_message})
        if max_tokens != 0:
            event(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
            event("ping", {"type": "ping"})
            cut = fault is not None and fault.kind in ("midstream", "drop")
            sendable = text[: fault.after_chars] if fault is not None and cut else text
            for index, piece in enumerate(_chunks(sendable, self.chunk_chars)):
                self._pace(index)
                record.text += piece
                event(
                    "content_block_delta",
                    {
                        "type": "content_block_delta",
                        "index": 0,
                        "delta": {"type": "text_delta", "text": piece},
                    },
                )
        if fault is not None and fault.kind == "midstream":
            event("error", {"type": "error", "error": {"type": fault.error_type, "message": fault.message}})
            return
        if fault is not None and fault.kind == "drop":
            h.wfile.write(b'event: content_block_delta\ndata: {"type":"content_block_del')
            h.wfile.flush()
            h.close_connection = True
            return
        if max_tokens != 0:
            event("content_block_stop", {"type": "content_block_stop", "index": 0})
        record.usage = final_usage
        delta_usage = {
            key: final_usage[key]
            for key in (
                "input_tokens",
                "cache_creation_input_tokens",
                "cache_read_input_tokens",
                "output_tokens",
                "output_tokens_details",
            )
        }
        event(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": delta_usage,
            },
        )
        event("message_stop", {"type": "message_stop"})

    # OpenAI ----------------------------------------------------------------------------------------------------

    def _openai_prefixes(self, body: Mapping[str, Any]) -> list[tuple[str, int]]:
        """(hash, cumulative tokens) for each whole-message prefix."""
        messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
        identities = [json.dumps(m, sort_keys=True, ensure_ascii=False) for m in messages]
        tokens = [token_count("\n\n".join(_content_texts(m.get("content")))) for m in messages]
        hashes = _prefix_hashes("openai:" + str(body.get("model", "")), identities)
        return list(zip(hashes, itertools.accumulate(tokens), strict=True))

    def _openai_cached(self, prefixes: list[tuple[str, int]], now: float) -> int:
        with self._lock:
            for digest, tokens in reversed(prefixes):
                entry = self._openai_cache.get(digest)
                if entry is not None and entry[0] > now and tokens >= OPENAI_MIN_CACHE_TOKENS:
                    self._openai_cache[digest] = (now + OPENAI_CACHE_TTL_SECONDS, tokens)
                    return tokens
        return 0

    def _openai_remember(self, prefixes: list[tuple[str, int]]) -> None:
        now = time.monotonic()
        with self._lock:
            for digest, tokens in prefixes:
                if tokens >= OPENAI_MIN_CACHE_TOKENS:
                    self._openai_cache[digest] = (now + OPENAI_CACHE_TTL_SECONDS, tokens)

    def _serve_openai(self, h: _Handler, record: RecordedRequest, body: dict[str, Any]) -> None:
        # `response_format` and `tools` are accepted and ignored (the body is recorded as sent).
        started = time.monotonic()
        stream = body.get("stream") is True
        fault, record.fault = self._fault_for("openai", prompt_text(body, "openai"), stream)
        if fault is not None and fault.kind == "status":
            self._send_fault_status(h, record, "openai", fault)
            return
        prefixes = self._openai_prefixes(body)
        prompt_tokens = prefixes[-1][1] if prefixes else 0
        cached = self._openai_cached(prefixes, started)
        try:
            text = self._reply(body, "openai", fault)
        except Exception as err:
            record.fault = "responder"
            self._send_error(h, record, "openai", 500, "server_error", repr(err), {"x-should-retry": "false"})
            return
        finish_reason = "stop"
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        if isinstance(limit, int) and token_count(text) > limit:
            text, finish_reason = text[: max(0, limit) * 4], "length"
        completion_tokens = token_count(text)
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0},
            "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
        }
        completion_id = f"chatcmpl-fake{next(self._ids):06d}"
        created = int(time.time())
        model = self._model(body)

        if self.ttft > 0:
            time.sleep(self.ttft)
        if not stream:
            for index in range(len(_chunks(text, self.chunk_chars))):
                self._pace(index)
            self._openai_remember(prefixes)  # before the reply: a client may send the next request at once
            record.text, record.usage = text, usage
            completion = {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": text, "refusal": None},
                        "logprobs": None,
                        "finish_reason": finish_reason,
                    }
                ],
                "usage": usage,
                "system_fingerprint": None,
            }
            self._send_json(h, record, 200, completion)
            return

        include_usage = bool((body.get("stream_options") or {}).get("include_usage"))

        def chunk(delta: Mapping[str, Any], reason: str | None) -> None:
            data: dict[str, Any] = {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "system_fingerprint": None,
                "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": reason}],
            }
            if include_usage:
                data["usage"] = None
            send(data)

        def send(data: Mapping[str, Any]) -> None:
            h.wfile.write(f"data: {json.dumps(data, ensure_ascii=False)}\n\n".encode())

        self._start_response(h, record, 200, "text/event-stream", {"cache-control": "no-cache"})
        h.end_headers()
        chunk({"role": "assistant", "content": "", "refusal": None}, None)
        midstream = fault is not None and fault.kind == "midstream"
        sendable = text[: fault.after_chars] if fault is not None and midstream else text
        for index, piece in enumerate(_chunks(sendable, self.chunk_chars)):
            self._pace(index)
            record.text += piece
            chunk({"content": piece}, None)
        if fault is not None and midstream:
            send({"error": {"message": fault.message, "type": fault.error_type, "param": None, "code": None}})
            return
        self._openai_remember(prefixes)
        record.usage = usage
        chunk({}, finish_reason)
        if include_usage:
            send(
                {
                    "id": completion_id,
                    "object": "chat.completion.chunk",
                    "created": created,
                    "model": model,
                    "system_fingerprint": None,
                    "choices": [],
                    "usage": usage,
                }
            )
        h.wfile.write(b"data: [DONE]\n\n")
