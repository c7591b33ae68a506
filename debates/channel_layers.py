"""The in-memory channel layer of the one-process setup, with one cost taken out."""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    """Channels' InMemoryChannelLayer walks every channel and group for expired messages on every receive: with a
    page's socket per viewer and a token delta to each ten times a second, that walk grew with the square of the
    audience (a tenth of the server's time at 500 viewers). Messages expire after a minute (`expiry`), so one
    walk a second removes them as surely."""

    CLEAN_EVERY_SECONDS = 1.0
    _cleaned_at = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now - self._cleaned_at >= self.CLEAN_EVERY_SECONDS:
            self._cleaned_at = now
            super()._clean_expired()  # type: ignore[misc]  # private in the stubs, not in channels
