"""The run page's WebSocket: one-way, server -> browser. On connect: follow the run's feed (one channel-layer
channel per process for all of the run's sockets: debates.web.feeds), then send a snapshot at seq S; afterwards
send events in seq order, replaying any gap from the database (the layer may drop messages).
While the channel layer carries nothing (debates.web.layer_watch: Redis down, say) the page is told "live updates
interrupted — catching up" and reads new events from the database instead; when the layer is back the run's feed
joins its group again and the page is told so. Human actions are CSRF-protected POSTs, never WebSocket messages."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from debates.engine.attention import ATTENTION_GROUP
from debates.engine.publish import run_group
from debates.models import Run
from debates.platform.conf import conf
from debates.platform.ws_prepared import SCOPE_KEY, DaphneConnection, prepared_text
from debates.selectors import runs as selectors
from debates.selectors.inbox import needs_you_count
from debates.services import quotas
from debates.web import frames
from debates.web.feeds import NO_CHANNEL, feed_follow, feed_leave
from debates.web.layer_watch import keep_running, layer_watch

logger = logging.getLogger(__name__)

# Timings: the DISPUTA settings GAP_POLL_SECONDS, REORDER_WAIT_SECONDS and COMMITTED_FRESH_SECONDS.
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


async def _admitted_user(consumer: AsyncWebsocketConsumer) -> Any:
    """The socket's logged-in user, or None once the socket is closed: too many connects from its address (counted
    against a fixed one-minute window), or no logged-in user."""
    client = consumer.scope.get("client") or ("unknown", 0)
    if not await database_sync_to_async(quotas.ws_connect_allowed)(str(client[0])):
        await consumer.close(code=quotas.CLOSE_TOO_MANY_CONNECTS)
        return None
    user = consumer.scope.get("user")
    if user is None or not user.is_authenticated:
        await consumer.close(code=CLOSE_UNAUTHENTICATED)
        return None
    return user


def _page_seq(scope: Mapping[str, Any]) -> int | None:
    """The seq the page that opened the socket was rendered at (`?seq=`), if it says."""
    values = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("seq", [])
    return int(values[0]) if values and values[0].isdigit() else None


class RunConsumer(AsyncWebsocketConsumer):
    channel_layer_alias = NO_CHANNEL  # the run's feed relays its messages (debates.web.feeds)
    run_id: int
    sent_seq: int = 0
    live = True  # what the page was last told: events arrive through the layer (else from the database)
    panels_stale = False  # the last panels could not be rendered (database outage): the next poll sends them
    snapshot_sent = False
    # Messages waiting for this socket's own task, in order: while it is busy, or when one needs the database.
    backlog: deque[dict[str, Any]] | None = None
    draining: asyncio.Task[None] | None = None

    async def connect(self) -> None:
        user = await _admitted_user(self)
        if user is None:
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        # Moderators' panels hold controls and are rendered for each; other viewers' come with the event.
        self.moderator = await database_sync_to_async(selectors.user_can_moderate)(user)
        if not await database_sync_to_async(Run.objects.filter(pk=self.run_id).exists)():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.lock = asyncio.Lock()
        self.pending: dict[int, dict[str, Any]] = {}  # events that arrived ahead of a missing seq
        self.gap_wait: asyncio.Task[None] | None = None
        self.watch = layer_watch()
        # Follow before reading the snapshot: anything committed after it arrives as a message with seq > S (what
        # arrives before the snapshot is sent waits in the backlog). The database poll carries the page while the
        # layer cannot be joined.
        self.feed = feed_follow(run_group(self.run_id), self)
        try:
            joined = await self.feed.join()
            await self.accept()
            async with self.lock:
                html, self.sent_seq = await database_sync_to_async(frames.snapshot_frame)(
                    self.run_id, user, page_seq=_page_seq(self.scope)
                )
                # Always said: a page reconnecting after an outage may still show the notice of its last socket.
                self.live = joined and self.watch.up
                await self.send(text_data=html + frames.live_state_frame(self.live))
                self.snapshot_sent = True
                if self.backlog:
                    self.draining = asyncio.create_task(self._drain())
        except (
            BaseException
        ):  # a connect that fails gets no disconnect: the feed must not keep relaying to it
            await feed_leave(self.feed, self)
            raise
        self.poller = asyncio.create_task(keep_running(f"run {self.run_id}'s gap poll", self._poll_for_gaps))

    async def relay(self, message: dict[str, Any]) -> None:
        """A message of the run's group, from its feed. Answered at once when that needs no database read and
        nothing is queued before it; otherwise queued for this socket's own task, in order, so that the feed's
        other sockets do not wait for this one."""
        if (
            self.backlog is None
            and self.snapshot_sent
            and not self.lock.locked()
            and not self._reads_database(message)
        ):
            await self._handle(message)
            return
        if self.backlog is None:
            self.backlog = deque()
            if self.snapshot_sent:
                self.draining = asyncio.create_task(self._drain())
        self.backlog.append(message)

    def _reads_database(self, message: dict[str, Any]) -> bool:
        # A moderator's panels hold controls and are rendered for each; a viewer's come with the burst.
        if message["type"] != "run.events":
            return False
        return self.panels_stale or (
            any(event.get("panels") for event in message["events"])
            and (self.moderator or message.get("viewer_panels") is None)
        )

    async def _drain(self) -> None:
        try:
            while self.backlog:
                message = self.backlog.popleft()
                try:
                    await self._handle(message)
                except Exception:
                    logger.exception("run %s: sending a %s message failed", self.run_id, message["type"])
        finally:
            self.backlog = None

    async def _handle(self, message: dict[str, Any]) -> None:
        if message["type"] == "run.events":
            await self.run_events(message)
        elif message["type"] == "turn.delta":
            await self.turn_delta(message)

    async def disconnect(self, code: int) -> None:
        for task in (getattr(self, "poller", None), getattr(self, "gap_wait", None), self.draining):
            if task is not None:
                task.cancel()
        if hasattr(self, "feed"):
            await feed_leave(self.feed, self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Read-only socket: actions go through POST (CSRF, permission checks). Ignore anything sent here.
        return

    async def run_events(self, burst: dict[str, Any]) -> None:
        """A burst of events (debates.engine.publish.burst_message): what is in order goes in one send."""
        async with self.lock:
            fresh = [event for event in burst["events"] if int(event["seq"]) > self.sent_seq]
            if not fresh:
                return
            for event in fresh:
                if event.get("panels"):
                    event = {**event, "viewer_panels": burst.get("viewer_panels")}
                self.pending[int(event["seq"])] = event
            await self._send_in_order()
            if self.pending and self.gap_wait is None:
                # Parallel turns commit in one order and may be published in another: wait a moment for the
                # missing seq before paying for a replay from the database (it was dropped if it does not come).
                self.gap_wait = asyncio.create_task(self._replay_unless_filled())

    async def _send_in_order(self) -> None:
        # What is ready goes in one websocket message: each message costs the server a write per viewer.
        html: list[str] = []
        panels, viewer_panels = False, None
        while self.sent_seq + 1 in self.pending:
            event = self.pending.pop(self.sent_seq + 1)
            html.append(event["html"])
            self.sent_seq += 1
            if event.get("panels"):
                panels, viewer_panels = True, event.get("viewer_panels")
        self.pending = {seq: e for seq, e in self.pending.items() if seq > self.sent_seq}
        own = False  # this viewer's own panels (a moderator's controls): a frame no other viewer gets
        if panels or self.panels_stale:
            if viewer_panels is None or self.moderator:
                viewer_panels, own = await self._panels(), True
            if viewer_panels:
                html.append(viewer_panels)
        if html:
            await self._send_frame("".join(html), shared=not own)

    async def _send_frame(self, html: str, *, shared: bool) -> None:
        """A frame the run's other viewers in this process get too (`shared`) is framed once for all of them and
        written to each Daphne connection as bytes (debates.platform.ws_prepared); others go the ASGI way."""
        connection = cast("DaphneConnection | None", self.scope.get(SCOPE_KEY)) if shared else None
        if connection is None or not connection.send_prepared(prepared_text(html)):
            await self.send(text_data=html)

    async def _panels(self) -> str:
        """This viewer's panels, or "" if the database cannot be reached: the events' frames still go out, and
        the panels follow once it can (the gap poll calls _send_in_order)."""
        try:
            html = await database_sync_to_async(frames.panels_frame)(self.run_id, self.scope["user"])
        except Exception as error:
            logger.warning("run %s: rendering a viewer's panels failed: %r", self.run_id, error)
            self.panels_stale = True
            return ""
        self.panels_stale = False
        return html

    async def _replay_unless_filled(self) -> None:
        await asyncio.sleep(conf("REORDER_WAIT_SECONDS"))
        async with self.lock:
            self.gap_wait = None
            if self.pending:
                await self._replay()
                await self._send_in_order()

    async def turn_delta(self, event: dict[str, Any]) -> None:
        # The streaming turns of the run, in one frame; only those this page already shows (a turn not yet shown
        # arrives whole with its own event).
        html = "".join(part["html"] for part in event["parts"] if int(part["first_seq"]) <= self.sent_seq)
        if html:
            await self._send_frame(html, shared=True)

    async def _replay(self) -> None:
        html, last = await database_sync_to_async(frames.replay_frames)(
            self.run_id, self.sent_seq, self.scope["user"], layer_down=not self.live
        )
        if last > self.sent_seq:
            await self.send(text_data=html)
            self.sent_seq = last

    async def _poll_for_gaps(self) -> None:
        # While the layer works, only an event the database already held at the previous poll, and that has not
        # arrived since, counts as lost: one still on its way through a busy layer or a busy process is not
        # replayed (a replay for every viewer of a run at once is what would make a busy process busier still).
        # While it does not, nothing is on its way: whatever is committed is replayed at once.
        committed_before = 0
        while True:
            await self._sleep_unless_layer_changes(
                conf("GAP_POLL_SECONDS") if self.live else conf("CATCH_UP_POLL_SECONDS")
            )
            await self._follow_layer()
            if not self.live:
                committed_before = await _committed_seq(self.run_id)
            if committed_before > self.sent_seq or self.panels_stale:
                async with self.lock:
                    if committed_before > self.sent_seq:
                        await self._replay()
                    await self._send_in_order()
            committed_before = await _committed_seq(self.run_id)

    async def _sleep_unless_layer_changes(self, seconds: float) -> None:
        try:
            async with asyncio.timeout(seconds):
                await self.watch.changed().wait()
        except TimeoutError:
            pass

    async def _follow_layer(self) -> None:
        """Tell the page when the layer stops or starts carrying its events. Back up, the run's feed joins its
        group again (a restarted Redis forgot it) and the page replays what was published while the layer was down."""
        if not self.watch.up:
            self.feed.forget()
        elif not self.feed.joined:
            await self.feed.join()
        live = self.watch.up and self.feed.joined
        if live == self.live:
            return
        async with self.lock:
            if live:  # before self.live changes: what was committed meanwhile is rendered, not waited for
                await self._replay()
                await self._send_in_order()
            self.live = live
            await self.send(text_data=frames.live_state_frame(live))


# The last seq committed per run, as read lately by any consumer of this process: a run's viewers poll together,
# and those asking while it is being read wait for that one read.
_committed: dict[int, tuple[float, int]] = {}
_committed_reads: dict[int, asyncio.Task[int]] = {}


async def _committed_seq(run_id: int) -> int:
    read = _committed.get(run_id)
    if read is not None and time.monotonic() - read[0] < conf("COMMITTED_FRESH_SECONDS"):
        return read[1]
    reading = _committed_reads.get(run_id)
    if reading is None or reading.done() or reading.get_loop() is not asyncio.get_running_loop():
        reading = _committed_reads[run_id] = asyncio.ensure_future(_committed_seq_read(run_id))
    # Shielded: a viewer leaving must not cancel the read the others wait for.
    return await asyncio.shield(reading)


async def _committed_seq_read(run_id: int) -> int:
    # Through database_sync_to_async (not the async ORM): the connection goes back to the pool after the read.
    seq = await database_sync_to_async(Run.objects.filter(pk=run_id).values_list("last_seq", flat=True).get)()
    now = time.monotonic()
    if len(_committed) > 1000:  # forget runs nobody polled for a while
        for stale in [r for r, (at, _) in _committed.items() if now - at > 60]:
            del _committed[stale]
            _committed_reads.pop(stale, None)
    _committed[run_id] = (now, seq)
    return seq


class NeedsYouConsumer(AsyncWebsocketConsumer):
    """Every page's "Needs you" count: the count on connect, then a recount after each attention wake-up
    (debates.engine.attention), coalesced so a burst of events costs one count. Sent only when it changes. After
    a channel-layer outage (wake-ups lost, the group perhaps forgotten) it joins again and recounts. All the
    process's counts follow one feed (debates.web.feeds)."""

    channel_layer_alias = NO_CHANNEL
    count: int | None = None
    stale = False  # a wake-up came after the last count began

    async def connect(self) -> None:
        user = await _admitted_user(self)
        if user is None:
            return
        self.user = user
        self.recount: asyncio.Task[None] | None = None
        # One count at a time: an older count is never sent after a newer one.
        self.counting = asyncio.Lock()
        self.watch = layer_watch()
        self.feed = feed_follow(ATTENTION_GROUP, self)
        await self.feed.join()
        await self.accept()
        await self._send_count()
        self.rejoiner = asyncio.create_task(
            keep_running("a needs-you count's rejoin", self._rejoin_after_outages)
        )

    async def _rejoin_after_outages(self) -> None:
        while True:
            await self.watch.changed().wait()
            if not self.watch.up:
                self.feed.forget()
            elif await self.feed.join():
                await self._send_count()

    async def disconnect(self, code: int) -> None:
        for task in (getattr(self, "recount", None), getattr(self, "rejoiner", None)):
            if task is not None:
                task.cancel()
        if hasattr(self, "feed"):
            await feed_leave(self.feed, self)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        return  # read-only

    async def relay(self, message: dict[str, Any]) -> None:
        if message["type"] == "attention.changed":
            await self.attention_changed(message)

    async def attention_changed(self, event: dict[str, Any]) -> None:
        self.stale = True
        if self.recount is None or self.recount.done():
            self.recount = asyncio.create_task(self._recount_soon())

    async def _recount_soon(self) -> None:
        await asyncio.sleep(conf("NEEDS_YOU_COALESCE_SECONDS"))
        # A wake-up that comes while the database is read (the connect's first count included) may be for a commit
        # that read did not see: count again. Dropping it left a page at 0 beside a run waiting for its moderator.
        while self.stale:
            self.stale = False
            await self._send_count()

    async def _send_count(self) -> None:
        async with self.counting:
            count = await database_sync_to_async(needs_you_count)(self.user)
            if count != self.count:
                self.count = count
                await self.send(text_data=frames.needs_you_count_frame(count))
