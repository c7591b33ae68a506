"""Flags instead of failures: what a protocol's `accept` flags in a turn is kept with the turn and shown wherever
the turn is read — the run page, the exports, the integrity signals and the prompts of the seats that come later."""

from __future__ import annotations

from typing import Any

import pytest
from django.urls import reverse

from debates.agents.prompts import transcript_blocks
from debates.contract import Accepted, Flag, RunView, Step
from debates.engine import registry
from debates.engine.view import run_view_load
from debates.exports.run_json import run_export_json
from debates.exports.transcript import run_transcript_md
from debates.models import Turn
from debates.selectors.integrity import run_signals
from tests.conftest import run_to_stop

DETAIL = "The quote is not the words of the material: “cars vanish overnight”."


@pytest.fixture
def flagging_analyses(monkeypatch: pytest.MonkeyPatch) -> None:
    """Cross-examination's `accept`, flagging the first claim of every analysis as a protocol would."""
    protocol = registry.get("cross-examination")
    accept = protocol.accept

    def flagging(step: Step, payload: Any, view: RunView) -> Accepted:
        accepted = accept(step, payload, view)
        if step.task != "analysis":
            return accepted
        return Accepted(
            accepted.payload, (*accepted.flags, Flag("unverified_quote", "claims.0.quote", DETAIL))
        )

    monkeypatch.setattr(protocol, "accept", flagging)


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("flagging_analyses")
class FlaggedTurnTests:
    def test_the_turn_is_committed_with_its_flags_and_the_run_completes(self, make_run: Any):
        run = make_run()
        assert run_to_stop(run) == "done"
        analyses = Turn.objects.filter(run=run, task="analysis")
        assert analyses.count() == 3
        assert all(t.status == "committed" for t in analyses)
        assert [t.flags for t in analyses] == [
            [{"kind": "unverified_quote", "where": "claims.0.quote", "detail": DETAIL}]
        ] * 3
        assert not Turn.objects.filter(run=run).exclude(task="analysis").exclude(flags=[]).exists()

    def test_the_run_page_lists_each_flag_on_its_turn(self, make_run: Any, moderator_client: Any):
        run = make_run()
        run_to_stop(run)
        page = moderator_client.get(reverse("run-detail", args=[run.pk])).content.decode()
        assert page.count('class="turn-flags"') == 3
        assert page.count('data-flag-kind="unverified_quote"') == 3
        assert "flagged ×1" in page and "cars vanish overnight" in page

    def test_the_exports_carry_the_flags(self, make_run: Any):
        run = make_run()
        run_to_stop(run)
        exported = run_export_json(run)
        flagged = [t for t in exported["turns"] if t["flags"]]
        assert [t["task"] for t in flagged] == ["analysis"] * 3
        transcript = run_transcript_md(run)
        assert transcript.count("Flagged (kept, but not verified):") == 3
        assert "(`claims.0.quote`)" in transcript

    def test_the_integrity_signals_count_the_flags(self, make_run: Any):
        run = make_run()
        run_to_stop(run)
        signals = run_signals(run)
        assert signals["flags"]["total"] == 3 and signals["flags"]["turns"] == 3
        assert signals["flags"]["kinds"] == {"unverified_quote": 3}
        assert signals["flagged"] is True

    def test_later_seats_read_the_flags_with_the_turn(self, make_run: Any):
        run = make_run()
        run_to_stop(run)
        blocks = transcript_blocks(run_view_load(run))
        analysis_blocks = [b for b in blocks if 'key="r1/analysis/' in b]
        assert len(analysis_blocks) == 3
        assert all("<flags>" in b and "unverified_quote" in b for b in analysis_blocks)
        assert not any("<flags>" in b for b in blocks if b not in analysis_blocks)
