"""A PostgreSQL server of a test's own (initdb + pg_ctl on a free port under the test's tmp directory), so a test
can stop and restart it without touching the machine's server that other work uses."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import psycopg
import pytest

from tests.engine.crash_helpers import free_port


def _bindir() -> Path:
    found = shutil.which("pg_ctl") or next(
        iter(sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"))[-1:]), ""
    )
    if not found:
        pytest.fail(
            "a throwaway PostgreSQL needs initdb and pg_ctl (postgresql server binaries)", pytrace=False
        )
    return Path(found).parent


class ThrowawayPostgres:
    def __init__(self) -> None:
        # Not under pytest's tmp_path: that is private to this user, and the server may run as another.
        self.root = Path(tempfile.mkdtemp(prefix="disputa-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.bindir = _bindir()
        # initdb refuses to run as root: then the server runs as the postgres account.
        self.as_owner = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self.as_owner, str(self.bindir / tool), *args], check=True, capture_output=True, timeout=60
        )

    def init(self) -> ThrowawayPostgres:
        if self.as_owner:
            shutil.chown(self.root, "postgres")
        self._run("initdb", "-D", str(self.data), "-A", "trust", "-U", "postgres")
        return self

    def start(self) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            "pg_ctl", "-D", str(self.data), "-o", options, "-l", str(self.root / "server.log"), "-w", "start"
        )

    def stop(self) -> None:
        """As an administrator's restart does: every session is terminated at once."""
        self._run("pg_ctl", "-D", str(self.data), "-m", "fast", "-w", "stop")

    def url(self, name: str = "postgres") -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{name}"

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def query(self, name: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url(name), connect_timeout=3) as conn:
            return conn.execute(sql, params).fetchall()

    def destroy(self) -> None:
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [
                    *self.as_owner,
                    str(self.bindir / "pg_ctl"),
                    "-D",
                    str(self.data),
                    "-m",
                    "immediate",
                    "stop",
                ],
                capture_output=True,
                timeout=60,
            )
        shutil.rmtree(self.root, ignore_errors=True)
