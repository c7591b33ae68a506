"""The scaled setup's processes (issue 9): `manage.py worker` takes a dead worker's run over once its lease expires,
and `manage.py serve_scaled` starts Daphne and the workers together, which run a debate queued by the web side to
the end, its page served by Daphne; a worker that dies is started again, the others left running."""

from __future__ import annotations

import os
import re
import signal
import time
import urllib.request
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.tasks import TaskResultStatus
from django.utils import timezone

from debates.management.commands import worker as worker_command
from debates.models import Run, RunEvent
from debates.services import runs as services
from debates.services.resume import TAKEOVER_GRACE_SECONDS, runs_resumable, runs_to_take_over
from tests.engine.crash_helpers import Proc, free_port, kill_all, lease_owner_pid, wait_for
from tests.scaled.conftest import DATABASE_TASKS, scaled_env

pytestmark = [pytest.mark.scaled, pytest.mark.timeout(180)]

LEASE_SECONDS = 3


def live_lease_pid(run: Run) -> int | None:
    run.refresh_from_db()
    if run.lease_owner and run.lease_expires_at and run.lease_expires_at > timezone.now():
        return lease_owner_pid(run.lease_owner)
    return None


def test_a_killed_workers_run_is_taken_over_by_the_other_within_its_lease(
    transactional_db: None, make_run: Any, settings: Any, tmp_path: Path
):
    settings.TASKS = DATABASE_TASKS
    env = {**scaled_env(), "DISPUTA_LEASE_SECONDS": str(LEASE_SECONDS)}
    workers = [
        Proc("worker", ["--interval", "0.2"], tmp_path / f"worker-{n}.log", env=env).start() for n in range(2)
    ]
    try:
        for w in workers:
            wait_for(lambda w=w: "ready" in w.log.read_text(), 30, "the workers to start")
        # About 30 s of streaming: it cannot finish before the kill.
        run = make_run(backend_options={"cps": 300}, enqueue=True)
        first = wait_for(lambda: live_lease_pid(run), 20, "a worker to lease the run")
        victim = next(w for w in workers if w.popen.pid == first)
        time.sleep(1.0)
        victim.kill()
        killed_at = time.monotonic()
        survivor = next(w for w in workers if w is not victim)
        wait_for(lambda: live_lease_pid(run) == survivor.popen.pid, LEASE_SECONDS + 10, "the takeover")
        took = time.monotonic() - killed_at
        print(
            f"\ntakeover: the other worker leased the run {took:.1f} s after the SIGKILL (lease {LEASE_SECONDS} s)"
        )
        # The lease, a heartbeat at most a third of it old, and the idle worker's poll interval.
        assert took <= LEASE_SECONDS + 2
    finally:
        kill_all(workers)


def test_an_idle_worker_leaves_a_resumed_run_to_the_worker_that_takes_its_wake_up(
    transactional_db: None, make_run: Any, settings: Any, moderator: Any
):
    """Taken over as well, the run had the worker that took its wake-up wait for the lease as long as the debate
    went on: in bench fanout, four debates of ten started only as others ended."""
    from django_tasks_db.models import DBTaskResult

    settings.TASKS = DATABASE_TASKS
    run = make_run()
    Run.objects.filter(pk=run.pk).update(pause_requested=True)  # held, as a moderator's pause holds it
    services.run_control(run_id=run.pk, action="resume", user=moderator)
    resumed_at = RunEvent.objects.filter(run=run, kind="control").latest("seq").created_at
    later = resumed_at + timedelta(seconds=TAKEOVER_GRACE_SECONDS + 1)
    assert run.pk in runs_resumable(now=later)[0]  # no runner holds it...
    assert run.pk not in runs_to_take_over(now=later)  # ...but its wake-up waits in the queue

    # A worker took the wake-up and died before it leased the run: the run is taken over, once the wake-up had
    # time to lease it.
    assert (
        DBTaskResult.objects.filter(status=TaskResultStatus.READY).update(status=TaskResultStatus.RUNNING)
        == 1
    )
    assert run.pk not in runs_to_take_over(now=resumed_at + timedelta(seconds=0.5))
    assert run.pk in runs_to_take_over(now=later)


def test_an_idle_worker_takes_over_a_run_whose_lease_expired(transactional_db: None, make_run: Any):
    run, leased = make_run(), make_run()
    now = timezone.now()
    Run.objects.filter(pk=run.pk).update(
        status="running", lease_owner="gone:1", lease_expires_at=now - timedelta(seconds=1)
    )
    Run.objects.filter(pk=leased.pk).update(
        status="running", lease_owner="alive:2", lease_expires_at=now + timedelta(seconds=30)
    )
    later = now + timedelta(seconds=TAKEOVER_GRACE_SECONDS + 1)  # past the runs' creation
    assert runs_to_take_over(now=later) == [run.pk]


def test_one_worker_with_concurrency_two_drives_two_queued_debates_at_once(
    transactional_db: None, make_run: Any, settings: Any, tmp_path: Path
):
    settings.TASKS = DATABASE_TASKS
    worker = Proc(
        "worker", ["--concurrency", "2", "--interval", "0.2"], tmp_path / "worker.log", env=scaled_env()
    )
    worker.start()
    try:
        wait_for(lambda: "ready" in worker.log.read_text(), 30, "the worker to start")
        runs = [make_run(backend_options={"cps": 1500}, enqueue=True) for _ in range(2)]
        # Both leased by this one process at the same moment: two slots, not one debate after the other.
        wait_for(
            lambda: all(live_lease_pid(run) == worker.popen.pid for run in runs),
            30,
            "both runs leased at once",
        )
        for run in runs:
            wait_for(
                lambda run=run: Run.objects.get(pk=run.pk).status == "completed", 90, "the debates to end"
            )
        worker.popen.send_signal(signal.SIGTERM)  # idle: it stops at once
        assert worker.wait(timeout=30) == 0
    finally:
        kill_all([worker])


