"""The attention bus (debates.engine.attention): a commit that may change what waits for a person wakes every
open page's "Needs you" count. A runner's commits hand the wake-up to its event loop and go on: a slow layer
holds no debate back."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from channels.layers import get_channel_layer

from debates.engine.attention import ATTENTION_GROUP, ATTENTION_KINDS
from debates.engine.runner import run_execute
from debates.platform.channel_layers import InMemoryChannelLayer

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads


class HeldWakeUpsLayer(InMemoryChannelLayer):
    """The in-memory layer, whose wake-ups do not go out until the test lets them (a layer that has stalled)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.released = asyncio.Event()
        self.released.set()
        self.held = 0
        self.sent = 0

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if group == ATTENTION_GROUP:
            self.held += 1
            await self.released.wait()
            self.sent += 1
        await super().group_send(group, message)


@pytest.fixture
def held_layer(settings: Any) -> HeldWakeUpsLayer:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.HeldWakeUpsLayer"}}
    layer = get_channel_layer()
    assert isinstance(layer, HeldWakeUpsLayer)
    return layer


@pytest.mark.asyncio
async def test_a_debate_runs_to_the_end_while_its_wake_ups_wait_for_a_stalled_layer(make_run, held_layer):
    run = await asyncio.to_thread(make_run)
    held_layer.released.clear()  # the layer stalls
    held_layer.held = 0
    assert await asyncio.wait_for(run_execute(run.pk), timeout=30) == "done"
    kinds = await asyncio.to_thread(lambda: list(run.events.values_list("kind", flat=True)))
    # A wake-up for each change of what may wait for a person (the status changes here), none for a commit.
    assert held_layer.held == sum(kind in ATTENTION_KINDS for kind in kinds) >= 2
    assert "turn_committed" in kinds and "turn_committed" not in ATTENTION_KINDS
    assert held_layer.sent == 0  # every wake-up waited; no commit did
    held_layer.released.set()
    for _ in range(100):
        if held_layer.sent == held_layer.held:
            break
        await asyncio.sleep(0.05)
    assert held_layer.sent == held_layer.held  # and each went out once the layer moved again
