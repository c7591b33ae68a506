"""The fuzzers' world: built once per module with committed rows (the runner needs real transactions), each test
rolls back what it changes, and the module's teardown empties the database as a transactional test would."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches
from django.core.management import call_command
from django.test import override_settings

from tests.web.world import World, world_build

# Logins and password changes are fuzzed by the hundred: a cheap hasher keeps them milliseconds.
FAST_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _fast_hashers(settings: Any) -> None:
    settings.PASSWORD_HASHERS = FAST_HASHERS


@pytest.fixture(scope="module")
def world(django_db_setup: Any, django_db_blocker: Any) -> Iterator[World]:
    with django_db_blocker.unblock(), override_settings(PASSWORD_HASHERS=FAST_HASHERS):
        try:
            yield world_build()
        finally:
            call_command("flush", interactive=False, verbosity=0)
            for cache in caches.all():
                cache.clear()
