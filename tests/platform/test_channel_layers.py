"""The in-memory channel layer (debates.platform.channel_layers): it walks its channels for expired messages at most once a
period instead of on every receive, and still removes them; a group message reaches every member once, as sent."""

from __future__ import annotations

import asyncio

import pytest

from debates.platform.channel_layers import InMemoryChannelLayer

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


@pytest.mark.asyncio
async def test_a_group_message_reaches_every_member_once_as_it_was_when_sent():
    layer = InMemoryChannelLayer()
    members = [await layer.new_channel() for _ in range(50)]
    for channel in members:
        await layer.group_add("run-1", channel)
    await layer.group_add("run-2", "other")
    message = {"type": "turn.delta", "parts": [{"first_seq": 3, "html": "<p>so far</p>"}]}
    await layer.group_send("run-1", message)
    message["parts"][0]["html"] = "changed after sending"
    received = [await asyncio.wait_for(layer.receive(channel), 1) for channel in members]
    assert all(
        r == {"type": "turn.delta", "parts": [{"first_seq": 3, "html": "<p>so far</p>"}]} for r in received
    )
    assert all(layer.channels.get(channel) is None for channel in members)  # nothing more queued
    assert "other" not in layer.channels  # another run's group got nothing


@pytest.mark.asyncio
async def test_a_full_member_misses_a_group_message_and_the_others_still_get_it():
    layer = InMemoryChannelLayer(capacity=1)
    await layer.group_add("run-1", "busy")
    await layer.group_add("run-1", "idle")
    await layer.send("busy", {"type": "first"})  # its one place is taken
    await layer.group_send("run-1", {"type": "second"})
    assert (await layer.receive("idle"))["type"] == "second"
    assert (await layer.receive("busy"))["type"] == "first"
    assert "busy" not in layer.channels  # the second never queued there
