"""Frames for many viewers (debates.web.frames): a replay serves every event's frame as it was published, rendering only
what is no longer kept, and the status once; viewers without the moderate permission share one render of their
panels per state of the run, while each moderator gets their own (controls with fresh idempotency keys)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache, caches
from django.db import transaction

from debates.engine import registry
from debates.engine.events import event_append
from debates.models import RunEvent
from debates.web import frames
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads


@pytest.fixture(autouse=True)
def _empty_caches() -> None:
    cache.clear()
    caches["fragments"].clear()


def kept_keys(run_id: int) -> list[str]:
    return [
        frames._event_frame_key(run_id, seq, created_at)
        for seq, created_at in RunEvent.objects.filter(run_id=run_id)
        .order_by("seq")
        .values_list("seq", "created_at")
    ]


def counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(frames, name)

    def counted(first: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(first)
        return real(first, *args, **kwargs)

    monkeypatch.setattr(frames, name, counted)
    return calls


def test_a_replay_serves_the_frames_as_published_and_renders_what_is_no_longer_kept(
    make_run: Any, viewer: User, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    keys = kept_keys(run.pk)
    assert set(cache.get_many(keys)) == set(keys)  # every event was published, and kept

    rendered = counting(monkeypatch, "event_frame")
    cache.set(keys[3], ("<p>kept frame 4</p>", False))
    html, last = frames.replay_frames(run.pk, 2, viewer)
    assert rendered == [] and last == run.last_seq
    assert "<p>kept frame 4</p>" in html
    assert html.rindex('<section id="run-status"') > html.rindex("<article")  # the status comes last
    assert f'data-status="completed" data-seq="{run.last_seq}"' in html

    cache.delete(keys[5])  # not kept and just committed: not published yet, its message is on its way
    html, last = frames.replay_frames(run.pk, 2, viewer)
    assert rendered == [] and last == 5
    # The kept frames before it, as published (the last of a burst carries the status), and no status of the
    # replay's own: the status shows current state, ahead of the transcript until the next events bring it.
    kept = [cache.get(key) for key in keys[2:5]]
    assert html == "".join(frame for frame, _ in kept) and not any(panels for _, panels in kept)
    assert "<p>kept frame 4</p>" in html

    # As if committed long ago: expired, or its publisher died: those are rendered again from the database, the
    # rest served.
    settings.DISPUTA = {**settings.DISPUTA, "UNPUBLISHED_GRACE_SECONDS": 0}
    cache.delete_many(keys[:5])
    html, last = frames.replay_frames(run.pk, 0, viewer)
    assert [event.seq for event in rendered] == [1, 2, 3, 4, 5, 6]
    assert "<p>kept frame 4</p>" not in html and last == run.last_seq


def test_viewers_share_one_render_of_their_panels_and_each_moderator_gets_their_own(
    make_run: Any, viewer: User, moderator: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    other_viewer = User.objects.create_user("another-viewer")
    caches["fragments"].clear()  # publishing rendered them for the viewers already
    rendered = counting(monkeypatch, "_panels_frame")

    seen_by_viewer = frames.panels_frame(run.pk, viewer)
    assert frames.panels_frame(run.pk, other_viewer) == seen_by_viewer
    assert len(rendered) == 1
    first, second = frames.panels_frame(run.pk, moderator), frames.panels_frame(run.pk, moderator)
    assert len(rendered) == 3
    assert 'id="control-cancel"' in first and 'id="control-cancel"' not in seen_by_viewer
    assert first != second  # fresh idempotency keys for each render of the controls

    with transaction.atomic():  # any change of the run is an event: the viewers' panels are rendered anew
        event_append(run_id=run.pk, kind="control", payload={"action": "noop"})
    frames.panels_frame(run.pk, other_viewer)
    assert len(rendered) == 4


def test_an_event_that_changes_the_panels_carries_what_viewers_without_the_permission_see(
    make_run: Any, viewer: User
) -> None:
    from debates.engine.publish import event_message

    run = make_run()
    assert run_to_stop(run) == "done"
    last = event_message(run_id=run.pk, seq=run.last_seq)  # the run's completion
    assert last["panels"] and last["viewer_panels"] == frames.panels_frame(run.pk, viewer)
    assert 'id="moderator"' in last["viewer_panels"] and 'id="control-cancel"' not in last["viewer_panels"]
    started = RunEvent.objects.filter(run=run, kind="turn_started").first()
    assert started is not None
    assert "viewer_panels" not in event_message(run_id=run.pk, seq=started.seq)


def test_a_burst_of_events_is_published_in_seq_order_with_the_status_in_its_last_message_only(
    make_run: Any,
) -> None:
    from debates.engine.publish import event_messages

    run = make_run()
    assert run_to_stop(run) == "done"
    started = list(
        RunEvent.objects.filter(run=run, kind="turn_started")
        .order_by("seq")[:3]
        .values_list("seq", flat=True)
    )
    assert len(started) == 3
    messages = event_messages(
        run_id=run.pk, seqs=[started[2], started[0], started[1]]
    )  # as the outbox had them
    assert [m["seq"] for m in messages] == started
    assert ['id="run-status"' in m["html"] for m in messages] == [False, False, True]
    assert all("data-key=" in m["html"] for m in messages)  # each still shows its turn


def test_a_burst_of_events_is_rendered_from_one_read_of_the_run(make_run: Any) -> None:
    """Ten debates starting at once each publish a burst (the run's status, its turns started, its state): the
    worker reads the run, its seats and its turns once for the burst, and renders the widgets showing the run's
    current state once, not once per event."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from debates.engine.publish import event_messages

    run = make_run()
    assert run_to_stop(run) == "done"
    burst = list(RunEvent.objects.filter(run=run, seq__lte=6).order_by("seq").values_list("kind", flat=True))
    assert burst.count("turn_started") == 3 and "run_status" in burst  # the first stage's start
    with CaptureQueriesContext(connection) as one_event:
        event_messages(run_id=run.pk, seqs=[3])
    with CaptureQueriesContext(connection) as whole_burst:
        messages = event_messages(run_id=run.pk, seqs=[1, 2, 3, 4, 5, 6])
    assert [m["seq"] for m in messages] == [1, 2, 3, 4, 5, 6]
    # One event: the run, its turn, seats, status. The burst adds what its panel-changing events show, once (43
    # queries when every event was rendered on its own).
    assert len(whole_burst) < 2 * len(one_event), [q["sql"][:80] for q in whole_burst.captured_queries]


def test_a_live_frame_keeps_the_re_run_and_fork_forms_the_page_has(make_run: Any, moderator: User) -> None:
    """The snapshot sent on connecting (and every frame with the panels) carries the lineage placeholder: marked
    hx-preserve, htmx keeps the loaded forms instead, so a fork point picked before the snapshot arrived stays."""
    import re

    run = make_run()
    assert run_to_stop(run) == "done"
    snapshot, _ = frames.snapshot_frame(run.pk, moderator)
    (lineage,) = re.findall(r'<section id="lineage"[^>]*>', snapshot)
    assert 'hx-preserve="true"' in lineage and 'hx-trigger="load"' in lineage


def test_a_shared_panel_changed_by_several_events_of_a_burst_is_rendered_once_in_the_last_of_them(
    db: None,
) -> None:
    """The consultation's side panel follows the states and the round artifacts: a burst holding several events
    that change it renders the panel once (it shows the run's current state, the same for all of them), in the
    last frame that changes it, and replaying the burst ends on it."""
    from debates.engine.publish import event_messages
    from debates.services.demos import run_headless_demo_create

    run = run_headless_demo_create(protocol="consultation", seed=7, backend_options={"cps": 0})
    assert run_to_stop(run) == "done"
    kinds = dict(RunEvent.objects.filter(run=run).values_list("seq", "kind"))
    (panel,) = registry.get("consultation").panels
    burst = [seq for seq in sorted(kinds) if kinds[seq] in panel.refresh_on][-4:]
    assert len(burst) == 4
    messages = event_messages(run_id=run.pk, seqs=burst)
    panels = ['id="consultation-panel"' in m["html"] for m in messages]
    assert panels == [False, False, False, True], [kinds[s] for s in burst]
    alone = event_messages(run_id=run.pk, seqs=burst[:1])  # the first event on its own still shows the panel
    assert 'id="consultation-panel"' in alone[0]["html"]
    # A commit on its own changes nothing the panel shows: its frame leaves the panel as it is.
    commit = max(seq for seq, kind in kinds.items() if kind == "turn_committed")
    assert 'id="consultation-panel"' not in event_messages(run_id=run.pk, seqs=[commit])[0]["html"]


def test_the_integrity_placeholder_of_an_unfinished_run_is_what_rendering_it_gives(make_run: Any) -> None:
    from django.template.loader import render_to_string

    first, second = make_run(), make_run(topic="Should the library open on Sundays?")
    rendered = [render_to_string(frames.INTEGRITY_TEMPLATE, {"run": r, "oob": True}) for r in (first, second)]
    assert frames.integrity_frame(first) == frames.integrity_frame(second) == rendered[0] == rendered[1]
    assert "Signals are computed once the run has completed" in rendered[0]
    assert run_to_stop(first) == "done"
    finished = frames.integrity_frame(first)
    assert finished != rendered[0] and "Signals are computed once" not in finished


def test_viewers_connecting_to_a_run_in_one_state_share_one_render_of_its_snapshot(
    make_run: Any, viewer: User, moderator: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A popular run's viewers all connect at once: the snapshot (all but each viewer's own panels) is rendered
    once per state of the run, and the next event's state is rendered anew."""
    run = make_run()
    assert run_to_stop(run) == "done"
    rendered = counting(monkeypatch, "status_frame")
    first, seq = frames.snapshot_frame(run.pk, viewer)
    second, _ = frames.snapshot_frame(run.pk, moderator)
    third, _ = frames.snapshot_frame(run.pk, viewer)
    assert len(rendered) == 1 and first == third
    assert second.split('id="moderator"')[0] == first.split('id="moderator"')[0]  # only the panels differ
    with transaction.atomic():
        event_append(run_id=run.pk, kind="note", payload={})
    _, later = frames.snapshot_frame(run.pk, viewer)
    assert later == seq + 1 and len(rendered) == 2


def test_a_turns_commit_is_rendered_from_the_event_with_its_run_the_turn_and_one_tally_of_the_runs_turns(
    make_run: Any,
) -> None:
    """A worker renders every commit of every debate it runs, and on a busy worker each round trip to the database
    is 10-15 ms of waiting (bench fanout): the event comes with its run, and the progress and cost widgets share
    one tally of the run's turns."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from debates.engine.publish import event_messages

    run = make_run()
    assert run_to_stop(run) == "done"
    seq = (
        RunEvent.objects.filter(run=run, kind="turn_committed")
        .order_by("seq")
        .values_list("seq", flat=True)[0]
    )
    with CaptureQueriesContext(connection) as queries:
        [message] = event_messages(run_id=run.pk, seqs=[seq])
    assert 'id="run-status"' in message["html"] and 'id="cost"' in message["html"]
    read = [
        " ".join(sorted(set(re.findall(r'(?:FROM|JOIN) "(\w+)"', q["sql"]))))
        for q in queries.captured_queries
    ]
    assert read == [
        "debates_run debates_runevent kb_knowledgebase",  # the event, its run and the run's KB
        "debates_seat debates_turn",  # the turn, its seat
        "debates_seat debates_turn",  # the tally: each seat's calls and cost, the turns committed, the stage
    ], read
