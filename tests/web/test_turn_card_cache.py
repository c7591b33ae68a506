"""The run page caches the HTML of finished turn cards under the turn's identity and the seq the page shows: a
reload serves the cached card, and any new event of the run (which is how every change that could alter a card
arrives) renders it afresh. Streaming turns are never cached."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.cache import caches
from django.core.cache.utils import make_template_fragment_key
from django.db import transaction
from django.test import Client

from debates.engine.events import event_append
from debates.models import Turn, TurnStatus
from debates.selectors import cards
from tests.conftest import run_to_stop

pytestmark = pytest.mark.django_db(transaction=True)  # the runner commits in its own threads


def _first_turn_and_page(client: Client, run_id: int) -> tuple[Turn, str]:
    turn = Turn.objects.filter(run_id=run_id, status=TurnStatus.COMMITTED).order_by("first_seq").first()
    assert turn is not None
    return turn, client.get(f"/runs/{run_id}/").content.decode()


def test_a_finished_card_is_served_from_cache_until_the_run_records_an_event(
    moderator_client: Client, make_run: Any
) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    turn, page = _first_turn_and_page(moderator_client, run.pk)
    assert f'id="{turn.dom_id}"' in page and "99999 out" not in page

    # A change that bypasses the event log (no real code path does this) is not seen: the card comes from cache.
    Turn.objects.filter(pk=turn.pk).update(output_tokens=99999)
    assert "99999 out" not in moderator_client.get(f"/runs/{run.pk}/").content.decode()

    # Any event moves the run's seq, and the card is rendered from the database again.
    with transaction.atomic():
        event_append(run_id=run.pk, kind="control", payload={"action": "noop"})
    assert "99999 out" in moderator_client.get(f"/runs/{run.pk}/").content.decode()


def test_streaming_turns_are_rendered_fresh_on_every_load(moderator_client: Client, make_run: Any) -> None:
    run = make_run()
    assert run_to_stop(run) == "done"
    turn, _ = _first_turn_and_page(moderator_client, run.pk)
    Turn.objects.filter(pk=turn.pk).update(status=TurnStatus.STREAMING, raw_text='{"claims": [')
    page = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert "▍ streaming" in page


def test_a_reload_reads_cached_cards_at_once_and_renders_none_again(
    moderator_client: Client, make_run: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long finished run's page must not rebuild its cards: the reload looks every finished card up in one go
    and shows exactly what the first load rendered, in the same order."""
    run = make_run()
    assert run_to_stop(run) == "done"
    first = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    built: list[str] = []
    real_turn_card = cards.turn_card

    def counting_turn_card(turn: Turn, *args: Any, **kwargs: Any) -> dict[str, Any]:
        built.append(turn.key)
        return real_turn_card(turn, *args, **kwargs)

    monkeypatch.setattr(cards, "turn_card", counting_turn_card)
    second = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert built == []
    assert _transcript(second) == _transcript(first)
    keys = list(run.turns.order_by("first_seq", "id").values_list("key", flat=True))
    assert re.findall(r'<article id="turn-[^"]*"[^>]*data-key="([^"]+)"', _transcript(second)) == keys

    # One card no longer cached (evicted): only that one is built, and it takes its place in the order.
    evicted = Turn.objects.get(run=run, key=keys[2])
    caches["fragments"].delete(
        make_template_fragment_key(
            cards.TURN_CARD_FRAGMENT,
            [
                f"{run.pk}:{evicted.pk}:{evicted.attempt}:{evicted.status}:{evicted.finished_at.isoformat()}:{run.last_seq}"
            ],
        )
    )
    third = moderator_client.get(f"/runs/{run.pk}/").content.decode()
    assert built == [keys[2]]
    assert _transcript(third) == _transcript(first)


def _transcript(page: str) -> str:
    start = page.index('<section id="transcript"')
    return page[start : page.index("</section>", start)]
