"""A long transcript on the run page: its first and last turns are rendered with the page, the turns between are
left out, each group holding in their place one entry that loads them (as the reader scrolls to it, or on a press);
loaded, the page shows every turn in transcript order. The live snapshot leaves out the same turns."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client

from debates.models import Run, Turn
from debates.selectors import cards
from debates.web import frames
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads

DEFERRED = re.compile(r'<div class="turns-deferred" id="([^"]+)" hx-get="([^"]+)"')


def keys_in(html: str) -> list[str]:
    return re.findall(
        r'<article id="turn-[^"]*" class="turn [^"]*" data-status="[^"]*" data-key="([^"]+)"', html
    )


def transcript_order(run: Run) -> list[str]:
    return list(Turn.objects.filter(run=run).order_by("first_seq", "id").values_list("key", flat=True))


@pytest.fixture
def short_window(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cards, "TRANSCRIPT_HEAD", 2)
    monkeypatch.setattr(cards, "TRANSCRIPT_TAIL", 2)


@pytest.fixture
def finished_run(make_run: Any) -> Run:
    run = make_run()
    assert run_to_stop(run) == "done"
    return run


def test_a_long_transcript_shows_its_first_and_last_turns_and_loads_the_rest_where_it_belongs(
    finished_run: Run, viewer_client: Client, short_window: None
) -> None:
    order = transcript_order(finished_run)
    assert len(order) == 8
    page = viewer_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert keys_in(page) == order[:2] + order[-2:]
    deferred = DEFERRED.findall(page)
    assert deferred and re.search(r"Show \d+ more turns? of this part", page)
    loaded = page
    for dom_id, url in deferred:
        response = viewer_client.get(url.replace("&amp;", "&"))
        assert response.status_code == 200
        placeholder = re.search(rf'<div class="turns-deferred" id="{dom_id}".*?</div>', loaded, re.S)
        assert placeholder is not None
        loaded = loaded.replace(placeholder.group(0), response.content.decode())
    assert keys_in(loaded) == order  # every turn once, in transcript order


def test_a_short_transcript_is_rendered_whole(finished_run: Run, viewer_client: Client) -> None:
    page = viewer_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert keys_in(page) == transcript_order(finished_run)
    assert "turns-deferred" not in page


def test_the_live_snapshot_leaves_out_the_same_turns(
    finished_run: Run, viewer: Any, short_window: None
) -> None:
    html, _ = frames.snapshot_frame(finished_run.pk, viewer)
    order = transcript_order(finished_run)
    assert keys_in(html) == order[:2] + order[-2:]
    assert len(DEFERRED.findall(html)) >= 1


def test_asking_for_left_out_turns_badly_says_how_to_ask(finished_run: Run, viewer_client: Client) -> None:
    response = viewer_client.get(f"/runs/{finished_run.pk}/turns/?round=round-r1&from=x&to=3")
    assert response.status_code == 400
    assert "?round=<group id>&from=<seq>&to=<seq>" in response.content.decode()
    assert viewer_client.get(f"/runs/{finished_run.pk + 999}/turns/?round=a&from=1&to=2").status_code == 404
    assert (
        Client().get(f"/runs/{finished_run.pk}/turns/?round=a&from=1&to=2").status_code == 302
    )  # log in first


def test_the_live_snapshot_keeps_the_readers_transcript_when_nothing_happened_since_the_page(
    finished_run: Run, viewer: Any, viewer_client: Client
) -> None:
    """The page opens its socket with the seq it was rendered at: if the run is still there, the snapshot leaves
    the transcript (and the parts the reader loaded) as it is; otherwise it brings the transcript as of now."""
    page = viewer_client.get(f"/runs/{finished_run.pk}/").content.decode()
    assert f'ws-connect="/ws/runs/{finished_run.pk}/?seq={finished_run.last_seq}"' in page
    same, _ = frames.snapshot_frame(finished_run.pk, viewer, page_seq=finished_run.last_seq)
    older, _ = frames.snapshot_frame(finished_run.pk, viewer, page_seq=finished_run.last_seq - 1)
    unsaid, _ = frames.snapshot_frame(finished_run.pk, viewer)
    assert 'id="transcript"' not in same and 'id="run-status"' in same
    assert keys_in(older) == keys_in(unsaid) == transcript_order(finished_run)
