"""The pool's check before it hands out a connection (debates.platform.db_pool): one the server ended is refused,
a healthy one is handed out, and neither costs a round trip."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection

from debates.platform.db_pool import connection_check


def _connect() -> psycopg.Connection:
    params = connection.get_connection_params()
    params.pop("cursor_factory", None)
    params.pop("context", None)
    params.pop("prepare_threshold", None)
    return psycopg.connect(**params, autocommit=True)


def _refused(conn: psycopg.Connection) -> bool:
    try:
        connection_check(conn)
    except psycopg.OperationalError:
        return True
    return False


@pytest.mark.django_db
def test_a_healthy_idle_connection_is_handed_out_and_one_the_server_ended_is_not():
    healthy, doomed, admin = _connect(), _connect(), _connect()
    try:
        connection_check(healthy)  # no exception
        pid = doomed.info.backend_pid
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        # The server's goodbye reaches the socket within moments.
        deadline = time.monotonic() + 5
        while not _refused(doomed) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert _refused(doomed)
        assert doomed.closed  # so the pool drops it instead of handing it out again
        connection_check(healthy)
        assert healthy.execute("SELECT 1").fetchone() == (1,)
    finally:
        for conn in (healthy, doomed, admin):
            conn.close()


@pytest.mark.django_db
def test_a_closed_connection_is_refused():
    conn = _connect()
    conn.close()
    with pytest.raises(psycopg.OperationalError, match="closed"):
        connection_check(conn)
