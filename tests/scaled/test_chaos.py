"""The chaos suite (issue 25): the scaled setup as a user runs it (`manage.py serve_scaled --workers 2
--concurrency 3`) on a PostgreSQL server and a Redis server of the test's own, which it stops, restarts and kills, so the machine's
services and the other tests are never disturbed. For each fault (Redis down 5 s, a PostgreSQL restart, PostgreSQL
down 10 s, Daphne SIGKILLed, both workers SIGKILLed) a moderator starts a debate of every protocol from the new-run
form, two websocket viewers (a moderator and a plain viewer) watch each, and a page poller asks for pages twice a
second; the fault comes while the turns stream. Then:

- every debate completes, once, with exactly the turns (keys and payloads) and the outcome of an uninterrupted run
  of the same form with the same seed (run on the same stack before the faults, twice, to show that simulated
  agents are deterministic), each turn started and committed once, and event seqs 1..last_seq without a gap or a
  double (tests.engine.crash_helpers.exactly_once_problems);
- every viewer converges without a reload: it shows the run completed at its last seq (a viewer whose socket
  closed reconnects as the page's htmx ws extension does, on the same codes, with `?seq=` of what it shows);
- no request answers 500 (503 with Retry-After while the database is down is allowed);
- no process needs a manual restart: serve_scaled's programs are all running at the end (the supervisor started
  again what was killed; an outage of a service made none exit), and a debate started once the fault is over
  completes too.

The scenario table is printed at the end (and in the terminal summary, which xdist relays), whatever the outcome;
the assertions come after it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import datetime as dt
import html
import http.client
import os
import random
import re
import secrets
import signal
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from email.message import Message
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import psycopg
import pytest

from debates.engine import registry
from tests.engine.crash_helpers import (
    Proc,
    RunRecord,
    TurnRecord,
    exactly_once_problems,
    free_port,
    kill_all,
)
from tests.scaled.conftest import scaled_env
from tests.scaled.throwaway_postgres import ThrowawayPostgres
from tests.scaled.throwaway_redis import ThrowawayRedis

pytestmark = [pytest.mark.scaled, pytest.mark.timeout(900)]

DATABASE = "disputa_chaos"
SEED = 4242
PROTOCOLS = [p.name for p in registry.all_protocols()]
# The simulated agents' pace per protocol, for about 6 s of streaming each. serve_scaled's two workers drive three
# debates each at once (--concurrency), so every protocol's debate streams when the fault comes.
WORKERS, CONCURRENCY = 2, 3
CPS = {
    "adversarial": 800,
    "comparative": 2700,
    "consultation": 1200,
    "cross-examination": 1050,
    "kb-debate": 2500,
    "market-panel": 2000,
}
DEFAULT_CPS = 1500  # a protocol added since
FRESH_PROTOCOL = "cross-examination"  # the debate started once the fault is over
FRESH_CPS = 4000
FAULT_AFTER = 1.5  # seconds after the first turn of a scenario streams
REDIS_DOWN = 5.0
POSTGRES_DOWN = 10.0
LEASE_SECONDS = 3  # a SIGKILLed worker's run is taken over this long after its last heartbeat
STACK_START = 120.0  # migrating a fresh database on a loaded machine
RUNS_END = 180.0  # after the fault, for every debate to end
CONVERGE = 30.0  # after the debates ended, for every viewer to show it
POLL_EVERY = 0.5
RECONNECT_CODES = {1006, 1011, 1012, 1013}  # the codes on which htmx-ext-ws 2.0.4 reconnects
RECONNECT_CAP = 8.0  # its full-jitter delay (up to 1, 2, 4 … 64 s), capped to keep the suite short
STATUS_SECTION = re.compile(r'<section id="run-status"[^>]*>')
MODERATOR, VIEWER = "chaos-moderator", "chaos-viewer"
# What the moderator unticks on the form so that no step waits for a person: the comparative debate's evidence
# review (ticked by default, it waits for the moderator to proceed).
UNTICKED = {"comparative": ("evidence_review",)}

ROWS: list[dict[str, Any]] = []


# --- the stack: a PostgreSQL and a Redis of the test's own, and serve_scaled on them ----------------------------------


class Stack:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.pg = ThrowawayPostgres().init()
        self.redis = ThrowawayRedis()
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.proc: Proc | None = None
        self.cookies: dict[str, str] = {}
        self.secret_key = secrets.token_urlsafe(40)
        self.runs_started = 0  # debates the test started from the form

    def env(self) -> dict[str, str]:
        env = scaled_env()
        env.update(
            DATABASE_URL=self.pg.url(DATABASE),
            REDIS_URL=self.redis.url(0),
            DISPUTA_LEASE_SECONDS=str(LEASE_SECONDS),
            DISPUTA_CHANNEL_PREFIX="chaos",
            DJANGO_ALLOWED_HOSTS="127.0.0.1,localhost",
            DJANGO_DEBUG="false",  # as deployed
            DJANGO_SECRET_KEY=self.secret_key,
            # One moderator starts some fifty debates here, seven at a time. (The websocket connect limit stays: it
            # counts in Redis, which is part of what an outage of it may break.)
            DISPUTA_MAX_ACTIVE_RUNS_PER_USER="0",
            DISPUTA_MAX_RUNS_PER_HOUR="0",
        )
        return env

    def start(self) -> None:
        self.pg.start()
        self.redis.start()
        env = self.env()
        self.proc = Proc(
            "serve_scaled",
            [
                "--port",
                str(self.port),
                "--workers",
                str(WORKERS),
                "--concurrency",
                str(CONCURRENCY),
                "--stop-timeout",
                "3",
            ],
            self.root / "serve_scaled.log",
            env=env,
        ).start()
        assert self.wait_ready(STACK_START), f"serve_scaled did not start its programs:\n{self.proc.output()}"
        out = self.manage_shell(SETUP.format(moderator=MODERATOR, viewer=VIEWER), env)
        self.cookies = dict(re.findall(r"^cookie (\S+) (\S+)$", out, re.M))
        assert set(self.cookies) == {MODERATOR, VIEWER}, out

    def manage_shell(self, code: str, env: dict[str, str]) -> str:
        proc = Proc("shell", ["-c", code], self.root / f"shell-{time.monotonic_ns()}.log", env=env).start()
        assert proc.wait(timeout=120) == 0, proc.output()
        return proc.log.read_text()

    def destroy(self) -> None:
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.popen.send_signal(signal.SIGTERM)  # stops Daphne and the workers
                with contextlib.suppress(Exception):
                    self.proc.wait(timeout=20)
            kill_all([self.proc])
            for pid in self.pids().values():  # what a SIGKILLed supervisor could not stop
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        self.redis.destroy()
        self.pg.destroy()

    # The supervisor's lines: "HH:MM:SS supervisor | web started (pid N)", "HH:MM:SS web | …".
    def log(self) -> str:
        assert self.proc is not None
        return self.proc.log.read_text(errors="replace")

    def started(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for name, pid in re.findall(r"\| (\S+) started \(pid (\d+)\)", self.log()):
            found.setdefault(name, []).append(int(pid))
        return found

    def pids(self) -> dict[str, int]:
        """Each program's current process."""
        return {name: pids[-1] for name, pids in self.started().items()}

    def programs_ready(self) -> bool:
        """Every program started as many times as it said it was ready, and its process is running."""
        log = self.log()
        started = self.started()
        if set(started) != {"web", "worker.1", "worker.2"}:
            return False
        for name, pids in started.items():
            ready = "is listening on" if name == "web" else ": ready"
            said = len(re.findall(rf"^\S+ {re.escape(name)}\s+\| .*{ready}", log, re.M))
            if said < len(pids) or not pid_running(pids[-1]):
                return False
        return True

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.proc is not None
            if self.proc.poll() is not None:
                pytest.fail(f"serve_scaled exited:\n{self.proc.output()}", pytrace=False)
            if self.programs_ready():
                return True
            time.sleep(0.1)
        return False

    def sql(self, query: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.pg.url(DATABASE), connect_timeout=3) as conn:
            return conn.execute(query, params).fetchall()  # type: ignore[arg-type]

    def sql_retrying(
        self, query: str, params: tuple[Any, ...] = (), timeout: float = 60
    ) -> list[tuple[Any, ...]]:
        """The same, waiting out a server that is down or restarting (the test reads while it injects)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                return self.sql(query, params)
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)


SETUP = """
from django.contrib.auth.models import Permission, User
from django.test import Client
from kb.demo import demo_kbs_load
demo_kbs_load()
moderator = User.objects.create_user("{moderator}")
moderator.user_permissions.add(Permission.objects.get(codename="moderate", content_type__app_label="debates"))
for user in (moderator, User.objects.create_user("{viewer}")):
    client = Client()
    client.force_login(user)
    print("cookie", user.username, client.cookies["sessionid"].value)
