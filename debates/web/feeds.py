"""One layer channel per process for each group its sockets follow, not one per socket.

Channels gives every consumer a channel of its own in the channel layer (on the pub/sub layer, a Redis
subscription) and a task that waits on it. A hundred viewers of a run in one process then meant a hundred copies of
every live frame, each decoded, queued, awaited by a fresh task and dispatched apart: at 1,000 sockets that
bookkeeping, several times per frame per viewer, queued the run's events behind it on the server's one event loop.
Here a process holds one channel per group (a run's, the "Needs you" count's) and hands each message, decoded once,
to its local sockets one after another (`Member.relay`). A socket whose answer needs the database or that is still
busy queues the message for a task of its own, so it holds up no other viewer (debates.web.consumers).

A consumer without a channel of its own also opens while the layer is down (Channels' `new_channel` raises then, on
the pub/sub layer): the feed cannot join, the page is told it is not live and catches up from the database, and the
feed joins once the layer is back (debates.web.layer_watch)."""

from __future__ import annotations

import asyncio
import logging
import weakref
from typing import Any, Protocol

from channels.layers import get_channel_layer

from debates.web.layer_watch import keep_running

logger = logging.getLogger(__name__)

# A consumer class with this alias gets no channel of its own: Channels' get_channel_layer answers None for an alias
# that names no layer, and the consumer then listens to its websocket alone.
NO_CHANNEL = "no channel of its own: debates.web.feeds"


class Member(Protocol):
    async def relay(self, message: dict[str, Any]) -> None: ...


class Feed:
    """A group's messages for this process's sockets that follow it."""

    def __init__(self, layer: Any, group: str) -> None:
        self.layer = layer
        self.group = group
        self.members: dict[Member, None] = {}  # in the order they came: the oldest viewer first
        self.joined = False  # a member of the group in the layer (false until joined, and after an outage)
        self.channel: str | None = None
        self._joining = asyncio.Lock()
        self._relaying: asyncio.Task[None] | None = None

    async def join(self) -> bool:
        """Make sure the feed is in its group in the layer; false if the layer cannot be reached. Again after an
        outage (`forget`): a restarted Redis has forgotten the group. Its members ask at once; one join is made."""
        async with self._joining:
            if self.joined:
                return True
            try:
                if self.channel is None:
                    self.channel = await self.layer.new_channel()
                await self.layer.group_add(self.group, self.channel)
            except Exception as error:  # the layer's connection errors (Redis down)
                logger.warning("%s: joining the group failed: %r", self.group, error)
                return False
            self.joined = True
            if self._relaying is None:
                self._relaying = asyncio.create_task(keep_running(f"{self.group}'s feed", self._relay))
            return True

    def forget(self) -> None:
        """The layer stopped carrying messages: the group is joined again when it is back."""
        self.joined = False

    async def _relay(self) -> None:
        assert self.channel is not None
        while True:
            message = await self.layer.receive(self.channel)
            for member in list(self.members):
                try:
                    await member.relay(message)
                except Exception:  # one socket's failure is its own; the others still get the message
                    logger.exception("%s: relaying a %s message failed", self.group, message.get("type"))

    async def close(self) -> None:
        if self._relaying is not None:
            self._relaying.cancel()  # the pub/sub layer unsubscribes a channel whose receive is cancelled
        if self.joined and self.channel is not None:
            self.joined = False
            try:
                await self.layer.group_discard(self.group, self.channel)
            except Exception as error:  # a layer that is down has forgotten the member anyway
                logger.info("%s: leaving the group failed: %r", self.group, error)


_feeds: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, Feed]] = weakref.WeakKeyDictionary()


def feed_follow(group: str, member: Member) -> Feed:
    """The feed of `group` on the running loop, with `member` among its members (it gets every message from now
    on, through `relay`); the caller joins it (`Feed.join`)."""
    feeds = _feeds.setdefault(asyncio.get_running_loop(), {})
    layer = get_channel_layer()
    feed = feeds.get(group)
    if feed is None or feed.layer is not layer:  # tests swap the layer between tests
        feed = feeds[group] = Feed(layer, group)
    feed.members[member] = None
    return feed


async def feed_leave(feed: Feed, member: Member) -> None:
    """`member` gets nothing more; the last to leave closes the feed (its channel and group membership)."""
    feed.members.pop(member, None)
    if feed.members:
        return
    feeds = _feeds.get(asyncio.get_running_loop(), {})
    if feeds.get(feed.group) is feed:
        del feeds[feed.group]
    await feed.close()