def test_a_slot_taking_a_task_lets_the_next_idle_slot_look_at_the_queue_at_once(
    transactional_db: None, make_run: Any, settings: Any, monkeypatch: pytest.MonkeyPatch
):
    """Idle slots look at the queue in turn, once per --interval for the process; one that takes a task says so
    before running it, so a burst of queued debates is not taken one per interval."""
    from django_tasks_db.management.commands.db_worker import Worker

    settings.TASKS = DATABASE_TASKS
    polls = worker_command.PollClock(60.0)
    assert polls.due()  # this slot's look: the next is an interval away
    seen: list[bool] = []
    monkeypatch.setattr(Worker, "run_task", lambda self, result: seen.append(polls.due()))
    make_run(enqueue=True)
    worker_command.queue_worker(polls, "test-worker/1").run()
    assert seen == [True]  # while the task ran, another slot could look at once


def test_a_worker_refuses_to_start_without_the_database_task_queue(tmp_path: Path):
    env = {**scaled_env(), "DISPUTA_TASKS_BACKEND": "dummy"}
    proc = Proc("worker", [], tmp_path / "worker.log", env=env).start()
    assert proc.wait(timeout=60) != 0
    assert "set DISPUTA_TASKS_BACKEND=database" in proc.output()


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_serve_scaled_runs_daphne_and_workers_which_finish_a_queued_debate(
    transactional_db: None, make_run: Any, settings: Any, tmp_path: Path
):
    settings.TASKS = DATABASE_TASKS
    port = free_port()
    proc = Proc(
        "serve_scaled",
        ["--port", str(port), "--workers", "2"],
        tmp_path / "serve_scaled.log",
        env=scaled_env(),
    ).start()
    try:
        wait_for(lambda: "listening on" in proc.log.read_text(), 60, "Daphne to listen")
        ready = wait_for(
            lambda: len(re.findall(r"worker worker\.\d@\S+: ready", proc.log.read_text())) == 2,
            60,
            "two workers",
        )
        assert ready
        run = make_run(enqueue=True)  # as the new-run form does: a row in the database task queue
        wait_for(lambda: Run.objects.get(pk=run.pk).status == "completed", 90, "the debate to complete")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=10) as response:
            assert response.status == 200

        # A worker that dies is started again; Daphne and the other worker are left alone.
        def started(name: str) -> list[int]:
            return [
                int(p) for p in re.findall(rf"{re.escape(name)} started \(pid (\d+)\)", proc.log.read_text())
            ]

        [victim] = started("worker.1")
        os.kill(victim, signal.SIGKILL)
        wait_for(lambda: len(started("worker.1")) == 2, 30, "the dead worker to be started again")
        assert re.search(
            r"worker\.1 exited with code -9 after [\d.]+ s; restarting in 1 s", proc.log.read_text()
        )
        wait_for(
            lambda: len(re.findall(r"worker worker\.1@\S+: ready", proc.log.read_text())) == 2,
            60,
            "the restarted worker to be ready",
        )
        assert len(started("web")) == 1 and len(started("worker.2")) == 1
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=10) as response:
            assert response.status == 200

        proc.popen.send_signal(signal.SIGTERM)  # stops Daphne and both workers, then exits
        assert proc.wait(timeout=30) == 0
        assert all(
            not pid_alive(pid) for pid in [*started("web"), *started("worker.1"), *started("worker.2")]
        )
    finally:
        kill_all([proc])


def test_serve_scaled_creates_the_database_a_fresh_server_lacks_and_names_a_server_it_cannot_reach(db: None):
    """`bash .ci/dev scaled` on a fresh machine: the database of DATABASE_URL does not exist yet. Asked through the
    connection pool, a missing database was retried for 30 s, then reported only as a timeout."""
    import time
    import uuid

    from django.core.management.base import CommandError
    from django.db import connection

    from debates.management.commands.serve_scaled import database_create_if_missing
    from tests.engine.crash_helpers import free_port

    name = f"disputa_fresh_{uuid.uuid4().hex[:8]}"
    fresh = {**connection.settings_dict, "NAME": name}

    def exists() -> bool:
        with connection._nodb_cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name])
            return cursor.fetchone() is not None

    assert not exists()
    try:
        started = time.monotonic()
        database_create_if_missing(fresh)
        assert exists() and time.monotonic() - started < 10
        database_create_if_missing(fresh)  # there already: nothing to do
        assert exists()
    finally:
        with connection._nodb_cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {connection.ops.quote_name(name)}")

    nowhere = {**connection.settings_dict, "PORT": str(free_port())}
    started = time.monotonic()
    with (
        pytest.warns(RuntimeWarning, match="unable to create a connection to the 'postgres' database"),
        pytest.raises(CommandError, match="cannot reach the PostgreSQL server of DATABASE_URL.*refused"),
    ):
        database_create_if_missing(nowhere)
    assert time.monotonic() - started < 10


@pytest.mark.parametrize(("option", "value"), [("--workers", "0"), ("--concurrency", "0")])
def test_serve_scaled_refuses_fewer_than_one_worker_or_slot(option: str, value: str):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match=f"{option} must be at least 1"):
        call_command("serve_scaled", option, value)