"""


def pid_running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in {"Z", "X"}


# --- HTTP: the new-run form, and a poller of pages ------------------------------------------------------------------


@dataclass
class Answer:
    at: float  # time.time()
    what: str  # "GET /", "POST /runs/new/", "WS /ws/runs/5/"
    status: int | str  # the HTTP status, or the error that stopped the request ("refused", "timeout", …)
    seconds: float
    retry_after: str = ""


class NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


OPENER = urllib.request.build_opener(NoRedirects)


def request(
    stack: Stack,
    path: str,
    *,
    cookie: str,
    data: dict[str, Any] | None = None,
    csrf: str = "",
    timeout: float = 30,
) -> tuple[Answer, str, Message]:
    headers = {"Cookie": cookie}
    body = None
    if data is not None:
        body = urllib.parse.urlencode(data, doseq=True).encode()
        headers.update(
            {
                "Content-Type": "application/x-www-form-urlencoded",
                "Origin": stack.base,
                "Referer": f"{stack.base}{path}",
                "X-CSRFToken": csrf,
            }
        )
    what = f"{'POST' if data is not None else 'GET'} {path}"
    started = time.time()
    try:
        with OPENER.open(
            urllib.request.Request(f"{stack.base}{path}", data=body, headers=headers), timeout=timeout
        ) as r:
            text = r.read().decode(errors="replace")
            return Answer(started, what, r.status, time.time() - started), text, r.headers
    except urllib.error.HTTPError as error:
        text = error.read().decode(errors="replace")
        answer = Answer(
            started, what, error.code, time.time() - started, error.headers.get("Retry-After") or ""
        )
        return answer, text, error.headers
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        reason = getattr(error, "reason", error)
        status = "timeout" if isinstance(reason, TimeoutError) else f"error: {reason}"
        if isinstance(reason, ConnectionRefusedError):
            status = "refused"
        return Answer(started, what, status, time.time() - started), "", Message()


def request_as_a_user(
    stack: Stack, path: str, answers: list[Answer], **kwargs: Any
) -> tuple[Answer, str, Message]:
    """A request, made again as the 503 page asks (a little later; a form again with the same client_uuid, which
    makes that safe), up to three times. Every answer is noted."""
    for attempt in range(3):
        answer, page, headers = request(stack, path, **kwargs)
        answers.append(answer)
        if answer.status != 503 or attempt == 2:
            break
        time.sleep(min(5.0, float(answer.retry_after or 5)))
    return answer, page, headers


class FormFields(HTMLParser):
    """The fields a browser would post from the form with id `form_id`: each named input's value (a checkbox or
    radio only when checked), each select's selected options, each textarea's text."""

    def __init__(self, form_id: str) -> None:
        super().__init__(convert_charrefs=True)
        self.form_id = form_id
        self.inside = False
        self.fields: list[tuple[str, str]] = []
        self.select: tuple[str, bool] | None = None  # (name, multiple)
        self.options: list[tuple[str, bool]] = []
        self.textarea: str | None = None
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "form" and a.get("id") == self.form_id:
            self.inside = True
        if not self.inside or "disabled" in a:
            return
        name = a.get("name", "")
        if tag == "input" and name:
            kind = a.get("type", "text")
            if kind in {"checkbox", "radio"}:
                if "checked" in a:
                    self.fields.append((name, a.get("value", "on")))
            elif kind not in {"submit", "button", "reset", "file"}:
                self.fields.append((name, a.get("value", "")))
        elif tag == "select" and name:
            self.select, self.options = (name, "multiple" in a), []
        elif tag == "option" and self.select is not None:
            self.options.append((a.get("value", ""), "selected" in a))
        elif tag == "textarea" and name:
            self.textarea, self.text = name, []

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False
        elif tag == "select" and self.select is not None:
            name, multiple = self.select
            chosen = [value for value, selected in self.options if selected]
            if not chosen and not multiple and self.options:
                chosen = [self.options[0][0]]
            self.fields.extend((name, value) for value in chosen)
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            self.fields.append((self.textarea, "".join(self.text).removeprefix("\n")))
            self.textarea = None

    def handle_data(self, data: str) -> None:
        if self.textarea is not None:
            self.text.append(data)


def run_start_from_form(stack: Stack, protocol: str, cps: int, answers: list[Answer]) -> int:
    """What a moderator does: open the new-run form for the protocol, fill in its demo question (and material, or
    its demo KB, which the form picks), the seed and the pace, and submit it. The run's id."""
    cookie = f"sessionid={stack.cookies[MODERATOR]}"
    answer, page, headers = request_as_a_user(
        stack, f"/runs/new/?protocol={protocol}", answers, cookie=cookie
    )
    assert answer.status == 200, f"the new-run form answered {answer.status}"
    token = re.search(r"csrftoken=([^;]+)", " ".join(headers.get_all("Set-Cookie") or []))
    assert token, "the new-run form set no CSRF cookie"
    parser = FormFields("run-form")
    parser.feed(page)
    data: dict[str, list[str]] = {}
    for name, value in parser.fields:
        data.setdefault(name, []).append(value)
    demo = registry.get(protocol).demo
    assert demo is not None
    chosen = {
        "protocol": [protocol],
        "topic": [demo.topic],
        "material": [demo.material],
        "seed": [str(SEED)],
        "sim_cps": [str(cps)],
    }
    data.update(chosen)
    for name in UNTICKED.get(protocol, ()):
        data.pop(name, None)
    answer, page, headers = request_as_a_user(
        stack,
        "/runs/new/",
        answers,
        cookie=f"{cookie}; csrftoken={token.group(1)}",
        data=data,
        csrf=token.group(1),
    )
    location = headers.get("Location", "")
    found = re.fullmatch(r"/runs/(\d+)/", location)
    assert answer.status == 302 and found, (
        f"starting a {protocol} debate answered {answer.status} {location}: {html.unescape(page)[-2000:]}"
    )
    stack.runs_started += 1
    return int(found.group(1))


