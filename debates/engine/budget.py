"""The run's budget: every call's usage is recorded as it ends, and a call starts only if the worst case of it and
of the calls in flight fits what is left; otherwise the run stops before the call and waits for a moderator."""

from __future__ import annotations

import asyncio
import logging
from decimal import Decimal
from functools import partial
from typing import Any

from channels.db import database_sync_to_async
from django.db import transaction

from debates.agents.base import Usage
from debates.engine.events import event_append
from debates.engine.lease import locked_run
from debates.engine.turns import run_status_set
from debates.models import Run, RunStatus, Turn
from debates.platform.db_retry import CommitOutcomeUnknown, adb_call_retrying, db_write_once

log = logging.getLogger("debates.engine")


class BudgetExceeded(Exception):
    def __init__(self, reason: str, *, cost_usd: Decimal, tokens: int) -> None:
        super().__init__(reason)
        self.cost_usd = cost_usd
        self.tokens = tokens


USAGE_FIELDS = (
    "input_tokens",
    "output_tokens",
    "cache_write_tokens",
    "cache_read_tokens",
    "thinking_tokens",
    "cost_usd",
)


def usage_record(run_id: int, turn_id: int | None, usage: Usage) -> None:
    """Record one call's usage on its turn and the run as soon as the call ends, whatever its outcome: every
    call made is billed, so a turn costs the sum of its attempts (and a stale attempt's call still counts)."""
    if usage == Usage():
        return
    # Always inside its caller's transaction (db_write_once's, run_charge's), whose failure undoes both updates:
    # a savepoint would only add two statements. Fixed statements, not the ORM: every call of every debate comes
    # through here (on PostgreSQL both updates in one statement, one round trip).
    values = [getattr(usage, name) for name in USAGE_FIELDS]
    turn_update = f'{_usage_update(Turn)} WHERE "id" = %s'
    run_update = f'{_usage_update(Run)} WHERE "id" = %s'
    with transaction.atomic(savepoint=False):
        connection = transaction.get_connection()
        with connection.cursor() as cursor:
            if turn_id is None:
                cursor.execute(run_update, [*values, run_id])
            elif connection.vendor == "postgresql":
                cursor.execute(f"WITH t AS ({turn_update}) {run_update}", [*values, turn_id, *values, run_id])
            else:  # (SQLite: no UPDATE inside WITH)
                cursor.execute(turn_update, [*values, turn_id])
                cursor.execute(run_update, [*values, run_id])


def _usage_update(model: type[Turn] | type[Run]) -> str:
    # (Plain fields: each column is named as its field.)
    return f'UPDATE "{model._meta.db_table}" SET ' + ", ".join(f'"{f}" = "{f}" + %s' for f in USAGE_FIELDS)


def run_spending(run_id: int) -> tuple[Any, int, Any, Any]:
    """(cost so far, tokens so far, dollar budget, token budget)."""
    run = Run.objects.only(
        "cost_usd",
        "input_tokens",
        "output_tokens",
        "cache_write_tokens",
        "cache_read_tokens",
        "budget_usd",
        "budget_tokens",
    ).get(pk=run_id)
    return run.cost_usd, run.total_tokens, run.budget_usd, run.budget_tokens


def run_budget_stop(run_id: int, owner: str, stop: BudgetExceeded) -> tuple[int | None, bool]:
    """Stop before a call that could go over budget: pause until a moderator raises the budget (or cancels).
    Re-checked under the run's lock (the stage's other calls have ended): a cancel requested meanwhile wins, and
    a budget raised meanwhile that now fits the call lets the run go on. Returns (event seq, stopped)."""
    with transaction.atomic():
        run = locked_run(run_id, owner)
        if run.is_terminal or run.cancel_requested:
            return None, False
        fits_usd = run.budget_usd is None or run.cost_usd + stop.cost_usd <= run.budget_usd
        fits_tokens = run.budget_tokens is None or run.total_tokens + stop.tokens <= run.budget_tokens
        if fits_usd and fits_tokens:
            return None, False
        run.pause_requested = True
        run.step_credits = 0
        seq = run_status_set(
            run, RunStatus.PAUSED, str(stop), budget_stopped=True, pause_requested=True, step_credits=0
        )
        return seq, True


def run_charge(run_id: int, usage: Usage, what: str) -> int:
    """Usage that belongs to no turn (a cache warm-up): on the run's totals, and in the event log."""
    with transaction.atomic():
        usage_record(run_id, None, usage)
        return event_append(
            run_id=run_id,
            kind="run_charged",
            payload={
                "what": what,
                "input_tokens": usage.input_tokens,
                "cache_write_tokens": usage.cache_write_tokens,
                "cache_read_tokens": usage.cache_read_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": str(usage.cost_usd),
            },
        )


class BudgetReservations:
    """The worst-case cost and tokens of a runner's calls in flight, counted against the budget until they end.
    So a run never goes over by more than its estimates were wrong."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.usd = Decimal(0)
        self.tokens = 0
        self._lock = asyncio.Lock()

    async def reserve(self, estimate: Usage, what: str) -> None:
        """Check the budget before a call: what is spent, plus the worst case of the calls in flight, plus the
        worst case of this call must fit; BudgetExceeded names the call that does not."""
        async with self._lock:  # a call's usage lands in the database before its reservation ends
            cost, tokens, budget_usd, budget_tokens = await adb_call_retrying(
                database_sync_to_async(partial(run_spending, self.run_id)), what=f"run {self.run_id}: budget"
            )
            if budget_usd is not None and cost + self.usd + estimate.cost_usd > budget_usd:
                raise BudgetExceeded(
                    f"Budget reached: ${cost:.4f} spent of ${budget_usd:.2f}, and the next call ({what}) could "
                    f"cost up to ${estimate.cost_usd:.4f}. Raise the budget to go on, or cancel the run.",
                    cost_usd=estimate.cost_usd,
                    tokens=estimate.total_tokens,
                )
            tokens_after = tokens + self.tokens + estimate.total_tokens
            if budget_tokens is not None and tokens_after > budget_tokens:
                raise BudgetExceeded(
                    f"Token budget reached: {tokens:,} tokens used of {budget_tokens:,}, and the next call "
                    f"({what}) could use up to {estimate.total_tokens:,}. Raise the budget to go on, or cancel "
                    "the run.",
                    cost_usd=estimate.cost_usd,
                    tokens=estimate.total_tokens,
                )
            self.usd += estimate.cost_usd
            self.tokens += estimate.total_tokens

    def release(self, estimate: Usage) -> None:
        self.usd -= estimate.cost_usd
        self.tokens -= estimate.total_tokens

    async def settle(self, turn_id: int | None, estimate: Usage, used: Usage) -> None:
        """A call has ended: record what it used and end its reservation, under the lock, so a reservation
        checked meanwhile sees the one or the other, never neither. The usage adds to totals, so a record whose
        commit was lost with the database connection is not made again (it may be there already)."""
        async with self._lock:
            record = database_sync_to_async(partial(db_write_once, usage_record, self.run_id, turn_id, used))
            try:
                await adb_call_retrying(record, what=f"run {self.run_id}: usage")
            except CommitOutcomeUnknown:
                log.exception("run %s: a call's usage may not be recorded (%s)", self.run_id, used)
            self.release(estimate)
