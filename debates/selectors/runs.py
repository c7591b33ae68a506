"""Reads for pages, frames and exports. Templates get plain dicts so the same partial renders on page load, in
a WebSocket frame and from async code without touching the database."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from django.conf import settings
from django.core.cache import caches
from django.core.cache.utils import make_template_fragment_key
from django.db.models import Count, F, Q, Sum
from pydantic_core import from_json

from debates.contract import Panel, Step, Steps
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.models import HumanAction, HumanActionKind, Run, RunStatus, Turn, TurnStatus, turn_dom_id

# The name of the {% cache %} fragment of a finished turn card in run_detail.html's `transcript` partial.
TURN_CARD_FRAGMENT = "turn-card"

STATUS_LABELS = {
    RunStatus.DRAFT: "Draft",
    RunStatus.QUEUED: "Queued",
    RunStatus.RUNNING: "Running",
    RunStatus.PAUSED: "Paused",
    RunStatus.AWAITING_HUMAN: "Waiting for a human",
    RunStatus.COMPLETED: "Completed",
    RunStatus.FAILED: "Failed",
    RunStatus.CANCELLED: "Cancelled",
}


def partial_json(text: str) -> Any:
    """Parse streamed JSON as far as it goes (unfinished strings and lists included)."""
    if not text:
        return {}
    try:
        return from_json(text, allow_partial="trailing-strings")
    except ValueError:
        return {}


def body_template(protocol: str, task: str) -> str:
    return f"{registry.get(protocol).template}#{task}"


def seat_names(run: Run) -> dict[str, str]:
    return dict(run.seats.values_list("handle", "name"))


def turn_card(
    turn: Turn, protocol: str, names: dict[str, str] | None = None, kb: dict[str, Any] | None = None
) -> dict[str, Any]:
    """A turn as the page shows it. `kb`: the run's protocol context (run_protocol_context), which the body
    looks cited arguments, ledger entries and turn numbers up in; None renders the body from its data alone."""
    seat = turn.seat
    streaming = turn.status == TurnStatus.STREAMING
    data = partial_json(turn.raw_text) if streaming or turn.payload is None else turn.payload
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
        "kb": kb,
        # A turn copied into a fork: the parent run it comes from (debates.services.lineage).
        "copied_from_run": turn.copied_from.run_id if turn.copied_from_id and turn.copied_from else None,
    }


def live_card(
    *, key: str, task: str, protocol: str, text: str, names: dict[str, str] | None = None
) -> dict[str, Any]:
    data = partial_json(text)
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
    run: Run, *, upto_seq: int | None = None, kb: dict[str, Any] | None = None, from_cache: bool = False
) -> list[dict[str, Any]]:
    """The run's turn cards in transcript order. A finished turn's card changes only when the run records an event
    (a ruling, an approval, ...) or its KB is revised (live ratings shown beside cited arguments, possibly by another
    run), so its HTML is cached under the turn's identity, the seq the page shows and the KB's latest revision (see
    the `transcript` partial). `from_cache`: a card whose HTML is cached comes as {"html", "key", "status"} alone,
    looked up for all turns at once, and only the other turns are read whole (a long finished run's page then
    reads no turn body at all)."""
    turns = run.turns.order_by("first_seq", "id")
    if upto_seq is not None:
        turns = turns.filter(first_seq__lte=upto_seq)
    seq = str(upto_seq if upto_seq is not None else run.last_seq)
    if kb is not None and run.kb_id:
        from kb.models import Revision

        seq = f"{seq}:{Revision.objects.filter(kb_id=run.kb_id).order_by('-pk').values_list('pk', flat=True).first()}"

    def cache_key(pk: int, attempt: int, status: str, finished_at: Any) -> str:
        if status == TurnStatus.STREAMING or finished_at is None:
            return ""
        return f"{run.pk}:{pk}:{attempt}:{status}:{finished_at.isoformat()}:{seq}"

    cached: dict[int, dict[str, Any]] = {}
    heads: list[tuple[int, int, str, Any, str]] = []
    if from_cache:
        heads = list(turns.values_list("pk", "attempt", "status", "finished_at", "key"))
        fragments = {
            make_template_fragment_key(TURN_CARD_FRAGMENT, [key]): (pk, turn_key, status)
            for pk, attempt, status, finished_at, turn_key in heads
            if (key := cache_key(pk, attempt, status, finished_at))
        }
        for fragment, html in caches["fragments"].get_many(list(fragments)).items():
            pk, turn_key, status = fragments[fragment]
            cached[pk] = {"html": html, "key": turn_key, "status": status}
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


def run_status_context(run: Run) -> dict[str, Any]:
    protocol = registry.get(run.protocol)
    view = run_view_load(run)
    turns = [(t.stage, t.status) for t in view.turns.values()]
    committed = sum(1 for _, status in turns if status == TurnStatus.COMMITTED)
    failed = sum(1 for _, status in turns if status == TurnStatus.FAILED)
    current = turns[-1][0] if turns else ""
    if run.status == RunStatus.AWAITING_HUMAN and run.awaiting:
        awaited = run_awaited_steps(run)
        current = awaited[0].stage if awaited else current
    order = [s.id for s in protocol.stages]
    current_index = order.index(current) if current in order else -1
    if run.status == RunStatus.COMPLETED:
        current_index = len(order)
    stages = []
    for index, stage in enumerate(protocol.stages):
        if index < current_index:
            state = "done"
        elif index == current_index:
            state = "active"
        else:
            state = "pending"
        stages.append({"id": stage.id, "label": stage.label, "state": state})
    expected = protocol.expected_turns(view)
    plan = protocol.plan(view) if not run.is_terminal else None
    return {
        "run": run,
        "status_label": STATUS_LABELS.get(RunStatus(run.status), run.status),
        "stages": stages,
        "notices": plan.notices if isinstance(plan, Steps) else (),
        "committed": committed,
        "failed": failed,
        "expected": max(expected, committed + failed),
        "progress_percent": int(100 * (committed + failed) / expected) if expected else 0,
        "simulated": run.backend == "simulated",
    }


def user_can_moderate(user: Any) -> bool:
    return bool(getattr(user, "is_authenticated", False) and user.has_perm("debates.moderate"))


def run_awaited_steps(run: Run) -> list[Step]:
    """The human steps the run is waiting for, re-planned from the database (plan is pure)."""
    if run.status not in {RunStatus.AWAITING_HUMAN, RunStatus.PAUSED} or not run.awaiting:
        return []
    protocol = registry.get(run.protocol)
    view = run_view_load(run)
    plan = protocol.plan(view)
    if not isinstance(plan, Steps):
        return []
    return [s for s in plan.steps if s.key in run.awaiting and s.key not in view.submitted_steps]


def errors_by_field(errors: list[str], fields: Any = ()) -> dict[str, list[str]]:
    """A submission's errors grouped by the payload field they name first ('rulings[0].arg_id: …' and
    'rulings.0.closed_as: …' both under 'rulings'), so a form can show each next to its fields; errors that
    name none of `fields` are grouped under ''."""
    grouped: dict[str, list[str]] = {}
    for error in errors:
        match = re.match(r"^([A-Za-z_]+)\b", error)
        field = match.group(1) if match and match.group(1) in fields else ""
        grouped.setdefault(field, []).append(error)
    return grouped


def moderator_context(
    run: Run,
    user: Any,
    *,
    errors: dict[str, list[str]] | None = None,
    values: dict[str, Any] | None = None,
    kb: dict[str, Any] | None = None,
    pick_error: str = "",
) -> dict[str, Any]:
    """`kb`: the run's protocol context when the caller has it already (computed here when a form needs it).
    `pick_error`: why the pick just posted (in `values`) was refused; the pick form shows it with what was posted."""
    can_moderate = user_can_moderate(user)
    protocol = registry.get(run.protocol)
    forms = []
    steps = run_awaited_steps(run)
    if steps and kb is None:
        kb = run_protocol_context(run)
    for step in steps:
        step_errors = (errors or {}).get(step.key, [])
        forms.append(
            {
                "key": step.key,
                "dom_id": "human-form-" + turn_dom_id(step.key).removeprefix("turn-"),
                "seat": step.seat,
                "task": step.task,
                "template": f"{protocol.template}#form-{step.task}",
                "context": step.context,
                "client_uuid": uuid.uuid4(),
                "errors": step_errors,
                "field_errors": errors_by_field(step_errors, step.schema.model_fields),
                "values": values or {},
                "kb": kb,
            }
        )
    terminal = run.is_terminal
    return {
        "run": run,
        "can_moderate": can_moderate,
        "forms": forms,
        "control_uuid": uuid.uuid4(),
        "can_pause": not terminal and not run.pause_requested,
        "can_resume": not terminal and run.pause_requested,
        "can_step": not terminal and run.pause_requested and run.status == RunStatus.PAUSED,
        "can_cancel": not terminal,
        "pick_form": pick_form_context(run, values=values if pick_error else None, error=pick_error)
        if can_moderate
        else None,
    }


USAGE_COLUMNS = (
    "input_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "output_tokens",
    "thinking_tokens",
)


def cost_context(run: Run) -> dict[str, Any]:
    """Usage and cost per seat and for the run, the budget and how much of it is used, the estimate, and the
    date the price table was read."""
    seats = list(
        Turn.objects.filter(run=run, human=False)
        .values("seat__handle", "seat__name", "seat__model")
        .annotate(turns=Count("id"), cost=Sum("cost_usd"), **{c: Sum(c) for c in USAGE_COLUMNS})
        .order_by("seat__position")
    )
    turn_cost = sum((row["cost"] for row in seats), start=run.cost_usd * 0)
    budget_used = None
    if run.budget_usd:
        budget_used = min(100, int(100 * run.cost_usd / run.budget_usd))
    tokens_used = None
    if run.budget_tokens:
        tokens_used = min(100, int(100 * run.total_tokens / run.budget_tokens))
    prompt = run.input_tokens + run.cache_write_tokens + run.cache_read_tokens
    return {
        "run": run,
        "seat_costs": seats,
        "shared_cost": run.cost_usd - turn_cost,  # cache warm-ups belong to no seat
        "budget_used_percent": budget_used,
        "tokens_used_percent": tokens_used,
        "cache_read_percent": int(100 * run.cache_read_tokens / prompt) if prompt else None,
        "prices_read_on": settings.DISPUTA_PRICES.get("read_on", ""),
        "simulated": run.backend == "simulated",
    }


# --- protocol panels and context ---------------------------------------------------------------------------------


MUTATION_EVENT = "mutation_decided"


def run_panel_specs(run: Run) -> tuple[Panel, ...]:
    return registry.get(run.protocol).panels


def run_panels(
    run: Run,
    user: Any = None,
    *,
    per_user: bool | None = None,
    kb: dict[str, Any] | None = None,
    message: str = "",
    error_for: int | None = None,
) -> list[dict[str, Any]]:
    """The run's extra panels (all, or only the per-user / shared ones) with what their partials render."""
    specs = [p for p in run_panel_specs(run) if per_user is None or p.per_user == per_user]
    if not specs:
        return []
    template = registry.get(run.protocol).template
    if kb is None and any(not p.per_user for p in specs):
        kb = run_protocol_context(run)
    panels = []
    for spec in specs:
        panel: dict[str, Any] = {
            "id": spec.id,
            "template": f"{template}#panel-{spec.id}",
            "run": run,
            "kb": kb,
            "message": message,
        }
        if spec.id == "approvals":
            panel.update(run_approvals(run, user, error_for=error_for))
        panels.append(panel)
    return panels


