"""Server -> browser frames. Every frame is HTML rendered from the run page's own partials, and every top-level
element carries an explicit hx-swap-oob, so the page and the stream share one template (htmx 2 and 4 alike).

A protocol may add panels to the run page (selectors.panels.run_panel_specs, e.g. the kb-debate's #ledger and
#approvals): shared ones are re-rendered once per event that changes them, per-user ones (holding controls)
with the moderator panel for each viewer."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any, cast

from django.core.cache import cache, caches
from django.template.loader import render_to_string
from django.utils import timezone

from debates.engine import registry
from debates.engine.view import run_reads_shared
from debates.models import Run, RunEvent, RunStatus, Seat, Turn
from debates.platform.conf import conf
from debates.platform.fixed_reads import (
    columns_count,
    model_columns,
    model_from_row,
    placeholders,
    related_cache,
    statement_rows,
)
from debates.selectors import runs as selectors
from debates.selectors.cards import (
    body_template,
    live_card,
    round_label,
    round_of,
    round_openers,
    run_transcript,
    seat_names,
    turn_card,
)
from debates.selectors.panels import (
    MUTATION_EVENT,
    moderator_context,
    run_panel_specs,
    run_panels,
    run_protocol_context,
)
from kb.models import KnowledgeBase

RUN_TEMPLATE = "debates/run_detail.html"
INTEGRITY_TEMPLATE = "debates/integrity.html"
TURN_EVENTS = {"turn_started", "turn_restarted", "turn_held", "turn_committed", "turn_failed"}


def _partial(name: str, context: dict[str, Any]) -> str:
    return render_to_string(f"{RUN_TEMPLATE}#{name}", context)


def _panel(panel: dict[str, Any]) -> str:
    return render_to_string(panel["template"], {"panel": panel, "kb": panel["kb"], "oob": True})


def turn_live_frame(
    *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
) -> str:
    """The streaming body of a turn, re-rendered from the JSON parsed so far. No database access."""
    card = live_card(key=key, task=task, protocol=protocol, text=text, names=names)
    return _partial("turn-live", {"card": card, "oob": True})


def status_frame(run: Run) -> str:
    return _partial("run-status", {**selectors.run_status_context(run), "oob": True}) + _partial(
        "cost", {**selectors.cost_context(run), "oob": True}
    )


def kb_marks_frame(run: Run, kb: dict[str, Any] | None, event: RunEvent | None = None) -> str:
    """The KB ratings shown next to every cited argument (class `kbs-<arg>`) for the arguments this debate has
    re-rated, and the state shown next to a proposal in its turn (class `mstate-<id>`) after a decision."""
    if kb is None:
        return ""
    html = "".join(
        render_to_string(
            f"{body_template(run.protocol, 'kb-status')}",
            {"kb": kb, "a": arg["id"], "info": arg, "mark_oob": True},
        )
        for arg in kb["changed"]
    )
    if event is not None and event.kind == MUTATION_EVENT:
        state = next(
            (
                m
                for ms in kb["mutations_by_turn"].values()
                for m in ms
                if m["id"] == event.payload.get("mutation")
            ),
            None,
        )
        if state is not None:
            html += render_to_string(
                body_template(run.protocol, "mutation-state"),
                {"kb": kb, "state": state, "mark_oob": True},
            )
    return html


def event_frame(event: RunEvent, *, with_status: bool = True) -> tuple[str, bool]:
    """The frame for one event, from the current state of what it touched; True if per-user panels changed."""
    return event_frames([event], with_status=with_status)[0]


@run_reads_shared()
def event_frames(
    events: list[RunEvent], *, with_status: bool = True, run: Run | None = None
) -> list[tuple[str, bool]]:
    """The frames of a burst of events of one run, in the order given, rendered from one read of the run (its
    panels, seat names, protocol context and the turns the events touched); each frame shows the current state of
    what its event touched. The widgets that show the run's current state are rendered once for the burst: the
    status in the last frame (or, `with_status` false, in the last that changed the panels), the outcome and the
    integrity panel in the last that changed the panels, a shared panel in the last that changed it. Every frame
    of a burst is kept for replays before any is sent, so a viewer who misses some still ends on those widgets.
    `run`: the run as just read, when the caller has it."""
    run = run if run is not None else Run.objects.get(pk=events[0].run_id)
    specs = run_panel_specs(run)
    panels_by_event = [
        e.kind not in TURN_EVENTS or any(p.per_user and e.kind in p.refresh_on for p in specs) for e in events
    ]
    last_panels = max((i for i, panels in enumerate(panels_by_event) if panels), default=None)
    status_at = len(events) - 1 if with_status else last_panels
    shared_by_event = [[p for p in specs if not p.per_user and e.kind in p.refresh_on] for e in events]
    # A shared panel shows the run's current state, the same for every event of the burst: rendered once, in the
    # last frame of the burst that changes it.
    panel_at = {p.id: index for index, shared in enumerate(shared_by_event) for p in shared}
    kb_by_event = [
        bool(shared) or e.kind == "turn_committed" for e, shared in zip(events, shared_by_event, strict=True)
    ]
    kb = run_protocol_context(run) if any(kb_by_event) else None
    keys = [e.payload["key"] for e in events if e.kind in TURN_EVENTS]
    turns = {t.key: t for t in burst_turns_read(run.pk, keys)} if keys else {}
    names = seat_names(run) if keys else {}
    openers = round_openers(run) if any(e.kind == "turn_started" for e in events) else set()
    frames = []
    for index, (event, shared, needs_kb, panels) in enumerate(
        zip(events, shared_by_event, kb_by_event, panels_by_event, strict=True)
    ):
        event_kb = kb if needs_kb else None
        parts = []
        if event.kind in TURN_EVENTS:
            card = turn_card(turns[event.payload["key"]], run.protocol, names, event_kb)
            if event.kind == "turn_started":
                turn = turns[event.payload["key"]]
                if turn.key in openers:  # the turn's round begins with it
                    labels = {stage.id: stage.label for stage in registry.get(run.protocol).stages}
                    group = {
                        "dom_id": round_of(turn.key, turn.stage),
                        "label": round_label(turn.key, turn.stage, labels),
                        "cards": [card],
                    }
                    parts.append(
                        '<div hx-swap-oob="beforeend:#transcript">'
                        + _partial("round", {"round": group})
                        + "</div>"
                    )
                else:
                    target = f"#{round_of(turn.key, turn.stage)}-turns"
                    parts.append(
                        f'<div hx-swap-oob="beforeend:{target}">'
                        + _partial("turn", {"card": card})
                        + "</div>"
                    )
            else:
                parts.append(_partial("turn", {"card": card, "oob": True}))
        if shared:
            ids = {p.id for p in shared if panel_at[p.id] == index}
            if ids:
                parts += [_panel(p) for p in run_panels(run, per_user=False, kb=event_kb) if p["id"] in ids]
            parts.append(kb_marks_frame(run, event_kb, event))
        if index == status_at:
            parts.append(status_frame(run))
        if index == last_panels:
            parts.append(_partial("outcome", {"run": run, "oob": True}))
            parts.append(integrity_frame(run))
        frames.append(("".join(parts), panels))
    return frames


def integrity_frame(run: Run) -> str:
    """The integrity panel: its signals appear when the run completes and follow the human's pick. Until then it
    is the same placeholder for every run, rendered once per process (it is sent with most bursts)."""
    if run.status != RunStatus.COMPLETED:
        return _integrity_placeholder(run)
    return render_to_string(INTEGRITY_TEMPLATE, {"run": run, "oob": True})


_integrity_placeholders: list[str] = []


def _integrity_placeholder(run: Run) -> str:
    if not _integrity_placeholders:
        _integrity_placeholders.append(render_to_string(INTEGRITY_TEMPLATE, {"run": run, "oob": True}))
    return _integrity_placeholders[0]


@functools.cache
def live_state_frame(live: bool) -> str:
    """The page's connection badge and notice: "live", or "live updates interrupted — catching up" while the
    channel layer carries nothing and the page's events come from the database (debates.web.layer_watch)."""
    return _partial("live-state", {"interrupted": not live, "oob": True})


