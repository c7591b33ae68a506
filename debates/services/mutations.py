"""Writes: a moderator's decision on a KB mutation a run proposed."""

from __future__ import annotations

import uuid
from typing import Any

from django.db import transaction

from debates.engine.events import event_append
from debates.models import HumanAction, HumanActionKind, Run
from debates.services.runs import ActionRefused, _action_once, run_events_publish
from kb.discipline import DisciplineViolation, mutation_decide
from kb.models import MutationStatus, ProposedMutation


def run_mutation_decide(
    run_id: int,
    mutation_id: int,
    approve: bool,
    reason: str = "",
    user: Any = None,
    *,
    client_uuid: uuid.UUID | None = None,
) -> Any:
    """A moderator approves (applied through the KB discipline, which writes its R-NNN revision) or rejects (with
    a reason) a KB mutation this run proposed. The decision, its HumanAction and a `mutation_decided` RunEvent
    commit together, so every open page of the run re-renders its ledger, approvals and KB ratings.
    A double submit (same client uuid) changes nothing; a proposal decided already is refused with its state.
    Returns the ProposedMutation as it stands."""

    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run_id)
        mutation = ProposedMutation.objects.filter(pk=mutation_id, run=run).first()
        if mutation is None:
            raise ActionRefused(f"Run {run_id} proposed no KB change #{mutation_id}.")
        if client_uuid is not None and HumanAction.objects.filter(client_uuid=client_uuid).exists():
            return mutation  # decided already by this very submission
        if mutation.status != MutationStatus.PENDING:
            done = f" as {mutation.revision.r_id}" if mutation.revision else ""
            raise ActionRefused(f"This proposal is {mutation.status}{done} already.")
        try:
            with transaction.atomic():
                mutation = mutation_decide(mutation=mutation, approve=approve, user=user, reason=reason)
        except DisciplineViolation as violation:
            raise ActionRefused(str(violation)) from None
        revision = mutation.revision.r_id if mutation.revision else ""
        _action_once(
            run,
            kind=HumanActionKind.MUTATION_DECIDE,
            user=user,
            client_uuid=client_uuid,
            payload={"mutation": mutation.pk, "approve": approve, "reason": reason.strip()},
        )
        label = getattr(user, "get_username", lambda: "someone")()
        seq = event_append(
            run_id=run.pk,
            kind="mutation_decided",
            payload={
                "mutation": mutation.pk,
                "kind": mutation.kind,
                "status": mutation.status,
                "revision": revision,
                "arg_id": str(mutation.payload.get("arg_id", "")),
                "user": label,
            },
        )
    run_events_publish(run_id, [seq])
    return mutation
