"""Lineage of runs: re-run a finished run, or fork one at a chosen turn. The new run names its parent.

- **Re-run** (`run_rerun`): a new run with the parent's protocol, topic, material, KB, config (so the same seats),
  budget and, on the same backend, its per-seat models and backend options (the simulated backend's switches);
  optionally on another backend, model or seed. Nothing is copied: every turn is generated anew.
- **Fork** (`run_fork`): the same new run, plus the parent's history up to and including the chosen (committed)
  turn, in the order the run page shows it (Turn.first_seq, id): committed and failed turns with their raw text,
  payload, citations, attempt, timings, backend and model, and the human submissions of copied human turns. Then
  the child is queued and its protocol plans the rest — a plan is a pure function of the persisted turns, so the
  child goes on from the fork point as the parent would have.

Copied turns are replayed through the protocol: the child's plan is asked for its next steps, and each step whose
turn is in the copied history is filled with the copy and its commit effects (Protocol.on_commit: e.g. a
consultation's round artifact) run in the child; a history the protocol does not ask for is refused. Each copy
appends the same `turn_started` / `turn_committed` (or `turn_failed`) events a runner would, marked `copied_from`.

Usage: a copied turn's tokens and cost are zeroed in the child (the parent paid for them and keeps them in its
totals; `copied_from` leads to the original), so nothing is counted twice and the child's budget applies to
what it generates itself.

KB rules (one for every protocol, it matters for kb-debate and for data KBs): the child takes its own snapshot
of the KB when it is created. A fork is refused unless that snapshot equals the parent's (the KB has not changed
since the parent started: no revision applied by the parent or by any other run), and refused at or after a
turn that proposed KB mutations (a proposal lives in the live KB — applied, rejected or waiting there — and
cannot be replayed in a second run without applying it twice). Fork at an earlier turn, or re-run: a re-run
debates the KB as it stands now."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from debates.agents.base import backend_choices
from debates.contract import Step, Steps
from debates.engine import registry
from debates.engine.effects import TurnEffects
from debates.engine.events import event_append
from debates.engine.view import run_view_load
from debates.models import HumanAction, HumanActionKind, Run, Seat, Turn, TurnStatus
from debates.services.runs import ActionRefused, run_create, run_events_publish, run_wake
from kb.models import ProposedMutation, Revision, Snapshot

COPIED_STATUSES = (TurnStatus.COMMITTED, TurnStatus.FAILED)


class LineageRefused(ActionRefused):
    """A re-run or fork that cannot be made; the message says why and what to do instead."""


def run_rerun(
    run_id: int,
    *,
    user: Any,
    backend: str | None = None,
    model: str | None = None,
    seed: int | None = None,
    enqueue: bool = True,
) -> Run:
    """A new run from a finished one, with the same config; optionally another backend, model or seed."""
    parent = Run.objects.select_related("kb").get(pk=run_id)
    if not parent.is_terminal:
        raise LineageRefused(
            f"Run {parent.pk} is {parent.status}; re-run it once it has finished (or cancel it first)."
        )
    with transaction.atomic():
        child = _child_create(parent, user=user, backend=backend, model=model, seed=seed)
        seq = event_append(
            run_id=child.pk, kind="lineage", payload={"parent": parent.pk, "forked_at_key": "", "copied": 0}
        )
    _start(child, [seq], enqueue=enqueue)
    return child


def run_fork(
    run_id: int,
    *,
    upto_key: str,
    user: Any,
    backend: str | None = None,
    model: str | None = None,
    seed: int | None = None,
    enqueue: bool = True,
) -> Run:
    """A new run whose history up to and including the committed turn `upto_key` is copied from run `run_id`;
    its protocol then plans the rest. Optionally another backend, model or seed for what is generated anew."""
    parent = Run.objects.select_related("kb").get(pk=run_id)
    chosen = parent.turns.filter(key=upto_key).first()
    if chosen is None:
        raise LineageRefused(f"Run {parent.pk} has no turn {upto_key!r}.")
    if chosen.status != TurnStatus.COMMITTED:
        raise LineageRefused(
            f"Turn {upto_key} of run {parent.pk} is {chosen.status}, not committed: fork at a committed turn."
        )
    history = fork_history(parent, chosen)
    _mutations_refuse(parent, history)
    with transaction.atomic():
        child = _child_create(parent, user=user, backend=backend, model=model, seed=seed)
        if child.config != parent.config:
            raise LineageRefused(
                f"Run {parent.pk}'s config does not validate the same way any more, so its history cannot be "
                "continued; re-run it instead."
            )
        _kb_unchanged(parent, child)
        child.forked_at_key = upto_key
        child.save(update_fields=["forked_at_key"])
        seqs = [
            event_append(
                run_id=child.pk,
                kind="lineage",
                payload={"parent": parent.pk, "forked_at_key": upto_key, "copied": len(history)},
            )
        ]
        seqs += _history_replay(parent, child, history)
    _start(child, seqs, enqueue=enqueue)
    return child


def fork_history(parent: Run, chosen: Turn) -> list[Turn]:
    """The turns a fork at `chosen` copies: the finished turns shown up to and including it."""
    turns = parent.turns.select_related("seat").order_by("first_seq", "id")
    return [
        t
        for t in turns
        if (t.first_seq, t.pk) <= (chosen.first_seq, chosen.pk) and t.status in COPIED_STATUSES
    ]


def fork_points(run: Run) -> list[Turn]:
    """The turns a moderator may fork a run at (committed ones), in the page's order."""
    return list(
        run.turns.filter(status=TurnStatus.COMMITTED).select_related("seat").order_by("first_seq", "id")
    )


