"""Reads for pages, frames and exports. Templates get plain dicts so the same partial renders on page load, in
a WebSocket frame and from async code without touching the database. This module holds the run's status (stages,
progress, the human steps it awaits), who may moderate, a submission's errors by field, and the cost panel."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, cast

from django.conf import settings
from django.db.models import DecimalField

from debates.contract import Step, Steps
from debates.engine import registry
from debates.engine.progress import run_plan_noted
from debates.engine.view import run_read_shared, run_view_load
from debates.models import Run, RunStatus, Seat, Turn, TurnStatus
from debates.platform.fixed_reads import statement_rows

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


def run_status_context(run: Run) -> dict[str, Any]:
    protocol = registry.get(run.protocol)
    # A run this process is running has its plan noted by its runner; a completed run expects no more turns.
    # Neither needs a view of the run (nor, for a long run's page, reads a payload).
    noted = run_plan_noted(run) if run.status == RunStatus.RUNNING else None
    view = None if run.status == RunStatus.COMPLETED or noted is not None else run_view_load(run)
    tally = run_turn_tally(run.pk)  # (the cost widget's read too: both go out with every burst)
    committed, failed, current = tally.committed, tally.failed, tally.current_stage
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
    if noted is not None:
        expected, notices = max(noted.expected_turns, tally.turns), noted.notices
    else:
        expected = protocol.expected_turns(view) if view is not None else committed + failed
        plan = protocol.plan(view) if view is not None and not run.is_terminal else None
        notices = plan.notices if isinstance(plan, Steps) else ()
    return {
        "run": run,
        "status_label": STATUS_LABELS.get(RunStatus(run.status), run.status),
        "stages": stages,
        "notices": notices,
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


_ERROR_PATH = re.compile(
    r"^(?P<field>[A-Za-z_]+)(?:\[(?P<index>\d+)\]|\.(?P<dotted>\d+))?(?:[.\w\[\]]*)?: (?P<text>.+)$", re.S
)


def error_plain(error: str) -> str:
    """A validation error as the person who filled the form reads it, next to the field it is about: the
    machine path goes ('rulings[0].arg_id: no argument …' → 'Ruling 1: no argument …'); the raw error stays in
    the turn's record and the exports."""
    match = _ERROR_PATH.match(error)
    if match is None:
        return error
    text = match["text"]
    text = text[:1].upper() + text[1:]
    index = match["index"] or match["dotted"]
    if index is None:
        return text
    field = match["field"].replace("_", " ")
    item = field[:-1] if field.endswith("s") else field
    return f"{item[:1].upper()}{item[1:]} {int(index) + 1}: {text}"


USAGE_COLUMNS = (
    "input_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "output_tokens",
    "thinking_tokens",
)


@dataclass(frozen=True)
class TurnTally:
    """What the two status widgets show of a run's turns: each seat's calls and their usage and cost (in seat
    order, human seats left out), the turns committed and failed, and the stage of the latest turn."""

    seats: list[dict[str, Any]]
    turns: int
    committed: int
    failed: int
    current_stage: str


def run_turn_tally(run_id: int) -> TurnTally:
    """The tally of a run's turns, in one fixed statement, read once inside a `run_reads_shared` block. Both
    status widgets go out with every burst of a live run's events: as two statements (the turns' stages, the
    seats' sums) they were two of the five round trips of a burst's frames, each 10-15 ms of a busy worker's
    waiting (bench fanout); and the ORM building and compiling the sums (seven aggregates) had taken more of a
    worker's CPU than rendering the widget (py-spy)."""
    return run_read_shared(run_id, "turn-tally", lambda: _turn_tally_read(run_id))


def _turn_tally_read(run_id: int) -> TurnTally:
    turn, seat = Turn._meta.db_table, Seat._meta.db_table
    calls = 'CASE WHEN t."human" THEN 0 ELSE 1 END'  # a person's turn is no call (and costs nothing)
    sums = "".join(f', SUM({calls} * t."{c}")' for c in ("cost_usd", *USAGE_COLUMNS))
    cost_places = cast("DecimalField[Decimal, Decimal]", Turn._meta.get_field("cost_usd")).decimal_places
    rows = statement_rows(
        f'SELECT s."handle", s."name", s."model", SUM({calls}){sums}, '
        f'COUNT(t."id"), SUM(CASE WHEN t."status" = %s THEN 1 ELSE 0 END), '
        f'SUM(CASE WHEN t."status" = %s THEN 1 ELSE 0 END), '
        f'(SELECT l."stage" FROM "{turn}" l WHERE l."run_id" = %s ORDER BY l."first_seq" DESC, l."id" DESC '
        f"LIMIT 1) "
        f'FROM "{turn}" t JOIN "{seat}" s ON s."id" = t."seat_id" WHERE t."run_id" = %s '
        f'GROUP BY s."id", s."handle", s."name", s."model", s."position" ORDER BY s."position"',
        [TurnStatus.COMMITTED, TurnStatus.FAILED, run_id, run_id],
    )
    seats = [
        {
            "seat__handle": handle,
            "seat__name": name,
            "seat__model": model,
            "turns": turns,
            # SQLite sums a decimal column as a float: back to the column's decimal places, as the ORM would.
            "cost": Decimal(str(cost)).quantize(Decimal(1).scaleb(-cost_places)),
            **{column: int(total or 0) for column, total in zip(USAGE_COLUMNS, totals, strict=True)},
        }
        for handle, name, model, turns, cost, *totals, _, _, _, _ in rows
        if turns
    ]
    return TurnTally(
        seats=seats,
        turns=sum(row[-4] for row in rows),
        committed=sum(row[-3] for row in rows),
        failed=sum(row[-2] for row in rows),
        current_stage=rows[0][-1] if rows else "",
    )


def seat_costs(run_id: int) -> list[dict[str, Any]]:
    """The usage and cost of each seat's calls (human seats make none), in seat order."""
    return run_turn_tally(run_id).seats


def cost_context(run: Run) -> dict[str, Any]:
    """Usage and cost per seat and for the run, the budget and how much of it is used, the estimate, and the
    date the price table was read."""
    seats = seat_costs(run.pk)
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
