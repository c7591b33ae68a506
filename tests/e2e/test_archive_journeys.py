"""The archive in a real browser (issue 8): a viewer filters the runs by protocol and by a text search (the table
updates in place, the address keeps the filters), opens a finished run from it and reads its integrity signals."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from debates.models import Run
from tests.conftest import run_to_stop
from tests.protocols.comparative.test_page import comparison

pytestmark = pytest.mark.e2e

SEE = 10_000


def in_a_thread(function: Any, *args: Any, **kwargs: Any) -> Any:
    """Drive the runner off the main thread (pytest-playwright keeps an event loop running on it)."""
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(function, *args, **kwargs).result()


def cross_examination(make_run: Any) -> Run:
    run = make_run(topic="Should the harbour ferries run all night?")
    run_to_stop(run)
    return run


def finished_runs(make_run: Any) -> tuple[Run, Run]:
    cross = in_a_thread(cross_examination, make_run)
    compared = in_a_thread(comparison, backend_options={"judge_slip": True})
    assert cross.status == compared.status == "completed"
    return cross, compared


def test_filter_the_archive_and_open_a_finished_run_to_see_its_integrity_signals(
    viewer_page: Page, live_daphne: str, make_run: Any
) -> None:
    cross, compared = finished_runs(make_run)
    page = viewer_page
    page.goto(f"{live_daphne}/")
    table = page.locator("#archive-table")
    expect(table.locator(f"#run-row-{cross.pk}")).to_be_visible()
    expect(table.locator(f"#run-row-{compared.pk}")).to_be_visible()
    expect(page.locator("#archive-count")).to_have_text("2 runs")
    page.evaluate("window.archiveMarker = 'same page'")  # survives only if the page is not reloaded

    # By protocol (the filters are folded under the search box until one is set): the table is swapped in place
    # and the address keeps the filter.
    expect(page.locator("#archive-filters select[name=protocol]")).to_be_hidden()
    page.locator("#archive-more-filters summary").click()
    page.locator("#archive-filters select[name=protocol]").select_option("comparative")
    expect(table.locator(f"#run-row-{cross.pk}")).to_have_count(0, timeout=SEE)
    expect(page.locator(f"#run-row-{compared.pk}")).to_be_visible()
    expect(page.locator("#archive-count")).to_have_text("1 run matches the filters")
    expect(page).to_have_url(re.compile(r"[?&]protocol=comparative"))
    row = page.locator(f"#run-row-{compared.pk}")
    expect(row.locator(".sig-arith")).to_have_text(re.compile(r"arith ×\d+"))

    # By a text search over topics and turns, with the protocol back to any.
    page.locator("#archive-filters select[name=protocol]").select_option("")
    page.locator("#archive-q").fill("harbour ferries")
    expect(page.locator(f"#run-row-{compared.pk}")).to_have_count(0, timeout=SEE)
    expect(page.locator(f"#run-row-{cross.pk}")).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]q=harbour(%20|\+)ferries"))
    assert page.evaluate("window.archiveMarker") == "same page"

    # Open the finished run and read its signals.
    page.locator(f"#run-row-{cross.pk} a").first.click()
    expect(page).to_have_url(re.compile(rf"/runs/{cross.pk}/$"))
    integrity = page.locator("#integrity")
    expect(integrity).to_have_attribute("data-applicable", "true")
    summary = {row["analyst"]: row for row in cross.outcome["summary"]}
    for handle, row in summary.items():
        classified = row["defended"] + row["conceded"] + row["deflected"]
        seat = integrity.locator(f"tr[data-integrity-seat='{handle}']")
        expect(seat.locator("td.conceded")).to_contain_text(f"({row['conceded']}/{classified})")
        expect(seat.locator("td.deflected")).to_contain_text(f"({row['deflected']}/{classified})")
        expect(seat.locator("td.defended")).to_contain_text(f"({row['defended']}/{classified})")
    expect(integrity.locator("#integrity-handshakes")).to_contain_text("not applicable")
    expect(integrity.locator("#integrity-arithmetic")).to_contain_text("not applicable")

    # The comparison's page shows the judge's arithmetic slip counted.
    page.goto(f"{live_daphne}/runs/{compared.pk}/")
    mismatches = len(compared.outcome["scorecard"]["mismatches"])
    expect(page.locator("#integrity-arithmetic")).to_have_attribute("data-count", str(mismatches))
    expect(page.locator("#integrity-arithmetic")).to_contain_text(f"{mismatches} mismatch")
