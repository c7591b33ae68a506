"""The durable runner: lease the run, then loop plan -> execute ready steps concurrently -> commit, until a
human wait, a pause, a cancel or Done. A crash loses at most the turns in flight, which the next runner re-runs
(attempt + 1); a turn is committed once (compare-and-set on its attempt), so nothing is lost or duplicated."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import socket
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from decimal import Decimal
from enum import StrEnum
from functools import partial
from typing import Any

from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone
from pydantic import ValidationError

from debates.agents.base import (
    AgentBackend,
    AgentRequest,
    BackendError,
    Delta,
    InvalidOutput,
    Repair,
    Result,
    Usage,
    backend_get,
)
from debates.contract import Done, Plan, Protocol, RunView, Step, Steps, Wait
from debates.engine import registry
from debates.engine.crash import crash_point
from debates.engine.effects import TurnEffects
from debates.engine.events import event_append
from debates.engine.publish import aevent_publish, run_group, turn_live_frame
from debates.engine.view import run_view_load
from debates.models import (
    ACTIVE_STATUSES,
    HumanAction,
    HumanActionKind,
    Run,
    RunStatus,
    Seat,
    Turn,
    TurnStatus,
)
from kb.citations import citations_check

log = logging.getLogger("debates.engine")

# A turn whose process keeps dying is given up after this many attempts in all (backend failures count
# against MAX_ATTEMPTS separately, per runner).
MAX_TOTAL_ATTEMPTS = 25

Observer = Callable[[str, dict[str, Any]], None]
PUBLISH_DELAY_SECONDS = 0.02


class RunnerOutcome(StrEnum):
    """What stopped a runner (run_execute's answer), or STEPS: the decision to run the planned steps next."""

    STEPS = "steps"
    DONE = "done"
    WAITING = "waiting"
    PAUSED = "paused"
    CANCELLED = "cancelled"
    FAILED = "failed"
    LOST_LEASE = "lost-lease"  # another runner took the run over
    LEASE_BUSY = "lease-busy"  # another runner holds the run: nothing was done


class LeaseLost(Exception):
    pass


def _conf(name: str) -> Any:
    return settings.DISPUTA[name]


def owner_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


# --- lease (sync, called through database_sync_to_async) -----------------------------------------------------


def lease_try_acquire(run_id: int, owner: str) -> bool:
    now = timezone.now()
    ttl = timedelta(seconds=_conf("LEASE_SECONDS"))
    with transaction.atomic():
        taken = (
            Run.objects.filter(pk=run_id, status__in=ACTIVE_STATUSES)
            .filter(
                Q(lease_owner="")
                | Q(lease_expires_at__isnull=True)
                | Q(lease_expires_at__lt=now)
                | Q(lease_owner=owner)
            )
            .update(lease_owner=owner, lease_expires_at=now + ttl, heartbeat_at=now)
        )
    return bool(taken)


def lease_renew(run_id: int, owner: str) -> bool:
    now = timezone.now()
    ttl = timedelta(seconds=_conf("LEASE_SECONDS"))
    renewed = Run.objects.filter(pk=run_id, lease_owner=owner).update(
        lease_expires_at=now + ttl, heartbeat_at=now
    )
    return bool(renewed)


def lease_release(run_id: int, owner: str) -> None:
    Run.objects.filter(pk=run_id, lease_owner=owner).update(lease_owner="", lease_expires_at=None)


# --- decisions taken under the run's row lock ----------------------------------------------------------------


@dataclass
class ClaimedTurn:
    turn_id: int
    attempt: int
    first_seq: int
    seat: Seat
    seq: int


@dataclass
class Decision:
    outcome: RunnerOutcome
    steps: list[Step] = field(default_factory=list)
    claims: list[ClaimedTurn | None] = field(default_factory=list)
    view: RunView | None = None
    run: Run | None = None
    seqs: list[int] = field(default_factory=list)


def _locked_run(run_id: int, owner: str) -> Run:
    run = Run.objects.select_for_update().get(pk=run_id)
    if run.lease_owner != owner:
        raise LeaseLost(f"run {run_id} is leased by {run.lease_owner or 'nobody'}")
    return run


def _set_status(run: Run, status: str, reason: str = "", **fields: Any) -> int:
    run.status = status
    run.status_reason = reason
    for name, value in fields.items():
        setattr(run, name, value)
    run.save(update_fields=["status", "status_reason", *fields])
    return event_append(run_id=run.pk, kind="run_status", payload={"status": status, "reason": reason})


def run_states_record(run: Run, plan: Plan | None, view: RunView | None = None) -> list[int]:
    """Record the protocol's own state changes (Protocol.states) as `state` events {from, to, reason}, inside the
    caller's transaction (the event's time is the transition's). Nothing for a protocol without a state machine."""
    protocol = registry.get(run.protocol)
    if type(protocol).states is Protocol.states:
        return []
    view = view if view is not None else run_view_load(run)
    return [
        event_append(run_id=run.pk, kind="state", payload={"from": t.src, "to": t.dst, "reason": t.reason})
        for t in protocol.states(view, plan)
    ]


def run_decide(run_id: int, owner: str) -> Decision:
    """Plan the next move and, unless it is to run steps, apply it, all in one transaction so a human action
    committed concurrently is either seen by this plan or sees the status this plan sets (no lost wake-up)."""
    with transaction.atomic():
        run = _locked_run(run_id, owner)
        seqs: list[int] = []
        if run.cancel_requested:
            Turn.objects.filter(run=run, status=TurnStatus.STREAMING).update(
                status=TurnStatus.FAILED, error="Cancelled by a moderator.", finished_at=timezone.now()
            )
            seqs.append(
                _set_status(run, RunStatus.CANCELLED, "Cancelled by a moderator.", finished_at=timezone.now())
            )
            seqs += run_states_record(run, Done({}, failed=True, reason="Cancelled by a moderator."))
            return Decision(RunnerOutcome.CANCELLED, seqs=seqs)
        if run.consent == "required":  # nothing is called before a moderator consents to the estimated cost
            return Decision(RunnerOutcome.WAITING, seqs=seqs)
        if run.pause_requested and run.step_credits == 0:
            if run.status != RunStatus.PAUSED:
                seqs.append(_set_status(run, RunStatus.PAUSED, "Paused by a moderator."))
            return Decision(RunnerOutcome.PAUSED, seqs=seqs)

        protocol = registry.get(run.protocol)
        view = run_view_load(run)
        plan = protocol.plan(view)
        seqs += run_states_record(run, plan, view)
        if isinstance(plan, Done):
            status = RunStatus.FAILED if plan.failed else RunStatus.COMPLETED
            run.outcome = plan.outcome
            seqs.append(
                _set_status(
                    run,
                    status,
                    plan.reason,
                    outcome=plan.outcome,
                    judge_pick=str((plan.outcome or {}).get("judge_pick") or ""),
                    finished_at=timezone.now(),
                    awaiting=[],
                )
            )
            return Decision(RunnerOutcome.DONE, seqs=seqs)
        if isinstance(plan, Wait):
            seqs.append(_set_status(run, RunStatus.AWAITING_HUMAN, plan.reason, awaiting=[plan.kind]))
            return Decision(RunnerOutcome.WAITING, seqs=seqs)

        assert isinstance(plan, Steps)
        runnable = [s for s in plan.steps if not view.seats[s.seat].human or s.key in view.submitted_steps]
        waiting = [s for s in plan.steps if view.seats[s.seat].human and s.key not in view.submitted_steps]
        if not runnable:
            names = ", ".join(sorted({view.seats[s.seat].name for s in waiting}))
            seqs.append(
                _set_status(
                    run,
                    RunStatus.AWAITING_HUMAN,
                    f"Waiting for {names} (human seat).",
                    awaiting=[s.key for s in waiting],
                )
            )
            return Decision(RunnerOutcome.WAITING, seqs=seqs)
        if run.pause_requested:  # paused with a step credit: run exactly one turn, then pause again
            runnable = runnable[:1]
            Run.objects.filter(pk=run.pk, step_credits__gt=0).update(step_credits=F("step_credits") - 1)
        if run.status != RunStatus.RUNNING or run.awaiting:
            seqs.append(
                _set_status(
                    run,
                    RunStatus.RUNNING,
                    "",
                    awaiting=[],
                    budget_stopped=False,
                    started_at=run.started_at or timezone.now(),
                )
            )
        # Claim every turn of the stage in this same transaction, so they all start streaming together.
        seats = {seat.handle: seat for seat in Seat.objects.filter(run_id=run_id)}
        claims = [
            _turn_claim(run_id, step, seats[step.seat], fresh=step.key not in view.turns) for step in runnable
        ]
        seqs += [c.seq for c in claims if c is not None]
        return Decision(RunnerOutcome.STEPS, steps=runnable, claims=claims, view=view, run=run, seqs=seqs)


# --- turns -----------------------------------------------------------------------------------------------------


def _turn_claim(run_id: int, step: Step, seat: Seat, *, fresh: bool) -> ClaimedTurn | None:
    """Create the turn (attempt 1) or start a new attempt of an interrupted one; None if already finished.
    `fresh`: the plan's view (read in this transaction) has no such turn, so there is nothing to look up."""
    now = timezone.now()
    turn = None if fresh else Turn.objects.select_for_update().filter(run_id=run_id, key=step.key).first()
    if turn is not None and turn.status != TurnStatus.STREAMING:
        return None
    if turn is None:
        seq = event_append(run_id=run_id, kind="turn_started", payload={"key": step.key, "attempt": 1})
        turn = Turn.objects.create(
            first_seq=seq,
            run_id=run_id,
            key=step.key,
            seat=seat,
            stage=step.stage,
            task=step.task,
            human=seat.human,
            queued_at=now,
            started_at=now,
            backend="human" if seat.human else seat.backend,
            model=seat.model,
        )
    elif turn.error.startswith(BUDGET_HOLD):
        # Held by a budget stop before its call: no call was made, so it goes on with the same attempt.
        turn.error = ""
        turn.started_at = now
        turn.save(update_fields=["error", "started_at"])
        seq = event_append(
            run_id=run_id,
            kind="turn_restarted",
            payload={"key": step.key, "attempt": turn.attempt, "reason": "resumed after the budget stop"},
        )
    else:
        if turn.attempt >= MAX_TOTAL_ATTEMPTS:
            turn.status = TurnStatus.FAILED
            turn.error = f"Gave up after {turn.attempt} interrupted attempts."
            turn.finished_at = now
            turn.save(update_fields=["status", "error", "finished_at"])
            event_append(run_id=run_id, kind="turn_failed", payload={"key": step.key, "error": turn.error})
            return None
        turn.attempt += 1
        turn.raw_text = ""
        turn.error = ""
        turn.started_at = now
        turn.first_token_at = None
        turn.save(update_fields=["attempt", "raw_text", "error", "started_at", "first_token_at"])
        seq = event_append(
            run_id=run_id,
            kind="turn_restarted",
            payload={
                "key": step.key,
                "attempt": turn.attempt,
                "reason": "an earlier attempt was interrupted",
            },
        )
    return ClaimedTurn(turn_id=turn.pk, attempt=turn.attempt, first_seq=turn.first_seq, seat=seat, seq=seq)


BUDGET_HOLD = "Held: "


def turn_hold(run_id: int, turn_id: int, attempt: int, reason: str) -> int | None:
    """A turn whose call the budget refused: it waits, visibly, for the budget to be raised."""
    with transaction.atomic():
        held = Turn.objects.filter(
            pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING, raw_text=""
        ).update(error=f"{BUDGET_HOLD}{reason}")
        if not held:
            return None
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        return event_append(run_id=run_id, kind="turn_held", payload={"key": key, "attempt": attempt})


def turn_flush(turn_id: int, attempt: int, text: str, first_token_at: Any) -> None:
    Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
        raw_text=text, first_token_at=first_token_at
    )


