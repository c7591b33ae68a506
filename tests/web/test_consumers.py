"""The run page's WebSocket, through the full ASGI stack (origin validation, session auth, routing): who may
connect, the snapshot-then-relay contract, convergence when the channel layer drops messages, and that the socket
is read-only (a viewer can neither act over HTTP nor through the socket)."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections import Counter
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.db import connection
from django.test import Client

from debates.asgi import application
from debates.engine.publish import run_group
from debates.engine.runner import run_execute
from debates.models import HumanAction, Run, RunEvent, Turn
from debates.platform.channel_layers import InMemoryChannelLayer
from debates.platform.ws_prepared import SCOPE_KEY
from debates.web.consumers import CLOSE_NOT_FOUND, CLOSE_UNAUTHENTICATED
from tests.conftest import EXPECTED_KEYS, run_to_stop

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


# Fast enough for a short test, slow enough that turns stream in several flushes (turn.delta frames).
STREAMING = {"cps": 4000}

LOCAL_ORIGIN = b"http://localhost"
LOCAL_HOST = b"localhost"  # the Host a browser on http://localhost sends
# A turn appended to the transcript by its turn_started event: to its round's list, or starting the round.
APPENDED = re.compile(
    r'hx-swap-oob="beforeend:#(?:transcript|round-[\w-]+-turns)">'
    r'(?:\s*<details class="round"[^>]*>.*?<div class="round-turns"[^>]*>)?\s*<article [^>]*data-key="([^"]+)"',
    re.S,
)
# A turn card (whole, by id) showing the turn committed.
COMMITTED = re.compile(r'<article [^>]*data-status="committed" data-key="([^"]+)"')
STATUS = re.compile(r'<section id="run-status"[^>]*data-status="([a-z_]+)" data-seq="(\d+)"')
LIVE_BODY = re.compile(r'<div id="turn-[^"]+-live"')
CONTROL = 'id="control-pause"'  # a moderator's controls, rendered for them alone


class DroppingChannelLayer(InMemoryChannelLayer):
    """Loses every other `run.events` group message (a burst of events; or all, with `drop_all`), silently, as a
    full channel or a Redis blip would. Messages announcing a committed turn are counted apart from the rest, so
    half the commits are lost however the parallel turns interleave."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seen: Counter[bool] = Counter()
        self.drop_all = False
        self.dropped: list[int] = []

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if message.get("type") == "run.events":
            commit = any(COMMITTED.search(event["html"]) for event in message["events"])
            self.seen[commit] += 1
            if self.drop_all or self.seen[commit] % 2 == 0:
                self.dropped.extend(int(event["seq"]) for event in message["events"])
                return
        await super().group_send(group, message)


@pytest.fixture(autouse=True)
def _fresh_channel_layer(settings: Any) -> None:
    """Every test gets its own in-memory layer (the override resets channels' cached backends)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": "debates.platform.channel_layers.InMemoryChannelLayer"}}


# --- helpers ---------------------------------------------------------------------------------------------------


async def session_cookie(user: Any) -> bytes:
    def login() -> str:
        client = Client()
        client.force_login(user)
        return client.cookies[django_settings.SESSION_COOKIE_NAME].value

    return f"{django_settings.SESSION_COOKIE_NAME}={await sync_to_async(login)()}".encode()


def socket(
    run_id: int, *, cookie: bytes | None = None, origin: bytes | None = LOCAL_ORIGIN
) -> WebsocketCommunicator:
    headers = [(b"host", LOCAL_HOST)]
    if origin is not None:
        headers.append((b"origin", origin))
    if cookie is not None:
        headers.append((b"cookie", cookie))
    return WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)


async def needs_you_socket(user: Any) -> WebsocketCommunicator:
    """An accepted "Needs you" count socket for `user` (accepted even while the layer is down)."""
    headers = [(b"host", LOCAL_HOST), (b"origin", LOCAL_ORIGIN), (b"cookie", await session_cookie(user))]
    comm = WebsocketCommunicator(application, "/ws/needs-you/", headers=headers)
    connected, _ = await comm.connect(timeout=10)
    assert connected
    return comm


async def connected_socket(run_id: int, user: Any) -> tuple[WebsocketCommunicator, str]:
    """An accepted socket for `user` and its first frame (the snapshot)."""
    comm = socket(run_id, cookie=await session_cookie(user))
    connected, _ = await comm.connect(timeout=10)
    assert connected
    return comm, await comm.receive_from(timeout=10)


async def frames_until_status(comm: WebsocketCommunicator, status: str, *, within: float = 15) -> list[str]:
    """Frames received until one shows the run in `status`, plus whatever follows it until the socket goes quiet
    (a status change is followed by the per-user moderator panel). A receive timeout would kill the app, so one
    generous deadline covers the whole wait; the consumer's gap poll runs every 2 s."""
    frames: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        remaining = deadline - loop.time()
        if remaining <= 0:
            raise AssertionError(
                f"no frame showed status {status!r} within {within} s; got {len(frames)} frames"
            )
        frame = await comm.receive_from(timeout=remaining)
        frames.append(frame)
        if any(found == status for found, _ in STATUS.findall(frame)):
            break
    while not await comm.receive_nothing(timeout=0.5):
        frames.append(await comm.receive_from())
    return frames


