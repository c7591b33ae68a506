"""The attention bus: after a commit that may change what waits for a person (a run's status, a committed turn that
proposes a KB change, a decision), every open page's "Needs you" count is told to look again. A wake-up only: the
pages' consumers recount from the database (debates.selectors.inbox)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

from debates.contract import MUTATION_PROPOSED_EVENT

ATTENTION_GROUP = "needs-you"
# The events after which what waits for a person may have changed (a run's status: a seat, a consent, a budget
# or a pick awaited; a KB change proposed or decided). Not a turn's commit: it changes none of these by itself.
ATTENTION_KINDS = frozenset({"run_status", MUTATION_PROPOSED_EVENT, "mutation_decided", "pick_recorded"})


# The event loop of the runner whose write is committing, on the write's database thread (`attention_sent_on`).
_runner_loop: ContextVar[asyncio.AbstractEventLoop | None] = ContextVar("attention_runner_loop", default=None)
_sending: set[asyncio.Task[None]] = set()  # (a task nothing refers to may be collected before it ends)


@contextmanager
def attention_sent_on(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Inside the block (a runner's write, on its database thread) a wake-up is handed to the runner's `loop` and
    sent from there, not waited for: waiting held the debate's next write back by a trip to the loop and the layer
    with every commit (3 ms at p50, 15 ms at p90 in `bench fanout` at 1,000 sockets)."""
    token = _runner_loop.set(loop)
    try:
        yield
    finally:
        _runner_loop.reset(token)


def _send() -> None:
    layer = get_channel_layer()
    if layer is None:
        return
    loop = _runner_loop.get()
    if loop is not None:
        # (A loop that has closed raises: its runner is gone, and the pages recount on their next wake-up.)
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(_send_from_loop, layer)
        return
    try:
        async_to_sync(layer.group_send)(ATTENTION_GROUP, {"type": "attention.changed"})
    except Exception:  # best effort: a page recounts on its next load or wake-up
        return


def _send_from_loop(layer: Any) -> None:
    task = asyncio.ensure_future(layer.group_send(ATTENTION_GROUP, {"type": "attention.changed"}))
    _sending.add(task)
    task.add_done_callback(_sent)


def _sent(task: asyncio.Task[None]) -> None:
    _sending.discard(task)
    if not task.cancelled():
        task.exception()  # best effort: retrieved, so a failure is not reported as never retrieved


def attention_ping() -> None:
    """Wake the "Needs you" counts once the current transaction commits (at once outside one). The consumers
    coalesce a burst of wake-ups into one recount."""
    transaction.on_commit(_send)