def turn_retry(run_id: int, owner: str, turn_id: int, attempt: int, reason: str) -> int | None:
    with transaction.atomic():
        _locked_run(run_id, owner)
        moved = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            attempt=attempt + 1, raw_text="", error=reason, started_at=timezone.now(), first_token_at=None
        )
        if not moved:
            return None
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        return event_append(
            run_id=run_id,
            kind="turn_restarted",
            payload={"key": key, "attempt": attempt + 1, "reason": reason},
        )


def turn_fail(run_id: int, turn_id: int, attempt: int, error: str) -> int | None:
    with transaction.atomic():
        failed = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            status=TurnStatus.FAILED, error=error, finished_at=timezone.now()
        )
        if not failed:
            return None
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        return event_append(run_id=run_id, kind="turn_failed", payload={"key": key, "error": error})


def _usage_increments(usage: Usage) -> dict[str, Any]:
    return {
        "input_tokens": F("input_tokens") + usage.input_tokens,
        "output_tokens": F("output_tokens") + usage.output_tokens,
        "cache_write_tokens": F("cache_write_tokens") + usage.cache_write_tokens,
        "cache_read_tokens": F("cache_read_tokens") + usage.cache_read_tokens,
        "thinking_tokens": F("thinking_tokens") + usage.thinking_tokens,
        "cost_usd": F("cost_usd") + usage.cost_usd,
    }


