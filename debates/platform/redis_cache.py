"""Django's Redis cache, but an unreachable Redis is a cache miss, not an error.

Everything Disputa keeps in the shared cache can be done without: published event frames (a replay renders them
again from the database) and the websocket connect counts (a connect is let through uncounted). Django's backend
raises redis' ConnectionError instead, so a 5 s Redis restart failed every replay and refused every socket while it
lasted. Short socket timeouts (settings.CACHES) make a Redis that hangs fail as quickly as one that is down."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

UNREACHABLE = (RedisConnectionError, RedisTimeoutError, OSError)
_logged_at = 0.0


def _or[T](fallback: T, call: Callable[[], T]) -> T:
    global _logged_at
    try:
        return call()
    except UNREACHABLE as error:
        if time.monotonic() - _logged_at > 10:  # a line per outage, not one per lookup
            _logged_at = time.monotonic()
            logger.warning("the shared cache (Redis) is unreachable, going without it: %r", error)
        return fallback


class OutageTolerantRedisCacheClient(RedisCacheClient):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: dict[int, Any] = {}

    def get_client(self, key: Any = None, *, write: bool = False) -> Any:
        """A client per connection pool, made once, not one per call as Django's: a redis-py client is costly to
        make (its options, its retry policy; 2 % of a busy worker's CPU, py-spy in bench fanout), and sharing one
        is safe (each command takes a connection from the pool)."""
        pool = self._get_connection_pool(write)  # type: ignore[attr-defined]
        client = self._clients.get(id(pool))
        if client is None:
            client = self._clients[id(pool)] = self._client(connection_pool=pool)  # type: ignore[attr-defined]
        return client

    def add(self, key: Any, value: Any, timeout: Any) -> bool:
        return _or(False, lambda: super(OutageTolerantRedisCacheClient, self).add(key, value, timeout))

    def get(self, key: Any, default: Any) -> Any:
        return _or(default, lambda: super(OutageTolerantRedisCacheClient, self).get(key, default))

    def set(self, key: Any, value: Any, timeout: Any) -> None:
        _or(None, lambda: super(OutageTolerantRedisCacheClient, self).set(key, value, timeout))

    def touch(self, key: Any, timeout: Any) -> bool:
        return _or(False, lambda: super(OutageTolerantRedisCacheClient, self).touch(key, timeout))

    def delete(self, key: Any) -> bool:
        return _or(False, lambda: super(OutageTolerantRedisCacheClient, self).delete(key))

    def get_many(self, keys: Any) -> dict[Any, Any]:
        return _or({}, lambda: super(OutageTolerantRedisCacheClient, self).get_many(keys))

    def has_key(self, key: Any) -> bool:
        return _or(False, lambda: super(OutageTolerantRedisCacheClient, self).has_key(key))

    def incr(self, key: Any, delta: int) -> Any:
        missing = object()
        count = _or(missing, lambda: super(OutageTolerantRedisCacheClient, self).incr(key, delta))
        if count is missing:
            raise ValueError(f"Key {key!r} not found (the cache is unreachable)")  # as for a missing key
        return count

    def set_many(self, data: Any, timeout: Any) -> None:
        _or(None, lambda: super(OutageTolerantRedisCacheClient, self).set_many(data, timeout))

    def delete_many(self, keys: Any) -> None:
        _or(None, lambda: super(OutageTolerantRedisCacheClient, self).delete_many(keys))

    def clear(self) -> bool:
        return _or(False, lambda: super(OutageTolerantRedisCacheClient, self).clear())


class OutageTolerantRedisCache(RedisCache):
    def __init__(self, server: str, params: dict[str, Any]) -> None:
        super().__init__(server, params)
        self._class = OutageTolerantRedisCacheClient
