"""Request bodies over the limit are refused before they are read, signed in or not: by Daphne as the headers
arrive (a real server here, spoken to over a raw socket) and by the ASGI middleware for any other server."""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from django.conf import settings

from debates.web.request_limits import BodySizeLimit, request_body_limit
from kb.limits import MAX_UPLOAD_BYTES
from tests.engine.crash_helpers import free_port, wait_for
from tests.test_settings import clean_env

GENERAL_LIMIT = 3 * 1024 * 1024


# --- the ASGI middleware -----------------------------------------------------------------------------------------


class Recorder:
    """An ASGI application that reads the whole body and answers 200, recording what it saw."""

    def __init__(self) -> None:
        self.called = False
        self.body = b""
        self.disconnected = False

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        self.called = True
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                self.disconnected = True
                return  # as Django's handler does: no answer to a request whose client went away
            self.body += message.get("body", b"")
            if not message.get("more_body"):
                break
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})


def call(path: str, chunks: list[bytes], headers: list[tuple[bytes, bytes]]) -> tuple[Recorder, list[dict]]:
    app = Recorder()
    sent: list[dict] = []
    messages = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ]

    async def receive() -> dict:
        return messages.pop(0) if messages else {"type": "http.disconnect"}

    async def send(message: dict) -> None:
        sent.append(message)

    scope = {"type": "http", "path": path, "method": "POST", "headers": headers}
    asyncio.run(BodySizeLimit(app)(scope, receive, send))
    return app, sent


def status_of(sent: list[dict]) -> int:
    return next(m["status"] for m in sent if m["type"] == "http.response.start")


def test_a_declared_length_over_the_limit_is_refused_without_calling_the_application():
    app, sent = call("/runs/new/", [b""], [(b"content-length", str(GENERAL_LIMIT + 1).encode())])
    assert status_of(sent) == 413 and not app.called
    assert b"at most 3,145,728 bytes" in sent[-1]["body"]


def test_a_malformed_length_is_refused():
    app, sent = call("/runs/new/", [b""], [(b"content-length", b"12abc")])
    assert status_of(sent) == 413 and not app.called


def test_a_chunked_body_growing_past_the_limit_is_cut_off_and_refused():
    chunk = b"x" * (1024 * 1024)
    app, sent = call("/runs/new/", [chunk] * 4, [])
    assert app.disconnected and len(app.body) <= GENERAL_LIMIT
    assert status_of(sent) == 413


def test_a_body_within_the_limit_reaches_the_application_whole():
    app, sent = call("/runs/new/", [b"a" * 1000, b"b" * 1000], [(b"content-length", b"2000")])
    assert status_of(sent) == 200 and app.body == b"a" * 1000 + b"b" * 1000


def test_only_the_kb_upload_form_takes_a_file_sized_body():
    assert request_body_limit("/kb/") > MAX_UPLOAD_BYTES
    assert request_body_limit("/runs/new/") == request_body_limit("/kb/inbox/") == GENERAL_LIMIT
    app, sent = call("/kb/", [b"z" * (5 * 1024 * 1024)], [(b"content-length", str(5 * 1024 * 1024).encode())])
    assert status_of(sent) == 200 and app.called


# --- Daphne, as served ---------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """`manage.py serve` with the default settings (DEBUG off), on a free port; yields the port."""
    var = tmp_path_factory.mktemp("var")
    port = free_port()
    env = clean_env(DISPUTA_VAR_DIR=str(var), DISPUTA_RESUME_ON_START="false", PYTHONUNBUFFERED="1")
    log = (var / "serve.log").open("w")
    process = subprocess.Popen(
        [sys.executable, "manage.py", "serve", "--port", str(port)],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for(lambda: _listening(port) or process.poll() is not None, 30, "the server to listen")
        assert process.poll() is None, (var / "serve.log").read_text()
        yield port
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def exchange(port: int, head: bytes, body_parts: Sequence[bytes] = (), timeout: float = 5) -> bytes:
    """Send the head (and body parts, stopping quietly if the server hangs up); the answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(head)
        for part in body_parts:
            try:
                s.sendall(part)
            except (BrokenPipeError, ConnectionResetError):
                break
        answer = b""
        try:
            while chunk := s.recv(65536):
                answer += chunk
        except (ConnectionResetError, TimeoutError):
            pass
    return answer


def test_daphne_answers_413_from_the_headers_alone_for_an_anonymous_gigabyte(served):
    head = (
        b"POST /accounts/login/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/x-www-form-urlencoded\r\n"
        b"Expect: 100-continue\r\nContent-Length: 1073741824\r\n\r\n"
    )
    answer = exchange(served, head)  # no byte of the body is ever sent: only the headers can be answered
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"100 Continue" not in answer and b"at most 3,145,728 bytes" in answer


def test_daphne_cuts_off_a_chunked_body_that_grows_past_the_limit(served):
    head = b"POST /runs/new/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    megabyte = b"x" * (1024 * 1024)
    chunk = f"{len(megabyte):x}\r\n".encode() + megabyte + b"\r\n"
    answer = exchange(served, head, [chunk] * 8)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]


def test_daphne_reads_a_body_under_the_upload_limit_on_the_upload_form(served):
    body = b"x" * (4 * 1024 * 1024)
    head = (
        b"POST /kb/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/octet-stream\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n"
    )
    answer = exchange(served, head, [body], timeout=20)
    assert answer.startswith(b"HTTP/1.1 403 "), answer[:200]  # read whole, then refused by CSRF, not by size


def test_with_debug_off_static_files_are_served_and_errors_show_no_debug_page(served):
    static = exchange(
        served, b"GET /static/disputa/app.css HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    assert static.startswith(b"HTTP/1.1 200 ") and b"text/css" in static.split(b"\r\n\r\n")[0]
    missing = exchange(served, b"GET /no-such-page/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    assert missing.startswith(b"HTTP/1.1 404 ")
    assert b"URLconf" not in missing and b"Traceback" not in missing and b"DEBUG = True" not in missing