def usage_record(run_id: int, turn_id: int | None, usage: Usage) -> None:
    """Record one call's usage on its turn and the run as soon as the call ends, whatever its outcome: every
    call made is billed, so a turn costs the sum of its attempts (and a stale attempt's call still counts)."""
    if usage == Usage():
        return
    with transaction.atomic():
        if turn_id is not None:
            Turn.objects.filter(pk=turn_id).update(**_usage_increments(usage))
        Run.objects.filter(pk=run_id).update(**_usage_increments(usage))


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
        run = _locked_run(run_id, owner)
        if run.is_terminal or run.cancel_requested:
            return None, False
        fits_usd = run.budget_usd is None or run.cost_usd + stop.cost_usd <= run.budget_usd
        fits_tokens = run.budget_tokens is None or run.total_tokens + stop.tokens <= run.budget_tokens
        if fits_usd and fits_tokens:
            return None, False
        run.pause_requested = True
        run.step_credits = 0
        seq = _set_status(
            run, RunStatus.PAUSED, str(stop), budget_stopped=True, pause_requested=True, step_credits=0
        )
        return seq, True


def turn_citations(run_id: int, text: str) -> list[dict[str, Any]]:
    """Citations of a committed turn, verified against the snapshot its run took (empty without a KB)."""
    run = Run.objects.select_related("kb").filter(pk=run_id).first()
    if run is None or run.kb is None:
        return []
    return citations_check(run.kb, getattr(run, "snapshot", None), text)


