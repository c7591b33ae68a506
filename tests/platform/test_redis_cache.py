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
