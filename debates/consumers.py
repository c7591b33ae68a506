"""The run page's WebSocket: one-way, server -> browser. On connect: join the group, then send a snapshot at
seq S; afterwards relay events in seq order, replaying any gap from the database (the layer may drop messages).
Human actions are CSRF-protected POSTs, never WebSocket messages."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncWebsocketConsumer

from debates import frames
from debates.engine.events import run_group
from debates.models import Run

# A dropped message that was the last of a burst is noticed by this poll rather than by the next message.
GAP_POLL_SECONDS = 2.0
CLOSE_UNAUTHENTICATED = 4401
CLOSE_NOT_FOUND = 4404


class RunConsumer(AsyncWebsocketConsumer):
    run_id: int
    sent_seq: int = 0

    async def connect(self) -> None:
        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=CLOSE_UNAUTHENTICATED)
            return
        self.run_id = int(self.scope["url_route"]["kwargs"]["run_id"])
        if not await Run.objects.filter(pk=self.run_id).aexists():
            await self.close(code=CLOSE_NOT_FOUND)
            return
        self.lock = asyncio.Lock()
        self.group = run_group(self.run_id)
        # Join before reading the snapshot: anything committed after it arrives as a message with seq > S.
        await self.channel_layer.group_add(self.group, self.channel_name)
        await self.accept()
        async with self.lock:
            html, self.sent_seq = await database_sync_to_async(frames.snapshot_frame)(self.run_id, user)
            await self.send(text_data=html)
        self.poller = asyncio.create_task(self._poll_for_gaps())

    async def disconnect(self, code: int) -> None:
        poller = getattr(self, "poller", None)
        if poller is not None:
            poller.cancel()
        if hasattr(self, "group"):
            await self.channel_layer.group_discard(self.group, self.channel_name)

    async def receive(self, text_data: str | None = None, bytes_data: bytes | None = None) -> None:
        # Read-only socket: actions go through POST (CSRF, permission checks). Ignore anything sent here.
        return

    async def run_event(self, event: dict[str, Any]) -> None:
        async with self.lock:
            seq = int(event["seq"])
            if seq <= self.sent_seq:
                return
            if seq == self.sent_seq + 1:
                await self.send(text_data=event["html"])
                self.sent_seq = seq
                if event.get("panels"):
                    html = await database_sync_to_async(frames.panels_frame)(self.run_id, self.scope["user"])
                    await self.send(text_data=html)
            else:
                await self._replay()

    async def turn_delta(self, event: dict[str, Any]) -> None:
        # Only for turns this page already shows; a turn not yet shown arrives whole with its own event.
        if int(event["first_seq"]) <= self.sent_seq:
            await self.send(text_data=event["html"])

    async def _replay(self) -> None:
        html, last = await database_sync_to_async(frames.replay_frames)(
            self.run_id, self.sent_seq, self.scope["user"]
        )
        if last > self.sent_seq:
            await self.send(text_data=html)
            self.sent_seq = last

    async def _poll_for_gaps(self) -> None:
        while True:
            await asyncio.sleep(GAP_POLL_SECONDS)
            last_seq = await Run.objects.filter(pk=self.run_id).values_list("last_seq", flat=True).aget()
            if last_seq > self.sent_seq:
                async with self.lock:
                    await self._replay()