def run_protocol_context(run: Run) -> dict[str, Any] | None:
    """What a protocol's bodies and panels look up beyond a turn's own data (None when there is nothing)."""
    return registry.get(run.protocol).page_context(run)


TURN_NUMBER = re.compile(r"^t(\d+)/")


def run_approvals(run: Run, user: Any, *, error_for: int | None = None) -> dict[str, Any]:
    """The KB mutations this run proposed: pending first (oldest first), then the decided ones."""
    from kb.models import MutationStatus, ProposedMutation

    rows = list(
        ProposedMutation.objects.filter(run=run)
        .select_related("revision", "turn", "decided_by")
        .order_by("pk")
    )
    targets = {str(m.payload.get("arg_id")) for m in rows if m.kind == "status-downgrade"}
    statuses = (
        dict(run.kb.arguments.filter(arg_id__in=targets).values_list("arg_id", "status"))
        if targets and run.kb is not None
        else {}
    )
    mutations = []
    for m in rows:
        key = m.turn.key if m.turn else ""
        number = TURN_NUMBER.match(key)
        mutations.append(
            {
                "id": m.pk,
                "dom_id": f"approval-{m.pk}",
                "kind": m.kind,
                "payload": m.payload,
                "arg_status": statuses.get(str(m.payload.get("arg_id", ""))),
                "proposed_by": m.proposed_by,
                "justification": m.justification,
                "status": m.status,
                "pending": m.status == MutationStatus.PENDING,
                "reason": m.reason,
                "revision": m.revision.r_id if m.revision else "",
                "change": m.revision.change if m.revision else "",
                "decided_by": m.decided_by.get_username() if m.decided_by else "",
                "decided_at": m.decided_at,
                "turn_key": key,
                "turn_number": int(number.group(1)) if number else None,
                "turn_dom_id": turn_dom_id(key) if key else "",
                "error": error_for == m.pk,
                "client_uuid": uuid.uuid4(),
            }
        )
    pending = [m for m in mutations if m["pending"]]
    return {
        "slug": run.kb.slug if run.kb is not None else "",
        "pending": pending,
        "decided": [m for m in mutations if not m["pending"]],
        "error_shown": any(m["error"] for m in mutations),
        "can_moderate": user_can_moderate(user),
    }


