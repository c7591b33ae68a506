"""`manage.py serve_scaled`: the scaled setup on one machine: the database migrated, then one Daphne process
serving pages and websockets and N `worker` processes running debates, kept running by a supervisor
(debates.management.supervisor): a process that exits is started again after a growing delay, with a line saying
so, and the others carry on; Ctrl-C or SIGTERM stops them all.

On several machines run the same commands under your own supervisor, all with the same environment: `manage.py
serve --host 0.0.0.0` on the web machines (behind a load balancer; websockets need no stickiness, every process
reaches every browser through Redis), `manage.py worker` on as many worker machines as you like. deploy/ has
systemd units for both (README "Running under systemd")."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError

from debates.management.supervisor import Program, Supervisor


class Command(BaseCommand):
    help = (
        "Migrate, then run Daphne and N debate workers (PostgreSQL + Redis + database task queue) together."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)
        parser.add_argument("--workers", type=int, default=2, help="worker processes (2)")
        parser.add_argument(
            "--concurrency",
            type=int,
            default=5,
            help="Debates each worker drives at once (5; `manage.py worker --concurrency`): ten at once on two "
            "workers. A worker per core with slots, not a worker per debate, keeps live pages prompt.",
        )
        parser.add_argument(
            "--stop-timeout",
            type=float,
            default=10.0,
            help="Seconds a process is given to stop after SIGTERM before it is killed (10). A worker stops after "
            "its debate; one killed mid-debate is taken over by another worker once its lease expires.",
        )

    def handle(
        self,
        *args: Any,
        host: str,
        port: int,
        workers: int,
        concurrency: int,
        stop_timeout: float,
        **options: Any,
    ) -> None:
        missing = [
            what
            for what, ok in [
                (
                    "DATABASE_URL=postgres://…",
                    str(settings.DATABASES["default"]["ENGINE"]).endswith("postgresql"),
                ),
                ("REDIS_URL=redis://…", bool(os.environ.get("REDIS_URL"))),
                ("DISPUTA_TASKS_BACKEND=database", "django_tasks_db" in settings.INSTALLED_APPS),
            ]
            if not ok
        ]
        if missing:
            raise CommandError(f"serve_scaled needs {', '.join(missing)} in the environment")
        if workers < 1:
            raise CommandError("--workers must be at least 1")
        if concurrency < 1:
            raise CommandError("--concurrency must be at least 1")
        if stop_timeout < 0:
            raise CommandError("--stop-timeout must be 0 or more seconds")
        database_create_if_missing()
        call_command("migrate", interactive=False, verbosity=0)
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        programs = [Program("web", [*manage, "serve", "--host", host, "--port", str(port)])]
        for n in range(1, workers + 1):
            programs.append(
                Program(
                    f"worker.{n}",
                    [
                        *manage,
                        "worker",
                        "--worker-id",
                        f"worker.{n}@{os.uname().nodename}",
                        "--concurrency",
                        str(concurrency),
                    ],
                )
            )
        supervisor = Supervisor(
            programs,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            cwd=str(settings.BASE_DIR),
            out=sys.stdout,
            stop_timeout=stop_timeout,
        )
        sys.exit(supervisor.run())


def database_create_if_missing(settings_dict: dict[str, Any] | None = None) -> None:
    """A fresh PostgreSQL server has no database of Disputa's name yet: create it (trust or a role that may).
    Asked of the server's maintenance database, without the connection pool (Django gives none to its no-database
    alias): through the pool, a database that does not exist, or a server that does not answer, is retried for the
    pool's whole timeout (30 s) and then reported only as a timeout."""
    from django.db import OperationalError, connections
    from django.db.backends.base.base import NO_DB_ALIAS

    default = connections["default"]
    settings_dict = settings_dict or default.settings_dict
    server = type(default)(settings_dict, alias=NO_DB_ALIAS)
    name = settings_dict["NAME"]
    try:
        with server._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            if cursor.fetchone() is None:
                cursor.execute(f"CREATE DATABASE {server.ops.quote_name(name)}")
    except OperationalError as error:
        raise CommandError(f"cannot reach the PostgreSQL server of DATABASE_URL: {error}") from error
