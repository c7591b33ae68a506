"""Reads for reviewing finished runs: the transcript reader (turns by round, the ledger and revisions linked both
ways with the turns, citation badges linking to the KB) and the side-by-side comparison of two runs. A fixed
number of queries whatever the number of turns: everything per turn is looked up in dicts built once."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from django.db.models import Count, Q, QuerySet
from django.urls import reverse

from debates.engine import registry
from debates.models import Run, RunStatus, Seat, Turn, TurnStatus, turn_dom_id
from debates.selectors import runs as selectors
from debates.selectors.cards import run_turn_cards
from debates.selectors.integrity import runs_signals
from debates.selectors.panels import run_protocol_context
from kb.models import Revision

ROUND_KEY = re.compile(r"^r(\d+)/")
MODERATOR_TASKS = frozenset({"moderator"})
COMPARE_CANDIDATES = 50


# --- the transcript reader ---------------------------------------------------------------------------------------


def _stage_labels(protocol_name: str) -> dict[str, str]:
    try:
        protocol = registry.get(protocol_name)
    except LookupError:
        return {}
    return {stage.id: stage.label for stage in protocol.stages}


def turn_rounds(cards: list[dict[str, Any]], stage_labels: dict[str, str]) -> list[dict[str, Any]]:
    """Cards grouped by round. Keys `rN/...` name their round N (labelled with the stages of its turns); other
    keys (a kb-debate's `tNN/...`) are grouped by stage, a moderator turn closing the round of the turns before it,
    numbered in order and labelled with the stage of their first turn (and the turn numbers, when a stage spans
    several rounds). Labels come from the protocol's stages."""
    rounds: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    close_after = False
    for card in cards:
        match = ROUND_KEY.match(card["key"])
        if match:
            group: tuple[Any, ...] = ("r", int(match.group(1)))
        else:
            group = ("stage", card["stage"])
        moderator = card["task"] in MODERATOR_TASKS
        if (
            moderator
            and group[0] == "stage"
            and current is not None
            and current["group"][0] == "stage"
            and not close_after
        ):
            group = current["group"]  # the moderator closes the round of the turns it moderates
        if current is None or current["group"] != group or (group[0] == "stage" and close_after):
            number = group[1] if group[0] == "r" else len(rounds) + 1
            current = {"group": group, "number": number, "stages": [], "cards": []}
            rounds.append(current)
        label = stage_labels.get(card["stage"], card["stage"] or card["task"])
        if label not in current["stages"] and (group[0] == "r" or not current["stages"]):
            current["stages"].append(label)
        current["cards"].append(card)
        close_after = moderator
    numbered = [r for r in rounds if r["group"][0] == "r"]
    if numbered and len(numbered) != len(rounds):  # mixed keys: number every round in order instead
        for index, r in enumerate(rounds, start=1):
            r["number"] = index
    seen: Counter[str] = Counter(" · ".join(r["stages"]) for r in rounds)
    for r in rounds:
        stages = " · ".join(r["stages"])
        r["label"] = stages
        r["dom_id"] = f"round-{r['number']}"
        if (
            seen[stages] > 1 and r["group"][0] == "stage"
        ):  # an interleaved stage in several rounds: say which turns
            first, last = r["cards"][0].get("number"), r["cards"][-1].get("number")
            if first and last:
                r["label"] = (
                    f"{stages} (turns {first}–{last})" if first != last else f"{stages} (turn {first})"
                )
        del r["group"]
    return rounds


def citation_links(citations: list[dict[str, Any]], kb_slug: str) -> list[dict[str, Any]]:
    """A turn's stored citations with the KB page each resolved one links to (none for an unresolved id)."""
    linked = []
    for citation in citations or []:
        if not isinstance(citation, dict):
            continue
        kind, ref, status = citation.get("kind"), str(citation.get("ref", "")), citation.get("status", "")
        href = ""
        if kb_slug and status != "unverified":
            if kind == "arg" and ref:
                href = reverse("kb-argument", args=[kb_slug, ref])
            elif kind == "source":
                href = reverse("kb-detail", args=[kb_slug]) + "#sources"
            elif kind == "data":
                href = reverse("kb-detail", args=[kb_slug])
        linked.append({**citation, "ref": ref, "status": status, "href": href})
    return linked


def run_revisions(run: Run) -> list[dict[str, Any]]:
    """The KB revisions this run caused (R-NNN), each with the turn that triggered it."""

    rows = Revision.objects.filter(run=run).select_related("turn", "kb").order_by("r_id")
    revisions = []
    for r in rows:
        key = r.turn.key if r.turn is not None else ""
        revisions.append(
            {
                "id": r.r_id,
                "dom_id": f"revision-{r.r_id}",
                "heading": r.heading,
                "type": r.type,
                "type_words": r.type_words,
                "target": r.target,
                "change": r.change,
                "justification": r.justification,
                "triggered_by": r.triggered_by,
                "turn_key": key,
                "turn_dom_id": turn_dom_id(key) if key else "",
                "kb_href": reverse("kb-detail", args=[r.kb.slug]) + f"#revision-{r.r_id}",
            }
        )
    return revisions


def reader_context(run: Run, *, thread: str = "") -> dict[str, Any]:
    """What the reader shows: the committed (and failed) turns by round, each with its links to the ledger
    entries it raised or answered and the revisions it triggered; the ledger (each entry with its thread of turns)
    and the revisions beside them. `thread`: a ledger entry id whose turns are highlighted."""
    kb = run_protocol_context(run)
    if kb:  # the approvals panel a turn's proposal links to is on the run page
        kb = {**kb, "approvals_page": reverse("run-detail", args=[run.pk])}
    cards = [c for c in run_turn_cards(run, kb=kb) if c["status"] != TurnStatus.STREAMING]
    kb_slug = kb["slug"] if kb else (run.kb.slug if run.kb_id and run.kb else "")
    numbers: dict[str, int] = kb["by_key"] if kb else {}
    ledger: list[dict[str, Any]] = kb["ledger"] if kb else []
    turn_by_number: dict[int, dict[str, Any]] = kb["turns"] if kb else {}
    revisions = run_revisions(run)

    raised: dict[int, list[str]] = {}
    answered: dict[int, list[str]] = {}
    entries = []
    for entry in ledger:
        raised.setdefault(entry["turn"], []).append(entry["id"])
        for n in entry["thread"]:
            if n != entry["turn"]:
                answered.setdefault(n, []).append(entry["id"])
        thread_turns = [turn_by_number[n] for n in entry["thread"] if n in turn_by_number]
        entries.append(
            {
                **entry,
                "thread_turns": thread_turns,
                "first_dom_id": thread_turns[0]["dom_id"] if thread_turns else "",
                "selected": entry["id"] == thread,
            }
        )
    by_turn: dict[str, list[dict[str, Any]]] = {}
    for revision in revisions:
        revision["turn_number"] = numbers.get(revision["turn_key"])
        if revision["turn_key"]:
            by_turn.setdefault(revision["turn_key"], []).append(revision)

    selected = next((e for e in entries if e["selected"]), None)
    in_thread = {t["key"] for t in selected["thread_turns"]} if selected else set()
    for index, card in enumerate(cards, start=1):
        number = numbers.get(card["key"], index)
        card["number"] = number
        card["raised"] = raised.get(number, []) if kb else []
        card["answered"] = answered.get(number, []) if kb else []
        card["revisions"] = by_turn.get(card["key"], [])
        card["linked_citations"] = citation_links(card["citations"], kb_slug)
        card["in_thread"] = card["key"] in in_thread
    rounds = turn_rounds(cards, _stage_labels(run.protocol))
    return {
        "run": run,
        "kb": kb,
        "kb_slug": kb_slug,
        "rounds": rounds,
        "turn_count": len(cards),
        "ledger": entries,
        "revisions": revisions,
        "thread": selected,
        "thread_missing": thread if thread and selected is None else "",
        "status_label": selectors.STATUS_LABELS.get(RunStatus(run.status), run.status),
        "simulated": run.backend == "simulated",
        "duration": run_duration(run),
    }


# --- comparing two runs ------------------------------------------------------------------------------------------


def run_duration(run: Run) -> float | None:
    if run.started_at and run.finished_at:
        return (run.finished_at - run.started_at).total_seconds()
    return None


def compare_candidates(run: Run | None, *, exclude: int | None = None) -> QuerySet[Run]:
    """Runs to compare `run` with: the same topic first, then the same protocol; the latest runs without one."""
    runs = Run.objects.only("id", "protocol", "topic", "seed", "backend", "model", "status", "created_at")
    if run is None:
        return runs.order_by("-created_at", "-id")[:COMPARE_CANDIDATES]
    query = runs.filter(Q(topic=run.topic) | Q(protocol=run.protocol)).exclude(pk=run.pk)
    if exclude is not None:
        query = query.exclude(pk=exclude)
    return query.annotate(
        same_topic=Count("id", filter=Q(topic=run.topic)),
    ).order_by("-same_topic", "-created_at", "-id")[:COMPARE_CANDIDATES]


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        flat: dict[str, Any] = {}
        for key, item in value.items():
            flat.update(_flatten(item, f"{prefix}.{key}" if prefix else str(key)))
        return flat
    return {prefix: value}


def _shown(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, (list, tuple)):
        return ", ".join(_shown(v) for v in value) or "—"
    return str(value)


def _seat_model(seat: dict[str, Any]) -> str:
    model = seat["model"] if seat["model"] and seat["model"] != seat["backend"] else ""
    return f"{seat['name']}: {seat['backend']} {model}".strip()


def config_diff(a: Run, b: Run, seats: dict[int, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The settings of both runs, row by row, each marked when the two differ."""
    rows = [
        ("protocol", _protocol_title(a.protocol), _protocol_title(b.protocol)),
        ("topic", a.topic, b.topic),
        ("knowledge base", a.kb.slug if a.kb else "", b.kb.slug if b.kb else ""),
        ("backend", a.backend, b.backend),
        ("model", a.model, b.model),
        ("seed", a.seed, b.seed),
        ("budget (USD)", a.budget_usd, b.budget_usd),
        ("budget (tokens)", a.budget_tokens, b.budget_tokens),
        (
            "seats",
            [f"{s['name']} ({s['role']}{', human' if s['human'] else ''})" for s in seats[a.pk]],
            [f"{s['name']} ({s['role']}{', human' if s['human'] else ''})" for s in seats[b.pk]],
        ),
        (
            "seat models",
            [_seat_model(s) for s in seats[a.pk] if not s["human"]],
            [_seat_model(s) for s in seats[b.pk] if not s["human"]],
        ),
    ]
    flat_a, flat_b = _flatten(a.config or {}), _flatten(b.config or {})
    for key in list(dict.fromkeys([*flat_a, *flat_b])):
        rows.append((f"config: {key}", flat_a.get(key), flat_b.get(key)))
    return [
        {
            "name": name,
            "label": _setting_label(name),
            "a": _shown(va),
            "b": _shown(vb),
            "differs": _shown(va) != _shown(vb),
        }
        for name, va, vb in rows
    ]


def _protocol_title(name: str) -> str:
    try:
        return registry.get(name).title
    except LookupError:
        return name


def _setting_label(name: str) -> str:
    """A row's name as people read it: a config key ('config: evidence_gaps') in words ('Setting: evidence gaps')."""
    if not name.startswith("config: "):
        return name[:1].upper() + name[1:]
    words = name.removeprefix("config: ").replace("_", " ").replace(".", " › ")
    return f"Setting: {words}"


def outcome_summary(run: Run) -> dict[str, Any]:
    """A run's result in a line: its verdict (or the judge's recommendation), the judge's and the human's picks,
    and the scorecard totals when the protocol has them."""
    outcome = run.outcome if isinstance(run.outcome, dict) else {}
    verdict = outcome.get("verdict")
    if isinstance(verdict, dict):
        label = verdict.get("label") or verdict.get("verdict") or verdict.get("recommendation") or ""
        position = verdict.get("position") or ""
        verdict_text = f"{label}:{position}" if label and position else str(label)
    else:
        verdict_text = str(verdict or "")
    if not verdict_text and isinstance(outcome.get("recommendation"), dict):
        verdict_text = str(outcome["recommendation"].get("option", ""))
    totals = []
    card = outcome.get("scorecard")
    if isinstance(card, dict) and "total_a" in card:
        names = dict(run.pick_options)
        totals = [
            {"name": names.get("A", "A"), "value": card.get("total_a"), "max": card.get("max_total")},
            {"name": names.get("B", "B"), "value": card.get("total_b"), "max": card.get("max_total")},
        ]
    elif isinstance(outcome.get("stance_means"), dict):
        totals = [{"name": k, "value": v, "max": None} for k, v in outcome["stance_means"].items()]
    return {
        "has_outcome": bool(outcome),
        "mode": outcome.get("mode", ""),
        "verdict": verdict_text,
        "judge_pick": run.judge_pick_label,
        "human_pick": run.human_pick_label,
        "pick_overrides": run.pick_overrides,
        "totals": totals,
    }


SIGNALS = ("conceded", "deflected", "defended")


def _seat_rows(runs: list[Run]) -> dict[int, list[dict[str, Any]]]:

    rows: dict[int, list[dict[str, Any]]] = {run.pk: [] for run in runs}
    for seat in Seat.objects.filter(run__in=runs).values(
        "run_id", "handle", "name", "role", "backend", "model", "human"
    ):
        rows[seat["run_id"]].append(dict(seat))
    return rows


def compare_context(a: Run, b: Run) -> dict[str, Any]:
    """Two runs side by side: settings (differences marked), outcomes, per-seat concessions / deflections /
    defences (debates.selectors.integrity's signals, as the run page shows them), cost, duration and turn counts."""

    runs = [a, b]
    seats = _seat_rows(runs)
    spoke: dict[int, Counter[str]] = {a.pk: Counter(), b.pk: Counter()}
    committed: Counter[int] = Counter()
    failed: Counter[int] = Counter()
    for count in (
        Turn.objects.filter(run__in=runs, status__in=[TurnStatus.COMMITTED, TurnStatus.FAILED])
        .values("run_id", "seat__handle", "status")
        .annotate(n=Count("id"))
        .order_by()
    ):
        run_id, n = int(count["run_id"]), int(count["n"])
        if count["status"] == TurnStatus.COMMITTED:
            spoke[run_id][str(count["seat__handle"])] += n
            committed[run_id] += n
        else:
            failed[run_id] += n
    signals = runs_signals(runs)
    by_seat = {run.pk: {s["handle"]: s for s in signals[run.pk]["seats"]} for run in runs}
    handles = list(dict.fromkeys([s["handle"] for run in runs for s in seats[run.pk]]))
    names = {s["handle"]: s["name"] for run in runs for s in seats[run.pk]}
    seat_rows = []
    for handle in handles:
        row: dict[str, Any] = {"handle": handle, "name": names.get(handle, handle)}
        for side, run in (("a", a), ("b", b)):
            if not any(s["handle"] == handle for s in seats[run.pk]):
                row[side] = None
                continue
            measured = by_seat[run.pk].get(handle)
            row[side] = {
                "turns": spoke[run.pk][handle],
                "applicable": signals[run.pk]["applicable"],
                "signals": [(name, measured.get(name) if measured else None) for name in SIGNALS],
            }
        seat_rows.append(row)
    sides = []
    for side, run in (("a", a), ("b", b)):
        sides.append(
            {
                "side": side,
                "dom_id": f"compare-{side}",
                "id_prefix": f"{side}-",  # the outcome partial's ids, unique on the page
                "run": run,
                "summary": outcome_summary(run),
                "status_label": selectors.STATUS_LABELS.get(RunStatus(run.status), run.status),
                "duration": run_duration(run),
                "committed": committed[run.pk],
                "failed": failed[run.pk],
                "simulated": run.backend == "simulated",
                "signals_applicable": signals[run.pk]["applicable"],
                "seats_note": signals[run.pk]["seats_note"],
            }
        )
    return {
        "a": a,
        "b": b,
        "sides": sides,
        "config_rows": config_diff(a, b, seats),
        "seat_rows": seat_rows,
    }