# --- the human's pick after a judge's verdict --------------------------------------------------------------------
# Generic over protocols: a protocol with a pick puts `judge_pick` and `pick_options` ([value, label] pairs) in its
# outcome (debates.services.runs.run_pick_record); nothing here knows any protocol.


def _pick_state(judge_pick: str, human_pick: str) -> str:
    """The human's pick against the judge's: agrees, overrides, adjudicated (no judge's pick), or "" (none)."""
    if not human_pick:
        return ""
    if not judge_pick:
        return "adjudicated"
    return "agrees" if human_pick == judge_pick else "overrides"


def pick_history(run: Run) -> list[dict[str, Any]]:
    """Every pick recorded on the run, oldest first (the last one stands)."""
    actions = HumanAction.objects.filter(run=run, kind=HumanActionKind.PICK).select_related("user")
    return [
        {
            "pick": str(a.payload.get("pick", "")),
            "label": run.pick_label(str(a.payload.get("pick", ""))),
            "reason": str(a.payload.get("reason", "")),
            "agrees": a.payload.get("agrees"),
            "user": a.user.get_username() if a.user else "",
            "at": a.created_at,
        }
        for a in actions.order_by("created_at", "id")
    ]


def pick_context(run: Run) -> dict[str, Any]:
    """The run's decision as the run page, the frames and the export show it: the options with labels, the judge's
    and the human's picks, whether the human agrees, overrides or adjudicated (the judge gave no verdict), the
    reason, who and when, and the history of picks. `has_pick` is False for a protocol without a pick."""
    options = run.pick_options
    if not options:
        return {"has_pick": False, "options": [], "history": []}
    state = _pick_state(run.judge_pick, run.human_pick)
    history = pick_history(run) if run.human_pick else []
    return {
        "has_pick": True,
        "completed": run.status == RunStatus.COMPLETED,
        "options": [
            {
                "value": value,
                "label": label,
                "judge": value == run.judge_pick,
                "human": value == run.human_pick,
            }
            for value, label in options
        ],
        "judge_pick": run.judge_pick,
        "judge_label": run.judge_pick_label,
        "human_pick": run.human_pick,
        "human_label": run.human_pick_label,
        "state": state,
        "agrees": state == "agrees",
        "overrides": state == "overrides",
        "adjudicated": state == "adjudicated",
        "reason": run.pick_reason,
        "picked_by": run.picked_by.get_username() if run.picked_by else "",
        "picked_at": run.picked_at,
        "history": history,
        "revised": len(history) > 1,
    }