def turn_commit(
    run_id: int,
    turn_id: int,
    attempt: int,
    *,
    text: str,
    payload: dict[str, Any],
    model: str,
    effects: Callable[[], None] | None = None,
) -> int | None:
    """Commit exactly once: a stale attempt (another runner took over) changes nothing. `effects` (the
    protocol's, e.g. proposed KB mutations) run in the same transaction, only when this commit wins."""
    now = timezone.now()
    with transaction.atomic():
        committed = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            status=TurnStatus.COMMITTED,
            citations=turn_citations(run_id, text),
            raw_text=text,
            payload=payload,
            schema_version="1.0",
            error="",
            model=model or F("model"),
            finished_at=now,
        )
        if not committed:
            return None
        if effects is not None:
            effects()
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        return event_append(run_id=run_id, kind="turn_committed", payload={"key": key, "attempt": attempt})


def human_submission(run_id: int, step_key: str) -> dict[str, Any]:
    action = HumanAction.objects.get(run_id=run_id, kind=HumanActionKind.SUBMIT_TURN, step_key=step_key)
    return dict(action.payload)


def run_fail(run_id: int, owner: str, reason: str) -> int | None:
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.lease_owner != owner or run.is_terminal:
            return None
        Turn.objects.filter(run=run, status=TurnStatus.STREAMING).update(
            status=TurnStatus.FAILED, error=reason, finished_at=timezone.now()
        )
        seq = _set_status(run, RunStatus.FAILED, reason, finished_at=timezone.now())
        run_states_record(run, Done({}, failed=True, reason=reason))
        return seq


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


def _agent_request(step: Step, claimed: ClaimedTurn, view: RunView, run: Run) -> AgentRequest:
    roles: dict[str, dict[str, Any]] = settings.DISPUTA_ROLES
    limits: dict[str, Any] = {**roles["default"], **roles.get(claimed.seat.role, {})}
    return AgentRequest(
        step=step,
        view=view,
        protocol=run.protocol,
        options=run.backend_options,
        attempt=claimed.attempt,
        model=claimed.seat.model,
        role=claimed.seat.role,
        max_tokens=int(limits["max_tokens"]),
        effort=str(limits.get("effort", "")),
    )


def _output_errors(protocol: Any, step: Step, result: Result, view: RunView) -> list[str]:
    """What is wrong with an answer, field by field: the schema first, then the protocol's own rules."""
    try:
        model = step.schema.model_validate(result.payload)
    except ValidationError as error:
        return [
            f"{'.'.join(str(part) for part in item['loc']) or 'answer'}: {item['msg']}"
            for item in error.errors()
        ]
    return list(protocol.validate(step, model, view))


