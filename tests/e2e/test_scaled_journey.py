"""The scaled setup in a real browser (issue 9): Daphne and two `manage.py worker` processes as separate processes
on PostgreSQL and Redis, as on several machines. A moderator starts a debate from the form, a viewer watches it in
a second browser; the worker driving it is SIGKILLed mid-debate; the other worker takes it over, and both browsers,
fed by the worker through Redis and Daphne, show every turn once and the run completed.

The servers use a database of their own (created and dropped here); the test reads it with psycopg."""

from __future__ import annotations

import os
import re
import signal
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from playwright.sync_api import BrowserContext, Page, expect

from tests.e2e.conftest import PASSWORD, RUN, login
from tests.e2e.test_run_journeys import HANDLES, SEE, TURN, start_run, turns
from tests.engine.crash_helpers import Proc, free_port, kill_all, lease_owner_pid, wait_for
from tests.scaled.throwaway_redis import ThrowawayRedis

pytestmark = pytest.mark.e2e

PG = os.environ.get("DISPUTA_TEST_PG_SERVER", "postgres://postgres@127.0.0.1:5432")
REDIS_URL = os.environ.get("DISPUTA_TEST_REDIS_URL", "redis://127.0.0.1:6379/10")
LEASE_SECONDS = 2


def port_open(host: str, port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1)
        return s.connect_ex((host, port)) == 0


class Scaled:
    def __init__(self, tmp_path: Path, redis_url: str = REDIS_URL) -> None:
        self.name = f"disputa_e2e_scaled_{os.getpid()}"
        self.url = f"{PG}/{self.name}"
        self.port = free_port()
        self.base_url = f"http://localhost:{self.port}"
        self.tmp_path = tmp_path
        self.env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("DISPUTA_", "DJANGO_", "PYTEST"))},
            "DJANGO_SETTINGS_MODULE": "debates.settings",
            "DATABASE_URL": self.url,
            "REDIS_URL": redis_url,
            "DISPUTA_TASKS_BACKEND": "database",
            "DISPUTA_LEASE_SECONDS": str(LEASE_SECONDS),
            "DJANGO_ALLOWED_HOSTS": "localhost,127.0.0.1",
            "DISPUTA_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        self.procs: list[Proc] = []

    def sql(self, query: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url, autocommit=True) as conn:
            return conn.execute(query, params).fetchall()  # type: ignore[arg-type]

    def admin(self, statement: str) -> None:
        with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
            conn.execute(statement)  # type: ignore[arg-type]

    def manage(self, *args: str, name: str) -> Proc:
        proc = Proc(args[0], list(args[1:]), self.tmp_path / f"{name}.log", env=self.env).start()
        self.procs.append(proc)
        return proc


@pytest.fixture
def scaled(tmp_path: Path) -> Iterator[Scaled]:
    yield from scaled_setup(tmp_path)


@pytest.fixture
def scaled_own_redis(tmp_path: Path) -> Iterator[tuple[Scaled, ThrowawayRedis]]:
    """The same, on a Redis of the test's own, which it may stop and start again."""
    redis = ThrowawayRedis()
    try:
        redis.start()
        for setup in scaled_setup(tmp_path, redis.url()):
            yield setup, redis
    finally:
        redis.destroy()


def scaled_setup(tmp_path: Path, redis_url: str = REDIS_URL) -> Iterator[Scaled]:
    host, port = re.sub(r"^\w+://(?:[^@]*@)?", "", PG).split(":")
    missing = [
        what
        for what, ok in [("PostgreSQL", port_open(host, int(port))), ("Redis", port_open("127.0.0.1", 6379))]
        if not ok
    ]
    if missing:
        message = f"the scaled journey needs {' and '.join(missing)} running on this machine"
        if os.environ.get("CI"):
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    setup = Scaled(tmp_path, redis_url)
    setup.admin(f'DROP DATABASE IF EXISTS "{setup.name}"')
    setup.admin(f'CREATE DATABASE "{setup.name}"')
    try:
        migrate = setup.manage("migrate", "--verbosity", "0", name="migrate")
        assert migrate.wait(timeout=120) == 0, migrate.output()
        users = setup.manage("shell", "-c", CREATE_USERS.format(password=PASSWORD), name="users")
        assert users.wait(timeout=60) == 0, users.output()
        web = setup.manage("serve", "--port", str(setup.port), name="web")
        for n in range(2):
            setup.manage("worker", "--interval", "0.2", name=f"worker-{n}")
        wait_for(lambda: "listening on" in web.log.read_text(), 60, "Daphne to listen")
        for proc in setup.procs[-2:]:
            wait_for(lambda proc=proc: "ready" in proc.log.read_text(), 60, "the workers to start")
        yield setup
    finally:
        kill_all(setup.procs)
        setup.admin(f'DROP DATABASE IF EXISTS "{setup.name}" WITH (FORCE)')


CREATE_USERS = """
from django.contrib.auth.models import Permission, User
moderate = Permission.objects.get(codename="moderate", content_type__app_label="debates")
User.objects.create_user("moderator", password="{password}").user_permissions.add(moderate)
User.objects.create_user("viewer", password="{password}")
"""


