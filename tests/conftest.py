"""Shared fixtures. Tests mirror the code layout; e2e browser tests live in tests/e2e and run separately."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission, User
from django.test import Client

from debates import services
from debates.engine.runner import run_execute
from debates.models import Run

DUMMY_TASKS = {"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}}
IMMEDIATE_TASKS = {"default": {"BACKEND": "django.tasks.backends.immediate.ImmediateBackend"}}

MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about "
    "20 percent. Public support rose above 50 percent after the trial. London introduced its charge in 2003 at "
    "five pounds a day. Congestion in central London drifted back towards earlier levels by 2007. Critics argue "
    "that a flat charge is regressive for poorer drivers. Singapore has priced road use since 1975."
)
# The turns of a complete cross-examination with the three ANALYSTS below.
EXPECTED_KEYS = frozenset(
    {
        "r1/analysis/analyst-ada",
        "r1/analysis/analyst-bo",
        "r1/analysis/analyst-cy",
        "r2/questions/examiner",
        "r3/answers/analyst-ada",
        "r3/answers/analyst-bo",
        "r3/answers/analyst-cy",
        "r4/assessment/examiner",
    }
)
ANALYSTS = [
    {"name": "Ada", "lens": "economics"},
    {"name": "Bo", "lens": "equity"},
    {"name": "Cy", "lens": "evidence"},
]


def pytest_configure(config: pytest.Config) -> None:
    # A live Daphne started with fork inherits stale asgiref executors and channel-layer state from earlier
    # async tests; spawn gives it a clean interpreter.
    multiprocessing.set_start_method("spawn", force=True)


@pytest.fixture(autouse=True)
def _tasks_are_recorded_not_run(settings: Any) -> None:
    """Views enqueue runs; unit tests assert that and drive the runner explicitly."""
    settings.TASKS = DUMMY_TASKS


def _user(username: str, *, moderate: bool) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username)
    if moderate:
        user.user_permissions.add(
            Permission.objects.get(codename="moderate", content_type__app_label="debates")
        )
    return user


@pytest.fixture
def moderator(db: None) -> User:
    return _user("mod", moderate=True)


@pytest.fixture
def viewer(db: None) -> User:
    return _user("view", moderate=False)


@pytest.fixture
def moderator_client(moderator: User) -> Client:
    client = Client()
    client.force_login(moderator)
    return client


@pytest.fixture
def viewer_client(viewer: User) -> Client:
    client = Client()
    client.force_login(viewer)
    return client


@pytest.fixture
def make_run(db: None) -> Callable[..., Run]:
    """A queued cross-examination run with instant simulated agents; nothing is enqueued."""

    def make(**overrides: Any) -> Run:
        options = {"cps": 0, **overrides.pop("backend_options", {})}
        config = {"analysts": ANALYSTS, "examiner": "agent", **overrides.pop("config", {})}
        kwargs: dict[str, Any] = {
            "protocol": "cross-examination",
            "topic": "Should the city charge cars entering the centre?",
            "material": MATERIAL,
            "config": config,
            "seed": 7,
            "backend_options": options,
            "enqueue": False,
            **overrides,
        }
        return services.run_create(**kwargs)

    return make


def run_to_stop(run: Run) -> str:
    """Drive the runner in this thread until the run completes, waits for a human, pauses or is cancelled."""
    outcome = async_to_sync(run_execute)(run.pk)
    run.refresh_from_db()
    return outcome
