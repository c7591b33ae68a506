"""Reads: the run's turn cards (finished, streaming and live), as the transcript renders them."""

from __future__ import annotations

import re
from typing import Any

from django.core.cache import caches
from django.core.cache.utils import make_template_fragment_key
from django.urls import reverse
from pydantic_core import from_json

from debates.engine import registry
from debates.engine.view import run_seats, run_view_load
from debates.models import Run, Turn, TurnStatus, turn_dom_id
from debates.platform.rendering import markdown_streaming_mend
from kb.models import Revision

# The name of the {% cache %} fragment of a finished turn card in run_detail.html's `transcript` partial.
TURN_CARD_FRAGMENT = "turn-card"


def partial_json(text: str) -> Any:
    """Parse streamed JSON as far as it goes (unfinished strings and lists included)."""
    if not text:
        return {}
    try:
        return from_json(text, allow_partial="trailing-strings")
    except ValueError:
        return {}


def streaming_data(text: str) -> Any:
    """A streaming turn's data as its card shows it: the JSON parsed so far, the string still being written (the
    last one, as JSON streams in order) mended so that its markdown renders as it will once finished."""
    data = partial_json(text)
    container: Any = None
    key: Any = None
    node = data
    while isinstance(node, dict | list) and node:
        container, key = node, (next(reversed(node)) if isinstance(node, dict) else len(node) - 1)
        node = container[key]
    if isinstance(node, str) and container is not None:
        container[key] = markdown_streaming_mend(node)
    return data


def body_template(protocol: str, task: str) -> str:
    return f"{registry.get(protocol).template}#{task}"


def seat_names(run: Run) -> dict[str, str]:
    return {seat.handle: seat.name for seat in run_seats(run)}


