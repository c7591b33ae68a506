"""A market panel through a real browser against a live Daphne: start it from the new-run form over the demo data
KB with edited weights, watch the openings stream, then read the argument trace table (a verdict per row), the
chart of argument scores by seat (drawn by Chart.js under the real CSP), the handshake flag and the misquoted
figure caught against the KB; agree with the judge's lean."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import ConsoleMessage, Page, expect

from debates.models import Run
from tests.e2e.conftest import RUN

pytestmark = pytest.mark.e2e

SEE = 10_000
TOPIC = "One-month outlook for the S&P 500"


@pytest.fixture
def market_kb(allow_async_unsafe: None) -> Any:
    from kb.demo import demo_kbs_load

    return next(kb for kb in demo_kbs_load() if kb.slug == "market-2026-q4")


def test_start_a_market_panel_watch_it_and_read_the_trace(
    moderator_page: Page, live_daphne: str, market_kb: Any, output_path: str
) -> None:
    page = moderator_page
    errors: list[str] = []

    def screenshot(name: str) -> None:
        # caret="initial": Playwright's default caret hiding injects a style that the CSP (rightly) blocks.
        path = Path(output_path) / f"{name}.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(path), full_page=True, caret="initial")

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":  # a CSP violation, a script error, a swap without a target
            errors.append(message.text)

    page.on("console", on_console)
    page.on("pageerror", lambda error: errors.append(str(error)))

    page.goto(f"{live_daphne}/runs/new/")
    form = page.locator("#run-form")
    form.locator("select[name=protocol]").select_option("market-panel")
    # Only the panel's fields are shown for this protocol; its simulated branches are on by default.
    expect(form.locator("#market-panel-setup")).to_be_visible()
    expect(form.get_by_label("Analysts")).to_be_hidden()
    expect(form.get_by_label("The second angle's bull misquotes a figure")).to_be_checked()
    form.get_by_label("Question or topic").fill(TOPIC)
    form.locator("select[name=kb]").select_option(str(market_kb.pk))
    form.get_by_label("Evidence %").fill("40")
    form.get_by_label("Clarity %").fill("10")
    form.get_by_label("Arguments per seat").select_option("2-3")
    form.locator("input[name=backend][value=simulated]").check()
    form.locator("#rehearsal-options summary").click()  # the seed and the pace are folded away
    form.get_by_label("Seed").fill("5")
    form.get_by_label("Streaming pace").fill("400")
    form.locator("#start-run").click()
    expect(page).to_have_url(re.compile(r"/runs/\d+/$"), timeout=SEE)
    run_id = int(re.search(r"/runs/(\d+)/$", page.url).group(1))  # type: ignore[union-attr]
    expect(page.locator("#connection")).to_have_text("live", timeout=SEE)

    # The openings stream in, argument by argument, while they are written. Any seat's will do: on a loaded
    # machine the first one can be over before the socket is live (at 700 characters a second, 1.7 s, it was, once
    # in a CI run on a slow machine; at 400 they take about 3 s).
    expect(page.locator("#transcript article .turn-body.live li.market-arg").first).to_be_visible(timeout=SEE)
    screenshot("market-panel-streaming")
    status = page.locator("#run-status")
    expect(status).to_have_attribute("data-status", "completed", timeout=RUN)
    expect(page.locator('#transcript article[data-status="committed"]')).to_have_count(25)

    # The trace table: one row per argument with the judge's verdict; all three verdicts occur.
    run = Run.objects.get(pk=run_id)
    rows = run.outcome["rows"]
    table = page.locator("#market-trace-table")
    expect(table.locator("tbody tr")).to_have_count(len(rows))
    for verdict in ("UPHELD", "WEAKENED", "REFUTED"):
        expect(table.locator(f'tbody tr[data-verdict="{verdict}"]').first).to_be_visible()
    first = table.locator(f'tbody tr[data-argument="{rows[0]["id"]}"]')
    expect(first).to_contain_text(str(rows[0]["score"]["weighted"]))

    # The chart of argument scores by seat is drawn.
    chart = page.locator("#market-score-chart")
    expect(chart).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    assert chart.bounding_box()["height"] > 100  # type: ignore[index]

    # The weights as set, the handshake round and the misquoted figure are flagged.
    expect(page.locator("#market-weights")).to_contain_text("Evidence 40 %")
    expect(page.locator("#market-weights")).to_contain_text("Clarity 10 %")
    expect(page.locator('#market-handshakes li[data-handshake="1"]')).to_contain_text("handshake round")
    mismatches = page.locator("#market-mismatches")
    # The seat and argument by name, with the id agents cite beside it.
    expect(mismatches).to_contain_text("Fundamental bull, argument 1 (fund_bull_arg_0), quotes")
    expect(mismatches).to_contain_text("the knowledge base has 3.9")
    expect(table.locator('tr[data-argument="fund_bull_arg_0"] .citation-mismatch')).to_be_visible()
    expect(table.locator('tr[data-argument="fund_bull_arg_0"]')).to_have_attribute("data-verdict", "REFUTED")
    screenshot("market-panel-trace")
    page.locator("#scorecard").screenshot(
        path=str(Path(output_path) / "market-panel-outcome.png"), caret="initial"
    )
    assert errors == []  # streaming, the outcome swap and the chart: no CSP violation, no script error

    # Agree with the judge's lean; re-rendering #outcome must not copy the drawn canvas's style attribute
    # (htmx's settle step would, and the CSP would block it: attributesToSettle leaves style out).
    pick = page.locator("#pick-form")
    pick.locator(f"input[name=pick][value={run.judge_pick}]").check()
    pick.locator("#pick-submit").click()
    expect(page.locator("#decision")).to_contain_text("agrees with the judge", timeout=SEE)
    expect(page.locator("#market-score-chart")).to_have_attribute("data-chart-ready", "1", timeout=SEE)
    assert errors == []
