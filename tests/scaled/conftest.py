"""The scaled configuration's tests (issue 9) need PostgreSQL, Redis and the database task queue: the whole test
process runs with DATABASE_URL=postgres://…, REDIS_URL and DISPUTA_TASKS_BACKEND=database (`bash .ci/dev test`
runs them so in its second pass). Elsewhere they fail when CI is set and skip with the reason otherwise."""

from __future__ import annotations

import os

import pytest
from django.conf import settings

from tests.engine.crash_helpers import subprocess_env

DATABASE_TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

MISSING = [
    reason
    for reason, missing in [
        (
            "DATABASE_URL naming PostgreSQL",
            settings.DATABASES["default"]["ENGINE"] != "django.db.backends.postgresql",
        ),
        ("REDIS_URL", not os.environ.get("REDIS_URL")),
        ("DISPUTA_TASKS_BACKEND=database", "django_tasks_db" not in settings.INSTALLED_APPS),
    ]
    if missing
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "tests/scaled/" in str(item.path).replace(os.sep, "/"):
            item.add_marker(pytest.mark.scaled)


@pytest.fixture(autouse=True)
def _scaled_configuration_required() -> None:
    if MISSING:
        message = (
            f"the scaled-setup tests need {', '.join(MISSING)} in the test process's environment "
            "(`bash .ci/dev test` sets them in its scaled pass)"
        )
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)


def scaled_env() -> dict[str, str]:
    """A worker's environment: the test database and Redis, the database task queue, 1 s leases."""
    env = subprocess_env()
    env.update(DISPUTA_TASKS_BACKEND="database", REDIS_URL=os.environ.get("REDIS_URL", ""))
    return env
