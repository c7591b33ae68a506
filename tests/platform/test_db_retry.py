"""Which database errors are a lost connection (tried again) and which are the query's (raised), the bounded
backoff between tries, and a non-idempotent write that is never applied twice."""

from __future__ import annotations

from typing import Any

import psycopg
import psycopg_pool
import pytest
from django.db import IntegrityError, InterfaceError, OperationalError, ProgrammingError, connection

from debates.models import Run
from debates.platform.db_retry import (
    Backoff,
    CommitOutcomeUnknown,
    db_call_retrying,
    db_error_is_transient,
    db_write_once,
)


def wrapped(django_error: type[Exception], cause: Exception) -> Exception:
    """As Django raises a driver's error: its own class, the driver's error as the cause."""
    error = django_error(*cause.args)
    error.__cause__ = cause
    return error


@pytest.mark.parametrize(
    "error",
    [
        wrapped(
            OperationalError,
            psycopg.errors.AdminShutdown("terminating connection due to administrator command"),
        ),
        wrapped(OperationalError, psycopg.OperationalError("connection failed: Connection refused")),
        wrapped(OperationalError, psycopg.OperationalError("server closed the connection unexpectedly")),
        wrapped(OperationalError, psycopg.errors.CannotConnectNow("the database system is starting up")),
        wrapped(OperationalError, psycopg.errors.TooManyConnections("too many clients already")),
        wrapped(OperationalError, psycopg_pool.PoolTimeout("couldn't get a connection after 5.00 sec")),
        psycopg_pool.PoolTimeout("couldn't get a connection after 5.00 sec"),
        InterfaceError("connection already closed"),
        OperationalError("database is locked"),
    ],
    ids=lambda e: f"{type(e).__name__}:{e}"[:60],
)
def test_a_lost_refused_or_busy_connection_is_transient(error):
    assert db_error_is_transient(error)


@pytest.mark.parametrize(
    "error",
    [
        wrapped(IntegrityError, psycopg.errors.UniqueViolation("duplicate key value")),
        wrapped(ProgrammingError, psycopg.errors.UndefinedTable('relation "x" does not exist')),
        wrapped(
            OperationalError, psycopg.errors.QueryCanceled("canceling statement due to statement timeout")
        ),
        OperationalError("no such table: debates_run"),
        ValueError("not a database error at all"),
        CommitOutcomeUnknown("usage_record: connection lost during COMMIT"),
    ],
    ids=lambda e: f"{type(e).__name__}:{e}"[:60],
)
def test_an_error_of_the_query_itself_is_not_transient(error):
    assert not db_error_is_transient(error)


def test_the_backoff_grows_and_stays_under_its_cap():
    backoff = Backoff(first=0.1, cap=2.0)
    delays = [backoff.next_delay() for _ in range(12)]
    assert all(0.05 <= d <= 2.0 for d in delays)
    assert max(delays[:2]) <= 0.2 < min(delays[-4:])  # grows from 0.1 s to the cap's upper half
    backoff.reset()
    assert backoff.next_delay() <= 0.1


def calls_failing(times: int, error: Exception) -> Any:
    calls = {"n": 0}

    def call() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise error
        return "answered"

    call.calls = calls  # type: ignore[attr-defined]
    return call


def test_a_call_is_tried_again_until_the_database_answers():
    call = calls_failing(2, InterfaceError("connection already closed"))
    assert db_call_retrying(call, what="test") == "answered"
    assert call.calls["n"] == 3


def test_an_error_of_the_query_is_raised_at_once():
    call = calls_failing(1, OperationalError("no such table: debates_run"))
    with pytest.raises(OperationalError, match="no such table"):
        db_call_retrying(call, what="test")
    assert call.calls["n"] == 1


def test_a_bounded_retry_gives_up_with_the_last_error():
    call = calls_failing(10, InterfaceError("connection already closed"))
    with pytest.raises(InterfaceError):
        db_call_retrying(call, what="test", attempts=3)
    assert call.calls["n"] == 3


@pytest.mark.django_db(transaction=True)
class WriteOnceTests:
    def test_a_write_that_lost_its_connection_before_the_commit_was_rolled_back_and_may_run_again(
        self, make_run
    ):
        run = make_run()

        def add_then_lose_connection() -> None:
            Run.objects.filter(pk=run.pk).update(output_tokens=run.output_tokens + 5)
            raise InterfaceError("connection already closed")

        with pytest.raises(InterfaceError) as raised:
            db_write_once(add_then_lose_connection)
        assert db_error_is_transient(raised.value)
        assert Run.objects.get(pk=run.pk).output_tokens == run.output_tokens  # nothing was applied

    def test_a_write_that_lost_its_connection_during_the_commit_is_never_tried_again(
        self, make_run, monkeypatch
    ):
        run = make_run()
        real_commit = connection.commit

        def commit_then_lose_answer() -> None:
            real_commit()
            raise InterfaceError("connection already closed")

        def add() -> None:
            Run.objects.filter(pk=run.pk).update(output_tokens=run.output_tokens + 5)

        monkeypatch.setattr(connection, "commit", commit_then_lose_answer)
        calls = {"n": 0}

        def write() -> None:
            calls["n"] += 1
            db_write_once(add)

        with pytest.raises(CommitOutcomeUnknown):
            db_call_retrying(write, what="test")
        monkeypatch.undo()
        assert calls["n"] == 1
        assert Run.objects.get(pk=run.pk).output_tokens == run.output_tokens + 5  # applied once, not twice
