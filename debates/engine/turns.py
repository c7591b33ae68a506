"""The runner's writes, each one transaction: the decision of what to do next (under the run's row lock, with the
turns it claims), and every change of a turn's life (held, flushed, retried, failed, committed exactly once).

The events they append, their own and those of the code they call (a protocol's effects, the state records), are
published by the runner, which collects them all (events_collected): the seqs some of them return are answers
(did the commit win?), not the list of what to publish."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from debates.agents.base import Repair
from debates.contract import Done, Plan, RunView, Step, Steps, TurnView, Wait
from debates.engine import registry
from debates.engine.events import event_append, events_append, events_collected
from debates.engine.lease import locked_run
from debates.engine.view import run_seats, run_snapshot_arguments, run_view_load
from debates.models import HumanAction, HumanActionKind, Run, RunEvent, RunStatus, Seat, Turn, TurnStatus
from kb.citations import citation_verify, citations_extract

# A turn whose process keeps dying is given up after this many attempts in all (backend failures count
# against MAX_ATTEMPTS separately, per runner).
MAX_TOTAL_ATTEMPTS = 25


BUDGET_HOLD = "Held: "


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


@dataclass
class ClaimedTurn:
    turn_id: int
    attempt: int
    first_seq: int
    seat: Seat
    # The repair this turn was asked for already, when a runner takes it over (turn_retry records it): asked again
    # as it was, never a second time.
    repair: Repair | None = None


@dataclass
class Decision:
    outcome: RunnerOutcome
    steps: list[Step] = field(default_factory=list)
    claims: list[ClaimedTurn | None] = field(default_factory=list)
    view: RunView | None = None
    run: Run | None = None
    # Of a plan to run steps (engine.progress): the protocol's estimate of the run's turns, the plan's notices, and
    # the view as the decision left it at `seq` (None when it cannot tell: a claim found its turn finished).
    expected_turns: int = 0
    notices: tuple[str, ...] = ()
    seq: int = 0
    view_after: RunView | None = None


def run_status_set(run: Run, status: str, reason: str = "", **fields: Any) -> int:
    run.status = status
    run.status_reason = reason
    for name, value in fields.items():
        setattr(run, name, value)
    run.save(update_fields=["status", "status_reason", *fields])
    return event_append(run_id=run.pk, kind="run_status", payload={"status": status, "reason": reason})


def run_states_record(run: Run, plan: Plan | None, view: RunView | None = None) -> list[int]:
    """Record the protocol's own state changes (Protocol.states) as `state` events {from, to, reason}, inside the
    caller's transaction (the event's time is the transition's). Nothing for a protocol without a state machine."""
    return _states_record(run, plan, view)[0]


def _states_record(run: Run, plan: Plan | None, view: RunView | None) -> tuple[list[int], str | None]:
    """run_states_record, and the state the run is left in (None: unchanged)."""
    protocol = registry.get(run.protocol)
    if not protocol.has_states:
        return [], None
    view = view if view is not None else run_view_load(run)
    transitions = protocol.states(view, plan)
    seqs = events_append(
        run_id=run.pk,
        events=[("state", {"from": t.src, "to": t.dst, "reason": t.reason}) for t in transitions],
    )
    return seqs, (transitions[-1].dst if transitions else None)


