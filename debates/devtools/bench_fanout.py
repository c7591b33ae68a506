"""`manage.py bench fanout`: live fan-out of debates to many websocket viewers through each channel
layer, as a browser sees it. For each layer, N simulated debates run at once: on the in-memory layer in a Daphne
server process (`manage.py serve`, the one-laptop server: runners on its own event loop); on the Redis layers in
the scaled setup, a Daphne process serving pages and websockets and `manage.py worker` processes running the
debates (one per core unless told otherwise). This process holds V real websocket connections per debate to
Daphne, over TCP, as the run page's socket does (origin check, session cookie, the run consumer), and starts the
debates with a moderator's POST once every viewer has its snapshot.

Measured per layer:
- frame lag: for every event of a run after the snapshot a viewer got on connecting, the time the frame that brought
  it reached the viewer minus the time its event row was written to the database (RunEvent.created_at); p50 and p95
  over all events of all viewers. Target p95 <= 250 ms. (Until the tenth session only the event whose frame carries
  the status counted, the last of a burst: a commit held back to go out with the next stage's start was left out.
  That figure is printed beside it.)
- frames per second per turn: the live (token-delta) frames one viewer got for a streaming turn, over the seconds
  the turn streamed; the maximum over turns. Target <= 20 (deltas are coalesced every DISPUTA_FLUSH_SECONDS).
- the CPU while the debates ran (from the moderator's start to the last debate's end): Daphne's, the workers', this
  process's (the viewers' sockets) and the machine's cores busy on average, since the viewers share the machine.
Every viewer must also end on the run's final status at its last seq (converged), or the bench fails."""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import Permission
from django.db import connection
from django.db.models import Value
from django.db.models.functions import Concat
from django.test import Client

from debates.models import Run, RunEvent, Turn
from debates.platform import dburl
from debates.services import runs as services
from debates.services.demos import run_headless_demo_create

TARGET_P95_MS = 250.0
TARGET_FRAMES_PER_SECOND = 20.0
TARGET_SILENCE_MS = 1000.0  # the longest a viewer waits for a frame while a turn streams
TARGET_MIB_PER_DEBATE = 10.0  # a worker's resident memory for each further debate it runs at once
REFERENCE_PROTOCOL = "cross-examination"
TOPIC_PREFIX = "[bench-fanout] "
BENCH_VIEWER = "bench-fanout-viewer"
BENCH_MODERATOR = "bench-fanout-moderator"
LAYERS = ("inmemory", "redis", "redis-pubsub")
STATUS = re.compile(r'<section id="run-status"[^>]*data-status="([a-z_]+)" data-seq="(\d+)"')
LIVE = re.compile(r'<div id="(turn-[^"]+)-live"')
TERMINAL = {"completed", "failed", "cancelled"}
ANALYSTS = [
    {"name": "Ada", "lens": "economics"},
    {"name": "Bo", "lens": "equity"},
    {"name": "Cy", "lens": "evidence"},
]
MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about 20 percent. "
    "London introduced its charge in 2003. Critics argue that a flat charge is regressive."
)
SERVER_START_SECONDS = 60
RUN_SECONDS = 300  # the debates must end within this, or the bench fails
CONNECTS_AT_ONCE = 25  # viewers connecting together (each connect renders a snapshot on the server)


