"""Claiming a stage's turns (debates.engine.turns.run_decide): the turns of a parallel stage that are all new start
together, with one append of their events and one insert of the turns, in the plan's order; each turn's first seq
is its own event's."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.engine.lease import lease_try_acquire
from debates.engine.turns import RunnerOutcome, run_decide
from debates.models import Run, RunEvent, Turn
from debates.services.demos import run_headless_demo_create

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backend]


def test_a_parallel_stage_starts_its_new_turns_with_one_append_and_one_insert() -> None:
    run = run_headless_demo_create(protocol="consultation", seed=3, backend_options={"cps": 0})
    assert lease_try_acquire(run.pk, "runner")
    before = Run.objects.get(pk=run.pk).last_seq
    with CaptureQueriesContext(connection) as queries:
        decision = run_decide(run.pk, "runner")

    assert decision.outcome == RunnerOutcome.STEPS
    keys = [step.key for step in decision.steps]
    assert len(keys) >= 2, "the consultation opens with its analysts in parallel"
    started = list(
        RunEvent.objects.filter(run=run, kind="turn_started").order_by("seq").values_list("seq", "payload")
    )
    assert [payload["key"] for _, payload in started] == keys
    seqs = [seq for seq, _ in started]
    assert seqs == list(range(seqs[0], seqs[0] + len(keys)))
    turns = {t.key: t for t in Turn.objects.filter(run=run)}
    assert [turns[key].first_seq for key in keys] == seqs
    assert [claim.turn_id for claim in decision.claims if claim] == [turns[key].pk for key in keys]
    assert [claim.first_seq for claim in decision.claims if claim] == seqs
    assert all(claim is not None and claim.attempt == 1 for claim in decision.claims)

    inserts = [
        q["sql"] for q in queries.captured_queries if q["sql"].lstrip().upper().startswith(("INSERT", "WITH"))
    ]
    event_inserts = [sql for sql in inserts if RunEvent._meta.db_table in sql]
    turn_inserts = [sql for sql in inserts if f'INTO "{Turn._meta.db_table}"' in sql]
    assert len(turn_inserts) == 1, turn_inserts
    # The turns' events in one statement; the decision's others (the run's status, its state) in theirs.
    appended = RunEvent.objects.filter(run=run, seq__gt=before).count()
    assert len(event_inserts) == appended - len(keys) + 1, event_inserts
