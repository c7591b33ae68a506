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

from debates.engine.attention import ATTENTION_KINDS, attention_ping
from debates.models import Run, RunEvent

# The lists of the `events_collected` blocks the current code runs in, innermost last.
_collecting: ContextVar[tuple[list[int], ...]] = ContextVar("events_collecting", default=())


def event_append(*, run_id: int, kind: str, payload: dict[str, Any] | None = None) -> int:
    """Append an event; must run inside the transaction that commits the change it describes."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("event_append must be called inside transaction.atomic()")
    seq = _seq_next(run_id)
    RunEvent.objects.create(run_id=run_id, seq=seq, kind=kind, payload=payload or {})
    if kind in ATTENTION_KINDS:
        attention_ping()
    for seqs in _collecting.get():
        seqs.append(seq)
    return seq


def _seq_next(run_id: int) -> int:
    """The run's next seq, in one statement (UPDATE … RETURNING: PostgreSQL, SQLite ≥ 3.35). The UPDATE takes the
    run row's write lock until commit, so concurrent appends get distinct, ordered seqs."""
    table, column = Run._meta.db_table, Run._meta.get_field("last_seq").column
    with transaction.get_connection().cursor() as cursor:
        cursor.execute(
            f'UPDATE "{table}" SET "{column}" = "{column}" + 1 WHERE "id" = %s RETURNING "{column}"', [run_id]
        )
        row = cursor.fetchone()
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