def test_a_debate_run_by_workers_streams_to_two_browsers_and_survives_a_worker_kill(
    page: Page, new_context: Callable[..., BrowserContext], scaled: Scaled
) -> None:
    login(page, scaled.base_url, "moderator")
    run_id = start_run(page, scaled.base_url, cps=400)

    viewer = new_context().new_page()
    login(viewer, scaled.base_url, "viewer")
    viewer.goto(f"{scaled.base_url}/runs/{run_id}/")
    expect(viewer.locator("#connection")).to_have_text("live", timeout=SEE)

    # Both browsers see the analyses stream: the frames come from a worker process, through Redis and Daphne.
    for browser in (page, viewer):
        expect(browser.locator("#transcript article[data-status=streaming]").first).to_be_visible(
            timeout=TURN
        )

    # SIGKILL the worker that holds the run's lease while its turns stream.
    pid = wait_for(lambda: lease_pid(scaled, run_id), 30, "a worker to lease the run")
    os.kill(pid, signal.SIGKILL)
    killed_at = time.monotonic()
    taken = wait_for(lambda: (lease_pid(scaled, run_id) or pid) != pid, LEASE_SECONDS + 15, "the takeover")
    assert taken
    took = time.monotonic() - killed_at

    for browser in (page, viewer):
        expect(browser.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    keys = {key for (key,) in scaled.sql("SELECT key FROM debates_turn WHERE run_id = %s", run_id)}
    assert len(keys) == 8
    restarts = scaled.sql(
        "SELECT count(*) FROM debates_runevent WHERE run_id = %s AND kind = 'turn_restarted'", run_id
    )[0][0]
    for browser in (page, viewer):
        expect(turns(browser)).to_have_count(len(keys))
        expect(browser.locator("#transcript article[data-status=committed]")).to_have_count(len(keys))
        for handle in HANDLES:
            expect(browser.locator(f'#transcript article[data-key="r1/analysis/{handle}"]')).to_have_count(1)
    print(
        f"\nscaled journey: worker {pid} killed, run {run_id} taken over after {took:.1f} s, {restarts} turn(s) re-run"
    )


def lease_pid(scaled: Scaled, run_id: int) -> int | None:
    rows = scaled.sql(
        "SELECT lease_owner FROM debates_run WHERE id = %s AND lease_expires_at > now() AND lease_owner <> ''",
        run_id,
    )
    return lease_owner_pid(rows[0][0]) if rows else None


def test_a_viewer_rides_out_a_redis_outage_without_a_reload(
    page: Page, new_context: Callable[..., BrowserContext], scaled_own_redis: tuple[Scaled, ThrowawayRedis]
) -> None:
    """Redis (the channel layer between the worker and Daphne) is down for 5 s while turns stream: the viewer's
    page says live updates are interrupted and keeps showing turns as they commit, read from the database; once
    Redis is back it says "live" again, and the run ends on both pages with every turn once, without a reload."""
    scaled, redis = scaled_own_redis
    login(page, scaled.base_url, "moderator")
    run_id = start_run(page, scaled.base_url, cps=300)
    viewer = new_context().new_page()
    login(viewer, scaled.base_url, "viewer")
    viewer.goto(f"{scaled.base_url}/runs/{run_id}/")
    expect(viewer.locator("#connection")).to_have_text("live", timeout=SEE)
    expect(viewer.locator("#live-notice")).to_be_hidden()
    viewer.evaluate("window.sameDocument = true")  # gone if the page reloads
    expect(viewer.locator("#transcript article[data-status=streaming]").first).to_be_visible(timeout=TURN)

    redis.stop()
    stopped_at = time.monotonic()
    for browser in (page, viewer):
        expect(browser.locator("#live-notice")).to_be_visible(timeout=SEE)
        expect(browser.locator("#live-notice")).to_contain_text("Live updates interrupted")
        expect(browser.locator("#connection")).to_have_text("catching up…")
    # Turns still arrive while Redis is down, read from the database.
    committed_before = viewer.locator("#transcript article[data-status=committed]").count()
    expect(viewer.locator("#transcript article[data-status=committed]")).not_to_have_count(
        committed_before, timeout=TURN
    )
    time.sleep(max(0.0, 5 - (time.monotonic() - stopped_at)))
    redis.start()

    for browser in (page, viewer):
        expect(browser.locator("#live-notice")).to_be_hidden(timeout=SEE)
        expect(browser.locator("#connection")).to_have_text("live")
        expect(browser.locator("#run-status")).to_have_attribute("data-status", "completed", timeout=RUN)
    keys = {key for (key,) in scaled.sql("SELECT key FROM debates_turn WHERE run_id = %s", run_id)}
    assert len(keys) == 8
    for browser in (page, viewer):
        expect(turns(browser)).to_have_count(len(keys))
        expect(browser.locator("#transcript article[data-status=committed]")).to_have_count(len(keys))
    assert viewer.evaluate("window.sameDocument") is True