def last_status(frames: list[str]) -> tuple[str, str]:
    return [found for frame in frames for found in STATUS.findall(frame)][-1]


def appended_keys(frames: list[str]) -> list[str]:
    return [key for frame in frames for key in APPENDED.findall(frame)]


def committed_keys(frames: list[str]) -> set[str]:
    return {key for frame in frames for key in COMMITTED.findall(frame)}


def turn_keys_in_order(run_id: int) -> list[str]:
    return list(Turn.objects.filter(run_id=run_id).order_by("first_seq").values_list("key", flat=True))


def run_state(run_id: int) -> dict[str, Any]:
    run = Run.objects.get(pk=run_id)
    return {
        "status": run.status,
        "pause_requested": run.pause_requested,
        "cancel_requested": run.cancel_requested,
        "step_credits": run.step_credits,
        "last_seq": run.last_seq,
        "events": RunEvent.objects.filter(run=run).count(),
        "actions": HumanAction.objects.filter(run=run).count(),
        "turns": Turn.objects.filter(run=run).count(),
    }


# --- who may connect -------------------------------------------------------------------------------------------


async def test_an_anonymous_socket_is_closed_with_4401(make_run):
    run = await sync_to_async(make_run)()
    comm = socket(run.pk)
    assert await comm.connect(timeout=10) == (False, CLOSE_UNAUTHENTICATED)
    await comm.disconnect()


async def test_a_foreign_or_missing_origin_is_refused_even_with_a_valid_session(make_run, moderator):
    run = await sync_to_async(make_run)()
    cookie = await session_cookie(moderator)
    # Another host; the same host on another port (another app's page); the same host over another scheme.
    for origin in (b"http://evil.example", b"http://localhost:8001", b"https://localhost", b"null", None):
        comm = socket(run.pk, cookie=cookie, origin=origin)
        connected, _ = await comm.connect(timeout=10)
        assert not connected, origin
        await comm.disconnect()
    # The same cookie from the page's own origin is accepted.
    comm, _ = await connected_socket(run.pk, moderator)
    await comm.disconnect()


async def test_the_origin_must_match_the_pages_own_port_and_scheme_or_a_trusted_origin(
    make_run, moderator, settings
):
    run = await sync_to_async(make_run)()
    cookie = await session_cookie(moderator)

    async def accepted(host: bytes, origin: bytes, scheme: str = "ws") -> bool:
        comm = WebsocketCommunicator(
            application,
            f"/ws/runs/{run.pk}/",
            headers=[(b"host", host), (b"origin", origin), (b"cookie", cookie)],
        )
        comm.scope["scheme"] = scheme
        connected, _ = await comm.connect(timeout=10)
        await comm.disconnect()
        return connected

    assert await accepted(b"localhost:8000", b"http://localhost:8000")
    assert not await accepted(b"localhost:8000", b"http://localhost:9000")
    assert not await accepted(b"localhost:8000", b"http://localhost")  # port 80 is another origin
    assert await accepted(b"localhost", b"https://localhost:443", scheme="wss")
    assert not await accepted(b"localhost", b"http://localhost", scheme="wss")
    settings.CSRF_TRUSTED_ORIGINS = ["https://localhost:8443"]
    assert await accepted(b"localhost:8000", b"https://localhost:8443")


