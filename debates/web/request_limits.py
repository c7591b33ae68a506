"""Request bodies over the limit are refused before they are read, for every user, signed in or not.

Daphne's HTTP layer (twisted.web) reads a whole body before the application sees the request, and Django's ASGI
handler reads it again before any view runs, so Django's own DATA_UPLOAD_MAX_MEMORY_SIZE comes too late. Two
guards, one limit:
- `BodyLimitedWebRequest`, installed into Daphne, answers 413 as soon as the headers announce too much (or a
  chunked body grows past it) and closes the connection: the body is never read.
- `BodySizeLimit`, ASGI middleware, does the same for any other ASGI server and for what Daphne lets through.
The limit is small everywhere but the KB upload form (kb.limits), the one page that takes files."""

from __future__ import annotations

import io
from typing import Any

from debates.platform.conf import conf
from kb.limits import MAX_UPLOAD_BYTES

# A multipart form wraps the file in boundaries and other fields: room for them above the file's own limit.
MULTIPART_MARGIN_BYTES = 1024 * 1024
UPLOAD_PATHS = {"/kb/"}


def request_body_limit(path: str) -> int:
    if path in UPLOAD_PATHS:
        return MAX_UPLOAD_BYTES + MULTIPART_MARGIN_BYTES
    return int(conf("MAX_REQUEST_BYTES"))


def refusal_body(limit: int) -> bytes:
    return f"Request body too large: this address takes at most {limit:,} bytes.\n".encode()


class BodySizeLimit:
    """ASGI middleware: 413 for an HTTP request whose Content-Length, or whose body as it arrives, is over the
    limit of its path; the application never sees the body."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] != "http":
            return await self.application(scope, receive, send)
        limit = request_body_limit(scope.get("path", ""))
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > limit):
            return await self._refuse(send, limit)
        seen = 0
        over = False
        response_started = False

        async def limited_receive() -> dict[str, Any]:
            nonlocal seen, over
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    over = True
                    return {"type": "http.disconnect"}  # the application stops reading and answers nothing
            return message

        async def watched_send(message: dict[str, Any]) -> None:
            nonlocal response_started
            if message["type"] == "http.response.start":
                response_started = True
            await send(message)

        await self.application(scope, limited_receive, watched_send)
        if over and not response_started:
            await self._refuse(send, limit)
        return None

    @staticmethod
    async def _refuse(send: Any, limit: int) -> None:
        body = refusal_body(limit)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def daphne_body_limit_install() -> None:
    """Make Daphne build `BodyLimitedWebRequest`s (once; idempotent)."""
    from daphne import http_protocol

    if getattr(http_protocol.HTTPFactory, "body_limited", False):
        return
    build_protocol = http_protocol.HTTPFactory.buildProtocol

    def build_limited(self: Any, addr: Any) -> Any:
        protocol = build_protocol(self, addr)
        protocol.requestFactory = BodyLimitedWebRequest
        return protocol

    http_protocol.HTTPFactory.buildProtocol = build_limited  # type: ignore[method-assign]
    http_protocol.HTTPFactory.body_limited = True  # type: ignore[attr-defined]


def _web_request_class() -> type:
    from daphne.http_protocol import WebRequest

    return WebRequest


class BodyLimitedWebRequest(_web_request_class()):  # type: ignore[misc]
    """Daphne's request, refusing a body over the limit when its headers arrive (Content-Length) or as its chunks
    arrive (chunked encoding): a 413, the connection closed, nothing buffered."""

    body_limit = 0
    body_seen = 0
    body_refused = False

    def gotLength(self, length: int | None) -> None:
        path = bytes(getattr(self.channel, "_path", b"/") or b"/").split(b"?", 1)[0]
        self.body_limit = request_body_limit(path.decode("latin-1"))
        if length is not None and length > self.body_limit:
            self.content = io.BytesIO()
            self.requestHeaders.removeHeader(b"expect")  # no "100 Continue": the client must not send it
            self._body_refuse()
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self.body_refused:
            return
        self.body_seen += len(data)
        if self.body_seen > self.body_limit:
            self._body_refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if self.body_refused:
            return  # answered already; the application never sees this request
        super().requestReceived(command, path, version)

    def _body_refuse(self) -> None:
        if self.body_refused:
            return
        self.body_refused = True
        body = refusal_body(self.body_limit)
        self.channel.transport.write(
            b"HTTP/1.1 413 Content Too Large\r\n"
            b"Content-Type: text/plain; charset=utf-8\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n"
            b"Connection: close\r\n\r\n" + body
        )
        self.channel.transport.loseConnection()
