"""Run events: appended in the committing transaction with a strictly increasing per-run seq; announced to the
run's viewers after commit by the publish port (debates.engine.publish). The events table is the log.

Whoever commits events publishes them, every one: a viewer holds back whatever follows an event it has not been
sent (the events go to the page in seq order), and a replay renders an event nobody published only once it is
UNPUBLISHED_GRACE_SECONDS old, so one unpublished event freezes the page that long. Code that appends events
through code it does not own (a protocol's effects, the state records) collects them all with `events_collected`
rather than counting on the seqs each call returns."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.db import transaction
from django.utils import timezone

from debates.engine.attention import ATTENTION_KINDS, attention_ping
from debates.models import Run, RunEvent

# The lists of the `events_collected` blocks the current code runs in, innermost last.
_collecting: ContextVar[tuple[list[int], ...]] = ContextVar("events_collecting", default=())


def event_append(*, run_id: int, kind: str, payload: dict[str, Any] | None = None) -> int:
    """Append an event; must run inside the transaction that commits the change it describes."""
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("event_append must be called inside transaction.atomic()")
    seq = _event_insert(connection, run_id, kind, payload or {})
    if kind in ATTENTION_KINDS:
        attention_ping()
    for seqs in _collecting.get():
        seqs.append(seq)
    return seq


def _event_insert(connection: Any, run_id: int, kind: str, payload: dict[str, Any]) -> int:
    """Take the run's next seq and insert the event under it. The UPDATE of the run's last_seq takes the run row's
    write lock until commit, so concurrent appends get distinct, ordered seqs. Fixed statements, not the ORM:
    every event of every debate comes through here (on PostgreSQL both in one statement, one round trip)."""
    run_table, seq_column = Run._meta.db_table, Run._meta.get_field("last_seq").column
    event_table = RunEvent._meta.db_table
    payload_value = RunEvent._meta.get_field("payload").get_db_prep_value(payload, connection)
    created_at = RunEvent._meta.get_field("created_at").get_db_prep_value(timezone.now(), connection)
    seq_next = f'UPDATE "{run_table}" SET "{seq_column}" = "{seq_column}" + 1 WHERE "id" = %s RETURNING "{seq_column}"'
    insert = f'INSERT INTO "{event_table}" ("run_id", "seq", "kind", "payload", "created_at")'
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f'WITH s AS ({seq_next}) {insert} SELECT %s, "{seq_column}", %s, %s, %s FROM s RETURNING "seq"',
                [run_id, run_id, kind, payload_value, created_at],
            )
            row = cursor.fetchone()
        else:  # (SQLite: RETURNING, but no UPDATE inside WITH)
            cursor.execute(seq_next, [run_id])
            row = cursor.fetchone()
            if row is not None:
                cursor.execute(
                    f"{insert} VALUES (%s, %s, %s, %s, %s)", [run_id, row[0], kind, payload_value, created_at]
                )
    if row is None:
        raise Run.DoesNotExist(f"run {run_id} does not exist")
    return int(row[0])


@contextmanager
def events_collected(seqs: list[int] | None = None) -> Iterator[list[int]]:
    """Collect into `seqs` (or a new list) the seq of every event appended inside the block, by whatever code it
    calls: a protocol's effects, the state records, code yet to be written. The block's transactions have ended
    when it does; a seq of a transaction that rolled back may be among them (it names no event, or one committed
    later under the same seq: publishing it is harmless)."""
    collected = [] if seqs is None else seqs
    token = _collecting.set((*_collecting.get(), collected))
    try:
        yield collected
    finally:
        _collecting.reset(token)
