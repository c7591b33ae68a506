"""What the platform could not verify is marked where a person reads it: a finished run whose analyses carry flags
(as a protocol's `accept` commits them: a quote that is not the source's words, a confidence out of range) shows
each flag on its turn, counts them in the integrity panel and badges the run in the archive."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from debates.models import Run, Turn
from tests.conftest import ANALYSTS, MATERIAL
from tests.e2e.conftest import run_to_the_end
from tests.e2e.test_accessibility import axe_blocking

pytestmark = pytest.mark.e2e

SEE = 10_000
FLAGS = [
    {
        "kind": "unverified_quote",
        "where": "claims.0.quote",
        "detail": "The quote is not the material's words.",
    },
    {"kind": "out_of_range", "where": "claims.1.confidence", "detail": "1.7 is outside 0–1; read as 1."},
]


def finished_cross_examination() -> Run:
    return run_to_the_end(
        protocol="cross-examination",
        topic="Should the city charge cars entering the centre?",
        material=MATERIAL,
        config={"analysts": ANALYSTS, "examiner": "agent"},
        backend_options={"cps": 0},
        seed=5,
    )


def test_a_reader_sees_each_flag_on_its_turn_in_the_integrity_panel_and_in_the_archive(
    viewer_page: Page, live_daphne: str, allow_async_unsafe: None
) -> None:
    run = finished_cross_examination()
    flagged = Turn.objects.get(run=run, key="r1/analysis/analyst-ada")
    Turn.objects.filter(pk=flagged.pk).update(flags=FLAGS)
    page = viewer_page

    page.goto(f"{live_daphne}/runs/{run.pk}/")
    turn = page.locator('article.turn[data-key="r1/analysis/analyst-ada"]')
    flags = turn.locator(".turn-flags")
    expect(flags).to_be_visible(timeout=SEE)
    expect(flags.locator(".flag-badge")).to_have_text("flagged ×2")
    expect(flags.locator("li")).to_have_text([f["detail"] for f in FLAGS])
    expect(page.locator("article.turn .turn-flags")).to_have_count(1)  # only the flagged turn
    integrity = page.locator("#integrity-flags")
    expect(integrity).to_have_attribute("data-count", "2")
    expect(integrity).to_contain_text("in 1 turn: out of range ×1, unverified quote ×1")
    assert axe_blocking(page) == []

    page.goto(f"{live_daphne}/")
    row_badge = page.locator(f'tr:has(a[href="/runs/{run.pk}/"]) .sig-flags')
    expect(row_badge).to_have_text("flagged ×2", timeout=SEE)