async def test_a_socket_for_an_unknown_run_is_closed_with_4404(moderator):
    comm = socket(999_999, cookie=await session_cookie(moderator))
    assert await comm.connect(timeout=10) == (False, CLOSE_NOT_FOUND)
    await comm.disconnect()


# --- snapshot, then events in order ------------------------------------------------------------------------------


async def test_the_snapshot_comes_first_then_every_event_after_it_in_order(make_run, moderator):
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    await run.arefresh_from_db()
    comm, snapshot = await connected_socket(run.pk, moderator)
    try:
        assert 'id="transcript"' in snapshot and 'id="run-status"' in snapshot and "hx-swap-oob" in snapshot
        assert STATUS.findall(snapshot) == [("queued", str(run.last_seq))]  # snapshot at S = last_seq
        assert "<article" not in snapshot  # no turn yet

        assert await run_execute(run.pk) == "done"
        frames = await frames_until_status(comm, "completed")
    finally:
        await comm.disconnect()

    run = await Run.objects.aget(pk=run.pk)
    assert run.status == "completed"
    db_order = await sync_to_async(turn_keys_in_order)(run.pk)
    assert set(db_order) == EXPECTED_KEYS
    # Each turn is appended to the transcript exactly once, in the run's seq order.
    assert appended_keys(frames) == db_order
    # Each committed turn's card reaches the page, after the frame that appended it.
    assert committed_keys(frames) == EXPECTED_KEYS
    for key in EXPECTED_KEYS:
        appended_at = next(i for i, f in enumerate(frames) if key in APPENDED.findall(f))
        committed_at = min(i for i, f in enumerate(frames) if key in COMMITTED.findall(f))
        assert appended_at <= committed_at, key
    # Token batches of shown turns were relayed too, and the last frame is the final state.
    assert any(LIVE_BODY.search(f) for f in frames)
    assert last_status(frames) == ("completed", str(run.last_seq))
    # An event and the panels it changed arrive in one frame (a socket write per viewer, not two): the frame of the
    # run's last event, the completion. (An earlier turn's frame, rendered once the run had completed, may show the
    # completed status too; the completion's own frame is the last to show it.)
    completed = [f for f in frames if ("completed", str(run.last_seq)) in STATUS.findall(f)][-1]
    assert 'id="moderator"' in completed
    # The last moderator panel is the terminal one: every control disabled.
    panel = [f for f in frames if 'id="moderator"' in f][-1]
    assert panel.count("disabled") == 4


async def test_a_client_that_connects_mid_run_gets_the_turns_so_far_in_its_snapshot(make_run, moderator):
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    runner = asyncio.create_task(run_execute(run.pk))
    try:
        while not await Turn.objects.filter(run=run, status="committed").aexists():  # noqa: ASYNC110 (polls the DB)
            await asyncio.sleep(0.02)
        comm, snapshot = await connected_socket(run.pk, moderator)
        try:
            assert await runner == "done"
            frames = await frames_until_status(comm, "completed")
        finally:
            await comm.disconnect()
    finally:
        await runner
    ((_, snapshot_seq),) = STATUS.findall(snapshot)
    in_snapshot = re.findall(r'<article [^>]*data-key="([^"]+)"', snapshot)
    assert in_snapshot  # some turns were already on the page
    db_order = await sync_to_async(turn_keys_in_order)(run.pk)
    # Snapshot turns plus appended turns: every turn once, in order; nothing missing, nothing doubled.
    assert in_snapshot + appended_keys(frames) == db_order
    assert committed_keys([snapshot, *frames]) == EXPECTED_KEYS
    assert int(snapshot_seq) < (await Run.objects.aget(pk=run.pk)).last_seq


async def test_a_live_frame_renders_at_every_point_of_a_turns_stream(make_run):
    """A token batch can end anywhere; rendering the partial turn must never raise (an error in a live frame
    would fail the whole run). Cut each turn's final text after every JSON delimiter and render it live."""
    from debates.selectors.cards import seat_names
    from debates.web.frames import turn_live_frame

    run = await sync_to_async(make_run)()
    assert await run_execute(run.pk) == "done"

    def render_every_prefix() -> int:
        names = seat_names(run)
        rendered = 0
        for turn in Turn.objects.filter(run=run):
            text = turn.raw_text
            cuts = [i for i in range(1, len(text) + 1) if text[i - 1] in ',:{["' or i == len(text)]
            for cut in cuts:
                html = turn_live_frame(
                    key=turn.key, task=turn.task, protocol=run.protocol, text=text[:cut], names=names
                )
                assert f'id="{turn.dom_id}-live"' in html
                rendered += 1
        return rendered

    assert await sync_to_async(render_every_prefix)() > 500