class Poller(threading.Thread):
    """A reader who keeps reloading pages: the archive and the scenario's run pages, in turn, twice a second."""

    def __init__(self, stack: Stack, paths: Callable[[], list[str]]) -> None:
        super().__init__(daemon=True)
        self.stack = stack
        self.paths = paths
        self.answers: list[Answer] = []
        self.stopping = threading.Event()

    def run(self) -> None:
        cookie = f"sessionid={self.stack.cookies[VIEWER]}"
        n = 0
        while not self.stopping.is_set():
            paths = ["/", *self.paths()]
            answer, _, _ = request(self.stack, paths[n % len(paths)], cookie=cookie)
            self.answers.append(answer)
            n += 1
            self.stopping.wait(POLL_EVERY)

    def stop(self) -> list[Answer]:
        self.stopping.set()
        self.join(timeout=60)
        return self.answers


# --- websocket viewers -----------------------------------------------------------------------------------------------


@dataclass
class Viewer:
    run_id: int
    user: str
    status: str = ""
    seq: int = 0
    connects: int = 0
    closes: list[int] = field(default_factory=list)
    gave_up: str = ""
    stopped: bool = False
    socket: Any = None

    def keep(self, frame: str | bytes) -> None:
        text = frame if isinstance(frame, str) else frame.decode()
        for section in STATUS_SECTION.findall(text):
            status = re.search(r'data-status="([a-z_]+)"', section)
            seq = re.search(r'data-seq="(\d+)"', section)
            if status and seq and int(seq.group(1)) >= self.seq:
                self.status, self.seq = status.group(1), int(seq.group(1))

    async def watch(self, stack: Stack, answers: list[Answer]) -> None:
        """Watch the run's socket; when it closes on a code the page's ws extension reconnects on (or cannot
        connect), connect again after its full-jitter delay, with the seq shown so far."""
        import websockets

        retry = 0
        while not self.stopped:
            query = f"?seq={self.seq}" if self.connects else ""
            path = f"/ws/runs/{self.run_id}/{query}"
            started = time.time()
            code = 1006
            try:
                async with websockets.connect(
                    f"ws://127.0.0.1:{stack.port}{path}",
                    origin=stack.base,  # type: ignore[arg-type]
                    additional_headers={"Cookie": f"sessionid={stack.cookies[self.user]}"},
                    max_size=None,
                    open_timeout=30,
                    close_timeout=2,
                ) as socket:
                    self.socket = socket
                    self.connects += 1
                    answers.append(Answer(started, f"WS {path}", 101, time.time() - started))
                    retry = 0
                    async for frame in socket:
                        self.keep(frame)
                    code = socket.close_code or 1006
            except websockets.ConnectionClosed as closed:
                code = closed.rcvd.code if closed.rcvd is not None else 1006
            except websockets.InvalidStatus as refused:
                answers.append(
                    Answer(started, f"WS {path}", refused.response.status_code, time.time() - started)
                )
            except (OSError, TimeoutError, websockets.InvalidHandshake) as error:
                answers.append(Answer(started, f"WS {path}", f"error: {error!r}", time.time() - started))
            if self.stopped:
                return
            self.closes.append(code)
            if code not in RECONNECT_CODES:
                self.gave_up = f"closed with code {code}"
                return
            await asyncio.sleep(random.uniform(0, min(RECONNECT_CAP, 2.0 ** min(retry, 6))))
            retry += 1


