"""The URL of a configured database, for the DATABASE_URL of a process started against it (the inverse of
settings.database_from_env): the fan-out bench's server and the tests' subprocesses."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote


def database_url(db: Mapping[str, Any]) -> str:
    """`db`: a DATABASES entry (after the test runner renamed it, the test database's)."""
    if db["ENGINE"] == "django.db.backends.sqlite3":
        name = str(db["NAME"])
        if not name or ":memory:" in name or "mode=memory" in name:
            raise ValueError("another process can share only a file database, not an in-memory SQLite one")
        return f"sqlite:///{Path(name).resolve()}"
    if db["ENGINE"] == "django.db.backends.postgresql":
        auth = quote(db["USER"] or "")
        if db["PASSWORD"]:
            auth += ":" + quote(db["PASSWORD"])
        host = f"{auth}@{db['HOST'] or 'localhost'}" if auth else db["HOST"] or "localhost"
        return f"postgres://{host}:{db['PORT'] or 5432}/{db['NAME']}"
    raise ValueError(f"unsupported database engine {db['ENGINE']}")
