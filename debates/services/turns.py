"""Writes: a human seat's turn, submitted from the run page and committed by the runner."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.db import IntegrityError, transaction
from pydantic import ValidationError

from debates.engine import registry
from debates.engine.events import event_append
from debates.engine.view import run_view_load
from debates.models import HumanAction, HumanActionKind, Run, RunStatus
from debates.selectors.runs import run_awaited_steps
from debates.services.runs import ActionRefused, SubmissionInvalid, _action_once, run_events_publish, run_wake


def human_turn_submit(
    *, run_id: int, step_key: str, data: Mapping[str, Any], user: Any, client_uuid: uuid.UUID | None = None
) -> bool:
    """A human seat's turn: validated like an agent's output, stored as a HumanAction, committed by the runner."""
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        if run.is_terminal:
            raise ActionRefused(f"The run is {run.status}; it takes no more turns.")
        step = next((s for s in run_awaited_steps(run) if s.key == step_key), None)
        if step is None:
            if HumanAction.objects.filter(
                run=run, kind=HumanActionKind.SUBMIT_TURN, step_key=step_key
            ).exists():
                return False  # already submitted: a double submit is a no-op
            raise ActionRefused(f"The run is not waiting for {step_key!r} any more; reload the page.")
        protocol = registry.get(run.protocol)
        try:
            payload_dict = protocol.human_payload(step, data)
            payload = step.schema.model_validate(payload_dict)
        except ValidationError as error:
            raise SubmissionInvalid(
                [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in error.errors()]
            ) from None
        except ValueError as error:
            raise SubmissionInvalid([str(error)]) from None
        errors = protocol.validate(step, payload, run_view_load(run))
        if errors:
            raise SubmissionInvalid(errors)
        try:
            with transaction.atomic():
                applied = _action_once(
                    run,
                    kind=HumanActionKind.SUBMIT_TURN,
                    user=user,
                    client_uuid=client_uuid,
                    step_key=step_key,
                    payload=payload.model_dump(mode="json"),
                )
        except IntegrityError:
            return False
        if not applied:
            return False
        run.status = RunStatus.QUEUED
        run.save(update_fields=["status"])
        seq = event_append(run_id=run.pk, kind="human_action", payload={"step_key": step_key})
    run_events_publish(run_id, [seq])
    run_wake(run_id=run_id)
    return True
