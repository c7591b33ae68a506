"""Daphne's sockets write at once when nothing is waiting to be written.

Twisted buffers every `transport.write` and sends it on the next turn of the event loop: the socket is registered
for writability (an `epoll_ctl`), the loop wakes, sends, and unregisters it (another). Daphne writes a websocket
frame per viewer per message, so at 1,000 viewers that bookkeeping cost more than the sends themselves: in
`bench fanout` (kb-debate, 10 x 100) it was about 30 % of the server loop's time, and writing at once took the
server's CPU over a run from 13.4 s to 11.6 s (about 7 s of either is the thousand connections opening before the
debates start). Twisted leaves this open
(twisted/twisted#5303: small writes written at once cost more syscalls; here each write is a whole frame).

Written at once only when it keeps Twisted's guarantees: the connection is open and not closing, not TLS (whose
layer has its own buffer), nothing is buffered (so bytes never overtake earlier ones), and the data fits one send.
What the socket does not take, or an error (left for Twisted's own write to find and report), goes the usual way."""

from __future__ import annotations

from typing import Any

_PATCHED = "_disputa_eager_write"


def eager_writes_install() -> None:
    """Make Twisted's TCP server connections (Daphne's) write at once when they can (once; idempotent)."""
    from twisted.internet import tcp

    if getattr(tcp.Server, _PATCHED, False):
        return
    buffered_write = tcp.Server.write

    def write(self: Any, data: bytes) -> None:
        if (
            type(data) is bytes
            and 0 < len(data) <= self.SEND_LIMIT
            and self.connected
            and not self.disconnecting
            and not self._writeDisconnected
            and not self.TLS
            and not self._tempDataBuffer
            and len(self.dataBuffer) == self.offset
        ):
            try:
                sent = self.socket.send(data)
            except OSError:  # would block, or an error Twisted's own write then finds and reports
                sent = 0
            if sent == len(data):
                return
            data = data[sent:]
        buffered_write(self, data)

    tcp.Server.write = write  # type: ignore[method-assign]
    setattr(tcp.Server, _PATCHED, True)