class Audience:
    """The viewers, on an event loop of their own in a thread."""

    def __init__(self, stack: Stack) -> None:
        self.stack = stack
        self.viewers: list[Viewer] = []
        self.answers: list[Answer] = []
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        self.tasks: list[Any] = []

    def watch(self, run_id: int) -> None:
        for user in (MODERATOR, VIEWER):
            viewer = Viewer(run_id, user)
            self.viewers.append(viewer)
            self.tasks.append(
                asyncio.run_coroutine_threadsafe(viewer.watch(self.stack, self.answers), self.loop)
            )

    def close(self) -> None:
        async def close_all() -> None:
            for viewer in self.viewers:
                viewer.stopped = True
                if viewer.socket is not None:
                    await viewer.socket.close()

        asyncio.run_coroutine_threadsafe(close_all(), self.loop).result(timeout=30)
        for task in self.tasks:
            try:
                task.result(timeout=10)  # one waiting to reconnect wakes within RECONNECT_CAP
            except concurrent.futures.TimeoutError:
                task.cancel()
            except Exception as error:  # a viewer that broke: it will not have converged
                print(f"a viewer's task raised {error!r}")
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=10)
        self.loop.close()


# --- reading the throwaway database ----------------------------------------------------------------------------------


def run_record_read(stack: Stack, run_id: int) -> RunRecord:
    [(protocol, status, reason, outcome, last_seq, input_tokens, output_tokens)] = stack.sql_retrying(
        "SELECT protocol, status, status_reason, outcome, last_seq, input_tokens, output_tokens "
        "FROM debates_run WHERE id = %s",
        (run_id,),
    )
    turns = {
        key: TurnRecord(
            status=t_status,
            attempt=attempt,
            raw_text=raw_text,
            finished=finished is not None,
            payload=payload,
            error=error,
            input_tokens=t_in,
            output_tokens=t_out,
        )
        for key, t_status, attempt, raw_text, finished, payload, error, t_in, t_out in stack.sql_retrying(
            "SELECT key, status, attempt, raw_text, finished_at, payload, error, input_tokens, output_tokens "
            "FROM debates_turn WHERE run_id = %s",
            (run_id,),
        )
    }
    events = [
        (seq, kind, payload)
        for seq, kind, payload in stack.sql_retrying(
            "SELECT seq, kind, payload FROM debates_runevent WHERE run_id = %s ORDER BY seq", (run_id,)
        )
    ]
    return RunRecord(
        label=f"run {run_id} ({protocol})",
        status=status,
        status_reason=reason,
        outcome=outcome,
        last_seq=last_seq,
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        turns=turns,
        events=events,
    )


