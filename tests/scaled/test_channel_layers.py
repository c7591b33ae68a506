"""The Redis channel layers as configured (settings.CHANNEL_REDIS_HOSTS): an idle viewer's receive outlasts the
list-based layer's 5 s blocking pop. redis-py 8 reads with a 5 s timeout by default, which raced that pop and,
when it won, ended the viewer's consumer with a TimeoutError (found by bench fanout)."""

from __future__ import annotations

import asyncio
import os

import pytest
from channels_redis.core import RedisChannelLayer
from channels_redis.pubsub import RedisPubSubChannelLayer
from django.conf import settings

pytestmark = [pytest.mark.scaled, pytest.mark.timeout(60)]


@pytest.mark.asyncio
@pytest.mark.parametrize("layer_class", [RedisChannelLayer, RedisPubSubChannelLayer])
async def test_an_idle_receive_waits_past_the_blocking_pop_then_gets_its_message(layer_class):
    layer = layer_class(hosts=settings.CHANNEL_REDIS_HOSTS, prefix=f"disputa-test-idle-{os.getpid()}")
    try:
        channel = await layer.new_channel()
        receiving = asyncio.ensure_future(layer.receive(channel))
        await asyncio.sleep(RedisChannelLayer.brpop_timeout * 2 + 1)  # two blocking pops came back empty
        assert not receiving.done(), receiving.exception()
        await layer.send(channel, {"type": "run.event", "seq": 1})
        assert (await asyncio.wait_for(receiving, 5))["seq"] == 1
    finally:
        await layer.flush()