@run_reads_shared()
def snapshot_frame(run_id: int, user: Any, *, page_seq: int | None = None) -> tuple[str, int]:
    """Everything live on the run page as of seq S; events after S follow. Turns first shown after S are left
    out (their events append them), so nothing is missing and nothing doubled whatever the isolation level.
    `page_seq`: the seq the page was rendered at; if nothing happened since, its transcript is current and stays
    as the reader has it (a long one with the parts they loaded). All but the viewer's own panels is the same for
    everyone who connects while the run is at S: rendered once for them (kept STATUS_FRAME_SECONDS, so a KB
    revised meanwhile by another run shows within that)."""
    run = Run.objects.get(pk=run_id)
    seq = run.last_seq
    with_transcript = page_seq != seq
    key = f"snapshot:{run.pk}:{run.created_at.timestamp()}:{seq}:{with_transcript}"
    shared = caches["fragments"].get(key)
    kb = None
    if shared is None:
        kb = run_protocol_context(run)
        transcript = (
            _partial("transcript", {"rounds": run_transcript(run, kb=kb, upto_seq=seq), "oob": True})
            if with_transcript
            else ""
        )
        shared = (
            status_frame(run)
            + transcript
            + _partial("outcome", {"run": run, "oob": True})
            + integrity_frame(run)
            + "".join(_panel(p) for p in run_panels(run, per_user=False, kb=kb))
        )
        caches["fragments"].set(key, shared, conf("STATUS_FRAME_SECONDS"))
    return shared + panels_frame(run_id, user, run=run, kb=kb), seq


