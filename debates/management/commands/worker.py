"""`manage.py worker`: one worker process of the scaled setup (DESIGN §3). It runs the debate tasks queued in the
database (django-tasks-db's worker, one task at a time) and, whenever no task is ready, takes over a run whose
runner died: a run that should be running whose lease has expired (the runner heartbeats it every third of
DISPUTA_LEASE_SECONDS, so a SIGKILLed worker's run is picked up within the lease, 30 s by default, once a worker is
free). Start N of them on any machines that reach the database and Redis."""

from __future__ import annotations

import logging
import os
import random
import signal
import socket
import time
from types import FrameType
from typing import Any

from asgiref.sync import async_to_sync
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections

from debates.engine.runner import run_execute
from debates.services import runs_resumable

log = logging.getLogger("debates.worker")


class Command(BaseCommand):
    help = (
        "Run debate tasks from the database queue and take over runs whose runner died "
        "(DISPUTA_TASKS_BACKEND=database; REDIS_URL for live pages)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--interval", type=float, default=0.5, help="Seconds to sleep when there is nothing to do (0.5)."
        )
        parser.add_argument("--worker-id", default="", help="Name in task results (host:pid by default).")

    def handle(self, *args: Any, interval: float, worker_id: str, **options: Any) -> None:
        backend = settings.TASKS["default"]["BACKEND"]
        if "django_tasks_db" not in settings.INSTALLED_APPS:  # its models cannot even be imported then
            raise CommandError(
                f"worker needs the database task backend, not {backend}: "
                "set DISPUTA_TASKS_BACKEND=database (and REDIS_URL, DATABASE_URL) for every process."
            )
        from django_tasks_db.management.commands.db_worker import Worker

        worker_id = worker_id or f"{socket.gethostname()}:{os.getpid()}"
        stopping = False

        def stop(signum: int, frame: FrameType | None) -> None:
            nonlocal stopping
            if stopping:  # a second signal: leave now (the run's lease expires and another worker resumes it)
                raise SystemExit(1)
            stopping = True
            log.warning(
                "worker %s: %s, stopping after the current debate", worker_id, signal.strsignal(signum)
            )

        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, stop)
        self.stdout.write(f"worker {worker_id}: ready")
        while not stopping:
            # django-tasks-db's own worker, asked for at most one ready task, so takeovers are checked between
            # tasks; batch mode returns at once when none is ready.
            tasks = Worker(
                queue_names=["default"],
                interval=0,
                batch=True,
                backend_name="default",
                startup_delay=False,
                max_tasks=1,
                worker_id=worker_id,
                excluded_queue_names=[],
            )
            tasks.run()
            if stopping or tasks._run_tasks:
                continue
            if not self._take_over_one(worker_id):
                time.sleep(interval)

    def _take_over_one(self, worker_id: str) -> bool:
        """Drive one run whose runner died, if any; False when there was none to take."""
        close_old_connections()
        ready, _ = runs_resumable()
        # Two idle workers seldom race for the same run (the lease settles it if they do).
        random.shuffle(ready)
        for run_id in ready:
            outcome = async_to_sync(run_execute)(run_id, lease_wait=0)
            if outcome != "lease-busy":
                log.info("worker %s: took over run %s: %s", worker_id, run_id, outcome)
                return True
        return False
