"""`manage.py resume_runs`: run every run whose runner died to the end (or its next human wait) in this process,
waiting for leases to expire. The scaled setup calls it from a worker; the one-process server does it itself."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.db import database_sync_to_async
from django.core.management.base import BaseCommand

from debates.engine.runner import run_execute
from debates.services.resume import lease_seconds_left, runs_resumable


class Command(BaseCommand):
    help = "Resume runs whose lease expired and drive them in this process until none is left."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--once", action="store_true", help="Only the runs due now; do not wait for leases."
        )

    def handle(self, *args: Any, once: bool, **options: Any) -> None:
        results = asyncio.run(self._resume(once=once))
        for run_id, outcome in sorted(results.items()):
            self.stdout.write(f"run {run_id}: {outcome}")

    async def _resume(self, *, once: bool) -> dict[int, str]:
        results: dict[int, str] = {}
        running: dict[int, asyncio.Task[str]] = {}
        while True:
            ready, next_expiry = await database_sync_to_async(runs_resumable)()
            for run_id in ready:
                # Again if our earlier attempt ended while the run is still due (we lost the lease race to a
                # runner that has since died): otherwise nobody here would ever take it over.
                if run_id not in running or running[run_id].done():
                    running[run_id] = asyncio.create_task(run_execute(run_id, lease_wait=0))
            if once or (next_expiry is None and not ready):
                break
            await asyncio.sleep(max(0.2, min(lease_seconds_left(next_expiry), 1.0)) if next_expiry else 0.2)
            for run_id, task in list(running.items()):
                if task.done():
                    results[run_id] = task.result()
            if next_expiry is None and all(t.done() for t in running.values()):
                ready, next_expiry = await database_sync_to_async(runs_resumable)()
                if not ready and next_expiry is None:
                    break
        for run_id, task in running.items():
            results[run_id] = await task
        return results