def panels_frame(run_id: int, user: Any, *, run: Run | None = None, kb: dict[str, Any] | None = None) -> str:
    """The panels rendered for one viewer: the moderator panel and the protocol's per-user panels. Without the
    moderate permission they hold no control, so every such viewer sees the same: rendered once per state of the
    run (every change of which is an event, so last_seq names it) for all of them."""
    if selectors.user_can_moderate(user):
        return _panels_frame(run or Run.objects.get(pk=run_id), user, kb)
    if run is None:
        run = Run.objects.only("pk", "created_at", "last_seq").get(pk=run_id)
    key = f"viewer-panels:{run.pk}:{run.created_at.timestamp()}:{run.last_seq}"
    html = caches["fragments"].get(key)
    if html is None:
        if run.get_deferred_fields():  # (refresh_from_db would keep them deferred: a query for each one read)
            run = Run.objects.get(pk=run.pk)
        html = _panels_frame(run, user, kb)
        caches["fragments"].set(key, html, conf("EVENT_FRAME_SECONDS"))
    return html


def _panels_frame(run: Run, user: Any, kb: dict[str, Any] | None) -> str:
    context = {**moderator_context(run, user, kb=kb), "oob": True}
    # The decision slot comes live until a decision is recorded; from then on the page that recorded it keeps its
    # confirmation (the decision itself shows in the outcome, for everyone).
    pick = "" if run.human_pick else _partial("pick", context)
    return (
        _partial("moderator", context)
        + pick
        + "".join(_panel(p) for p in run_panels(run, user, per_user=True, kb=kb))
    )


# How long frames are kept: the DISPUTA settings EVENT_FRAME_SECONDS, STATUS_FRAME_SECONDS and
# UNPUBLISHED_GRACE_SECONDS. Published frames are kept in the default cache (per process by default, shared by all
# processes with Redis: a worker publishes, web processes replay); what every viewer of a process asks for at once
# (viewers' panels, the status) is kept in the process ("fragments").


@run_reads_shared()
def replay_frames(run_id: int, after_seq: int, user: Any, *, layer_down: bool = False) -> tuple[str, int]:
    """Frames of the events after `after_seq`, for a viewer who missed a message: each event's frame as it was
    published (kept by event_frames_keep, before its message was sent), then the status once caught up. A
    dropped message is usually dropped for every viewer of the run, who then replay the same events: they share
    the kept frames instead of each rendering them. An event not kept has not been published yet (its message is
    on its way: the replay stops before it) unless it is older than UNPUBLISHED_GRACE_SECONDS (its publisher died,
    or the frame expired), when it is rendered from the database. While the channel layer is down (`layer_down`)
    no message is on its way: every event not kept is rendered at once."""
    events = list(
        RunEvent.objects.filter(run_id=run_id, seq__gt=after_seq)
        .order_by("seq")
        .values_list("pk", "seq", "created_at")
    )
    keys = [_event_frame_key(run_id, seq, created_at) for _, seq, created_at in events]
    kept = cache.get_many(keys) if keys else {}
    published_by = timezone.now() - timedelta(seconds=0 if layer_down else conf("UNPUBLISHED_GRACE_SECONDS"))
    parts, panels, last_key, last_seq = [], False, "", after_seq
    for (pk, seq, created_at), key in zip(events, keys, strict=True):
        frame = kept.get(key)
        if frame is None:
            if created_at > published_by:
                break
            frame = event_frame(RunEvent.objects.get(pk=pk), with_status=False)
        html, event_panels = frame
        parts.append(html)
        panels = panels or event_panels
        last_key, last_seq = key, seq
    if not parts:
        return "", after_seq
    if last_seq == events[-1][1]:  # caught up: the status (current state) agrees with the transcript
        status_key = "status-" + last_key
        status = caches["fragments"].get(status_key)
        if status is None:
            status = status_frame(Run.objects.get(pk=run_id))
            caches["fragments"].set(status_key, status, conf("STATUS_FRAME_SECONDS"))
        parts.append(status)
    if panels:
        parts.append(panels_frame(run_id, user))
    return "".join(parts), last_seq


