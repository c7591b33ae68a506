"""Server start in the one-process setup: record the server's event loop for the in-process task backend and
resume runs whose runner died with the previous process (waiting for their leases to expire)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from channels.db import database_sync_to_async
from django.conf import settings

from debates.agents.remote import clients_kept
from debates.platform.task_backends import InProcessBackend, server_loop_set
from debates.services.resume import lease_seconds_left, runs_resumable, runs_resume_due

log = logging.getLogger("debates.startup")


def in_process_tasks() -> bool:
    from django.tasks import task_backends

    return isinstance(task_backends["default"], InProcessBackend)


async def resume_runs_forever_once() -> None:
    """Resume what is due now, then again as each remaining lease expires, until nothing is left."""

    try:
        for _ in range(100):
            resumed = await database_sync_to_async(runs_resume_due)()
            if resumed:
                log.info("resumed runs %s", resumed)
            _, next_expiry = await database_sync_to_async(runs_resumable)()
            if next_expiry is None:
                return
            await asyncio.sleep(lease_seconds_left(next_expiry) + 0.5)
    except Exception:
        log.exception("resuming runs on start-up failed")


class ResumeOnStartup:
    def __init__(self, app: Any) -> None:
        self.app = app
        self.started = False
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.started:
            return
        self.started = True
        loop = asyncio.get_running_loop()
        server_loop_set(loop)
        clients_kept(loop)  # the runs on the server's loop reuse one another's model connections
        if in_process_tasks() and settings.DISPUTA["RESUME_ON_START"]:
            self._task = loop.create_task(resume_runs_forever_once())

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.start()
        await self.app(scope, receive, send)