def run_decide(run_id: int, owner: str) -> Decision:
    """Plan the next move and, unless it is to run steps, apply it, all in one transaction so a human action
    committed concurrently is either seen by this plan or sees the status this plan sets (no lost wake-up). The
    events it appends are the caller's to publish (the runner collects them: events_collected)."""
    with transaction.atomic(), events_collected() as appended:
        run = locked_run(run_id, owner)
        if run.cancel_requested:
            Turn.objects.filter(run=run, status=TurnStatus.STREAMING).update(
                status=TurnStatus.FAILED, error="Cancelled by a moderator.", finished_at=timezone.now()
            )
            run_status_set(run, RunStatus.CANCELLED, "Cancelled by a moderator.", finished_at=timezone.now())
            run_states_record(run, Done({}, failed=True, reason="Cancelled by a moderator."))
            return Decision(RunnerOutcome.CANCELLED)
        if run.consent == "required":  # nothing is called before a moderator consents to the estimated cost
            return Decision(RunnerOutcome.WAITING)
        if run.pause_requested and run.step_credits == 0:
            if run.status != RunStatus.PAUSED:
                run_status_set(run, RunStatus.PAUSED, "Paused by a moderator.")
            return Decision(RunnerOutcome.PAUSED)

        protocol = registry.get(run.protocol)
        view = run_view_load(run)
        plan = protocol.plan(view)
        _, state = _states_record(run, plan, view)
        if isinstance(plan, Done):
            status = RunStatus.FAILED if plan.failed else RunStatus.COMPLETED
            run.outcome = plan.outcome
            run_status_set(
                run,
                status,
                plan.reason,
                outcome=plan.outcome,
                judge_pick=str((plan.outcome or {}).get("judge_pick") or ""),
                finished_at=timezone.now(),
                awaiting=[],
            )
            return Decision(RunnerOutcome.DONE)
        if isinstance(plan, Wait):
            run_status_set(run, RunStatus.AWAITING_HUMAN, plan.reason, awaiting=[plan.kind])
            return Decision(RunnerOutcome.WAITING)

        assert isinstance(plan, Steps)
        runnable = [s for s in plan.steps if not view.seats[s.seat].human or s.key in view.submitted_steps]
        waiting = [s for s in plan.steps if view.seats[s.seat].human and s.key not in view.submitted_steps]
        if not runnable:
            names = ", ".join(sorted({view.seats[s.seat].name for s in waiting}))
            run_status_set(
                run,
                RunStatus.AWAITING_HUMAN,
                f"Waiting for {names} (human seat).",
                awaiting=[s.key for s in waiting],
            )
            return Decision(RunnerOutcome.WAITING)
        if run.pause_requested:  # paused with a step credit: run exactly one turn, then pause again
            runnable = runnable[:1]
            Run.objects.filter(pk=run.pk, step_credits__gt=0).update(step_credits=F("step_credits") - 1)
        if run.status != RunStatus.RUNNING or run.awaiting:
            run_status_set(
                run,
                RunStatus.RUNNING,
                "",
                awaiting=[],
                budget_stopped=False,
                started_at=run.started_at or timezone.now(),
            )
        # Claim every turn of the stage in this same transaction, so they all start streaming together.
        seats = {seat.handle: seat for seat in run_seats(run)}
        claims = _turns_claim(run_id, runnable, seats, view)
        after = _view_with_claims(replace(view, state=state) if state is not None else view, runnable, claims)
        return Decision(
            RunnerOutcome.STEPS,
            steps=runnable,
            claims=claims,
            view=view,
            run=run,
            expected_turns=protocol.expected_turns(after or view),
            notices=tuple(plan.notices),
            # The run row is locked: its last seq is this transaction's last append.
            seq=max([run.last_seq, *appended]),
            view_after=after,
        )


def _view_with_claims(view: RunView, steps: list[Step], claims: list[ClaimedTurn | None]) -> RunView | None:
    """The view as a read after the claims would give it: the turns they started or restarted, streaming. None
    when a claim found its turn finished or gave it up (a read would show what it found)."""
    if any(claimed is None for claimed in claims):
        return None
    streaming = {
        step.key: TurnView(
            key=step.key,
            seat=step.seat,
            stage=step.stage,
            task=step.task,
            status=TurnStatus.STREAMING,
            payload=None,
            flags=view.turns[step.key].flags if step.key in view.turns else (),
        )
        for step in steps
    }
    return replace(view, turns={**view.turns, **streaming})


def _turns_claim(
    run_id: int, steps: list[Step], seats: dict[str, Seat], view: RunView
) -> list[ClaimedTurn | None]:
    """Claim the steps' turns, in order. A stage's turns all new (the usual case) start with one append of their
    events and one insert of the turns: one claim at a time was two round trips per turn, a busy worker's 10-15 ms
    each, and the first turn's start waited for the last one's (bench fanout)."""
    if len(steps) < 2 or any(step.key in view.turns for step in steps):
        return [
            _turn_claim(run_id, step, seats[step.seat], fresh=step.key not in view.turns) for step in steps
        ]
    now = timezone.now()
    seqs = events_append(
        run_id=run_id, events=[("turn_started", {"key": step.key, "attempt": 1}) for step in steps]
    )
    turns = Turn.objects.bulk_create(
        [_turn_new(run_id, step, seats[step.seat], seq, now) for step, seq in zip(steps, seqs, strict=True)]
    )
    return [
        ClaimedTurn(turn_id=turn.pk, attempt=1, first_seq=turn.first_seq, seat=seats[step.seat], repair=None)
        for step, turn in zip(steps, turns, strict=True)
    ]


