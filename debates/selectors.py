"""Reads for pages, frames and exports. Templates get plain dicts so the same partial renders on page load, in
a WebSocket frame and from async code without touching the database."""

from __future__ import annotations

import uuid
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


def turn_card(turn: Turn, protocol: str, names: dict[str, str] | None = None) -> dict[str, Any]:
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


def run_turn_cards(run: Run, *, upto_seq: int | None = None) -> list[dict[str, Any]]:
    turns = run.turns.select_related("seat").order_by("first_seq", "id")
    if upto_seq is not None:
        turns = turns.filter(first_seq__lte=upto_seq)
    names = seat_names(run)
    return [turn_card(t, run.protocol, names) for t in turns]


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


def moderator_context(
    run: Run, user: Any, *, errors: dict[str, list[str]] | None = None, values: dict[str, Any] | None = None
) -> dict[str, Any]:
    can_moderate = user_can_moderate(user)
    protocol = registry.get(run.protocol)
    forms = []
    for step in run_awaited_steps(run):
        forms.append(
            {
                "key": step.key,
                "dom_id": "human-form-" + turn_dom_id(step.key).removeprefix("turn-"),
                "seat": step.seat,
                "task": step.task,
                "template": f"{protocol.template}#form-{step.task}",
                "context": step.context,
                "client_uuid": uuid.uuid4(),
                "errors": (errors or {}).get(step.key, []),
                "values": values or {},
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
