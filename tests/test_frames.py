"""Frames for many viewers (debates.frames): a replay serves every event's frame as it was published, rendering only
what is no longer kept, and the status once; viewers without the moderate permission share one render of their
panels per state of the run, while each moderator gets their own (controls with fresh idempotency keys)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.cache import cache, caches
from django.db import transaction

from debates import frames
from debates.engine.events import event_append
from debates.models import RunEvent
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
    make_run: Any, viewer: User, monkeypatch: pytest.MonkeyPatch
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

    cache.delete_many(keys[:5])  # expired: those are rendered again from the database, the rest served
    html, _ = frames.replay_frames(run.pk, 0, viewer)
    assert [event.seq for event in rendered] == [1, 2, 3, 4, 5]
    assert "<p>kept frame 4</p>" not in html


def test_viewers_share_one_render_of_their_panels_and_each_moderator_gets_their_own(
    make_run: Any, viewer: User, moderator: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    other_viewer = User.objects.create_user("another-viewer")
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
