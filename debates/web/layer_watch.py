"""Whether this process's channel layer carries messages right now, found out by sending one through it: every
LAYER_HEARTBEAT_SECONDS a message goes to a channel of the process's own and must come back within
LAYER_HEARTBEAT_TIMEOUT_SECONDS (through Redis, for the Redis layers). One watch per process (per event loop),
not per viewer: a thousand viewers of one process share its layer connection, so one round trip answers for all.

The run page's consumers read `up` and wait on `changed()`: while the layer is down a page is told so and catches
up from the database; when it is back the feeds join their groups again (a restarted Redis has forgotten the
list layer's groups: debates.web.feeds) and each page replays what it missed. Both tasks here restart after any exception: the watch must
outlive the outage it is watching."""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from channels.layers import get_channel_layer

from debates.platform.conf import conf

logger = logging.getLogger(__name__)

RESTART_AFTER_SECONDS = 1.0


async def keep_running(name: str, work: Callable[[], Awaitable[None]]) -> None:
    """Run `work` until cancelled, starting it again a moment after it raises (a Redis or database outage, say):
    a background task that died would leave its page silently frozen."""
    while True:
        try:
            await work()
            return
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.warning("%s failed; restarting it in %.0f s", name, RESTART_AFTER_SECONDS, exc_info=True)
            await asyncio.sleep(RESTART_AFTER_SECONDS)


class LayerWatch:
    def __init__(self, layer: Any) -> None:
        self.layer = layer
        self.up = True  # until a round trip fails: a process starts believing its layer works
        self._changed = asyncio.Event()
        self._pong = 0
        self._pong_arrived = asyncio.Event()
        self._channel: str | None = None
        self._tasks = [
            asyncio.create_task(keep_running("the channel layer's heartbeat", self._heartbeat)),
        ]

    def changed(self) -> asyncio.Event:
        """An event set at the next change of `up` (a fresh one after each change)."""
        return self._changed

    def _set(self, up: bool) -> None:
        if up == self.up:
            return
        self.up = up
        logger.warning("channel layer %s", "is back" if up else "is not carrying messages")
        changed, self._changed = self._changed, asyncio.Event()
        changed.set()

    async def _heartbeat(self) -> None:
        ping = 0
        while True:
            ping += 1
            self._set(await self._round_trip(ping))
            await asyncio.sleep(conf("LAYER_HEARTBEAT_SECONDS") if self.up else RESTART_AFTER_SECONDS)

    async def _round_trip(self, ping: int) -> bool:
        timeout = conf("LAYER_HEARTBEAT_TIMEOUT_SECONDS")
        try:
            async with asyncio.timeout(timeout):
                if self._channel is None:
                    self._channel = await self.layer.new_channel("layer-watch.")
                    self._tasks.append(
                        asyncio.create_task(
                            keep_running("the channel layer's heartbeat receiver", self._receive)
                        )
                    )
                self._pong_arrived.clear()
                await self.layer.send(self._channel, {"type": "layer.ping", "ping": ping})
                while self._pong < ping:
                    await self._pong_arrived.wait()
                    self._pong_arrived.clear()
            return True
        except TimeoutError:
            return False
        except asyncio.CancelledError:
            raise
        except Exception as error:  # the layer's own connection errors (redis.ConnectionError, OSError, ...)
            logger.debug("channel layer round trip failed: %r", error)
            return False

    async def _receive(self) -> None:
        assert self._channel is not None
        while True:
            message = await self.layer.receive(self._channel)
            self._pong = max(self._pong, int(message.get("ping", 0)))
            self._pong_arrived.set()

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()


_watches: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, LayerWatch] = weakref.WeakKeyDictionary()


def layer_watch() -> LayerWatch:
    """This process's watch of its default channel layer (started on first use, on the running loop)."""
    loop = asyncio.get_running_loop()
    layer = get_channel_layer()
    watch = _watches.get(loop)
    if watch is None or watch.layer is not layer:  # tests swap the layer between tests
        if watch is not None:
            watch.stop()
        watch = _watches[loop] = LayerWatch(layer)
    return watch
