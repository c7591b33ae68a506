"""A frame that many viewers get is framed once and written to each of their Daphne connections as bytes.

Sent the ASGI way, every copy of a live frame passes Channels' session wrapper (which looks at the session on each
message), Daphne's reply handler and autobahn, which encodes the text again, builds the frame header and formats
log arguments, once per viewer. In `bench fanout` (market panel, 10 debates x 100 viewers, py-spy of Daphne) that
path was 62 % of the server's samples, the socket writes themselves 25 %. autobahn's own broadcast API does the
framing once: a `PreparedMessage` holds the frame's bytes, and `sendPreparedMessage` writes them to a connection
(https://autobahn.readthedocs.io, "prepareMessage"). A consumer gets its connection through the scope
(`DaphneConnections`); any other server, or a connection that is not open, goes the ASGI way."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from autobahn.websocket.protocol import PreparedMessage

SCOPE_KEY = "disputa.daphne_connection"


class DaphneConnection:
    """The Daphne websocket connection behind one consumer's `send`."""

    __slots__ = ("protocol", "server")

    def __init__(self, server: Any, protocol: Any) -> None:
        self.server = server
        self.protocol = protocol

    def send_prepared(self, prepared: PreparedMessage) -> bool:
        """Write the prepared frame; False (nothing written) where Daphne's own send would not write: the connection
        is gone or not open."""
        protocol = self.protocol
        connection = self.server.connections.get(protocol)
        if connection is None or connection.get("disconnected") or protocol.state != protocol.STATE_OPEN:
            return False
        # Behind anything in autobahn's own queue (its chopped or synchronous sends); otherwise what
        # sendPreparedMessage writes, without sendData's debug line, whose arguments are formatted (with click's
        # styling) for every write whether or not debug logging is on: about a tenth of Daphne's samples.
        if protocol.send_queue:
            protocol.sendPreparedMessage(prepared)
        else:
            protocol.transport.write(prepared.payloadHybi)
        return True


@functools.lru_cache(maxsize=32)
def prepared_text(text: str) -> PreparedMessage:
    """A text frame as a server sends it (not masked, RFC 6455 §5.1). Sent uncompressed even where a connection
    negotiated compression, which permits any message to be (RFC 7692 §6: RSV1 unset). Kept for the next viewers of
    the same message: a run's viewers in a process get its messages one after another."""
    return PreparedMessage(text.encode(), isBinary=False, applyMask=False, doNotCompress=True)


def daphne_connection(send: Callable[..., Any]) -> DaphneConnection | None:
    """Daphne hands an application `functools.partial(server.handle_reply, protocol)` as its send; None for any
    other server or test harness."""
    from daphne.server import Server
    from daphne.ws_protocol import WebSocketProtocol

    if not isinstance(send, functools.partial) or len(send.args) != 1:
        return None
    server = getattr(send.func, "__self__", None)
    if isinstance(server, Server) and isinstance(send.args[0], WebSocketProtocol):
        return DaphneConnection(server, send.args[0])
    return None


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


class DaphneConnections:
    """ASGI middleware, outermost on websockets: puts the Daphne connection of each socket into its scope (under
    SCOPE_KEY), before any middleware wraps `send`."""

    def __init__(self, inner: ASGIApp) -> None:
        self.inner = inner

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        connection = daphne_connection(send) if scope["type"] == "websocket" else None
        if connection is not None:
            scope = {**scope, SCOPE_KEY: connection}
        await self.inner(scope, receive, send)
