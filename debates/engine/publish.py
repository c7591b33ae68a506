"""The publish port. The engine announces committed events and streaming text to the run's channel group; it never
renders. The web layer registers, when the app starts, how an event becomes the message its viewers get (the
frames, rendered once for every viewer) and how a streaming turn's text becomes its live frame.

The channel layer is a wake-up bus, not a log: a message may be lost, and a viewer replays from the events table.
Everything published here is committed first: `events_publish` defers to `transaction.on_commit`."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction


class EventRenderer(Protocol):
    def __call__(self, *, run_id: int, seqs: list[int]) -> list[dict[str, Any]]: ...


class LiveFrameRenderer(Protocol):
    def __call__(
        self, *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
    ) -> str: ...


# Rendering frames, kept off the runner's database thread (partial saves have a pool of their own,
# stream.PARTIAL_SAVES): a few threads for the whole process, not an event loop's default executor. A thread keeps
# its database connection checked out of the pool between calls, so threads that came and went with each event
# loop (one per test) drained the pool.
OFF_THREAD = ThreadPoolExecutor(max_workers=4, thread_name_prefix="disputa-off-thread")


def _bare_messages(*, run_id: int, seqs: list[int]) -> list[dict[str, Any]]:
    """Without a renderer (no web layer in this process): a wake-up per event; viewers read the rest."""
    return [{"type": "run.event", "seq": seq, "html": "", "panels": []} for seq in sorted(seqs)]


def _bare_live_frame(**_: Any) -> str:
    return ""


_renderers: dict[str, Callable[..., Any]] = {"events": _bare_messages, "live": _bare_live_frame}


def renderers_register(*, events: EventRenderer, live: LiveFrameRenderer) -> None:
    """Called once by the web layer at start (debates.apps)."""
    _renderers["events"] = events
    _renderers["live"] = live


def run_group(run_id: int) -> str:
    return f"run-{run_id}"


def event_messages(*, run_id: int, seqs: list[int]) -> list[dict[str, Any]]:
    """The messages announcing a burst of committed events, in seq order."""
    return list(_renderers["events"](run_id=run_id, seqs=seqs))


def event_message(*, run_id: int, seq: int) -> dict[str, Any]:
    return event_messages(run_id=run_id, seqs=[seq])[0]


def burst_message(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """One group message for a burst of events (`run.events`): each viewer then gets the burst in one send, and
    the server handles one message, not one per event (a stage's start is several events, its state, its status
    and each turn's start). The viewers' panels, the same for every event of the burst, go once."""
    viewer_panels = next((m["viewer_panels"] for m in messages if "viewer_panels" in m), None)
    burst: dict[str, Any] = {
        "type": "run.events",
        "events": [{"seq": m["seq"], "html": m["html"], "panels": m["panels"]} for m in messages],
    }
    if viewer_panels is not None:
        burst["viewer_panels"] = viewer_panels
    return burst


def turn_live_frame(
    *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
) -> str:
    """The live frame of a streaming turn's text so far."""
    return str(_renderers["live"](key=key, task=task, protocol=protocol, text=text, names=names))


def events_publish(*, run_id: int, seqs: list[int]) -> None:
    """Announce a burst of events from sync code (services), rendered in one go, once the transaction that appended
    them has committed (at once outside a transaction). Delivery is best effort; viewers replay gaps."""

    def send() -> None:
        layer = get_channel_layer()
        if layer is None or not seqs:
            return
        messages = event_messages(run_id=run_id, seqs=seqs)
        if messages:
            async_to_sync(layer.group_send)(run_group(run_id), burst_message(messages))

    transaction.on_commit(send)


async def aevent_publish(*, run_id: int, seqs: list[int]) -> None:
    """Publish a burst of committed events from async code (the runner), in seq order. Rendered in one hop to a
    thread of its own (and its own connection: rendering must not hold up the runner's database thread)."""
    from channels.db import database_sync_to_async

    layer = get_channel_layer()
    if layer is None or not seqs:
        return
    messages = await database_sync_to_async(event_messages, thread_sensitive=False, executor=OFF_THREAD)(
        run_id=run_id, seqs=seqs
    )
    if messages:
        await layer.group_send(run_group(run_id), burst_message(messages))
