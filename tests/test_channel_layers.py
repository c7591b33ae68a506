"""The in-memory channel layer (debates.channel_layers) walks its channels for expired messages at most once a
period instead of on every receive, and still removes them."""

from __future__ import annotations

import asyncio

import pytest

from debates.channel_layers import InMemoryChannelLayer

pytestmark = pytest.mark.timeout(10)


async def expire_one_then_receive(layer: InMemoryChannelLayer, name: str) -> None:
    await layer.send("stale", {"type": "x"})
    await asyncio.sleep(0.1)  # past the expiry
    await layer.send("live", {"type": name})
    assert (await layer.receive("live"))["type"] == name


@pytest.mark.asyncio
async def test_expired_messages_are_removed_by_a_walk_at_most_once_a_period(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(InMemoryChannelLayer, "CLEAN_EVERY_SECONDS", 0.5)
    layer = InMemoryChannelLayer(expiry=0.05)
    await expire_one_then_receive(layer, "first")  # the first receive walks: the stale message goes
    assert "stale" not in layer.channels
    await expire_one_then_receive(layer, "second")  # within the period: no walk
    assert "stale" in layer.channels
    await asyncio.sleep(0.5)
    await layer.send("live", {"type": "third"})
    assert (await layer.receive("live"))["type"] == "third"
    assert "stale" not in layer.channels
