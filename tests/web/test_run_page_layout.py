"""The run page puts the outcome first: the human's decision, then the outcome it decides on, then the transcript,
grouped by round and collapsible; live frames add a turn to its round, or start the round."""

from __future__ import annotations

import re

import pytest

from debates.models import RunEvent
from debates.web.frames import event_frame
from tests.conftest import run_to_stop
from tests.web.test_pick import completed


def positions(html: str, *ids: str) -> list[int]:
    return [html.index(f'id="{dom_id}"') for dom_id in ids]


@pytest.mark.django_db(transaction=True)
class OutcomeFirstTests:
    def test_a_decided_run_shows_the_decision_then_the_outcome_then_the_transcript(
        self, moderator_client, make_run
    ):
        run = make_run()
        run_to_stop(run)
        run = completed(run)
        html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        pick, outcome, transcript = positions(html, "pick", "outcome", "transcript")
        assert pick < outcome < transcript
        assert html.index('id="pick-form"') < html.index('id="decision"')
        assert 'id="moderator"' in html and 'id="pick-form"' not in html.split('id="moderator"', 1)[1]

    def test_the_transcript_is_grouped_by_round_in_order(self, viewer_client, make_run):
        run = make_run()
        run_to_stop(run)
        html = viewer_client.get(f"/runs/{run.pk}/").content.decode()
        rounds = re.findall(
            r'<details class="round" id="(round-[\w-]+)" open><summary><h2 class="round-title">([^<]+)</h2>',
            html,
        )
        assert [dom_id for dom_id, _ in rounds] == ["round-r1", "round-r2", "round-r3", "round-r4"]
        assert rounds[0][1].startswith("Round 1: ")
        first_round = html.split('id="round-r1-turns"', 1)[1].split("</details>", 1)[0]
        assert first_round.count('<article id="turn-r1-') == 3  # the three analysts' analyses

    def test_a_turn_that_starts_a_round_brings_its_group_and_the_next_joins_it(self, make_run):
        run = make_run()
        run_to_stop(run)
        started = list(RunEvent.objects.filter(run=run, kind="turn_started").order_by("seq"))
        first, second = (event_frame(event)[0] for event in started[:2])
        assert 'hx-swap-oob="beforeend:#transcript"' in first and 'id="round-r1-turns"' in first
        assert 'hx-swap-oob="beforeend:#round-r1-turns"' in second and '<details class="round"' not in second

    def test_cancel_asks_to_confirm(self, moderator_client, make_run):
        run = make_run()
        html = moderator_client.get(f"/runs/{run.pk}/").content.decode()
        assert re.search(r'id="control-cancel"[^>]*hx-confirm="Cancel this run\?', html)