# --- dropped messages are replayed from the database -------------------------------------------------------------


async def test_a_client_converges_when_the_layer_drops_every_other_event(make_run, moderator, settings):
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.DroppingChannelLayer"}}
    layer = get_channel_layer()
    assert isinstance(layer, DroppingChannelLayer)
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    comm, _ = await connected_socket(run.pk, moderator)
    try:
        assert await run_execute(run.pk) == "done"
        frames = await frames_until_status(comm, "completed")
    finally:
        await comm.disconnect()

    dropped_kinds = Counter(
        [
            kind
            async for kind in RunEvent.objects.filter(run=run, seq__in=layer.dropped).values_list(
                "kind", flat=True
            )
        ]
    )
    assert dropped_kinds["turn_committed"] >= 3  # the drops really hit committed turns (4 of 8, give or take)
    db_committed = {
        key async for key in Turn.objects.filter(run=run, status="committed").values_list("key", flat=True)
    }
    assert db_committed == EXPECTED_KEYS
    assert committed_keys(frames) == db_committed
    assert appended_keys(frames) == await sync_to_async(turn_keys_in_order)(run.pk)
    last_seq = (await Run.objects.aget(pk=run.pk)).last_seq
    assert last_status(frames) == ("completed", str(last_seq))


async def test_every_viewer_converges_when_the_layer_drops_every_other_event(make_run, moderator, settings):
    """Several browsers on one run, through a layer that loses half its messages: three from the start (one of
    them drops its socket mid-run and reconnects, as the page does), two that join after the first commit. Each
    ends showing every committed turn and the final status at the run's last seq."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.DroppingChannelLayer"}}
    layer = get_channel_layer()
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    viewers = [await connected_socket(run.pk, moderator) for _ in range(3)]
    runner = asyncio.create_task(run_execute(run.pk))
    while not await Turn.objects.filter(run=run, status="committed").aexists():  # noqa: ASYNC110
        await asyncio.sleep(0.02)
    viewers += [await connected_socket(run.pk, moderator) for _ in range(2)]
    leaving, _ = viewers.pop(0)
    await leaving.disconnect()
    viewers.append(await connected_socket(run.pk, moderator))
    try:
        assert await runner == "done"
        last_seq = str((await Run.objects.aget(pk=run.pk)).last_seq)
        for comm, snapshot in viewers:
            frames = [snapshot, *await frames_until_status(comm, "completed")]
            assert committed_keys(frames) == EXPECTED_KEYS
            assert last_status(frames) == ("completed", last_seq)
    finally:
        for comm, _ in viewers:
            await comm.disconnect()
    assert len(layer.dropped) >= 6  # about half of the run's events


async def test_a_lost_final_message_is_noticed_by_the_gap_poll(make_run, moderator, settings):
    """The last event of a burst has no successor to reveal the gap: the 2 s poll replays it once a poll has seen
    it committed and it still has not arrived by the next one."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.DroppingChannelLayer"}}
    layer = get_channel_layer()
    run = await sync_to_async(make_run)()
    comm, _ = await connected_socket(run.pk, moderator)
    try:
        layer.drop_all = True
        await sync_to_async(_pause)(run.pk, moderator)
        assert layer.dropped  # the pause's event never reached the consumer
        frames = await frames_until_status(comm, "queued", within=7)
    finally:
        await comm.disconnect()
    assert "pause requested" in "".join(frames)


def _pause(run_id: int, user: Any) -> None:
    from debates.services import runs as services

    services.run_control(run_id=run_id, action="pause", user=user)


# --- one feed per run per process -------------------------------------------------------------------------------


