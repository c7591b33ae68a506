"""Daphne's TCP connections write a frame at once when nothing is buffered, and never let bytes overtake."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import protocol, tcp
from twisted.internet.testing import MemoryReactor

from debates.platform.tcp_writes import eager_writes_install


@pytest.fixture
def connection():
    """A Twisted server connection over a real socket pair, on a reactor that only records registrations."""
    eager_writes_install()
    ours, peer = socket.socketpair()
    peer.setblocking(False)
    reactor = MemoryReactor()
    transport = tcp.Server(ours, protocol.Protocol(), ("127.0.0.1", 1), None, 1, reactor)
    transport.connected = True
    yield transport, peer, reactor
    ours.close()
    peer.close()


def _received(peer: socket.socket) -> bytes:
    chunks = []
    while True:
        try:
            chunk = peer.recv(1 << 20)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def test_a_write_with_nothing_buffered_is_sent_at_once_without_waiting_for_the_loop(connection):
    transport, peer, reactor = connection
    transport.write(b"frame one")
    transport.write(b"frame two")
    assert _received(peer) == b"frame oneframe two"
    assert transport not in reactor.getWriters()  # no writability registration, no later loop turn


def test_what_the_socket_does_not_take_is_buffered_and_later_writes_queue_behind_it(connection):
    transport, peer, reactor = connection
    transport.socket.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    big = bytes(range(256)) * 512  # 128 KiB: more than the socket takes at once, within one send's limit
    transport.write(big)
    transport.write(b"after")  # must not overtake the rest of `big`
    assert transport in reactor.getWriters()
    got = _received(peer)
    assert len(got) < len(big)
    while transport in reactor.getWriters():  # the reactor's turns: drained as the peer reads
        transport.doWrite()
        got += _received(peer)
    assert got == big + b"after"


def test_a_closing_connection_writes_the_usual_way(connection):
    transport, peer, reactor = connection
    transport.disconnecting = True
    transport.write(b"late")
    assert _received(peer) == b""
    assert transport in reactor.getWriters()


def test_installing_twice_wraps_once():
    eager_writes_install()
    write = tcp.Server.write
    eager_writes_install()
    assert tcp.Server.write is write
