"""`manage.py bench fanout` (issue 9): live fan-out of debates to many websocket viewers through each channel
layer. N simulated debates run at once in this process, each watched by V websocket viewers connected through the
project's whole ASGI stack (origin check, session auth, the run consumer); viewers and server share this one
process and its event loop, so the figures include the viewers' own work.

Measured per layer:
- frame lag: for every frame that carries the run's status (nearly every event frame), the time it reached a viewer
  minus the time its event row was written to the database (RunEvent.created_at); p50 and p95 over all frames of all
  viewers. Target p95 <= 250 ms.
- frames per second per turn: the live (token-delta) frames one viewer got for a streaming turn, over the seconds
  the turn streamed; the maximum over turns. Target <= 20 (deltas are coalesced every DISPUTA_FLUSH_SECONDS).
Every viewer must also end on the run's final status at its last seq (converged), or the bench fails."""

from __future__ import annotations

import asyncio
import re
import statistics
import time
from collections import defaultdict
from typing import Any

from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.conf import settings
from django.test import Client, override_settings

from debates import services
from debates.engine.runner import run_execute
from debates.models import Run, RunEvent, Turn

TARGET_P95_MS = 250.0
TARGET_FRAMES_PER_SECOND = 20.0
BENCH_USER = "bench-fanout-viewer"
LAYERS = {
    "inmemory": {"BACKEND": "channels.layers.InMemoryChannelLayer"},
    "redis": {"BACKEND": "channels_redis.core.RedisChannelLayer"},
    "redis-pubsub": {"BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer"},
}
STATUS = re.compile(r'<section id="run-status"[^>]*data-status="([a-z_]+)" data-seq="(\d+)"')
LIVE = re.compile(r'<div id="(turn-[^"]+)-live"')
ANALYSTS = [
    {"name": "Ada", "lens": "economics"},
    {"name": "Bo", "lens": "equity"},
    {"name": "Cy", "lens": "evidence"},
]
MATERIAL = (
    "Stockholm ran a seven-month congestion-charge trial in 2006. Traffic across the cordon fell by about 20 percent. "
    "London introduced its charge in 2003. Critics argue that a flat charge is regressive."
)


def layer_config(name: str, redis_url: str) -> dict[str, Any]:
    """The layer as settings.py configures it (its capacity), on the bench's own Redis prefix."""
    config: dict[str, Any] = {**LAYERS[name], "CONFIG": {"capacity": settings.CHANNEL_CAPACITY}}
    if name != "inmemory":
        config["CONFIG"].update(hosts=[redis_url], prefix="disputa-bench-fanout")
    if name == "redis-pubsub":
        del config["CONFIG"]["capacity"]  # no per-channel queue to bound
    return config


def _session_cookie() -> bytes:
    from django.contrib.auth import get_user_model

    user, _ = get_user_model().objects.get_or_create(username=BENCH_USER)
    client = Client()
    client.force_login(user)
    return f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}".encode()


def _runs_create(debates: int, cps: float) -> list[int]:
    return [
        services.run_create(
            protocol="cross-examination",
            topic=f"[bench-fanout] Should the city charge cars entering the centre? ({n})",
            material=MATERIAL,
            config={"analysts": ANALYSTS, "examiner": "agent"},
            seed=n,
            backend_options={"cps": cps},
            enqueue=False,
        ).pk
        for n in range(debates)
    ]


class Viewer:
    """One websocket viewer: keeps every frame with the wall-clock time it arrived."""

    def __init__(self, run_id: int, cookie: bytes) -> None:
        from debates.asgi import application

        self.run_id = run_id
        self.comm = WebsocketCommunicator(
            application,
            f"/ws/runs/{run_id}/",
            headers=[(b"origin", b"http://localhost"), (b"cookie", cookie)],
        )
        self.frames: list[tuple[float, str]] = []
        self.status: tuple[str, int] = ("", 0)

    async def connect(self) -> None:
        connected, code = await self.comm.connect(timeout=60)
        if not connected:
            raise RuntimeError(f"a viewer of run {self.run_id} was refused (close code {code})")

    async def watch(self, until: asyncio.Event) -> None:
        while True:
            try:
                # From the queue itself: the communicator's own receive timeout would kill the consumer.
                message = await asyncio.wait_for(self.comm.output_queue.get(), 0.5)
            except TimeoutError:
                if until.is_set():
                    return
                continue
            if message.get("type") != "websocket.send":
                raise RuntimeError(f"a viewer of run {self.run_id} got {message.get('type')}")
            frame = str(message.get("text") or "")
            self.frames.append((time.time(), frame))
            for status, seq in STATUS.findall(frame):
                if int(seq) >= self.status[1]:
                    self.status = (status, int(seq))