async def test_a_runs_sockets_in_one_process_share_one_channel_of_the_layer(make_run, viewer, moderator):
    """The layer carries each message of a run once to a process, however many of the run's pages it serves;
    every socket still gets it, and the last to leave takes the run's group out of the layer."""
    layer = get_channel_layer()
    run = await sync_to_async(make_run)()
    sockets = [await connected_socket(run.pk, user) for user in (viewer, viewer, moderator)]
    try:
        assert len(layer.groups[run_group(run.pk)]) == 1
        await layer.group_send(
            run_group(run.pk),
            {"type": "turn.delta", "parts": [{"first_seq": 1, "html": "<p>once for all</p>"}]},
        )
        for comm, _ in sockets:
            assert "once for all" in await comm.receive_from(timeout=5)
    finally:
        for comm, _ in sockets:
            await comm.disconnect()
    assert not layer.groups.get(run_group(run.pk))


class RecordingConnection:
    """Stands for the Daphne connection behind a socket (debates.platform.ws_prepared): keeps the prepared frames
    written to it, in order."""

    def __init__(self) -> None:
        self.frames: list[Any] = []

    def send_prepared(self, prepared: Any) -> bool:
        self.frames.append(prepared)
        return True

    def texts(self) -> list[str]:
        return [_frame_text(frame) for frame in self.frames]


def _frame_text(prepared: Any) -> str:
    """The text of a server's unmasked frame (RFC 6455 §5.2: the length in 7, 16 or 64 bits after the first byte)."""
    data = prepared.payloadHybi
    length = data[1] & 0x7F
    start = {126: 4, 127: 10}.get(length, 2)
    return data[start:].decode()


async def socket_on_connection(
    run_id: int, user: Any, connection: RecordingConnection
) -> WebsocketCommunicator:
    comm = socket(run_id, cookie=await session_cookie(user))
    comm.scope[SCOPE_KEY] = connection  # as DaphneConnections puts it, under Daphne
    connected, _ = await comm.connect(timeout=10)
    assert connected
    return comm


async def test_a_frame_every_viewer_gets_is_framed_once_and_a_moderators_own_panels_go_apart(
    make_run, viewer, moderator
):
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    watching, moderating = RecordingConnection(), RecordingConnection()
    viewer_socket = await socket_on_connection(run.pk, viewer, watching)
    moderator_socket = await socket_on_connection(run.pk, moderator, moderating)
    try:
        assert await run_execute(run.pk) == "done"
        moderator_asgi = [await moderator_socket.receive_from(timeout=5)]  # the snapshot goes the ASGI way
        await asyncio.sleep(0.5)
        while not await moderator_socket.receive_nothing(timeout=0.5):
            moderator_asgi.append(await moderator_socket.receive_from())
        viewer_asgi = [await viewer_socket.receive_from(timeout=5)]
        assert await viewer_socket.receive_nothing(
            timeout=0.5
        )  # everything after a viewer's snapshot is shared
    finally:
        await viewer_socket.disconnect()
        await moderator_socket.disconnect()

    run = await Run.objects.aget(pk=run.pk)
    shared = watching.texts()
    # The viewer saw the whole run through prepared frames: every turn appended, the live text, the end.
    assert appended_keys(shared) == await sync_to_async(turn_keys_in_order)(run.pk)
    assert any(LIVE_BODY.search(frame) for frame in shared)
    assert last_status(shared) == ("completed", str(run.last_seq))
    # A frame both got was framed once: the same prepared message went to both connections.
    both = {id(frame) for frame in watching.frames} & {id(frame) for frame in moderating.frames}
    assert len(both) >= len([f for f in shared if LIVE_BODY.search(f)]) > 0
    # The moderator's controls never went into a shared frame: the frames that hold them came the ASGI way, to
    # the moderator alone.
    assert not any(CONTROL in frame for frame in [*shared, *moderating.texts()])
    assert any(CONTROL in frame for frame in moderator_asgi[1:])
    assert CONTROL not in viewer_asgi[0]


