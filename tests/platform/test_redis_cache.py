"""The shared cache without its Redis: a miss, not an error (debates.platform.redis_cache)."""

from __future__ import annotations

import pytest
from django.core.cache.backends.base import DEFAULT_TIMEOUT

from debates.platform.redis_cache import OutageTolerantRedisCache
from tests.engine.crash_helpers import free_port


@pytest.fixture
def unreachable() -> OutageTolerantRedisCache:
    # Nothing listens on a free port: every command's connection is refused.
    return OutageTolerantRedisCache(
        f"redis://127.0.0.1:{free_port()}/0", {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}
    )


def test_reads_miss_and_writes_are_dropped(unreachable):
    assert unreachable.get("key", "default") == "default"
    assert unreachable.get_many(["a", "b"]) == {}
    assert unreachable.add("key", 1) is False
    assert unreachable.has_key("key") is False
    unreachable.set("key", 1, DEFAULT_TIMEOUT)
    unreachable.set_many({"a": 1})
    unreachable.delete_many(["a"])
    assert unreachable.delete("key") is False


def test_a_count_is_missing_as_an_expired_key_is(unreachable):
    with pytest.raises(ValueError, match="not found"):
        unreachable.incr("count")


def test_a_websocket_connect_is_let_through_uncounted(settings, monkeypatch, unreachable):
    from debates.services import quotas

    monkeypatch.setattr(quotas, "cache", unreachable)
    settings.DISPUTA = {**settings.DISPUTA, "MAX_WS_CONNECTS_PER_MINUTE": 1}
    assert quotas.ws_connect_allowed("203.0.113.9")
    assert quotas.ws_connect_allowed("203.0.113.9")  # uncounted while Redis is unreachable


def test_a_client_is_made_once_per_connection_pool_and_shared(unreachable):
    """Django makes a redis-py client per cache call; ours keeps one per pool (each command still takes a
    connection from the pool, so a Redis that comes back is reached by the same client)."""
    client = unreachable._cache
    first = client.get_client(write=True)
    assert client.get_client(write=True) is first
    assert client.get_client("key", write=False) is first  # one server: reads and writes share its pool
    assert first.connection_pool is client._get_connection_pool(True)
    assert unreachable.get("key", "missing") == "missing"  # and it still misses while nothing listens


@pytest.mark.scaled
def test_the_shared_client_reaches_a_redis_that_comes_back():
    from tests.scaled.throwaway_redis import ThrowawayRedis

    server = ThrowawayRedis()
    try:
        server.start()
        cache = OutageTolerantRedisCache(
            server.url(), {"OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1}}
        )
        cache.set("frame", "<div>", DEFAULT_TIMEOUT)
        client = cache._cache.get_client(write=True)
        server.stop()
        assert cache.get("frame", "missing") == "missing"
        cache.set("frame", "<p>", DEFAULT_TIMEOUT)  # dropped, not raised
        server.start()
        cache.set("frame", "<section>", DEFAULT_TIMEOUT)
        assert cache.get("frame") == "<section>"
        assert cache._cache.get_client(write=True) is client
    finally:
        server.destroy()
