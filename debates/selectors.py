"""Reads for pages, frames and exports. Templates get plain dicts so the same partial renders on page load, in
a WebSocket frame and from async code without touching the database."""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db.models import Count, Q, QuerySet, Sum
from pydantic_core import from_json

from debates.engine.view import run_view_load
from debates.models import Run, RunStatus, Turn, TurnStatus, turn_dom_id
from debates.protocols import registry
from debates.protocols.base import Step, Steps

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


def run_list() -> QuerySet[Run]:
    return Run.objects.select_related("created_by").annotate(
        turns_committed=Count("turns", filter=Q(turns__status=TurnStatus.COMMITTED))
    )


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
    run: Run, *, upto_seq: int | None = None, kb: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    turns = run.turns.select_related("seat").order_by("first_seq", "id")
    if upto_seq is not None:
        turns = turns.filter(first_seq__lte=upto_seq)
    names = seat_names(run)
    return [turn_card(t, run.protocol, names, kb) for t in turns]


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
    return {
        "run": run,
        "status_label": STATUS_LABELS.get(RunStatus(run.status), run.status),
        "stages": stages,
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
) -> dict[str, Any]:
    """`kb`: the run's protocol context when the caller has it already (computed here when a form needs it)."""
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


@dataclass(frozen=True)
class Panel:
    """A panel of the run page beyond the generic ones, rendered from `<protocol template>#panel-<id>` on page
    load, in the snapshot and after the events in `refresh_on`. `per_user` panels hold controls (rendered for
    each viewer with the moderator panel); the others are rendered once per event for every viewer."""

    id: str
    per_user: bool = False
    refresh_on: frozenset[str] = frozenset({"turn_committed", "mutation_decided"})


# Panels per protocol; a protocol class may declare its own as a `panels` attribute instead.
PROTOCOL_PANELS: dict[str, tuple[Panel, ...]] = {
    "kb-debate": (Panel("approvals", per_user=True), Panel("ledger")),
}
MUTATION_EVENT = "mutation_decided"


def run_panel_specs(run: Run) -> tuple[Panel, ...]:
    protocol = registry.get(run.protocol)
    declared = getattr(protocol, "panels", None)
    return tuple(declared) if declared is not None else PROTOCOL_PANELS.get(run.protocol, ())


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
    if run.protocol == "kb-debate" and run.kb_id:
        return kb_debate_context(run)
    return None


ORBIT_VERBS = {
    "layer-shift-from": "layer-shifts from",
    "scope-mismatch-with": "scope-mismatches",
    "tangential-to": "is tangential to",
}
TURN_NUMBER = re.compile(r"^t(\d+)/")


def kb_debate_context(run: Run) -> dict[str, Any] | None:
    """A kb-debate run's KB as its page shows it: every argument with its live rating (and the one the snapshot
    took), the claims ledger derived from the committed turns, turn numbers with their anchors, the engagement
    edges between arguments, and the KB mutations this run proposed, per turn."""
    from debates.protocols.kb_debate import KbDebateConfig, ledger_build

    view = run_view_load(run)
    kb = view.kb
    if kb is None:
        return None
    ledger = ledger_build(view)
    arguments = {
        a.arg_id: {
            "id": a.arg_id,
            "title": a.title,
            "position": a.position,
            "layer": a.layer,
            "scope": a.scope,
            "status": a.status,
            "snapshot_status": a.snapshot_status,
        }
        for a in kb.arguments.values()
    }
    relations: dict[str, dict[str, str]] = {}
    for src, kind, target in kb.edges:
        if kind in ORBIT_VERBS:
            relations.setdefault(src, {})[target] = ORBIT_VERBS[kind]
    mutations: dict[str, list[dict[str, Any]]] = {}
    for m in kb.mutations:
        mutations.setdefault(m.turn_key, []).append({"id": m.id, "status": m.status, "revision": m.revision})
    entries = [e.as_dict(kb) for e in ledger.entries.values()]
    config = view.config
    assert isinstance(config, KbDebateConfig)
    return {
        "slug": kb.slug,
        "args": arguments,
        "arg_list": list(arguments.values()),
        "changed": [a for a in arguments.values() if a["status"] != a["snapshot_status"]],
        "relations": relations,
        "ledger": entries,
        "entries": {e["id"]: e for e in entries},
        "turns": {
            t.number: {
                "number": t.number,
                "key": t.key,
                "dom_id": turn_dom_id(t.key),
                "seat": t.seat,
                "task": t.task,
                "position": t.position,
            }
            for t in ledger.turns
        },
        "by_key": {t.key: t.number for t in ledger.turns},
        "positions": list(config.positions),
        "mutations_by_turn": mutations,
        "flags": [f.__dict__ for f in ledger.unhandled_flags()],
    }


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