async def test_a_socket_whose_snapshot_fails_leaves_its_runs_feed(make_run, moderator, monkeypatch):
    """A connect that raises gets no disconnect from Channels: the socket must not stay behind in the feed."""
    from debates.web import frames

    def snapshot_frame_broken(*args: Any, **kwargs: Any) -> tuple[str, int]:
        raise RuntimeError("the snapshot could not be rendered")

    monkeypatch.setattr(frames, "snapshot_frame", snapshot_frame_broken)
    layer = get_channel_layer()
    run = await sync_to_async(make_run)()
    comm = socket(run.pk, cookie=await session_cookie(moderator))
    connected, _ = await comm.connect(
        timeout=10
    )  # accepted, then the snapshot fails and the consumer with it
    assert connected
    with pytest.raises(RuntimeError, match="could not be rendered"):
        await comm.wait(timeout=10)  # the consumer's end, as soon as it comes
    assert not layer.groups.get(run_group(run.pk))


async def test_a_socket_that_waits_for_the_database_holds_up_no_other_socket_of_its_run(
    make_run, viewer, moderator, monkeypatch
):
    """A moderator's panels are rendered for that moderator, from the database: while that read is slow, the
    run's other pages already show the event, and the moderator's page shows it once the read is done."""
    from debates.web import frames

    run = await sync_to_async(make_run)()
    real_panels_frame = frames.panels_frame
    armed, released = threading.Event(), threading.Event()

    def panels_frame_held_for_the_moderator(run_id: int, user: Any, **kwargs: Any) -> str:
        if armed.is_set() and user.pk == moderator.pk:
            released.wait(10)
        return real_panels_frame(run_id, user, **kwargs)

    monkeypatch.setattr(frames, "panels_frame", panels_frame_held_for_the_moderator)
    moderator_comm, _ = await connected_socket(run.pk, moderator)
    viewer_comm, _ = await connected_socket(run.pk, viewer)
    armed.set()  # after the snapshots, which hold the panels too
    try:
        await sync_to_async(_pause)(run.pk, moderator)
        assert "pause requested" in await viewer_comm.receive_from(timeout=5)
        assert await moderator_comm.receive_nothing(timeout=0.3)  # still rendering its panels
        released.set()
        assert "pause requested" in await moderator_comm.receive_from(timeout=5)
    finally:
        released.set()
        await viewer_comm.disconnect()
        await moderator_comm.disconnect()


# --- a viewer cannot act; the socket is read-only ----------------------------------------------------------------


def _post(client: Client, run_id: int, action: str) -> int:
    return client.post(
        f"/runs/{run_id}/control/{action}/", {"client_uuid": ""}, headers={"HX-Request": "true"}
    ).status_code


async def test_a_viewer_cannot_steer_a_run_over_http(make_run, viewer_client, moderator_client):
    run = await sync_to_async(make_run)()
    before = await sync_to_async(run_state)(run.pk)
    for action in ("pause", "cancel", "step", "resume"):
        assert await sync_to_async(_post)(viewer_client, run.pk, action) == 403
    assert await sync_to_async(run_state)(run.pk) == before
    # The same request from a moderator is applied (so the 403 is the permission, not a broken URL).
    assert await sync_to_async(_post)(moderator_client, run.pk, "pause") == 200
    assert (await Run.objects.aget(pk=run.pk)).pause_requested


async def test_only_a_moderator_snapshot_has_the_controls(make_run, viewer, moderator):
    run = await sync_to_async(make_run)()
    viewer_comm, viewer_snapshot = await connected_socket(run.pk, viewer)
    moderator_comm, moderator_snapshot = await connected_socket(run.pk, moderator)
    try:
        assert 'id="moderator"' in viewer_snapshot and 'id="moderator"' in moderator_snapshot
        assert 'id="control-pause"' not in viewer_snapshot and "hx-post" not in viewer_snapshot
        assert "watching as a viewer" in viewer_snapshot
        for control in ("pause", "resume", "step", "cancel"):
            assert f'id="control-{control}"' in moderator_snapshot
    finally:
        await viewer_comm.disconnect()
        await moderator_comm.disconnect()


async def test_whatever_a_client_sends_on_the_socket_is_ignored(make_run, viewer, moderator):
    run = await sync_to_async(make_run)()
    before = await sync_to_async(run_state)(run.pk)
    messages = [
        json.dumps({"action": "pause"}),
        json.dumps({"HEADERS": {"HX-Request": "true", "HX-Trigger": "control-cancel"}, "action": "cancel"}),
        json.dumps(
            {"type": "run.event", "seq": 99, "html": "<div id='transcript' hx-swap-oob='outerHTML'></div>"}
        ),
        "cancel",
    ]
    for user in (viewer, moderator):  # not even a moderator acts through the socket
        comm, _ = await connected_socket(run.pk, user)
        try:
            for message in messages:
                await comm.send_to(text_data=message)
            await comm.send_to(bytes_data=b"\x00pause")
            assert await comm.receive_nothing(timeout=0.3)  # no reply, no close
        finally:
            await comm.disconnect()
    assert await sync_to_async(run_state)(run.pk) == before