def _turn_new(run_id: int, step: Step, seat: Seat, first_seq: int, now: Any) -> Turn:
    return Turn(
        first_seq=first_seq,
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


def _turn_claim(run_id: int, step: Step, seat: Seat, *, fresh: bool) -> ClaimedTurn | None:
    """Create the turn (attempt 1) or start a new attempt of an interrupted one; None if already finished.
    `fresh`: the plan's view (read in this transaction) has no such turn, so there is nothing to look up."""
    now = timezone.now()
    turn = None if fresh else Turn.objects.select_for_update().filter(run_id=run_id, key=step.key).first()
    if turn is not None and turn.status != TurnStatus.STREAMING:
        return None
    if turn is None:
        seq = event_append(run_id=run_id, kind="turn_started", payload={"key": step.key, "attempt": 1})
        turn = _turn_new(run_id, step, seat, seq, now)
        turn.save(force_insert=True)
    elif turn.error.startswith(BUDGET_HOLD):
        # Held by a budget stop before its call: no call was made, so it goes on with the same attempt.
        turn.error = ""
        turn.started_at = now
        turn.save(update_fields=["error", "started_at"])
        event_append(
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
        event_append(
            run_id=run_id,
            kind="turn_restarted",
            payload={
                "key": step.key,
                "attempt": turn.attempt,
                "reason": "an earlier attempt was interrupted",
            },
        )
    repair = _repair_asked(run_id, step.key) if turn.attempt > 1 else None
    return ClaimedTurn(
        turn_id=turn.pk, attempt=turn.attempt, first_seq=turn.first_seq, seat=seat, repair=repair
    )


def _repair_asked(run_id: int, key: str) -> Repair | None:
    """The repair the turn was last asked for (recorded with its restart by turn_retry), if any."""
    payload = (
        RunEvent.objects.filter(
            run_id=run_id, kind="turn_restarted", payload__key=key, payload__has_key="repair"
        )
        .order_by("-seq")
        .values_list("payload", flat=True)
        .first()
    )
    if payload is None:
        return None
    return Repair(text=payload["repair"]["text"], errors=tuple(payload["repair"]["errors"]))


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
    """Save a streaming attempt's text so far. A fixed statement, not the ORM: every streaming turn saves
    every PARTIAL_SAVE_SECONDS."""
    connection = transaction.get_connection()
    first_token = Turn._meta.get_field("first_token_at").get_db_prep_value(first_token_at, connection)
    with connection.cursor() as cursor:
        cursor.execute(
            f'UPDATE "{Turn._meta.db_table}" SET "raw_text" = %s, "first_token_at" = %s'
            ' WHERE "id" = %s AND "attempt" = %s AND "status" = %s',
            [text, first_token, turn_id, attempt, TurnStatus.STREAMING.value],
        )


def turn_retry(
    run_id: int, owner: str, turn_id: int, attempt: int, reason: str, repair: Repair | None = None
) -> int | None:
    """A new attempt of a streaming turn, for `reason`; `repair`: what the model is shown again and asked to fix,
    kept with the restart so that a runner taking the turn over asks the same, once (ClaimedTurn.repair)."""
    with transaction.atomic():
        locked_run(run_id, owner)
        moved = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            attempt=attempt + 1, raw_text="", error=reason, started_at=timezone.now(), first_token_at=None
        )
        if not moved:
            return None
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        payload: dict[str, Any] = {"key": key, "attempt": attempt + 1, "reason": reason}
        if repair is not None:
            payload["repair"] = {"text": repair.text, "errors": list(repair.errors)}
        return event_append(run_id=run_id, kind="turn_restarted", payload=payload)


def turn_fail(run_id: int, turn_id: int, attempt: int, error: str) -> int | None:
    with transaction.atomic():
        failed = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            status=TurnStatus.FAILED, error=error, finished_at=timezone.now()
        )
        if not failed:
            return None
        key = Turn.objects.values_list("key", flat=True).get(pk=turn_id)
        return event_append(run_id=run_id, kind="turn_failed", payload={"key": key, "error": error})


def turn_citations(run_id: int, text: str) -> list[dict[str, Any]]:
    """Citations of a committed turn, verified against the snapshot its run took (empty without a KB)."""
    cited = citations_extract(text)
    if not cited:
        return []
    # The run's KB by its id alone (what a citation of an argument or a source checks), not the run (its
    # material, config, ...) nor the KB's own fields (a data KB's tree is large).
    run = Run.objects.select_related("kb").only("created_at", "kb__id").filter(pk=run_id).first()
    if run is None or run.kb is None:
        return []
    snapshot = run_snapshot_arguments(run)
    return [citation_verify(kb=run.kb, citation=citation, snapshot=snapshot) for citation in cited]


def turn_commit(
    run_id: int,
    turn_id: int,
    attempt: int,
    *,
    key: str,
    text: str,
    payload: dict[str, Any],
    model: str,
    flags: list[dict[str, str]] | None = None,
    effects: Callable[[], None] | None = None,
) -> int | None:
    """Commit exactly once: a stale attempt (another runner took over) changes nothing. `effects` (the
    protocol's, e.g. proposed KB mutations) run in the same transaction, only when this commit wins. `key`: the
    turn's step key, which its event names (the runner has it: no read for it)."""
    now = timezone.now()
    with transaction.atomic():
        committed = Turn.objects.filter(pk=turn_id, attempt=attempt, status=TurnStatus.STREAMING).update(
            status=TurnStatus.COMMITTED,
            citations=turn_citations(run_id, text),
            raw_text=text,
            payload=payload,
            flags=flags or [],
            schema_version="1.0",
            error="",
            model=model or F("model"),
            finished_at=now,
        )
        if not committed:
            return None
        if effects is not None:
            effects()
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
        seq = run_status_set(run, RunStatus.FAILED, reason, finished_at=timezone.now())
        run_states_record(run, Done({}, failed=True, reason=reason))
        return seq