def runs_status(stack: Stack, run_ids: list[int]) -> dict[int, tuple[str, int]]:
    rows = stack.sql_retrying("SELECT id, status, last_seq FROM debates_run WHERE id = ANY(%s)", (run_ids,))
    return {run_id: (status, last_seq) for run_id, status, last_seq in rows}


TERMINAL = {"completed", "failed", "cancelled"}


# --- the faults ------------------------------------------------------------------------------------------------------


def redis_down(stack: Stack) -> None:
    stack.redis.stop()
    time.sleep(REDIS_DOWN)
    stack.redis.start()


def postgres_restart(stack: Stack) -> None:
    stack.pg.stop()  # every session terminated "due to administrator command"
    stack.pg.start()


def postgres_down(stack: Stack) -> None:
    stack.pg.stop()
    time.sleep(POSTGRES_DOWN)
    stack.pg.start()


def processes_kill(pids: list[int]) -> None:
    """SIGKILL them, and return once they are dead (the supervisor then sees them exit)."""
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while any(pid_running(pid) for pid in pids):
        assert time.monotonic() < deadline, f"processes {pids} outlived SIGKILL by 30 s"
        time.sleep(0.01)


def daphne_kill(stack: Stack) -> None:
    processes_kill([stack.pids()["web"]])


def workers_kill(stack: Stack) -> None:
    pids = stack.pids()
    processes_kill([pids["worker.1"], pids["worker.2"]])


