"""The simulated backend paces its answer as a model streaming at `cps` characters a second would, delivering
what is due on a shared clock of PACE_TICK, as a network read carries the events that arrived since the last."""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace
from typing import Any
from unittest import mock

import pytest

from debates.agents import simulated
from debates.agents.base import Delta, Result
from debates.agents.simulated import PACE_TICK, SimulatedBackend
from tests.devtools.test_fake_llm import analysis_request


class FakeClock:
    """time.monotonic and asyncio.sleep for the backend: sleeping moves the clock on; every wake-up is kept."""

    def __init__(self, now: float) -> None:
        self.now = now
        self.wakeups: list[float] = []

    def monotonic(self) -> float:
        return self.now

    async def sleep(self, delay: float) -> None:
        assert delay > 0, delay
        self.now += delay
        self.wakeups.append(self.now)


async def stream_on(clock: FakeClock, **options: Any) -> list[tuple[float, str]]:
    request = dataclasses.replace(analysis_request(seed=7), options=options)
    arrivals: list[tuple[float, str]] = []
    with (
        mock.patch.object(simulated, "time", SimpleNamespace(monotonic=clock.monotonic)),
        mock.patch.object(simulated, "asyncio", SimpleNamespace(sleep=clock.sleep)),
    ):
        async for item in SimulatedBackend().stream(request):
            if isinstance(item, Delta):
                arrivals.append((clock.now, item.text))
            else:
                assert isinstance(item, Result)
    return arrivals


@pytest.mark.asyncio
async def test_each_chunk_arrives_at_the_first_tick_after_its_time() -> None:
    clock = FakeClock(now=1000.003)
    start, cps, ttft = clock.now, 1500.0, 0.3
    arrivals = await stream_on(clock, cps=cps, ttft=ttft)
    sent = 0
    for arrived, text in arrivals:
        sent += len(text)
        due = start + ttft + sent / cps
        assert due <= arrived + 1e-9, (sent, due, arrived)
        assert arrived < due + PACE_TICK, (sent, due, arrived)
    assert sent > 500  # an analysis of some length, so the counts below mean something


@pytest.mark.asyncio
async def test_the_loop_wakes_once_a_tick_not_once_a_chunk() -> None:
    clock = FakeClock(now=2000.011)
    arrivals = await stream_on(clock, cps=1500, ttft=0.3)
    paced = clock.wakeups[1:]  # after the time to first token
    assert all(abs(t / PACE_TICK - round(t / PACE_TICK)) < 1e-6 for t in paced)
    streaming = arrivals[-1][0] - arrivals[0][0]
    assert len(paced) <= math.ceil(streaming / PACE_TICK) + 1
    assert len(paced) < len(arrivals) / 2  # 3-14 characters a chunk, 30 characters a tick at 1,500/s


@pytest.mark.asyncio
async def test_unpaced_answers_never_sleep() -> None:
    clock = FakeClock(now=3000.0)
    arrivals = await stream_on(clock, cps=0)
    assert arrivals and clock.wakeups == []