class BenchBroke(RuntimeError):
    pass


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """The processes serving one layer, against this process's database. In-memory: `manage.py serve`, the
    one-laptop server, which runs the debates on its own loop (an in-memory layer reaches no other process). Redis
    layers: the scaled setup, `manage.py serve` (pages and websockets, the database task queue) and `workers`
    `manage.py worker` processes sharing the debates out (`--concurrency`), the events reaching Daphne through
    Redis."""

    def __init__(self, layer: str, redis_url: str, debates: int, workers: int) -> None:
        self.port = _free_port()
        self.scaled = layer != "inmemory"
        self.debates = debates
        self.workers = workers
        self.logs: dict[str, Path] = {}
        self.popens: dict[str, subprocess.Popen[bytes]] = {}
        env = {
            **os.environ,
            "DATABASE_URL": dburl.database_url(connection.settings_dict),
            "DJANGO_ALLOWED_HOSTS": "127.0.0.1,localhost",
            # As deployed: no debug (which records every query), the same key (it signs this process's sessions).
            "DJANGO_DEBUG": "false",
            "DJANGO_SECRET_KEY": settings.SECRET_KEY,
            "DISPUTA_TASKS_BACKEND": "database" if self.scaled else "inprocess",
            "DISPUTA_RESUME_ON_START": "false",  # the debates start when this process says so
            "DISPUTA_MAX_WS_CONNECTS_PER_MINUTE": "0",
            "DISPUTA_MAX_ACTIVE_RUNS_PER_USER": "0",
            "DISPUTA_MAX_RUNS_PER_HOUR": "0",
            "DISPUTA_LOG_LEVEL": "WARNING",
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("REDIS_URL", None)
        if self.scaled:
            env.update(
                REDIS_URL=redis_url,
                DISPUTA_CHANNEL_LAYER=layer,
                DISPUTA_CHANNEL_PREFIX=f"disputa-bench-fanout-{os.getpid()}",
            )
        else:
            env.pop("DISPUTA_CHANNEL_LAYER", None)
        self.env = env

        # CPU seconds while the debates ran (as Server.cpu_read names them), and how long they ran ("seconds").
        self.cpu_during: dict[str, float] = {}
        self.ready_rss: dict[str, float] = {}  # each worker's resident memory once ready (MiB)
        self.peak_rss: dict[str, float] = {}

    def _manage(self, name: str, *args: str) -> list[str]:
        return [sys.executable, str(Path(settings.BASE_DIR) / "manage.py"), name, *args]

    def _start(self, commands: dict[str, list[str]], ready: str) -> None:
        """Start the processes at once, and wait until each has printed `ready`."""
        for name, command in commands.items():
            handle, path = tempfile.mkstemp(prefix=f"disputa-bench-fanout-{name}-", suffix=".log")
            os.close(handle)
            self.logs[name] = Path(path)
            with self.logs[name].open("wb") as out:
                self.popens[name] = subprocess.Popen(
                    command,
                    cwd=settings.BASE_DIR,
                    env=self.env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                )
        deadline = time.monotonic() + SERVER_START_SECONDS
        for name in commands:
            while ready not in self.logs[name].read_text(errors="replace"):
                if self.popens[name].poll() is not None or time.monotonic() > deadline:
                    output = self.output()
                    self.__exit__()
                    raise BenchBroke(f"the {name} did not start:\n{output}")
                time.sleep(0.1)

    def __enter__(self) -> Server:
        if self.scaled:
            # The database task queue's tables (this process may run with another task backend).
            migrate = subprocess.run(
                self._manage("migrate", "--verbosity", "0"),
                cwd=settings.BASE_DIR,
                env=self.env,
                capture_output=True,
                text=True,
                timeout=SERVER_START_SECONDS,
            )
            if migrate.returncode:
                raise BenchBroke(f"migrating the task queue failed:\n{migrate.stdout}{migrate.stderr}")
        self._start(
            {"server": self._manage("serve", "--host", "127.0.0.1", "--port", str(self.port))}, "listening on"
        )
        return self

    def start_runners(self) -> None:
        """The workers, once every viewer is watching."""
        if self.scaled:
            concurrency = str(-(-self.debates // self.workers))  # the debates shared out, rounded up
            # Polling the queue often, each worker takes its debate as the moderator's POST queues it.
            self._start(
                {
                    f"worker {n}": self._manage("worker", "--concurrency", concurrency, "--interval", "0.1")
                    for n in range(1, self.workers + 1)
                },
                "ready",
            )
            self.ready_rss = {
                name: process_rss_mib(p.pid) for name, p in self.popens.items() if name != "server"
            }
            self.peak_rss = dict(self.ready_rss)

    def cpu_read(self) -> dict[str, float]:
        """CPU seconds so far: Daphne's, the workers' together, this process's (the viewers' sockets), and the
        machine's, busy and in all (over all its cores)."""
        busy, elapsed = machine_cpu()
        return {
            "daphne": process_cpu(self.popens["server"].pid),
            "workers": sum(process_cpu(p.pid) for name, p in self.popens.items() if name != "server"),
            "viewers": process_cpu(os.getpid()),
            "machine_busy": busy,
            "machine_all": elapsed,
        }

    def sample_rss(self) -> None:
        """Note each worker's resident memory now (its peak is reported)."""
        for name in self.ready_rss:
            self.peak_rss[name] = max(self.peak_rss[name], process_rss_mib(self.popens[name].pid))

    def __exit__(self, *exc: object) -> None:
        for popen in self.popens.values():
            if popen.poll() is None:
                popen.send_signal(signal.SIGTERM)
        for popen in self.popens.values():
            try:
                popen.wait(timeout=10)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
        for log in self.logs.values():
            log.unlink(missing_ok=True)  # what went wrong was read into the error before

    def output(self) -> str:
        return "\n".join(
            f"[{name}]\n{log.read_text(errors='replace')[-4000:]}"
            for name, log in self.logs.items()
            if log.exists()
        )


def _runs_create(debates: int, cps: float, protocol: str) -> list[int]:
    """Queued and held (pause requested), so no worker takes one over before the moderator resumes it: workers
    that took the runs as they came up started debates while the others were still starting (a second of lag).
    A cross-examination of three analysts (the reference), or another protocol's headless demo."""
    if protocol == REFERENCE_PROTOCOL:
        run_ids = [
            services.run_create(
                protocol=protocol,
                topic=f"{TOPIC_PREFIX}Should the city charge cars entering the centre? ({n})",
                material=MATERIAL,
                config={"analysts": ANALYSTS, "examiner": "agent"},
                seed=n,
                backend_options={"cps": cps},
                enqueue=False,
            ).pk
            for n in range(debates)
        ]
    else:
        run_ids = [
            run_headless_demo_create(protocol=protocol, seed=n, backend_options={"cps": cps}).pk
            for n in range(debates)
        ]
        Run.objects.filter(pk__in=run_ids).update(topic=Concat(Value(TOPIC_PREFIX), "topic"))
    Run.objects.filter(pk__in=run_ids).update(pause_requested=True)
    return run_ids


def session_cookie(username: str, *, moderate: bool) -> str:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=username)
    if moderate:
        user.user_permissions.add(
            Permission.objects.get(codename="moderate", content_type__app_label="debates")
        )
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"


def _runs_start(port: int, run_ids: list[int], cookie: str) -> None:
    """What a moderator's "Resume" button does, over HTTP to the server (which then runs them on its loop)."""
    token = secrets.token_hex(16)  # an unmasked CSRF secret, as cookie and header
    for run_id in run_ids:
        request = urllib.request.Request(
            f"http://127.0.0.1:{port}/runs/{run_id}/control/resume/",
            data=b"client_uuid=",
            headers={
                "Cookie": f"{cookie}; {settings.CSRF_COOKIE_NAME}={token}",
                "X-CSRFToken": token,
                "HX-Request": "true",
                "Content-Type": "application/x-www-form-urlencoded",
            },
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            if response.status != 200:
                raise BenchBroke(f"starting run {run_id} answered {response.status}")


class Viewer:
    """One websocket viewer: every frame with the wall-clock time it arrived, and the newest status it showed."""

    def __init__(self, run_id: int) -> None:
        self.run_id = run_id
        self.frames: list[tuple[float, str]] = []
        self._status: tuple[str, int] = ("", 0)
        self._read = 0  # frames[:_read] are in _status
        self.socket: Any = None

    @property
    def status(self) -> tuple[str, int]:
        """The newest status the viewer was shown. Read from the frames when asked (after the debates end), not as
        they arrive: the viewers share the machine with the server measured, and a real viewer's work is done on
        another machine."""
        for _, text in self.frames[self._read :]:
            for status, seq in STATUS.findall(text):
                if int(seq) >= self._status[1]:
                    self._status = (status, int(seq))
        self._read = len(self.frames)
        return self._status

    async def connect(self, port: int, cookie: str) -> None:
        import websockets

        self.socket = await websockets.connect(
            f"ws://127.0.0.1:{port}/ws/runs/{self.run_id}/",
            origin=f"http://127.0.0.1:{port}",  # type: ignore[arg-type]
            additional_headers={"Cookie": cookie},
            max_size=None,
            open_timeout=60,
        )
        self._keep(await asyncio.wait_for(self.socket.recv(), 60))  # the snapshot

    def _keep(self, frame: str | bytes) -> None:
        self.frames.append((time.time(), frame if isinstance(frame, str) else frame.decode()))

    async def watch(self) -> None:
        import websockets

        try:
            async for frame in self.socket:
                self._keep(frame)
        except websockets.ConnectionClosed:
            pass


def percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def measure_fanout(
    *,
    layer: str,
    redis_url: str,
    debates: int,
    viewers: int,
    cps: float,
    workers: int,
    protocol: str = REFERENCE_PROTOCOL,
) -> dict[str, Any]:
    """Run the debates with their viewers through one layer; return the lag and frame-rate figures."""
    run_ids = _runs_create(debates, cps, protocol)
    viewer_cookie = session_cookie(BENCH_VIEWER, moderate=False)
    moderator_cookie = session_cookie(BENCH_MODERATOR, moderate=True)
    with Server(layer, redis_url, debates, workers) as server:
        try:
            started = time.monotonic()
            audience = asyncio.run(runs_watch(server, run_ids, viewers, viewer_cookie, moderator_cookie))
            wall = time.monotonic() - started
        except (BenchBroke, OSError, TimeoutError) as error:
            raise BenchBroke(f"{error}\nthe servers' output:\n{server.output()}") from error
    figures = _figures(layer, run_ids, audience, wall)
    cpu, cores = server.cpu_during, os.cpu_count() or 1
    figures["cpu"] = {
        "seconds": cpu["seconds"],
        "daphne": cpu["daphne"],
        "workers": cpu["workers"] if server.scaled else None,
        "viewers": cpu["viewers"],
        "cores": cores,
        # The cores busy on average: the machine's busy share of all its CPU time, times its cores.
        "busy_cores": cores * cpu["machine_busy"] / cpu["machine_all"] if cpu["machine_all"] else 0.0,
    }
    if server.ready_rss:
        per_worker = -(-debates // workers)
        figures["worker_ready_mib"] = max(server.ready_rss.values())
        figures["worker_peak_mib"] = max(server.peak_rss.values())
        figures["mib_per_debate"] = max(
            (server.peak_rss[name] - server.ready_rss[name]) / per_worker for name in server.ready_rss
        )
    return figures


def process_cpu(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def machine_cpu() -> tuple[float, float]:
    """The machine's busy and elapsed CPU seconds so far, summed over its cores (Linux /proc/stat: user, nice,
    system, idle, iowait, irq, softirq, steal; the guest columns are counted in user already)."""
    with open("/proc/stat", encoding="ascii") as stat:
        ticks = [int(field) for field in stat.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    return (sum(ticks) - ticks[3] - ticks[4]) / hz, sum(ticks) / hz


def process_rss_mib(pid: int) -> float:
    """A process's resident memory (VmRSS, from /proc), in MiB; 0 once it has gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(match.group(1)) / 1024 if match else 0.0


def _finals(run_ids: list[int]) -> dict[int, tuple[str, int]]:
    try:
        return {
            pk: (status, last_seq)
            for pk, status, last_seq in Run.objects.filter(pk__in=run_ids).values_list(
                "pk", "status", "last_seq"
            )
        }
    finally:
        connection.close()  # a thread of asyncio's pool: its connection is not reused


async def runs_watch(
    server: Server, run_ids: list[int], viewers: int, cookie: str, moderator_cookie: str
) -> list[Viewer]:
    audience = [Viewer(run_id) for run_id in run_ids for _ in range(viewers)]
    for start in range(0, len(audience), CONNECTS_AT_ONCE):
        await asyncio.gather(
            *(v.connect(server.port, cookie) for v in audience[start : start + CONNECTS_AT_ONCE])
        )
    watching = [asyncio.create_task(v.watch()) for v in audience]
    try:
        await asyncio.to_thread(server.start_runners)
        # What the machine's CPU did while the debates ran (the sockets connecting before are not counted).
        cpu_before, cpu_started = server.cpu_read(), time.monotonic()
        await asyncio.to_thread(_runs_start, server.port, run_ids, moderator_cookie)
        deadline = time.monotonic() + RUN_SECONDS
        while True:
            server.sample_rss()
            finals = await asyncio.to_thread(_finals, run_ids)
            if all(status in TERMINAL for status, _ in finals.values()):
                cpu_after = server.cpu_read()
                server.cpu_during = {name: cpu_after[name] - cpu_before[name] for name in cpu_after}
                server.cpu_during["seconds"] = time.monotonic() - cpu_started
                break
            if time.monotonic() > deadline:
                raise BenchBroke(f"the debates did not end within {RUN_SECONDS} s: {finals}")
            await asyncio.sleep(0.5)
        if any(status != "completed" for status, _ in finals.values()):
            raise BenchBroke(f"the debates ended {finals}")
        # Give the viewers the consumer's gap poll (up to two of 2 s) and a margin to converge.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and any(v.status != finals[v.run_id] for v in audience):  # noqa: ASYNC110
            await asyncio.sleep(0.2)
    finally:
        for viewer in audience:
            await viewer.socket.close()
        await asyncio.gather(*watching)
    behind = [v for v in audience if v.status != finals[v.run_id]]
    if behind:
        raise BenchBroke(
            f"{len(behind)} of {len(audience)} viewers did not converge, e.g. run {behind[0].run_id} shows "
            f"{behind[0].status}, the database {finals[behind[0].run_id]}"
        )
    return audience


def _figures(layer: str, run_ids: list[int], audience: list[Viewer], wall: float) -> dict[str, Any]:
    written = {
        (run_id, seq): created.timestamp()
        for run_id, seq, created in RunEvent.objects.filter(run_id__in=run_ids).values_list(
            "run_id", "seq", "created_at"
        )
    }
    lags, status_lags = [], []
    by_event: dict[tuple[int, int], list[float]] = defaultdict(list)
    for viewer in audience:
        # A frame carrying the status at seq S brings every event after the last status the viewer had, up to S
        # (a consumer sends a run's events in seq order, a burst in one frame with the status last): each of them
        # reached the viewer then, including a commit the runner held back to publish with the next stage's start.
        # Not the snapshot a viewer gets on connecting: rendered then from the database, it is behind nothing.
        seen = (
            max((int(seq) for _, seq in STATUS.findall(viewer.frames[0][1])), default=0)
            if viewer.frames
            else 0
        )
        for arrived, frame in viewer.frames[1:]:
            for _, found in STATUS.findall(frame):
                status_seq = int(found)
                for seq in range(seen + 1, status_seq + 1):
                    committed = written.get((viewer.run_id, seq))
                    if committed is not None:
                        lags.append((arrived - committed) * 1000)
                        by_event[(viewer.run_id, seq)].append(lags[-1])
                committed = written.get((viewer.run_id, status_seq))
                if committed is not None:
                    status_lags.append((arrived - committed) * 1000)
                seen = max(seen, status_seq)
    # Where the lag comes from: the first viewer an event reached (publishing: commit, render, the layer), and the
    # spread between its first and last viewer (fanning out to a run's viewers in the serving process).
    firsts = [min(event_lags) for event_lags in by_event.values()]
    spreads = [max(event_lags) - min(event_lags) for event_lags in by_event.values()]
    streamed = {
        (t.run_id, t.dom_id): (t.finished_at - t.started_at).total_seconds()
        for t in Turn.objects.filter(run_id__in=run_ids).only("run_id", "key", "started_at", "finished_at")
        if t.started_at and t.finished_at
    }
    per_turn: dict[tuple[int, str], int] = defaultdict(int)
    first_viewer: dict[int, Viewer] = {}
    for viewer in audience:
        first_viewer.setdefault(viewer.run_id, viewer)
    for run_id, viewer in first_viewer.items():
        for _, frame in viewer.frames:
            for dom in set(LIVE.findall(frame)):
                per_turn[(run_id, dom)] += 1
    rates = [count / streamed[key] for key, count in per_turn.items() if streamed.get(key, 0) >= 0.5]
    # The longest a viewer waited for a frame while a turn of its run streamed (first token to commit).
    windows: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for run_id, first_token_at, finished_at in Turn.objects.filter(
        run_id__in=run_ids, first_token_at__isnull=False, finished_at__isnull=False
    ).values_list("run_id", "first_token_at", "finished_at"):
        if first_token_at and finished_at:
            windows[run_id].append((first_token_at.timestamp(), finished_at.timestamp()))
    silence = 0.0
    for viewer in audience:
        arrivals = [arrived for arrived, _ in viewer.frames]
        for start, end in windows[viewer.run_id]:
            inside = [start, *(a for a in arrivals if start < a < end), end]
            silence = max(silence, *(b - a for a, b in zip(inside, inside[1:], strict=False)))
    return {
        "layer": layer,
        "debates": len(run_ids),
        "viewers": len(audience),
        "frames": sum(len(v.frames) for v in audience),
        "wall": wall,
        "p50_ms": statistics.median(lags) if lags else float("nan"),
        "p95_ms": percentile(lags, 0.95),
        "lagged_frames": len(lags),
        # As measured before every event of a burst was counted: the event whose frame carries the status alone.
        "status_p95_ms": percentile(status_lags, 0.95),
        "first_p95_ms": percentile(firsts, 0.95),
        "spread_p95_ms": percentile(spreads, 0.95),
        "fps_max": max(rates, default=0.0),
        "fps_median": statistics.median(rates) if rates else 0.0,
        "turns_rated": len(rates),
        "silence_max_ms": silence * 1000,
    }


def bench_fanout_cleanup() -> None:
    from django.contrib.auth import get_user_model

    Run.objects.filter(topic__startswith=TOPIC_PREFIX).delete()
    get_user_model().objects.filter(username__in=[BENCH_VIEWER, BENCH_MODERATOR]).delete()
