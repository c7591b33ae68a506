"""Every committed event is published, for every protocol: the channel layer may drop a message, but no event is
left for a viewer's replay to find (a replay renders an event nobody published only after the
UNPUBLISHED_GRACE_SECONDS, and until then the page shows nothing of the run: not the event, not what follows it,
not the live text of the turns it started). And so a page watching a run never goes more than a second without a
frame while the run is active."""

from __future__ import annotations

import asyncio
import itertools
import re
import time
from typing import Any

import pytest
from channels.db import database_sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator
from django.conf import settings as django_settings
from django.test import Client

from debates.asgi import application
from debates.engine import registry
from debates.engine import runner as runner_module
from debates.engine import stream as stream_module
from debates.engine.publish import run_group
from debates.engine.runner import run_execute
from debates.models import Run, RunEvent
from debates.platform.channel_layers import InMemoryChannelLayer
from debates.services import runs as services
from debates.services.demos import run_headless_demo_create
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

PROTOCOLS = ["adversarial", "comparative", "consultation", "cross-examination", "kb-debate", "market-panel"]
STATUS = re.compile(r'<section id="run-status"[^>]*data-status="([a-z_]+)" data-seq="(\d+)"')
ACTIVE = {"queued", "running"}
# The longest a page may go without a frame while its run is active.
MAX_SILENCE_SECONDS = 1.0