def _event_frame_key(run_id: int, seq: int, created_at: Any) -> str:
    # The event's time as well: a test database that rolls back hands out the same run ids and seqs again.
    return f"event-frame:{run_id}:{seq}:{created_at.timestamp()}"


def event_frames_keep(events: list[RunEvent], frames: list[tuple[str, bool]]) -> None:
    cache.set_many(
        {
            _event_frame_key(e.run_id, e.seq, e.created_at): frame
            for e, frame in zip(events, frames, strict=True)
        },
        conf("EVENT_FRAME_SECONDS"),
    )


# What the burst's KB is read without: its import log and data tree, which no frame shows.
KB_NOT_READ = ("data", "log")


def burst_events_read(run_id: int, seqs: list[int]) -> list[RunEvent]:
    """A burst's events in seq order, each with its run and the run's KB, in one fixed statement: read with every
    burst of every live debate, where a round trip is 10-15 ms of a busy worker's waiting and the ORM's compiling
    of this read cost several times its execution (debates.platform.fixed_reads)."""
    if not seqs:
        return []
    event, run, kb = RunEvent._meta.db_table, Run._meta.db_table, KnowledgeBase._meta.db_table
    statement = (
        f"SELECT {model_columns(RunEvent, 'e')}, {model_columns(Run, 'r')}, "
        f"{model_columns(KnowledgeBase, 'k', KB_NOT_READ)} "
        f'FROM "{event}" e JOIN "{run}" r ON r."id" = e."run_id" LEFT JOIN "{kb}" k ON k."id" = r."kb_id" '
        f'WHERE e."run_id" = %s AND e."seq" IN ({placeholders(len(seqs))}) ORDER BY e."seq", e."id"'
    )
    rows = statement_rows(statement, [run_id, *seqs])
    ends = columns_count(RunEvent), columns_count(RunEvent) + columns_count(Run)
    if not rows:
        return []
    # Every row carries the same run: made once.
    read_run = cast(Run, model_from_row(Run, rows[0][ends[0] : ends[1]]))
    related_cache(read_run, "kb", model_from_row(KnowledgeBase, rows[0][ends[1] :], KB_NOT_READ))
    events = []
    for row in rows:
        read_event = cast(RunEvent, model_from_row(RunEvent, row[: ends[0]]))
        related_cache(read_event, "run", read_run)
        events.append(read_event)
    return events


def burst_turns_read(run_id: int, keys: list[str]) -> list[Turn]:
    """The turns a burst's events name, each with its seat, in one fixed statement (as burst_events_read)."""
    turn, seat = Turn._meta.db_table, Seat._meta.db_table
    statement = (
        f"SELECT {model_columns(Turn, 't')}, {model_columns(Seat, 's')} "
        f'FROM "{turn}" t JOIN "{seat}" s ON s."id" = t."seat_id" '
        f'WHERE t."run_id" = %s AND t."key" IN ({placeholders(len(keys))})'
    )
    rows = statement_rows(statement, [run_id, *keys])
    end = columns_count(Turn)
    turns = []
    for row in rows:
        read_turn = cast(Turn, model_from_row(Turn, row[:end]))
        related_cache(read_turn, "seat", model_from_row(Seat, row[end:]))
        turns.append(read_turn)
    return turns


# --- the renderer the engine's publish port calls (registered in debates.apps) ---------------------------------


@run_reads_shared()
def event_messages_render(*, run_id: int, seqs: list[int]) -> list[dict[str, Any]]:
    """The messages of a burst of events, in seq order, with their frames rendered once for every viewer from one
    read of the run; only the last carries the (costlier) status widgets. Each frame is kept for replays before
    its message is sent."""
    from django.contrib.auth.models import AnonymousUser

    events = burst_events_read(run_id, seqs)
    if not events:
        return []
    run = events[0].run
    frames = event_frames(events, run=run)
    event_frames_keep(events, frames)
    # What every viewer without the moderate permission sees in the panels (no control), as the burst leaves the
    # run: rendered here once, so the consumers of a run's many viewers need not each read the database for it.
    viewer_panels = (
        panels_frame(run_id, AnonymousUser(), run=run) if any(panels for _, panels in frames) else ""
    )
    messages = []
    for event, (html, panels) in zip(events, frames, strict=True):
        message: dict[str, Any] = {"type": "run.event", "seq": event.seq, "html": html, "panels": panels}
        if panels:
            message["viewer_panels"] = viewer_panels
        messages.append(message)
    return messages


def needs_you_count_frame(count: int) -> str:
    """Every page's "Needs you" count, swapped in out of band."""
    return render_to_string("base.html#needs-you-count", {"needs_you_count": count, "oob": True})
