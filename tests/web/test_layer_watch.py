"""The consumer's background work outlives the outages it rides through (debates.web.layer_watch)."""

from __future__ import annotations

import asyncio

import pytest

from debates.web.layer_watch import keep_running

pytestmark = pytest.mark.asyncio


async def test_a_background_task_that_raises_is_started_again(monkeypatch):
    monkeypatch.setattr("debates.web.layer_watch.RESTART_AFTER_SECONDS", 0.01)
    calls = 0

    async def flaky() -> None:
        nonlocal calls
        calls += 1
        if calls < 3:
            raise ConnectionError("Redis is down")

    await asyncio.wait_for(keep_running("flaky", flaky), 5)
    assert calls == 3


async def test_cancelling_it_stops_it_for_good():
    started = asyncio.Event()

    async def forever() -> None:
        started.set()
        await asyncio.sleep(3600)

    task = asyncio.create_task(keep_running("forever", forever))
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