# (name, fault, the processes it kills: the supervisor starts those again; an outage of a service stops none)
SCENARIOS: list[tuple[str, Callable[[Stack], None], int]] = [
    ("Redis down 5 s", redis_down, 0),
    ("PostgreSQL restart", postgres_restart, 0),
    ("PostgreSQL down 10 s", postgres_down, 0),
    ("Daphne SIGKILL", daphne_kill, 1),
    ("both workers SIGKILL", workers_kill, 2),
]


# --- one scenario ----------------------------------------------------------------------------------------------------


def scenario_run(
    stack: Stack,
    number: int,
    name: str,
    fault: Callable[[Stack], None],
    kills: int,
    references: dict[str, RunRecord],
) -> list[str]:
    """Start a debate of every protocol, watch them, inject the fault while they stream, start one more debate once
    it is over, and check everything. A row of the table goes to ROWS; the problems found are returned."""
    problems: list[str] = []
    answers: list[Answer] = []
    row: dict[str, Any] = {"scenario": name}
    ROWS.append(row)
    started = time.monotonic()
    # Each scenario starts the protocols in another order (a debate started last may still be queued at the fault).
    order = PROTOCOLS[2 * number % len(PROTOCOLS) :] + PROTOCOLS[: 2 * number % len(PROTOCOLS)]
    run_ids: list[int] = []
    protocols: dict[int, str] = {}
    audience = Audience(stack)
    poller = Poller(stack, lambda: [f"/runs/{run_id}/" for run_id in run_ids])
    restarts_before = sum(len(pids) for pids in stack.started().values())
    try:
        poller.start()
        for protocol in order:
            run_id = run_start_from_form(stack, protocol, CPS.get(protocol, DEFAULT_CPS), answers)
            run_ids.append(run_id)
            protocols[run_id] = protocol
            audience.watch(run_id)
        deadline = time.monotonic() + 120
        while not stack.sql(
            "SELECT 1 FROM debates_turn WHERE run_id = ANY(%s) AND raw_text <> '' LIMIT 1", (run_ids,)
        ):
            if time.monotonic() > deadline:
                raise ScenarioBroke("no turn streamed within 120 s of the debates' start")
            time.sleep(0.1)
        time.sleep(FAULT_AFTER)
        row["mid-debate"] = len(
            stack.sql("SELECT 1 FROM debates_run WHERE id = ANY(%s) AND status = 'running'", (run_ids,))
        )
        fault_started = time.time()
        fault(stack)
        fault_ended = time.time()
        row["fault s"] = fault_ended - fault_started

        # Once the fault is over (Daphne started again, where it was killed), a new debate is started.
        if not stack.wait_ready(120):
            problems.append(
                f"serve_scaled's programs were not all running 120 s after the fault: {stack.pids()}"
            )
        try:
            fresh = run_start_from_form(stack, FRESH_PROTOCOL, FRESH_CPS, answers)
        except AssertionError as error:
            problems.append(f"no debate could be started after the fault: {error}")
        else:
            run_ids.append(fresh)
            protocols[fresh] = FRESH_PROTOCOL
            audience.watch(fresh)

        deadline = time.monotonic() + RUNS_END
        while True:
            finals = runs_status(stack, run_ids)
            if all(status in TERMINAL for status, _ in finals.values()):
                break
            if time.monotonic() > deadline:
                problems.append(f"debates not ended {RUNS_END:.0f} s after the fault: {finals}")
                break
            time.sleep(0.3)
        deadline = time.monotonic() + CONVERGE
        while time.monotonic() < deadline and any(
            (v.status, v.seq) != ("completed", finals[v.run_id][1]) for v in audience.viewers
        ):
            time.sleep(0.5)
            finals = runs_status(stack, run_ids)
    except (ScenarioBroke, AssertionError, psycopg.Error) as error:
        problems.append(f"the scenario broke off: {error}")
        finals = runs_status(stack, run_ids) if run_ids else {}
    finally:
        audience.close()
        answers.extend(poller.stop())
        answers.extend(audience.answers)

    # The debates: each completed once, with the turns of the uninterrupted run.
    completed_once = lost = duplicated = 0
    for run_id in run_ids:
        record = run_record_read(stack, run_id)
        reference = references[protocols[run_id]]
        found = exactly_once_problems(record, reference)
        completed_once += not found
        problems.extend(f"{record.label}: {problem}" for problem in found)
        commits = record.counts("turn_committed")
        lost += sum(1 for key in reference.turns if commits[key] == 0)
        duplicated += sum(count - 1 for count in commits.values() if count > 1)
    row.update(runs=len(run_ids), once=completed_once, lost=lost, duplicated=duplicated)
    # Nothing was started twice (a resubmitted form, a task enqueued twice).
    [(stored,)] = stack.sql_retrying("SELECT count(*) FROM debates_run")
    if stored != stack.runs_started:
        problems.append(f"{stored} runs stored, {stack.runs_started} started from the form")

    # Time to resume: from the fault's end to the next event committed in any of the scenario's debates.
    if "fault s" in row:
        [(first,)] = stack.sql_retrying(
            "SELECT min(created_at) FROM debates_runevent WHERE run_id = ANY(%s) AND created_at >= %s",
            (run_ids, dt.datetime.fromtimestamp(fault_ended, dt.UTC)),
        )
        row["resume s"] = first.timestamp() - fault_ended if first is not None else None

    # The viewers: each shows its debate completed at its last seq, without a reload.
    converged = [
        v for v in audience.viewers if (v.status, v.seq) == ("completed", finals.get(v.run_id, ("", -1))[1])
    ]
    row.update(viewers=len(audience.viewers), converged=len(converged))
    row["reconnects"] = sum(max(0, v.connects - 1) for v in audience.viewers)
    for viewer in audience.viewers:
        if viewer not in converged:
            problems.append(
                f"{viewer.user}'s socket of run {viewer.run_id} ({protocols[viewer.run_id]}) shows {viewer.status} "
                f"at seq {viewer.seq}, the database {finals.get(viewer.run_id)}; connected {viewer.connects} times, "
                f"closes {viewer.closes}{', gave up: ' + viewer.gave_up if viewer.gave_up else ''}"
            )

    # The requests: none answered 500; a 503 says when to retry.
    statuses = Counter(str(a.status) for a in answers)
    row["requests"] = len(answers)
    row["500s"] = sum(1 for a in answers if isinstance(a.status, int) and a.status >= 500 and a.status != 503)
    row["503s"] = statuses["503"]
    row["no answer"] = sum(1 for a in answers if isinstance(a.status, str))
    row["slowest s"] = max((a.seconds for a in answers), default=0.0)
    for answer in answers:
        if isinstance(answer.status, int) and answer.status >= 500 and answer.status != 503:
            problems.append(f"{answer.what} answered {answer.status}")
        if answer.status == 503 and not answer.retry_after:
            problems.append(f"{answer.what} answered 503 without Retry-After")

    # The processes: all running, none waiting for a person to restart it.
    if not stack.wait_ready(60):
        problems.append(f"serve_scaled's programs are not all running: {stack.pids()}")
    row["restarts"] = sum(len(pids) for pids in stack.started().values()) - restarts_before
    if row["restarts"] != kills:
        exits = re.findall(r"^.*\| \S+ exited with code .*$", stack.log(), re.M)
        problems.append(f"{row['restarts']} processes were started again, {kills} killed: {exits}")
    row["wall s"] = time.monotonic() - started
    return problems


