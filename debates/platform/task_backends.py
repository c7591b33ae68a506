"""A django.tasks backend for the one-process setup: it runs async tasks on the ASGI server's own event loop,
so the runner's channel-layer messages reach consumers of the in-memory layer in the same process."""

from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any

from asgiref.sync import ThreadSensitiveContext
from django.tasks.backends.base import BaseTaskBackend
from django.tasks.base import Task, TaskResult, TaskResultStatus
from django.utils.crypto import get_random_string

log = logging.getLogger("debates.tasks")

_server_loop: asyncio.AbstractEventLoop | None = None
_running: set[asyncio.Task[Any]] = set()


def server_loop_set(loop: asyncio.AbstractEventLoop) -> None:
    global _server_loop
    _server_loop = loop


class InProcessBackend(BaseTaskBackend):
    supports_async_task = True

    def enqueue(self, task: Task, args: Any, kwargs: Any) -> TaskResult:  # type: ignore[override]
        self.validate_task(task)
        loop = _server_loop
        if loop is None or loop.is_closed():
            raise RuntimeError(
                "The in-process task backend runs debates on the ASGI server's event loop, and this process has "
                "none (a management command or shell?). Start the server, run the debate with "
                "`manage.py run_debate`, or set DISPUTA_TASKS_BACKEND=database with db_worker processes."
            )
        result: TaskResult = TaskResult(
            task=task,
            id=get_random_string(32),
            status=TaskResultStatus.READY,
            enqueued_at=None,
            started_at=None,
            last_attempted_at=None,
            finished_at=None,
            args=args,
            kwargs=kwargs,
            backend=self.alias,
            errors=[],
            worker_ids=[],
        )

        def start() -> None:
            # A fresh context: the runner must not inherit the request's asgiref executor (it dies with it).
            created = loop.create_task(self._run(task, args, kwargs), context=contextvars.Context())
            _running.add(created)
            created.add_done_callback(_running.discard)

        try:
            same_loop = asyncio.get_running_loop() is loop
        except RuntimeError:
            same_loop = False
        if same_loop:
            start()
        else:
            loop.call_soon_threadsafe(start)
        return result

    async def _run(self, task: Task, args: Any, kwargs: Any) -> None:
        async with ThreadSensitiveContext():
            try:
                await task.acall(*args, **kwargs)
            except Exception:
                log.exception("in-process task %s failed", task.name)
