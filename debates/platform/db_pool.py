"""The check the PostgreSQL connection pool runs on a connection before handing it out.

psycopg-pool's own check (`ConnectionPool.check_connection`, which Django installs with CONN_HEALTH_CHECKS) sends
an empty query and waits for the answer: a round trip to the server for every database call, and every
database_sync_to_async call of a consumer or runner takes a connection from the pool (bench fanout: a tenth of
Daphne's CPU). A connection the server ended (a restart terminates every session, telling each client so before it
closes the socket) has something to read on its socket while it sits idle in the pool, and a healthy idle one has
nothing: one non-blocking poll of the socket tells them apart without a round trip. A peer that vanished without a
word is not caught here; the query on it fails as a lost connection, which is transient (debates.platform.db_retry)."""

from __future__ import annotations

import select
from typing import Any

import psycopg


def connection_check(conn: Any) -> None:
    """Raise if `conn` is closed, broken, or has unread data from the server (a notice that it is shutting down,
    or end of file); the pool then drops it and hands out another."""
    if conn.closed or conn.broken:
        raise psycopg.OperationalError("the connection is closed")
    readable, _, _ = select.select([conn.pgconn.socket], [], [], 0)
    if readable:
        # Closed here: the pool takes back a connection that failed its check, and drops it only if it is closed.
        conn.close()
        raise psycopg.OperationalError("the server ended or wrote to the connection while it was idle")
