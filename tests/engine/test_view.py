"""What a protocol plans from (debates.engine.view.run_view_load): everything persisted about the run, read with as
few statements as what it holds needs: a run without a KB or a state machine of its own is one statement (its
turns), and a protocol's own state is read only by a protocol that records one."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.engine.view import run_view_load
from debates.models import Run, RunEvent
from debates.services.demos import run_headless_demo_create
from tests.conftest import EXPECTED_KEYS, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_view_of_a_run_without_a_kb_or_a_state_machine_is_one_statement(make_run: Any) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    run_view_load(run)  # the seats are read once per process
    run = Run.objects.get(pk=run.pk)
    with CaptureQueriesContext(connection) as queries:
        view = run_view_load(run)
    assert len(queries) == 1, [q["sql"] for q in queries.captured_queries]
    assert set(view.turns) == EXPECTED_KEYS and view.state == ""
    assert all(turn.committed for turn in view.turns.values())


def test_a_consultations_view_holds_the_state_it_recorded_last() -> None:
    run = run_headless_demo_create(protocol="consultation", seed=1, backend_options={"cps": 0})
    assert run_to_stop(run) == "done"
    last = RunEvent.objects.filter(run=run, kind="state").latest("seq").payload["to"]
    assert last == "complete"
    assert run_view_load(run).state == last
