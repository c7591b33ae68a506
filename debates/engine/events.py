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
    return events_append(run_id=run_id, events=[(kind, payload or {})])[0]


def events_append(*, run_id: int, events: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Append events (kind, payload) under consecutive seqs, in the order given, in one round trip on
    PostgreSQL (a stage's parallel turns start together: one append per turn was one round trip each, a busy
    worker's 10-15 ms, while the first one's viewers waited for the commit; bench fanout). Must run inside the
    transaction that commits the change they describe."""
    if not events:
        return []
    connection = transaction.get_connection()
    if not connection.in_atomic_block:
        raise RuntimeError("event_append must be called inside transaction.atomic()")
    seqs = _events_insert(connection, run_id, events)
    if any(kind in ATTENTION_KINDS for kind, _ in events):
        attention_ping()
    for collected in _collecting.get():
        collected.extend(seqs)
    return seqs


def _events_insert(connection: Any, run_id: int, events: list[tuple[str, dict[str, Any]]]) -> list[int]:
    """Take the run's next seqs and insert the events under them. The UPDATE of the run's last_seq takes the run
    row's write lock until commit, so concurrent appends get distinct, ordered seqs. Fixed statements, not the
    ORM: every event of every debate comes through here (on PostgreSQL one statement, one round trip)."""
    run_table, seq_column = Run._meta.db_table, Run._meta.get_field("last_seq").column
    event_table = RunEvent._meta.db_table
    payload_field, created_field = RunEvent._meta.get_field("payload"), RunEvent._meta.get_field("created_at")
    created_at = created_field.get_db_prep_value(timezone.now(), connection)
    count = len(events)
    rows = [
        (number, kind, payload_field.get_db_prep_value(payload, connection), created_at)
        for number, (kind, payload) in enumerate(events, start=1)
    ]
    seq_next = f'UPDATE "{run_table}" SET "{seq_column}" = "{seq_column}" + %s WHERE "id" = %s RETURNING "{seq_column}"'
    insert = f'INSERT INTO "{event_table}" ("run_id", "seq", "kind", "payload", "created_at")'
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            values = ", ".join(["(%s, %s, CAST(%s AS jsonb), CAST(%s AS timestamptz))"] * count)
            cursor.execute(
                f'WITH s AS ({seq_next}) {insert} SELECT %s, s."{seq_column}" - %s + v.n, v.kind, v.payload, '
                f'v.created_at FROM s, (VALUES {values}) AS v (n, kind, payload, created_at) RETURNING "seq"',
                [count, run_id, run_id, count, *(value for row in rows for value in row)],
            )
            inserted = sorted(int(row[0]) for row in cursor.fetchall())
        else:  # (SQLite: RETURNING, but no UPDATE inside WITH)
            cursor.execute(seq_next, [count, run_id])
            last = cursor.fetchone()
            inserted = []
            if last is not None:
                first = int(last[0]) - count + 1
                values = ", ".join(["(%s, %s, %s, %s, %s)"] * count)
                cursor.execute(
                    f"{insert} VALUES {values}",
                    [
                        value
                        for number, kind, payload, created in rows
                        for value in (run_id, first + number - 1, kind, payload, created)
                    ],
                )
                inserted = list(range(first, first + count))
    if not inserted:
        raise Run.DoesNotExist(f"run {run_id} does not exist")
    return inserted


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
