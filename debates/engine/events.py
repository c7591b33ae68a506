"""Run events: appended in the committing transaction with a strictly increasing per-run seq, published to the
run's channel group only after commit. The channel layer is a wake-up bus; the events table is the log."""

from __future__ import annotations

from typing import Any

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction
from django.db.models import F

from debates.models import Run, RunEvent


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def event_append(*, run_id: int, kind: str, payload: dict[str, Any] | None = None) -> int:
    """Append an event; must run inside the transaction that commits the change it describes."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_append must be called inside transaction.atomic()")
    # The UPDATE takes the run row's write lock until commit, so concurrent appends get distinct, ordered seqs.
    Run.objects.filter(pk=run_id).update(last_seq=F("last_seq") + 1)
    seq = Run.objects.filter(pk=run_id).values_list("last_seq", flat=True).get()
    RunEvent.objects.create(run_id=run_id, seq=seq, kind=kind, payload=payload or {})
    return seq


def event_message(*, run_id: int, seq: int) -> dict[str, Any]:
    """The channel-layer message announcing event `seq`, with its frame rendered once for every viewer."""
    return event_messages(run_id=run_id, seqs=[seq])[0]


def event_publish(*, run_id: int, seq: int) -> None:
    """Publish after commit from sync code (views, services). Delivery is best effort; viewers replay gaps."""
    layer = get_channel_layer()
    if layer is None:
        return
    async_to_sync(layer.group_send)(run_group(run_id), event_message(run_id=run_id, seq=seq))


def event_messages(*, run_id: int, seqs: list[int]) -> list[dict[str, Any]]:
    """The messages of a burst of events, in seq order, with their frames rendered once for every viewer from one
    read of the run; only the last carries the (costlier) status widgets. Each frame is kept for replays before
    its message is sent."""
    from django.contrib.auth.models import AnonymousUser

    from debates.web.frames import event_frames, event_frames_keep, panels_frame

    events = list(RunEvent.objects.filter(run_id=run_id, seq__in=seqs).order_by("seq"))
    if not events:
        return []
    frames = event_frames(events)
    event_frames_keep(events, frames)
    messages = []
    for event, (html, panels) in zip(events, frames, strict=True):
        message: dict[str, Any] = {"type": "run.event", "seq": event.seq, "html": html, "panels": panels}
        if panels:
            # What every viewer without the moderate permission sees in the panels (no control): rendered here
            # once, so the consumers of a run's many viewers need not each read the database for it.
            message["viewer_panels"] = panels_frame(run_id, AnonymousUser())
        messages.append(message)
    return messages


async def aevent_publish(*, run_id: int, seqs: list[int]) -> None:
    """Publish a burst of committed events from async code (the runner), in seq order. Rendered in one hop to a
    thread of its own (and its own connection: rendering must not hold up the runner's database thread)."""
    from channels.db import database_sync_to_async

    layer = get_channel_layer()
    if layer is None or not seqs:
        return
    messages = await database_sync_to_async(event_messages, thread_sensitive=False)(run_id=run_id, seqs=seqs)
    group = run_group(run_id)
    for message in messages:
        await layer.group_send(group, message)