class ScenarioBroke(Exception):
    pass


# --- the test --------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    stack = Stack(tmp_path_factory.mktemp("chaos"))
    try:
        stack.start()
        yield stack
    finally:
        stack.destroy()


def references_run(stack: Stack) -> tuple[dict[str, RunRecord], list[str]]:
    """Each protocol's debate from the same form with the same seed, uninterrupted (instant agents: the pace is
    not the content), twice: both runs must be the same, or simulated agents are not deterministic for a seed."""
    answers: list[Answer] = []
    pairs = {
        p: (run_start_from_form(stack, p, 0, answers), run_start_from_form(stack, p, 0, answers))
        for p in PROTOCOLS
    }
    ids = [run_id for pair in pairs.values() for run_id in pair]
    deadline = time.monotonic() + RUNS_END
    while not all(status in TERMINAL for status, _ in runs_status(stack, ids).values()):
        assert time.monotonic() < deadline, f"the reference debates did not end: {runs_status(stack, ids)}"
        time.sleep(0.2)
    references: dict[str, RunRecord] = {}
    problems: list[str] = []
    for protocol, (first, second) in pairs.items():
        reference, again = run_record_read(stack, first), run_record_read(stack, second)
        assert reference.status == "completed", (
            f"{reference.label}: {reference.status} {reference.status_reason}"
        )
        problems.extend(
            f"{again.label} (the same debate again): {p}" for p in exactly_once_problems(again, reference)
        )
        references[protocol] = reference
    return references, problems


