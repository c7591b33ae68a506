"""Background work: thin wrappers around services, one code path whatever the task backend."""

from __future__ import annotations

from django.tasks import task

from debates.engine.runner import run_execute


@task
async def run_debate_task(run_id: int) -> str:
    return await run_execute(run_id)