class BudgetExceeded(Exception):
    def __init__(self, reason: str, *, cost_usd: Decimal, tokens: int) -> None:
        super().__init__(reason)
        self.cost_usd = cost_usd
        self.tokens = tokens


class RunFailedFatally(Exception):
    pass


# --- the runner --------------------------------------------------------------------------------------------------


class Runner:
    def __init__(self, run_id: int, *, owner: str | None = None, observer: Observer | None = None) -> None:
        self.run_id = run_id
        self.owner = owner or owner_id()
        self.observer = observer
        self.lease_lost = False
        self.cancel_seen = False
        self._step_tasks: set[asyncio.Task[None]] = set()
        # Worst-case cost and tokens of the calls in flight, counted against the budget until they end.
        self._reserved_usd = Decimal(0)
        self._reserved_tokens = 0
        self._budget_lock = asyncio.Lock()
        self._outbox: asyncio.Queue[int | None] = asyncio.Queue()
        self._live_parts: dict[int, dict[str, Any]] = {}  # first_seq -> the turn's latest live frame, unsent
        self._live_sender: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()

    def _live_offer(self, layer: Any, part: dict[str, Any]) -> None:
        """A streaming turn's latest frame, for the next live message of the run."""
        self._live_parts[part["first_seq"]] = part
        if self._live_sender is None or self._live_sender.done():
            self._live_sender = asyncio.create_task(self._live_send(layer))

    async def _live_send(self, layer: Any) -> None:
        """One live message per run per flush interval, with the latest frame of every turn streaming: the parallel
        turns of a stage then cost each viewer one frame, not one per turn (and the server one send per viewer)."""
        while self._live_parts:
            parts, self._live_parts = list(self._live_parts.values()), {}
            try:
                await layer.group_send(run_group(self.run_id), {"type": "turn.delta", "parts": parts})
            except Exception:  # best effort: the next frame, or the commit's event, brings the text
                log.exception("run %s: sending live frames failed", self.run_id)
            await asyncio.sleep(_conf("FLUSH_SECONDS"))

    async def _publish(self, seqs: list[int | None]) -> None:
        """Queue committed events for the publisher: rendering frames stays off the runner's critical path."""
        for seq in seqs:
            if seq is not None:
                self._outbox.put_nowait(seq)

    async def _publisher(self) -> None:
        """Publish in seq order; of a burst of events only the last carries the (costlier) status widgets."""
        done = False
        while not done:
            batch = [await self._outbox.get()]
            # Let the runner start what it just decided before rendering competes with it for the interpreter;
            # a burst (a stage's turn_started events) then becomes one batch. No wait once the runner stops.
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._closing.wait(), PUBLISH_DELAY_SECONDS)
            while not self._outbox.empty():
                batch.append(self._outbox.get_nowait())
            done = None in batch
            # Parallel turns commit in one order and may reach the outbox in another: published in seq order.
            seqs = [seq for seq in batch if seq is not None]
            try:
                await aevent_publish(run_id=self.run_id, seqs=seqs)
            except Exception:  # best effort: viewers replay what they miss from the database
                log.exception("run %s: publishing events %s failed", self.run_id, seqs)

    def _notify(self, kind: str, **payload: Any) -> None:
        if self.observer is not None:
            self.observer(kind, payload)

    async def execute(self, *, lease_wait: float | None = None) -> RunnerOutcome:
        wait = _conf("LEASE_SECONDS") + 1 if lease_wait is None else lease_wait
        deadline = time.monotonic() + wait
        while not await database_sync_to_async(lease_try_acquire)(self.run_id, self.owner):
            if time.monotonic() >= deadline:
                return RunnerOutcome.LEASE_BUSY
            await asyncio.sleep(0.25)
        watcher = asyncio.create_task(self._watch())
        publisher = asyncio.create_task(self._publisher())
        try:
            return await self._loop()
        except LeaseLost:
            log.warning("run %s: lease lost by %s; another runner carries on", self.run_id, self.owner)
            return RunnerOutcome.LOST_LEASE
        except Exception as error:  # an engine bug must not leave the run spinning: fail it, visibly
            log.exception("run %s failed inside the engine", self.run_id)
            seq = await database_sync_to_async(run_fail)(
                self.run_id, self.owner, f"Internal error in the debate engine: {error!r}. Re-run the debate."
            )
            await self._publish([seq])
            return RunnerOutcome.FAILED
        finally:
            watcher.cancel()
            self._live_parts.clear()
            if self._live_sender is not None:
                self._live_sender.cancel()
            self._closing.set()
            self._outbox.put_nowait(None)
            await publisher
            await database_sync_to_async(lease_release)(self.run_id, self.owner)

    async def _watch(self) -> None:
        """Heartbeat the lease and notice a cancel while turns stream."""
        renew_every = _conf("LEASE_SECONDS") / 3
        last_renew = time.monotonic()
        while True:
            await asyncio.sleep(_conf("CONTROL_POLL_SECONDS"))
            if time.monotonic() - last_renew >= renew_every:
                if not await database_sync_to_async(lease_renew)(self.run_id, self.owner):
                    self.lease_lost = True
                    self._cancel_steps()
                    return
                last_renew = time.monotonic()
            cancel = await Run.objects.filter(pk=self.run_id, cancel_requested=True).aexists()
            if cancel and not self.cancel_seen:
                self.cancel_seen = True
                self._cancel_steps()

    def _cancel_steps(self) -> None:
        for task in self._step_tasks:
            task.cancel()

    async def _loop(self) -> RunnerOutcome:
        while True:
            if self.lease_lost:
                raise LeaseLost("heartbeat failed")
            decision = await database_sync_to_async(run_decide)(self.run_id, self.owner)
            await self._publish(list(decision.seqs))
            if decision.outcome != RunnerOutcome.STEPS:
                self._notify(decision.outcome)
                return decision.outcome
            assert decision.view is not None and decision.run is not None
            view, run = decision.view, decision.run
            claimed_steps = [
                (step, claimed)
                for step, claimed in zip(decision.steps, decision.claims, strict=True)
                if claimed is not None
            ]
            requests = {
                step.key: _agent_request(step, claimed, view, run)
                for step, claimed in claimed_steps
                if not claimed.seat.human
            }
            await self._warm(claimed_steps, requests)
            if self.cancel_seen or self.lease_lost:  # noticed during the warm-up: no call is started
                continue
            self._step_tasks = {
                asyncio.create_task(self._run_step(step, claimed, view, run, requests.get(step.key)))
                for step, claimed in claimed_steps
            }
            results = await asyncio.gather(*self._step_tasks, return_exceptions=True)
            self._step_tasks = set()
            budget_stop: BudgetExceeded | None = None
            for result in results:
                if isinstance(result, LeaseLost):
                    raise result
                if isinstance(result, RunFailedFatally):
                    self._notify(RunnerOutcome.FAILED)
                    return RunnerOutcome.FAILED
            for result in results:
                if isinstance(result, BudgetExceeded):
                    budget_stop = budget_stop or result
                elif isinstance(result, BaseException) and not isinstance(result, asyncio.CancelledError):
                    raise result
            if budget_stop is not None:
                seq, stopped = await database_sync_to_async(run_budget_stop)(
                    self.run_id, self.owner, budget_stop
                )
                if stopped:
                    await self._publish([seq])
                    self._notify(RunnerOutcome.PAUSED)
                    return RunnerOutcome.PAUSED

    async def _reserve(self, estimate: Usage, what: str) -> None:
        """Check the budget before a call: what is spent, plus the worst case of the calls in flight, plus the
        worst case of this call must fit. So a run never goes over by more than its estimates were wrong."""
        async with self._budget_lock:  # a call's usage lands in the database before its reservation ends
            cost, tokens, budget_usd, budget_tokens = await database_sync_to_async(run_spending)(self.run_id)
            if budget_usd is not None and cost + self._reserved_usd + estimate.cost_usd > budget_usd:
                raise BudgetExceeded(
                    f"Budget reached: ${cost:.4f} spent of ${budget_usd:.2f}, and the next call ({what}) could "
                    f"cost up to ${estimate.cost_usd:.4f}. Raise the budget to go on, or cancel the run.",
                    cost_usd=estimate.cost_usd,
                    tokens=estimate.total_tokens,
                )
            tokens_after = tokens + self._reserved_tokens + estimate.total_tokens
            if budget_tokens is not None and tokens_after > budget_tokens:
                raise BudgetExceeded(
                    f"Token budget reached: {tokens:,} tokens used of {budget_tokens:,}, and the next call "
                    f"({what}) could use up to {estimate.total_tokens:,}. Raise the budget to go on, or cancel "
                    "the run.",
                    cost_usd=estimate.cost_usd,
                    tokens=estimate.total_tokens,
                )
            self._reserved_usd += estimate.cost_usd
            self._reserved_tokens += estimate.total_tokens

    def _release(self, estimate: Usage) -> None:
        self._reserved_usd -= estimate.cost_usd
        self._reserved_tokens -= estimate.total_tokens

    async def _warm(
        self, claimed_steps: list[tuple[Step, ClaimedTurn]], requests: dict[str, AgentRequest]
    ) -> None:
        """Let each backend write the prompt prefix its parallel calls share once, before they start."""
        by_backend: dict[str, list[AgentRequest]] = {}
        for step, claimed in claimed_steps:
            if step.key in requests:
                by_backend.setdefault(claimed.seat.backend, []).append(requests[step.key])
        for name, group in by_backend.items():
            if len(group) < 2:
                continue
            try:
                backend = backend_get(name)
                # Budget-checked like a call (an over-estimate: the warm-up writes the prefix, outputs nothing).
                estimate = backend.estimate(group[0])
            except BackendError:
                continue  # the calls will meet the same error and report it
            try:
                await self._reserve(estimate, "cache warm-up")
            except BudgetExceeded:
                continue  # the calls will be checked one by one and stop the run if they do not fit
            try:
                usage = await backend.warm(group)
            finally:
                self._release(estimate)
            if usage != Usage():
                seq = await database_sync_to_async(run_charge)(self.run_id, usage, "cache warm-up")
                await self._publish([seq])

    async def _run_step(
        self, step: Step, claimed: ClaimedTurn, view: RunView, run: Run, request: AgentRequest | None
    ) -> None:
        if claimed.seat.human:
            payload = await database_sync_to_async(human_submission)(self.run_id, step.key)
            protocol = registry.get(run.protocol)
            seq = await database_sync_to_async(turn_commit)(
                self.run_id,
                claimed.turn_id,
                claimed.attempt,
                text="",
                payload=payload,
                model="human",
                effects=partial(
                    protocol.on_commit,
                    step,
                    payload,
                    TurnEffects(run_id=self.run_id, turn_id=claimed.turn_id),
                ),
            )
            await self._publish([seq])
            self._notify("turn_committed", key=step.key)
            return
        assert request is not None
        protocol = registry.get(run.protocol)
        attempt = claimed.attempt
        repair: Repair | None = None
        failures = 0
        while True:
            try:
                backend = backend_get(claimed.seat.backend)
                request = replace(request, attempt=attempt, repair=repair)
                estimate = backend.estimate(request)
            except BackendError as error:
                return await self._fail_run(error)
            try:
                await self._reserve(estimate, f"{view.seats[step.seat].name}, {step.task}")
            except BudgetExceeded as stop:
                seq = await database_sync_to_async(turn_hold)(
                    self.run_id, claimed.turn_id, attempt, str(stop)
                )
                await self._publish([seq])
                raise
            result: Result | None = None
            released = False
            try:
                try:
                    result = await self._stream(backend, request, claimed, attempt)
                    used = result.usage
                except BackendError as error:
                    failure: BackendError = error
                    used = error.usage
                async with self._budget_lock:
                    await database_sync_to_async(usage_record)(self.run_id, claimed.turn_id, used)
                    self._release(estimate)
                    released = True
            finally:
                if not released:  # cancelled (lease lost, run cancelled): nothing more is spent by this call
                    self._release(estimate)
            if result is not None:
                errors = _output_errors(protocol, step, result, view)
                if not errors:
                    payload = step.schema.model_validate(result.payload).model_dump(mode="json")
                    crash_point("before_commit")
                    seq = await database_sync_to_async(turn_commit)(
                        self.run_id,
                        claimed.turn_id,
                        attempt,
                        text=result.text,
                        payload=payload,
                        model=result.model,
                        effects=partial(
                            protocol.on_commit,
                            step,
                            payload,
                            TurnEffects(run_id=self.run_id, turn_id=claimed.turn_id),
                        ),
                    )
                    crash_point("after_commit")
                    await self._publish([seq])
                    self._notify("turn_committed", key=step.key)
                    return
                failure = InvalidOutput(result.text, errors)
            if isinstance(failure, InvalidOutput):
                if repair is None:  # one repair: the model sees its answer and what was wrong with it
                    repair = Repair(failure.text, failure.errors)
                    if not await self._retry(
                        claimed, attempt, f"{failure.cause}. Asked the model to repair it."
                    ):
                        return
                    attempt += 1
                    continue
                return await self._fail_turn(
                    step, claimed, attempt, f"{failure.cause} (still invalid after one repair)"
                )
            if failure.fatal:
                return await self._fail_run(failure)
            failures += 1
            if failure.retryable and failures < _conf("MAX_ATTEMPTS"):
                if not await self._retry(claimed, attempt, failure.cause):
                    return
                attempt += 1
                await asyncio.sleep(_conf("RETRY_BACKOFF_SECONDS") * 2 ** (failures - 1))
                continue
            return await self._fail_turn(
                step, claimed, attempt, f"{failure.cause} (after {failures} attempts)"
            )

    async def _retry(self, claimed: ClaimedTurn, attempt: int, reason: str) -> bool:
        seq = await database_sync_to_async(turn_retry)(
            self.run_id, self.owner, claimed.turn_id, attempt, reason
        )
        await self._publish([seq])
        return seq is not None

    async def _fail_turn(self, step: Step, claimed: ClaimedTurn, attempt: int, error: str) -> None:
        seq = await database_sync_to_async(turn_fail)(self.run_id, claimed.turn_id, attempt, error)
        await self._publish([seq])
        self._notify("turn_failed", key=step.key)

    async def _fail_run(self, error: BackendError) -> None:
        """No turn of this run can succeed (bad key, unknown model): fail the run now with the cause."""
        seq = await database_sync_to_async(run_fail)(self.run_id, self.owner, error.cause)
        await self._publish([seq])
        for task in self._step_tasks:
            if task is not asyncio.current_task():
                task.cancel()
        raise RunFailedFatally(error.cause)

    async def _stream(
        self, backend: AgentBackend, request: AgentRequest, claimed: ClaimedTurn, attempt: int
    ) -> Result:
        layer = get_channel_layer()
        flush_every = _conf("FLUSH_SECONDS")
        save_every = _conf("PARTIAL_SAVE_SECONDS")
        names = {handle: seat.name for handle, seat in request.view.seats.items()}
        text = ""
        first_token_at = None
        last_flush = time.monotonic()
        last_save = -math.inf  # the first flush saves
        result: Result | None = None
        crash_point("before_first_token")

        async def flush() -> None:
            nonlocal last_flush, last_save
            last_flush = time.monotonic()
            if last_flush - last_save >= save_every:
                # Off the runner's database thread: partial saves of parallel turns must not queue behind commits.
                await database_sync_to_async(turn_flush, thread_sensitive=False)(
                    claimed.turn_id, attempt, text, first_token_at
                )
                last_save = last_flush
            if layer is not None:
                try:
                    html = turn_live_frame(
                        key=request.step.key,
                        task=request.step.task,
                        protocol=request.protocol,
                        text=text,
                        names=names,
                    )
                except Exception:  # a live preview must never fail the debate; the commit renders the turn
                    log.exception(
                        "run %s: rendering the live frame of %s failed", self.run_id, request.step.key
                    )
                else:
                    self._live_offer(
                        layer, {"first_seq": claimed.first_seq, "attempt": attempt, "html": html}
                    )
            crash_point("mid_stream")

        try:
            async for item in backend.stream(request):
                if isinstance(item, Delta):
                    if first_token_at is None:
                        first_token_at = timezone.now()
                    text += item.text
                    if time.monotonic() - last_flush >= flush_every:
                        await flush()
                elif isinstance(item, Result):
                    result = item
        finally:
            # Not sent once the stream is over: the commit's (or retry's) event shows the turn from then on.
            self._live_parts.pop(claimed.first_seq, None)
        if result is None:
            raise BackendError("The backend ended the stream without a result.")
        # No final flush: the commit saves the whole text and its event re-renders the finished turn.
        return result


async def run_execute(
    run_id: int,
    *,
    owner: str | None = None,
    observer: Observer | None = None,
    lease_wait: float | None = None,
) -> RunnerOutcome:
    """Drive a run until it completes, waits for a human, pauses or is cancelled. Returns what stopped it."""
    return await Runner(run_id, owner=owner, observer=observer).execute(lease_wait=lease_wait)
