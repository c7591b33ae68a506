"""A long run's page in a real browser (issue 24): it opens on the first and the last turns; the turns between load
as the reader scrolls to them, in their place; a link to a turn that was left out still lands on that turn."""

from __future__ import annotations

import contextlib
from typing import Any

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from debates.models import Run, Turn, turn_dom_id
from debates.selectors import cards
from tests.e2e.test_archive_journeys import cross_examination, in_a_thread

pytestmark = pytest.mark.e2e

SEE = 10_000
COPIES = 8  # 8 turns a debate: 64 turns, 24 more than the page renders at once


def long_run(make_run: Any) -> Run:
    """A finished cross-examination whose turns are repeated COPIES times (as `bench pages` builds its long run)."""
    run = in_a_thread(cross_examination, make_run)
    model = list(Turn.objects.filter(run=run).order_by("first_seq"))
    Turn.objects.bulk_create(
        Turn(
            run=run,
            key=f"x{copy:02d}/{turn.key}",
            seat_id=turn.seat_id,
            stage=turn.stage,
            task=turn.task,
            status=turn.status,
            raw_text=turn.raw_text,
            payload=turn.payload,
            schema_version=turn.schema_version,
            first_seq=run.last_seq + copy * len(model) + n + 1,
            backend=turn.backend,
            model=turn.model,
            started_at=turn.started_at,
            finished_at=turn.finished_at,
        )
        for copy in range(1, COPIES)
        for n, turn in enumerate(model)
    )
    Run.objects.filter(pk=run.pk).update(last_seq=run.last_seq + COPIES * len(model))
    run.refresh_from_db()
    return run


def test_a_long_run_opens_on_its_ends_and_loads_the_middle_as_the_reader_scrolls(
    viewer_page: Page, live_daphne: str, make_run: Any
) -> None:
    run = long_run(make_run)
    total = Turn.objects.filter(run=run).count()
    shown = cards.TRANSCRIPT_HEAD + cards.TRANSCRIPT_TAIL
    assert total == 8 * COPIES > shown + 10
    page = viewer_page
    page.goto(f"{live_daphne}/runs/{run.pk}/")
    turns = page.locator("#transcript article.turn")
    expect(turns).to_have_count(shown, timeout=SEE)
    parts = page.locator("#transcript .turns-deferred")
    assert parts.count() >= 1
    expect(parts.first).to_contain_text("more turn")
    for _ in range(20):  # scroll to each part in turn; a part is swapped out as it loads
        if parts.count() == 0:
            break
        with contextlib.suppress(PlaywrightError):
            parts.first.scroll_into_view_if_needed(timeout=2_000)
        page.wait_for_timeout(200)
    expect(turns).to_have_count(total, timeout=SEE)
    expect(parts).to_have_count(0)
    order = list(Turn.objects.filter(run=run).order_by("first_seq").values_list("key", flat=True))
    by_group = page.eval_on_selector_all("#transcript article.turn", "els => els.map(e => e.dataset.key)")
    assert sorted(by_group) == sorted(order)  # every turn once
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]


def test_a_link_to_a_left_out_turn_lands_on_it(viewer_page: Page, live_daphne: str, make_run: Any) -> None:
    run = long_run(make_run)
    order = list(Turn.objects.filter(run=run).order_by("first_seq").values_list("key", flat=True))
    middle = order[len(order) // 2]
    page = viewer_page
    page.goto(f"{live_daphne}/runs/{run.pk}/#{turn_dom_id(middle)}")
    target = page.locator(f"#{turn_dom_id(middle)}")
    expect(target).to_be_visible(timeout=SEE)
    expect(target).to_be_in_viewport(timeout=SEE)
