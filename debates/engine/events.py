"""Run events: appended in the committing transaction with a strictly increasing per-run seq; announced to the
run's viewers after commit by the publish port (debates.engine.publish). The events table is the log."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import F

from debates.models import Run, RunEvent


def event_append(*, run_id: int, kind: str, payload: dict[str, Any] | None = None) -> int:
    """Append an event; must run inside the transaction that commits the change it describes."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_append must be called inside transaction.atomic()")
    # The UPDATE takes the run row's write lock until commit, so concurrent appends get distinct, ordered seqs.
    Run.objects.filter(pk=run_id).update(last_seq=F("last_seq") + 1)
    seq = Run.objects.filter(pk=run_id).values_list("last_seq", flat=True).get()
    RunEvent.objects.create(run_id=run_id, seq=seq, kind=kind, payload=payload or {})
    return seq