def table(rows: list[dict[str, Any]], wall: float) -> str:
    columns = [
        ("scenario", "scenario", "{}"),
        ("runs", "runs", "{}"),
        ("mid-debate", "mid-debate at fault", "{}"),
        ("once", "completed once", "{}"),
        ("lost", "lost turns", "{}"),
        ("duplicated", "duplicated turns", "{}"),
        ("resume s", "resume (s)", "{:.1f}"),
        ("converged", "viewers converged", "{}"),
        ("500s", "500s", "{}"),
        ("503s", "503s", "{}"),
        ("no answer", "no answer", "{}"),
        ("slowest s", "slowest (s)", "{:.1f}"),
        ("reconnects", "ws reconnects", "{}"),
        ("restarts", "processes restarted", "{}"),
        ("wall s", "wall (s)", "{:.0f}"),
    ]

    def cell(row: dict[str, Any], key: str, fmt: str) -> str:
        if key == "converged" and "viewers" in row:
            return f"{row['converged']}/{row['viewers']}"
        value = row.get(key)
        return "-" if value is None else fmt.format(value)

    cells = [[header for _, header, _ in columns]] + [[cell(r, k, f) for k, _, f in columns] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = [" | ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)) for line in cells]
    lines.insert(1, "-+-".join("-" * w for w in widths))
    return f"chaos suite: {len(rows)} scenarios in {wall:.0f} s\n" + "\n".join(lines)


def test_the_checks_see_a_lost_a_doubled_a_changed_and_a_half_finished_turn() -> None:
    """The suite's checks can fail: each harm done to an uninterrupted run's record is reported."""

    def record(**changes: Any) -> RunRecord:
        turns = {
            key: TurnRecord("committed", 1, "text", True, {"said": key}, "", 10, 5)
            for key in ("r1/a", "r1/b")
        }
        events: list[tuple[int, str, dict[str, Any]]] = [(1, "run_created", {})]
        for key in turns:
            events += [(len(events) + 1, "turn_started", {"key": key})]
            events += [(len(events) + 1, "turn_committed", {"key": key})]
        fields: dict[str, Any] = {
            "label": "run 1 (test)",
            "status": "completed",
            "status_reason": "",
            "outcome": {"mode": "full"},
            "last_seq": len(events),
            "input_tokens": 20,
            "output_tokens": 10,
            "turns": turns,
            "events": events,
        }
        return RunRecord(**{**fields, **changes})

    reference = record()
    assert exactly_once_problems(record(), reference) == []
    lost = record(turns={"r1/a": reference.turns["r1/a"]}, input_tokens=10, output_tokens=5)
    assert any("missing ['r1/b']" in p for p in exactly_once_problems(lost, reference))
    doubled = record(events=[*reference.events, (6, "turn_committed", {"key": "r1/b"})], last_seq=6)
    assert any("commits" in p for p in exactly_once_problems(doubled, reference))
    gap = record(events=reference.events[:2] + reference.events[3:])
    assert any("seqs" in p for p in exactly_once_problems(gap, reference))
    changed = record(turns={**reference.turns, "r1/b": TurnRecord("committed", 1, "x", True, {}, "", 10, 5)})
    assert any("payloads differ" in p for p in exactly_once_problems(changed, reference))
    half = record(
        turns={**reference.turns, "r1/b": TurnRecord("streaming", 1, "x", False, {"said": "r1/b"}, "", 10, 5)}
    )
    assert len(exactly_once_problems(half, reference)) == 2  # not committed, not finished
    failed = record(status="failed", status_reason="Internal error in the debate engine")
    assert any("failed Internal error" in p for p in exactly_once_problems(failed, reference))
    assert any("outcome" in p for p in exactly_once_problems(record(outcome={"mode": "team"}), reference))


def test_debates_viewers_and_pages_survive_service_outages_and_process_kills(
    stack: Stack, record_property: Callable[[str, object], None]
) -> None:
    started = time.monotonic()
    ROWS.clear()
    references, problems = references_run(stack)
    by_scenario: dict[str, list[str]] = {"the reference runs": problems} if problems else {}
    try:
        for number, (name, fault, kills) in enumerate(SCENARIOS):
            found = scenario_run(stack, number, name, fault, kills, references)
            if found:
                by_scenario[name] = found
    finally:
        report = table(ROWS, time.monotonic() - started)
        record_property("chaos_table", report)
        print("\n" + report)
    assert not by_scenario, (
        "\n".join(
            f"{name}:\n  "
            + "\n  ".join(found[:25])
            + (f"\n  … {len(found) - 25} more" if len(found) > 25 else "")
            for name, found in by_scenario.items()
        )
        + f"\n\nserve_scaled's output (the end):\n{stack.log()[-4000:]}"
    )