# --- the channel layer goes down and comes back ------------------------------------------------------------------


class BreakableChannelLayer(InMemoryChannelLayer):
    """While `down`, as a Redis that is stopped: every send, group send, group join and new channel raises, and nothing
    arrives. Group membership is forgotten when it goes down (a restarted Redis keeps no groups)."""

    down = False

    def _check(self) -> None:
        if self.down:
            raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    def break_(self) -> None:
        self.down = True
        self.groups.clear()

    async def send(self, channel: str, message: dict[str, Any]) -> None:
        self._check()
        await super().send(channel, message)

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        self._check()
        await super().group_send(group, message)

    async def group_add(self, group: str, channel: str) -> None:
        self._check()
        await super().group_add(group, channel)

    async def new_channel(self, prefix: str = "specific.") -> str:
        self._check()  # the pub/sub layer subscribes a new channel in Redis
        return await super().new_channel(prefix)


INTERRUPTED = re.compile(r'<p id="live-notice" class="notice degraded" hx-swap-oob="true">')
RESUMED = re.compile(r'<p id="live-notice" class="notice degraded" hx-swap-oob="true" hidden>')
LIVE_BADGE = '<span id="connection" class="badge conn" data-state="live" hx-swap-oob="true">live</span>'


@pytest.fixture
def breakable_layer(settings: Any) -> BreakableChannelLayer:
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.BreakableChannelLayer"}}
    settings.DISPUTA = {
        **settings.DISPUTA,
        "LAYER_HEARTBEAT_SECONDS": 0.1,
        "LAYER_HEARTBEAT_TIMEOUT_SECONDS": 0.2,
        "CATCH_UP_POLL_SECONDS": 0.2,
    }
    layer = get_channel_layer()
    assert isinstance(layer, BreakableChannelLayer)
    return layer


async def frames_until(
    comm: WebsocketCommunicator, pattern: re.Pattern[str], *, within: float = 10
) -> list[str]:
    frames: list[str] = []
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not (frames and pattern.search(frames[-1])):
        remaining = deadline - loop.time()
        assert remaining > 0, f"no frame matched {pattern.pattern!r} within {within} s: {len(frames)} frames"
        frames.append(await comm.receive_from(timeout=remaining))
    return frames


async def test_the_snapshot_says_the_page_is_live(make_run, moderator, breakable_layer):
    run = await sync_to_async(make_run)()
    comm, snapshot = await connected_socket(run.pk, moderator)
    await comm.disconnect()
    assert LIVE_BADGE in snapshot and RESUMED.search(snapshot)


async def test_while_the_layer_is_down_the_page_says_so_and_catches_up_from_the_database(
    make_run, moderator, breakable_layer
):
    """A debate runs while the layer is down: the page is told "live updates interrupted" and still shows every
    turn as it commits, read from the database; once the layer is back it says so, and the events after that
    arrive through the layer again."""
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    comm, _ = await connected_socket(run.pk, moderator)
    try:
        breakable_layer.break_()
        down = await frames_until(comm, INTERRUPTED, within=5)
        assert 'data-state="interrupted"' in down[-1] and "catching up" in down[-1]
        assert await run_execute(run.pk) == "done"  # its publishing failed throughout, and did not stop it
        during = await frames_until_status(comm, "completed")
        breakable_layer.down = False
        back = await frames_until(comm, RESUMED, within=5)
        assert LIVE_BADGE in back[-1]
        # The consumer joined its group again (the outage made the layer forget it): group messages reach it.
        await breakable_layer.group_send(
            run_group(run.pk),
            {"type": "turn.delta", "parts": [{"first_seq": 1, "html": "<p>through the layer</p>"}]},
        )
        after = await frames_until(comm, re.compile("through the layer"), within=5)
    finally:
        await comm.disconnect()
    assert committed_keys(during) == EXPECTED_KEYS
    assert appended_keys(during) == await sync_to_async(turn_keys_in_order)(run.pk)
    last_seq = (await Run.objects.aget(pk=run.pk)).last_seq
    assert last_status(during) == ("completed", str(last_seq))
    assert after