def pick_form_context(run: Run, *, values: Any = None, error: str = "") -> dict[str, Any] | None:
    """The moderator's pick form: only on a completed run whose outcome has options. `values`: what was posted,
    shown again with `error` when the pick was refused."""
    if run.status != RunStatus.COMPLETED or not run.pick_options:
        return None
    selected = run.human_pick or run.judge_pick
    reason = run.pick_reason
    if values is not None:
        selected = str(values.get("pick", "")) or selected
        reason = str(values.get("reason", ""))
    return {
        "options": [
            {"value": value, "label": label, "judge": value == run.judge_pick, "checked": value == selected}
            for value, label in run.pick_options
        ],
        "judge_pick": run.judge_pick,
        "judge_label": run.judge_pick_label,
        "human_pick": run.human_pick,
        "reason": reason,
        "error": error,
        "client_uuid": uuid.uuid4(),
    }


def _rate(overridden: int, agreed: int) -> float | None:
    """Overrides as a % of the picks that had a judge's pick to agree with or override (adjudications excluded)."""
    judged = overridden + agreed
    return round(100 * overridden / judged, 1) if judged else None


DECISIONS_SHOWN = 200


def override_stats() -> dict[str, Any]:
    """How often humans overrode the judge: overall and per protocol (runs picked, agreed, overridden,
    adjudicated, override rate in %), runs still awaiting a decision, the chart of rates per protocol, and the
    latest decisions (overrides with their reasons). A fixed number of queries whatever the number of runs."""
    picked = Run.objects.exclude(human_pick="")
    rows = (
        picked.values("protocol")
        .annotate(
            picked=Count("id"),
            agreed=Count("id", filter=~Q(judge_pick="") & Q(human_pick=F("judge_pick"))),
            adjudicated=Count("id", filter=Q(judge_pick="")),
        )
        .order_by("protocol")
    )
    awaiting = dict(
        Run.objects.filter(status=RunStatus.COMPLETED, human_pick="", outcome__has_key="pick_options")
        .values("protocol")
        .annotate(n=Count("id"))
        .values_list("protocol", "n")
    )
    protocols = []
    for row in rows:
        overridden = row["picked"] - row["agreed"] - row["adjudicated"]
        protocols.append(
            {
                "protocol": row["protocol"],
                "picked": row["picked"],
                "agreed": row["agreed"],
                "overridden": overridden,
                "adjudicated": row["adjudicated"],
                "awaiting": awaiting.pop(row["protocol"], 0),
                "override_rate": _rate(overridden, row["agreed"]),
            }
        )
    for protocol, n in sorted(awaiting.items()):  # protocols with runs awaiting a pick but none picked yet
        protocols.append(
            {
                "protocol": protocol,
                "picked": 0,
                "agreed": 0,
                "overridden": 0,
                "adjudicated": 0,
                "awaiting": n,
                "override_rate": None,
            }
        )
    protocols.sort(key=lambda p: p["protocol"])
    totals = {
        key: sum(p[key] for p in protocols)
        for key in ("picked", "agreed", "overridden", "adjudicated", "awaiting")
    }
    totals["override_rate"] = _rate(totals["overridden"], totals["agreed"])

    recent = (
        picked.select_related("picked_by")
        .only(
            "id",
            "protocol",
            "topic",
            "outcome",
            "judge_pick",
            "human_pick",
            "pick_reason",
            "picked_at",
            "picked_by__username",
        )
        .order_by("-picked_at", "-id")[:DECISIONS_SHOWN]
    )
    decisions = [
        {
            "run_id": run.pk,
            "protocol": run.protocol,
            "topic": run.topic,
            "judge_pick": run.judge_pick,
            "judge_label": run.judge_pick_label,
            "human_pick": run.human_pick,
            "human_label": run.human_pick_label,
            "state": _pick_state(run.judge_pick, run.human_pick),
            "reason": run.pick_reason,
            "picked_by": run.picked_by.get_username() if run.picked_by else "",
            "picked_at": run.picked_at,
        }
        for run in recent
    ]
    charted = [p for p in protocols if p["override_rate"] is not None]
    chart = {
        "type": "bar",
        "data": {
            "labels": [p["protocol"] for p in charted],
            "datasets": [
                {
                    "label": "Override rate (%)",
                    "data": [p["override_rate"] for p in charted],
                    "backgroundColor": "#b4533a",
                    "maxBarThickness": 48,
                }
            ],
        },
        "options": {
            "indexAxis": "y",
            "scales": {"x": {"min": 0, "max": 100, "title": {"display": True, "text": "% of judged picks"}}},
            "plugins": {"legend": {"display": False}},
        },
    }
    return {
        "totals": totals,
        "protocols": protocols,
        "decisions": decisions,
        "overrides": [d for d in decisions if d["state"] == "overrides"],
        "decisions_shown": DECISIONS_SHOWN,
        "chart_json": json.dumps(chart) if charted else "",
    }