def turn_card(
    turn: Turn, protocol: str, names: dict[str, str] | None = None, kb: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A turn as the page shows it. `kb`: the run's protocol context (run_protocol_context), which the body
    looks cited arguments, ledger entries and turn numbers up in; None renders the body from its data alone."""
    seat = turn.seat
    streaming = turn.status == TurnStatus.STREAMING
    data = streaming_data(turn.raw_text) if streaming or turn.payload is None else turn.payload
    duration = None
    if turn.finished_at and turn.started_at:
        duration = (turn.finished_at - turn.started_at).total_seconds()
    return {
        "dom_id": turn.dom_id,
        "key": turn.key,
        "seat_name": seat.name,
        "seat_handle": seat.handle,
        "role": seat.role,
        "stage": turn.stage,
        "task": turn.task,
        "task_label": registry.get(protocol).task_label(turn.task),
        "status": turn.status,
        "attempt": turn.attempt,
        "human": turn.human,
        "backend": turn.backend,
        "model": turn.model,
        "input_tokens": turn.input_tokens,
        "output_tokens": turn.output_tokens,
        "cache_read_tokens": turn.cache_read_tokens,
        "cache_write_tokens": turn.cache_write_tokens,
        "cost_usd": turn.cost_usd,
        "error": turn.error,
        "data": data if isinstance(data, dict) else {},
        "body_template": body_template(protocol, turn.task),
        "duration": duration,
        "streaming": streaming,
        "names": names or {},
        "citations": turn.citations,
        "flags": turn.flags,
        "kb": kb,
        # A turn copied into a fork: the parent run it comes from (debates.services.lineage).
        "copied_from_run": turn.copied_from.run_id if turn.copied_from_id and turn.copied_from else None,
    }


def live_card(
    *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
) -> dict[str, Any]:
    data = streaming_data(text)
    return {
        "dom_id": turn_dom_id(key),
        "key": key,
        "task": task,
        "data": data if isinstance(data, dict) else {},
        "body_template": body_template(protocol, task),
        "streaming": True,
        "names": names or {},
    }


def run_turn_cards(
    run: Run,
    *,
    upto_seq: int | None = None,
    kb: dict[str, Any] | None = None,
    from_cache: bool = False,
    pks: list[int] | None = None,
) -> list[dict[str, Any]]:
    """The run's turn cards in transcript order. A finished turn's card changes only when the run records an event
    (a ruling, an approval, ...) or its KB is revised (live ratings shown beside cited arguments, possibly by another
    run), so its HTML is cached under the turn's identity, the seq the page shows and the KB's latest revision (see
    the `transcript` partial). `from_cache`: a card whose HTML is cached comes as {"html", "key", "status"} alone,
    looked up for all turns at once, and only the other turns are read whole (a long finished run's page then
    reads no turn body at all). `pks`: only these turns."""
    turns = run.turns.order_by("first_seq", "id")
    if upto_seq is not None:
        turns = turns.filter(first_seq__lte=upto_seq)
    if pks is not None:
        turns = turns.filter(pk__in=pks)
    seq = str(upto_seq if upto_seq is not None else run.last_seq)
    if kb is not None and run.kb_id:
        seq = f"{seq}:{Revision.objects.filter(kb_id=run.kb_id).order_by('-pk').values_list('pk', flat=True).first()}"

    def cache_key(pk: int, attempt: int, status: str, finished_at: Any) -> str:
        if status == TurnStatus.STREAMING or finished_at is None:
            return ""
        return f"{run.pk}:{pk}:{attempt}:{status}:{finished_at.isoformat()}:{seq}"

    cached: dict[int, dict[str, Any]] = {}
    heads: list[tuple[int, int, str, Any, str, str]] = []
    if from_cache:
        heads = list(turns.values_list("pk", "attempt", "status", "finished_at", "key", "stage"))
        fragments = {
            make_template_fragment_key(TURN_CARD_FRAGMENT, [key]): (pk, turn_key, status, stage)
            for pk, attempt, status, finished_at, turn_key, stage in heads
            if (key := cache_key(pk, attempt, status, finished_at))
        }
        for fragment, html in caches["fragments"].get_many(list(fragments)).items():
            pk, turn_key, status, stage = fragments[fragment]
            cached[pk] = {"html": html, "key": turn_key, "status": status, "stage": stage}
        if len(cached) == len(heads):
            return [cached[pk] for pk, *_ in heads]
    names = seat_names(run)
    cards: dict[int, dict[str, Any]] = {}
    unread = turns.exclude(pk__in=list(cached)) if cached else turns
    for turn in unread.select_related("seat", "copied_from"):
        card = turn_card(turn, run.protocol, names, kb)
        card["cache_key"] = cache_key(turn.pk, turn.attempt, turn.status, turn.finished_at)
        cards[turn.pk] = card
    if not cached:
        return list(cards.values())
    # Back into transcript order, the cached cards among the rendered ones (a turn shown since comes last).
    order = {pk: n for n, (pk, *_) in enumerate(heads)}
    merged = cards | cached
    return [merged[pk] for pk in sorted(merged, key=lambda pk: order.get(pk, len(order)))]


_ROUND_KEY = re.compile(r"^r(\d+)/")


def round_of(key: str, stage: str) -> str:
    """The transcript group a turn belongs to: its round (`r2/...` keys) or else its stage."""
    match = _ROUND_KEY.match(key)
    return (
        f"round-r{match.group(1)}" if match else "round-" + re.sub(r"[^A-Za-z0-9_-]+", "-", stage or "other")
    )


def round_label(key: str, stage: str, stage_labels: dict[str, str]) -> str:
    match = _ROUND_KEY.match(key)
    label = stage_labels.get(stage, stage.replace("_", " ").capitalize() if stage else "Turns")
    return f"Round {match.group(1)}: {label}" if match else label


def transcript_rounds(run: Run, cards: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript grouped by round (or stage), in order, each group collapsible on the page; a new turn's
    frame appends to its group's list (`<dom_id>-turns`), or starts the group (debates.web.frames)."""
    labels = {stage.id: stage.label for stage in registry.get(run.protocol).stages}
    rounds: dict[str, dict[str, Any]] = {}
    for card in cards:
        dom_id = round_of(card["key"], card.get("stage", ""))
        group = rounds.setdefault(
            dom_id,
            {"dom_id": dom_id, "label": round_label(card["key"], card.get("stage", ""), labels), "cards": []},
        )
        group["cards"].append(card)
    return list(rounds.values())


# A long transcript is shown in full at its start and its end (where the live turns arrive); the turns between are
# loaded as the reader reaches them, so the page's first request renders at most this many cards. Rendering a card
# for the first time is most of a long run's first request: with 20 + 20, a 500-turn run's took 100-200 ms on a
# slow 2-core machine (target 150 ms); 12 + 12 is 45 % less work under a profiler.
TRANSCRIPT_HEAD = 12
TRANSCRIPT_TAIL = 12


def run_transcript(
    run: Run, *, kb: dict[str, Any] | None = None, upto_seq: int | None = None
) -> list[dict[str, Any]]:
    """The transcript's groups as the run page shows them (transcript_rounds): with more than TRANSCRIPT_HEAD +
    TRANSCRIPT_TAIL turns, the turns between the first and the last ones are not rendered; in their place each
    group they belong to holds one `deferred` entry naming them (how many, their seq range and the URL that
    renders them), in their position, so the group keeps its order and live turns still append to its end."""
    heads = run.turns.order_by("first_seq", "id")
    if upto_seq is not None:
        heads = heads.filter(first_seq__lte=upto_seq)
    rows = list(heads.values_list("pk", "key", "stage", "first_seq"))
    if len(rows) <= TRANSCRIPT_HEAD + TRANSCRIPT_TAIL:
        return transcript_rounds(run, run_turn_cards(run, upto_seq=upto_seq, kb=kb, from_cache=True))
    shown = rows[:TRANSCRIPT_HEAD] + rows[-TRANSCRIPT_TAIL:]
    cards = {
        card["key"]: card
        for card in run_turn_cards(
            run, upto_seq=upto_seq, kb=kb, from_cache=True, pks=[pk for pk, *_ in shown]
        )
    }
    labels = {stage.id: stage.label for stage in registry.get(run.protocol).stages}
    url = reverse("run-turns", args=[run.pk])
    rounds: dict[str, dict[str, Any]] = {}
    for index, (_, key, stage, first_seq) in enumerate(rows):
        dom_id = round_of(key, stage)
        group = rounds.get(dom_id)
        if group is None:
            group = rounds[dom_id] = {"dom_id": dom_id, "label": round_label(key, stage, labels), "cards": []}
        if index < TRANSCRIPT_HEAD or index >= len(rows) - TRANSCRIPT_TAIL:
            group["cards"].append(cards[key])
            continue
        last = group["cards"][-1] if group["cards"] else None
        if last is not None and last.get("deferred"):
            last["count"] += 1
            last["to_seq"] = first_seq
        else:
            group["cards"].append({"deferred": True, "count": 1, "from_seq": first_seq, "to_seq": first_seq})
    for group in rounds.values():
        for entry in group["cards"]:
            if entry.get("deferred"):
                entry["dom_id"] = f"deferred-{group['dom_id']}-{entry['from_seq']}"
                entry["url"] = f"{url}?round={group['dom_id']}&from={entry['from_seq']}&to={entry['to_seq']}"
    return list(rounds.values())


def run_round_turn_cards(
    run: Run, *, round_id: str, from_seq: int, to_seq: int, kb: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The cards of a group's turns between two seqs (both included): what a `deferred` entry stands for."""
    rows = run.turns.filter(first_seq__gte=from_seq, first_seq__lte=to_seq).values_list("pk", "key", "stage")
    pks = [pk for pk, key, stage in rows if round_of(key, stage) == round_id]
    return run_turn_cards(run, kb=kb, from_cache=True, pks=pks) if pks else []


def round_openers(run: Run) -> set[str]:
    """The keys of the turns that open their transcript group (a turn_started frame of one starts the group). From
    the run's view, whose turns come in the order they were first shown (read once with the frame's widgets)."""
    first: dict[str, str] = {}
    for turn in run_view_load(run).turns.values():
        first.setdefault(round_of(turn.key, turn.stage), turn.key)
    return set(first.values())
