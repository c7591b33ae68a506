"""What viewers see while a runner works: a streaming turn's text, sent as live frames at most once per flush
interval per run, and the committed events, published in seq order off the runner's critical path."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.utils import timezone

from debates.agents.base import AgentBackend, AgentRequest, BackendError, Delta, Result
from debates.engine.crash import crash_point
from debates.engine.publish import aevent_publish, run_group, turn_live_frame
from debates.engine.turns import ClaimedTurn, turn_flush
from debates.platform.conf import conf
from debates.platform.db_retry import db_error_is_transient

log = logging.getLogger("debates.engine")

# Partial saves have threads of their own. Sharing the renderers' (publish.OFF_THREAD), a market panel's dozens of
# streaming turns kept them busy, and a burst's frames waited for one: 59-75 ms at the median in bench fanout
# (20 x 50), 18-20 ms with a pool apiece.
PARTIAL_SAVES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="disputa-partial-save")

PUBLISH_DELAY_SECONDS = 0.02
# How long a stage's last commit may wait for the runner to start the next stage, so that viewers get both in one
# message (debates.engine.stream.EventOutbox.hold). The wait ends as soon as the runner has decided, so it costs
# nothing on an idle machine; under load (ten debates on a worker's one interpreter) a decision takes longer, and
# at 0.15 s a KB debate's commits went out alone, then their next starts: at 20 debates x 50 viewers, 0.3 s gave
# 10-20 % fewer frames and a p95 lag of 0.28-0.32 s (four runs) against 0.40-0.60 s (two; README, bench fanout).
# Since the bench counts the held commit's own lag too (tenth session), 0.3 against 0.15 s was within the spread.
PUBLISH_HOLD_SECONDS = 0.3

# A structured answer opens with syntax (`{"claims": [{"text": "`): its first frame worth sending is the one
# where a string value has its first character, or any text that is not JSON at all.
FIRST_TEXT = re.compile(r':\s*"(?:[^"\\]|\\.)|^\s*[^\s{\[]')


class EventOutbox:
    """Committed events waiting to be published; `publish` runs as a task beside the runner."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self._queue: asyncio.Queue[int | None] = asyncio.Queue()
        self._closing = asyncio.Event()
        self._released = asyncio.Event()
        self._released.set()
        self._failing = FailureLog(run_id, "publishing events")

    def hold(self) -> None:
        """The runner is about to decide and start the next stage: what is queued waits for it (`release`), at
        most PUBLISH_HOLD_SECONDS. A turn's commit and the next turn's start then reach viewers as one message,
        rendered once, not two (in a kb-debate 40-140 ms apart, so nearly every turn was two)."""
        self._released.clear()

    def release(self) -> None:
        self._released.set()

    def put(self, seqs: list[int]) -> None:
        for seq in seqs:
            self._queue.put_nowait(seq)

    def close(self) -> None:
        """Publish what is queued at once, then end `publish`."""
        self._closing.set()
        self._queue.put_nowait(None)

    async def publish(self) -> None:
        """Publish in seq order; of a burst of events only the last carries the (costlier) status widgets."""
        done = False
        while not done:
            batch = [await self._queue.get()]
            # Let the runner start what it just decided before rendering competes with it for the interpreter;
            # a burst (a stage's turn_started events) then becomes one batch. No wait once the runner stops.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), PUBLISH_DELAY_SECONDS)
            if not self._released.is_set() and not self._closing.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(
                        self._released.wait(), PUBLISH_HOLD_SECONDS - PUBLISH_DELAY_SECONDS
                    )
            while not self._queue.empty():
                batch.append(self._queue.get_nowait())
            done = None in batch
            # Parallel turns commit in one order and may reach the outbox in another: published in seq order.
            # (A seq twice: a write's transaction rolled back and a later one appended under the same seq.)
            seqs = sorted({seq for seq in batch if seq is not None})
            try:
                await aevent_publish(run_id=self.run_id, seqs=seqs)
            except Exception:  # best effort: viewers replay what they miss from the database
                self._failing.failed(f"events {seqs}")
            else:
                self._failing.worked()


class FailureLog:
    """A best-effort send that fails is logged once with its cause, then once when it works again: a channel-layer
    outage would otherwise write a traceback per flush (several a second) per debate."""

    def __init__(self, run_id: int, what: str) -> None:
        self.run_id, self.what, self.failures = run_id, what, 0

    def failed(self, detail: str = "") -> None:
        self.failures += 1
        if self.failures == 1:
            log.warning(
                "run %s: %s failed %s(best effort, carrying on)",
                self.run_id,
                self.what,
                detail and f"({detail}) ",
                exc_info=True,
            )

    def worked(self) -> None:
        if self.failures:
            log.warning("run %s: %s works again after %d failures", self.run_id, self.what, self.failures)
            self.failures = 0


