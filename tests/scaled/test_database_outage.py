"""PostgreSQL restarts lose nothing and stop nothing (issue 25): on a server of the test's own, restarted while a
worker drives a debate, the debate completes with each of its turns committed once and both workers live on; an
idle worker outlives a long outage (longer than the connection pool's own reconnection attempts) and takes work
again once the server is back; pages answer 503 quickly while it is down, and no page fails once it is back."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ANALYSTS, EXPECTED_KEYS, MATERIAL
from tests.engine.crash_helpers import Proc, free_port, kill_all, wait_for
from tests.scaled.conftest import scaled_env
from tests.scaled.throwaway_postgres import ThrowawayPostgres

pytestmark = [pytest.mark.scaled, pytest.mark.timeout(300)]

DATABASE = "disputa_outage"


@pytest.fixture
def server() -> Iterator[ThrowawayPostgres]:
    server = ThrowawayPostgres().init()
    try:
        server.start()
        server.create_database(DATABASE)
        yield server
    finally:
        server.destroy()


def outage_env(server: ThrowawayPostgres) -> dict[str, str]:
    return {**scaled_env(), "DATABASE_URL": server.url(DATABASE), "DISPUTA_LEASE_SECONDS": "3"}


def manage(command: str, args: list[str], log: Path, env: dict[str, str]) -> str:
    proc = Proc(command, args, log, env=env).start()
    assert proc.wait(timeout=120) == 0, proc.output()
    return proc.log.read_text()


def run_queue(tmp_path: Path, env: dict[str, str], *, cps: int) -> int:
    """A debate queued as the new-run form queues it, in the throwaway server's database."""
    code = (
        "from debates.services.runs import run_create\n"
        f"run = run_create(protocol='cross-examination', topic='Should the city charge cars entering the centre?', "
        f"material={MATERIAL!r}, config={json.dumps({'analysts': ANALYSTS, 'examiner': 'agent'})}, seed=7, "
        f"backend_options={{'cps': {cps}}})\n"
        "print('queued run', run.pk)\n"
    )
    out = manage("shell", ["-c", code], tmp_path / "queue.log", env)
    return int(out.split("queued run")[-1].split()[0])


def run_status(server: ThrowawayPostgres, run_id: int) -> str:
    return str(server.query(DATABASE, "SELECT status FROM debates_run WHERE id = %s", (run_id,))[0][0])


def workers_start(tmp_path: Path, env: dict[str, str], count: int) -> list[Proc]:
    workers = [
        Proc("worker", ["--interval", "0.2"], tmp_path / f"worker-{n}.log", env=env).start()
        for n in range(count)
    ]
    for worker in workers:
        wait_for(lambda w=worker: "ready" in w.log.read_text(), 60, "the workers to start")
    return workers


def test_a_postgresql_restart_neither_fails_a_running_debate_nor_stops_a_worker(
    server: ThrowawayPostgres, tmp_path: Path
):
    env = outage_env(server)
    manage("migrate", ["--verbosity", "0"], tmp_path / "migrate.log", env)
    workers = workers_start(tmp_path, env, 2)
    try:
        run_id = run_queue(tmp_path, env, cps=300)  # about 30 s of streaming
        wait_for(
            lambda: server.query(
                DATABASE, "SELECT 1 FROM debates_turn WHERE run_id = %s AND raw_text <> ''", (run_id,)
            ),
            60,
            "the debate's first turns to stream",
        )
        server.stop()  # every session terminated "due to administrator command"
        time.sleep(8)  # longer than the pool's wait for a connection (5 s): the runner's calls fail
        server.start()
        wait_for(lambda: run_status(server, run_id) in {"completed", "failed"}, 150, "the debate to end")

        reason = server.query(DATABASE, "SELECT status_reason FROM debates_run WHERE id = %s", (run_id,))[0][
            0
        ]
        assert run_status(server, run_id) == "completed", reason
        events = server.query(
            DATABASE,
            "SELECT seq, kind, payload FROM debates_runevent WHERE run_id = %s ORDER BY seq",
            (run_id,),
        )
        assert [seq for seq, _, _ in events] == list(range(1, len(events) + 1))
        commits = Counter(payload["key"] for _, kind, payload in events if kind == "turn_committed")
        assert commits == dict.fromkeys(EXPECTED_KEYS, 1)
        assert all(worker.poll() is None for worker in workers), [w.output() for w in workers]
        logs = "".join(worker.log.read_text() for worker in workers)
        assert "database unreachable" in logs or "database connection was lost" in logs  # the outage was met
    finally:
        kill_all(workers)


def test_an_idle_worker_outlives_a_long_outage_and_takes_work_once_the_database_is_back(
    server: ThrowawayPostgres, tmp_path: Path
):
    env = outage_env(server)
    manage("migrate", ["--verbosity", "0"], tmp_path / "migrate.log", env)
    [worker] = workers_start(tmp_path, env, 1)
    try:
        server.stop()
        # Several times the pool's reconnect_timeout (5 s), after which it gives up its own attempts.
        outage_ends = time.monotonic() + 20
        while time.monotonic() < outage_ends:
            assert worker.poll() is None, worker.output()
            time.sleep(0.5)
        assert "database unreachable" in worker.log.read_text()
        server.start()

        run_id = run_queue(tmp_path, env, cps=3000)
        wait_for(lambda: run_status(server, run_id) == "completed", 90, "the worker to run the queued debate")
        assert worker.poll() is None
        assert "database back after" in worker.log.read_text()
    finally:
        kill_all([worker])


def page_status(port: int, cookie: str) -> tuple[int, dict[str, str], float]:
    """(status, headers, seconds) of the archive page for a visitor with a session cookie (its check reads the
    database)."""
    request = urllib.request.Request(f"http://127.0.0.1:{port}/", headers={"Cookie": f"sessionid={cookie}"})
    opener = urllib.request.build_opener(NoRedirects)
    started = time.monotonic()
    try:
        with opener.open(request, timeout=30) as response:
            return response.status, dict(response.headers), time.monotonic() - started
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), time.monotonic() - started


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def test_pages_answer_503_quickly_while_the_database_is_down_and_never_500_once_it_is_back(
    server: ThrowawayPostgres, tmp_path: Path
):
    env = outage_env(server)
    manage("migrate", ["--verbosity", "0"], tmp_path / "migrate.log", env)
    port = free_port()
    web = Proc("serve", ["--port", str(port)], tmp_path / "serve.log", env=env).start()
    try:
        wait_for(lambda: "listening on" in web.log.read_text(), 60, "Daphne to listen")
        cookie = "x" * 32  # no such session: the page redirects to the login once the database has said so
        assert [page_status(port, cookie)[0] for _ in range(5)] == [302] * 5

        # A restart between two requests: the pool's idle connections died with the old server. Each is
        # checked before use, so none of them fails a page.
        server.stop()
        server.start()
        statuses = [page_status(port, cookie)[0] for _ in range(20)]
        assert statuses == [302] * 20, statuses

        # While the server is down, pages say so quickly; once it is back, they are served again.
        server.stop()
        for _ in range(3):
            status, headers, took = page_status(port, cookie)
            assert status == 503 and headers["Retry-After"] == "10"
            assert took < 8  # the pool's wait (5 s) and a margin; it hung for up to 14 s before
        server.start()
        wait_for(lambda: page_status(port, cookie)[0] == 302, 30, "pages to be served again")
        assert web.poll() is None
    finally:
        kill_all([web])
