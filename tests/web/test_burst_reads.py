"""The reads made with every burst of a live debate (debates.web.frames.burst_events_read, burst_turns_read, on
debates.platform.fixed_reads): fixed statements whose instances are the ORM's, field for field, with their
related objects cached as select_related caches them, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.engine import registry
from debates.models import Run, RunEvent, Turn
from debates.platform.fixed_reads import model_from_row
from debates.services.demos import run_headless_demo_create
from debates.web.frames import KB_NOT_READ, burst_events_read, burst_turns_read
from tests.conftest import run_to_stop

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.backend]


def _fields(instance: Any) -> dict[str, Any]:
    return {
        f.attname: getattr(instance, f.attname)
        for f in instance._meta.concrete_fields
        if f.attname in instance.__dict__
    }


@pytest.mark.parametrize("protocol", [p.name for p in registry.all_protocols()])
def test_a_bursts_events_turns_and_run_read_as_the_orm_reads_them(protocol: str) -> None:
    run = run_headless_demo_create(protocol=protocol, seed=5, backend_options={"cps": 0})
    assert run_to_stop(run) == "done"
    seqs = list(RunEvent.objects.filter(run=run).order_by("-seq").values_list("seq", flat=True)[:4])
    keys = list(Turn.objects.filter(run=run).values_list("key", flat=True)[:3])

    with CaptureQueriesContext(connection) as queries:
        events = burst_events_read(run.pk, [*seqs, 10**9])  # (a seq not written: no row)
        turns = burst_turns_read(run.pk, [*keys, "no/such/turn"])
        read_run, read_kb = events[0].run, events[0].run.kb  # cached: no query
        seats = [turn.seat for turn in turns]
    assert len(queries) == 2

    orm_events = list(RunEvent.objects.filter(run=run, seq__in=seqs).order_by("seq"))
    assert [_fields(e) for e in events] == [_fields(e) for e in orm_events]
    assert all(e.run is read_run for e in events)
    assert _fields(read_run) == _fields(Run.objects.get(pk=run.pk))
    if run.kb_id is None:
        assert read_kb is None
    else:
        orm_kb = Run.objects.select_related("kb").defer("kb__data", "kb__log").get(pk=run.pk).kb
        assert _fields(read_kb) == _fields(orm_kb)
        assert set(read_kb.get_deferred_fields()) == set(KB_NOT_READ)
    orm_turns = {t.key: t for t in Turn.objects.select_related("seat").filter(run=run, key__in=keys)}
    assert sorted(t.key for t in turns) == sorted(keys)
    for turn, seat in zip(turns, seats, strict=True):
        assert _fields(turn) == _fields(orm_turns[turn.key])
        assert _fields(seat) == _fields(orm_turns[turn.key].seat)


def test_a_row_of_the_wrong_width_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="Run: 2 values for"):
        model_from_row(Run, (1, "x"))
