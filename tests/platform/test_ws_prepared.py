"""A frame many viewers get is framed once and written to each Daphne connection as the very bytes Daphne's own
send would write; wherever Daphne's send would not write it that way, nothing is written and the caller sends it
the ASGI way."""

from __future__ import annotations

from functools import partial

import pytest
from daphne.server import Server
from daphne.ws_protocol import WebSocketFactory
from twisted.internet.testing import StringTransport

from debates.platform.ws_prepared import (
    SCOPE_KEY,
    DaphneConnections,
    daphne_connection,
    prepared_text,
)


@pytest.fixture
def server():
    server = Server(application=None, endpoints=["tcp:port=0"])  # never run: it only holds the connections
    server.connections = {}
    return server


def open_connection(server):
    """A Daphne websocket connection past its handshake, writing into a transport that keeps what it is given."""
    protocol = WebSocketFactory(server, server="Daphne").buildProtocol(("127.0.0.1", 1))
    transport = StringTransport()
    protocol.makeConnection(transport)
    protocol.client_addr = ["127.0.0.1", 1]  # (set by Daphne as the handshake arrives)
    protocol.state = protocol.STATE_OPEN
    server.connections[protocol] = {}
    return protocol, transport


@pytest.mark.parametrize(
    "text",
    ["short", "é" * 200, "<div>" + "x" * 70_000 + "</div>"],  # the three lengths of RFC 6455's header
    ids=["7-bit length", "16-bit length", "64-bit length"],
)
def test_the_bytes_written_are_those_daphnes_own_send_writes(server, text):
    ours, ours_written = open_connection(server)
    theirs, theirs_written = open_connection(server)
    assert daphne_connection(partial(server.handle_reply, ours)).send_prepared(prepared_text(text))
    theirs.handle_reply({"type": "websocket.send", "text": text})
    assert ours_written.value() == theirs_written.value()
    assert ours_written.value().endswith(text.encode())


def test_one_frame_serves_every_viewer_of_the_same_text(server):
    assert prepared_text("<p>live</p>") is prepared_text("<p>live</p>")
    first, first_written = open_connection(server)
    second, second_written = open_connection(server)
    for protocol in (first, second):
        assert daphne_connection(partial(server.handle_reply, protocol)).send_prepared(
            prepared_text("<p>live</p>")
        )
    assert first_written.value() == second_written.value() == b"\x81\x0b<p>live</p>"


def test_nothing_is_written_to_a_connection_that_is_gone_or_not_open(server):
    gone, gone_written = open_connection(server)
    server.connections[gone]["disconnected"] = True
    closing, closing_written = open_connection(server)
    closing.state = closing.STATE_CLOSING
    forgotten, forgotten_written = open_connection(server)
    del server.connections[forgotten]
    for protocol in (gone, closing, forgotten):
        assert not daphne_connection(partial(server.handle_reply, protocol)).send_prepared(prepared_text("x"))
    assert gone_written.value() == closing_written.value() == forgotten_written.value() == b""


def test_a_frame_goes_behind_what_autobahn_has_queued(server):
    protocol, written = open_connection(server)
    # autobahn's own queue (chopped or synchronous sends), being sent out a piece per turn of the reactor.
    protocol.send_queue.append((b"queued first", True))
    protocol.triggered = True
    assert daphne_connection(partial(server.handle_reply, protocol)).send_prepared(prepared_text("then this"))
    assert written.value() == b""  # not ahead of the queued bytes
    assert [data for data, _ in protocol.send_queue] == [b"queued first", b"\x81\x09then this"]


def test_only_daphnes_send_is_recognised(server):
    protocol, _ = open_connection(server)
    assert daphne_connection(partial(server.handle_reply, protocol)) is not None

    async def other_servers_send(message):
        pass

    assert daphne_connection(other_servers_send) is None
    assert daphne_connection(partial(other_servers_send)) is None


@pytest.mark.asyncio
async def test_the_middleware_puts_a_websockets_connection_into_its_scope(server):
    protocol, _ = open_connection(server)
    seen = []

    async def inner(scope, receive, send):
        seen.append(scope)

    app = DaphneConnections(inner)
    await app({"type": "websocket", "path": "/ws/runs/1/"}, None, partial(server.handle_reply, protocol))
    await app({"type": "http", "path": "/"}, None, partial(server.handle_reply, protocol))
    await app({"type": "websocket", "path": "/ws/runs/1/"}, None, lambda message: None)
    assert seen[0][SCOPE_KEY].protocol is protocol
    assert SCOPE_KEY not in seen[1]
    assert SCOPE_KEY not in seen[2]