def _percentile(values: list[float], share: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def measure_fanout(*, layer: str, redis_url: str, debates: int, viewers: int, cps: float) -> dict[str, Any]:
    """Run the debates with their viewers through one layer; return the lag and frame-rate figures."""
    with override_settings(
        CHANNEL_LAYERS={"default": layer_config(layer, redis_url)},
        TASKS={"default": {"BACKEND": "django.tasks.backends.dummy.DummyBackend"}},
        ALLOWED_HOSTS=["localhost"],
        DISPUTA={**settings.DISPUTA, "MAX_WS_CONNECTS_PER_MINUTE": 0, "RESUME_ON_START": False},
    ):
        run_ids = _runs_create(debates, cps)
        cookie = _session_cookie()
        started = time.monotonic()
        watched = asyncio.run(_watch_runs(run_ids, viewers, cookie))
        wall = time.monotonic() - started
        return _figures(layer, run_ids, watched, wall)


async def _watch_runs(run_ids: list[int], viewers: int, cookie: bytes) -> list[Viewer]:
    audience = [Viewer(run_id, cookie) for run_id in run_ids for _ in range(viewers)]
    for viewer in audience:  # one at a time: each renders its snapshot from the database
        await viewer.connect()
    done = asyncio.Event()
    watching = [asyncio.create_task(v.watch(done)) for v in audience]
    outcomes = await asyncio.gather(*(run_execute(run_id) for run_id in run_ids))
    if any(outcome != "done" for outcome in outcomes):
        raise RuntimeError(f"bench fanout: the debates ended {outcomes}")
    finals = {
        run_id: (status, last_seq)
        for run_id, status, last_seq in await database_sync_to_async(
            lambda: list(Run.objects.filter(pk__in=run_ids).values_list("pk", "status", "last_seq"))
        )()
    }
    # Give the viewers the consumer's gap poll (2 s) and a margin to converge, then stop watching.
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(v.status != finals[v.run_id] for v in audience):  # noqa: ASYNC110
        await asyncio.sleep(0.2)
    done.set()
    await asyncio.gather(*watching)
    for viewer in audience:
        await viewer.comm.disconnect()
    behind = [v for v in audience if v.status != finals[v.run_id]]
    if behind:
        raise RuntimeError(
            f"bench fanout: {len(behind)} of {len(audience)} viewers did not converge, e.g. run {behind[0].run_id} "
            f"shows {behind[0].status}, the database {finals[behind[0].run_id]}"
        )
    return audience


def _figures(layer: str, run_ids: list[int], audience: list[Viewer], wall: float) -> dict[str, Any]:
    written = {
        (run_id, seq): created.timestamp()
        for run_id, seq, created in RunEvent.objects.filter(run_id__in=run_ids).values_list(
            "run_id", "seq", "created_at"
        )
    }
    lags = []
    for viewer in audience:
        for arrived, frame in viewer.frames:
            for _, seq in STATUS.findall(frame):
                committed = written.get((viewer.run_id, int(seq)))
                if committed is not None:
                    lags.append((arrived - committed) * 1000)
    streamed = {
        (run_id, dom): (finished - started).total_seconds()
        for run_id, dom, started, finished in (
            (t.run_id, t.dom_id, t.started_at, t.finished_at)
            for t in Turn.objects.filter(run_id__in=run_ids).only(
                "run_id", "key", "started_at", "finished_at"
            )
        )
        if started and finished
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
    frames = sum(len(v.frames) for v in audience)
    return {
        "layer": layer,
        "debates": len(run_ids),
        "viewers": len(audience),
        "frames": frames,
        "wall": wall,
        "p50_ms": statistics.median(lags) if lags else float("nan"),
        "p95_ms": _percentile(lags, 0.95),
        "lagged_frames": len(lags),
        "fps_max": max(rates, default=0.0),
        "fps_median": statistics.median(rates) if rates else 0.0,
        "turns_rated": len(rates),
    }


def bench_fanout_cleanup() -> None:
    from django.contrib.auth import get_user_model

    Run.objects.filter(topic__startswith="[bench-fanout]").delete()
    get_user_model().objects.filter(username=BENCH_USER).delete()
