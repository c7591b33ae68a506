"""Appending an event (debates.engine.events.event_append): the run's next seq and the event under it, written by
fixed statements (one on PostgreSQL, two on SQLite) in the caller's transaction, read back by the ORM as written."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from debates.engine.events import event_append, events_append, events_collected
from debates.models import Run, RunEvent

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backend]


def test_an_event_goes_under_the_runs_next_seq_in_one_statement_on_postgresql_and_two_on_sqlite() -> None:
    run = Run.objects.create(protocol="cross-examination", topic="Seq")
    payload: dict[str, Any] = {
        "key": "r1/analysis/analyst-ada",
        "note": "naïve “quotes” ✓",
        "nested": [1, {"a": None}],
    }
    before = timezone.now()
    with transaction.atomic(), CaptureQueriesContext(connection) as queries:
        first = event_append(run_id=run.pk, kind="turn_started", payload=payload)
        second = event_append(run_id=run.pk, kind="note")
    assert (first, second) == (run.last_seq + 1, run.last_seq + 2)
    statements = [
        q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]
    assert len(statements) == (2 if connection.vendor == "postgresql" else 4), statements
    run.refresh_from_db()
    assert run.last_seq == second
    events = list(RunEvent.objects.filter(run=run).order_by("seq"))
    assert [(e.seq, e.kind, e.payload) for e in events] == [
        (first, "turn_started", payload),
        (second, "note", {}),
    ]
    assert all(before <= e.created_at <= timezone.now() + timedelta(seconds=1) for e in events)


def test_an_event_of_a_run_that_is_not_there_is_refused_and_nothing_is_written() -> None:
    with pytest.raises(Run.DoesNotExist, match="run 987654 does not exist"), transaction.atomic():
        event_append(run_id=987654, kind="note")
    assert not RunEvent.objects.filter(run_id=987654).exists()


def test_an_event_outside_a_transaction_is_refused() -> None:
    run = Run.objects.create(protocol="cross-examination", topic="No transaction")
    with pytest.raises(RuntimeError, match="inside transaction.atomic"):
        event_append(run_id=run.pk, kind="note")
    assert not RunEvent.objects.filter(run=run).exists()


def test_events_appended_together_go_under_consecutive_seqs_in_the_order_given_in_one_statement_on_postgresql() -> (
    None
):
    run = Run.objects.create(protocol="consultation", topic="Together")
    started = [("turn_started", {"key": f"r1/independent/agent-{n}", "attempt": 1}) for n in ("a", "b", "c")]
    with transaction.atomic(), events_collected() as collected, CaptureQueriesContext(connection) as queries:
        first = event_append(run_id=run.pk, kind="run_status", payload={"status": "running"})
        seqs = events_append(run_id=run.pk, events=started)
    assert seqs == [first + 1, first + 2, first + 3]
    assert collected == [first, *seqs]
    statements = [
        q["sql"] for q in queries.captured_queries if not q["sql"].startswith(("SAVEPOINT", "RELEASE"))
    ]
    assert len(statements) == (2 if connection.vendor == "postgresql" else 4), statements
    assert Run.objects.get(pk=run.pk).last_seq == seqs[-1]
    assert list(
        RunEvent.objects.filter(run=run, seq__in=seqs).order_by("seq").values_list("kind", "payload")
    ) == [(kind, payload) for kind, payload in started]