# --- the new run ---------------------------------------------------------------------------------------------------


def _child_create(parent: Run, *, user: Any, backend: str | None, model: str | None, seed: int | None) -> Run:
    """The child run (queued, not yet woken) with the parent's settings, overridden where asked."""
    backend = (backend or "").strip() or parent.backend
    same_backend = backend == parent.backend
    _backend_check(backend)
    model = (model or "").strip() or (parent.model if same_backend else "")
    same_models = same_backend and model == parent.model
    seat_models = (
        {s.handle: s.model for s in parent.seats.all() if not s.human and s.model and s.model != parent.model}
        if same_models
        else None
    )
    try:
        child = run_create(
            protocol=parent.protocol,
            topic=parent.topic,
            config=parent.config,
            material=parent.material,
            kb=parent.kb,
            backend=backend,
            model=model,
            seed=parent.seed if seed is None else seed,
            backend_options=parent.backend_options if same_backend else {},
            budget_usd=parent.budget_usd,
            budget_tokens=parent.budget_tokens,
            seat_models=seat_models or None,
            user=user,
            start=True,
            enqueue=False,
        )
    except (ValueError, LookupError) as error:  # pydantic's ValidationError is a ValueError
        raise LineageRefused(f"The new run could not be created: {error}") from None
    child.parent = parent
    child.save(update_fields=["parent"])
    return child


def _backend_check(backend: str) -> None:

    choice = next((b for b in backend_choices() if b["name"] == backend), None)
    if choice is None:
        raise LineageRefused(f"Backend {backend!r} does not exist (simulated, anthropic or openai).")
    if choice["disabled_reason"]:
        raise LineageRefused(f"{choice['label']} cannot be used: {choice['disabled_reason']}")


def _start(child: Run, seqs: list[int], *, enqueue: bool) -> None:
    # Nobody watches a run this new: publishing its last event is enough to wake any page that opens early.
    run_events_publish(child.pk, seqs[-1:])
    child.refresh_from_db()
    if enqueue and child.status == "queued":
        run_wake(run_id=child.pk)


# --- fork rules ------------------------------------------------------------------------------------------------


def _mutations_refuse(parent: Run, history: list[Turn]) -> None:

    proposed = set(
        ProposedMutation.objects.filter(run=parent, turn__in=history).values_list("turn_id", flat=True)
    )
    for turn in history:
        payload = turn.payload if isinstance(turn.payload, Mapping) else {}
        if turn.pk in proposed or payload.get("mutations"):
            raise LineageRefused(
                f"Turn {turn.key} of run {parent.pk} proposed changes to the knowledge base; a fork cannot replay "
                "them (they live in the KB itself, where they were applied, rejected or still wait). Fork at a "
                f"turn before {turn.key}, or re-run the debate."
            )


