"""End-to-end fixtures: a live Daphne serving the real ASGI app (HTTP + WebSocket) in a spawned child process,
Debian's Chromium driven by pytest-playwright, and users who log in through the real login page.

Run these separately from the rest of the suite (pytest-playwright keeps an event loop running on the main
thread, which breaks pytest-asyncio tests that come after it):

    pytest -m "not e2e"
    pytest -m e2e tests/e2e
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing.live import make_application, set_database_connection
from daphne.testing import DaphneProcess
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from django.contrib.auth.models import Permission, User
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.db import connections
from playwright.sync_api import BrowserContext, Page, expect

from debates.devtools.browser import CHROMIUM_ARGS, chromium_path
from debates.engine.runner import run_execute
from debates.models import Run
from debates.services import runs as services

SERVER_START_SECONDS = 30
PASSWORD = "e2e-password-1"
# The longest wait for a whole run (ms): generous, since CI runs the browser tests beside the scaled pass on two
# cores.
RUN = 180_000


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests last, should one invocation select both kinds: once pytest-playwright has started its
    event loop, later pytest-asyncio tests fail (microsoft/playwright-pytest#167)."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is not None)


# --- browser ---------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict[str, Any]) -> dict[str, Any]:
    """Debian's Chromium instead of `playwright install`. A missing browser fails the run loudly (in CI and
    locally alike): a silently skipped e2e suite would look green while testing nothing."""
    path = chromium_path()
    if not (os.path.isfile(path) and os.access(path, os.X_OK)) and not shutil.which(path):
        pytest.fail(
            f"The e2e tests need Chromium at {path!r} (env CHROMIUM_PATH, default /usr/bin/chromium), and there is "
            "no executable there. Install it (Debian: apt-get install chromium) or set CHROMIUM_PATH. This fails "
            "rather than skips, in CI and locally, so a missing browser never passes as a green run. "
            "To run only the other tests: pytest -m 'not e2e'.",
            pytrace=False,
        )
    return {**browser_type_launch_args, "executable_path": path, "args": CHROMIUM_ARGS}


# --- server ----------------------------------------------------------------------------------------------------


@pytest.fixture(scope="session", autouse=True)
def _test_database_before_the_browser(django_db_setup: None) -> None:
    """Create the test database before pytest-playwright starts its event loop on the main thread; after that,
    Django's async-safety guard refuses the ORM calls that create it (and destroy it at the end)."""


@pytest.fixture
def live_daphne(monkeypatch: pytest.MonkeyPatch, transactional_db: None) -> Iterator[str]:
    """A Daphne child process serving the full ASGI app against the (file) test database; yields its base URL.

    `monkeypatch` comes first on purpose: it is then torn down after `transactional_db`, so the
    DJANGO_ALLOW_ASYNC_UNSAFE set by `allow_async_unsafe` still covers the database flush at teardown.
    """
    for connection in connections.all():
        if connection.vendor == "sqlite" and connection.is_in_memory_db():
            pytest.fail("The live server needs a file database (DATABASES['default']['TEST']['NAME']).")
    # The child is spawned (tests/conftest.py), so it reads settings from this environment, not from the
    # `settings` fixture: the autouse DummyBackend override of the unit tests does not reach it.
    # The test database this process uses: under xdist each worker has its own (a suffixed name).
    monkeypatch.setenv("DISPUTA_TEST_DB_NAME", str(connections["default"].settings_dict["NAME"]))
    monkeypatch.setenv("DISPUTA_TASKS_BACKEND", "inprocess")
    monkeypatch.setenv("DISPUTA_RESUME_ON_START", "true")
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", "localhost,127.0.0.1")
    # The server must keep Django's async-safety checks: only the test process relaxes them.
    monkeypatch.delenv("DJANGO_ALLOW_ASYNC_UNSAFE", raising=False)

    process = DaphneProcess(
        "localhost",
        partial(make_application, static_wrapper=ASGIStaticFilesHandler),
        setup=set_database_connection,
    )
    process.start()
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while not process.ready.wait(timeout=0.5):
            if not process.is_alive() or time.monotonic() > deadline:
                detail = (
                    process.errors.get(timeout=1)[1] if not process.errors.empty() else "no error reported"
                )
                pytest.fail(f"The live Daphne server did not start: {detail}", pytrace=False)
        yield f"http://localhost:{process.port.value}"
    finally:
        process.terminate()
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)


@pytest.fixture
def allow_async_unsafe(live_daphne: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """ORM calls in e2e test bodies: pytest-playwright's sync API keeps an event loop running on the main thread,
    which trips Django's async-safety guard (microsoft/playwright-pytest#29). Set after the server has started,
    so the server process keeps the guard."""
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")


# --- users -------------------------------------------------------------------------------------------------------


def user_create(username: str, *, moderate: bool) -> User:
    # A cheap hash (1 000 PBKDF2 iterations instead of over a million) saves a second per user; the server
    # upgrades it to the full count at the first login, as it would for any user after a Django upgrade.
    hasher = PBKDF2PasswordHasher()
    password = hasher.encode(PASSWORD, hasher.salt(), iterations=1_000)
    user = User.objects.create(username=username, password=password)
    if moderate:
        user.user_permissions.add(
            Permission.objects.get(codename="moderate", content_type__app_label="debates")
        )
    return user


def login(page: Page, base_url: str, username: str) -> None:
    """Log in through the real login page, as a person would."""
    page.goto(f"{base_url}/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.locator("header.topbar .who")).to_contain_text(username)


@pytest.fixture
def moderator_page(page: Page, live_daphne: str, allow_async_unsafe: None) -> Page:
    """The default browser page, logged in as a user with the moderate permission."""
    user_create("moderator", moderate=True)
    login(page, live_daphne, "moderator")
    expect(page.locator("header.topbar .who")).to_contain_text("moderator · moderator")
    return page


@pytest.fixture
def viewer_page(
    new_context: Callable[..., BrowserContext], live_daphne: str, allow_async_unsafe: None
) -> Page:
    """A second, independent browser (own cookies), logged in as a user without the moderate permission."""
    user_create("viewer", moderate=False)
    page = new_context().new_page()
    login(page, live_daphne, "viewer")
    expect(page.locator("header.topbar .who")).to_contain_text("viewer · viewer")
    return page


@pytest.fixture
def screenshot(page: Page, output_path: str) -> Callable[..., Path]:
    """Save evidence under test-results/<test>/ (gitignored; pytest-playwright clears it per session)."""

    def take(name: str, target: Page | None = None) -> Path:
        path = Path(output_path) / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        (target or page).screenshot(path=str(path), full_page=True)
        return path

    return take


# --- runs --------------------------------------------------------------------------------------------------------

FINISH_SECONDS = 90


def run_to_the_end(**create: Any) -> Run:
    """Create a run (services.run_create's arguments, not enqueued) and run it to its end with the simulated agents,
    on a thread of its own (the browser's event loop owns this one, and creating a run publishes an event); the
    live server may pick the queued run up first, so wait for the database to say it is done."""
    created: dict[str, int] = {}

    def work() -> None:
        try:
            run = services.run_create(**create, enqueue=False)
            created["id"] = run.pk
            async_to_sync(run_execute)(run.pk)
        finally:
            connections.close_all()

    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    worker.join(FINISH_SECONDS)
    run = Run.objects.get(pk=created["id"])
    deadline = time.monotonic() + FINISH_SECONDS
    while not run.is_terminal and time.monotonic() < deadline:
        time.sleep(0.2)
        run.refresh_from_db()
    assert run.status == "completed", (run.status, run.status_reason)
    return run
