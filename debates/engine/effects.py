"""The effects port: what a protocol's `on_commit` may do, bound to one committing turn. Runs inside the
transaction that commits the turn (the runner's, or a fork's copy of it). The events it appends are published with
the turn's: the runner publishes every event a write appends (events_collected).

A proposed KB change is an event of its own (`mutation_proposed`), so what shows the proposals (the approvals
panel, the "Needs you" counts) follows it, not every commit: most commits propose nothing."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from debates.contract import MUTATION_PROPOSED_EVENT
from debates.engine.events import event_append
from debates.models import Run, Turn
from kb.discipline import mutation_propose
from kb.models import MutationStatus, ProposedMutation


class TurnEffects:
    def __init__(self, *, run_id: int, turn_id: int) -> None:
        self.run_id = run_id
        self.turn_id = turn_id

    @property
    def run_config(self) -> Mapping[str, Any]:
        return dict(Run.objects.values_list("config", flat=True).get(pk=self.run_id) or {})

    def event_append(self, kind: str, payload: dict[str, Any]) -> int:
        return event_append(run_id=self.run_id, kind=kind, payload=payload)

    def mutation_propose(
        self,
        *,
        kind: str,
        payload: Mapping[str, Any],
        proposed_by: str,
        justification: str,
        auto_approve: bool,
    ) -> None:
        run = Run.objects.select_related("kb").get(pk=self.run_id)
        if run.kb is None:
            raise ValueError(f"run {self.run_id} has no knowledge base to propose changes to")
        waiting = ProposedMutation.objects.filter(
            run=run, kind=kind, payload=dict(payload), status=MutationStatus.PENDING
        )
        if waiting.exists():  # the same change already waits in the inbox: one decision covers both
            return
        mutation = mutation_propose(
            kb=run.kb,
            kind=kind,
            payload=dict(payload),
            proposed_by=proposed_by,
            justification=justification,
            run=run,
            turn=Turn.objects.get(pk=self.turn_id),
            auto_approve=auto_approve,
        )
        self.event_append(
            MUTATION_PROPOSED_EVENT, {"mutation": mutation.pk, "kind": kind, "status": mutation.status}
        )