async def test_a_page_that_connects_while_the_layer_is_down_is_told_and_still_converges(
    make_run, moderator, breakable_layer
):
    run = await sync_to_async(make_run)(backend_options=STREAMING)
    breakable_layer.break_()
    comm, snapshot = await connected_socket(
        run.pk, moderator
    )  # joining its group failed: accepted all the same
    try:
        assert INTERRUPTED.search(snapshot)
        assert await run_execute(run.pk) == "done"
        frames = await frames_until_status(comm, "completed")
        breakable_layer.down = False
        await frames_until(comm, RESUMED, within=5)
    finally:
        await comm.disconnect()
    assert committed_keys(frames) == EXPECTED_KEYS
    assert last_status(frames) == ("completed", str((await Run.objects.aget(pk=run.pk)).last_seq))


def run_awaiting_set(run_id: int) -> None:
    try:
        Run.objects.filter(pk=run_id).update(status="awaiting_human", awaiting=["r2/questions/examiner"])
    finally:
        connection.close()


async def test_a_wake_up_that_comes_while_the_count_is_read_is_counted_again(
    make_run, moderator, settings, monkeypatch
):
    """The count's read began before a run started waiting, and that run's wake-up came during the read: the page
    is counted again and shows 1, not the stale 0 of the read in flight."""
    from debates.engine.attention import ATTENTION_GROUP
    from debates.web import consumers

    settings.DISPUTA = {**settings.DISPUTA, "NEEDS_YOU_COALESCE_SECONDS": 0.01}
    run = await sync_to_async(make_run)(config={"examiner": "human"})
    comm = await needs_you_socket(moderator)
    try:
        assert 'data-count="0"' in await comm.receive_from(timeout=5)
        reading, released = threading.Event(), threading.Event()
        real_count = consumers.needs_you_count

        def count_held_once(user: Any) -> int:
            count = real_count(user)
            if not reading.is_set():  # the first recount has read, and is held before it answers
                reading.set()
                released.wait(timeout=10)
            return count

        monkeypatch.setattr(consumers, "needs_you_count", count_held_once)
        layer = get_channel_layer()
        await layer.group_send(ATTENTION_GROUP, {"type": "attention.changed"})
        assert await asyncio.to_thread(reading.wait, 5)
        # The run starts waiting for its examiner, and its wake-up arrives while the read is held. (Written from a
        # thread of its own: the held read occupies the thread that sync_to_async would use.)
        await asyncio.to_thread(run_awaiting_set, run.pk)
        await layer.group_send(ATTENTION_GROUP, {"type": "attention.changed"})
        await asyncio.sleep(0.2)  # relayed to the socket before the held read answers
        released.set()
        assert 'data-count="1"' in await comm.receive_from(timeout=5)
    finally:
        released.set()
        await comm.disconnect()


async def test_the_needs_you_count_joins_again_and_recounts_after_an_outage(
    make_run, moderator, breakable_layer
):
    """A wake-up sent while the layer is down is lost, and the restarted layer has forgotten the count's group:
    once it is back the count is taken again, and later wake-ups reach the page."""
    from debates.engine.attention import ATTENTION_GROUP

    breakable_layer.break_()
    comm = await needs_you_socket(moderator)  # joining failed: accepted all the same
    try:
        assert 'data-count="0"' in await comm.receive_from(timeout=5)
        run = await sync_to_async(make_run)(config={"examiner": "human"})
        await sync_to_async(run_to_stop)(run)  # now a run waits for the moderator; its wake-up is lost
        breakable_layer.down = False
        assert 'data-count="1"' in await comm.receive_from(timeout=5)  # recounted when back
        await sync_to_async(Run.objects.filter(pk=run.pk).update)(status="cancelled")
        await breakable_layer.group_send(ATTENTION_GROUP, {"type": "attention.changed"})
        assert 'data-count="0"' in await comm.receive_from(timeout=5)  # rejoined: wake-ups arrive
    finally:
        await comm.disconnect()