class LiveFrames:
    """The latest frame of every turn streaming, sent as one message per run per flush interval: the parallel
    turns of a stage then cost each viewer one frame, not one per turn (and the server one send per viewer)."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self._parts: dict[int, dict[str, Any]] = {}  # first_seq -> the turn's latest live frame, unsent
        self._sender: asyncio.Task[None] | None = None
        self._first_text = asyncio.Event()  # a turn's first text: sent without waiting out the interval
        self._failing = FailureLog(run_id, "sending live frames")

    def offer(self, layer: Any, part: dict[str, Any], *, first_text: bool = False) -> None:
        self._parts[part["first_seq"]] = part
        if first_text:
            self._first_text.set()
        if self._sender is None or self._sender.done():
            self._sender = asyncio.create_task(self._send(layer))

    def drop(self, first_seq: int) -> None:
        """The turn's stream is over: the commit's (or retry's) event shows the turn from then on."""
        self._parts.pop(first_seq, None)

    def stop(self) -> None:
        self._parts.clear()
        if self._sender is not None:
            self._sender.cancel()

    async def _send(self, layer: Any) -> None:
        while self._parts:
            parts, self._parts = list(self._parts.values()), {}
            try:
                await layer.group_send(run_group(self.run_id), {"type": "turn.delta", "parts": parts})
            except Exception:  # best effort: the next frame, or the commit's event, brings the text
                self._failing.failed()
            else:
                self._failing.worked()
            self._first_text.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._first_text.wait(), conf("FLUSH_SECONDS"))


async def turn_stream(
    backend: AgentBackend, request: AgentRequest, claimed: ClaimedTurn, attempt: int, live: LiveFrames
) -> Result:
    """One call: its text is saved now and then (for a runner that takes over) and offered as live frames."""
    layer = get_channel_layer()
    flush_every = conf("FLUSH_SECONDS")
    save_every = conf("PARTIAL_SAVE_SECONDS")
    names = {handle: seat.name for handle, seat in request.view.seats.items()}
    text = ""
    first_token_at = None
    last_flush = time.monotonic()
    last_save = -math.inf  # the first flush saves
    # Until a frame has shown text, a delta that may bring the first text is flushed at once.
    text_shown = False
    result: Result | None = None
    crash_point("before_first_token")

    async def flush(*, first_text: bool = False) -> None:
        nonlocal last_flush, last_save
        last_flush = time.monotonic()
        if last_flush - last_save >= save_every:
            # Off the runner's database thread: partial saves of parallel turns must not queue behind commits.
            try:
                await database_sync_to_async(turn_flush, thread_sensitive=False, executor=PARTIAL_SAVES)(
                    claimed.turn_id, attempt, text, first_token_at
                )
            except Exception as error:
                # A partial save only helps a runner that takes over: the database being away a while must not
                # cost the call under way (the commit saves the whole text, retried until the database is back).
                if not db_error_is_transient(error):
                    raise
                log.warning(
                    "run %s: saving the partial text of %s failed: %r", live.run_id, request.step.key, error
                )
            last_save = last_flush
        if layer is not None:
            try:
                html = turn_live_frame(
                    key=request.step.key,
                    task=request.step.task,
                    protocol=request.protocol,
                    text=text,
                    names=names,
                )
            except Exception:  # a live preview must never fail the debate; the commit renders the turn
                log.exception("run %s: rendering the live frame of %s failed", live.run_id, request.step.key)
            else:
                live.offer(
                    layer,
                    {"first_seq": claimed.first_seq, "attempt": attempt, "html": html},
                    first_text=first_text,
                )
        crash_point("mid_stream")

    try:
        async for item in backend.stream(request):
            if isinstance(item, Delta):
                if first_token_at is None:
                    first_token_at = timezone.now()
                text += item.text
                if not text_shown and FIRST_TEXT.search(text):
                    text_shown = True
                    await flush(first_text=True)
                elif time.monotonic() - last_flush >= flush_every:
                    await flush()
            elif isinstance(item, Result):
                result = item
    finally:
        live.drop(claimed.first_seq)
    if result is None:
        raise BackendError("The backend ended the stream without a result.")
    # No final flush: the commit saves the whole text and its event re-renders the finished turn.
    return result
