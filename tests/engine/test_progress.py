"""What a runner notes of its decision (debates.engine.progress) stands in for a read of the run while the run's
bursts of events are rendered in its process: at every decision of a whole debate, of every protocol, the view
it notes is the view a read of the database gives, and the status widgets it feeds show what they show from a
read. Once anything happens to the run, or the runner stops, the run is read again."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from django.db import connections

from debates.engine import progress, registry
from debates.engine import runner as runner_module
from debates.engine.view import _run_view_read, run_reads_shared, run_view_load
from debates.models import Run
from debates.selectors.runs import run_status_context
from debates.services.demos import run_headless_demo_create
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)

PROTOCOLS = [p.name for p in registry.all_protocols()]
STATUS_FIELDS = ("stages", "notices", "committed", "failed", "expected", "progress_percent")


def _status(context: dict[str, Any]) -> dict[str, Any]:
    return {name: context[name] for name in STATUS_FIELDS}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_decision_notes_what_a_read_of_the_run_gives_at_that_moment(
    protocol: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = run_headless_demo_create(protocol=protocol, seed=3, backend_options={"cps": 0})
    checks: list[dict[str, Any]] = []
    note = progress.run_plan_note

    def note_and_read(decided: Run, **noted: Any) -> None:
        note(decided, **noted)

        def read() -> dict[str, Any]:
            # Its own connection, reading what the decision committed; the runner's loop waits meanwhile.
            try:
                return read_now()
            finally:
                connections.close_all()  # (back to the pool: a thread that ends keeps its connection)

        def read_now() -> dict[str, Any]:
            fresh = Run.objects.get(pk=decided.pk)
            with run_reads_shared():
                shared = run_view_load(fresh)
                from_note = _status(run_status_context(fresh))
            progress.run_plan_forget(decided.pk)
            try:
                from_database = _status(run_status_context(fresh))
            finally:
                note(decided, **noted)
            return {
                "seq": (noted["seq"], fresh.last_seq),
                "view": (noted["view"], _run_view_read(fresh), shared),
                "status": (from_note, from_database),
            }

        with ThreadPoolExecutor(1) as thread:
            checks.append(thread.submit(read).result())

    monkeypatch.setattr(runner_module, "run_plan_note", note_and_read)
    assert run_to_stop(run) == "done"

    assert checks, "the runner decided to run steps at least once"
    for check in checks:
        noted_seq, last_seq = check["seq"]
        assert noted_seq == last_seq
        noted_view, read_view, shared_view = check["view"]
        if noted_view is not None:
            assert noted_view == read_view
            assert shared_view is noted_view  # a renderer takes it instead of reading
        from_note, from_database = check["status"]
        assert from_note == from_database
    # Only a claim that finds its turn finished (a takeover's) leaves the view to be read.
    assert all(check["view"][0] is not None for check in checks)
    assert progress.run_plan_noted(Run.objects.get(pk=run.pk)) is None  # the runner stopped: forgotten


def test_a_noted_view_is_not_taken_once_the_run_has_moved_on_nor_outside_a_shared_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    run = run_headless_demo_create(protocol="market-panel", seed=3, backend_options={"cps": 0})
    seen: list[tuple[Run, dict[str, Any]]] = []
    note = progress.run_plan_note

    def keep(decided: Run, **noted: Any) -> None:
        note(decided, **noted)
        seen.append((decided, noted))

    monkeypatch.setattr(runner_module, "run_plan_note", keep)
    assert run_to_stop(run) == "done"
    decided, noted = next((d, n) for d, n in seen if n["view"] is not None)
    note(decided, **noted)  # as if its runner were still on that decision
    try:
        at_decision = Run.objects.get(pk=run.pk)
        at_decision.last_seq = noted["seq"]
        with run_reads_shared():
            assert run_view_load(at_decision) is noted["view"]
        assert run_view_load(at_decision) is not noted["view"]  # a decision always reads
        moved_on = Run.objects.get(pk=run.pk)
        assert moved_on.last_seq > noted["seq"]
        with run_reads_shared():
            view = run_view_load(moved_on)
        assert view is not noted["view"] and view == _run_view_read(moved_on)
    finally:
        progress.run_plan_forget(run.pk)
