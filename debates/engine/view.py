"""Build the RunView a protocol plans from: everything persisted, nothing in memory."""

from __future__ import annotations

from debates.models import HumanAction, HumanActionKind, Run
from debates.protocols import registry
from debates.protocols.base import RunView, SeatView, TurnView


def run_view_load(run: Run) -> RunView:
    protocol = registry.get(run.protocol)
    seats = {
        s.handle: SeatView(handle=s.handle, name=s.name, role=s.role, lens=s.lens, human=s.human)
        for s in run.seats.all()
    }
    turns = {
        t["key"]: TurnView(
            key=t["key"],
            seat=t["seat__handle"],
            stage=t["stage"],
            task=t["task"],
            status=t["status"],
            payload=t["payload"],
            error=t["error"],
        )
        for t in run.turns.order_by("first_seq", "id").values(
            "key", "seat__handle", "stage", "task", "status", "payload", "error"
        )
    }
    submitted = frozenset(
        HumanAction.objects.filter(run=run, kind=HumanActionKind.SUBMIT_TURN).values_list(
            "step_key", flat=True
        )
    )
    return RunView(
        run_id=run.pk,
        topic=run.topic,
        material=run.material,
        seed=run.seed,
        config=protocol.config_model.model_validate(run.config),
        seats=seats,
        turns=turns,
        submitted_steps=submitted,
    )