def _kb_unchanged(parent: Run, child: Run) -> None:
    """The child's snapshot (taken just now) must be the parent's: a fork starts from the KB its history saw."""
    if parent.kb_id is None:
        return

    snapshots = {s.run_id: s for s in Snapshot.objects.filter(run__in=[parent, child])}
    before, now = snapshots.get(parent.pk), snapshots.get(child.pk)
    if before is None or now is None or before.files == now.files:
        return
    since = list(
        Revision.objects.filter(kb_id=parent.kb_id, created_at__gt=before.created_at)
        .order_by("pk")
        .values_list("r_id", flat=True)
    )
    what = f" ({', '.join(since[:5])}{', …' if len(since) > 5 else ''})" if since else ""
    raise LineageRefused(
        f"The knowledge base has changed since run {parent.pk} took its snapshot{what}; a fork must start from "
        "the KB its copied history saw. Re-run the debate instead: a re-run debates the KB as it stands now."
    )


# --- replaying the history -------------------------------------------------------------------------------------


def _history_replay(parent: Run, child: Run, history: list[Turn]) -> list[int]:
    """Copy the history into the child in the order the child's own plan asks for it; returns the events."""
    protocol = registry.get(child.protocol)
    seats = {seat.handle: seat for seat in Seat.objects.filter(run=child)}
    pending = {t.key: t for t in history}
    seqs: list[int] = []
    while pending:
        plan = protocol.plan(run_view_load(child))
        steps = [s for s in plan.steps if s.key in pending] if isinstance(plan, Steps) else []
        if not steps:
            break
        for step in sorted(steps, key=lambda s: (pending[s.key].first_seq, pending[s.key].pk)):
            seqs += _turn_copy(parent, child, step, pending.pop(step.key), seats, protocol)
    if pending:
        keys = ", ".join(sorted(pending))
        raise LineageRefused(
            f"Replaying run {parent.pk}'s history, its protocol does not ask for {keys}; this history cannot be "
            "continued in a new run. Fork at another turn, or re-run the debate."
        )
    return seqs


def _turn_copy(
    parent: Run, child: Run, step: Step, turn: Turn, seats: dict[str, Seat], protocol: Any
) -> list[int]:
    if step.seat != turn.seat.handle or step.task != turn.task or step.seat not in seats:
        raise LineageRefused(
            f"Replaying run {parent.pk}'s history, {turn.key} is planned for {step.seat} ({step.task}), not "
            f"{turn.seat.handle} ({turn.task}); it cannot be copied."
        )
    mark = {"key": turn.key, "attempt": turn.attempt, "copied_from": parent.pk}
    seqs = [event_append(run_id=child.pk, kind="turn_started", payload=mark)]
    if turn.human:
        submission = HumanAction.objects.filter(
            run=parent, kind=HumanActionKind.SUBMIT_TURN, step_key=turn.key
        ).first()
        if submission is not None:
            HumanAction.objects.create(
                run=child,
                kind=HumanActionKind.SUBMIT_TURN,
                step_key=turn.key,
                payload=submission.payload,
                user=submission.user,
            )
    copy = Turn.objects.create(
        run=child,
        key=turn.key,
        seat=seats[step.seat],
        stage=turn.stage,
        task=turn.task,
        attempt=turn.attempt,
        status=turn.status,
        raw_text=turn.raw_text,
        payload=turn.payload,
        schema_version=turn.schema_version,
        citations=turn.citations,
        flags=turn.flags,
        error=turn.error,
        human=turn.human,
        copied_from=turn,
        backend=turn.backend,
        model=turn.model,
        first_seq=seqs[0],
        queued_at=turn.queued_at,
        started_at=turn.started_at,
        first_token_at=turn.first_token_at,
        finished_at=turn.finished_at,
    )
    if turn.status == TurnStatus.COMMITTED:
        protocol.on_commit(step, turn.payload or {}, TurnEffects(run_id=child.pk, turn_id=copy.pk))
        seqs.append(event_append(run_id=child.pk, kind="turn_committed", payload=mark))
    else:
        seqs.append(event_append(run_id=child.pk, kind="turn_failed", payload={**mark, "error": turn.error}))
    return seqs
