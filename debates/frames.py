"""Server -> browser frames. Every frame is HTML rendered from the run page's own partials, and every top-level
element carries an explicit hx-swap-oob, so the page and the stream share one template (htmx 2 and 4 alike)."""

from __future__ import annotations

from typing import Any

from django.template.loader import render_to_string

from debates import selectors
from debates.models import Run, RunEvent

RUN_TEMPLATE = "debates/run_detail.html"
TURN_EVENTS = {"turn_started", "turn_restarted", "turn_committed", "turn_failed"}


def _partial(name: str, context: dict[str, Any]) -> str:
    return render_to_string(f"{RUN_TEMPLATE}#{name}", context)


def turn_live_frame(
    *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
) -> str:
    """The streaming body of a turn, re-rendered from the JSON parsed so far. No database access."""
    card = selectors.live_card(key=key, task=task, protocol=protocol, text=text, names=names)
    return _partial("turn-live", {"card": card, "oob": True})


def status_frame(run: Run) -> str:
    return _partial("run-status", {**selectors.run_status_context(run), "oob": True}) + _partial(
        "cost", {**selectors.cost_context(run), "oob": True}
    )


def event_frame(event: RunEvent, *, with_status: bool = True) -> tuple[str, bool]:
    """The frame for one event, from the current state of what it touched; True if per-user panels changed.
    Status widgets are left out of all but the last of a burst (`with_status`); they show current state."""
    run = Run.objects.get(pk=event.run_id)
    parts = []
    if event.kind in TURN_EVENTS:
        turn = run.turns.select_related("seat").get(key=event.payload["key"])
        card = selectors.turn_card(turn, run.protocol, selectors.seat_names(run))
        if event.kind == "turn_started":
            parts.append(
                '<div hx-swap-oob="beforeend:#transcript">' + _partial("turn", {"card": card}) + "</div>"
            )
        else:
            parts.append(_partial("turn", {"card": card, "oob": True}))
    panels = event.kind not in TURN_EVENTS
    if with_status or panels:
        parts.append(status_frame(run))
    if panels:
        parts.append(_partial("outcome", {"run": run, "oob": True}))
    return "".join(parts), panels


def snapshot_frame(run_id: int, user: Any) -> tuple[str, int]:
    """Everything live on the run page as of seq S; events after S follow. Turns first shown after S are left
    out (their events append them), so nothing is missing and nothing doubled whatever the isolation level."""
    run = Run.objects.get(pk=run_id)
    seq = run.last_seq
    cards = selectors.run_turn_cards(run, upto_seq=seq)
    html = (
        status_frame(run)
        + _partial("transcript", {"cards": cards, "oob": True})
        + _partial("outcome", {"run": run, "oob": True})
        + panels_frame(run_id, user)
    )
    return html, seq


def panels_frame(run_id: int, user: Any) -> str:
    run = Run.objects.get(pk=run_id)
    return _partial("moderator", {**selectors.moderator_context(run, user), "oob": True})


def replay_frames(run_id: int, after_seq: int, user: Any) -> tuple[str, int]:
    """Frames of the events after `after_seq`, from the database, for a viewer who missed a message."""
    events = list(RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq).order_by("seq"))
    if not events:
        return "", after_seq
    parts, panels = [], False
    for event in events:
        html, event_panels = event_frame(event, with_status=event is events[-1])
        parts.append(html)
        panels = panels or event_panels
    if panels:
        parts.append(panels_frame(run_id, user))
    return "".join(parts), events[-1].seq