class RecordingLayer(InMemoryChannelLayer):
    """The in-memory layer, keeping every event message sent to a group."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.events: dict[str, list[int]] = {}
        self.bursts: dict[str, list[list[int]]] = {}  # the seqs of each message

    async def group_send(self, group: str, message: dict[str, Any]) -> None:
        if message.get("type") == "run.events":
            self.events.setdefault(group, []).extend(int(event["seq"]) for event in message["events"])
            self.bursts.setdefault(group, []).append([int(event["seq"]) for event in message["events"]])
        await super().group_send(group, message)


@pytest.fixture(autouse=True)
def layer(settings: Any) -> RecordingLayer:
    """Every test gets its own layer (the override resets channels' cached backends)."""
    settings.CHANNEL_LAYERS = {"default": {"BACKEND": f"{__name__}.RecordingLayer"}}
    recording = get_channel_layer()
    assert isinstance(recording, RecordingLayer)
    return recording


def headless_run(protocol: str, *, cps: float) -> Run:
    """A queued run of the protocol's demo with simulated agents and no human seat."""
    run = run_headless_demo_create(protocol=protocol, seed=3, backend_options={"cps": cps})
    assert not run.seats.filter(human=True).exists()
    return run


def test_the_protocols_are_all_here():
    assert [p.name for p in registry.all_protocols()] == PROTOCOLS


def unpublished(run: Run, layer: RecordingLayer) -> dict[int, str]:
    """The run's events no message announced, by seq."""
    published = set(layer.events.get(run_group(run.pk), []))
    events = dict(RunEvent.objects.filter(run=run).values_list("seq", "kind"))
    assert sorted(events) == list(range(1, Run.objects.get(pk=run.pk).last_seq + 1))
    return {seq: kind for seq, kind in events.items() if seq not in published}


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_every_event_of_a_run_is_published(protocol, layer):
    run = headless_run(protocol, cps=0)
    assert run_to_stop(run) == "done"
    assert run.status == "completed", run.status_reason
    # Among them the events a protocol appends when its turns commit (the consultation's round artifacts) and
    # the state records.
    assert unpublished(run, layer) == {}


def test_a_burst_of_events_from_a_service_is_rendered_once_and_published_in_order(layer, monkeypatch):
    """Creating a run appends several events in one transaction: one render for all of them (the costlier status
    widgets only in the last frame), published as one message holding every event in seq order, after the
    commit."""
    from debates.engine import publish

    renders: list[list[int]] = []
    real_render = publish._renderers["events"]

    def counting_render(*, run_id: int, seqs: list[int]) -> list[dict[str, Any]]:
        renders.append(list(seqs))
        return real_render(run_id=run_id, seqs=seqs)

    monkeypatch.setitem(publish._renderers, "events", counting_render)
    run = headless_run("consultation", cps=0)
    seqs = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", flat=True))
    assert len(seqs) > 1
    assert renders == [seqs]
    assert layer.bursts[run_group(run.pk)] == [seqs]


def test_a_turn_handing_over_to_the_next_reaches_viewers_with_its_start_in_one_message(layer, monkeypatch):
    """After a stage of one turn, the runner holds what it published last while it decides and starts the next
    stage: the viewers get the turn's end and the next turn's start in one message, rendered once. A decision
    slower than the publisher's own wait (PUBLISH_DELAY_SECONDS) must not split them.

    The hold's cap is raised here: on a loaded 2-core machine (CI runs this beside the browser tests) a decision
    took longer than the real cap now and then, and 14 of 21 hand-overs went out together. What is specified is
    the hold and its release, not the machine's speed; `bench fanout` measures what the cap gives."""
    monkeypatch.setattr(stream_module, "PUBLISH_HOLD_SECONDS", 5.0)
    real_decide = runner_module.run_decide

    def slow_decide(*args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return real_decide(*args, **kwargs)

    monkeypatch.setattr(runner_module, "run_decide", slow_decide)
    run = headless_run("kb-debate", cps=0)  # a debate of one turn after another
    assert run_to_stop(run) == "done"
    events = list(RunEvent.objects.filter(run=run).order_by("seq").values_list("seq", "kind", "payload"))
    # The commits that end a stage of one turn and are followed by the next decision's events.
    handovers, open_turns, opened = [], set(), 0
    for seq, kind, payload in events:
        if kind == "turn_started":
            open_turns.add(payload["key"])
            opened += 1
        elif kind == "turn_committed":
            open_turns.discard(payload["key"])
            if not open_turns:
                if opened == 1 and seq < events[-1][0]:
                    handovers.append(seq)
                opened = 0
    assert len(handovers) >= 4
    bursts = layer.bursts[run_group(run.pk)]
    together = [seq for seq in handovers if any(seq in burst and seq + 1 in burst for burst in bursts)]
    assert len(together) >= 0.75 * len(handovers), (handovers, bursts)


def test_the_events_of_a_run_the_engine_fails_are_published(layer, monkeypatch):
    """The failure, the streaming turns it ends and the protocol's state records of it."""
    real = runner_module._output_errors

    def broken(protocol: Any, step: Any, result: Any, view: Any) -> list[str]:
        if step.task == "synthesis":
            raise RuntimeError("an engine bug")
        return real(protocol, step, result, view)

    monkeypatch.setattr(runner_module, "_output_errors", broken)
    run = headless_run("consultation", cps=0)
    assert run_to_stop(run) == "failed"
    assert "an engine bug" in run.status_reason
    assert run.events.filter(kind="state", payload__to="aborted").exists()
    assert unpublished(run, layer) == {}


@pytest.mark.asyncio
async def test_the_events_of_a_run_cancelled_while_its_turns_stream_are_published(layer, moderator):
    run = await database_sync_to_async(headless_run)("consultation", cps=2000)
    runner = asyncio.create_task(run_execute(run.pk))
    try:
        while not await database_sync_to_async(run.turns.filter(status="committed").exists)():  # noqa: ASYNC110 (polls the database)
            await asyncio.sleep(0.02)
        await database_sync_to_async(services.run_control)(run_id=run.pk, action="cancel", user=moderator)
    finally:
        assert await runner == "cancelled"
    assert await database_sync_to_async(unpublished)(run, layer) == {}


async def watching_socket(run_id: int, user: Any) -> WebsocketCommunicator:
    """A page's socket, through the whole ASGI stack (origin check, session, routing), its snapshot read."""

    def login() -> str:
        client = Client()
        client.force_login(user)
        return client.cookies[django_settings.SESSION_COOKIE_NAME].value

    cookie = f"{django_settings.SESSION_COOKIE_NAME}={await database_sync_to_async(login)()}".encode()
    headers = [(b"host", b"localhost"), (b"origin", b"http://localhost"), (b"cookie", cookie)]
    comm = WebsocketCommunicator(application, f"/ws/runs/{run_id}/", headers=headers)
    connected, _ = await comm.connect(timeout=10)
    assert connected
    return comm


# Characters a second of the simulated agents: each run streams for two to five seconds.
PACE = {
    "adversarial": 2000,
    "comparative": 6000,
    "consultation": 3000,
    "cross-examination": 3000,
    "kb-debate": 4000,
    "market-panel": 6000,
}


# A wall-clock bound: beside the browser tests on a slow two-core machine the scaled pass saw 1.3–1.7 s gaps
# (the server starved of CPU, not a frame held back). `bench fanout` reports the same figure under a set load.
@pytest.mark.wall_clock
@pytest.mark.asyncio
@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_page_watching_an_active_run_never_waits_a_second_for_a_frame(protocol, viewer):
    """From the snapshot (the run queued) to the frame that shows it completed, frames come at least once a
    second: live text while turns stream, each event as it commits. The gaps are measured as the page gets its
    frames, whatever made them (the layer is in-memory: nothing is dropped, so no replay is needed)."""
    run = await database_sync_to_async(headless_run)(protocol, cps=PACE[protocol])
    comm = await watching_socket(run.pk, viewer)
    snapshot = await comm.receive_from(timeout=10)
    assert [status for status, _ in STATUS.findall(snapshot)] == ["queued"]
    arrivals = [time.monotonic()]
    runner = asyncio.create_task(run_execute(run.pk))
    try:
        while True:
            frame = await comm.receive_from(
                timeout=30
            )  # a silence this long fails the test (it stops the app)
            arrivals.append(time.monotonic())
            if any(status not in ACTIVE for status, _ in STATUS.findall(frame)):
                break
    finally:
        await comm.disconnect()
        outcome = await runner
    assert outcome == "done"
    assert (await database_sync_to_async(Run.objects.get)(pk=run.pk)).status == "completed"
    assert arrivals[-1] - arrivals[0] > 2 * MAX_SILENCE_SECONDS  # long enough for a silence to show
    gaps = [later - earlier for earlier, later in itertools.pairwise(arrivals)]
    worst = max(gaps)
    assert worst <= MAX_SILENCE_SECONDS, (
        f"{protocol}: no frame for {worst:.2f} s (before frame {gaps.index(worst) + 1} of {len(gaps)}, "
        f"{arrivals[-1] - arrivals[0]:.1f} s after the snapshot)"
    )
