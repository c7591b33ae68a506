"""Writes: every change of a run goes through `<entity>_<action>` functions (here and in the sibling modules turns,
mutations and resume). Each commits its rows and the matching RunEvent in one transaction, publishes after commit,
and wakes the runner when there is work. This module holds run creation with its cost gate, consent, the human's
pick, the budget, pause/resume/step/cancel, the wake-up and publish helpers, and the refusals the others raise."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db import IntegrityError, transaction
from django.utils import timezone
from pydantic import BaseModel

from debates.agents.base import backend_choices, default_model
from debates.agents.pricing import price_get
from debates.contract import Done, RunView
from debates.engine import registry
from debates.engine.events import event_append
from debates.engine.publish import events_publish
from debates.engine.turns import run_states_record
from debates.engine.view import run_view_load
from debates.models import HumanAction, HumanActionKind, Run, RunStatus, Seat, Turn, TurnStatus
from debates.platform.conf import conf
from debates.services.estimates import run_estimate
from debates.tasks import run_debate_task
from kb.discipline import kb_snapshot_take

log = logging.getLogger("debates.services.runs")

User = AbstractBaseUser | AnonymousUser


class ActionRefused(Exception):
    """A human action that cannot be applied now; the message says why and what to do."""


class SubmissionInvalid(Exception):
    def __init__(self, errors: list[str]) -> None:
        super().__init__("; ".join(errors))
        self.errors = errors


def run_wake(*, run_id: int) -> None:
    """Enqueue the runner. Harmless when one is already running: the lease lets only one proceed."""

    run_debate_task.enqueue(run_id)


def run_events_publish(run_id: int, seqs: list[int]) -> None:
    """Announce committed events to the run's viewers once the transaction commits, best effort: the channel layer
    is a wake-up bus, not a log. When it fails (Redis restarting), the change is committed all the same and the
    request that made it succeeds; the viewers replay what they missed from the database."""

    def send() -> None:
        try:
            events_publish(run_id=run_id, seqs=seqs)  # at once: this runs after the commit
        except Exception:
            log.warning(
                "run %s: publishing events %s failed; viewers replay them from the database",
                run_id,
                seqs,
                exc_info=True,
            )

    transaction.on_commit(send)


def run_find_submitted(client_uuid: uuid.UUID | None) -> Run | None:
    """The run a new-run form with this idempotency key created already, if any."""
    if client_uuid is None:
        return None
    return Run.objects.filter(client_uuid=client_uuid).first()


def run_create(
    *,
    protocol: str,
    topic: str,
    config: Mapping[str, Any],
    material: str = "",
    backend: str = "simulated",
    model: str = "",
    seed: int = 0,
    backend_options: Mapping[str, Any] | None = None,
    budget_usd: Decimal | None = None,
    budget_tokens: int | None = None,
    consented: bool = False,
    seat_models: Mapping[str, str] | None = None,
    kb: Any = None,
    user: Any = None,
    start: bool = True,
    enqueue: bool = True,
    client_uuid: uuid.UUID | None = None,
) -> Run:
    """Validate the config against the protocol, create the run and its seats, and queue it (or, when its
    estimated cost is above the consent threshold, wait for a moderator to approve it).
    `seat_models`: a model per seat handle, overriding the run's model for that seat.
    `client_uuid`: the submitting form's idempotency key; a second submit with it returns the run the first
    created, unchanged, and starts nothing."""
    if (existing := run_find_submitted(client_uuid)) is not None:
        return existing
    proto = registry.get(protocol)
    parsed: BaseModel = proto.config_model.model_validate(proto.prepare(dict(config), kb))
    unknown = set(seat_models or {}) - {spec.handle for spec in proto.seats(parsed)}
    if unknown:
        raise ValueError(f"seat_models: no seat {', '.join(sorted(unknown))} in this debate")
    _models_check(backend, [model or default_model(backend), *(seat_models or {}).values()], budget_usd)
    if not topic.strip():
        raise ValueError("topic: a debate needs a question or topic")
    if kb is not None and not kb.is_stable:
        raise ValueError(
            f"kb: '{kb.title}' does not state a stable graph; confirm its stable state on the KB page first"
        )
    try:
        with transaction.atomic():
            if kb is not None and not material.strip():
                material = proto.kb_material(kb)
            run = Run.objects.create(
                client_uuid=client_uuid,
                protocol=protocol,
                topic=topic.strip(),
                material=material,
                kb=kb,
                config=parsed.model_dump(mode="json"),
                backend=backend,
                model=model or default_model(backend),
                seed=seed,
                backend_options=dict(backend_options or {}),
                budget_usd=budget_usd,
                status=RunStatus.QUEUED if start else RunStatus.DRAFT,
                created_by=user if getattr(user, "is_authenticated", False) else None,
            )
            Seat.objects.bulk_create(
                Seat(
                    run=run,
                    handle=spec.handle,
                    name=spec.name,
                    role=spec.role,
                    lens=spec.lens,
                    human=spec.human,
                    backend="human" if spec.human else backend,
                    model="" if spec.human else (seat_models or {}).get(spec.handle) or run.model,
                    position=index,
                )
                for index, spec in enumerate(proto.seats(parsed))
            )
            if kb is not None:
                kb_snapshot_take(kb=kb, run=run)
            seqs = [event_append(run_id=run.pk, kind="run_created", payload={"protocol": protocol})]
            # The run's view, loaded once: the estimate and the protocol's first states read it; the consent gate
            # changes only what the states see of it as consent and estimate.
            view = run_view_load(run)
            seqs += _consent_gate(run, view, budget_tokens=budget_tokens, consented=consented, start=start)
            view = dataclasses.replace(view, consent=run.consent, estimate_usd=run.estimate_usd)
            seqs += run_states_record(run, None, view)
    except IntegrityError:
        # Two submits of one form at once: the other committed first (the uuid is unique); this one is that run.
        if (existing := run_find_submitted(client_uuid)) is not None:
            return existing
        raise
    run_events_publish(run.pk, seqs)
    if start and enqueue and run.status == RunStatus.QUEUED:
        run_wake(run_id=run.pk)
    return run


def _models_check(backend: str, models: list[str], budget_usd: Decimal | None) -> None:
    """Refuse a model the backend does not offer (it would fail every call of its seat), and a dollar budget
    that cannot be enforced because a model has no price."""

    if backend == "simulated":
        return
    choice = next((b for b in backend_choices() if b["name"] == backend), None)
    if choice is None:
        raise ValueError(f"backend: {backend!r} is not available (simulated, anthropic or openai)")
    offered = [model for model, _ in choice["models"]]
    for model in models:
        if model not in offered:
            raise ValueError(
                f"model: {choice['label']} does not offer {model!r} (offered: {', '.join(offered)})"
            )
    unpriced = sorted({model for model in models if price_get(model) is None})
    if budget_usd is not None and unpriced:
        raise ValueError(
            f"budget_usd: {', '.join(unpriced)} has no price in DISPUTA_PRICES, so a dollar budget cannot be "
            "enforced; add its price or set a token budget instead"
        )


def _consent_gate(
    run: Run, view: RunView, *, budget_tokens: int | None, consented: bool, start: bool
) -> list[int]:
    """Estimate a paid run's cost; above the threshold it waits for a moderator's consent (seed 001's gate)."""

    fields = ["budget_tokens", "estimate", "estimate_usd", "consent"]
    run.budget_tokens = budget_tokens
    estimate = run_estimate(run, view)
    if estimate is None:
        run.save(update_fields=fields)
        return []
    run.estimate = estimate
    run.estimate_usd = Decimal(estimate["cost_usd"])
    protocol = registry.get(run.protocol)
    own = protocol.consent_threshold(protocol.config_model.model_validate(run.config))
    threshold = own if own is not None else Decimal(str(conf("CONSENT_THRESHOLD_USD")))
    seqs = []
    if run.estimate_usd <= threshold:  # approved automatically, even when the caller consented in advance
        run.consent = "auto"
    elif consented:
        run.consent = "approved"
    else:
        run.consent = "required"
        if start:
            run.status = RunStatus.AWAITING_HUMAN
            run.awaiting = ["consent"]
            run.status_reason = (
                f"Estimated cost ${run.estimate_usd:.2f} is above the ${threshold:.2f} approved automatically: "
                "a moderator must approve it before any model is called."
            )
            fields += ["status", "awaiting", "status_reason"]
            seqs.append(
                event_append(
                    run_id=run.pk,
                    kind="run_status",
                    payload={"status": run.status, "reason": run.status_reason},
                )
            )
    run.save(update_fields=fields)
    seqs.insert(
        0,
        event_append(
            run_id=run.pk,
            kind="cost_estimated",
            payload={"estimate": estimate, "threshold": str(threshold), "consent": run.consent},
        ),
    )
    return seqs


def run_consent(*, run_id: int, approve: bool, user: Any, client_uuid: uuid.UUID | None = None) -> bool:
    """The moderator's answer to the cost gate: start the run, or cancel it without calling any model."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if client_uuid is not None and HumanAction.objects.filter(client_uuid=client_uuid).exists():
            return False  # answered already: a double submit is a no-op
        if run.is_terminal:
            raise ActionRefused(f"The run is {run.status}; it can no longer be started.")
        if run.consent != "required" or run.status != RunStatus.AWAITING_HUMAN:
            raise ActionRefused("This run does not wait for consent to its cost.")
        if not _action_once(
            run,
            kind=HumanActionKind.CONSENT,
            user=user,
            client_uuid=client_uuid,
            payload={"approve": approve},
        ):
            return False
        label = getattr(user, "get_username", lambda: "someone")()
        if approve:
            run.consent = "approved"
            run.status = RunStatus.QUEUED
            run.status_reason = f"Estimated cost ${run.estimate_usd:.2f} approved by {label}."
        else:
            run.consent = "declined"
            run.status = RunStatus.CANCELLED
            run.status_reason = (
                f"Estimated cost ${run.estimate_usd:.2f} declined by {label}; no model was called."
            )
            run.finished_at = timezone.now()
        run.awaiting = []
        run.save(update_fields=["consent", "status", "status_reason", "awaiting", "finished_at"])
        seqs = [
            event_append(run_id=run.pk, kind="consent", payload={"approve": approve, "user": label}),
            event_append(
                run_id=run.pk, kind="run_status", payload={"status": run.status, "reason": run.status_reason}
            ),
            *run_states_record(run, None),
        ]
    run_events_publish(run_id, seqs)
    if approve:
        run_wake(run_id=run_id)
    return True


PICK_REASON_MIN = 10


def run_pick_record(
    *, run_id: int, pick: str, reason: str, user: Any, client_uuid: uuid.UUID | None = None
) -> bool:
    """The human's decision after a judge's verdict: agree with the judge's pick, override it (with a reason), or
    adjudicate when the judge failed (with a reason). Any protocol whose outcome has `pick_options` takes one.
    A pick can be revised: the latest stands on the run, every pick stays as a HumanAction. A double submit (same
    client uuid) is a no-op returning False."""
    pick = (pick or "").strip()
    reason = (reason or "").strip()
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if client_uuid is not None and HumanAction.objects.filter(client_uuid=client_uuid).exists():
            return False  # recorded already: a double submit is a no-op
        if run.status in {RunStatus.FAILED, RunStatus.CANCELLED}:
            raise ActionRefused(f"The run is {run.status}; it has no verdict to pick from.")
        if run.status != RunStatus.COMPLETED:
            raise ActionRefused(
                f"The run is {run.status}; you can record your decision once it has completed."
            )
        options = run.pick_options
        if not options:
            raise ActionRefused("This debate's outcome has nothing to pick from.")
        if pick not in dict(options):
            listed = ", ".join(f"{value} ({label})" for value, label in options)
            raise ActionRefused(f"Pick one of the options: {listed}.")
        judge_pick = run.judge_pick
        if judge_pick and pick != judge_pick and len(reason) < PICK_REASON_MIN:
            raise ActionRefused(
                f"Say why you override the judge (who picked {run.pick_label(judge_pick)}): "
                f"a reason of at least {PICK_REASON_MIN} characters."
            )
        if not judge_pick and len(reason) < PICK_REASON_MIN:
            raise ActionRefused(
                "The judge gave no verdict, so you adjudicate from the raw outputs: say why you pick "
                f"{run.pick_label(pick)} (at least {PICK_REASON_MIN} characters)."
            )
        agrees = (pick == judge_pick) if judge_pick else None
        if not _action_once(
            run,
            kind=HumanActionKind.PICK,
            user=user,
            client_uuid=client_uuid,
            payload={"pick": pick, "reason": reason, "agrees": agrees},
        ):
            return False
        run.human_pick = pick
        run.pick_reason = reason
        run.picked_by = user if getattr(user, "is_authenticated", False) else None
        run.picked_at = timezone.now()
        run.save(update_fields=["human_pick", "pick_reason", "picked_by", "picked_at"])
        label = getattr(user, "get_username", lambda: "someone")()
        seq = event_append(
            run_id=run.pk,
            kind="pick_recorded",
            payload={"pick": pick, "judge_pick": judge_pick, "agrees": agrees, "user": label},
        )
    run_events_publish(run_id, [seq])
    return True


def run_budget_set(
    *,
    run_id: int,
    budget_usd: Decimal | None,
    budget_tokens: int | None,
    user: Any,
    client_uuid: uuid.UUID | None = None,
) -> bool:
    """Change the run's budget; a run stopped by its budget goes on (it stops again if the new one is too low)."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_terminal:
            raise ActionRefused(f"The run is {run.status}; its budget no longer matters.")
        payload = {
            "budget_usd": None if budget_usd is None else str(budget_usd),
            "budget_tokens": budget_tokens,
        }
        if not _action_once(
            run, kind=HumanActionKind.BUDGET, user=user, client_uuid=client_uuid, payload=payload
        ):
            return False
        wake = run.budget_stopped
        run.budget_usd = budget_usd
        run.budget_tokens = budget_tokens
        fields = ["budget_usd", "budget_tokens"]
        if run.budget_stopped:
            run.budget_stopped = False
            run.pause_requested = False
            run.step_credits = 0
            fields += ["budget_stopped", "pause_requested", "step_credits"]
        run.save(update_fields=fields)
        label = getattr(user, "get_username", lambda: "someone")()
        seq = event_append(run_id=run.pk, kind="budget_set", payload={**payload, "user": label})
    run_events_publish(run_id, [seq])
    if wake:
        run_wake(run_id=run_id)
    return True


def _action_once(run: Run, *, kind: str, user: Any, client_uuid: uuid.UUID | None, **fields: Any) -> bool:
    """Record the human action; False if this client uuid was already applied (a double submit)."""
    client_uuid = client_uuid or uuid.uuid4()
    if HumanAction.objects.filter(client_uuid=client_uuid).exists():
        return False
    HumanAction.objects.create(
        run=run,
        client_uuid=client_uuid,
        kind=kind,
        user=user if getattr(user, "is_authenticated", False) else None,
        **fields,
    )
    return True


def _runner_alive(run: Run, now: datetime) -> bool:
    return bool(run.lease_owner) and run.lease_expires_at is not None and run.lease_expires_at > now


@dataclass
class ControlResult:
    applied: bool
    wake: bool = False


def run_control(
    *, run_id: int, action: str, user: Any, client_uuid: uuid.UUID | None = None
) -> ControlResult:
    """Pause, resume, step one turn, or cancel. Committed before the caller answers; then the runner wakes."""
    if action not in {"pause", "resume", "step", "cancel"}:
        raise ActionRefused(f"Unknown action {action!r}.")
    now = timezone.now()
    seqs: list[int] = []
    wake = False
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_terminal:
            raise ActionRefused(f"The run is {run.status}; nothing can be changed any more.")
        if action == "step" and not run.pause_requested:
            raise ActionRefused("Step works on a paused run: pause it first.")
        if not _action_once(run, kind=action, user=user, client_uuid=client_uuid):
            return ControlResult(applied=False)
        if action == "pause":
            run.pause_requested = True
            run.save(update_fields=["pause_requested"])
        elif action == "resume":
            run.pause_requested = False
            run.step_credits = 0
            run.save(update_fields=["pause_requested", "step_credits"])
            wake = run.status in {RunStatus.PAUSED, RunStatus.QUEUED}
        elif action == "step":
            run.step_credits += 1
            run.save(update_fields=["step_credits"])
            wake = run.status in {RunStatus.PAUSED, RunStatus.QUEUED}
        else:
            run.cancel_requested = True
            run.save(update_fields=["cancel_requested"])
            if not (run.status == RunStatus.RUNNING and _runner_alive(run, now)):
                # No live runner to notice: cancel here (a dead runner's streaming turns end failed).
                Turn.objects.filter(run=run, status=TurnStatus.STREAMING).update(
                    status=TurnStatus.FAILED, error="Cancelled by a moderator.", finished_at=now
                )
                run.status = RunStatus.CANCELLED
                run.status_reason = "Cancelled by a moderator."
                run.finished_at = now
                run.save(update_fields=["status", "status_reason", "finished_at"])
        label = getattr(user, "get_username", lambda: "someone")()
        seqs.append(event_append(run_id=run.pk, kind="control", payload={"action": action, "user": label}))
        if action == "cancel" and run.status == RunStatus.CANCELLED:
            seqs.append(event_append(run_id=run.pk, kind="run_status", payload={"status": run.status}))
            seqs += run_states_record(run, Done({}, failed=True, reason=run.status_reason))
    run_events_publish(run_id, seqs)
    if wake:
        run_wake(run_id=run_id)
    return ControlResult(applied=True, wake=wake)
