"""A lost database connection is never the debate's failure (issue 25): the runner tries a write again once the
database answers, without applying it twice; its heartbeat rides the outage out; a partial save that meets the
outage is skipped (the commit saves the whole text). Only an error of the debate itself fails the run.

The outage is simulated where it bites: the engine's own functions raise what Django raises on a dead connection
(InterfaceError "connection already closed"). tests/scaled/test_database_outage.py restarts a real PostgreSQL."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest
from django.db import InterfaceError

from debates.engine import runner, stream
from debates.models import RunEvent, Turn
from tests.conftest import EXPECTED_KEYS, run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)


def connection_lost() -> InterfaceError:
    return InterfaceError("connection already closed")


def commits_per_key(run: Any) -> Counter[str]:
    return Counter(e.payload["key"] for e in RunEvent.objects.filter(run=run, kind="turn_committed"))


def failing_first(real: Callable[..., Any], times: int, *, after: bool = False) -> Callable[..., Any]:
    """`real`, except that its first `times` calls lose the connection: before touching the database, or (after)
    once it has committed, as when the server's answer to the COMMIT is lost."""
    calls = {"n": 0}

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls["n"] += 1
        if calls["n"] <= times:
            if after:
                real(*args, **kwargs)
            raise connection_lost()
        return real(*args, **kwargs)

    flaky.calls = calls  # type: ignore[attr-defined]
    return flaky


def test_a_write_that_loses_its_connection_is_tried_again_and_the_debate_completes(make_run, monkeypatch):
    decide = failing_first(runner.run_decide, 3)
    monkeypatch.setattr(runner, "run_decide", decide)
    run = make_run()

    assert run_to_stop(run) == "done"

    assert run.status == "completed"
    assert decide.calls["n"] > 3  # type: ignore[attr-defined]
    assert commits_per_key(run) == dict.fromkeys(EXPECTED_KEYS, 1)
    seqs = list(RunEvent.objects.filter(run=run).values_list("seq", flat=True))
    assert seqs == list(range(1, len(seqs) + 1))


def test_a_commit_whose_answer_was_lost_is_not_applied_twice(make_run, monkeypatch):
    commit = failing_first(runner.turn_commit, 2, after=True)
    monkeypatch.setattr(runner, "turn_commit", commit)
    run = make_run()

    assert run_to_stop(run) == "done"

    assert run.status == "completed"
    # The two commits that landed but answered with a lost connection were each tried again: a no-op.
    assert commits_per_key(run) == dict.fromkeys(EXPECTED_KEYS, 1)
    assert set(Turn.objects.filter(run=run).values_list("attempt", flat=True)) == {1}


def test_a_partial_save_that_meets_the_outage_costs_the_turn_nothing(make_run, monkeypatch):
    """A partial save only helps a runner that takes over: the call under way carries on, and its commit saves the
    whole text (no turn is re-run, no model call repeated)."""
    flush = failing_first(stream.turn_flush, 1)
    monkeypatch.setattr(stream, "turn_flush", flush)
    run = make_run(backend_options={"cps": 4000})  # paced, so each turn saves partial text on its way

    assert run_to_stop(run) == "done"

    assert run.status == "completed"
    assert flush.calls["n"] > 1  # type: ignore[attr-defined]
    assert commits_per_key(run) == dict.fromkeys(EXPECTED_KEYS, 1)
    assert not RunEvent.objects.filter(run=run, kind="turn_restarted").exists()
    assert set(Turn.objects.filter(run=run).values_list("attempt", flat=True)) == {1}


def test_the_heartbeat_rides_out_an_outage_and_keeps_the_lease(make_run, monkeypatch, settings):
    settings.DISPUTA = {**settings.DISPUTA, "LEASE_SECONDS": 0.6, "CONTROL_POLL_SECONDS": 0.05}
    renew = failing_first(runner.lease_renew, 3)
    monkeypatch.setattr(runner, "lease_renew", renew)
    run = make_run(backend_options={"cps": 3000})  # a second or two of streaming: several heartbeats

    assert run_to_stop(run) == "done"  # not "lost-lease"

    assert run.status == "completed"
    assert renew.calls["n"] > 3  # type: ignore[attr-defined]
    assert commits_per_key(run) == dict.fromkeys(EXPECTED_KEYS, 1)


def test_an_error_of_the_debate_itself_still_fails_the_run_with_its_cause(make_run, monkeypatch):
    def broken(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("a bug in a protocol")

    monkeypatch.setattr(runner, "run_decide", broken)
    run = make_run()

    assert run_to_stop(run) == "failed"

    assert run.status == "failed"
    assert "Internal error in the debate engine: ValueError('a bug in a protocol')" in run.status_reason
