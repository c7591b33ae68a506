"""Surviving a database outage (a PostgreSQL restart, a network blip, a pool with no connection to give): which
errors are the connection's rather than the query's, how long to wait before trying again, and how to try again
without applying a write twice.

A lost connection is transient: the code that met it closes it (the next query opens a new one), waits a bounded,
growing delay and tries again. Everything else (a constraint, a bad query, a missing table) is not, and is raised
as before. No retry library is a dependency; the backoff here is a dozen lines."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
from collections.abc import Awaitable, Callable

from django.db import DatabaseError, InterfaceError, OperationalError, connections, transaction

log = logging.getLogger("debates.db")

# PostgreSQL's SQLSTATEs of a lost or refused connection and of a transaction the server rolled back on its own:
# class 08 (connection exception), the server shutting down or starting (57P01-57P03), too many connections
# (53300), a serialization failure or deadlock (40001, 40P01; the transaction was rolled back, so it may be re-run).
TRANSIENT_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300", "40001", "40P01"})
# SQLite's only transient error: another process holds the write lock beyond the busy timeout.
SQLITE_TRANSIENT = ("database is locked", "database table is locked")


def db_error_is_transient(error: BaseException) -> bool:
    """True for an error of the connection (lost, refused, timed out, none in the pool), not of the query."""
    if isinstance(error, CommitOutcomeUnknown):
        return False
    if isinstance(error, InterfaceError):  # Django's "connection already closed"
        return True
    cause = error.__cause__ if isinstance(error, DatabaseError) and error.__cause__ is not None else error
    try:
        import psycopg
    except ImportError:  # the laptop setup runs without psycopg
        psycopg = None  # type: ignore[assignment]
    if psycopg is not None and isinstance(cause, psycopg.Error):
        if isinstance(cause, psycopg.InterfaceError):
            return True
        if not isinstance(cause, psycopg.OperationalError):
            return False
        # No SQLSTATE: the client's own error (connection refused or lost, connect timeout, the pool's timeout).
        sqlstate = cause.sqlstate
        return sqlstate is None or sqlstate.startswith("08") or sqlstate in TRANSIENT_SQLSTATES
    if isinstance(error, OperationalError):
        return any(text in str(error) for text in SQLITE_TRANSIENT)
    return False


class CommitOutcomeUnknown(Exception):
    """The connection was lost while a write that must not be applied twice was committing: it may or may not
    have been applied, so it is not retried."""


class Backoff:
    """Bounded exponential backoff with jitter: `first` seconds, doubling up to `cap`, each delay drawn from its
    upper half so that processes that lost the database together do not come back together."""

    def __init__(self, *, first: float = 0.1, cap: float = 5.0) -> None:
        self.first = first
        self.cap = cap
        self.failures = 0

    def next_delay(self) -> float:
        delay = min(self.cap, self.first * 2**self.failures)
        self.failures += 1
        return delay * random.uniform(0.5, 1.0)

    def reset(self) -> None:
        self.failures = 0


def db_connection_reset(alias: str = "default") -> None:
    """Close this thread's connection after a transient error, so the next query opens (or takes from the pool) a
    fresh one. Inside an atomic block the block's owner rolls back and closes it instead."""
    connection = connections[alias]
    if connection.in_atomic_block:
        return
    with contextlib.suppress(Exception):  # closing a dead connection may fail too; it is dropped either way
        connection.close()


def db_write_once[**P, T](write: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Run a write that must not be applied twice (one that adds to a counter) in a transaction of its own. A
    connection lost before the commit rolled it back (transient: run it again); lost during the commit, its
    outcome is unknown: CommitOutcomeUnknown, which no retry retries."""
    written = False
    try:
        with transaction.atomic():
            result = write(*args, **kwargs)
            written = True
    except Exception as error:
        if written and db_error_is_transient(error):
            raise CommitOutcomeUnknown(f"{getattr(write, '__name__', write)}: {error}") from error
        raise
    return result


class Outage:
    """Logs one outage once: a warning when the first call fails, a line when a call succeeds again."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.since: float | None = None

    def failed(self, error: BaseException, delay: float) -> None:
        if self.since is None:
            self.since = time.monotonic()
            log.warning("%s: database unreachable (%s); retrying every few seconds", self.what, error)
        else:
            log.debug("%s: database still unreachable (%s); next try in %.1f s", self.what, error, delay)

    def recovered(self) -> None:
        if self.since is not None:
            log.warning("%s: database back after %.1f s", self.what, time.monotonic() - self.since)
            self.since = None


def db_call_retrying[T](call: Callable[[], T], *, what: str, attempts: int | None = None) -> T:
    """`call()` until it does not fail with a transient database error (at most `attempts` times; forever by
    default), closing the broken connection and backing off between tries. Other errors are raised at once."""
    backoff, outage = Backoff(), Outage(what)
    while True:
        try:
            result = call()
        except Exception as error:
            if not db_error_is_transient(error) or (
                attempts is not None and backoff.failures + 1 >= attempts
            ):
                raise
            db_connection_reset()
            delay = backoff.next_delay()
            outage.failed(error, delay)
            time.sleep(delay)
            continue
        outage.recovered()
        return result


async def adb_call_retrying[T](
    call: Callable[[], Awaitable[T]], *, what: str, attempts: int | None = None
) -> T:
    """The async `db_call_retrying`: `call` is a fresh database_sync_to_async call each time (Channels closes the
    broken connection of its thread before the next one). Waits on the event loop, so a cancel ends the wait."""
    backoff, outage = Backoff(), Outage(what)
    while True:
        try:
            result = await call()
        except Exception as error:
            if not db_error_is_transient(error) or (
                attempts is not None and backoff.failures + 1 >= attempts
            ):
                raise
            delay = backoff.next_delay()
            outage.failed(error, delay)
            await asyncio.sleep(delay)
            continue
        outage.recovered()
        return result
